"""Running other programs: always with a timeout, always killed with their children.

Each command starts in its own process group (session), so a timeout, Ctrl-C, SIGTERM or SIGHUP
kills the whole tree, not just the direct child; on Linux the child also gets a parent-death
signal, so it dies with warpwizard even when warpwizard itself is killed outright (SIGKILL, the
OOM killer). Output is captured with a size bound (head and tail kept) so a chatty workload
cannot fill memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.threads import STOPPING, start

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024


@dataclass(slots=True)
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: killed on timeout
    output: str  # stdout and stderr interleaved, bounded
    duration_s: float
    timed_out: bool
    truncated_bytes: int = 0
    log_path: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class _Bounded:
    def __init__(self) -> None:
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size > TAIL_BYTES:
                first = self.tail.popleft()
                self.tail_size -= len(first)
                self.dropped += len(first)

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() if self.dropped else b""
        return (bytes(self.head) + middle + b"".join(self.tail)).decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            # children may outlive the leader; the second signal reaches them too
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn``: the child takes the stop signals again (a helper thread that starts it blocks
    them, wizard/threads.py, and a fork keeps the mask through exec: the validator ignored SIGTERM), and
    gets SIGKILL when this process dies (Linux's ``prctl(PR_SET_PDEATHSIG)``). libc is loaded here,
    before the fork; the child only makes the calls, and exits at once if its parent is already gone."""
    if os.name != "posix":
        return None
    prctl = linux_prctl()
    parent = os.getpid()

    def arm() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # died between the fork and the call
                os._exit(137)

    return arm


REAPER = Path(__file__).with_name("reaper.py")


def reaped(argv: Sequence[str]) -> list[str]:
    """``argv`` run under wizard/reaper.py on Linux: the command's whole tree (its children too, which the
    parent-death signal does not reach) dies with this process however it dies. The reaper is run as a file by this
    interpreter, isolated (``-I -S``: no PYTHON* variables, no site), and imports only the standard library."""
    if not sys.platform.startswith("linux") or not REAPER.is_file():
        return list(argv)
    return [sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), *argv]


def linux_prctl() -> Any:
    """libc's ``prctl`` on Linux (None elsewhere), loaded before a fork so the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    # Imported here, not at start-up (every command would pay for it). It may be a helper thread's import:
    # code that forks workers imports what they need first (wizard/trace/inspection/run.py).
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


class SubprocessRunner:
    """The real runner. Tests use it for real, with tiny programs and short timeouts."""

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        log_path: Path | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                reaped(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=die_with_parent(),  # noqa: PLW1509 (async-signal-safe: one prctl call)
            )
        except OSError as exc:
            return CommandResult(list(argv), 127, f"cannot start {argv[0]!r}: {exc.strerror}", 0.0, False)
        sink = _Bounded()
        timed_out = _wait_reading(proc, sink, timeout)
        output = sink.text()
        result = CommandResult(
            list(argv),
            None if timed_out else proc.returncode,
            output,
            time.monotonic() - started,
            timed_out,
            sink.dropped,
        )
        if log_path is not None:
            from wizard.outputs import write_own

            write_own(log_path, f"$ {' '.join(argv)}\n{output}")
            result.log_path = str(log_path)
        return result


def _wait_reading(proc: subprocess.Popen[bytes], sink: _Bounded, timeout: float) -> bool:
    """Wait for ``proc`` while a thread drains its output into ``sink``; True if it ran out of time.

    Whatever happens, nothing of its process group outlives this call."""
    assert proc.stdout is not None
    stdout = proc.stdout

    def pump() -> None:
        fd = stdout.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            sink.feed(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    start(reader)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except KeyboardInterrupt:
        _kill_group(proc)
        raise
    finally:
        # Grandchildren that kept the pipe open must not keep us waiting.
        reader.join(timeout=2)
        if reader.is_alive():
            _kill_group(proc)
            reader.join(timeout=2)
    # The leader is gone; anything left in its group is an orphan of this command.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not reader.is_alive():
        stdout.close()  # the pipe's read end: one file descriptor per command otherwise leaks
    return timed_out
