"""Streaming reader for PyTorch profiler (Kineto) Chrome traces of any era and any size.

The trace is read in blocks; runs of whole events are cut at separators that contain a
newline (JSON strings cannot hold a raw newline, so such a cut is never inside a string)
and decoded by msgspec straight into small typed structs, skipping the fields nobody
needs. Anything the fast path cannot take (bare ``inf``/``nan`` tokens, a minified
file, a cut inside a nested array, the end of the array, a truncated file) falls back to
an exact, event-by-event decoder that reports the byte offset of any real error.
"""

from __future__ import annotations

import gc
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from wizard.errors import InputFileError, TraceReadError
from wizard.trace.collector import Collector, EventSink, TraceContents, Truncation
from wizard.trace.events import (
    BARE_MARK,
    BARE_TOKEN,
    EVENTS_DECODER,
    KERNEL_CATEGORIES,
    RAW_DECODER,
    Event,
    decode_block,
    event_from_dict,
    quote_bare,
    unmark_bare,
)
from wizard.trace.source import TraceSource
from wizard.trace.workers import PieceResult, decode_piece, decode_range

__all__ = [
    "KERNEL_CATEGORIES",
    "EventSink",
    "TraceContents",
    "Truncation",
    "iter_trace_files",
    "parse_into",
    "read_trace",
    "unmark_bare",
]


class ParallelFallback(Exception):
    """A block needs the exact decoder, which runs in order: read the file sequentially instead."""


BLOCK_SIZE = 8 << 20
_MAX_EVENT_BYTES = 256 << 20

# `}` ws `,` ws `{` where the whitespace holds a newline: always between two objects.
_BOUNDARY = re.compile(rb"\}[ \t\r]*(?:\n[ \t\r\n]*,|,[ \t\r]*\n)[ \t\r\n]*\{")


class _Parser:
    """The top-level walk: object keys or a bare array, then the event stream."""

    def __init__(self, source: TraceSource, contents: TraceContents, collector: EventSink) -> None:
        self.src = source
        self.c = contents
        self.collect = collector
        self.buf = b""
        self.pos = 0
        self.base = 0  # absolute offset of buf[0]
        self.decoder = json.JSONDecoder()
        self.pool: Executor | None = None
        self.in_flight = 4
        self.pending: deque[Future[PieceResult | None]] = deque()
        self.on_progress: Callable[[TraceContents], None] | None = None
        self.clock: dict[str, float] = {
            "read_decompress_s": 0.0,
            "scan_s": 0.0,
            "decode_s": 0.0,
            "collect_s": 0.0,
            "exact_path_s": 0.0,
        }

    # -- buffer -------------------------------------------------------------------------
    def _fill(self, minimum: int = BLOCK_SIZE) -> bool:
        """Drop what was consumed and append the next block (the leftover is copied once)."""
        started = time.perf_counter()
        data = self.src.read(max(minimum, BLOCK_SIZE))
        self.clock["read_decompress_s"] += time.perf_counter() - started
        self.base += self.pos
        self.buf = self.buf[self.pos :] + data if self.pos else self.buf + data
        self.pos = 0
        if not data:
            return False
        self.c.bytes_read = self.base + len(self.buf)
        return True

    def _skip_ws(self) -> bool:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in b" \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self._fill():
                return False

    def _skip_separator(self) -> None:
        while self._skip_ws() and self.buf[self.pos] == ord(","):
            self.pos += 1

    def _peek(self) -> int | None:
        return self.buf[self.pos] if self._skip_ws() else None

    def _offset(self) -> int:
        return self.base + self.pos

    def _error(self, reason: str, offset: int | None = None) -> TraceReadError:
        return TraceReadError(str(self.c.path), self._offset() if offset is None else offset, reason)

    def _exact_value(self) -> Any:
        """One JSON value at pos, read whole (used for small top-level values)."""
        self._skip_ws()
        window = 1 << 16
        while True:
            text = self.buf[self.pos : self.pos + window].decode("utf-8", "surrogateescape")
            substituted = BARE_TOKEN.sub(quote_bare, text)
            try:
                value, end = self.decoder.raw_decode(substituted)
            except json.JSONDecodeError as exc:
                if self.pos + window < len(self.buf):
                    window *= 8
                    continue
                if self.src.eof or len(self.buf) - self.pos > _MAX_EVENT_BYTES:
                    if self.src.eof and exc.pos >= len(substituted) - 1:
                        raise self._error("the file ends inside a top-level value (truncated)") from None
                    raise self._error(f"invalid JSON ({exc.msg})", self._offset() + _byte_len(text, exc.pos)) from None
                self._fill()
                continue
            if substituted is not text:
                end = _unsubstituted_end(text, substituted, end)
            self.pos += _byte_len(text, end)
            return value

    # -- top level ----------------------------------------------------------------------
    def run(self) -> None:
        if not self._fill():
            raise InputFileError(f"{self.c.path}: the file is empty")
        if self.buf.startswith(b"\xef\xbb\xbf"):
            self.pos = 3
        first = self._peek()
        if first == ord("["):
            self.c.layout = "array"
            self.pos += 1
            self.collect.events_start()
            if self._events():
                self.collect.events_end()
            return
        if first != ord("{"):
            raise self._error("not a profiler trace: expected '{' or '[' at the start")
        self.pos += 1
        while True:
            ch = self._peek()
            if ch is None:
                self._truncated_top_level()
                return
            if ch == ord("}"):
                self.pos += 1
                return
            if ch == ord(","):
                self.pos += 1
                continue
            if ch != ord('"'):
                raise self._error(f"expected a key, found {chr(ch)!r}")
            key = self._exact_value()
            if self._peek() != ord(":"):
                if self.src.eof:
                    self._truncated_top_level()
                    return
                raise self._error(f"expected ':' after key {key!r}")
            self.pos += 1
            if key == "traceEvents":
                if self._peek() != ord("["):
                    raise self._error("'traceEvents' is not an array")
                self.pos += 1
                self.collect.events_start()
                if not self._events():
                    return
                self.collect.events_end()
            else:
                value = self._exact_value()
                self.c.metadata[str(key)] = value
                self.collect.meta(str(key), value)

    def _truncated_top_level(self) -> None:
        if self.c.truncation is None:
            self.c.truncation = Truncation(
                self._offset(),
                0,
                self.c.last_ts,
                "the file ends before the closing '}' of the trace object; every event was read",
            )

    # -- events -------------------------------------------------------------------------
    def _events(self) -> bool:
        """Read the event array; True when its closing ']' was found."""
        while True:
            if len(self.buf) - self.pos < BLOCK_SIZE and not self.src.eof:
                self._fill()
            window = self.buf
            started = time.perf_counter()
            limit = self.pos + PARALLEL_BLOCK if self.pool is not None else None
            cut = _last_boundary(window, self.pos, limit)
            if cut is None and limit is not None:
                cut = _last_boundary(window, self.pos)
            self.clock["scan_s"] += time.perf_counter() - started
            if cut is None:
                room = len(self.buf) - self.pos < _MAX_EVENT_BYTES
                if not self.src.eof and room and self._fill(len(self.buf) - self.pos + BLOCK_SIZE):
                    continue
                self._drain()
                return self._exact_events(until_end=True)
            piece = window[self.pos : cut + 1]
            if self.pool is not None:
                if self.src.compressed:
                    job = self.pool.submit(decode_piece, piece)
                else:  # the worker reads its own bytes: nothing crosses a pipe but two offsets
                    start = self.base + self.pos
                    job = self.pool.submit(decode_range, str(self.src.path), start, start + len(piece))
                self.pending.append(job)
                if len(self.pending) > self.in_flight:
                    self._merge_next()
                self.pos = _next_object(window, cut)
            elif self._fast(piece):
                self.pos = _next_object(window, cut)
            else:
                # Event by event; this may run past the cut when the cut was inside a nested array.
                self._exact_events(until_end=False, stop_at=self.base + cut + 1)
                self._skip_separator()

    def _merge_next(self) -> None:
        started = time.perf_counter()
        part = self.pending.popleft().result()
        self.clock["decode_s"] += time.perf_counter() - started  # waiting on workers
        if part is None:
            raise ParallelFallback
        merged = time.perf_counter()
        assert isinstance(self.collect, Collector)
        self.collect.merge(part)
        self.clock["collect_s"] += time.perf_counter() - merged
        if self.on_progress is not None:
            self.on_progress(self.c)

    def _drain(self) -> None:
        while self.pending:
            self._merge_next()

    def _fast(self, piece: bytes) -> bool:
        if self.collect.wants_raw:
            return self._fast_raw(piece)
        started = time.perf_counter()
        events = decode_block(EVENTS_DECODER, piece)
        if events is None:
            self.clock["decode_s"] += time.perf_counter() - started
            return False
        decoded = time.perf_counter()
        self.clock["decode_s"] += decoded - started
        self.collect.add(events)
        self.clock["collect_s"] += time.perf_counter() - decoded
        return True

    def _deliver(self, batch: list[Event], raw_batch: list[bytes]) -> None:
        if self.collect.wants_raw:
            self.collect.add_raw(raw_batch)
        else:
            self.collect.add(batch)

    def _fast_raw(self, piece: bytes) -> bool:
        raws = decode_block(RAW_DECODER, piece)
        if raws is None:
            return False
        self.collect.add_raw([bytes(r) for r in raws])
        return True

    def _exact_events(self, *, until_end: bool, stop_at: int | None = None) -> bool:
        """Event by event from pos; stops at ']' (True), at ``stop_at``, or at a truncated end."""
        self._drain()
        started = time.perf_counter()
        try:
            return self._exact_events_timed(until_end=until_end, stop_at=stop_at)
        finally:
            self.clock["exact_path_s"] += time.perf_counter() - started

    def _exact_events_timed(self, *, until_end: bool, stop_at: int | None = None) -> bool:
        while True:
            text = self.buf[self.pos :].decode("utf-8", "surrogateescape")
            substituted = BARE_TOKEN.sub(quote_bare, text)
            i = 0
            n = len(substituted)
            stop_index = n + 1
            if stop_at is not None:
                stop_chars = len(self.buf[self.pos : stop_at - self.base].decode("utf-8", "surrogateescape"))
                stop_index = _substituted_index(text, substituted, stop_chars)
            batch: list[Event] = []
            raw_batch: list[bytes] = []
            raw_mode = self.collect.wants_raw
            ended = False
            need_more = False
            while True:
                while i < n and substituted[i] in " \t\r\n,":
                    i += 1
                if i >= stop_index:
                    break
                if i >= n:
                    need_more = True
                    break
                if substituted[i] == "]":
                    i += 1
                    ended = True
                    break
                try:
                    obj, j = self.decoder.raw_decode(substituted, i)
                except json.JSONDecodeError as exc:
                    if not self.src.eof and n - i < _MAX_EVENT_BYTES:
                        need_more = True
                        break
                    start = self._offset() + _byte_len_sub(text, substituted, i)
                    if self.src.eof and _looks_truncated(substituted, i, exc):
                        self._deliver(batch, raw_batch)
                        partial = self.base + len(self.buf) - start
                        self.c.truncation = Truncation(
                            start,
                            partial,
                            self.c.last_ts,
                            f"the file ends inside an event at byte {start}: {partial} byte(s) of a partial "
                            "event were dropped, and the end of the event list (and any keys after it, "
                            "such as deviceProperties) is missing",
                        )
                        self.pos = len(self.buf)
                        return False
                    where = self._offset() + _byte_len_sub(text, substituted, exc.pos)
                    raise self._error(f"invalid JSON in traceEvents ({exc.msg})", where) from None
                if raw_mode:
                    raw_batch.append(substituted[i:j].encode("utf-8", "surrogateescape"))
                else:
                    event = event_from_dict(obj)
                    if event is not None:
                        batch.append(event)
                i = j
            self._deliver(batch, raw_batch)
            self.pos += _byte_len_sub(text, substituted, i)
            if ended:
                return True
            if stop_at is not None and not need_more:
                return False
            if need_more:
                if not self._fill(len(self.buf) - self.pos + BLOCK_SIZE):
                    if self.pos >= len(self.buf):
                        self.c.truncation = Truncation(
                            self._offset(),
                            0,
                            self.c.last_ts,
                            "the file ends after a complete event but before the event list was closed; "
                            "no event was lost, but any keys after the list (such as deviceProperties) are missing",
                        )
                        return False
                    continue
                if not until_end and stop_at is None:
                    return False


def _looks_truncated(text: str, start: int, exc: json.JSONDecodeError) -> bool:
    """An error at the very end of the data, not in the middle of it."""
    return exc.pos >= len(text.rstrip()) - 1 or text.find("}", exc.pos) == -1


def _byte_len(text: str, chars: int) -> int:
    return len(text[:chars].encode("utf-8", "surrogateescape"))


def _byte_len_sub(original: str, substituted: str, index: int) -> int:
    """Bytes of ``original`` before ``index`` of its bare-token-quoted copy."""
    if original is substituted:
        return _byte_len(original, index)
    return _byte_len(original, _unsubstituted_end(original, substituted, index))


def _substituted_index(original: str, substituted: str, index: int) -> int:
    """Map an index in the original text forward into its bare-token-quoted copy."""
    if original is substituted:
        return index
    added = len(BARE_MARK) + 2
    return index + added * sum(1 for m in BARE_TOKEN.finditer(original, 0, index))


def _unsubstituted_end(original: str, substituted: str, index: int) -> int:
    """Map an index in the substituted text back to the original text."""
    extra = 0
    for match in BARE_TOKEN.finditer(original):
        new_start = match.start() + extra
        if new_start >= index:
            break
        added = len(BARE_MARK) + 2
        if index < new_start + len(match.group(0)) + added:
            return match.start()
        extra += added
    return index - extra


def _last_boundary(buf: bytes, start: int, limit: int | None = None) -> int | None:
    """Index of the '}' of the last event boundary in buf[start:limit], or None."""
    end = len(buf) if limit is None else min(limit, len(buf))
    span = 1 << 16
    while True:
        lo = max(start, end - span)
        last = None
        for match in _BOUNDARY.finditer(buf, lo, end):
            last = match
        if last is not None:
            return last.start()
        if lo == start:
            return None
        span *= 8


def _next_object(buf: bytes, cut: int) -> int:
    """Position of the '{' that follows the boundary at ``cut``."""
    match = _BOUNDARY.match(buf, cut)
    assert match is not None
    return match.end() - 1


def parse_into(path: str | Path, sink: EventSink) -> TraceContents:
    """Stream a trace into any sink (the fixer uses this with a raw sink)."""
    p = Path(path)
    contents = TraceContents(path=str(p))
    source = TraceSource(p)
    contents.compressed = source.compressed
    try:
        _Parser(source, contents, sink).run()
    finally:
        source.close()
    return contents


PARALLEL_MIN_BYTES = 96 << 20
PARALLEL_BLOCK = 4 << 20  # smaller blocks keep each worker's peak memory low


def _parallel_workers(path: Path) -> int:
    """Worker processes for one big file: the cores, unless nested, tiny, or told otherwise."""
    import multiprocessing
    import os

    wanted = os.environ.get("WARPWIZARD_JOBS")
    cores = int(wanted) if wanted and wanted.isdigit() else (os.cpu_count() or 1)
    if cores < 2 or multiprocessing.parent_process() is not None:
        return 0
    size = path.stat().st_size
    compressed = path.name.endswith(".gz")
    return cores if size * (8 if compressed else 1) >= PARALLEL_MIN_BYTES else 0


def _read(p: Path, workers: int, on_progress: Callable[[TraceContents], None] | None = None) -> TraceContents:
    contents = TraceContents(path=str(p))
    try:
        source = TraceSource(p)
    except OSError as exc:
        raise InputFileError(f"{p}: cannot open ({exc.strerror})") from None
    contents.compressed = source.compressed
    parser = _Parser(source, contents, Collector(contents))
    # Millions of short-lived records would trigger the cyclic GC over and over (it was two
    # thirds of decode time); nothing built here is cyclic, so pause it while reading.
    was_enabled = gc.isenabled()
    gc.disable()
    pool = None
    try:
        if workers:
            import multiprocessing

            pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
            parser.pool = pool
            parser.in_flight = workers + 1
            parser.on_progress = on_progress
        parser.run()
        parser._drain()
    except RecursionError:
        raise TraceReadError(str(p), contents.bytes_read, "nesting too deep to be a profiler trace") from None
    finally:
        source.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if was_enabled:
            gc.enable()
    contents.timing.update({k: round(v, 4) for k, v in parser.clock.items()})
    contents.timing["workers"] = workers
    if source.stream_truncated and contents.truncation is None:
        contents.truncation = Truncation(
            contents.bytes_read,
            0,
            contents.last_ts,
            "the gzip stream is cut off; everything up to the cut was read",
        )
    elif source.stream_truncated and contents.truncation is not None:
        contents.truncation.detail += " (the gzip stream itself is cut off)"
    return contents


def read_trace(path: str | Path, on_progress: Callable[[TraceContents], None] | None = None) -> TraceContents:
    """Read one trace file (``.json`` or ``.json.gz``) into compact records.

    Big files are decoded by worker processes block by block and merged in file order;
    any block that needs the exact decoder sends the whole file down the sequential path,
    so both paths give the same result.
    """
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{p}: no such file")
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory (use read_traces for per-rank directories)")
    workers = _parallel_workers(p)
    if workers:
        try:
            return _read(p, workers, on_progress)
        except ParallelFallback:
            pass
    return _read(p, 0)


def iter_trace_files(paths: list[str]) -> Iterator[Path]:
    """Expand directories (as tensorboard_trace_handler writes them) into their trace files."""
    for name in paths:
        p = Path(name)
        if p.is_dir():
            found = sorted(
                f for f in p.iterdir() if f.is_file() and (f.name.endswith(".json") or f.name.endswith(".json.gz"))
            )
            if not found:
                raise InputFileError(f"{p}: directory holds no .json or .json.gz trace")
            yield from found
        else:
            yield p
