"""The triage as the front door, on the shipped examples: given only a trace, it continues into the playbook
for the problem planted in each (issue 26), and says a healthy trace is healthy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, RunCli, strict_json

CASES = [
    ("grid-overflow.json", "negative-warps-per-sm"),
    ("kernels-missing.json", "kernels-missing"),
    ("cuda-graphs.json", "cuda-graphs"),
    ("impossible-timing.json", "impossible-timing"),
    ("rank-skew", "rank-skew"),
]


def _triage(run_cli: RunCli, tmp_path: Path, trace: str) -> dict[str, object]:
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {EXAMPLES / 'traces' / trace}\n")
    result = run_cli("run", "triage", "--answers", str(answers), "--defaults", "--json")
    assert result.returncode in (0, 1), result.stderr
    data = strict_json(result.stdout)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(("trace", "playbook"), CASES)
def test_the_triage_continues_into_the_playbook_for_the_planted_problem(
    run_cli: RunCli, tmp_path: Path, trace: str, playbook: str
) -> None:
    data = _triage(run_cli, tmp_path, trace)
    chain = data["chain"]
    assert isinstance(chain, list)
    assert [link["playbook"]["id"] for link in chain] == ["triage", playbook]


def test_the_triage_does_not_take_pdl_overlaps_for_a_problem(run_cli: RunCli, tmp_path: Path) -> None:
    """kernels-hidden.json's overlaps are Programmatic Dependent Launch's, with their evidence: kernels-overlap is
    info (docs/health.md), so the triage does not continue into kernels-hidden (`warpwizard run kernels-hidden`
    still names them)."""
    data = _triage(run_cli, tmp_path, "kernels-hidden.json")
    assert "chain" not in data  # no playbook continued from the triage
    conclusion = data["conclusion"]
    assert isinstance(conclusion, dict)
    assert conclusion["diagnosis"] == "trace-healthy"
    assert "kernels-overlap (info): 1 kernel starts inside an earlier event on its row" in str(conclusion["evidence"])


def test_the_triage_calls_a_healthy_trace_healthy_and_says_what_it_checked(run_cli: RunCli, tmp_path: Path) -> None:
    data = _triage(run_cli, tmp_path, "healthy-small.json")
    conclusion = data["conclusion"]
    assert isinstance(conclusion, dict)
    assert conclusion["diagnosis"] == "trace-healthy"
    shown = " ".join(str(e) for e in conclusion["evidence"])
    for check in ("kernels-missing", "kernels-overlap", "graph-launches", "durations", "clock-skew"):
        assert check in shown
