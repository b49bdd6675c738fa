"""An Nsight Systems export's names cost what a kept name costs, not their size in the file (issue 47 items 1 and
7): StringIds is read with each text cut to the readers' 16,384 characters (MAX_NAME, every format's) by SQLite
itself, so a batch of rows never holds a megabyte's name whole (1,500 kernels with distinct 1 MB names took
1.49 GB resident, 60 MB now: benchmarks/results-2026-12-02-memory.md). Names are built by wizard/testing/hostile.py
(distinct in their first characters, so none merge)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.helpers import read_peak_mb
from wizard.testing.hostile import name
from wizard.testing.nsys import write_many
from wizard.trace.read.collector import MAX_NAME
from wizard.trace.read.nsys import read_nsys

COUNT = 60  # kernels, each with its own name of a megabyte: 60 MB of names


def _export(path: Path, size: int) -> Path:
    write_many(path, COUNT, names=COUNT, calls=False)
    with sqlite3.connect(path) as db:
        for sid, value in db.execute("SELECT id, value FROM StringIds WHERE value LIKE 'kernel%'").fetchall():
            db.execute("UPDATE StringIds SET value = ? WHERE id = ?", (name(int(value[7:]), size).decode(), sid))
    return path


def test_megabyte_names_cost_what_kept_names_cost(tmp_path: Path) -> None:
    small = _export(tmp_path / "small.sqlite", 8 * MAX_NAME)
    big = _export(tmp_path / "big.sqlite", 1_000_000)
    read_peak_mb(read_nsys, small)  # imports, outside the measurement
    grown = read_peak_mb(read_nsys, big) - read_peak_mb(read_nsys, small)
    assert grown < 8, grown  # the rows of one batch held whole were 60 MB
    names = sorted({k.name for k in read_nsys(big).kernels})
    assert names == sorted(name(i, 1_000_000)[:MAX_NAME].decode() for i in range(COUNT))
