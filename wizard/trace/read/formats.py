"""The trace formats warpwizard reads: how each is recognised, who writes it, and what it cannot show.

A format is one row of ``FORMATS`` and one reader module. A file is recognised by its first bytes (content
first: a ``.json`` that is really an Nsight Systems export is read as one), its name only where the content
cannot say (a pipe, which cannot be looked into without consuming it). ``cannot_show`` names the health checks
whose problem the format cannot carry, with the reason the report gives (``not_applicable``), so no check
reports "ok" about something the file could never have shown.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from wizard.errors import InputFileError
from wizard.formatting import article
from wizard.trace.read.source import open_input

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 4096  # read to recognise a file (a gzip member's first inflated bytes come from far fewer)


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """One format the reader takes."""

    id: str  # the report's ``format``
    name: str  # for people
    writers: str  # who writes it
    suffixes: tuple[str, ...]  # names it usually has (a directory of traces lists these)
    rewritable: bool  # ``trace fix`` can write a corrected copy of it
    cannot_show: Mapping[str, str] = field(default_factory=dict)  # health check id -> why not
    # its reader, (path, on_read, the file open_input opened) -> TraceContents, importing its module only when such
    # a file is read; None: the Chrome-JSON walker of reader.py, which every other format's reader feeds the same
    # collector as
    read: Callable[[Path, Callable[[int], None] | None, IO[bytes] | None], Any] | None = None
    # whether a file's first bytes (``head``; ``cut``: the file goes on past them) are this format's: asked of
    # each row in ``FORMATS``' order, the first that says yes reads the file
    recognise: Callable[[bytes, bool], bool] | None = None

    @property
    def name_with_article(self) -> str:
        return f"{article(self.name)} {self.name}"


def _read_nsys(path: Path, on_read: Callable[[int], None] | None, opened: IO[bytes] | None) -> Any:
    from wizard.trace.read.nsys import read_nsys

    return read_nsys(path, on_read=on_read, opened=opened)


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
)
NSYS_SQLITE = TraceFormat(
    "nsys-sqlite",
    "Nsight Systems SQLite export",
    "NVIDIA Nsight Systems (`nsys export --type sqlite`, `nsys profile --export sqlite`)",
    (".sqlite",),
    rewritable=False,
    read=_read_nsys,
    cannot_show={
        "impossible-metrics": "Nsight Systems prints no blocks per SM, warps per SM or occupancy to check",
        "stacks-missing": "Nsight Systems records call stacks its own way (--backtrace), not as python_function events",
    },
    recognise=_sqlite,
)
PERFETTO_PROTO = TraceFormat(
    "perfetto-proto",
    "Perfetto protobuf trace",
    "PyTorch 2.15's Cuspy collector (`export_chrome_trace('x.pftrace')`), converters to TrackEvent",
    (".pftrace", ".pftrace.gz", ".perfetto-trace"),
    rewritable=False,
    read=_read_perfetto,
    recognise=_packets,
)
FORMATS: tuple[TraceFormat, ...] = (KINETO_JSON, NSYS_SQLITE, PERFETTO_PROTO)
BY_ID: dict[str, TraceFormat] = {f.id: f for f in FORMATS}


def is_trace_name(name: str) -> bool:
    """A file a directory of traces is expected to hold (a per-rank directory may mix formats)."""
    return any(name.endswith(suffix) for f in FORMATS for suffix in f.suffixes)


def trace_suffixes() -> list[str]:
    """The file names a directory of traces is searched for."""
    return [suffix for f in FORMATS for suffix in f.suffixes]


def _by_content(head: bytes, *, cut: bool) -> TraceFormat | None:
    """The format the first bytes say (the first row whose ``recognise`` says yes), or None when they say nothing
    known. ``cut``: the file goes on past them. Bytes that start like JSON but hold controls and are nothing else
    go to the JSON reader, whose error then says what they are."""
    for f in FORMATS:
        if f.recognise is not None and f.recognise(head, cut):
            return f
    return KINETO_JSON if _text(head)[:1] in (b"{", b"[") else None


def _inflated_head(head: bytes) -> tuple[bytes, bool]:
    """The first bytes a gzip member inflates to, and whether the member goes on past them (a damaged stream
    gives what came before the damage)."""
    inflater = zlib.decompressobj(31)
    try:
        inflated = inflater.decompress(head, HEAD_BYTES)
    except zlib.error:
        return b"", False
    return inflated, not inflater.eof


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
    if head.startswith(GZIP_MAGIC):
        inflated, cut = _inflated_head(head)
        found = _by_content(inflated, cut=cut)
        if found is NSYS_SQLITE:
            raise InputFileError(
                f"{path}: a gzip-compressed SQLite database; unpack it first (gunzip), a SQLite file is read in place"
            )
        return found or _by_name(path.name.removesuffix(".gz")) or KINETO_JSON
    return _by_content(head, cut=len(head) == HEAD_BYTES) or _by_name(path.name) or KINETO_JSON


def _by_name(name: str) -> TraceFormat | None:
    for f in FORMATS:
        if any(name.endswith(suffix) for suffix in f.suffixes):
            return f
    return None


def refuse_unwritable(name: str) -> None:
    """``trace fix`` on a format it cannot write back: one line, before anything is opened for writing."""
    fmt = detect(Path(name))
    if not fmt.rewritable:
        rewritable = ", ".join(f.name for f in FORMATS if f.rewritable)
        raise InputFileError(
            f"{name}: {fmt.name_with_article}; `trace fix` writes corrected copies of {rewritable} only "
            "(nothing was written)"
        )


def cannot_show(contents: Any) -> dict[str, str]:
    """The health checks this file cannot show, and why: its format's, then its writer's (Cuspy's .pftrace)."""
    return {**BY_ID[contents.format].cannot_show, **contents.cannot_show}
