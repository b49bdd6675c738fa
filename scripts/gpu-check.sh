#!/usr/bin/env bash
# Run every probe for real on a machine with an NVIDIA GPU, and print a short table.
# Takes under 5 minutes. Usage (from the repository root): bash scripts/gpu-check.sh [OUT_DIR]
# Needs: python3 with torch (CUDA build) and this repository's dependencies importable
# (pip install -e . or PYTHONPATH=. with msgspec, pyyaml, rich, questionary, nvidia-ml-py).
set -u
OUT="${1:-${OUT:-gpu-check-out}}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
export PYTHONPATH="${PYTHONPATH:-}:$(pwd)"
WW=("$PY" -m wizard)
row() { printf '%-28s %-6s %s\n' "$1" "$2" "$3" | tee -a "$OUT/table.txt"; }
: > "$OUT/table.txt"
{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true; "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

probe() {  # name, then warpwizard args; records exit code and the last line
  local name="$1"; shift
  timeout 240 "${WW[@]}" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  row "$name" "$rc" "$(tail -c 300 "$OUT/$name.out" | tr '\n' ' ' | cut -c1-110)"
}

probe env env --json
# Mechanism A: 2,147,488,281 blocks, profiled by torch.profiler, then inspected.
"$PY" -c "
import sys, torch, runpy
sys.argv = ['big_grid.py']
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as p:
    runpy.run_path('examples/workloads/big_grid.py', run_name='__main__')
p.export_chrome_trace('$OUT/big-grid-trace.json')
" > "$OUT/big-grid-run.log" 2>&1; row big_grid_run $? "$(tail -1 "$OUT/big-grid-run.log")"
probe inspect_big_grid trace inspect "$OUT/big-grid-trace.json" --json
# Mechanism E: 100 KB dynamic shared memory.
"$PY" -c "
import sys, torch, runpy
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as p:
    runpy.run_path('examples/workloads/big_smem.py', run_name='__main__')
p.export_chrome_trace('$OUT/big-smem-trace.json')
" > "$OUT/big-smem-run.log" 2>&1; row big_smem_run $? "$(tail -1 "$OUT/big-smem-run.log")"
probe inspect_big_smem trace inspect "$OUT/big-smem-trace.json" --json
# The flagship playbook with a workload: env, reprofile (torch.profiler, legacy, nsys if present), inspect.
probe flagship_workload run negative-warps-per-sm --set have=workload \
  --set workload_cmd="python examples/workloads/big_grid.py" --defaults --json --report-dir "$OUT/report" \
  --report "$OUT/flagship.md"
# CUDA_LAUNCH_BLOCKING on a failing kernel (an out-of-range index) and on a healthy one.
cat > "$OUT/oob.py" <<'PYEOF'
import torch
x = torch.zeros(10, device="cuda")
idx = torch.tensor([3, 11], device="cuda")
print(x[idx].sum().item())
PYEOF
probe launch_blocking run negative-warps-per-sm --set have=trace --set trace_path="examples/traces/unexplained-aten-op.json" \
  --set custom_kernel=false --workload "python $OUT/oob.py" --json --report-dir "$OUT/report-oob"
# op.isolate and hardware.compare on every visible GPU.
probe op_isolate_hw run negative-warps-per-sm --set have=trace --set trace_path="$OUT/big-grid-trace.json" --defaults --json \
  --report-dir "$OUT/report-isolate"
echo
echo "table: $OUT/table.txt"
