"""The triage's list of playbooks is written once. The order in which a triage continues when several checks
find problems is ``TRIAGE_ORDER`` (derived from each check's ``triage_rank``, beside its playbook in its module of
wizard/trace/health/checks/); how the triage
offers each playbook ("What did you see?") is that playbook's own ``triage: {label, offered}``. triage.yaml
names neither: its question's choices and both ``continue`` lists are ``{from: health-playbooks}``, which the
loader fills from the search path (docs/playbook-format.md, "Lists the loader fills")."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, RunCli, strict_json
from wizard.playbook.derived import declared_triage
from wizard.playbook.loader import load_playbook
from wizard.playbook.model import ConclusionNode, QuestionNode
from wizard.probes.registry import catalog
from wizard.trace.health.checks import CHECKS, TRIAGE_ORDER

FLAGSHIP = "negative-warps-per-sm"


def _triage() -> dict[str, object]:
    return dict(load_playbook(REPO / "playbooks" / "triage.yaml", catalog()).nodes)


def test_the_triage_continues_only_into_the_triage_order_in_that_order() -> None:
    nodes = _triage()
    for node_id in ("described_route", "problems_found"):
        node = nodes[node_id]
        assert isinstance(node, ConclusionNode) and node.continues is not None
        assert node.continues.choices == TRIAGE_ORDER, node_id


def test_the_triage_offers_each_playbook_by_its_own_label_in_its_own_place() -> None:
    described = _triage()["described"]
    assert isinstance(described, QuestionNode)
    own: dict[str, tuple[int, str]] = {}
    for playbook in TRIAGE_ORDER:
        declared = declared_triage(REPO / "playbooks" / f"{playbook}.yaml")
        assert declared is not None, playbook
        own[playbook] = declared
    by_place = sorted(own, key=lambda p: own[p])
    assert [(c.value, c.label) for c in described.choices] == [(p, own[p][1]) for p in by_place]
    assert sorted(offered for offered, _ in own.values()) == list(range(1, len(own) + 1))
    assert described.choices[0].value == described.default == FLAGSHIP  # first: impossible kernel metrics
    text = (REPO / "playbooks" / "triage.yaml").read_text(encoding="utf-8")
    assert [p for p in TRIAGE_ORDER if f"value: {p}," in text] == []  # triage.yaml lists none of them itself
    assert text.count("choices: {from: health-playbooks}") == 3


def test_the_triage_order_is_the_checks_playbooks_and_each_is_shipped() -> None:
    """Every playbook a health check continues into is in the order, once; nothing else is; each is shipped."""
    declared = {check.playbook for check in CHECKS if check.playbook is not None}
    assert set(TRIAGE_ORDER) == declared and len(set(TRIAGE_ORDER)) == len(TRIAGE_ORDER)
    assert TRIAGE_ORDER[-1] == FLAGSHIP  # the kernel metrics last: every other number comes first
    for playbook in TRIAGE_ORDER:
        assert (REPO / "playbooks" / f"{playbook}.yaml").is_file(), playbook


EIGHTH = """\
id: stream-gaps
title: Gaps on a stream
version: "1"
triage: {label: "Gaps on a stream that no kernel explains", offered: 8}
nodes:
  - {id: gaps, kind: conclusion, diagnosis: stream-gaps, summary: gaps}
"""


def test_a_new_health_playbook_joins_the_triage_without_editing_it(run_cli: RunCli, tmp_path: Path) -> None:
    """An 8th health playbook on the search path declares its triage label; the triage offers it last and may
    continue into it, with triage.yaml unchanged."""
    (tmp_path / "stream-gaps.yaml").write_text(EIGHTH)
    checked = run_cli("--playbook-dir", str(tmp_path), "validate", "triage")
    assert checked.status == 0, checked.stdout + checked.stderr
    plan = run_cli(
        "--playbook-dir", str(tmp_path), "run", "triage", "--set", "have=description", "--set",
        "described=stream-gaps", "--dry-run", "--json",
    )  # fmt: skip
    assert plan.status == 0, plan.stderr
    steps = strict_json(plan.stdout)["steps"]
    assert [(s["playbook"], s["node"]) for s in steps][-1] == ("stream-gaps", "gaps")
    listed = run_cli("--playbook-dir", str(tmp_path), "answers", "triage")
    assert "Gaps on a stream that no kernel explains" in listed.stdout


def test_a_playbook_the_health_check_continues_into_must_declare_its_triage(run_cli: RunCli, tmp_path: Path) -> None:
    """A team's rank-skew.yaml on the search path without 'triage' shadows the shipped one: the triage cannot offer
    or continue into it, and says so at the line that derives the list (for both continues and the question)."""
    (tmp_path / "rank-skew.yaml").write_text(EIGHTH.replace("stream-gaps", "rank-skew").replace("triage: ", "# "))
    checked = run_cli("--playbook-dir", str(tmp_path), "validate", "triage")
    assert checked.status == 3, checked.stdout + checked.stderr
    said = [line for line in checked.stdout.splitlines() if "TRIAGE_ORDER" in line]
    message = (
        "the health check continues into 'rank-skew' (TRIAGE_ORDER), but no playbook of that id on the search "
        "path declares 'triage' (its label and place in the list)"
    )
    assert [line.split(": ", 1)[1] for line in said] == [message] * 3
    assert said[0].startswith(f"{REPO / 'playbooks' / 'triage.yaml'}:")


def test_a_triage_declaration_is_checked_where_it_is_written(tmp_path: Path) -> None:
    import pytest

    from wizard.errors import PlaybookError

    bad = tmp_path / "bad.yaml"
    bad.write_text(EIGHTH.replace("offered: 8}", "offered: 0, rank: 2}"))
    with pytest.raises(PlaybookError) as raised:
        load_playbook(bad, catalog())
    assert raised.value.problems == [
        f"{bad}:4:70: 'triage' needs 'offered': a whole number from 1",
        f"{bad}:4:73: unknown field 'rank' in 'triage'; allowed: label, offered",
    ]
