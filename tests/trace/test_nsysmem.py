"""Issue 47 item 7's done-when for Nsight Systems exports of distinct launches: the whole inspection (the read and
every pass), not only the read, holds a bounded number of bytes per kernel. An export whose every kernel has its own
grid has a combination per kernel, so what a pass holds per combination (a set of a repr per launch for the workload
fingerprint: ~135 bytes a kernel; two Python ints per event in the nesting walk, and every array of the kernel rows
copied twice while gathered: ~166) is held per launch. benchmarks/memory_formats.py measures the whole process on 2M
and 10M rows; this measures the Python heap's peak (tracemalloc) of ``inspect_traces`` on two sizes, so the
interpreter, the modules and the bounded memo (MEMO_CAP checks) cancel out of the bytes per added kernel.

Each rewritten piece is also checked against a second computation written here: the fingerprint against
``work_fingerprint`` of the sorted set of reprs (its definition), the windowed walk against the walk with every
time held at once.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import passes_peak_bytes
from wizard.testing.nsys import Kernel, write_export, write_many
from wizard.trace.read.nsys import read_nsys

# Bytes of Python heap per kernel added, at the passes' peak (100k to 200k distinct-grid kernels). Before this change
# 183 (the workload fingerprint's set of reprs, ~135 a kernel, and the kernel rows' gathering and walk, ~166, each on
# top of what is held then); after: 143 measured here. The bound leaves room for numpy's and the allocator's noise.
BYTES_PER_KERNEL = 160
KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.mark.slow
def test_the_inspection_of_distinct_launches_holds_a_bounded_number_of_bytes_per_kernel(tmp_path: Path) -> None:
    small, large = 100_000, 200_000  # past MEMO_CAP (16,384) and the materialised combinations (65,536)
    paths = [write_many(tmp_path / f"rows-{n}.sqlite", n, grids=10**12, calls=False) for n in (small, large)]
    passes_peak_bytes(paths[0])  # the modules each pass imports, loaded before measuring
    peaks = [passes_peak_bytes(p) for p in paths]
    per_kernel = (peaks[1] - peaks[0]) / (large - small)
    assert per_kernel < BYTES_PER_KERNEL, f"{per_kernel:.0f} bytes a kernel at the inspection's peak"


def _hostile_grids(path: Path) -> Path:
    """Grids and blocks whose decimal text orders them unlike their value: negatives, a prefix and what extends
    it (12 and 120), 19 digits, NULL grids; several names, one a prefix of another."""
    rng = random.Random(47)
    values = [0, 1, 9, 10, 12, 120, 121, 2, -1, -12, -120, -2, 2**31, 2**31 - 1, -(2**31) + 1, 2**62, 2**63 - 1]
    kernels = [
        Kernel(
            1000 * i, 1000 * i + 500, i + 1, name=rng.choice(["k", "k2", "k'\"", "kernel_1", "kernel_10"]),
            grid=(rng.choice(values), rng.choice(values), rng.choice(values)),
            block=(rng.choice(values), rng.choice(values), 1),
        )
        for i in range(600)
    ]  # fmt: skip
    write_export(path, kernels, [])
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {KERNELS} SET gridX = NULL, gridY = NULL, gridZ = NULL WHERE correlationId % 50 = 1")
        db.execute(f"UPDATE {KERNELS} SET blockX = NULL, blockY = NULL, blockZ = NULL WHERE correlationId % 70 = 2")
    return path


@pytest.mark.parametrize(
    "build",
    [_hostile_grids, lambda p: write_many(p, 3000, grids=10**9, names=37, streams=5)],
    ids=["hostile-grids", "distinct-grids-names-streams"],
)
def test_the_fingerprint_sorted_by_numpy_is_the_sorted_set(
    tmp_path: Path, build: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the materialised combinations the fingerprint is sorted by numpy keys: the same hash as
    ``work_fingerprint`` of the distinct (name, grid, block) sorted by repr (its definition, wizard/schemas.py)."""
    from wizard.schemas import work_fingerprint
    from wizard.trace.read import records

    monkeypatch.setattr(records, "_MATERIALISED", 8)  # the lazy combinations, on a few thousand kernels
    contents = read_nsys(build(tmp_path / "export.sqlite"))  # type: ignore[operator]
    assert contents.kernels._sorted_work() is not None  # the numpy path, not the set's
    distinct = {(k.name, k.grid, k.block) for k in contents.kernels}
    assert contents.kernels.fingerprint() == work_fingerprint(sorted(distinct, key=repr))


def test_the_windowed_walk_is_the_walk_with_every_time_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """``nesting.walk`` holds a window of times as Python ints; with a window of 3 events (runs longer than it,
    runs across its edge) it finds what a window holding every event finds."""
    import numpy as np

    from wizard.trace.health import nesting

    rng = random.Random(7)
    n = 2000
    row = np.sort(np.array([rng.randrange(3) for _ in range(n)], dtype=np.int64))
    ts = np.array([rng.randrange(0, 4000) for _ in range(n)], dtype=np.int64)
    dur = np.array([rng.choice([0, 1, 5, 30, 200]) for _ in range(n)], dtype=np.int64)
    order = np.lexsort((-dur, ts, row))
    events = nesting.RowEvents(
        row[order], ts[order], dur[order], np.zeros(n, dtype=np.int8), np.arange(n, dtype=np.int64), [], []
    )
    monkeypatch.setattr(nesting, "WINDOW", 10**9)
    whole = nesting.walk(events)
    monkeypatch.setattr(nesting, "WINDOW", 3)
    windowed = nesting.walk(events)
    assert len(whole[0]) > 50  # the events overlap: the walk has something to find
    for a, b in zip(whole, windowed, strict=True):
        assert a.tolist() == b.tolist()
