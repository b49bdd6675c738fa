"""The program between warpwizard and a command it runs (a workload, a profiler), on Linux: it makes the command's
whole tree die with warpwizard, however warpwizard dies (issue 47: no process it starts outlives it).

Linux's parent-death signal reaches only a direct child, so a workload's own children (a DataLoader's workers, a
shell's commands, ``torchrun``'s ranks) outlived a SIGKILLed warpwizard under init. This program is that direct
child: it is the subreaper of everything below it (``PR_SET_CHILD_SUBREAPER``: an orphan comes to it, even one that
left the process group), it gets SIGUSR1 when warpwizard dies (``PR_SET_PDEATHSIG``), and then SIGKILLs every
process below it and its own group. Otherwise it is transparent: the command runs in its process group with its
streams, its exit status comes back as its own (a command killed by signal N kills this program with N), and
warpwizard's SIGTERM to the group reaches the command as before (this program only waits through it).

    python -I -S wizard/reaper.py PARENT_PID COMMAND [ARG ...]        (wizard.runner.reaped builds this)

It imports nothing of warpwizard's (one interpreter start, ~20 ms, per command run). The command comes from
warpwizard's own argument list, never from a shell.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_GONE = signal.SIGUSR1  # what the kernel sends this program when warpwizard dies (nothing else sends it)


def descendants(root: int) -> list[int]:
    """Every process below ``root``: each process's parent read from /proc/PID/stat (after the name, which may
    hold spaces and parentheses: the last ``)`` ends it), then walked down from ``root``."""
    below: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            below.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        kids = below.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def kill_everything_below(me: int) -> None:
    """SIGKILL every process below this one, until none is left (each pass reaps what the last one killed)."""
    for _ in range(100):  # a fork bomb cannot keep this busy for ever: it is bounded, then the group is killed
        below = descendants(me)
        if not below:
            return
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reap()


def reap() -> None:
    """Collect every child that has exited (orphans included: this program is their subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _parent_gone(signum: int, frame: object) -> None:
    me = os.getpid()
    kill_everything_below(me)
    os.killpg(os.getpgid(me), signal.SIGKILL)


def _status(status: int) -> int:
    """The command's exit as this program's own: its code, or the signal that killed it, re-raised here."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # the two no program can catch, nor set
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum  # a signal that does not kill (none the kernel reports as a cause of death)
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        os.write(2, b"usage: python -I -S reaper.py PARENT_PID COMMAND [ARG ...]\n")
        return 2
    parent, command = int(argv[0]), argv[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    signal.signal(PARENT_GONE, _parent_gone)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, PARENT_GONE, 0, 0, 0)
    if os.getppid() != parent:  # warpwizard died before the signal was armed
        return 137
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # the group's signal is the command's to take
        signal.signal(stop, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, PARENT_GONE):
            signal.signal(stop, signal.SIG_DFL)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # with this program, if it is killed outright
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot start {command[0]!r}: {exc.strerror}".encode())  # as the runner says it without
            os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    kill_everything_below(os.getpid())  # what the command left running is an orphan of this run
    return _status(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
