"""One verdict, said the same everywhere (issue 45 items 4 and 12): the triage's trace.inspect line, its
conclusion and the gate (`trace inspect`'s exit) agree on every shared trace; `--json`'s groups carry the severity
the impossible-metrics check gives their mechanism; docs/health.md names exactly the shared traces that exit 1."""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests import health_oracle as oracle
from tests.conftest import EXAMPLES, REPO, TRACES, RunCli, needs_shared, run_inprocess, strict_json

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")


def shared_traces() -> list[str]:
    """Every trace file under ../shared/traces (the .sqlite exports too), each content once (pairs/ holds copies),
    and the two-rank directory as the job it is; paths relative to the traces' directory."""
    if not TRACES.is_dir():
        return []
    seen: dict[str, str] = {}
    for path in sorted(TRACES.rglob("*")):
        if path.is_file() and path.name.endswith(TRACE_SUFFIXES):
            seen.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), str(path.relative_to(TRACES)))
    return [*sorted(seen.values()), "dlrm-2ranks"]


@cache
def gate(name: str) -> int:
    """`trace inspect TRACE` as a CI gate runs it (the default --fail-on warning): its exit status."""
    result = run_inprocess("trace", "inspect", str(TRACES / name))
    assert result.status in (0, 1), result.stderr
    return result.status


def triage(run_cli: RunCli, tmp_path: Path, trace: Path) -> dict[str, Any]:
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\n")
    result = run_cli("run", "triage", "--answers", str(answers), "--defaults", "--json")
    assert result.returncode in (0, 1), result.stderr
    data = strict_json(result.stdout)
    assert isinstance(data, dict)
    return data


@needs_shared
@pytest.mark.parametrize("name", shared_traces())
def test_the_triage_probe_line_its_conclusion_and_the_gate_agree(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    """Issue 45 item 4: "trace.inspect FAIL" then "no problem found", or PASS then "1 problem found", no more. The
    probe fails exactly where the gate exits 1, and the triage concludes on problems exactly then."""
    data = triage(run_cli, tmp_path, TRACES / name)
    entries = data["entries"]
    probe = next(e for e in entries if e["node"] == "inspect")
    routed = next(e for e in entries if e["kind"] == "conclusion")["node"]  # the triage's own conclusion
    failed = probe["status"] == "fail"
    assert failed == (gate(name) == 1), f"{name}: probe {probe['status']}, gate exit {gate(name)}"
    assert failed == (routed == "problems_found"), f"{name}: probe {probe['status']}, concluded {routed}"
    assert failed == bool(probe["facts"]["health_problems"])
    if routed == "healthy":
        assert data["conclusion"]["diagnosis"] == "trace-healthy" and "chain" not in data


def test_a_cut_trace_fails_the_probe_and_the_triage_continues_into_its_playbook(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """A planted cut (the last 400 bytes of an example gone, the kernels of its last launches with them): the probe's
    line is the health verdict's, and the kernels-missing playbook names the cut, not dropped records."""
    text = (EXAMPLES / "traces" / "kernels-hidden.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) - 400])
    data = triage(run_cli, tmp_path, cut)
    probe = next(e for e in data["entries"] if e["node"] == "inspect")
    assert probe["status"] == "fail"
    # the launches cut off at the end are kernels-missing's after_window (info) since issue 45 item 8: the cut
    # itself is the one problem, and trace-incomplete names it
    assert probe["facts"]["health_problems"] == ["trace-incomplete"]
    assert probe["summary"].endswith("1 health problem (error): trace-incomplete")
    assert data["conclusion"]["diagnosis"] == "trace-cut-short"
    assert run_inprocess("trace", "inspect", str(cut)).status == 1


# -- item 12: a group's severity is its mechanism's verdict ------------------------------------------------------


def _groups(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = run_inprocess("trace", "inspect", "--json", "--all", str(path))
    (report,) = strict_json(result.stdout)["reports"]
    (check,) = [c for c in report["health"] if c["check"] == "impossible-metrics"]
    return report["groups"], check


@pytest.mark.parametrize("trace", ["grid-overflow.json", "shared-memory-over-48k.json", "large-by-design.json"])
def test_json_groups_carry_the_severity_the_check_gives_their_mechanism(trace: str) -> None:
    """The flagship's conclusions (read from its YAML by the oracle) give each mechanism its verdict; F, correct by
    design, is info. E was "error" in groups while the check called it harmless info."""
    verdicts = oracle.flagship_verdicts()
    groups, check = _groups(EXAMPLES / "traces" / trace)
    assert groups
    for group in groups:
        want = "info" if group["mechanism"] == "F" else verdicts[group["mechanism"]]
        assert group["severity"] == want, group["mechanism"]
    wrong = [g["severity"] for g in groups if g["mechanism"] != "F"]
    if wrong:  # the check's status is the worst of its groups'
        order = ["info", "warning", "error"]
        assert check["status"] == max(wrong, key=order.index)


@needs_shared
def test_mechanism_e_is_info_in_groups_and_in_the_check_on_a_real_trace() -> None:
    groups, check = _groups(TRACES / "h100-bert-small.json.gz")
    assert {g["mechanism"] for g in groups} == {"E"}
    assert {g["severity"] for g in groups} == {"info"} == {check["status"]}


# -- docs/health.md says which shared traces exit 1 --------------------------------------------------------------


def documented_exit_1() -> set[str]:
    text = (REPO / "docs" / "health.md").read_text()
    found = re.search(r"<!-- gate-exit-1 -->(.*?)<!-- /gate-exit-1 -->", text, re.S)
    assert found, "docs/health.md: the gate's list of shared traces that exit 1 is missing"
    return set(re.findall(r"`([^`]+\.(?:json|json\.gz|sqlite)|dlrm-2ranks)`", found.group(1)))


@needs_shared
def test_docs_name_exactly_the_shared_traces_that_exit_1() -> None:
    """docs/health.md said none of the shared traces exits 1 while one did (issue 45 item 12): the list is held to
    the gate's exit on each, so a change to a check that changes an exit changes the page."""
    assert documented_exit_1() == {name for name in shared_traces() if gate(name) == 1}
