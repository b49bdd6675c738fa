"""No process warpwizard starts outlives it, its grandchildren included (issue 47's last done-when): the parent-death
signal reaches only a direct child, so a workload's own children (a DataLoader's workers, a shell's commands, one
that left the process group with setsid) outlived a SIGKILLed warpwizard under init. Commands now run under
wizard/reaper.py (Linux): the subreaper of their whole tree, which kills it when warpwizard dies. These tests drive
the real runner (wizard/runner.py) in a process of its own, SIGKILL that process as the OOM killer does, and read
/proc for what is left; and check the reaper changes nothing else a command sees (exit codes, a signal's death,
output, a timeout, a program that cannot start)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import alive
from wizard.runner import SubprocessRunner, reaped

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper is Linux's (prctl)")

# the workload: a child in its group, a child that left it (its own session), each sleeping; their pids written
WORKLOAD = """
import os, subprocess, sys, time
inside = subprocess.Popen(["sleep", "300"])
outside = subprocess.Popen(["sleep", "300"], start_new_session=True)
with open(sys.argv[1] + ".tmp", "w") as out:
    out.write(f"{os.getpid()} {inside.pid} {outside.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"""
DRIVER = """
import sys
from wizard.runner import SubprocessRunner
SubprocessRunner().run([sys.executable, "-c", sys.argv[1], sys.argv[2]], timeout=float(sys.argv[3]))
"""


def _tree(tmp_path: Path, timeout: float = 300) -> tuple[subprocess.Popen[bytes], list[int]]:
    """The runner in a process of its own, running WORKLOAD: (that process, the workload's and its children's pids)."""
    pids = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, WORKLOAD, str(pids), str(timeout)], env=env)
    deadline = time.monotonic() + 60
    while not pids.exists() and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids.exists(), "the workload never started"
    return driver, [int(p) for p in pids.read_text().split()]


def _gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_a_workloads_children_die_with_a_sigkilled_warpwizard(tmp_path: Path) -> None:
    driver, pids = _tree(tmp_path)
    try:
        driver.kill()  # SIGKILL: no handler of warpwizard's runs
        driver.wait(timeout=30)
        assert _gone(pids) == [], "these outlived warpwizard (workload, its child, its child in its own session)"
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_timeout_ends_the_whole_tree_and_warpwizard_goes_on(tmp_path: Path) -> None:
    driver, pids = _tree(tmp_path, timeout=3)
    try:
        assert driver.wait(timeout=60) == 0  # the runner returned (timed out) and its process ended normally
        assert _gone(pids) == []
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import sys; print('out'); sys.exit(3)", 3),
        ("print('out')", 0),
        ("import os; print('out', flush=True); os.kill(os.getpid(), 9)", -9),
    ],
)
def test_a_command_under_the_reaper_exits_as_it_would_alone(code: str, expected: int) -> None:
    result = SubprocessRunner().run([sys.executable, "-c", code], timeout=60)
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.output) == (alone.returncode, alone.stdout) == (expected, "out\n")


def test_a_program_that_cannot_start_is_said_as_before() -> None:
    result = SubprocessRunner().run(["/nonexistent/program", "x"], timeout=60)
    assert (result.returncode, result.output) == (127, "cannot start '/nonexistent/program': No such file or directory")


def test_the_reaper_runs_isolated_from_the_users_python_settings() -> None:
    """It is this interpreter with -I -S (no PYTHON* variables, no site): a user's PYTHONPATH or PYTHONSTARTUP
    cannot put code of theirs between warpwizard and the command."""
    argv = reaped(["true"])
    assert argv[:3] == [sys.executable, "-I", "-S"] and argv[4:] == [str(os.getpid()), "true"]
    assert Path(argv[3]).name == "reaper.py"
