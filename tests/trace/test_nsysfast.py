"""The Nsight Systems read by whole columns (issue 48: wizard/trace/read/sqlite_columns.py): SQLite writes each
column of a batch of rows as one JSON array, and a batch holding anything but integers (text, reals, NULL, a BLOB,
-2**63) is read again row by row. Each test holds the columns' read against the row-by-row one (``MOST_ROWS = 0``,
the read before issue 48) or against a second reading written here in plain sqlite3 and Python: the same rows, in
rowid order, each value an integer or none.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import call_outcome, every_change
from wizard.compiled_core import compiled
from wizard.testing.nsys import Call, Kernel, write_export
from wizard.trace.read import nsys, sqlite_columns
from wizard.trace.read.nsys import read_nsys
from wizard.trace.read.sqlite_columns import ColumnBatches, rowid_name

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MIN64 = -(2**63)
HOSTILE: list[Any] = ["7", "many", 2.0, 2.5, None, b"\x00\x01", MIN64, 2**63 - 1, -(2**62), 10**18]


def _export(path: Path, kernels: int = 120, seed: int = 3) -> Path:
    """Kernels out of time order with ties, two processes, calls of both kinds and their backtraces."""
    rng = random.Random(seed)
    ks = [
        Kernel(rng.randrange(0, 50) * 1000, rng.randrange(50, 99) * 1000, i + 1, name=f"k{i % 5}", device=i % 2,
               stream=7 + i % 3, grid=(1 + i % 9, 2, 1), block=(128, 1, 1 + i % 2), registers=16 + i % 4,
               static_smem=i, dynamic_smem=3, pid=4242 if i % 4 else 5151)
        for i in range(kernels)
    ]  # fmt: skip
    cs = [Call(rng.randrange(0, 40) * 100, 99_000, i + 1, driver=i % 3 == 0, tid=9 + i % 2,
               pid=4242 if i % 4 else 5151) for i in range(kernels)]  # fmt: skip
    return write_export(path, ks, cs, backtraces=True, shuffle=seed)


def _plant(path: Path, table: str, columns: list[str], seed: int) -> None:
    """One hostile value in a few rows of ``table`` (some batches stay all integers)."""
    rng = random.Random(seed)
    with sqlite3.connect(path) as db:
        count = db.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
        for _ in range(6):
            row, column, value = rng.randrange(1, count + 1), rng.choice(columns), rng.choice(HOSTILE)
            db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (value, row))


def _contents(path: Path) -> tuple[Any, ...]:
    """What the passes read of kernels and calls: every record, the combinations, the calls' columns."""
    c = read_nsys(path)
    kernels = [(k.name, k.ts, k.dur, k.pid, k.tid, k.device, k.stream, k.correlation, k.grid, k.block, k.registers,
                k.shared_memory) for k in c.kernels]  # fmt: skip
    _, _, _, ids, shapes = c.kernels.columns()
    r = c.runtime
    calls = [(r.correlations[i], r.thread(r.threads[i]), r.starts[i], r.name_list[r.names[i]]) for i in range(len(r))]
    return kernels, list(ids), [s[:9] for s in shapes], calls, c.events, dict(c.timeline.categories), c.metadata


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, rows: int) -> tuple[Any, Any]:
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", 0)  # no batch of columns: the row-by-row read throughout
    by_rows = _contents(path)
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", rows)
    return by_rows, _contents(path)


@pytest.mark.parametrize("seed", range(6))
def test_hostile_values_in_some_batches_read_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Batches of 7 rows, a hostile value planted in a few: every record, combination and call as before."""
    path = _export(tmp_path / "export.sqlite", seed=seed)
    kernel_columns = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName",
                      "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
                      "staticSharedMemory", "dynamicSharedMemory"]  # fmt: skip
    _plant(path, KERNELS, kernel_columns, seed)
    _plant(path, RUNTIME, ["start", "end", "eventClass", "globalTid", "correlationId", "nameId"], seed + 100)
    by_rows, by_columns = _both(path, monkeypatch, 7)
    assert by_columns == by_rows
    assert len(by_rows[0]) > 100  # the planted values left most kernels readable


def test_one_process_reads_no_pid_and_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One process: the kernels' globalPid is not read (correlation ids are not kept apart); same records."""
    kernels = [Kernel(1000 * (i % 13), 1000 * (i % 13) + 9, i + 1, grid=(1 + i, 1, 1)) for i in range(60)]
    path = write_export(tmp_path / "one.sqlite", kernels, [Call(10 * i, 10 * i + 5, i + 1) for i in range(60)])
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {KERNELS} SET globalPid = 'not read' WHERE correlationId = 5")
    by_rows, by_columns = _both(path, monkeypatch, 9)
    assert by_columns == by_rows
    assert [k[7] for k in by_rows[0]] == [c for _, c in sorted((1000 * (i % 13), i + 1) for i in range(60))]


def _second_reading(db: sqlite3.Connection, table: str, names: list[str], where: str) -> list[list[int | None]]:
    order = "rowid"
    rows = db.execute(f'SELECT {", ".join(names)} FROM "{table}" WHERE {where} ORDER BY {order}').fetchall()
    return [[v if type(v) is int and v != MIN64 else None for v in row] for row in rows]


def _read_batches(db: sqlite3.Connection, table: str, names: list[str], where: str, fetch: int) -> tuple[Any, int]:
    """The batches' rows as lists (None for no value) and how many came as columns."""
    have = {str(row[1]) for row in db.execute(f'PRAGMA table_info("{table}")')}
    source = ColumnBatches(db, table, names, where, rowid_name(db, table, have))
    placed = 0

    def place(columns: list[Any]) -> list[list[int | None]]:
        nonlocal placed
        placed += 1
        return [list(map(int, row)) for row in zip(*columns, strict=True)]

    def typed(batch: list[tuple[Any, ...]]) -> list[list[int | None]]:
        return [[v if type(v) is int and v != MIN64 else None for v in row] for row in batch]

    rows = [row for batch in source.batches(typed, place, fetch) for row in batch]
    return rows, placed


@pytest.mark.parametrize("batch", [1, 2, 5, 64])
def test_batches_are_the_rows_in_rowid_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """Sparse and negative rowids, rows the condition drops, hostile values: the rows in rowid order."""
    path = tmp_path / "t.sqlite"
    rng = random.Random(batch)
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE t ("start", "end", "x")')
        ids = [*rng.sample(range(-(10**6), 10**6), 300), MIN64, 2**63 - 1]
        for n, rowid in enumerate(ids):  # a hostile value in every 97th row inserted (a scattered rowid)
            values = [rng.randrange(-(10**12), 10**12) for _ in range(3)]
            values[n % 3] = rng.choice(HOSTILE) if n % 97 == 0 else values[n % 3]
            db.execute('INSERT INTO t (rowid, start, "end", x) VALUES (?, ?, ?, ?)', (rowid, *values))
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", batch)
    db = sqlite3.connect(path)
    names, where = ['"start"', '"end"', '"x"'], "typeof(\"start\") = 'integer'"
    rows, placed = _read_batches(db, "t", names, where, 50)
    assert rows == _second_reading(db, "t", names, where)
    assert placed > 0


def test_rowid_names_a_column_cannot_hide(tmp_path: Path) -> None:
    """A column named rowid (any case) hides SQLite's rowid: the next name is taken; all three hidden, or a
    WITHOUT ROWID table: none, and the rows are read row by row, in the order SQLite gives them."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE a ("ROWID", "start")')
        db.execute('CREATE TABLE b ("rowid", "_rowid_", "OID", "start")')
        db.execute('CREATE TABLE c ("start" INTEGER PRIMARY KEY, "end") WITHOUT ROWID')
        db.execute('CREATE TABLE d ("start")')
        db.executemany("INSERT INTO a VALUES (?, ?)", [(9 - i, i) for i in range(10)])
        db.executemany("INSERT INTO b VALUES (?, ?, ?, ?)", [(1, 1, 1, i) for i in range(10)])
        db.executemany("INSERT INTO c VALUES (?, ?)", [(i, i) for i in range(10)])
    db = sqlite3.connect(path)
    assert rowid_name(db, "a", {"ROWID", "start"}) == "_rowid_"
    assert rowid_name(db, "b", {"rowid", "_rowid_", "OID", "start"}) is None
    assert rowid_name(db, "c", {"start", "end"}) is None
    assert rowid_name(db, "d", {"start"}) == "rowid"
    for table in "abc":
        rows, placed = _read_batches(db, table, ['"start"'], "1", 4)
        assert rows == [[i] for i in range(10)]
        assert placed == (1 if table == "a" else 0)


@pytest.mark.parametrize("kind", ["VIRTUAL", "STORED"])
def test_a_generated_column_named_rowid_is_not_taken_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The review of 2026-12-02: ``PRAGMA table_info`` does not list generated columns, so one named ``rowid``
    holding 7 on every row was read as the rowid; the batch after the first asked for rowid > 7 and the read ended,
    every row past the first batch dropped without a word. ``table_xinfo`` lists it: the next name is taken."""
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", 4)  # a batch of 4 rows stands for 40,000
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f'CREATE TABLE t ("start" INTEGER, "end" INTEGER, rowid INTEGER AS (7) {kind})')
        db.executemany('INSERT INTO t ("start", "end") VALUES (?, ?)', [(i, i + 1) for i in range(10)])
    db = sqlite3.connect(path)
    assert rowid_name(db, "t", {"start", "end"}) == "_rowid_"
    rows, placed = _read_batches(db, "t", ['"start"', '"end"'], "1", 4)
    assert rows == [[i, i + 1] for i in range(10)]
    assert placed == 3  # 4 + 4 + 2 rows, each batch as columns


def test_a_value_limit_too_small_for_a_batch_reads_row_by_row(tmp_path: Path) -> None:
    """SQLite's limit on one value's length (the reads' ``max_text_bytes``) below a batch's JSON: row by row;
    the limit of a real read (1 MiB) holds MOST_ROWS integers of any size."""
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE t ("start")')
        db.executemany("INSERT INTO t VALUES (?)", [(MIN64 + 1 + i,) for i in range(500)])
    db = sqlite3.connect(path)
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1 << 20)
    assert ColumnBatches(db, "t", ['"start"'], "1", "rowid").rows == sqlite_columns.MOST_ROWS
    assert len(f"[{','.join([str(MIN64)] * sqlite_columns.MOST_ROWS)}]") < 1 << 20
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2000)
    rows, placed = _read_batches(db, "t", ['"start"'], "1", 64)
    assert rows == [[MIN64 + 1 + i] for i in range(500)]
    assert placed > 0  # batches of 2000 // 21 - 2 = 93 rows, each within the limit


@pytest.mark.parametrize("values", [
    [5] * 40, [3, 1, 2, 3, 1], [MIN64, 2**63 - 1, 0, MIN64], list(range(-50, 50, 7)) * 3, [10**15, 7, 10**15],
    [2**40 + 5, 2**40, 2**40 + 5], [],
])  # fmt: skip
def test_distinct_is_numpy_unique(values: list[int]) -> None:
    """``_distinct``: the sorted distinct values and each one's index among them, as a sorted set says."""
    got, which = nsys._distinct(np.array(values, dtype=np.int64))
    want = sorted(set(values))
    assert got.tolist() == want
    assert [want[i] for i in which.tolist()] == values


def test_distinct_rows_are_numpy_unique_by_rows() -> None:
    rng = random.Random(5)
    for _ in range(40):
        n = rng.randrange(1, 200)
        cols = [[rng.choice([0, 1, MIN64, 2**63 - 1, rng.randrange(-9, 9), 10**12]) for _ in range(n)] for _ in "abc"]
        got, which = nsys._distinct_rows(*(np.array(c, dtype=np.int64) for c in cols))
        rows = list(zip(*cols, strict=True))
        want = sorted(set(rows))
        assert [tuple(r) for r in got.tolist()] == want
        assert [want[i] for i in which.tolist()] == rows


# -- the compiled core's int64_array and its Python twin ----------------------------------------------------------

CORE = compiled()


def _array_texts() -> list[str]:
    """What SQLite's json_group_array writes of columns of every kind of value, and texts near them."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (g, v)")
    rng = random.Random(11)
    kinds: list[Any] = [*HOSTILE, 0, -1, 2**63 - 1, MIN64, 1.0e20, float("inf"), "1,2", "[3]", " 4"]
    for g in range(60):
        for _ in range(rng.randrange(1, 6)):
            db.execute("INSERT INTO t VALUES (?, ?)", (g, rng.choice([*kinds, rng.randrange(-(10**18), 10**18)])))
    texts = [text for (text,) in db.execute("SELECT json_group_array(v) FROM t WHERE typeof(v) != 'blob' GROUP BY g")]
    near = ["[]", "[", "]", "", "[1,]", "[,1]", "[-]", "[--1]", "[1-2]", "[+1]", "[ 1]", "[1 ]", "[007,-0]", "[１]",
            "[\ud800]", "[9223372036854775808]", "[-9223372036854775809]", "[92233720368547758070]",
            "[-9223372036854775808,9223372036854775807]", "[1,,2]", "[1]]", "[[1]]", "[1]\x00"]  # fmt: skip
    return texts + near + _long_digit_runs()


def _long_digit_runs() -> list[str]:
    """Runs of 18 digits and more (read again, checked, by the compiled core): leading zeros, int64's ends and
    one past them, runs whose unchecked reading wraps 2**64 back into int64's range."""
    runs = ["0" * 25 + "1", "-" + "0" * 30 + "7", "0" * 19, "999999999999999999", "-999999999999999999",
            "1000000000000000000", "-0009223372036854775808", "0009223372036854775807", "9223372036854775808",
            "-9223372036854775809", "18446744073709551616", "18446744073709551617", "-18446744073709551615",
            "36893488147419103233", "1" + "0" * 40]  # fmt: skip
    return [f"[{run}]" for run in runs] + [f"[5,{run},-6]" for run in runs]


def _twins_agree(text: Any) -> None:
    assert CORE is not None
    assert call_outcome(CORE.int64_array, text) == call_outcome(sqlite_columns.pure_int64_array, text), repr(text)


@pytest.mark.skipif(CORE is None, reason="the compiled core is not built here")
def test_int64_array_twins_agree_on_sqlites_arrays_and_every_change() -> None:
    """The compiled ``int64_array`` and ``pure_int64_array``: the same bytes, None or error on every text SQLite
    writes and every cut and one-byte change of those (tests/helpers.every_change)."""
    texts = _array_texts()
    assert any(sqlite_columns.pure_int64_array(t) for t in texts)  # some are integers only
    for text in texts:
        _twins_agree(text)
        for changed in every_change(text.encode("utf-8", "surrogatepass")):
            _twins_agree(changed.decode("latin-1"))
    for other in (b"[1]", None, 5, ["[1]"]):
        _twins_agree(other)


@pytest.mark.skipif(CORE is None, reason="the compiled core is not built here")
def test_int64_array_twins_agree_on_random_texts() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        body = "".join(rng.choice("0123456789,-9,+ .e") for _ in range(rng.randrange(0, 30)))
        _twins_agree(f"[{body}]")


@pytest.mark.skipif(CORE is None, reason="the compiled core is not built here")
def test_int64_array_twins_agree_on_arrays_of_every_length() -> None:
    """Commas are counted eight bytes at a time: arrays of 0 to 60 values of 1 to 20 characters, a comma at every
    place in a word of eight, some with a wrong byte put in (a space, a '+', a second comma)."""
    rng = random.Random(13)
    for n in range(61):
        for _ in range(8):
            values = [rng.choice([rng.randrange(10), rng.randrange(-(10**6), 10**6), rng.randrange(MIN64, -MIN64)])
                      for _ in range(n)]  # fmt: skip
            text = "[" + ",".join(map(str, values)) + "]"
            _twins_agree(text)
            if len(text) > 2:
                at = rng.randrange(1, len(text) - 1)
                _twins_agree(text[:at] + rng.choice(" +,x") + text[at + 1 :])
            if n:
                assert CORE is not None
                assert CORE.int64_array(text) == np.array(values, dtype=np.int64).tobytes()


def test_int64_array_is_the_values_in_order() -> None:
    """A second computation: Python's int of each number, packed as native int64s."""
    values = [0, -1, 7, 2**63 - 1, MIN64, 10**18, -(10**18)]
    text = "[" + ",".join(map(str, values)) + "]"
    want = np.array(values, dtype=np.int64).tobytes()
    assert sqlite_columns.pure_int64_array(text) == want
    if CORE is not None:
        assert CORE.int64_array(text) == want


def test_the_read_is_the_same_on_both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled ``int64_array`` bound where built; the Python twin reads the same records (hostile values)."""
    if CORE is not None:
        assert sqlite_columns.int64_array is CORE.int64_array
    path = _export(tmp_path / "export.sqlite", seed=9)
    _plant(path, KERNELS, ["gridX", "deviceId", "end"], 9)
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", 11)
    compiled_read = _contents(path)
    monkeypatch.setattr(sqlite_columns, "int64_array", sqlite_columns.pure_int64_array)
    assert _contents(path) == compiled_read


def _indexed_table(path: Path) -> None:
    """Rows whose ``x`` is 0, 1 or 67, an index on it and statistics that make it SQLite's choice for ``x IN
    (0, 1)``; three starts are not integers (text, a real, NULL)."""
    rng = random.Random(21)
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE t ("start", "end", "x")')
        for n in range(400):
            start: Any = rng.randrange(-(10**9), 10**9) if n % 150 != 5 else ["9", 2.5, None][n // 150]
            db.execute("INSERT INTO t VALUES (?, ?, ?)", (start, rng.randrange(10**9), rng.choice([0, 1, 67])))
        db.execute("CREATE INDEX by_x ON t (x)")
        db.execute("ANALYZE")
        db.execute("UPDATE sqlite_stat1 SET stat = '400 1' WHERE idx = 'by_x'")


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_integer_start_left_to_the_arrays_and_an_index_read_in_rowid_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    """``integer``: the columns' query leaves the check of an integer start to the arrays (a batch holding another
    start is read row by row, where SQL checks it), and reads the table's own b-tree whatever index it has: the
    rows in rowid order, as a second reading with the check in SQL gives them."""
    path = tmp_path / "t.sqlite"
    _indexed_table(path)
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", batch)
    db = sqlite3.connect(path)
    names, where = ['"start"', '"end"', '"x"'], '"x" IN (0, 1)'
    source = ColumnBatches(db, "t", names, where, "rowid", integer='"start"')
    placed: list[int] = []

    def place(columns: list[Any]) -> list[list[int | None]]:
        placed.append(len(columns[0]))
        return [list(map(int, row)) for row in zip(*columns, strict=True)]

    def typed(rows: list[tuple[Any, ...]]) -> list[list[int | None]]:
        return [[v if type(v) is int and v != MIN64 else None for v in row] for row in rows]

    rows = [row for part in source.batches(typed, place, 50) for row in part]
    assert rows == _second_reading(db, "t", names, f"typeof(\"start\") = 'integer' AND {where}")
    assert sum(placed) > len(rows) // 3  # most batches came as columns
    assert all(0 < n <= batch for n in placed)


def _calls_read(c: Any) -> tuple[Any, ...]:
    r = c.runtime
    threads, names = [r.thread(t) for t in r.threads], [r.name_list[n] for n in r.names]
    return (
        list(r.correlations),
        list(r.starts),
        c.events,
        c.last_ts,
        threads,
        names,
        list(c.timeline.categories.items()),
    )


@pytest.mark.parametrize("first_driver", [False, True])
def test_calls_added_a_batch_at_a_time_and_sorted_once_are_the_tidy_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_driver: bool
) -> None:
    """The calls go into the runtime index batch by batch (batches of 13 rows, backtraces among them) and are sorted
    in place once: a shuffled export reads as the same export in order, column for column, with the same counts,
    the earliest call's category first, and the last start."""
    monkeypatch.setattr(sqlite_columns, "MOST_ROWS", 13)
    rng = random.Random(4)
    starts = rng.sample(range(10**6), 150)  # distinct: the order of ties is the file's, which shuffling changes
    calls = [
        Call(s * 10, s * 10 + rng.randrange(-5, 900), i + 1, name=("cudaLaunchKernel_v7000", "cuMemcpy")[i % 2],
             driver=first_driver if s == min(starts) else rng.random() < 0.5, tid=9 + i % 3)
        for i, s in enumerate(starts)
    ]  # fmt: skip
    kernels = [Kernel(1000 * i, 1000 * i + 9, i + 1) for i in range(20)]
    read = [
        read_nsys(write_export(tmp_path / f"{label}.sqlite", kernels, calls, backtraces=True, shuffle=shuffle))
        for label, shuffle in (("tidy", None), ("shuffled", 8))
    ]
    tidy, shuffled = (_calls_read(c) for c in read)
    assert shuffled == tidy
    assert tidy[0] == [c.correlation for c in sorted(calls, key=lambda c: c.start_ns)]
    earliest = min(calls, key=lambda c: c.start_ns)
    categories = [name for name, _ in tidy[6] if name.startswith("cuda_")]
    assert categories[0] == ("cuda_driver" if earliest.driver else "cuda_runtime")
