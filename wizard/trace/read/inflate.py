"""The one gzip inflater every reader uses (Chrome JSON, Perfetto protobuf, SQLite): members inflated as they are
read, never more than asked for, so a gzip bomb costs one chunk of memory, not gigabytes.

zlib is used directly rather than GzipFile, because GzipFile.read drops everything it inflated in a call that hits
a cut-off stream, and a crashed writer's trace is exactly the file that must be read up to the cut. Concatenated
members are read one after another (``gzip -c a >> b`` writes them). What a reader does at the end of the stream
differs, so the inflater reports it and the reader words it:

- **cut** (the input ends inside a member): what came before is returned first; the next read raises ``GzipCut``.
- **damaged** (zlib refuses a block): the same, with ``GzipDamaged``.
- **after the last member**, bytes that are not another member: an error (``strict``: a JSON trace's reader says
  "corrupt gzip data") or the end (padding some writers leave; the Perfetto reader's choice).

The output is bounded (``GzipBounds``) against the compressed input (a ratio, counted once past a floor) and in
all: a reader that keeps what it inflates (SQLite, which needs the whole database) passes a tight bound, a
streaming reader a generous one (its memory is one chunk whatever the size; its time is its read's time bound).
Deflate's own limit is 1032:1, so a ratio above that never fires on a single layer of gzip.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import msgspec

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20  # compressed bytes read at a time


class GzipBounds(msgspec.Struct, frozen=True, eq=False):
    """How much a gzip stream may inflate to: at most ``max_ratio`` times the compressed bytes read so far (once
    past ``ratio_floor`` inflated bytes, so a tiny file is never refused for its ratio), and ``max_bytes`` in all."""

    max_bytes: int = 1 << 40  # 1 TiB: a stream's time bound ends it long before
    max_ratio: float = 1100.0  # above deflate's 1032:1: a single layer of gzip never reaches it
    ratio_floor: int = 64 << 20


STREAMING = GzipBounds()


class GzipError(Exception):
    """The stream ended early; ``str()`` says how, in zlib's or this module's words."""


class GzipCut(GzipError):
    """The input ended inside a member."""


class GzipDamaged(GzipError):
    """zlib refused a block, or bytes after a member are not another member (``strict``). ``at``: the byte of the
    compressed file where zlib found it (the damage lies there or a little before: a block is checked as read)."""

    def __init__(self, reason: str, at: int | None = None) -> None:
        super().__init__(reason)
        self.at = at


class GzipTooBig(GzipError):
    """The output passed its bound (``GzipBounds``)."""


CUT_MESSAGE = "Compressed file ended before the end-of-stream marker was reached"


class Inflater:
    """Inflated bytes of a gzip stream read through ``read_raw`` (a file's ``read``, or a reader's own, which
    counts what it read). ``strict``: bytes after a member that are not a member are damage, not the end."""

    def __init__(
        self, read_raw: Callable[[int], bytes], bounds: GzipBounds = STREAMING, *, strict: bool = True
    ) -> None:
        self.read_raw = read_raw
        self.bounds = bounds
        self.strict = strict
        self.inflater = zlib.decompressobj(31)
        self.consumed = 0  # compressed bytes read
        self.produced = 0  # inflated bytes returned
        self.ended: GzipError | None = None  # why the stream ended early, raised at the next read
        self.done = False

    def read(self, size: int) -> bytes:
        """Up to ``size`` inflated bytes; b'' at the end. What came before a cut or damage is returned first; the
        next read raises it (``GzipCut``, ``GzipDamaged``, ``GzipTooBig``)."""
        if self.ended is not None and not self.done:
            self.done = True
            raise self.ended
        out: list[bytes] = []
        got = 0
        try:
            while got < size and self.ended is None:
                data = self._some(size - got)
                if data is None:
                    break
                out.append(data)
                got += len(data)
                self._bound(len(data))
        except zlib.error as exc:
            # every feed is the tail of what was read: zlib keeps the input it did not reach in unconsumed_tail
            self.ended = GzipDamaged(str(exc), self.consumed - len(self.inflater.unconsumed_tail))
        except GzipError as exc:
            self.ended = exc
        if not got and self.ended is not None and not self.done:
            self.done = True
            raise self.ended
        return b"".join(out)

    def _bound(self, more: int) -> None:
        self.produced += more
        b = self.bounds
        if self.produced > b.max_bytes:
            raise GzipTooBig(f"it inflates past {b.max_bytes:,} bytes")
        if self.produced > b.ratio_floor and self.produced > b.max_ratio * max(self.consumed, 1):
            raise GzipTooBig(
                f"it inflates to more than {b.max_ratio:g} times its compressed size "
                f"({self.produced:,} bytes from {self.consumed:,})"
            )

    def _raw(self, size: int) -> bytes:
        data = self.read_raw(size)
        self.consumed += len(data)
        return data

    def _some(self, size: int) -> bytes | None:
        """Some inflated bytes (possibly none yet), or None at the end of the last member."""
        inflater = self.inflater
        if inflater.eof:  # first: past a member's end, zlib leaves what follows in unconsumed_tail too
            rest = inflater.unused_data or self._raw(CHUNK)
            if not rest or (not self.strict and not rest.startswith(GZIP_MAGIC)):
                return None  # the end, or padding after the last member
            self.inflater = zlib.decompressobj(31)
            return self.inflater.decompress(rest, size)
        if inflater.unconsumed_tail:
            return inflater.decompress(inflater.unconsumed_tail, size)
        chunk = self._raw(CHUNK)
        if not chunk:
            raise GzipCut(CUT_MESSAGE)
        return inflater.decompress(chunk, size)


def damaged_words(exc: GzipDamaged, consumed: int) -> tuple[int, str]:
    """(the byte, the reason) every reader gives a damaged gzip stream: the byte of the compressed file where zlib
    found the damage (``consumed``, what was read, where it does not say), not how far ahead the reader had read."""
    at = consumed if exc.at is None else exc.at
    return at, f"corrupt gzip data, found at this byte of the compressed file (zlib: {exc})"


def nothing_read(*, compressed: bool, cut: bool, size: int) -> str:
    """What every reader says of a file that gave not one byte to read (the same bytes, the same words): empty, a
    gzip stream of nothing, or one cut off before its first byte of data (``size``: the bytes the file held)."""
    if cut:
        return (
            f"the gzip stream ends before its first byte of data ({size:,} bytes in all: cut off in its header or "
            "first block, not a whole .gz file)"
        )
    if compressed:
        return "the gzip stream inflates to nothing (an empty file, compressed)"
    return "the file is empty"


def head(data: bytes, size: int) -> tuple[bytes, bool]:
    """The first ``size`` bytes a gzip member's first bytes (``data``) inflate to, and whether the member goes on
    past them (a damaged stream gives what came before the damage): what a format is recognised by."""
    inflater = zlib.decompressobj(31)
    try:
        inflated = inflater.decompress(data, size)
    except zlib.error:
        return b"", False
    return inflated, not inflater.eof


def inflate_all(read_raw: Callable[[int], bytes], bounds: GzipBounds) -> bytes:
    """A whole gzip stream in memory, within ``bounds`` (for SQLite, which reads pages anywhere in its file).
    Raises ``GzipError`` on a cut, damage or the bound: a database cut short is no database."""
    inflater = Inflater(read_raw, bounds, strict=False)
    parts: list[bytes] = []
    while data := inflater.read(CHUNK * 4):
        parts.append(data)
    return b"".join(parts)
