"""Progress of long work, as the library reports it: a task per thing being done (a file being read,
a probe running), each with what it is doing, how far it is and, where known, its total.

The library never prints. Code that does long work takes a ``Progress`` (from its caller, or from
``System.progress`` for probes) and reports to it; the default, ``NO_PROGRESS``, drops every report.
Only the command line renders one (wizard/ui/progress.py, with rich), and only at a terminal.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol

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
        info = os.stat(path)  # Path(path).stat(): ValueError for a NUL in the name, as os.stat
    except (OSError, ValueError):
        return None
    import stat

    return info.st_size if stat.S_ISREG(info.st_mode) else None


@contextlib.contextmanager
def reading(
    progress: Progress, path: str | os.PathLike[str], doing: str = "reading"
) -> Iterator[Callable[[int], None]]:
    """A bytes task for one file; yields the reader's hook (bytes of the file consumed so far)."""
    from pathlib import Path  # a file's bar, not --help's import

    with task(progress, Path(path).name, doing=doing, total=file_size(path), unit="bytes") as one:

        def on_read(consumed: int) -> None:
            one.update(consumed)

        yield on_read


# -- work in other processes (a pool reading several traces) --------------------------------------
# In a worker: the pipe its reports go back through (inherited at fork). Each report is one small
# message, written with one write() under PIPE_BUF: whole, whatever other workers write, with no
# lock a killed worker could leave held.
_RELAY: dict[str, Any] = {}


class _RelayedTask:
    def __init__(self, key: tuple[int, int]) -> None:
        self.key = key

    def update(self, completed: float | None = None, *, total: float | None = None, doing: str | None = None) -> None:
        _send((self.key, "update", (completed, total, doing)))

    def close(self) -> None:
        _send((self.key, "close", None))


def _send(message: Any) -> None:
    with contextlib.suppress(OSError):  # the parent stopped listening (it is unwinding): nothing to tell
        _RELAY["pipe"].send(message)


class RelayedProgress:
    """A worker process's Progress: each report goes back to the parent (picklable: it holds nothing)."""

    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Unit = "") -> Task:
        if "pipe" not in _RELAY:  # not forked inside ``relayed``: nowhere to report
            return _NoTask()
        key = (os.getpid(), next(_TASK_IDS))
        _send((key, "task", (cut_label(label), doing, total, unit)))
        return _RelayedTask(key)


def cut_label(label: str) -> str:
    return label[:200]  # a message stays far under PIPE_BUF


_TASK_IDS = itertools.count()


@contextlib.contextmanager
def relayed(progress: Progress) -> Iterator[Progress]:
    """A Progress for worker processes forked inside this block, whose reports a thread here passes
    on to ``progress``. NO_PROGRESS stays itself: nothing is set up when nobody listens."""
    if isinstance(progress, NoProgress):
        yield progress
        return
    import multiprocessing
    import threading

    from wizard.threads import start

    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    tasks: dict[Any, Task] = {}
    stop = threading.Event()

    def apply(message: Any) -> None:
        key, what, values = message
        if what == "task":
            label, doing, total, unit = values
            tasks[key] = progress.task(label, doing=doing, total=total, unit=unit)
        elif key in tasks and what == "update":
            completed, total, doing = values
            tasks[key].update(completed, total=total, doing=doing)
        elif key in tasks:
            tasks.pop(key).close()

    def listen() -> None:
        with contextlib.suppress(EOFError, OSError):
            while reader.poll(0.1) or not stop.is_set():
                if reader.poll(0):
                    apply(reader.recv())

    listener = threading.Thread(target=listen, name="progress-relay", daemon=True)
    _RELAY["pipe"] = writer
    start(listener)
    try:
        yield RelayedProgress()
    finally:
        _RELAY.pop("pipe", None)
        stop.set()
        listener.join(timeout=5)
        writer.close()
        reader.close()
        for one in tasks.values():  # a worker killed mid-file (Ctrl-C, out of memory) never closed its own
            one.close()
