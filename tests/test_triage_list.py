"""The triage's list of playbooks is written once: ``TRIAGE_ORDER`` (wizard/trace/health/spec.py), the order in
which a triage continues when several checks find problems. The triage playbook repeats it where the playbook
grammar has no way to name a Python constant (its ``continue.choices``, checked when it loads, and its
``described`` question's choices), so this test fails the moment one of them drifts from it."""

from __future__ import annotations

from tests.conftest import REPO
from wizard.playbook.loader import load_playbook
from wizard.playbook.model import ConclusionNode, QuestionNode
from wizard.probes.registry import catalog
from wizard.trace.health.spec import CHECKS, TRIAGE_ORDER

FLAGSHIP = "negative-warps-per-sm"


def _triage() -> dict[str, object]:
    return dict(load_playbook(REPO / "playbooks" / "triage.yaml", catalog()).nodes)


def test_the_triage_continues_only_into_the_triage_order_in_that_order() -> None:
    nodes = _triage()
    for node_id in ("described_route", "problems_found"):
        node = nodes[node_id]
        assert isinstance(node, ConclusionNode) and node.continues is not None
        assert node.continues.choices == TRIAGE_ORDER, node_id


def test_the_triage_offers_a_description_for_every_playbook_it_can_continue_into() -> None:
    described = _triage()["described"]
    assert isinstance(described, QuestionNode)
    values = [choice.value for choice in described.choices]
    assert sorted(values) == sorted(TRIAGE_ORDER) and len(values) == len(TRIAGE_ORDER)
    assert described.default == FLAGSHIP  # offered first: the flagship, for impossible kernel metrics


def test_the_triage_order_is_the_checks_playbooks_and_each_is_shipped() -> None:
    """Every playbook a health check continues into is in the order, once; nothing else is; each is shipped."""
    declared = {check.playbook for check in CHECKS if check.playbook is not None}
    assert set(TRIAGE_ORDER) == declared and len(set(TRIAGE_ORDER)) == len(TRIAGE_ORDER)
    assert TRIAGE_ORDER[-1] == FLAGSHIP  # the kernel metrics last: every other number comes first
    for playbook in TRIAGE_ORDER:
        assert (REPO / "playbooks" / f"{playbook}.yaml").is_file(), playbook
