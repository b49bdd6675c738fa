"""Nsight Compute beside Kineto: each ncu fixture joined to a trace of the same kernels the builder writes.

The second computation: the test reads each report itself with NVIDIA's ncu-report (not through the worker),
builds the trace from what it read (names, grids, blocks, registers, shared memory, the device), and computes
the three identities and the label from those numbers by the formulas written here, from Kineto's arithmetic
(../shared/docs/kineto-metrics.md section 3) and ncu's metric definitions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from tests.helpers import ncu_kernels as _read
from tests.helpers import ncu_trace_of as _trace_of
from wizard.testing.traces import KernelSpec, TraceBuilder

NCU = TRACES / "ncu"
FIXTURES = sorted(p.name for p in NCU.glob("*.ncu-rep")) if NCU.is_dir() else []


def _expected(k: dict[str, Any], *, sms_seen_by_kineto: int | None = None) -> dict[str, Any]:
    """The label and identities by the formulas, from ncu's numbers and Kineto's arithmetic."""
    v = k["value"]
    grid, sms = v["launch__grid_size"], v["device__attribute_multiprocessor_count"]
    limits = [v[f"launch__occupancy_limit_{n}"] for n in ("registers", "shared_mem", "warps", "blocks")]
    smem = v["launch__shared_mem_per_block_static"] + v["launch__shared_mem_per_block_dynamic"]
    waves, theoretical = v["launch__waves_per_multiprocessor"], v["sm__maximum_warps_per_active_cycle_pct"]
    assert math.isclose(waves * min(limits), grid / sms, rel_tol=1e-9)  # identity 1, inside ncu's own numbers
    if smem > 49152:
        return {"label": "configuration blind spot"}
    if sms_seen_by_kineto is not None and sms_seen_by_kineto != sms:
        return {"label": "profiler bug"}
    # Kineto's estimate with its limits equal to ncu's (identity 3): (int)(0.5 + 100 * min(active, grid/SMs) *
    # threads / maxThreads), the builder's classic rounding; identity 2 says min(1, waves) * theoretical.
    threads = v["launch__block_size"]
    active = min(limits)
    kineto = int(0.5 + 100 * min(active, grid / sms) * threads / v["device__attribute_max_threads_per_multiprocessor"])
    assert abs(kineto - min(1.0, waves) * theoretical) <= 0.5 + 1e-9
    return {"label": "estimate", "kineto": kineto, "achieved": v["sm__warps_active.avg.pct_of_peak_sustained_active"]}


def _joined(run_cli: RunCli, trace: Path, report: Path) -> tuple[int, dict[str, Any]]:
    result = run_cli("diff", str(trace), str(report), "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, strict_json(result.stdout)


@needs_shared
@pytest.mark.parametrize("fixture", FIXTURES)
def test_each_ncu_fixture_joins_to_the_same_kernels_in_a_trace(run_cli: RunCli, tmp_path: Path, fixture: str) -> None:
    kernels = _read(NCU / fixture)
    trace = _trace_of(kernels, tmp_path / "trace.json")
    code, data = _joined(run_cli, trace, NCU / fixture)
    assert len(data["ncu"]) == len(kernels)
    for k, joined in zip(kernels, data["ncu"], strict=True):
        if k["value"].get("launch__grid_size") is None:  # h800's flash_fwd_kernel: profiled without launch metrics
            assert (joined["label"], joined["matched"]) == (
                "not joined",
                "not joined: ncu recorded this kernel without its launch metrics",
            )
            continue
        assert joined["matched"] == "name and launch configuration", joined
        expected = _expected(k)
        assert joined["label"] == expected["label"], (fixture, joined)
        one, two, three = joined["identities"]
        assert one["holds"] is True and three["holds"] is (expected["label"] != "configuration blind spot")
        if expected["label"] == "estimate":
            assert two["holds"] is True and joined["kineto_occupancy_pct"] == expected["kineto"]
            assert joined["ncu_achieved_pct"] == pytest.approx(expected["achieved"])
        else:
            assert three["kineto"]["shared_mem"] == 0 and three["ncu"]["shared_mem"] >= 1
    assert code == 0  # no profiler bug in a trace written with Kineto's own arithmetic


@needs_shared
def test_a_wrong_sm_count_in_the_trace_is_the_profilers_bug(run_cli: RunCli, tmp_path: Path) -> None:
    """Mechanism B planted (the SM count read as -1): Kineto's blocks per SM is -grid, which ncu's waves contradict."""
    kernels = _read(NCU / "rtx2080ti-hugegrid.ncu-rep")
    trace = _trace_of(kernels, tmp_path / "b.json", plant="B")
    code, data = _joined(run_cli, trace, NCU / "rtx2080ti-hugegrid.ncu-rep")
    assert code == 1
    for joined, k in zip(data["ncu"], kernels, strict=True):
        one = joined["identities"][0]
        assert (joined["label"], one["holds"]) == ("profiler bug", False)
        assert one["kineto"] == -k["value"]["launch__grid_size"] and one["ncu"] == pytest.approx(256000 / 68)


@needs_shared
def test_the_one_block_grids_are_an_estimate_and_say_why(run_cli: RunCli, tmp_path: Path) -> None:
    """GTX 1660 Ti, one block on 24 SMs: Kineto's estimate rounds to 0% where ncu measures 6.2% over the SM that
    ran; the label says so."""
    report = NCU / "gtx1660ti-one-block.ncu-rep"
    kernels = _read(report)
    _, data = _joined(run_cli, _trace_of(kernels, tmp_path / "t.json"), report)
    first = data["ncu"][0]
    assert (first["label"], first["kineto_occupancy_pct"]) == ("estimate", 0)
    assert "1 block on 24 SMs; ncu averages over the SMs that ran" in first["why"]


def test_a_kernel_the_trace_lacks_and_a_report_of_another_gpu_are_said(run_cli: RunCli, tmp_path: Path) -> None:
    csv = tmp_path / "raw.csv"
    csv.write_text(
        '"ID","Kernel Name","device__attribute_display_name","launch__grid_size","launch__block_size",'
        '"launch__grid_dim_x","launch__grid_dim_y","launch__grid_dim_z","launch__block_dim_x","launch__block_dim_y",'
        '"launch__block_dim_z","launch__occupancy_limit_registers","launch__occupancy_limit_shared_mem",'
        '"launch__occupancy_limit_warps","launch__occupancy_limit_blocks"\n'
        '"","","","","","","","","","","","block","block","block","block"\n'
        '"0","other_kernel","NVIDIA A40","84","256","84","1","1","256","1","1","8","16","6","16"\n'
    )
    b = TraceBuilder(gpu="A100")
    b.add(KernelSpec("gemm_kernel", (108, 1, 1), (256, 1, 1)))
    code, data = _joined(run_cli, b.write(tmp_path / "t.json"), csv)
    (joined,) = data["ncu"]
    assert (joined["label"], joined["why"], code) == ("not joined", "the trace has no launch like it", 0)
    gpu = next(f for f in data["factors"] if f["name"] == "GPU model")
    assert (gpu["before"], gpu["after"], gpu["status"]) == ("NVIDIA A100-SXM4-80GB", "NVIDIA A40", "differs")


def test_the_closed_readers_failure_is_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    """A damaged .ncu-rep: NVIDIA's library refuses it inside the worker; the user reads one line, exit 6."""
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"NVR\x00" + b"\xff" * 4096)
    b = TraceBuilder()
    b.add(KernelSpec("gemm_kernel", (108, 1, 1), (256, 1, 1)))
    result = run_cli("diff", str(b.write(tmp_path / "t.json")), str(bad))
    lines = result.stderr.strip().splitlines()
    assert result.returncode in (2, 6) and len(lines) == 1 and "bad.ncu-rep" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_hung_reader_is_bounded(tmp_path: Path) -> None:
    """The worker's time bound: a runner that says it timed out (the injected outside world) is one clear error."""
    from wizard.errors import InputFileError
    from wizard.ncu import READ_SECONDS, read_report
    from wizard.runner import CommandResult

    class Hangs:
        def run(self, argv: list[str], *, timeout: float) -> CommandResult:
            assert timeout == READ_SECONDS and argv[1:3] == ["-m", "wizard.ncu.worker"]
            return CommandResult(argv, None, "", timeout, True)

    with pytest.raises(InputFileError, match=r"did not finish in 120 s"):
        read_report(str(tmp_path / "r.ncu-rep"), Hangs())


def test_a_missing_reader_names_the_command_that_installs_it_where_warpwizard_came_from(tmp_path: Path) -> None:
    """Exit 9's promise (the help: "the command that installs it where warpwizard came from"): a newcomer read
    `pip install ncu-report` for the .ncu-rep reader beside `pip install '../newcomer[html]'` for plotly."""
    from wizard.errors import MissingDependency
    from wizard.extras import install_command
    from wizard.ncu import read_report
    from wizard.runner import CommandResult

    class NotInstalled:
        def run(self, argv: list[str], *, timeout: float) -> CommandResult:
            return CommandResult(argv, 3, "ncu-report is not installed", 0.1, False)

    with pytest.raises(MissingDependency) as raised:
        read_report(str(tmp_path / "r.ncu-rep"), NotInstalled())
    assert f"needs NVIDIA's ncu-report package ({install_command('ncu')}; " in str(raised.value)
    assert "[ncu]" in install_command("ncu")
