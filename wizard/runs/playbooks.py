"""Playbooks for a run: loaded by name or path and checked in full, validated, and the playbooks a run may continue
into (found by id on the same search path)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.api import PathLike, path_text
from wizard.errors import PlaybookError
from wizard.playbook.model import Playbook
from wizard.probes.registry import catalog

if TYPE_CHECKING:
    from collections.abc import Callable


def load_playbook(
    name_or_path: PathLike, *, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> Playbook:
    """A playbook by name (the packaged ones, ``playbook_dirs``, ``WARPWIZARD_PLAYBOOK_PATH``) or path,
    checked in full. Raises PlaybookNotFound, or PlaybookError with every problem in ``.problems``."""
    from wizard.playbook.discovery import load

    return load(named_path(name_or_path, "playbook"), catalog(), list(playbook_dirs), environ)


def validate_playbook(path: PathLike) -> list[str]:
    """Every problem of one playbook file, one ``file:line:column: message`` each; empty when valid."""
    from wizard.playbook.loader import load_playbook as _load

    try:
        _load(os.fspath(path), catalog())
    except PlaybookError as exc:
        return list(exc.problems)
    return []


def the_playbook(
    playbook: Playbook | PathLike, playbook_dirs: Sequence[str], environ: Mapping[str, str] | None
) -> Playbook:
    """``playbook`` itself, or loaded by name or path."""
    if isinstance(playbook, Playbook):
        return playbook
    return load_playbook(named_path(playbook, "playbook"), playbook_dirs=playbook_dirs, environ=environ)


def playbook_loader(
    playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> Callable[[str], Playbook]:
    """Loads a playbook by id from the search path (never a path): where a conclusion continues."""
    from wizard.playbook.discovery import load_named

    def load(name: str) -> Playbook:
        return load_named(name, catalog(), list(playbook_dirs), environ)

    return load


def chain_of(pb: Playbook, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> Playbook:
    """``pb`` with every node of the playbooks it may continue into (the first's where ids repeat): what
    its answers may answer, and the questions ``warpwizard answers`` lists. Never walked."""
    from wizard.engine.chain import chain_view, reachable_playbooks

    if not pb.continuations():
        return pb
    return chain_view(reachable_playbooks(pb, playbook_loader(playbook_dirs, environ)))


def named_by_id(playbook: object) -> bool:
    """Whether the caller named the playbook by id (found on the search path), not by a path."""
    return isinstance(playbook, str) and Path(playbook).suffix not in (".yaml", ".yml") and os.sep not in playbook


def continued_ids(pb: Playbook, playbook_dirs: Sequence[str], environ: Mapping[str, str] | None) -> list[str]:
    """The ids of the playbooks a run of ``pb`` may continue into, directly or further (loaded by id)."""
    from wizard.engine.chain import reachable_playbooks

    if not pb.continuations():
        return []
    return [p.id for p in reachable_playbooks(pb, playbook_loader(playbook_dirs, environ))[1:]]


def program_questions(pb: Playbook, parameter: str | None = None) -> list[str]:
    """The questions whose answer is what a probe runs (its ``parameter``, or any program-naming one):
    ``--workload`` answers those of ``workload``; the answers template leaves them for the user."""
    from wizard.playbook.trust import program_uses

    found: dict[str, None] = {}  # in order, once each
    for use in program_uses(pb, catalog()):
        for name, questions in use.from_answers.items():
            if parameter in (None, name):
                found.update(dict.fromkeys(questions))
    return list(found)


def workload_questions(pb: Playbook) -> list[str]:
    """The questions whose answer is a probe's ``workload``: what ``--workload`` answers."""
    return program_questions(pb, "workload")


def named_path(value: Any, what: str) -> str:
    """A name or path the caller gave, as text (UsageError for anything else: bytes too)."""
    return path_text(value, what, "a name or path (str or os.PathLike)")
