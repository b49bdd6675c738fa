"""The catalogue: the playbooks found on the search path, checked (``validate``), drawn, explained; the playbook
schema; this machine's facts; what shell completion offers."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.environment import Environment
from wizard.errors import PlaybookError, PlaybookNotFound
from wizard.formatting import plural
from wizard.playbook.model import Playbook
from wizard.probes.base import ProbeResult
from wizard.probes.registry import catalog
from wizard.system import System

if TYPE_CHECKING:
    from wizard.playbook.trust import ProgramUse


@dataclass(frozen=True, slots=True)
class FoundPlaybook:
    """A playbook found on the search path, loaded (``title`` etc.) or not (``problem``)."""

    name: str
    origin: str
    title: str | None = None
    version: str = ""
    steps: int = 0
    problem: str | None = None
    shadowing: str | None = None  # the line saying it hides a shipped playbook of its id
    fragment_shadowing: tuple[str, ...] = ()  # a line for each fragment it uses that hides a shipped one


def found_playbooks(playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> list[FoundPlaybook]:
    """Every playbook on the search path (the package, ``playbook_dirs``, ``WARPWIZARD_PLAYBOOK_PATH``),
    each loaded; one that does not load is listed with its first problem."""
    from wizard.playbook.discovery import list_playbooks, search_places, shadowing
    from wizard.playbook.loader import load_playbook as _load

    probes, out = catalog(), []
    search = search_places(list(playbook_dirs), environ)
    for found in list_playbooks(list(playbook_dirs), environ):
        hides = shadowing(found)
        try:
            pb = _load(found.path, probes, search=search)
        except (PlaybookError, PlaybookNotFound) as exc:  # one bad file is a row, not the end of the listing
            out.append(FoundPlaybook(found.name, found.origin, problem=str(exc), shadowing=hides))
            continue
        out.append(
            FoundPlaybook(
                found.name,
                found.origin,
                pb.title,
                pb.version,
                len(pb.steps),
                shadowing=hides,
                fragment_shadowing=tuple(shadowed_fragment_notes(pb)),
            )
        )
    return out


def shadowed_fragment_notes(pb: Playbook) -> list[str]:
    """For each fragment ``pb`` (or a playbook it continues into) inserted from a file that hides the shipped
    fragment of its id, the line that says so: as silent as a shadowed playbook was before it got one."""
    from wizard.playbook.discovery import fragment_shadowing

    lines = (fragment_shadowing(path) for path in pb.fragments)
    return [line for line in lines if line is not None]


def shadowed_notes(
    ids: Sequence[str], playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """For each of ``ids`` a run walks by id (its start named by id, the playbooks it may continue into) that a
    playbook on the search path takes from the shipped one, the line that says so."""
    from wizard.playbook.discovery import list_playbooks, shadowing

    wanted = set(ids)
    lines = (shadowing(found) for found in list_playbooks(list(playbook_dirs), environ) if found.name in wanted)
    return [line for line in lines if line is not None]


@dataclass(frozen=True, slots=True)
class Checked:
    """One playbook checked by ``validate``: its problems, or what it is and which nodes run programs."""

    name: str
    problems: list[str]
    summary: str = ""
    program_uses: list[ProgramUse] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # it loads, but something reads other than meant


def check_playbooks(
    names: Sequence[str], playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[Checked]:
    """``warpwizard validate``: names, paths or directories (expanded to the playbooks in them)."""
    from wizard.playbook.discovery import search_places
    from wizard.playbook.loader import load_playbook as _load
    from wizard.playbook.loader import prose_warnings, unknown_continuations
    from wizard.playbook.trust import program_uses

    probes, out = catalog(), []
    search = search_places(list(playbook_dirs), environ)
    for name, path, problem in _targets(names, playbook_dirs, environ):
        if path is None:
            out.append(Checked(name, [problem or name]))
            continue
        try:
            pb = _load(path, probes, search=search)
        except PlaybookError as exc:
            out.append(Checked(name, list(exc.problems)))
            continue
        unknown = unknown_continuations(str(path), pb, playbook_names(playbook_dirs, environ))
        if unknown:
            out.append(Checked(name, unknown))
            continue
        summary = f"{pb.path}: ok ({plural(len(pb.nodes), 'node')}, {plural(len(pb.steps), 'step')})"
        fragments: dict[str, None] = {n.origin: None for n in pb.nodes.values() if n.origin}  # read as its own text
        warnings = [w for f in (str(path), *fragments) for w in prose_warnings(f)]
        out.append(Checked(name, [], summary, list(program_uses(pb, probes)), warnings))
    return out


def _targets(
    names: Sequence[str], playbook_dirs: Sequence[str], environ: Mapping[str, str] | None
) -> Iterable[tuple[str, Path | None, str | None]]:
    from wizard.playbook.discovery import playbook_files, resolve

    for name in names:
        candidate = Path(name)
        if candidate.is_dir():
            files = playbook_files(candidate)
            if not files:
                yield name, None, f"{name}: directory holds no .yaml or .yml playbook"
            yield from ((str(f), f, None) for f in files)
            continue
        try:
            yield name, resolve(name, list(playbook_dirs), environ), None
        except PlaybookNotFound as exc:
            yield name, None, str(exc)


def playbook_graph(pb: Playbook, form: str) -> str:
    """The decision tree as Mermaid (``form="mermaid"``) or Graphviz dot."""
    from wizard.playbook.graph import dot, mermaid

    return mermaid(pb) if form == "mermaid" else dot(pb)


def explain_playbook(pb: Playbook) -> str:
    """The whole tree in words (Markdown), for onboarding: each GPU word defined where it first appears.
    Playbook text is untrusted: its control characters are shown as escapes (as ``run --teach`` shows
    them), so no title or prompt can retitle the window, clear the screen or draw a hyperlink."""
    from wizard.playbook.glossary import with_definitions
    from wizard.playbook.graph import explain
    from wizard.untrusted import visible

    return visible(with_definitions(explain(pb)), newlines=True)


def playbook_schema() -> str:
    """The playbook JSON Schema, for editors."""
    from wizard.playbook.schema import SCHEMA_PATH

    return SCHEMA_PATH.read_text(encoding="utf-8")


def machine_facts(system: System | None = None, python: str | None = None) -> ProbeResult:
    """The ``env`` probe's result for this machine (versions, GPUs via NVML, profilers): no workspace
    is left behind."""
    import tempfile

    from wizard.environment import ProbeSettings
    from wizard.probes.env import EnvProbe

    with tempfile.TemporaryDirectory() as tmp:
        settings = ProbeSettings(python=python or sys.executable, report_dir=Path(tmp))
        return EnvProbe().run(Environment(system or System(), settings), {})


def playbook_names(playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names of the playbooks on the search path, none loaded (where a health check can continue)."""
    from wizard.playbook.discovery import list_playbooks

    return frozenset(found.name for found in list_playbooks(list(playbook_dirs), environ))


def completion_names(
    kind: str,
    playbook_dirs: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    playbook: str | None = None,
) -> list[str]:
    """What shell completion offers for ``kind`` (playbooks, probes, nodes, examples): this
    installation's names, the search path's playbooks included; nodes only of ``playbook`` (the one on
    the command line, by name or path) when given. Never raises on a playbook that does not load:
    completion runs while someone types."""
    if kind == "probes":
        return sorted(catalog())
    if kind == "examples":
        from wizard.examples import list_examples

        return [e.name for e in list_examples()]
    from wizard.playbook.discovery import list_playbooks
    from wizard.playbook.loader import load_playbook as _load

    found = list_playbooks(list(playbook_dirs), environ)
    if kind == "playbooks":
        return sorted({f.name for f in found})
    probes, ids = catalog(), set()
    if playbook:
        named = [f.path for f in found if f.name == playbook] or [Path(playbook)]
        found = [f for f in found if f.path in named]
        if not found and Path(playbook).is_file():
            try:
                return sorted(_load(Path(playbook), probes).nodes)
            except (PlaybookError, PlaybookNotFound, OSError):
                return []
    for f in found:
        try:
            ids |= set(_load(f.path, probes).nodes)
        except (PlaybookError, PlaybookNotFound, OSError):
            continue
    return sorted(ids)
