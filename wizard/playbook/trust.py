"""Which probe parameters decide what runs, and whether a value of one is the user's own.

A parameter declared ``runs`` (a workload, an interpreter, a script) may take its value only
from answers a person typed, confirmed or gave on the command line; anything the playbook
writes itself, builds around an answer, or takes from probe results (which come from traces)
needs ``--allow-commands``. The loader-time view (`program_uses`, for ``validate``) and the
run-time check (`refusal`, for the engine) share `answer_sources`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wizard.playbook.conditions import Template
from wizard.playbook.model import Playbook, ProbeNode
from wizard.probes.base import ProbeInfo


def answer_sources(raw: Any) -> tuple[str, ...] | None:
    """The questions whose answers alone make up a parameter's value; None when the playbook
    itself, or a probe's facts, shape it."""
    if (
        isinstance(raw, Template)
        and raw.is_single_expression
        and raw.references
        and all(r.root == "answers" for r in raw.references)
    ):
        return tuple(r.node for r in raw.references)
    return None


def _named(refs: Any) -> str:
    return ", ".join(dict.fromkeys(".".join(p for p in (r.root, r.node, r.fact) if p) for r in refs))


def _one_source(raw: Any) -> str | None:
    """Where one value (or one item of a list) comes from, when not from the playbook's own text."""
    if isinstance(raw, Template) and any(r.root != "answers" for r in raw.references):
        found = [r for r in raw.references if r.root != "answers"]
        return f"taken from probe results ({_named(found)}), which come from traces, transcripts and other files"
    if isinstance(raw, Template) and raw.references:
        return f"built by the playbook around an answer ({_named(raw.references)})"
    return None


def chosen_by_facts(raw: Any) -> bool:
    """Whether probe results (which come from traces and, with ``--from``, transcripts) shape a value or
    any item of it: such a program is shown to the person before it runs, even with ``--allow-commands``."""
    items = raw if isinstance(raw, list) else [raw]
    return any(isinstance(i, Template) and any(r.root != "answers" for r in i.references) for i in items)


def _not_yours(raw: Any) -> str:
    """Where a program-naming value that is not the user's own comes from: each item of a list
    (``argv``) named, the first being the program itself."""
    if isinstance(raw, list):
        parts = [
            f"item {i}{' (the program)' if i == 0 else ''} {why}"
            for i, item in enumerate(raw)
            if (why := _one_source(item)) is not None
        ]
        if parts:
            return "; ".join([*parts, "the rest written in the playbook"] if len(parts) < len(raw) else parts)
    return _one_source(raw) or "written in the playbook"


def refusal(raw: Any, origins: Mapping[str, str], trusted: frozenset[str], words: Mapping[str, str]) -> str | None:
    """None when the value is the user's own; else where it came from, in words."""
    sources = answer_sources(raw)
    if sources is None:
        return _not_yours(raw)
    for question in sources:
        origin = origins.get(question)
        if origin is not None and origin not in trusted:
            return words.get(origin, f"from {origin}")
    return None


@dataclass(frozen=True, slots=True)
class ProgramUse:
    """A probe node that runs programs, and how each program-naming parameter is set."""

    node: str
    probe: str
    runs: str
    from_answers: dict[str, tuple[str, ...]]  # parameter -> the questions it comes from
    needs_opt_in: dict[str, str]  # parameter -> why only --allow-commands lets it run


def program_uses(pb: Playbook, probes: Mapping[str, ProbeInfo]) -> list[ProgramUse]:
    uses = []
    for node in pb.nodes.values():
        if not isinstance(node, ProbeNode):
            continue
        info = probes.get(node.probe)
        if info is None or not info.runs_programs:
            continue
        from_answers: dict[str, tuple[str, ...]] = {}
        needs: dict[str, str] = {}
        for spec in info.params:
            if spec.runs and spec.name in node.params:
                sources = answer_sources(node.params[spec.name])
                if sources is None:
                    needs[spec.name] = _not_yours(node.params[spec.name])
                else:
                    from_answers[spec.name] = sources
        uses.append(ProgramUse(node.id, node.probe, info.runs_programs, from_answers, needs))
    return uses
