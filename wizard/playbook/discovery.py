"""Where playbooks are found: a path, ``--playbook-dir``, ``WARPWIZARD_PLAYBOOK_PATH``, the package."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wizard.errors import PlaybookError, PlaybookNotFound
from wizard.playbook.loader import load_playbook
from wizard.playbook.model import Playbook
from wizard.playbook.places import packaged_dir
from wizard.probes.base import ProbeInfo

ENV_VAR = "WARPWIZARD_PLAYBOOK_PATH"


def search_dirs(extra: list[str] | None = None, environ: Mapping[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    dirs = [Path(d) for d in (extra or [])]
    dirs += [Path(d) for d in env.get(ENV_VAR, "").split(os.pathsep) if d]
    dirs.append(packaged_dir())
    return dirs


def search_places(extra: list[str] | None = None, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The search path as the loader takes it (``uses:`` finds fragments in each place's ``fragments/``, a derived
    list its playbooks), first match wins: the directories given, ``WARPWIZARD_PLAYBOOK_PATH``, the package's,
    then each plugin's playbook place (a directory, or one file). Fragments are data found there by id."""
    from wizard.plugins import installed_playbook_paths

    return [*search_dirs(extra, environ), *(p.value for p in installed_playbook_paths())]


@dataclass(frozen=True, slots=True)
class Found:
    name: str
    path: Path
    origin: str
    shadows: tuple[str, ...] = ()  # the origins of the later files of this id it hides ("package": a shipped one)


def playbook_files(directory: Path) -> list[Path]:
    """The .yaml and .yml files directly in a directory, by name."""
    try:
        return sorted(f for f in directory.iterdir() if f.suffix in (".yaml", ".yml") and not f.is_dir())
    except OSError:
        return []


def list_playbooks(extra: list[str] | None = None, environ: Mapping[str, str] | None = None) -> list[Found]:
    """Every playbook file on the search path, then those installed packages add (entry point
    ``warpwizard.playbooks``); an earlier place shadows a later one. Where a playbook came from trusts
    it with nothing: every one is loaded and run under the same rules."""
    from wizard.plugins import installed_playbook_paths

    places = [(d, SHIPPED if d == packaged_dir() else str(d)) for d in search_dirs(extra, environ)]
    places += [(p.value, p.origin) for p in installed_playbook_paths()]
    seen: dict[str, Found] = {}
    for place, origin in places:
        files = [place] if place.suffix in (".yaml", ".yml") and place.is_file() else playbook_files(place)
        for f in files:
            first = seen.get(f.stem)
            if first is None:
                seen[f.stem] = Found(f.stem, f, origin)
            elif origin not in first.shadows:
                seen[f.stem] = dataclasses.replace(first, shadows=(*first.shadows, origin))
    return list(seen.values())


SHIPPED = "package"  # the origin of warpwizard's own playbooks


def shadowing(found: Found) -> str | None:
    """The one line that says ``found`` hides a shipped playbook of its id (None when it does not): a team's
    ``triage.yaml`` on the search path is walked instead of warpwizard's, also where a run continues into it."""
    if SHIPPED not in found.shadows:
        return None
    return (
        f"playbook {found.name!r} is {found.path}, which shadows the shipped playbook of that id (the search "
        f"path's order: the directories given, then {ENV_VAR}, then the package's, then plugins)"
    )


def fragment_shadowing(path: str) -> str | None:
    """The one line that says the fragment file ``path`` hides the shipped fragment of its id (None when it does
    not): a ``fragments/trace-start.yaml`` in a playbook directory replaces the start of every health playbook."""
    from wizard.playbook.grammar import FRAGMENT_DIR

    used = Path(path)
    shipped = packaged_dir() / FRAGMENT_DIR / used.name
    try:
        if not shipped.is_file() or used.resolve() == shipped.resolve():
            return None
    except OSError:
        return None
    return (
        f"fragment {used.stem!r} is {used}, which shadows the shipped fragment of that id (the search path's "
        f"order: the directories given, then {ENV_VAR}, then the package's, then plugins)"
    )


def resolve(name: str, extra: list[str] | None = None, environ: Mapping[str, str] | None = None) -> Path:
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml") or os.sep in name:
        try:
            if candidate.is_file():
                return candidate
            if candidate.is_dir():
                raise PlaybookNotFound(f"{name}: is a directory; name one playbook file in it")
        except OSError as exc:
            raise PlaybookNotFound(f"{name}: cannot be read ({exc.strerror or exc})") from None
        raise PlaybookNotFound(f"{name}: no such playbook file")
    for found in list_playbooks(extra, environ):
        if found.name == name:
            return found.path
    names = [f.name for f in list_playbooks(extra, environ)]
    import difflib

    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise PlaybookNotFound(f"no playbook named {name!r}{hint}; available: {', '.join(names) or 'none'}")


def load(
    name: str, probes: Mapping[str, ProbeInfo], extra: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> Playbook:
    return load_playbook(resolve(name, extra, environ), probes, search=search_places(extra, environ))


def load_named(
    name: str, probes: Mapping[str, ProbeInfo], extra: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> Playbook:
    """A playbook by its name on the search path only, never a path: where a conclusion continues."""
    from wizard.playbook.loader import PLAYBOOK_ID_PATTERN

    if not PLAYBOOK_ID_PATTERN.fullmatch(name):
        raise PlaybookNotFound(f"{name!r} is not a playbook id")
    for found in list_playbooks(extra, environ):
        if found.name == name:
            return load_playbook(found.path, probes, search=search_places(extra, environ))
    names = ", ".join(f.name for f in list_playbooks(extra, environ)) or "none"
    raise PlaybookNotFound(f"no playbook named {name!r} on the search path; available: {names}")


__all__ = ["Found", "PlaybookError", "list_playbooks", "load", "packaged_dir", "resolve", "search_places"]
