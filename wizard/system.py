"""The outside world, in one object the CLI is given: standard streams and whether they are
terminals, environment variables, the clock, the subprocess runner, NVML, ``which``, and where
progress of long work goes (nowhere, unless the CLI renders it at a terminal).

``main(argv, system=...)`` runs the whole CLI in-process against a System a test built
(httpie's ``Environment`` is the model); the real one wraps the process's own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol

from wizard.progress import NoProgress, Progress

if TYPE_CHECKING:
    import datetime as _dt
    from pathlib import Path

    from wizard.runner import CommandResult


class Clock(Protocol):
    def now(self) -> _dt.datetime: ...
    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> _dt.datetime:
        import datetime as dt  # only a run needs the date: --help does not pay for it

        return dt.datetime.now(dt.timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()


class Runner(Protocol):
    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> CommandResult: ...


class _Subprocesses:
    """The real runner (``wizard.runner``, which imports ``subprocess``), loaded at its first program: the
    System is made before ``--help`` is parsed, and help starts nothing."""

    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> CommandResult:
        from wizard.runner import SubprocessRunner

        return SubprocessRunner().run(argv, timeout=timeout, env=env, cwd=cwd, log_path=log_path)


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def load_pynvml() -> Any:
    """The NVML binding (package nvidia-ml-py, imported as pynvml), imported only when asked."""
    import pynvml

    return pynvml


MAX_SYSTEM_FILE = 1 << 20  # /proc and /etc files are small; a bigger one is not what we asked for


def read_system_file(path: str) -> str | None:
    """A small text file of the machine (/proc/self/status, /etc/modprobe.d/...), or None when absent or
    unreadable: probes treat a missing file as 'could not tell', never as an error."""
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_SYSTEM_FILE).decode("utf-8", errors="replace")
    except OSError:
        return None


def shared_object(path: str) -> str | None:
    """The file ``path`` resolves to when it is an ELF shared object (a regular file, or a link that
    resolves to one, of type ET_DYN), else None: a FIFO, a dangling link or a text file named
    ``libcupti.so`` is no library (and opening a FIFO without O_NONBLOCK would wait for a writer)."""
    import stat

    try:
        real = os.path.realpath(path)
        if not stat.S_ISREG(os.stat(real).st_mode):
            return None
        with open(real, "rb") as fh:
            head = fh.read(18)
    except OSError:
        return None
    if len(head) < 18 or head[:4] != b"\x7fELF" or head[5] not in (1, 2):
        return None
    kind = int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
    return real if kind == 3 else None  # ET_DYN


def list_system_dir(path: str) -> list[str]:
    """The names in a directory of the machine, sorted; [] when it is absent or unreadable."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _isatty(stream: IO[Any]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class System:
    """The outside world. Written out rather than a dataclass: every command makes one before its arguments are
    parsed, and ``dataclasses`` costs ``--help`` a third of its start-up (it imports ``inspect``). ``replace``
    is ``dataclasses.replace``'s job; ``FIELDS`` names what a System holds."""

    FIELDS = (
        "stdin", "stdout", "stderr", "environ", "clock", "runner", "nvml_loader", "which", "isatty", "progress",
        "read_file", "list_dir", "shared_object",
    )  # fmt: skip

    def __init__(  # noqa: PLR0917 - one value per part of the outside world, each with its default
        self,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
        stderr: IO[str] | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        runner: Runner | None = None,
        nvml_loader: Callable[[], Any] = load_pynvml,
        which: Callable[[str], str | None] = _which,
        isatty: Callable[[IO[Any]], bool] = _isatty,
        progress: Progress | None = None,  # where long work reports; the CLI's renders it
        read_file: Callable[[str], str | None] = read_system_file,  # the machine's small files, for probes
        list_dir: Callable[[str], list[str]] = list_system_dir,
        shared_object: Callable[[str], str | None] = shared_object,  # what a library's path resolves to
    ) -> None:
        self.stdin: IO[str] = sys.stdin if stdin is None else stdin
        self.stdout: IO[str] = sys.stdout if stdout is None else stdout
        self.stderr: IO[str] = sys.stderr if stderr is None else stderr
        self.environ: Mapping[str, str] = dict(os.environ) if environ is None else environ
        self.clock: Clock = SystemClock() if clock is None else clock
        self.runner: Runner = _Subprocesses() if runner is None else runner
        self.nvml_loader = nvml_loader
        self.which = which
        self.isatty = isatty
        self.progress: Progress = NoProgress() if progress is None else progress
        self.read_file = read_file
        self.list_dir = list_dir
        self.shared_object = shared_object

    def replace(self, **changes: Any) -> System:
        """A copy with ``changes`` (``dataclasses.replace``'s contract: an unknown name is a TypeError)."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"System has no {', '.join(sorted(unknown))}")
        return System(**{name: changes.get(name, getattr(self, name)) for name in self.FIELDS})

    def __repr__(self) -> str:
        return f"System(stdout={self.stdout!r}, environ=<{len(self.environ)} variables>)"

    @property
    def interactive(self) -> bool:
        """A person at a terminal can answer questions."""
        return self.isatty(self.stdin)
