"""What probes run with: the outside world and the user's settings, apart.

``System`` (wizard/system.py) holds the services: subprocesses, NVML, the clock, ``which``,
environment variables. ``ProbeSettings`` holds what the user asked for. Tests build an
Environment with a fake NVML, a fixed clock or a recorded command output; the CLI builds the
real one. Probes never reach for os.environ, subprocess or pynvml themselves.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Generic, TypeVar

from wizard.file_ends import FileIdentity, OpenedEnds, identity
from wizard.system import System


@dataclass(slots=True)
class Workload:
    """The engineer's program: argv as given, with 'python' meaning the target interpreter."""

    argv: list[str]
    description: str

    @classmethod
    def parse(cls, text: str, python: str) -> Workload:
        """``python SCRIPT.py ...``, ``python -m MODULE ...``, ``python -c CODE ...`` or ``SCRIPT.py ...``.

        The harness runs the program inside the target interpreter (under the profiler), so only
        Python programs can be workloads; anything else is refused here, with the reason.
        """
        argv = shlex.split(text)  # ValueError for an unclosed quote
        if not argv:
            raise ValueError("empty workload command")
        if argv[0] in ("python", "python3", python):
            argv[0] = python
        elif argv[0].endswith(".py"):
            argv.insert(0, python)
        else:
            raise ValueError(
                f"{argv[0]!r} is not a Python program: the workload runs inside warpwizard's harness in the target "
                "interpreter, so give it as 'python SCRIPT.py ARGS', 'python -m MODULE ARGS' or 'python -c CODE'"
            )
        if len(argv) < 2 or (argv[1] in ("-m", "-c") and len(argv) < 3):
            raise ValueError("name the script, -m MODULE or -c CODE after python")
        if argv[1].startswith("-") and argv[1] not in ("-m", "-c"):
            raise ValueError(f"interpreter option {argv[1]!r} is not supported; put the script, -m or -c first")
        return cls(argv, text)

    @property
    def script(self) -> str | None:
        """The Python script when the workload is 'python script.py ...'."""
        if len(self.argv) >= 2 and self.argv[1].endswith(".py"):
            return self.argv[1]
        return None


def _default_workspace() -> Path:
    """For settings built without one (tests, library callers): this process's own workspace."""
    import datetime as _dt
    import os

    from wizard.workspace import choose

    return choose(None, os.environ, _dt.datetime.now(_dt.timezone.utc))


@dataclass
class ProbeSettings:
    """What the user asked the probes for: the command line's options, nothing from a playbook."""

    python: str = sys.executable
    report_dir: Path = field(default_factory=_default_workspace)
    workload: Workload | None = None
    allow_commands: bool = False
    allow_sanitizer: bool = False
    compare_reports: list[str] = field(default_factory=list)
    compare_pythons: list[str] = field(default_factory=list)


def file_identity(path: str | os.PathLike[str]) -> FileIdentity | None:
    """Which file ``path`` is now; None for what is not a regular file (a pipe or a FIFO is read once and
    cannot be read again: nothing is kept for it) or cannot be looked at."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return identity(path, info)  # which resolves the path


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, eq=False)
class Shelf(Generic[K, V]):
    """One kind of thing a run keeps, declared where it is made (``wizard.probes.inspections``: an inspection,
    one file's contents): its name, for a person reading the store, and the type of what it holds, which
    ``RunInspections.find`` checks; ``K`` is its key's type. Two shelves are two, whatever their names."""

    name: str
    holds: type[V]


@dataclass
class RunInspections:
    """What this run made of trace files (an inspection, the contents a probe reads), kept on typed shelves by
    typed keys made from the files' identities, so the next probe or the report takes it instead of reading the
    files again; a file rewritten since (another inode, size or mtime) is not found, so it is read again, never
    served stale. The shelves are declared by the trace layer's side (``wizard.probes.inspections``); this
    module imports no layer. ``plots``: the run writes an HTML page, so the first inspection gathers what it
    draws. ``ends``: the hash of each file's ends as a read took it from its one open (``--from``'s
    fingerprint, wizard/file_ends.py)."""

    plots: bool = False
    _shelves: dict[Shelf[Any, Any], dict[Any, Any]] = field(default_factory=dict, repr=False)
    _ends: dict[FileIdentity, str] = field(default_factory=dict, repr=False)

    @staticmethod
    def identities(paths: Sequence[str | os.PathLike[str]]) -> tuple[FileIdentity, ...] | None:
        """The files' identities now, in order; None when one is not a regular file."""
        found = [file_identity(p) for p in paths]
        return None if any(f is None for f in found) else tuple(f for f in found if f is not None)

    def find(self, shelf: Shelf[K, V], key: K) -> V | None:
        """What was kept on ``shelf`` for ``key``, or None."""
        found = self._shelves.get(shelf, {}).get(key)
        return found if isinstance(found, shelf.holds) else None

    def keep(self, shelf: Shelf[K, V], key: K, value: V) -> None:
        self._shelves.setdefault(shelf, {})[key] = value

    def keep_ends(self, ends: OpenedEnds) -> None:
        """The hash of a file's ends that a read of it took from its one open (``--from``'s fingerprint of it)."""
        self._ends[ends.identity] = ends.sha256_ends

    def ends(self, file: FileIdentity) -> str | None:
        """The hash of the ends of ``file`` as this run read it, or None when no read of it took one."""
        return self._ends.get(file)

    def release(self, shelf: Shelf[Any, Any]) -> None:
        """Drop everything on a shelf (the run's walk is over: a trace's contents are large)."""
        self._shelves.pop(shelf, None)


_SYSTEM_FIELDS = set(System.FIELDS)
_SETTINGS_FIELDS = {f.name for f in fields(ProbeSettings)}


@dataclass
class Environment:
    """What a probe runs with: the outside world (``system``: subprocesses, NVML, clock, which,
    environment variables), the user's settings, the files this run wrote for later probes, and the
    trace inspections this run made (read once, then shared)."""

    system: System = field(default_factory=System)
    settings: ProbeSettings = field(default_factory=ProbeSettings)
    artifacts: dict[str, str] = field(default_factory=dict)
    inspections: RunInspections = field(default_factory=RunInspections)  # the run's, shared by its probes

    @classmethod
    def of(cls, **values: Any) -> Environment:
        """An Environment from keyword values, each routed to the System or the settings it names
        (``Environment.of(report_dir=..., runner=fake)``): for tests and library callers."""
        unknown = set(values) - _SYSTEM_FIELDS - _SETTINGS_FIELDS
        if unknown:
            raise TypeError(f"unknown Environment values: {', '.join(sorted(unknown))}")
        system = System(**{k: v for k, v in values.items() if k in _SYSTEM_FIELDS})
        settings = ProbeSettings(**{k: v for k, v in values.items() if k in _SETTINGS_FIELDS})
        return cls(system, settings)

    def child_env(self, **extra: str) -> dict[str, str]:
        """Environment variables for a program a probe starts."""
        env = dict(self.system.environ)
        env.update(extra)
        return env
