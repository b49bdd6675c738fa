"""probes/external_profilers.py reads Nsight Systems exports through the shared untrusted-SQLite opening
(wizard/trace/read/sqlite.py), not a reader of its own: the same bounds and refusals as a trace."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import sql_rows
from wizard.errors import InputFileError
from wizard.probes.external_profilers import read_nsys_sqlite
from wizard.testing.nsys import Kernel, write_export


def _export(tmp_path: Path) -> Path:
    kernels = [
        Kernel(1_000 * i, 1_000 * i + 400, 100 + i, name=f"k{i % 3}", grid=(i + 1, 2, 1), block=(64 * i + 32, 1, 1),
               registers=16 + i, static_smem=1024 * i, dynamic_smem=7)
        for i in range(1, 9)
    ]  # fmt: skip
    return write_export(tmp_path / "e.sqlite", reversed(kernels), [], sm_count=132)


def test_kernels_are_the_exports(tmp_path: Path) -> None:
    """Every kernel, in start order, against plain SQL over the same tables; the SM count by the GPU's CUDA ordinal
    (``cuDevice``, what a kernel's ``deviceId`` is: the builder's nsys id is 7, as a real export's differs)."""
    path = _export(tmp_path)
    got = [(k.name, k.grid, k.block, k.registers, k.shared_memory, k.num_sms) for k in read_nsys_sqlite(path)]
    rows = sql_rows(
        path,
        "SELECT s.value, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread, "
        "k.staticSharedMemory + k.dynamicSharedMemory, g.smCount FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName JOIN TARGET_INFO_GPU g ON g.cuDevice = k.deviceId ORDER BY k.start",
    )
    assert got == [(r[0], tuple(r[1:4]), tuple(r[4:7]), r[7], r[8], r[9]) for r in rows]
    assert [k.name for k in read_nsys_sqlite(path, name_filter="k1")] == ["k1", "k1", "k1"]


def test_a_virtual_kernel_table_is_refused(tmp_path: Path) -> None:
    path = _export(tmp_path)
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO old")
        db.execute("CREATE VIRTUAL TABLE CUPTI_ACTIVITY_KIND_KERNEL USING fts5(gridX, content='old')")
    db.close()
    with pytest.raises(InputFileError, match=r"CUPTI_ACTIVITY_KIND_KERNEL is a virtual table \(USING fts5\)"):
        read_nsys_sqlite(path)


def test_a_file_that_is_no_database_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(InputFileError, match=r"x\.sqlite: cannot read as an Nsight Systems SQLite export"):
        read_nsys_sqlite(path)
