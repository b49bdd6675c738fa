"""The kernel checks' memo is bounded (issue 47 item 7: an Nsight export whose every kernel has its own grid kept a
KernelCheck per launch, ~1 KB each). Past ``MEMO_CAP`` distinct launches a launch is checked anew; what the
inspection says must not change: the same report with the memo holding one launch as with it holding all, on a
builder trace whose planted bugs (wizard/testing/traces.py) repeat, identical launches far apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.metrics import detectors


def _trace(path: Path) -> Path:
    b = TraceBuilder()
    for i in range(60):
        plant = ("B", "C", "D", None)[i % 4]
        b.add(KernelSpec(f"k{i % 5}", (132 * (1 + i % 7), 1, 1), (256, 1, 1), plant=plant))
    return b.write(path)


def _without_times(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k != "timing"}


def test_a_memo_of_one_launch_says_what_a_full_memo_says(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path / "t.json")
    full = inspect_json(run_cli, path, "--all")
    monkeypatch.setattr(detectors, "MEMO_CAP", 1)
    capped = inspect_json(run_cli, path, "--all")
    assert full["reports"][0]["mechanisms"]  # planted bugs found
    assert [_without_times(r) for r in capped["reports"]] == [_without_times(r) for r in full["reports"]]
