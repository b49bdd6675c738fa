"""No process warpwizard starts outlives it (issue 47's last done-when) on the Nsight Systems path: a rank directory
of SQLite exports is read by the process pool's workers (wizard/trace/read/parallel.py: each armed with Linux's
PR_SET_PDEATHSIG), each inside SQLite's C code for most of its life. The parent is stopped once both workers exist
(so it cannot finish first), then SIGKILLed as the OOM killer does: no worker may survive it. The JSON case is
tests/safety/test_hostile_round5.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import survivors_of_a_killed_read
from wizard.testing.nsys import write_many


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_no_worker_reading_an_export_outlives_a_sigkilled_parent(tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        write_many(ranks / f"rank{rank}.sqlite", 400_000, grids=10**9)
    assert survivors_of_a_killed_read(ranks) == []
