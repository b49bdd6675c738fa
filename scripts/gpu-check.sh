#!/usr/bin/env bash
# Run every probe for real on a machine with an NVIDIA GPU, and print a short table.
# Takes about 3 minutes (two lanes run side by side). Usage (from the repository root):
#   bash scripts/gpu-check.sh [OUT_DIR]
# Needs: python3 with torch (CUDA build) and this repository's dependencies importable
# (pip install -e . or PYTHONPATH=. with msgspec, pyyaml, rich, questionary, nvidia-ml-py).
# WW_PROBE_TIMEOUT bounds each step (seconds, default 240).
set -u
OUT="${1:-${OUT:-gpu-check-out}}"
PY="${PYTHON:-python3}"
LIMIT="${WW_PROBE_TIMEOUT:-240}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export PYTHONPATH="${PYTHONPATH:-}:$(pwd)"
WW=("$PY" -m wizard)
row() { printf '%-28s %-6s %s\n' "$1" "$2" "$3" >> "$OUT/table.txt"; }
: > "$OUT/table.txt"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader || true
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  for tool in ncu nsys compute-sanitizer nvcc; do printf '%s: %s\n' "$tool" "$(command -v "$tool" || echo 'not on PATH')"; done
  ncu --version 2>/dev/null | tail -1
  compute-sanitizer --version 2>/dev/null | tail -1
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

probe() {  # name, then warpwizard args; records exit code and the last line
  local name="$1"; shift
  timeout "$LIMIT" "${WW[@]}" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  row "$name" "$rc" "$(tail -c 300 "$OUT/$name.out" | tr '\n' ' ' | cut -c1-110)"
}

profile_workload() {  # name, workload script: a torch.profiler trace of it, as an engineer would take one
  local name="$1" script="$2"
  timeout "$LIMIT" "$PY" -c "
import sys, torch, runpy
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as p:
    runpy.run_path(sys.argv[1], run_name='__main__')
p.export_chrome_trace(sys.argv[2])
" "$script" "$OUT/$name-trace.json" > "$OUT/$name-run.log" 2>&1
  row "${name}_run" $? "$(tail -1 "$OUT/$name-run.log")"
}

cat > "$OUT/oob.py" <<'PYEOF'
import torch
x = torch.zeros(10, device="cuda")
idx = torch.tensor([3, 11], device="cuda")
print(x[idx].sum().item())
PYEOF

lane_a() {
  probe env env --json
  # Mechanism A: 2,147,488,281 blocks, profiled by torch.profiler, then inspected.
  profile_workload big-grid examples/workloads/big_grid.py
  probe inspect_big_grid trace inspect "$OUT/big-grid-trace.json" --json
  # The flagship playbook with a workload: env, reprofile (torch.profiler, legacy, nsys/ncu if present), inspect.
  probe flagship_workload run negative-warps-per-sm --set have=workload \
    --set workload_cmd="python examples/workloads/big_grid.py" --defaults --json --report-dir "$OUT/report" \
    --report "$OUT/flagship.md"
  # op.isolate and hardware.compare on every visible GPU.
  probe op_isolate_hw run negative-warps-per-sm --set have=trace --set trace_path="$OUT/big-grid-trace.json" \
    --defaults --json --report-dir "$OUT/report-isolate"
  # Steps 3-6 on an op the trace doctor cannot explain: op.isolate writes a repro, hardware.compare runs it
  # on every visible GPU and sets it against a report from elsewhere (the example trace's H100).
  "${WW[@]}" trace inspect examples/traces/unexplained-aten-op.json --json > "$OUT/other-machine.json"
  probe hardware_compare run negative-warps-per-sm --set have=trace \
    --set trace_path="examples/traces/unexplained-aten-op.json" --set custom_kernel=false --defaults --json \
    --compare "$OUT/other-machine.json" --report-dir "$OUT/report-hw"
}

lane_b() {
  # Mechanism E: 100 KB dynamic shared memory.
  profile_workload big-smem examples/workloads/big_smem.py
  probe inspect_big_smem trace inspect "$OUT/big-smem-trace.json" --json
  probe flagship_smem run negative-warps-per-sm --set have=workload \
    --set workload_cmd="python examples/workloads/big_smem.py" --defaults --json --report-dir "$OUT/report-smem"
  # CUDA_LAUNCH_BLOCKING on a failing kernel (an out-of-range index).
  probe launch_blocking run negative-warps-per-sm --set have=trace \
    --set trace_path="examples/traces/unexplained-aten-op.json" --set custom_kernel=false \
    --workload "python $OUT/oob.py" --json --report-dir "$OUT/report-oob"
  # A workload that dies of the assert under the profiler: step 1 hands it to step 4.
  probe flagship_oob run negative-warps-per-sm --set have=workload --set workload_cmd="python $OUT/oob.py" \
    --defaults --json --report-dir "$OUT/report-flagship-oob"
  # The same with compute-sanitizer's memcheck allowed (slow: last).
  probe launch_blocking_sanitizer run negative-warps-per-sm --set have=trace \
    --set trace_path="examples/traces/unexplained-aten-op.json" --set custom_kernel=false \
    --workload "python $OUT/oob.py" --allow-sanitizer --json --report-dir "$OUT/report-sanitizer"
}

lane_a & lane_b & wait
sort -o "$OUT/table.txt" "$OUT/table.txt"
echo
cat "$OUT/table.txt"
echo "table: $OUT/table.txt"
