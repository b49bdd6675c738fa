"""Progress of long work, as the library reports it: a task per thing being done (a file being read,
a probe running), each with what it is doing, how far it is and, where known, its total.

The library never prints. Code that does long work takes a ``Progress`` (from its caller, or from
``System.progress`` for probes) and reports to it; the default, ``NO_PROGRESS``, drops every report.
Only the command line renders one (wizard/ui/progress.py, with rich), and only at a terminal.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, Protocol

Unit = Literal["", "bytes", "files"]  # "": no count, only what it is doing and the time elapsed


class Task(Protocol):
    def update(self, completed: float | None = None, *, total: float | None = None, doing: str | None = None) -> None:
        """How far it is (in its unit), a total learnt late, or what it does now."""
        ...

    def close(self) -> None: ...


class Progress(Protocol):
    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Unit = "") -> Task:
        """A new piece of work: ``label`` says which (a probe's name, a file's), ``doing`` what it does."""
        ...


class _NoTask:
    def update(self, completed: float | None = None, *, total: float | None = None, doing: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class NoProgress:
    """Drops every report: the library's default (the Python API and the profiler hook print nothing)."""

    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Unit = "") -> Task:
        return _NoTask()


NO_PROGRESS: Progress = NoProgress()


@contextlib.contextmanager
def task(
    progress: Progress, label: str, *, doing: str = "", total: float | None = None, unit: Unit = ""
) -> Iterator[Task]:
    """A task that is closed however the work ends (an error, Ctrl-C)."""
    one = progress.task(label, doing=doing, total=total, unit=unit)
    try:
        yield one
    finally:
        one.close()


def file_size(path: str | os.PathLike[str]) -> int | None:
    """The bytes a reader will consume from ``path`` (compressed bytes for .gz); None for a pipe."""
    try:
        info = Path(path).stat()
    except (OSError, ValueError):
        return None
    import stat

    return info.st_size if stat.S_ISREG(info.st_mode) else None


@contextlib.contextmanager
def reading(
    progress: Progress, path: str | os.PathLike[str], doing: str = "reading"
) -> Iterator[Callable[[int], None]]:
    """A bytes task for one file; yields the reader's hook (bytes of the file consumed so far)."""
    with task(progress, Path(path).name, doing=doing, total=file_size(path), unit="bytes") as one:

        def on_read(consumed: int) -> None:
            one.update(consumed)

        yield on_read
