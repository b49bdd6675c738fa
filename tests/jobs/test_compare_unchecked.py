"""``warpwizard compare`` of a report that checked no kernel (a ROCm trace: the profiler records no blocks/warps
per SM or occupancy on AMD GPUs) says "not checked (why)", never "clean", and a mechanism is not said absent on
it: h100 vs mi300 bert-small said "mi300 ... clean" and "E (harmless) only on h100, not on mi300"."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TRACES, RunCli, needs_shared, strict_json


def _report(run_cli: RunCli, trace: Path, out: Path) -> Path:
    """``trace inspect --json TRACE``'s document, written where ``compare`` reads it."""
    result = run_cli("trace", "inspect", "--quiet", "--json", str(trace))
    assert result.returncode in (0, 1), result.stderr  # nsys-mock.sqlite's profiler overhead is a warning
    out.write_text(result.stdout, encoding="utf-8")
    return out


@needs_shared
def test_a_rocm_report_is_not_checked_not_clean(tmp_path: Path, run_cli: RunCli) -> None:
    h100 = _report(run_cli, TRACES / "h100-bert-small.json.gz", tmp_path / "h100.json")
    mi300 = _report(run_cli, TRACES / "mi300-bert-small.json.gz", tmp_path / "mi300.json")
    shown = run_cli("compare", str(h100), str(mi300))
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert "clean" not in flat and "not on mi300" not in flat
    assert "not checked (ROCm trace: the profiler records no blocks/warps per SM or occupancy" in flat
    document = strict_json(run_cli("compare", str(h100), str(mi300), "--json").stdout)
    machines = {m["host"]: m for m in document["machines"]}
    assert machines["mi300-bert-small.json.gz"]["impossible"] is None
    assert machines["mi300-bert-small.json.gz"]["unchecked"].startswith("not checked (ROCm trace")
    assert machines["h100-bert-small.json.gz"]["unchecked"] is None
    assert document["verdict"].startswith("cannot compare: 1 of 2 reports say whether impossible values showed")


@needs_shared
def test_beside_two_checked_reports_an_unchecked_one_is_named_with_why(tmp_path: Path, run_cli: RunCli) -> None:
    """a100 and h100 both show E: "on every machine" of those checked; the CPU-only trace and the Nsight Systems
    export checked nothing, and are named with why."""
    names = ("a100-alexnet.json.gz", "h100-bert-small.json.gz", "cpu-only-rank34.json.gz", "nsys-mock.sqlite")
    reports = [str(_report(run_cli, TRACES / n, tmp_path / f"{n}.report.json")) for n in names]
    verdict = strict_json(run_cli("compare", *reports, "--json").stdout)["verdict"]
    assert verdict.startswith("no machine shows impossible values; E (harmless) on every machine; ")
    assert "cpu-only-rank34.json.gz (unknown GPU): not checked (no GPU kernel in the trace)" in verdict
    assert "nsys-mock.sqlite (NVIDIA GeForce RTX 3080): not checked (none of its 2 kernels carries" in verdict
