"""The lists a playbook's loader derives rather than reads: ``choices: {from: health-playbooks}``, the triage's
choices, one per health playbook on the search path, each from that playbook's own ``triage:`` (its label and
its place in the list), in the health check's order (``TRIAGE_ORDER``, from each check's ``triage_rank``).

Kept apart from the loader's checks so that a new health playbook is one file: nothing lists the playbooks,
the triage included; the loader only says where such a list breaks the health check's promise (a playbook the
check continues into that declares no ``triage``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from wizard.playbook.yaml_source import MAX_YAML_CHARS, YamlSyntaxError, load_located

# A playbook's top-level ``triage:`` block, read alone: the list needs two fields of each file, not its nodes.
_TRIAGE_BLOCK = re.compile(r"^triage:[^\n]*(?:\n[ \t]+[^\n]*)*", re.M)


class HealthPlaybook(NamedTuple):
    """A playbook the triage offers: its place in the list, its id, how the list says it."""

    offered: int
    id: str
    label: str


def declared_triage(path: Path) -> tuple[int, str] | None:
    """A playbook file's ``triage`` (offered, label), read from its top-level ``triage:`` block alone (safe YAML,
    bounded like the file); None where it declares none or not as the grammar says (its own load reports why)."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(MAX_YAML_CHARS).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    block = _TRIAGE_BLOCK.search(text)
    try:
        data = load_located(block.group()).data if block else None
    except YamlSyntaxError:
        return None
    triage = data.get("triage") if isinstance(data, dict) else None
    if not isinstance(triage, dict):
        return None
    label, offered = triage.get("label"), triage.get("offered")
    if not isinstance(label, str) or not isinstance(offered, int) or isinstance(offered, bool):
        return None
    return offered, label


def playbook_files(search: Sequence[Path]) -> dict[str, Path]:
    """Each playbook id on the search path and its file, the first file of an id winning as when it is run."""
    found: dict[str, Path] = {}
    for place in search:
        try:
            files = [place] if place.is_file() else sorted(place.iterdir())
        except OSError:
            continue
        for f in files:
            if f.suffix in (".yaml", ".yml") and f.is_file():
                found.setdefault(f.stem, f)
    return found


def health_playbooks(search: Sequence[Path]) -> list[HealthPlaybook]:
    """Every playbook on the search path that declares ``triage``, by ``offered`` (then id)."""
    declared = ((pid, declared_triage(f)) for pid, f in playbook_files(search).items())
    return sorted(HealthPlaybook(d[0], pid, d[1]) for pid, d in declared if d is not None)


def not_offered(health: Sequence[HealthPlaybook]) -> list[str]:
    """The playbooks the health check continues into (``TRIAGE_ORDER``) that the list lacks: each a problem."""
    from wizard.trace.health.checks import TRIAGE_ORDER

    offered = {p.id for p in health}
    return [pid for pid in TRIAGE_ORDER if pid not in offered]


def health_order(health: Sequence[HealthPlaybook]) -> list[str]:
    """A ``continue``'s derived choices: the health check's order (``TRIAGE_ORDER``), then any other playbook
    that declares ``triage``, by ``offered``."""
    from wizard.trace.health.checks import TRIAGE_ORDER

    ids = [p.id for p in health]
    return [p for p in TRIAGE_ORDER if p in ids] + [p for p in ids if p not in TRIAGE_ORDER]
