"""No process warpwizard starts outlives it (issue 47's last done-when) on the Nsight Systems path: a rank directory
of SQLite exports is read by the process pool's workers (wizard/trace/read/parallel.py: each armed with Linux's
PR_SET_PDEATHSIG), each inside SQLite's C code for most of its life. The parent is stopped once both workers exist
(so it cannot finish first), then SIGKILLed as the OOM killer does: no worker may survive it. The JSON case is
tests/safety/test_hostile_round5.py's."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import cli_command, cli_env
from tests.helpers import alive, children
from wizard.testing.nsys import write_many


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_no_worker_reading_an_export_outlives_a_sigkilled_parent(tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        write_many(ranks / f"rank{rank}.sqlite", 400_000, grids=10**9)
    parent = subprocess.Popen(
        [*cli_command(), "trace", "inspect", str(ranks), "--jobs", "2"],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and parent.poll() is None and time.monotonic() < deadline:
            workers = children(parent.pid)
        os.kill(parent.pid, signal.SIGSTOP)
        workers = children(parent.pid)
        assert len(workers) == 2, "the read ended before both workers were seen"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [w for w in workers if alive(w)] == []
    finally:
        for pid in [*workers, parent.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=30)
