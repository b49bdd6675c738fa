"""A health check's promise: the playbook its declaration names (``CheckSpec.playbook``, where the triage
continues when the check finds a problem) reads what the check found.

A triage once routed a new check into a playbook whose route never looked at that check's facts, so the person
was asked "what symptom?" as if nothing had been found. Derived from the registry (each check, its playbook, its
declared facts) and the loaded playbooks (their trace.inspect node and every condition's references), so a new
check or playbook is held to it without editing this file.
"""

from __future__ import annotations

import typing

import pytest

from wizard import list_probes, load_playbook
from wizard.playbook.model import DecisionNode, Playbook, ProbeNode
from wizard.trace.health.checks import CHECKS
from wizard.trace.health.spec import CheckSpec

ROUTED = [check for check in CHECKS if check.playbook is not None]


def inspect_nodes(pb: Playbook) -> set[str]:
    """The playbook's nodes that run trace.inspect (the trace doctor's one read, whose facts a route reads)."""
    return {nid for nid, node in pb.nodes.items() if isinstance(node, ProbeNode) and node.probe == "trace.inspect"}


def routed_on(pb: Playbook) -> set[str]:
    """The trace.inspect facts a decision of the playbook branches on: what its route reads."""
    nodes = inspect_nodes(pb)
    return {
        ref.fact
        for node in pb.nodes.values()
        if isinstance(node, DecisionNode)
        for branch in node.branches
        for ref in branch.when.references
        if ref.root == "facts" and ref.node in nodes and ref.fact is not None
    }


def read_anywhere(pb: Playbook) -> set[str]:
    """The trace.inspect facts any condition or text of the playbook reads (evidence, prompts, parameters)."""
    nodes = inspect_nodes(pb)
    return {
        ref.fact
        for node in pb.nodes.values()
        for _, holder in node.expressions()
        for ref in holder.references
        if ref.root == "facts" and ref.node in nodes and ref.fact is not None
    }


def promised(check: CheckSpec) -> set[str]:
    """The facts trace.inspect reads from the check (``CheckSpec.facts``); for the flagship's check, which declares
    none (trace.inspect's own facts are its findings), those of its details trace.inspect declares by name."""
    own = {fact.name for fact in check.facts}
    if own:
        return own
    declared = {fact.name for fact in list_probes()["trace.inspect"].facts}
    return set(typing.get_type_hints(check.details)) & declared


def test_every_check_that_names_a_playbook_promises_facts() -> None:
    """A check with nothing for trace.inspect to read could be routed anywhere: each one routed promises some."""
    assert ROUTED, "no check names a playbook: the registry did not load"
    assert [check.id for check in ROUTED if not promised(check)] == []


@pytest.mark.parametrize("check", ROUTED, ids=lambda c: c.id)
def test_the_playbook_a_check_names_routes_on_one_of_its_facts(check: CheckSpec) -> None:
    pb = load_playbook(str(check.playbook))
    assert inspect_nodes(pb), f"{check.playbook} never runs trace.inspect, so it cannot read what {check.id} found"
    assert promised(check) & routed_on(pb), (
        f"{check.id} continues into {check.playbook}, whose decisions branch on none of its facts "
        f"({', '.join(sorted(promised(check)))}): the triage would ask what the check already found"
    )
    assert routed_on(pb) <= read_anywhere(pb)  # a condition is one of the places a playbook reads


def test_the_guard_fails_for_a_playbook_that_serves_another_check() -> None:
    """The guard can fail: rank-skew's facts are read nowhere in kernels-hidden (a playbook about a viewer), and
    kernels-overlap's are read nowhere in rank-skew."""
    by_id = {check.id: check for check in CHECKS}
    assert not promised(by_id["rank-skew"]) & read_anywhere(load_playbook("kernels-hidden"))
    assert not promised(by_id["kernels-overlap"]) & read_anywhere(load_playbook("rank-skew"))
    assert promised(by_id["kernels-overlap"]) & routed_on(load_playbook("kernels-hidden"))
