"""The untrusted-SQLite opening every SQLite format shares (wizard/trace/read/sqlite.py), under issue 47 item 2's
hostile files: a virtual table where a table is read (it runs any view), its shadow tables, and a sorter that must
not write temporary files."""

from __future__ import annotations

import gzip
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import budget
from wizard.testing.nsys import Call, Kernel, write_export

_RECURSIVE = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n{limit})"


def _export(tmp_path: Path, name: str = "e.sqlite") -> Path:
    kernels = [Kernel(1_000 * i + 500, 1_000 * i + 900, 100 + i) for i in range(1, 3)]
    calls = [Call(1_000 * i, 1_000 * i + 300, 100 + i) for i in range(1, 3)]
    return write_export(tmp_path / name, kernels, calls)


def _fts5_over_a_recursive_view(tmp_path: Path, rows: int | None = None) -> Path:
    """Issue 47 item 2's file: the export's kernel table is an fts5 virtual table whose content is a view of an
    endless recursive CTE (``rows``: a finite one); the reader's fixed SELECT on it ran the view (SQLite's sorter
    then wrote /var/tmp at ~110 MB/s until the 600 s bound)."""
    path = _export(tmp_path, "fts5.sqlite" if rows is None else "finite.sqlite")
    limit = "" if rows is None else f" LIMIT {rows}"
    db = sqlite3.connect(path)
    with db:
        db.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
        cte = _RECURSIVE.format(limit=limit)
        db.execute(f'CREATE VIEW kview AS {cte} SELECT x AS rowid, x AS start, x + 1 AS "end", x AS deviceId FROM n')
        db.execute(
            "CREATE VIRTUAL TABLE CUPTI_ACTIVITY_KIND_KERNEL USING fts5(start, \"end\", deviceId, content='kview')"
        )
    db.execute("VACUUM")
    db.close()
    return path


def test_the_issue_file_is_the_issue_file(tmp_path: Path) -> None:
    """The file this test builds is the one issue 47 describes: ~40 KB, its kernel 'table' a virtual fts5 table
    over a view, and SQLite itself (a plain connection) runs the view when asked for the kernels (shown on the
    same file with a finite view: the endless one never returns)."""
    path = _fts5_over_a_recursive_view(tmp_path)
    assert 20_000 < path.stat().st_size < 60_000
    db = sqlite3.connect(_fts5_over_a_recursive_view(tmp_path, rows=5))
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'").fetchone()
    assert sql.startswith("CREATE VIRTUAL TABLE") and "content='kview'" in sql
    rows = db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    assert rows == [(1,), (2,), (3,), (4,), (5,)]  # the view's rows: a SELECT on the "table" runs the view
    db.close()


def test_a_virtual_table_is_refused_fast_in_one_line(run_cli: Any, tmp_path: Path) -> None:
    """Issue 47 item 2: refused before any row is read, in seconds (it ran for the read's whole 600 s bound), with
    the exit status for bad input (6) and one line naming the table and its module."""
    path = _fts5_over_a_recursive_view(tmp_path)
    started = time.monotonic()
    result = run_cli("trace", "inspect", str(path))
    elapsed = time.monotonic() - started
    assert result.status == 6, (result.status, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "CUPTI_ACTIVITY_KIND_KERNEL is a virtual table (USING fts5)" in lines[0]
    assert "only ordinary tables are read" in lines[0]
    assert elapsed < budget(10), elapsed  # the 600 s bound it ran for before, scaled to the load


def test_a_gzipped_virtual_table_is_refused_the_same_way(run_cli: Any, tmp_path: Path) -> None:
    path = _fts5_over_a_recursive_view(tmp_path)
    packed = tmp_path / "fts5.sqlite.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    result = run_cli("trace", "inspect", str(packed))
    assert result.status == 6
    assert "CUPTI_ACTIVITY_KIND_KERNEL is a virtual table (USING fts5)" in result.stderr


def test_shadow_tables_are_not_tables(tmp_path: Path) -> None:
    """An fts5 table's shadows (``x_data``, ``x_content``, ...) are refused where a reader reads them; a table that
    only starts like one (``x_KERNEL``: not a suffix fts5 keeps) is an ordinary table, as SQLite decides it."""
    from wizard.errors import InputFileError
    from wizard.trace.read.source import open_input
    from wizard.trace.read.sqlite import SqliteBounds, open_database

    path = tmp_path / "shadows.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE VIRTUAL TABLE x USING fts5(a)")
        db.execute("CREATE TABLE x_KERNEL (a)")
        db.execute("CREATE TABLE plain (a)")
    db.close()
    with open_input(path)[0] as fh, open_database(path, fh, SqliteBounds()) as found:
        assert found.schema.tables == {"x_KERNEL", "plain"}
        assert found.schema.virtual == {"x": "fts5"}
        assert set(found.schema.shadows) == {"x_data", "x_idx", "x_content", "x_docsize", "x_config"}
        found.schema.require_ordinary(path, ["plain", "x_KERNEL", "absent"])
        with pytest.raises(InputFileError, match=r"x_content belongs to the virtual table x, not a table of its own"):
            found.schema.require_ordinary(path, ["plain", "x_content"])
        with pytest.raises(InputFileError, match=r": x is a virtual table \(USING fts5\)"):
            found.schema.require_ordinary(path, ["X"])  # SQLite's names are case-insensitive


def test_temporary_storage_is_in_memory_and_bounded(tmp_path: Path) -> None:
    """``temp_store = MEMORY`` (a sorter never writes /var/tmp) and SQLite's heap capped: a sort bigger than the
    bound fails with SQLite's "out of memory", which the reader words in one line; the cap is lifted on close."""
    from wizard.trace.read.source import open_input
    from wizard.trace.read.sqlite import SqliteBounds, _heap_limit, database_error, open_database

    path = tmp_path / "big.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE t (a)")
        db.executemany("INSERT INTO t VALUES (?)", ((f"{i:08d}" * 64,) for i in range(60_000)))  # ~31 MB of text
    db.close()
    before = _heap_limit(-1)
    bounds = SqliteBounds(heap_bytes=8 << 20, cache_kib=1024)
    with open_input(path)[0] as fh, open_database(path, fh, bounds) as found:
        assert found.db.execute("PRAGMA temp_store").fetchone() == (2,)  # 2: MEMORY
        assert _heap_limit(-1) == 8 << 20
        with pytest.raises(MemoryError) as caught:  # SQLITE_NOMEM, as Python's sqlite3 raises it
            found.db.execute("SELECT a FROM t ORDER BY a DESC").fetchone()
        message = str(database_error(path, "a test database", caught.value))
        assert "took more memory than the bound on SQLite's heap" in message
    assert _heap_limit(-1) == before


def test_a_header_claiming_more_pages_than_the_file_is_refused(run_cli: Any, tmp_path: Path) -> None:
    """The header's page count (bytes 28-31, valid when bytes 24-27 equal 92-95) is held against the file's size by
    SQLite itself: one line, exit 6, never a read past the file."""
    path = _export(tmp_path)
    data = bytearray(path.read_bytes())
    data[28:32] = (10**6).to_bytes(4, "big")
    data[92:96] = data[24:28]
    path.write_bytes(bytes(data))
    result = run_cli("trace", "inspect", str(path))
    assert result.status == 6
    assert result.stderr.count("\n") == 1
    assert "cannot read as an Nsight Systems SQLite export: database disk image is malformed" in result.stderr
