"""Plugins: installed packages that add probes, playbooks and trace passes through entry points, as pytest and
httpie plugins do (docs/plugins.md).

``warpwizard.probes``: each entry point names a probe class (or instance) with the ``Probe`` shape of
wizard/probes/base.py. A probe is code the user chose to install, so it runs as warpwizard's own do.
``warpwizard.playbooks``: each entry point names a directory or file of playbooks (a path, or a module
whose folder holds them). A playbook is data from anywhere: it is loaded and run under every rule a
playbook from a path is (docs/security.md); coming from an installed package trusts it with nothing.
``warpwizard.passes``: each entry point names a trace pass (a ``wizard.trace.passes.TracePass``), run after
warpwizard's own over every trace an inspection reads; like a probe, it is code the user chose to install.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec

from wizard.errors import PluginError

if TYPE_CHECKING:
    from importlib import metadata

PROBES_GROUP = "warpwizard.probes"
PLAYBOOKS_GROUP = "warpwizard.playbooks"
PASSES_GROUP = "warpwizard.passes"


class Plugin(msgspec.Struct, frozen=True, eq=False):
    """One entry point: what it is called, the package that declared it, and what it loaded."""

    name: str
    origin: str  # "plugin <distribution> <version>", what `probes` and `list` show
    value: Any


def _origin(entry: metadata.EntryPoint) -> str:
    dist = entry.dist
    return f"plugin {dist.name} {dist.version}" if dist is not None else f"plugin {entry.value}"


def _failure(exc: BaseException) -> str:
    """Why a plugin did not load, in words: sys.exit() at import ends nothing but the plugin."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) while loading"
    return f"{type(exc).__name__}: {exc}"


def _entries(group: str) -> list[metadata.EntryPoint]:
    """The group's entry points, by name; importlib.metadata (its import and its parse of every distribution's
    metadata: 15-40 ms of a small trace's start-up) only where some distribution may declare one."""
    if not _may_declare(group):
        return []
    from importlib import metadata

    return sorted(metadata.entry_points(group=group), key=lambda e: (e.name, e.value))


def _may_declare(group: str) -> bool:
    """Whether some distribution on ``sys.path`` may declare an entry point of ``group``: where importlib.metadata
    looks (each path folder's ``*.dist-info`` / ``*.egg-info``, an ``.egg`` folder's ``EGG-INFO``), whether an
    ``entry_points.txt`` holds the group's name. What this cannot read as importlib.metadata would (a zip or other
    file on the path, a finder of distributions besides the path's) answers True: the full lookup decides."""
    import importlib.machinery

    if any(
        getattr(finder, "find_distributions", None) is not None and finder is not importlib.machinery.PathFinder
        for finder in sys.meta_path
    ):
        return True
    needle = group.encode()
    return any(_folder_may_declare(entry, needle) for entry in sys.path)


def _folder_may_declare(entry: object, needle: bytes) -> bool:
    if not isinstance(entry, str):
        return True
    root = entry or "."
    try:
        children = os.listdir(root)
    except NotADirectoryError:
        return True  # a zip (or another file) on the path: importlib.metadata reads its members
    except OSError:
        return False  # not there: importlib.metadata finds nothing in it either
    egg = os.path.basename(root).lower().endswith(".egg")
    infos = (
        c for c in children if c.lower().endswith((".dist-info", ".egg-info")) or (egg and c.lower() == "egg-info")
    )
    return any(needle in _read(os.path.join(root, info, "entry_points.txt")) for info in infos)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:  # none (most distributions), or unreadable: importlib.metadata reads no entry points there
        return b""


def _load(entry: metadata.EntryPoint, kind: str, make: Callable[[Any], Any] = lambda loaded: loaded) -> Any:
    """What an entry point names (``make`` turns it into the plugin: a probe class into its instance); a third
    party's import or constructor that fails is a PluginError saying whose."""
    try:
        return make(entry.load())
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (a third party's code: say whose)
        raise PluginError(
            f"{kind} plugin {entry.name!r} ({_origin(entry)}, {entry.value}) could not load: {_failure(exc)}"
        ) from None


def installed_probes() -> list[Plugin]:
    """Each installed probe, instantiated; a plugin that cannot load is a PluginError naming it."""
    return [
        Plugin(
            entry.name,
            _origin(entry),
            _load(entry, "probe", lambda loaded: loaded() if isinstance(loaded, type) else loaded),
        )
        for entry in _entries(PROBES_GROUP)
    ]


def installed_playbook_paths() -> list[Plugin]:
    """Each installed playbook location as a Path (a directory of playbooks, or one playbook file)."""
    found = []
    for entry in _entries(PLAYBOOKS_GROUP):
        loaded = _load(entry, "playbook")
        if isinstance(loaded, ModuleType) and loaded.__file__:
            path = Path(loaded.__file__).parent
        elif isinstance(loaded, (str, os.PathLike)):
            path = Path(loaded)
        else:
            raise PluginError(
                f"playbook plugin {entry.name!r} ({_origin(entry)}): {entry.value} is not a path or a module"
            )
        found.append(Plugin(entry.name, _origin(entry), path))
    return found


def installed_passes() -> list[Plugin]:
    """Each installed trace pass (``warpwizard.passes``: an entry point naming a ``TracePass``), as loaded; the
    inspection checks each against the pass's contract (wizard/trace/inspection/passes.py)."""
    return [Plugin(entry.name, _origin(entry), _load(entry, "trace pass")) for entry in _entries(PASSES_GROUP)]


def installed_file(distribution: str, filename: str) -> tuple[bool, str | None]:
    """Whether ``distribution`` is installed, and the text of one file of its metadata (pip's
    ``direct_url.json``: where it was installed from, wizard/extras.py) or None. Reads metadata only: no
    code is loaded."""
    from importlib import metadata

    try:
        found = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False, None
    return True, found.read_text(filename)
