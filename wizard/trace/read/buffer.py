"""The reader's window on a trace: decompressed bytes, a position, absolute offsets for messages."""

from __future__ import annotations

import time
from collections.abc import Callable

from wizard.errors import TraceReadError
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.scan import whitespace_end
from wizard.trace.read.source import TraceSource


class Buffer:
    """``buf[pos:]`` is what is still to be read; ``base`` is the file offset of ``buf[0]``.

    Whitespace is skipped at C speed and bounded: a run longer than ``max_whitespace`` bytes is
    refused (10 GB of blanks inside a gzip member once ran past three minutes), which bounds the
    work done per byte of real content.
    """

    def __init__(
        self,
        source: TraceSource,
        contents: TraceContents,
        block_size: int,
        max_whitespace: int,
        clock: dict[str, float],
        *,
        on_read: Callable[[int], None] | None = None,
    ) -> None:
        self.src = source
        self.on_read = on_read  # told the bytes of the file consumed (compressed ones for .gz) after each block
        self.contents = contents
        self.block_size = block_size
        self.max_whitespace = max_whitespace
        self.clock = clock
        self.buf = b""
        self.pos = 0
        self.base = 0

    @property
    def offset(self) -> int:
        return self.base + self.pos

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def fill(self, minimum: int = 0) -> bool:
        """Drop what was consumed and append the next block (``TraceSource.read_after``: from a plain file, the
        leftover read again with the block, else copied once in front of it)."""
        started = time.perf_counter()
        joined = self.src.read_after(self.buf, self.pos, max(minimum, self.block_size))
        self.clock["read_decompress_s"] += time.perf_counter() - started
        self.base += self.pos
        if joined is None:
            self.buf = self.buf[self.pos :] if self.pos else self.buf
            self.pos = 0
            return False
        self.buf = joined
        self.pos = 0
        self.contents.bytes_read = self.base + len(self.buf)
        if self.on_read is not None:
            self.on_read(self.src.consumed or self.contents.bytes_read)
        return True

    def skip_ws(self) -> bool:
        """Move past whitespace; False at the end of the input."""
        run = 0
        while True:
            end = whitespace_end(self.buf, self.pos)
            run += end - self.pos
            self.pos = end
            if run > self.max_whitespace:
                raise self.error(
                    f"{run >> 20} MB of whitespace in a row: refused (no profiler writes that; a damaged or "
                    "hostile file)"
                )
            if self.pos < len(self.buf):
                return True
            if not self.fill():
                return False

    def skip_separator(self) -> None:
        while self.skip_ws() and self.buf[self.pos] == ord(","):
            self.pos += 1

    def peek(self) -> int | None:
        return self.buf[self.pos] if self.skip_ws() else None

    def error(self, reason: str, offset: int | None = None) -> TraceReadError:
        return TraceReadError(str(self.contents.path), self.offset if offset is None else offset, reason)
