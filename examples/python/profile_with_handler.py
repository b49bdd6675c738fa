"""Profile a small model with warpwizard's drop-in for tensorboard_trace_handler.

    python examples/python/profile_with_handler.py [OUT_DIR]

PyTorch writes the trace as it always does (open it in TensorBoard, Perfetto or HTA); then
warpwizard checks it. On a machine without a GPU there are no kernels to check, and it says so.
On a GPU it also launches the kernel of examples/workloads/big_grid.py, whose grid has more blocks
than an int32 holds (mechanism A, as an H200 showed: docs/gpu-validation.md): warpwizard then
emits one WarpWizardWarning per mechanism with the true value and writes a corrected copy beside
the trace. (This script has run on the CPU; its GPU path is that workload's, not yet run as a whole.)
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

import wizard

HERE = Path(__file__).resolve().parent


def big_grid_launcher() -> object:
    """The 46341 x 46341 launch of examples/workloads/big_grid.py (2,147,488,281 blocks > 2^31-1)."""
    sys.path.insert(0, str(HERE.parent / "workloads"))
    from _kernels import compile_kernel
    from big_grid import SOURCE

    kernel = compile_kernel(SOURCE, "ww_big_grid")
    flags = torch.zeros(2, dtype=torch.int32, device="cuda")
    return lambda: kernel((46341, 46341, 1), (32, 1, 1), [flags])


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # warpwizard logs each check
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="warpwizard-profile-")
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
    data = torch.randn(64, 256, device=device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    handler = wizard.profiler.tensorboard_trace_handler(out, worker_name="example", fix=True)
    big_grid = big_grid_launcher() if cuda else None
    with profile(
        activities=activities,
        schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
        on_trace_ready=handler,
        record_shapes=True,
    ) as prof:
        for _ in range(3):
            model(data).sum().backward()
            if big_grid is not None:
                big_grid()
            prof.step()
    check = handler.checker.last
    if check is None or check.inspection is None:
        print("warpwizard could not check the trace; see the warning above")
        return
    report = check.inspection.reports[0]
    print(f"trace: {check.trace}")
    if report.kernels == 0:
        print("no GPU kernels in this profile (no CUDA device here), so no kernel metrics to check")
    elif check.warnings:
        found = len(check.warnings)
        print(f"{found} {'mechanism' if found == 1 else 'mechanisms'} found; corrected copy: {check.fixed}")
    else:
        checked = report.metrics.kernels_checked
        launches = "kernel launch" if checked == 1 else "kernel launches"
        print(f"{checked} {launches} checked: every value agrees with the recomputation")


if __name__ == "__main__":
    main()
