"""Rerun from a node: a previous run's recorded probe results stand in for the probes before it.

A re-profile or an isolate can take minutes; after changing an answer late in the tree, or to
retry a failed step, ``warpwizard run PLAYBOOK --answers previous.json --from NODE`` (or
``--from-step N``) takes the answers and the results of every probe the previous run reached
before NODE from its ``--json`` transcript, and runs from NODE on (as Ansible's
``--start-at-task`` and ``gh run rerun --failed`` do). Each reused entry says where it came from.

The transcript is data like a trace: its facts steer decisions, and a program named by them is
refused exactly as in a fresh run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from wizard import schemas
from wizard.errors import UsageError
from wizard.playbook.model import Playbook
from wizard.probes.base import ProbeResult, Status

MAX_TRANSCRIPT_BYTES = 64 << 20


@dataclass(slots=True)
class Reuse:
    source: str
    start: str  # the node the run really starts working from
    results: dict[str, ProbeResult] = field(default_factory=dict)  # probe node -> recorded result


def _document(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TRANSCRIPT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--from: cannot read {path} ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_TRANSCRIPT_BYTES else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or schemas.kind(data.get("schema")) != "warpwizard.transcript":
        raise UsageError(f"--from needs --answers to be a previous run's --json transcript; {path} is not one")
    return data


def _result(entry: dict[str, Any]) -> ProbeResult | None:
    try:
        status = Status(entry.get("status"))
    except ValueError:
        return None
    facts, evidence, files = entry.get("facts"), entry.get("evidence"), entry.get("files")
    return ProbeResult(
        status,
        str(entry.get("summary") or ""),
        facts=dict(facts) if isinstance(facts, dict) else {},
        evidence=[str(x) for x in evidence] if isinstance(evidence, list) else [],
        files=[str(x) for x in files] if isinstance(files, list) else [],
    )


def _start(pb: Playbook, nodes: list[str], entries: list[dict[str, Any]], node: str | None, step: int | None) -> str:
    if step is not None:
        if not 1 <= step <= len(pb.steps):
            raise UsageError(f"--from-step {step}: playbook {pb.id} has steps 1 to {len(pb.steps)}")
        wanted = pb.steps[step - 1].id
        found = next((e.get("node") for e in entries if e.get("step") == wanted), None)
        if not isinstance(found, str):
            raise UsageError(f"--from-step {step}: the previous run never reached step {step} ({wanted})")
        return found
    assert node is not None
    if node not in pb.nodes:
        raise UsageError(f"--from {node}: playbook {pb.id} has no such node")
    if node not in nodes:
        raise UsageError(f"--from {node}: the previous run did not reach it; it visited: {', '.join(nodes)}")
    return node


def recorded(pb: Playbook, path: str, *, node: str | None = None, step: int | None = None) -> Reuse:
    """The probe results of ``path`` (a ``--json`` transcript of ``pb``) before ``node`` or step ``step``."""
    data = _document(path)
    about = data.get("playbook")
    if not isinstance(about, dict) or about.get("id") != pb.id:
        found = about.get("id") if isinstance(about, dict) else None
        raise UsageError(f"--from: {path} is a transcript of playbook {found!r}, not {pb.id}")
    # a chained run's entries of later playbooks are theirs: --from reruns the playbook the run started with
    entries = [e for e in data.get("entries") or [] if isinstance(e, dict) and e.get("playbook") in (None, pb.id)]
    nodes = [str(e.get("node")) for e in entries]
    start = _start(pb, nodes, entries, node, step)
    reuse = Reuse(path, start)
    for entry in entries[: nodes.index(start)]:
        name = entry.get("node")
        if entry.get("kind") == "probe" and isinstance(name, str) and name not in reuse.results:
            result = _result(entry)
            if result is not None:
                reuse.results[name] = result
    return reuse
