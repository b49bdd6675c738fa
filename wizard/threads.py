"""Helper threads that never take a signal meant for the main thread.

Linux hands a signal for the process to any thread that does not block it. When a helper thread
(the progress bar's refresh, the validator beside the inspection, a pipe's reader) takes SIGINT,
Python only sets a flag there: the main thread, blocked in a read from a stalled pipe, never wakes
and Ctrl-C does nothing. Threads started inside ``signals_to_main_thread`` inherit a mask that
blocks the stop signals, so the kernel delivers them to the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


@contextlib.contextmanager
def signals_to_main_thread() -> Iterator[None]:
    """Threads started in this block block the stop signals; this thread's own mask is restored."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start(thread: threading.Thread) -> threading.Thread:
    """Start ``thread`` so that it never takes a stop signal."""
    with signals_to_main_thread():
        thread.start()
    return thread
