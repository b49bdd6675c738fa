"""An untrusted SQLite file, opened the one safe way every SQLite format's reader shares (Nsight Systems' export,
AMD's rocpd), with its values typed and its schema looked at before any row is.

What a hostile database cannot do here:

- **Run a query of its own.** Only ordinary tables are read: never a view (it could run any query: a recursive CTE
  is infinite), never a virtual table (``CREATE VIRTUAL TABLE ... USING fts5(content='a_view')`` makes a fixed
  ``SELECT`` on it run the view; ``trusted_schema = OFF`` still allows the FTS and R-tree modules, which SQLite
  marks innocuous) nor a shadow table of one (``x_data``, ``x_content``...). A view is a table that is not there; a
  virtual or shadow table named where a reader reads is refused in one line (``Schema.require_ordinary``).
  ``trusted_schema = OFF``: no function a schema names runs. The file is opened read-only and immutable, and
  queries are ``query_only``.
- **Take time.** The whole read is bounded: SQLite's progress handler looks at the clock every ``check_every``
  virtual-machine steps and interrupts past ``max_seconds``.
- **Take memory or disk.** Temporary storage (a sorter, DISTINCT's b-tree) is in memory (``temp_store = MEMORY``:
  never a file in /var/tmp, which a 40 KB file once made SQLite write at 110 MB/s for ten minutes); the page cache
  is ``cache_kib``; and SQLite's whole heap is capped (``hard_heap_limit``: the database's own bytes when it was
  inflated into memory, plus ``heap_bytes``), so an oversized sort fails with "out of memory", one line. One value
  is at most ``max_text_bytes`` (``SQLITE_LIMIT_LENGTH``); the file at most ``max_file_bytes``; SQLite itself holds
  a header's page count against the file's size ("malformed").
- **Lie about types.** SQLite is dynamically typed: ``integer`` and ``text`` give a value only where it has that
  type, never a conversion.

A gzipped database (``.sqlite.gz``) is inflated (``wizard.trace.read.inflate``, within ``gzip_bounds``) into memory
and handed to SQLite whole (``Connection.deserialize``): nothing is written to disk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from wizard.errors import InputFileError
from wizard.trace.read import inflate
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.source import open_input
from wizard.untrusted import cut, visible

SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_SCHEMA_ROWS = 100_000  # sqlite_master entries looked at (a real nsys export has ~60, rocpd ~40)
_VIRTUAL = re.compile(r"\s*create\s+virtual\s+table\s", re.I)
_MODULE = re.compile(r"\busing\s+([A-Za-z_][A-Za-z0-9_]*)", re.I)
# the shadow tables each built-in module keeps, by suffix (SQLite's xShadowName: fts5.c, fts3.c, rtree.c); a
# module not listed here is taken to shadow every ``<name>_<suffix>`` table, as SQLite cannot be asked
_SHADOWS = {
    "fts5": frozenset({"data", "idx", "content", "docsize", "config"}),
    "fts4": frozenset({"content", "segments", "segdir", "docsize", "stat"}),
    "fts3": frozenset({"content", "segments", "segdir", "docsize", "stat"}),
    "rtree": frozenset({"node", "rowid", "parent"}),
    "rtree_i32": frozenset({"node", "rowid", "parent"}),
    "geopoly": frozenset({"node", "rowid", "parent"}),
}


@dataclass(frozen=True, slots=True)
class SqliteBounds:
    """The bounds of one read of an untrusted database (tests shrink them)."""

    max_seconds: float = 600.0  # the whole read: a hostile schema cannot make it run for ever
    max_text_bytes: int = 1 << 20  # SQLite's own limit on one value's length while reading
    check_every: int = 100_000  # SQLite virtual-machine steps between two looks at the clock
    max_file_bytes: int = 64 << 30  # the database file (a 10M-kernel export is ~0.5 GB)
    cache_kib: int = 8 << 10  # SQLite's page cache, KiB
    heap_bytes: int = 2 << 30  # SQLite's heap beyond an in-memory database's own bytes: cache, sorter, temp b-trees
    gzip_bounds: inflate.GzipBounds = field(
        default_factory=lambda: inflate.GzipBounds(max_bytes=8 << 30, max_ratio=1100.0, ratio_floor=64 << 20)
    )
    clock: Callable[[], float] = time.monotonic


def integer(value: Any) -> int | None:
    """An integer column's value, or None where the file holds anything else (SQLite is dynamically typed)."""
    return value if type(value) is int else None


def text(value: Any, limit: int) -> str | None:
    """A text column's value, cut to ``limit`` characters, or None where the file holds anything else."""
    return value[:limit] if type(value) is str else None


def text_column(column: str, limit: int) -> str:
    """The SQL for a text column cut to ``limit`` characters by SQLite itself (anything but text is NULL), so a
    batch of rows never holds a megabyte's name whole (issue 47 items 1 and 7: 1,500 names of 1 MB took 1.5 GB
    a batch in an Nsight export, 2.9 GB in a rocpd one). ``column`` is a name this reader wrote, never the file's."""
    quoted = column.replace('"', '""')
    return f'CASE WHEN typeof("{quoted}") = \'text\' THEN substr("{quoted}", 1, {int(limit)}) END'


@dataclass(frozen=True, slots=True)
class Schema:
    """What the database declares: its ordinary tables (the only ones read), and the virtual tables and their
    shadow tables (never read), by name."""

    tables: frozenset[str]
    virtual: dict[str, str]  # name -> its module (fts5, rtree, ...)
    shadows: dict[str, str]  # name -> the virtual table it belongs to

    @property
    def names(self) -> frozenset[str]:
        """Every table's name, ordinary, virtual or shadow: what a format is recognised by (its reader then refuses
        a virtual table where it reads, rather than another reader misnaming the file)."""
        return self.tables | self.virtual.keys() | self.shadows.keys()

    def require_ordinary(self, path: Path | str, names: Iterator[str] | list[str] | tuple[str, ...]) -> None:
        """Refuse, in one line, a file where a table a reader reads is a virtual table or a shadow of one."""
        folded_virtual = {n.casefold(): (n, m) for n, m in self.virtual.items()}
        folded_shadow = {n.casefold(): (n, o) for n, o in self.shadows.items()}
        for name in names:
            if (found := folded_virtual.get(name.casefold())) is not None:
                raise InputFileError(
                    f"{path}: {cut(visible(found[0]), 80)} is a virtual table (USING {cut(visible(found[1]), 40)}), "
                    "not a table: only ordinary tables are read (a virtual table can run any query)"
                )
            if (shadow := folded_shadow.get(name.casefold())) is not None:
                raise InputFileError(
                    f"{path}: {cut(visible(shadow[0]), 80)} belongs to the virtual table "
                    f"{cut(visible(shadow[1]), 80)}, not a table of its own: only ordinary tables are read"
                )


def schema(db: sqlite3.Connection) -> Schema:
    """The database's tables, virtual tables and their shadows, from ``sqlite_master`` alone (reading it runs
    nothing the file declares)."""
    rows = db.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type = 'table' LIMIT ?", (MAX_SCHEMA_ROWS,)
    ).fetchall()
    virtual: dict[str, str] = {}
    ordinary: set[str] = set()
    for _, name, sql in rows:
        if not isinstance(name, str):
            continue
        if isinstance(sql, str) and _VIRTUAL.match(sql):
            module = _MODULE.search(sql)
            virtual[name] = module.group(1) if module else "?"
        else:
            ordinary.add(name)
    shadows = {name: owner for name in ordinary if (owner := _shadow_of(name, virtual)) is not None}
    return Schema(frozenset(ordinary - shadows.keys()), virtual, shadows)


def _shadow_of(name: str, virtual: dict[str, str]) -> str | None:
    """The virtual table ``name`` is a shadow table of, as SQLite decides it (``sqlite3ShadowTableName``): the part
    before the last ``_`` is a virtual table whose module keeps the part after it."""
    owner, _, suffix = name.rpartition("_")
    for vname, module in virtual.items():
        if owner and vname.casefold() == owner.casefold():
            kept = _SHADOWS.get(module.casefold())
            if kept is None or suffix.casefold() in kept:
                return vname
    return None


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    """An ordinary table's column names (``PRAGMA table_info`` on a table runs nothing)."""
    quoted = table.replace('"', '""')
    return {str(row[1]) for row in db.execute(f'PRAGMA table_info("{quoted}")')}


@dataclass
class Database:
    """An open untrusted database: the connection, its schema, and the bytes of the file (compressed ones for a
    gzipped file)."""

    db: sqlite3.Connection
    schema: Schema
    file_bytes: int
    compressed: bool
    _heap_before: int | None = None

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self._heap_before is not None:
                _heap_limit(self._heap_before)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_database(path: Path, opened: IO[bytes], bounds: SqliteBounds, what: str = "a SQLite database") -> Database:
    """The file as ``open_input`` opened it, as an untrusted database: by its descriptor for a plain file (SQLite
    reopens /dev/fd/N, the very file even if renamed since), inflated into memory for a gzipped one. Raises
    InputFileError (not a regular file, empty, too big, a gzip stream that is cut or too big) or
    sqlite3.DatabaseError (not a database, malformed), which the reader words. ``what``: the format, for a message."""
    info = os.fstat(opened.fileno())
    if not stat.S_ISREG(info.st_mode):  # SQLite would reopen a FIFO and block in C, deaf to every signal
        raise InputFileError(f"{path}: not a regular file; {what} is read in place, from a file")
    if not info.st_size:  # SQLite takes no bytes for an empty database: say what the other readers say
        raise InputFileError(f"{path}: the file is empty")
    if info.st_size > bounds.max_file_bytes:
        raise InputFileError(f"{path}: {info.st_size:,} bytes, over the {bounds.max_file_bytes:,} a database may be")
    compressed = opened.read(2) == inflate.GZIP_MAGIC
    opened.seek(0)
    before = _heap_limit(-1)
    if compressed:
        data = _inflated(path, opened, bounds)
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.deserialize(data)
        heap = len(data) + bounds.heap_bytes
        del data
    else:
        uri = f"file:{urllib.parse.quote(f'/dev/fd/{opened.fileno()}')}?mode=ro&immutable=1"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        heap = bounds.heap_bytes
    try:
        _harden(db, bounds)
        _heap_limit(heap if not before else min(before, heap))
        found = schema(db)
    except BaseException:
        db.close()
        _heap_limit(before)
        raise
    return Database(db, found, info.st_size, compressed, before)


def _inflated(path: Path, opened: IO[bytes], bounds: SqliteBounds) -> bytes:
    try:
        return inflate.inflate_all(opened.read, bounds.gzip_bounds)
    except inflate.GzipTooBig as exc:
        raise InputFileError(f"{path}: a gzipped database too big to unpack in memory: {exc}") from None
    except inflate.GzipError as exc:
        raise InputFileError(f"{path}: a gzipped database whose gzip stream is damaged or cut off ({exc})") from None


def _harden(db: sqlite3.Connection, bounds: SqliteBounds) -> None:
    db.execute("PRAGMA trusted_schema = OFF")  # no function a schema names runs
    db.execute("PRAGMA query_only = ON")
    db.execute("PRAGMA temp_store = MEMORY")  # a sorter never writes a file (bounded by the heap limit instead)
    db.execute(f"PRAGMA cache_size = {-int(bounds.cache_kib)}")
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, bounds.max_text_bytes)
    deadline = bounds.clock() + bounds.max_seconds
    db.set_progress_handler(lambda: 1 if bounds.clock() > deadline else 0, bounds.check_every)


def _pragma_heap_limit() -> int:
    probe = sqlite3.connect(":memory:")
    try:
        (value,) = probe.execute("PRAGMA hard_heap_limit").fetchone()
    finally:
        probe.close()
    return int(value)


@functools.cache
def _heap_setter() -> Callable[[int], int] | None:
    """``sqlite3_hard_heap_limit64`` of the very SQLite Python's sqlite3 runs on (its pragma can only lower the
    limit, never lift it after a read), checked by reading the limit back through the pragma; None where it cannot
    be reached (a SQLite linked into Python privately): the heap is then not capped, only the time is."""
    import _sqlite3

    for lib in (_sqlite3.__file__, "libsqlite3.so.0", ctypes.util.find_library("sqlite3")):
        try:
            setter = ctypes.CDLL(lib).sqlite3_hard_heap_limit64 if lib else None
        except (OSError, AttributeError):
            continue
        if setter is None:
            continue
        setter.restype, setter.argtypes = ctypes.c_int64, [ctypes.c_int64]
        before = int(setter(-1))
        setter(before + 4096 if before else 1 << 45)
        same = _pragma_heap_limit() == (before + 4096 if before else 1 << 45)
        setter(before)
        if same:
            return lambda n: int(setter(n))
    return None


def _heap_limit(limit: int) -> int:
    """SQLite's process-wide hard heap limit (0 is none): set to ``limit`` (unless negative: only read), returning
    the one before."""
    setter = _heap_setter()
    if setter is None:
        return _pragma_heap_limit()
    return setter(limit)


def database_error(path: Path, what: str, exc: sqlite3.DatabaseError | MemoryError) -> InputFileError:
    """One line for SQLite's refusal: not a database, malformed, out of the heap bound (SQLITE_NOMEM, which
    Python's sqlite3 raises as MemoryError), or past the time bound."""
    detail = str(exc)
    if "interrupt" in detail:
        detail = "took too long to read (over the time bound)"
    elif isinstance(exc, MemoryError) or "out of memory" in detail:
        detail = "took more memory than the bound on SQLite's heap (a hostile query, or an export too big)"
    return InputFileError(f"{path}: cannot read as {what}: {cut(visible(detail), 200)}")


# What a SQLite format's reader does with an opened database: the name it reads it as (for an error's one line)
# and the reader of the opened database (its contents, every pass's input).
Chooser = Callable[["Database"], tuple[str, Callable[[Path, "Database"], Any]]]


def database_contents(path: Path, found: Database, format_id: str) -> TraceContents:
    """The empty contents a SQLite format's reader fills: its path, layout, format and the bytes it read."""
    contents = TraceContents(path=str(path))
    contents.layout = "sqlite"
    contents.format = format_id
    contents.bytes_read = found.file_bytes
    contents.compressed = found.compressed
    return contents


def read_database_file(
    path: Path,
    choose: Chooser,
    *,
    what: str,
    config: SqliteBounds | None = None,
    on_read: Callable[[int], None] | None = None,
    opened: IO[bytes] | None = None,
) -> Any:
    """A SQLite file (or a gzipped one) opened as untrusted, read by the reader ``choose`` picks for it, and closed:
    the one open-read-close every SQLite format shares (Nsight Systems, rocpd, and a gzip that holds either), each
    failure one line naming the file and what it was read as. ``opened``: the file as ``open_input`` opened it."""
    own = None
    named = what
    try:
        if opened is None:
            opened = own = open_input(path)[0]
        with open_database(path, opened, config or SqliteBounds(), what) as found:
            named, reader = choose(found)
            contents = reader(path, found)
    except (sqlite3.DatabaseError, MemoryError) as exc:  # not a database, malformed, over the heap or time bound
        raise database_error(path, named, exc) from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        if own is not None:
            own.close()
    if on_read is not None:
        on_read(contents.bytes_read)
    return contents
