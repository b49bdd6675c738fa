"""Integer columns of an untrusted table, a batch of rows at a time, as one numpy matrix: the Nsight Systems
reader's kernels and runtime calls (issue 48: <= 3 µs of CPU a kernel).

Python's ``sqlite3`` builds a tuple a row and a Python value a column (releasing and taking the GIL around each),
~0.11 µs a value and ~0.25 µs a row on this project's machine: 2.3 s for a million kernel rows of 17 columns
before numpy sees one (benchmarks/results-2026-12-02-nsysfast.md). Here SQLite itself writes each column of a
batch as one JSON array (``json_group_array``, ~0.07 µs a value), which numpy reads in one call: a handful of
Python values a batch instead of a million.

The rows and their values are the row-by-row read's (``rows``): the same rows, in the table's rowid order
(the order a full scan of an ordinary table gives), the same typing. JSON keeps SQLite's types apart (an integer
is written as its digits, a real with a point or an exponent, text quoted, NULL as ``null``; a BLOB is an error),
and numpy's reader refuses anything but a list of integers, so a batch holding any value that is not an integer,
or -2**63 (the matrices' mark for no value), or that SQLite cannot write within its bounds (one value's length,
the heap, the clock), is read again, those rows only, by the row-by-row query: hostile files read exactly as
before. A table without a usable rowid (WITHOUT ROWID, or columns named ``rowid``, ``_rowid_`` and ``oid``) is
read row by row throughout. The row-by-row query has no ORDER BY: on an ordinary table SQLite scans in rowid
order, but an index it chooses (a hostile file's, with its statistics) can give another; only rows with equal
starts can then come in another order, as the reader sorts by start.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from wizard.compiled_core import compiled

NO_VALUE = -(1 << 63)  # records.NO_VALUE: no value in an int64 column
WIDEST = 21  # bytes of one integer in a JSON array: "-9223372036854775808" and its comma
MOST_ROWS = 40_000  # rows of a batch: a column's JSON is then at most ~840 KB (the reads' value limit: 1 MiB)
_KEYS = ("rowid", "_rowid_", "oid")  # SQLite's names for the rowid, each hidden by a column of that name

_ARRAY = r"\[(?:-?[0-9]+(?:,-?[0-9]+)*)?\]"  # ASCII digits only: [0-9], never \d (compiled on first use)


def pure_int64_array(text: str) -> bytes | None:
    """A JSON array of integers, as SQLite's ``json_group_array`` writes an integer column, as the bytes of native
    int64s; None for any other text (a real, text, NULL, a space, a '+', a value past int64). The compiled core's
    ``int64_array`` is its twin (wizard/_core.c, "Nsight rows"), the same on every text."""
    import numpy as np

    if not isinstance(text, str):
        raise TypeError("int64_array: the text must be a str")
    if not re.fullmatch(_ARRAY, text):
        return None
    inner = text[1:-1]
    if not inner:
        return b""
    values = np.fromstring(inner, dtype=np.int64, sep=",")  # saturates past int64: the ends are looked at again
    if bool(((values == NO_VALUE) | (values == -NO_VALUE - 1)).any()):
        exact = [int(token) for token in inner.split(",")]
        if not all(NO_VALUE <= v < -NO_VALUE for v in exact):
            return None
        values = np.array(exact, dtype=np.int64)
    return values.tobytes()


_core = compiled()
int64_array: Callable[[str], bytes | None] = _core.int64_array if _core is not None else pure_int64_array

Typed = Callable[[list[tuple[Any, ...]]], Any]  # rows (tuples) as the reader's matrix, value by value


def rowid_name(db: sqlite3.Connection, table: str, have: set[str]) -> str | None:
    """A name that is the table's rowid: one no column takes (case-insensitively, as SQLite matches names), on a
    table that has one (a WITHOUT ROWID table has none: preparing the query fails). None: read row by row.
    ``table_xinfo`` lists the generated and hidden columns ``table_info`` leaves out: a generated column named
    ``rowid`` holding 7 on every row otherwise stood in for the rowid, and the read stopped after one batch."""
    quoted = table.replace('"', '""')
    hidden = {str(row[1]) for row in db.execute(f'PRAGMA table_xinfo("{quoted}")')}
    taken = {name.lower() for name in have | hidden}
    for key in _KEYS:
        if key not in taken:
            try:
                db.execute(f'SELECT {key} FROM "{table}" LIMIT 0').fetchall()
            except sqlite3.OperationalError:
                return None
            return key
    return None


class ColumnBatches:
    """The rows ``FROM "{table}" WHERE {where}`` of the ``picked`` columns (quoted names) that hold an integer in
    ``integer`` (a picked column, or none), a batch at a time: each batch as ``typed`` makes it of the same rows
    read as tuples, or as numpy makes it of the columns' JSON arrays where every value is an integer other than
    -2**63 (``place``: the matrix, given the columns).

    A batch is a range of rowids holding at most ``rows`` rows (its end found by a scan of the rowids alone), read
    by a query without subquery or ORDER BY: each value a column read and an aggregate step, where the query with
    ``LIMIT`` in a subquery (a co-routine) copied each value once more and checked ``integer`` in SQL (18% of the
    kernels' query; benchmarks/results-2026-12-02-round4-nsys4.md). ``NOT INDEXED``: the table's own b-tree, in
    rowid order, whatever index a file holds. The arrays need no check of ``integer``: a batch holding anything
    but an integer there is read again row by row, where SQL checks it."""

    def __init__(
        self,
        db: sqlite3.Connection,
        table: str,
        picked: Sequence[str],
        where: str,
        key: str | None,
        *,
        integer: str | None = None,
    ) -> None:
        self.db = db
        self.names = list(picked)
        self.picked = ", ".join(picked)
        self.table = f'"{table}"'
        self.where = where
        checked = f"typeof({integer}) = 'integer' AND ({where})" if integer else where
        self.source = f"FROM {self.table} WHERE {checked}"
        self.key = key
        limit = db.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        self.rows = min(MOST_ROWS, limit // WIDEST - 2)
        self.width = len(picked)

    def order(self) -> str:
        """The order the rows come in, as SQL after their ``FROM ... WHERE`` (for reading a column again)."""
        return f" ORDER BY {self.key}" if self.key and self.rows > 0 else ""

    def batches(self, typed: Typed, place: Callable[[list[Any]], Any], fetch: int) -> Iterator[Any]:
        """Every batch holding a row, in order; row by row (``fetch`` rows at once) where no rowid orders them."""
        if not self.key or self.rows <= 0 or not self.width:
            cursor = self.db.execute(f"SELECT {self.picked} {self.source}")
            while batch := cursor.fetchmany(fetch):
                yield typed(batch)
            return
        last: int | None = None
        while (high := self._end(last)) is not None:
            columns = self._columns(last, high)
            if columns is None:
                rows = self._rows(last, high)
                if rows:
                    yield typed(rows)
            elif len(columns[0]):
                yield place(columns)
            last = high

    def _range(self, last: int | None, high: int) -> tuple[str, tuple[int, ...]]:
        """The rowids after ``last`` up to ``high``, as SQL after a condition, and its arguments."""
        if last is None:
            return f" AND {self.key} <= ?", (high,)
        return f" AND {self.key} > ? AND {self.key} <= ?", (last, high)

    def _end(self, last: int | None) -> int | None:
        """The last rowid of the batch after ``last``: ``rows`` rowids on, or the table's last; None at its end."""
        after, args = ("", ()) if last is None else (f" WHERE {self.key} > ?", (last,))
        inner = f"SELECT {self.key} AS k FROM {self.table}{after} ORDER BY {self.key} LIMIT {self.rows}"
        (high,) = self.db.execute(f"SELECT max(k) FROM ({inner})", args).fetchone()
        return high if type(high) is int else None

    def _columns(self, last: int | None, high: int) -> list[Any] | None:
        """The batch's columns (numpy int64, maybe of no rows); None where a value is not an integer or is -2**63,
        or SQLite could not write the arrays (a BLOB, a bound): read that batch row by row."""
        import numpy as np

        after, args = self._range(last, high)
        arrays = ", ".join(f"json_group_array({name})" for name in self.names)
        query = f"SELECT {arrays} FROM {self.table} NOT INDEXED WHERE ({self.where}){after}"
        try:
            texts = self.db.execute(query, args).fetchone()
        except sqlite3.Error:
            return None  # the same rows, read row by row, fail (or not) as they always did
        columns: list[Any] = []
        for text in texts:
            raw = int64_array(text) if type(text) is str else None
            if raw is None or (columns and len(raw) != 8 * len(columns[0])):
                return None
            column = np.frombuffer(raw, dtype=np.int64)
            if bool((column == NO_VALUE).any()):
                return None
            columns.append(column)
        return columns

    def _rows(self, last: int | None, high: int) -> list[tuple[Any, ...]]:
        after, args = self._range(last, high)
        query = f"SELECT {self.picked} {self.source}{after} ORDER BY {self.key}"
        return self.db.execute(query, args).fetchall()
