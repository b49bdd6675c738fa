"""What the GPU paths printed on a real NVIDIA H200 (scripts/gpu-check.sh, 2026-11-30; see
docs/gpu-validation.md), replayed without a GPU: traces from real launches, Nsight Compute's CSV,
compute-sanitizer's log, CUDA error text, and the profiler's failure after a device-side assert."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import GPU_DATA, RunCli, needs_torch, strict_json
from tests.helpers import inspect_json
from wizard.environment import Environment, Workload
from wizard.probes.base import Status
from wizard.probes.cuda_errors import find_cuda_failure, parse_sanitizer, sanitizer_summary
from wizard.probes.external_profilers import ncu_evidence, parse_ncu_csv
from wizard.probes.reprofile import ReprofileProbe
from wizard.report.markdown import inspection_markdown
from wizard.trace.inspection.run import inspect_paths
from wizard.trace.metrics.findings import launched_by


def test_real_mechanism_a_launch(run_cli: RunCli) -> None:
    report = inspect_json(run_cli, GPU_DATA / "h200-big-grid-trace.json", status=1)["reports"][0]
    assert report["devices"] == [
        {"id": 0, "name": "NVIDIA H200", "num_sms": 132, "compute_capability": "9.0", "source": "deviceProperties"}
    ]
    (group,) = report["groups"]
    assert (group["mechanism"], group["kernel"], group["count"]) == ("A", "ww_big_grid", 1)
    worst = group["worst"]
    assert worst["grid"] == [46341, 46341, 1]
    assert worst["reported"] == {
        "blocks per SM": -16268781.0,
        "warps per SM": -16268781.0,
        "est. achieved occupancy %": -25419969.0,
    }
    assert worst["true"]["blocks per SM"] == pytest.approx(2147488281 / 132)
    assert worst["true"]["est. achieved occupancy %"] == 50.0  # ncu: sm__maximum_warps_per_active_cycle_pct 50


def test_real_mechanism_e_launch_agrees_with_ncu(run_cli: RunCli) -> None:
    # E alone: the flagship's info, so the default gate passes (issue 33)
    (group,) = inspect_json(run_cli, GPU_DATA / "h200-big-smem-trace.json", status=0)["reports"][0]["groups"]
    assert (group["mechanism"], group["kernel"]) == ("E", "ww_big_smem")
    assert group["worst"]["reported"]["est. achieved occupancy %"] == 0.0
    assert group["worst"]["true"]["est. achieved occupancy %"] == 25.0
    assert group["worst"]["limiting_factors"] == ["shared memory"]
    (ncu,) = parse_ncu_csv((GPU_DATA / "h200-ncu-big-smem.csv").read_text())
    assert ncu["sm__maximum_warps_per_active_cycle_pct"] == 25.0  # Nsight Compute's theoretical occupancy
    assert ncu["launch__occupancy_limit_shared_mem"] == 2.0


def test_ncu_csv_from_the_h200() -> None:
    (row,) = parse_ncu_csv((GPU_DATA / "h200-ncu-big-grid.csv").read_text())
    assert row["Kernel Name"] == "ww_big_grid" and row["launch__grid_size"] == 2147488281
    assert ncu_evidence(row) == (
        "ncu: grid size 2147488281, block 32, 132 SMs, theoretical occupancy 50%, achieved 2.49%, "
        "shared-memory block limit 32"
    )


def test_driver_api_launch_links_to_the_python_frame() -> None:
    """A raw kernel through cuLaunchKernel has no op around it; the Python frames still say who launched it."""
    inspection = inspect_paths([str(GPU_DATA / "h200-big-grid-with-stack-trimmed.json")])
    (group,) = inspection.reports[0].metrics.groups
    link = group.op
    assert link is not None and link.op is None and link.via == "python stack"
    assert link.runtime_call == "cuLaunchKernel"
    assert link.user_frame == "_kernels.py(35): launch"
    assert launched_by(link) == "no op; _kernels.py(35): launch"
    assert "| no op; _kernels.py(35): launch |" in inspection_markdown(inspection)


def test_memcheck_on_a_device_side_assert() -> None:
    report = parse_sanitizer((GPU_DATA / "h200-memcheck-device-assert.log").read_text())
    assert report.errors == 5
    assert report.first == "Warp assert"
    assert report.location == "__assertfail+0x19a0, thread (1,0,0) in block (0,0,0)"
    assert report.python_frame == "oob.py:4 in <module>"
    assert report.api_error == "cudaErrorAssert (device-side assert triggered) on cudaLaunchKernel"
    assert sanitizer_summary(report) == (
        "Warp assert at __assertfail+0x19a0, thread (1,0,0) in block (0,0,0) from oob.py:4 in <module> (5 errors)"
    )


def test_launch_blocking_output_of_a_device_side_assert() -> None:
    failure = find_cuda_failure((GPU_DATA / "h200-launch-blocking-device-assert.log").read_text())
    assert failure is not None
    assert failure.message == "device-side assert triggered"
    assert failure.error_name == "cudaErrorAssert"
    assert failure.exception == "torch.AcceleratorError"
    assert failure.python_frame == "/tmp/tmp.i6zuapD3Nj/out/oob.py:4 in <module>"
    assert failure.device_assert is not None and failure.device_assert.endswith('"index out of bounds"` failed.')
    assert failure.dsa_unavailable


def test_the_profilers_own_failure_names_the_workloads_frame() -> None:
    """The log of the harness that crashed at the profiler's stop: the first frame is still the workload's."""
    failure = find_cuda_failure((GPU_DATA / "h200-reprofile-device-assert.log").read_text())
    assert failure is not None and failure.message == "device-side assert triggered"
    assert failure.python_frame == "/tmp/tmp.i6zuapD3Nj/out/oob.py:4 in <module>"


PROFILER_STOP_FAILS = """
import sys
import torch.profiler

sys.stderr.write(open({recorded!r}).read())


def stop(self):
    raise RuntimeError("CUDA error: device-side assert triggered")


torch.profiler.profile.stop = stop  # what the H200 did after the assert: the profiler's stop raised
sys.exit(1)
"""


@needs_torch
def test_reprofile_reports_a_profiler_that_could_not_stop(tmp_path: Path) -> None:
    """Seen on the H200: exit -6 and 'the harness did not report'; now an error that names the CUDA failure."""
    script = tmp_path / "assert_under_profiler.py"
    script.write_text(PROFILER_STOP_FAILS.format(recorded=str(GPU_DATA / "h200-launch-blocking-device-assert.log")))
    env = Environment.of(report_dir=tmp_path / "report", workload=Workload.parse(f"python {script}", sys.executable))
    result = ReprofileProbe().run(env, {}, timeout=180)
    assert result.status is Status.ERROR
    assert result.facts["workload_error"] == "device-side assert triggered"
    assert result.summary.startswith("the workload hit a CUDA error under the profiler (device-side assert triggered)")
    log = Path(result.files[0]).read_text()
    assert "Fatal Python error" not in log
    assert not (tmp_path / "report" / "reprofile" / "torch-profiler.json").exists()


@needs_torch
def test_flagship_sends_a_workload_that_dies_under_the_profiler_to_step_4(run_cli: RunCli, tmp_path: Path) -> None:
    script = tmp_path / "assert_under_profiler.py"
    script.write_text(PROFILER_STOP_FAILS.format(recorded=str(GPU_DATA / "h200-launch-blocking-device-assert.log")))
    result = run_cli(
        "run", "negative-warps-per-sm", "--set", "have=workload", "--set", f"workload_cmd=python {script}",
        "--defaults", "--json", "--report-dir", str(tmp_path / "report"), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    transcript = strict_json(result.stdout)
    path = [entry["node"] for entry in transcript["entries"]]
    assert path == [
        *("have", "workload_cmd", "environment", "reprofile", "reprofiled", "launch_blocking", "launch_failure")
    ]
    assert transcript["conclusion"]["diagnosis"] == "kernel-launch-failure"
    assert transcript["conclusion"]["summary"].startswith(
        'A CUDA error, not a profiler artefact: with CUDA_LAUNCH_BLOCKING=1 the workload fails with "device-side '
        'assert triggered" at /tmp/tmp.i6zuapD3Nj/out/oob.py:4 in <module>.'
    )
