"""A rocpd database's names cost what a kept name costs, not their size in the file (issue 47 item 1, as for Nsight
Systems' StringIds in test_nsys_bounds.py): kernel symbols (``display_name``, ``kernel_name``) and agent names are
read cut by SQLite to the readers' 16,384 characters (MAX_NAME, sqlite.text_column), so 1,500 symbols of a megabyte
no longer take 2.9 GB (benchmarks/results-2026-12-02-memory.md). Names are built by wizard/testing/hostile.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.helpers import read_peak_mb
from wizard.testing.hostile import name
from wizard.testing.rocpd import UUID, write_rocpd
from wizard.trace.read.collector import MAX_NAME
from wizard.trace.read.rocpd import read_rocpd

COUNT = 60  # symbols, each with two names of `size` bytes, never dispatched: 120 MB of names at a megabyte


def _database(path: Path, size: int) -> Path:
    write_rocpd(path)
    with sqlite3.connect(path) as db:
        db.executemany(
            f'INSERT INTO "rocpd_info_kernel_symbol{UUID}" (id, nid, pid, code_object_id, kernel_name, display_name) '
            "VALUES (?, 1, 1, 1, ?, ?)",
            [(100 + i, name(i, size).decode(), name(i, size).decode()) for i in range(COUNT)],
        )
        db.execute(
            f'UPDATE "rocpd_info_kernel_symbol{UUID}" SET display_name = ? WHERE id = 1', (name(99, size).decode(),)
        )
    return path


def test_megabyte_symbol_names_cost_what_kept_names_cost(tmp_path: Path) -> None:
    small = _database(tmp_path / "small.db", 8 * MAX_NAME)
    big = _database(tmp_path / "big.db", 1_000_000)
    read_peak_mb(read_rocpd, small)  # imports, outside the measurement
    grown = read_peak_mb(read_rocpd, big) - read_peak_mb(read_rocpd, small)
    assert grown < 8, grown  # the symbols held whole were 120 MB
    # symbol 1 (gemm) is dispatched twice (testing/rocpd.py's DISPATCHES): its megabyte display name, cut
    names = {k.name for k in read_rocpd(big).kernels}
    assert names == {name(99, 1_000_000)[:MAX_NAME].decode(), "softmax(float*)"}
