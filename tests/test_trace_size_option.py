"""Scratch (issue 46's measurement): an option trace-size reads, declared once and reaching the check."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RunCli, health_check
from wizard.testing.traces import KernelSpec, TraceBuilder


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.add(KernelSpec("k", (64, 1, 1), (128, 1, 1)))
    return b.write(tmp_path / "t.json")


def test_the_size_option_reaches_trace_size(tmp_path: Path, run_cli: RunCli) -> None:
    path = str(_trace(tmp_path))
    found = run_cli("trace", "inspect", "--json", "--fail-on", "never", "--trace-size-info-mib", "0", path).json
    assert health_check(found["reports"][0], "trace-size")["status"] == "info"
    found = run_cli("trace", "inspect", "--json", "--fail-on", "never", path).json
    assert health_check(found["reports"][0], "trace-size")["status"] == "ok"
    bad = run_cli("trace", "inspect", "--trace-size-info-mib", "nan", path)
    assert (bad.status, bad.stderr) == (
        2,
        "warpwizard: error: --trace-size-info-mib must be a finite number of MiB, 0 or more, not nan\n",
    )
