"""The trace formats warpwizard reads: how each is recognised, who writes it, and what it cannot show.

A format is one row of ``FORMATS`` and one reader module. A file is recognised by its first bytes (content
first: a ``.json`` that is really an Nsight Systems export is read as one), its name only where the content
cannot say (a pipe, which cannot be looked into without consuming it). The rows are asked in the order of their
declared ``priority`` (highest first), never in the table's order. Where two formats share a container, a
second look at the opened file decides, as Perfetto's trace processor separates detection from the formats:

- **gzip** is a container: what its first bytes inflate to is handed back to detection (a ``.json.gz``, a
  ``.pftrace.gz``); a gzipped SQLite database is read by ``SQLITE_GZ``, which inflates it (bounded) and takes the
  second look below on what it holds.
- **SQLite** holds several formats: the tables decide (``tables``: Nsight Systems' ``StringIds`` /
  ``META_DATA_EXPORT``; rocpd's ``rocpd_kernel_dispatch<uuid>``), asked by priority; a database that is neither
  goes to the highest, whose reader says what it is not.

``cannot_show`` names the health checks whose problem the format cannot carry, with the reason the report gives
(``not_applicable``), so no check reports "ok" about something the file could never have shown.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import msgspec

from wizard.errors import InputFileError, UsageError
from wizard.formatting import article
from wizard.trace.read import inflate
from wizard.trace.read.source import open_input

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = inflate.GZIP_MAGIC
HEAD_BYTES = 4096  # read to recognise a file (a gzip member's first inflated bytes come from far fewer)


class TraceFormat(msgspec.Struct, frozen=True, eq=False):
    """One format the reader takes."""

    id: str  # the report's ``format``
    name: str  # for people
    writers: str  # who writes it
    suffixes: tuple[str, ...]  # names it usually has (a directory of traces lists these)
    rewritable: bool  # ``trace fix`` can write a corrected copy of it
    cannot_show: Mapping[str, str] = msgspec.field(default_factory=dict)  # health check id -> why not
    # its reader, (path, on_read, the file open_input opened) -> TraceContents, importing its module only when such
    # a file is read; None: the Chrome-JSON walker of reader.py, which every other format's reader feeds the same
    # collector as
    read: Callable[[Path, Callable[[int], None] | None, IO[bytes] | None], Any] | None = None
    # whether a file's first bytes (``head``; ``cut``: the file goes on past them) are this format's: asked of
    # each row by ``priority``, highest first; the first that says yes reads the file
    recognise: Callable[[bytes, bool], bool] | None = None
    priority: int = 0  # the order rows are asked in (by content, then by tables), highest first
    container: str = ""  # the container it shares with other formats ("sqlite"): a second look decides
    # the second look, for a SQLite format: whether a database's (ordinary) tables are this format's
    tables: Callable[[frozenset[str]], bool] | None = None
    # its reader of an open database (``wizard.trace.read.sqlite.Database``): (path, database) -> TraceContents
    read_database: Callable[[Path, Any], Any] | None = None

    @property
    def name_with_article(self) -> str:
        return f"{article(self.name)} {self.name}"


def _read_nsys(path: Path, on_read: Callable[[int], None] | None, opened: IO[bytes] | None) -> Any:
    from wizard.trace.read.nsys import read_nsys

    return read_nsys(path, on_read=on_read, opened=opened)


def _nsys_tables(tables: frozenset[str]) -> bool:
    from wizard.trace.read.nsys import is_export

    return is_export(tables)


def _nsys_database(path: Path, found: Any) -> Any:
    from wizard.trace.read.nsys import read_database

    return read_database(path, found)


def _read_rocpd(path: Path, on_read: Callable[[int], None] | None, opened: IO[bytes] | None) -> Any:
    from wizard.trace.read.rocpd import read_rocpd

    return read_rocpd(path, on_read=on_read, opened=opened)


def _rocpd_tables(tables: frozenset[str]) -> bool:
    from wizard.trace.read.rocpd import is_rocpd

    return is_rocpd(tables)


def _rocpd_database(path: Path, found: Any) -> Any:
    from wizard.trace.read.rocpd import read_database

    return read_database(path, found)


def _read_perfetto(path: Path, on_read: Callable[[int], None] | None, opened: IO[bytes] | None) -> Any:
    from wizard.trace.read.perfetto import read_perfetto

    return read_perfetto(path, on_read=on_read, opened=opened)


def _text(head: bytes) -> bytes:
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")


def _is_text(head: bytes) -> bool:
    """No byte a text file never holds (controls other than tab, newline, carriage return): a protobuf packet's
    tags and lengths are such bytes, a JSON file has none."""
    return not any(b < 0x09 or 0x0B <= b < 0x0D or 0x0E <= b < 0x20 for b in head[:512])


def _json(head: bytes, cut: bool) -> bool:
    """An object or an array, in text: a packet's first tag (0x0a) is also a newline, so bytes that are not text
    are asked of the later rows first, and so is text that starts with a newline and decodes as packets (a first
    packet 91 bytes long has the length byte ``[``, and its tags and values can all be text bytes)."""
    if _text(head)[:1] not in (b"{", b"[") or not _is_text(head):
        return False
    return head[:1] != b"\x0a" or not _packets(head, cut)


def _sqlite(head: bytes, cut: bool) -> bool:
    return head.startswith(SQLITE_MAGIC)


def _packets(head: bytes, cut: bool) -> bool:
    """A Perfetto trace is a protobuf ``Trace``: repeated field 1 (``packet``), length-delimited; the packet
    itself is decoded before the bytes are taken for anything else."""
    from wizard.trace.read.perfetto import looks_like_packets

    return bool(looks_like_packets(head, cut=cut))


KINETO_JSON = TraceFormat(
    "kineto-json",
    "Chrome trace JSON",
    "the PyTorch profiler (Kineto), and tools that write its format",
    (".json", ".json.gz"),
    rewritable=True,
    recognise=_json,
    priority=30,  # before the protobuf reader: its own recogniser asks the packets where text could be both
)
NSYS_SQLITE = TraceFormat(
    "nsys-sqlite",
    "Nsight Systems SQLite export",
    "NVIDIA Nsight Systems (`nsys export --type sqlite`, `nsys profile --export sqlite`)",
    (".sqlite", ".sqlite.gz"),
    rewritable=False,
    read=_read_nsys,
    cannot_show={
        "impossible-metrics": "Nsight Systems prints no blocks per SM, warps per SM or occupancy to check",
        "stacks-missing": "Nsight Systems records call stacks its own way (--backtrace), not as python_function events",
    },
    recognise=_sqlite,
    priority=20,  # of the SQLite formats, asked first; a database of no known tables goes to its reader
    container="sqlite",
    tables=_nsys_tables,
    read_database=_nsys_database,
)
_ROCPD_KERNELS_ONLY = "this rocpd reader reads the kernels only, not the HIP API calls (rocpd_region) that launch them"
ROCPD_SQLITE = TraceFormat(
    "rocpd-sqlite",
    "rocpd database",
    "AMD rocprofiler-sdk (`rocprofv3 --output-format rocpd`, ROCm 7)",
    (".db", ".rocpd"),
    rewritable=False,
    read=_read_rocpd,
    cannot_show={
        "impossible-metrics": "rocpd prints no blocks per SM, warps per SM or occupancy to check",
        "stacks-missing": "rocpd records no python_function events",
        "kernels-missing": _ROCPD_KERNELS_ONLY,
        "unlinked-kernels": _ROCPD_KERNELS_ONLY,
        "graph-launches": _ROCPD_KERNELS_ONLY,
        "summary-table": _ROCPD_KERNELS_ONLY,
        "profiler-overhead": "this rocpd reader reads no profiler-overhead records",
    },
    recognise=_sqlite,
    priority=10,
    container="sqlite",
    tables=_rocpd_tables,
    read_database=_rocpd_database,
)
PERFETTO_PROTO = TraceFormat(
    "perfetto-proto",
    "Perfetto protobuf trace",
    "PyTorch 2.15's Cuspy collector (`export_chrome_trace('x.pftrace')`), converters to TrackEvent",
    (".pftrace", ".pftrace.gz", ".perfetto-trace"),
    rewritable=False,
    read=_read_perfetto,
    recognise=_packets,
    priority=0,
)
FORMATS: tuple[TraceFormat, ...] = (KINETO_JSON, NSYS_SQLITE, ROCPD_SQLITE, PERFETTO_PROTO)
BY_ID: dict[str, TraceFormat] = {f.id: f for f in FORMATS}
BY_PRIORITY: tuple[TraceFormat, ...] = tuple(sorted(FORMATS, key=lambda f: -f.priority))


def _read_sqlite_gz(path: Path, on_read: Callable[[int], None] | None, opened: IO[bytes] | None) -> Any:
    """A gzipped SQLite database: inflated (bounded) and read by the SQLite format its tables say."""
    from wizard.trace.read.sqlite import read_database_file

    def choose(found: Any) -> tuple[str, Callable[[Path, Any], Any]]:
        fmt = by_tables(found.schema.names)
        assert fmt.read_database is not None
        return fmt.name_with_article, fmt.read_database

    return read_database_file(path, choose, what="a gzipped SQLite database", on_read=on_read, opened=opened)


# A container, not a format of its own (the report names what it holds): a gzipped SQLite database, inflated into
# memory and handed to the SQLite format its tables say
SQLITE_GZ = TraceFormat(
    "sqlite-gz",
    "gzip-compressed SQLite database",
    "gzip over an Nsight Systems export or a rocpd database",
    (".sqlite.gz",),
    rewritable=False,
    read=_read_sqlite_gz,
    container="sqlite",
)


def by_tables(tables: frozenset[str]) -> TraceFormat:
    """The SQLite format a database's tables say (by priority); the highest when none (its reader says why not)."""
    sqlite_formats = [f for f in BY_PRIORITY if f.container == "sqlite" and f.tables is not None]
    for f in sqlite_formats:
        assert f.tables is not None
        if f.tables(tables):
            return f
    return sqlite_formats[0]


def is_trace_name(name: str) -> bool:
    """A file a directory of traces is expected to hold (a per-rank directory may mix formats)."""
    return any(name.endswith(suffix) for f in FORMATS for suffix in f.suffixes)


def trace_suffixes() -> list[str]:
    """The file names a directory of traces is searched for."""
    return [suffix for f in FORMATS for suffix in f.suffixes]


def _by_content(head: bytes, *, cut: bool) -> TraceFormat | None:
    """The format the first bytes say (the first row, by priority, whose ``recognise`` says yes), or None when they
    say nothing known. ``cut``: the file goes on past them. Bytes that start like JSON but hold controls and are
    nothing else go to the JSON reader, whose error then says what they are."""
    for f in BY_PRIORITY:
        if f.recognise is not None and f.recognise(head, cut):
            return f
    return KINETO_JSON if _text(head)[:1] in (b"{", b"[") else None


def by_content(head: bytes, *, cut: bool) -> TraceFormat | None:
    """The format a file's first bytes say, or None (what a command that reads no trace asks to name one it was
    given: ``compare``)."""
    return _by_content(head, cut=cut)


def detect(path: Path) -> TraceFormat:
    """The format of ``path``: by its first bytes for a regular file, by its name for a pipe. JSON when
    nothing tells (the JSON reader's error then says what the bytes are). A reader that goes on to read the
    file opens it once and asks ``detect_opened``."""
    try:
        info = os.stat(path)
    except OSError:
        return KINETO_JSON  # the reader's open says why it cannot be read
    if not stat.S_ISREG(info.st_mode):
        return _by_name(path.name) or KINETO_JSON
    try:
        fh, regular = open_input(path)
    except InputFileError:
        return KINETO_JSON
    with fh:
        return detect_opened(path, fh, regular)


def detect_opened(path: Path, fh: IO[bytes], regular: bool) -> TraceFormat:
    """``detect`` on the file as ``open_input`` opened it (at its start, left there): a regular file by its
    first bytes, a pipe by its name (its bytes cannot be looked at without consuming them)."""
    if not regular:
        return _by_name(path.name) or KINETO_JSON
    try:
        head = fh.read(HEAD_BYTES)
        fh.seek(0)
    except OSError:
        return KINETO_JSON
    if head.startswith(GZIP_MAGIC):  # a container: what it holds goes back to detection
        inflated, cut = inflate.head(head, HEAD_BYTES)
        found = _by_content(inflated, cut=cut)
        if found is not None and found.container == "sqlite":
            return SQLITE_GZ  # its reader inflates the database and takes the second look
        return found or _by_name(path.name.removesuffix(".gz")) or KINETO_JSON
    found = _by_content(head, cut=len(head) == HEAD_BYTES)
    if found is not None and found.container == "sqlite":
        return _second_look(path, fh)
    return found or _by_name(path.name) or KINETO_JSON


def _second_look(path: Path, fh: IO[bytes]) -> TraceFormat:
    """The SQLite format a database's tables say; the highest-priority one where SQLite cannot read them (its
    reader then says why, in one line)."""
    import sqlite3

    from wizard.trace.read.sqlite import SqliteBounds, open_database

    try:
        with open_database(path, fh, SqliteBounds(max_seconds=60.0)) as found:
            return by_tables(found.schema.names)
    except (sqlite3.DatabaseError, InputFileError, OSError):
        return by_tables(frozenset())
    finally:
        fh.seek(0)


def _by_name(name: str) -> TraceFormat | None:
    if name.endswith(".sqlite.gz"):
        return SQLITE_GZ
    for f in BY_PRIORITY:
        if any(name.endswith(suffix) for suffix in f.suffixes):
            return f
    return None


def refuse_unwritable(name: str) -> None:
    """``trace fix`` on a format it cannot write back: one line, before anything is opened for writing. A usage
    error (exit 2), not an unreadable input (6): the file reads (``trace inspect`` takes it); the command does not
    take its format."""
    fmt = detect(Path(name))
    if not fmt.rewritable:
        takes = [f for f in FORMATS if f.rewritable]
        rewritable = ", ".join(f.name for f in takes)
        suffixes = ", ".join(suffix for f in takes for suffix in f.suffixes)
        raise UsageError(
            f"{name}: {fmt.name_with_article}; `trace fix` writes corrected copies of {rewritable} only ({suffixes}; "
            "nothing was written; `trace inspect` reads this file)"
        )


def cannot_show(contents: Any) -> dict[str, str]:
    """The health checks this file cannot show, and why: its format's, then its writer's (Cuspy's .pftrace)."""
    return {**BY_ID[contents.format].cannot_show, **contents.cannot_show}
