"""Streaming reader for PyTorch profiler (Kineto) Chrome traces of any era, size and layout.

The walk: the top-level object's keys (or PyTorch 1.8's bare array), then the event list, read
in blocks. Each block is cut after the last event that ends in it (``scan.find_cut``: one event
per line, minified or indented alike, never inside a string) and decoded by msgspec straight into
small typed structs, in worker processes for big files (``parallel``). Anything the fast path
cannot take goes to the exact decoder (``exact``), which knows byte offsets and truncation.

Jobs: ``source`` inflates, ``buffer`` holds the window, ``scan`` finds cuts, ``exact`` and
``parallel`` decode, ``collector`` keeps what the analysis needs; this module only walks.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgspec

from wizard import schemas
from wizard.errors import InputFileError, TraceReadError
from wizard.file_ends import opened_ends
from wizard.formatting import plural
from wizard.trace.read.buffer import Buffer
from wizard.trace.read.collector import (
    Collector,
    EventSink,
    TraceContents,
    Truncation,
    counter_values,
    release_scan_arrays,
)
from wizard.trace.read.events import EVENTS_DECODER, KERNEL_CATEGORIES, RAW_DECODER, Event, decode_block, unmark_bare
from wizard.trace.read.exact import ExactDecoder
from wizard.trace.read.formats import (
    KINETO_JSON,
    TraceFormat,
    detect,
    detect_opened,
    is_trace_name,
    trace_suffixes,
)
from wizard.trace.read.inflate import nothing_read
from wizard.trace.read.remote import UrlPath, expand, is_url, read_url
from wizard.trace.read.scan import after_separator, find_cut, list_end
from wizard.trace.read.source import TraceSource, open_input
from wizard.untrusted import cut, visible

if TYPE_CHECKING:
    from wizard.trace.read.parallel import ParallelDecoder

__all__ = [
    "KERNEL_CATEGORIES",
    "EventSink",
    "ReaderConfig",
    "TraceContents",
    "Truncation",
    "iter_trace_files",
    "parse_into",
    "read_trace",
    "unmark_bare",
]


class ReaderConfig(msgspec.Struct, frozen=True, eq=False):
    """How the reader reads: the numbers tests shrink to reach every path with small files."""

    # A block's decoded events (~2.3 bytes a byte) and its copies are the read's working set: at 100 MB, 8 MB blocks
    # cost 112 MB, 2 MB blocks 65 MB (67-70 MB since), 512 KiB blocks 62 MB, with the same CPU by interleaved medians
    # (benchmarks/results-2026-12-02-memory2.md).
    block_size: int = 512 << 10
    parallel_block: int = 4 << 20  # smaller blocks keep each worker's peak memory low
    parallel_min_bytes: int = 96 << 20  # below this one process is faster than starting workers
    # The first pass of each block on a thread of the core's while this one collects the block before (the
    # collector's ``scan_ahead``), on two cores or more: blocks are then cut at ``block_size``, the buffer keeps two
    # and a fill reads AHEAD_READS of them. At 101 MB the read's wall 0.68x, its CPU 0.97x (docs/performance.md,
    # "twelfth round"). False: no thread.
    ahead: bool = True
    workers: int | None = None  # None: the cores but the parent's (PARENT_CORES), 0: one process (--jobs sets it)
    max_event_bytes: int = 256 << 20
    max_whitespace: int = 64 << 20
    # The file's ends hashed from the read's open (``contents.ends``): the engine's --from fingerprint, asked for by
    # the run's inspections (wizard/probes/inspections.py). Off for every other read: 2 MiB through CPython's own
    # SHA-256 took 12 ms, a tenth of a 20 MB trace's read, for a hash nothing else reads.
    fingerprint: bool = False


_CUT = object()  # a top-level member the end of the file cut off
# Blocks a fill reads where the scanner's thread runs (ReaderConfig.ahead). Only what follows the handed block is
# read again with a fill (``_past``): at 101 MB, 3 MB of 96 (keeping the two blocks, one-block fills read 54 MB again).
AHEAD_READS = 4


class _Handed:
    """A block handed to the scanner's thread: where it lies in the file, and the bytes it was handed as (a class of
    slots: a NamedTuple's class took 0.3 ms of every start-up to make)."""

    __slots__ = ("block", "end", "start")

    def __init__(self, start: int, end: int, block: tuple[bytes, int, int]) -> None:
        self.start, self.end, self.block = start, end, block


def _delivery(sink: EventSink) -> Callable[[list[Event], list[bytes]], None]:
    """Where the exact decoder hands its events: the sink's, not a method of the walker (the walker holds the
    decoder: a cycle, so the read's contents, every table, lived until the cyclic collector ran, past the report
    where it is paused; 16 MB of a 206 MB trace's report)."""
    if sink.raw:
        return lambda batch, raw_batch: sink.add_raw(raw_batch)
    return lambda batch, raw_batch: sink.add(batch)


def _not_a_trace(head: bytes) -> str:
    """What the JSON reader says of bytes that open no JSON trace: an Nsight Compute report is named, with the
    command that reads it (it is a profile of kernels, not a trace of a run)."""
    from wizard.ncu import NCU_MAGIC

    if head.startswith(NCU_MAGIC):
        return (
            "an Nsight Compute report, not a trace: `warpwizard diff TRACE REPORT.ncu-rep` sets its measurements "
            "beside a trace's (docs/comparing.md)"
        )
    return (
        "not a profiler trace: expected '{' or '[' at the start of a JSON trace (a Perfetto .pftrace and an Nsight "
        "Systems .sqlite export are recognised by their first bytes, whatever the name)"
    )


def _no_event_list(metadata: dict[str, Any]) -> str:
    """What the JSON reader says of a whole JSON object with no ``traceEvents`` list: a warpwizard document is
    named, with the command that reads a report (a report holds no events to check)."""
    schema = metadata.get("schema")
    if isinstance(schema, str) and schema.startswith("warpwizard."):
        said = f"a warpwizard JSON document ({cut(visible(schema), 60)}), not a profiler trace"
        if schemas.kind(schema) is not None:
            return f"{said}: `warpwizard compare REPORT.json ...` reads reports"
        return said
    return (
        "not a profiler trace: a JSON object without a 'traceEvents' list (a PyTorch profiler trace is "
        '{"traceEvents": [...]} or, from PyTorch 1.8, a bare array of event objects)'
    )


def _no_event_objects(values: int) -> str:
    """What the JSON reader says of an event list whose entries are all values other than objects."""
    return (
        f"not a profiler trace: its event list holds {plural(values, 'value')} and not one event object "
        "(a PyTorch profiler trace's events are JSON objects)"
    )


class TraceWalker:
    """The top-level walk, delivering events to a sink."""

    def __init__(
        self,
        buffer: Buffer,
        contents: TraceContents,
        sink: EventSink,
        config: ReaderConfig,
        parallel: ParallelDecoder | None = None,
    ) -> None:
        self.b = buffer
        self.c = contents
        self.sink = sink
        self.config = config
        self.parallel = parallel
        self.events_done = False  # the event list's ']' was read: what follows is metadata
        self.listed = False  # an event list was found (the traceEvents key, or PyTorch 1.8's bare array)
        self.raw_objects = False  # the raw fast path (trace fix) met an object in the list
        self.raw_non_objects = 0  # and values that are not objects, before it
        self.clock = buffer.clock
        # The first pass of the next block on a thread of the core's, while this one collects the block before
        # (one process only: workers decode blocks of their own): where the sink scans blocks, else None.
        threads = parallel is None and config.ahead and usable_cores() >= 2
        self.ahead = sink.scan_ahead() if threads else None
        self.handed: _Handed | None = None  # the block handed to it
        self.exact = ExactDecoder(
            buffer, contents, _delivery(sink), raw=sink.raw, max_event_bytes=config.max_event_bytes, clock=self.clock
        )

    # -- top level ----------------------------------------------------------------------
    def run(self) -> None:
        """The walk, then the refusal of a whole JSON document that is no trace: no event list, or one whose
        entries are none of them events (a cut file is a truncation instead, which the health checks report)."""
        try:
            self._walk()
        finally:
            if self.ahead is not None:
                self.ahead.close()  # its thread joined, the block it held dropped
            release_scan_arrays()  # the last block's arrays the core kept for the next: there is none
        whole = self.c.truncation is None
        if whole and not self.listed:
            raise InputFileError(f"{shown_path(self.c.path)}: {_no_event_list(self.c.metadata)}")
        values = self.exact.non_objects + self.raw_non_objects
        if whole and values and not (self.c.events or self.exact.objects or self.raw_objects):
            raise InputFileError(f"{shown_path(self.c.path)}: {_no_event_objects(values)}")

    def _walk(self) -> None:
        b = self.b
        if not b.fill():
            src = b.src
            said = nothing_read(compressed=src.compressed, cut=src.stream_truncated, size=src.consumed)
            raise InputFileError(f"{self.c.path}: {said}")
        if b.buf.startswith(b"\xef\xbb\xbf"):
            b.pos = 3
        first = b.peek()
        if first == ord("["):
            self.c.layout = "array"
            self.listed = True
            b.pos += 1
            self._event_list()
            return
        if first != ord("{"):
            raise b.error(_not_a_trace(b.buf))
        b.pos += 1
        while self._top_level_member():
            pass

    def _top_level_member(self) -> bool:
        """One ``"key": value`` of the trace object (the event list read as it streams); False at its end."""
        b = self.b
        ch = b.peek()
        if ch is None:
            self._truncated_top_level()
            return False
        if ch == ord("}"):
            b.pos += 1
            return False
        if ch == ord(","):
            b.pos += 1
            return True
        if ch != ord('"'):
            raise b.error(f"expected a key, found {chr(ch)!r}")
        key = self._after_events(self.exact.value)
        if key is _CUT:
            return False
        if b.peek() != ord(":"):
            if b.src.eof:
                self._truncated_top_level()
                return False
            raise b.error(f"expected ':' after key {str(key)[:80]!r}")
        b.pos += 1
        if key == "traceEvents":
            if b.peek() != ord("["):
                raise b.error("'traceEvents' is not an array")
            self.listed = True
            b.pos += 1
            self.events_done = self._event_list()
            return self.events_done
        value = self._after_events(self.exact.value)
        if value is _CUT:
            return False
        self.c.metadata[str(key)] = value
        self.sink.meta(str(key), value)
        return True

    def _after_events(self, read: Callable[[], Any]) -> Any:
        """A top-level key or value; one cut off at the end of the file after a complete event list
        (Kineto writes ``"traceName": "..."`` last) is a truncation like any other, not a refusal:
        every event was read."""
        try:
            return read()
        except TraceReadError:
            if not (self.events_done and self.b.src.eof):
                raise
        self._truncated_top_level("the file ends inside the metadata after the event list; every event was read")
        return _CUT

    def _event_list(self) -> bool:
        self.sink.events_start()
        closed = self._events()
        if closed:
            self.sink.events_end()
        return closed

    def _truncated_top_level(self, detail: str = "") -> None:
        """A cut between the trace object's keys: every event was read if the event list had closed, none
        if the cut came before it."""
        if self.c.truncation is None:
            lost = not self.events_done
            said = detail or (
                "the file ends before its event list (traceEvents) was read: no event was read"
                if lost
                else "the file ends before the closing '}' of the trace object; every event was read"
            )
            self.c.truncation = Truncation(
                self.b.offset, 0, self.c.last_ts, said, events_lost=lost, before_events=lost and not detail
            )

    # -- events -------------------------------------------------------------------------
    def _events(self) -> bool:
        """Read the event array; True when its closing ']' was found."""
        b, config = self.b, self.config
        kept, read = self._kept()
        while True:
            b.skip_ws()  # bounded: a run of blanks is refused, never read forever
            handed = self._handed_here()  # where it starts here, its cut is this block's
            cut = self._past(handed, read) if handed is not None else self._cut(kept, read)
            if cut is None:
                room = b.remaining < config.max_event_bytes
                if not b.src.eof and room and b.fill(b.remaining + config.block_size):
                    continue
                if self.parallel is not None:
                    self.parallel.drain()
                return self.exact.events(until_end=True)
            if self.parallel is not None:
                if self._list_ends_before(cut):
                    return True
                self._submit(cut)
            elif not self._fast(*(handed.block if handed is not None else (b.buf, b.pos, cut + 1)), cut):
                # Event by event; this may run past the cut when the cut was inside a nested array, or stop
                # before it at the list's ']' when the cut was in a later list (deviceProperties written last).
                stop = b.base + cut + 1
                if handed is not None:
                    self._rewind(handed)
                if self.exact.events(until_end=False, stop_at=stop):
                    return True
                b.skip_separator()
                continue
            b.pos = after_separator(b.buf, cut)

    def _cut(self, kept: int, read: int) -> int | None:
        """Where the block that starts here ends (``find_cut``), the buffer filled first where it holds less than
        ``kept``; None where it holds no whole event."""
        b = self.b
        if b.remaining < kept and not b.src.eof:
            b.fill(read)
        started = time.perf_counter()
        limit = self._block_limit()
        cut = find_cut(b.buf, b.pos, min(limit, len(b.buf)))
        if cut is None and limit < len(b.buf):
            cut = find_cut(b.buf, b.pos, len(b.buf))
        self.clock["scan_s"] += time.perf_counter() - started
        return cut

    def _past(self, handed: _Handed, read: int) -> int:
        """The handed block's cut in the buffer. Where the buffer holds less than a block after it (the next one to
        hand over), it is filled first, from the cut on: the block itself lies in the bytes it was handed as, and
        only what follows it is read again with the fill."""
        b = self.b
        cut = handed.end - 1 - b.base
        if len(b.buf) - cut < self.config.block_size and not b.src.eof:
            b.pos = cut
            b.fill(read)
            cut = b.pos
        return cut

    def _rewind(self, handed: _Handed) -> None:
        """The buffer from the handed block's start again (its bytes, then the buffer's), where ``_past`` moved it
        on: a block the scanner declined is read by the exact path, which reads the buffer."""
        b = self.b
        if b.base + b.pos == handed.start:
            return
        buf, start, end = handed.block
        b.buf = buf[start : end - 1] + b.buf[b.pos :]
        b.base, b.pos = handed.start, 0

    def _list_ends_before(self, cut: int) -> bool:
        """Whether the event list closes before ``cut`` (which then lies in a later list of objects, such
        as a multi-GPU deviceProperties written after the events): the events up to the first ``}]`` decode
        whole. They are added after the workers' blocks, and the walk goes on after the ']'."""
        b = self.b
        end = list_end(b.buf, b.pos, cut)
        if end is None:
            return False
        events = decode_block(EVENTS_DECODER, b.buf[b.pos : end]) if end > b.pos else []
        if events is None:
            return False  # a nested array inside an event: the workers' failure sends it down the exact path
        assert self.parallel is not None
        self.parallel.drain()
        self._add(events, b.buf[b.pos : end])
        b.pos = end + 1
        return True

    def _submit(self, cut: int) -> None:
        assert self.parallel is not None
        b = self.b
        if b.src.compressed or not b.src.regular:
            self.parallel.submit_bytes(b.buf[b.pos : cut + 1])
        else:  # the worker reads its own bytes: nothing crosses a pipe but two offsets
            start = b.base + b.pos
            self.parallel.submit_range(str(b.src.path), start, b.base + cut + 1, b.src.descriptor)

    def _kept(self) -> tuple[int, int]:
        """What the buffer holds at least, where the file has it, when a block is cut (a block, or two for the
        scanner's thread: the next one is handed over while this one is collected), and what a fill reads."""
        block = self.config.block_size
        return (block, block) if self.ahead is None else (2 * block, AHEAD_READS * block)

    def _block_limit(self) -> int:
        """Where the next block's cut is looked for (a cut before it, else the last in the buffer): a worker's
        block; a block for the scanner's thread, which scans the next while this one is collected; else the
        buffer."""
        b = self.b
        if self.parallel is not None:
            return b.pos + self.config.parallel_block
        if self.ahead is not None:
            return b.pos + self.config.block_size
        return len(b.buf)

    def _handed_here(self) -> _Handed | None:
        """The block handed to the scanner's thread, where it starts at the reader's place (a block read
        otherwise, by the exact path, moves it on: the thread's block is then dropped by the core)."""
        handed, self.handed = self.handed, None
        b = self.b
        if handed is None or handed.start != b.base + b.pos or handed.end > b.base + len(b.buf):
            return None
        return handed

    def _hand_next(self, cut: int) -> None:
        """The block after the one ending at ``cut``, where the buffer holds it, handed to the scanner's thread:
        its first pass runs there while this one is collected."""
        if self.ahead is None:
            return
        b = self.b
        start = after_separator(b.buf, cut)
        limit = start + self.config.block_size
        end = find_cut(b.buf, start, min(limit, len(b.buf)))
        if end is None and limit < len(b.buf):  # as the block would be cut here: an event longer than a block
            end = find_cut(b.buf, start, len(b.buf))
        if end is not None and self.ahead.start(b.buf, start, end + 1):
            self.handed = _Handed(b.base + start, b.base + end + 1, (b.buf, start, end + 1))

    def _fast(self, buf: bytes, start: int, end: int, cut: int) -> bool:
        """buf[start:end], whole events (the reader's buffer to ``cut``, or the same bytes as the scanner's thread
        was handed them): scanned in place by the collector, else decoded (a view: decode_block makes the one
        copy); False where neither takes it (the exact path then reads it). The next block is handed to the
        scanner's thread first."""
        self._hand_next(cut)
        started = time.perf_counter()
        before = self.c.counter_events
        if self.sink.add_bytes(buf, start, end, self.ahead):  # scanned and collected from the bytes, not decoded
            counter_values(self.c, before, memoryview(buf)[start:end])
            self.clock["collect_s"] += time.perf_counter() - started
            return True
        piece = memoryview(buf)[start:end]
        if self.sink.raw:
            raws = decode_block(RAW_DECODER, piece)
            self.clock["decode_s"] += time.perf_counter() - started
            if raws is None:
                return False
            if not self.raw_objects:  # only until the first object: what the refusal of a list of values needs
                self._look_at(raws)
            self.sink.add_raw([bytes(r) for r in raws])
            return True
        events = decode_block(EVENTS_DECODER, piece)
        decoded = time.perf_counter()
        self.clock["decode_s"] += decoded - started
        if events is None:
            return False
        self._add(events, piece)
        self.clock["collect_s"] += time.perf_counter() - decoded
        return True

    def _look_at(self, raws: list[msgspec.Raw]) -> None:
        """Whether the raw entries hold an object, and how many values that are not objects they hold."""
        objects = sum(1 for r in raws if bytes(memoryview(r)[:1]) == b"{")
        self.raw_objects = objects > 0
        self.raw_non_objects += len(raws) - objects

    def _add(self, events: list[Event], piece: bytes | memoryview) -> None:
        """Decoded events to the sink; the counter events' values from the block's bytes, where it had any."""
        before = self.c.counter_events
        self.sink.add(events)
        counter_values(self.c, before, piece)


def _new_clock() -> dict[str, float]:
    return {"read_decompress_s": 0.0, "scan_s": 0.0, "decode_s": 0.0, "collect_s": 0.0, "exact_path_s": 0.0}


NESTING_LEVELS = 2000  # how deep a trace may nest, for every caller (real traces nest under 10)


@contextlib.contextmanager
def nesting_budget(levels: int = NESTING_LEVELS) -> Iterator[None]:
    """JSON nesting is bounded by Python's recursion limit, counted from wherever the reader runs:
    deep in a training loop (the profiler hook) a trace failed that the CLI read, and the fixer
    (a few frames deeper) refused what the reader had taken. ``levels`` are made free from here, so
    every caller reads the same traces; the limit is only ever raised (other threads rely on it),
    and put back after."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    before = sys.getrecursionlimit()
    wanted = depth + levels + 100
    if wanted > before:
        sys.setrecursionlimit(wanted)
    try:
        yield
    finally:
        if wanted > before and sys.getrecursionlimit() == wanted:
            sys.setrecursionlimit(before)


def parse_into(
    path: str | Path,
    sink: EventSink,
    config: ReaderConfig | None = None,
    on_read: Callable[[int], None] | None = None,
) -> TraceContents:
    """Stream a trace into any sink, in one process (the fixer uses this with a raw sink)."""
    return _walk(Path(path), lambda contents: sink, config or ReaderConfig(), _new_clock(), on_read=on_read)


def _walk(
    p: Path,
    make_sink: Callable[[TraceContents], EventSink],
    config: ReaderConfig,
    clock: dict[str, float],
    parallel: Callable[[TraceContents, EventSink], ParallelDecoder | None] = lambda contents, sink: None,
    *,
    on_read: Callable[[int], None] | None = None,
    opened: tuple[IO[bytes], bool] | None = None,
) -> TraceContents:
    """Open (unless ``opened`` by the caller, who closes it), walk and close one trace; a cut-off gzip stream is
    recorded as a truncation."""
    contents = TraceContents(path=str(p))
    source = TraceSource(p, opened)
    contents.compressed = source.compressed
    sink = make_sink(contents)
    decoder: ParallelDecoder | None = None
    failed = True
    try:
        decoder = parallel(contents, sink)
        buffer = Buffer(source, contents, config.block_size, config.max_whitespace, clock, on_read=on_read)
        with nesting_budget():
            TraceWalker(buffer, contents, sink, config, decoder).run()
        if decoder is not None:
            decoder.drain()
        failed = False
    except RecursionError:
        raise TraceReadError(str(p), contents.bytes_read, "nesting too deep to be a profiler trace") from None
    finally:
        source.close()
        if decoder is not None:
            decoder.close(failed=failed)
    if source.stream_truncated and contents.truncation is None:
        contents.truncation = Truncation(
            contents.bytes_read,
            0,
            contents.last_ts,
            "the gzip stream is cut off after the JSON ended; every event was read",
            events_lost=False,
        )
    elif source.stream_truncated and contents.truncation is not None:
        contents.truncation.detail += " (the gzip stream itself is cut off)"
    return contents


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as a cluster's scheduler narrows it): the
    bound of every worker pool, whatever a command line, a caller or a shared playbook asks."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# The cores one big file's read needs before workers pay: the parent merges each worker's block (and runs the
# classification between blocks) while the workers decode, so it needs a core of its own. On two cores the two
# workers and the parent share them, and one process read every size faster: 101 MB to 1 GB, CPU 0.65-0.75x and
# wall 0.66-0.92x the two workers' (benchmarks/results-2026-12-02-series.md, the JSON collector compiled).
PARENT_CORES = 1
MIN_WORKERS = 2  # one worker beside the parent only adds the blocks' pickling to the same decoding


def _parallel_workers(path: Path, config: ReaderConfig) -> int:
    """Worker processes for one big file: the cores less the parent's, unless that is fewer than two, the file is
    nested, tiny, a pipe, or told otherwise (never more than the cores: a playbook's ``jobs: 100000`` is no fork
    bomb)."""
    cores = usable_cores()
    if config.workers is not None:
        return min(config.workers, cores)
    try:
        info = path.stat()
    except OSError:
        return 0
    workers = cores - PARENT_CORES
    if workers < MIN_WORKERS or not path.is_file():
        return 0  # a pipe is read once, in order
    compressed = path.name.endswith(".gz")
    if info.st_size * (8 if compressed else 1) < config.parallel_min_bytes:
        return 0
    import multiprocessing  # only for a file big enough for workers: a small one's start-up skips it

    return 0 if multiprocessing.parent_process() is not None else workers


def _read(
    p: Path,
    workers: int,
    config: ReaderConfig,
    on_progress: Callable[[TraceContents], None] | None = None,
    on_read: Callable[[int], None] | None = None,
    *,
    opened: tuple[IO[bytes], bool] | None = None,
) -> TraceContents:
    clock = _new_clock()

    def parallel(contents: TraceContents, sink: EventSink) -> ParallelDecoder | None:
        assert isinstance(sink, Collector)
        if not workers:
            return None
        from wizard.trace.read.parallel import ParallelDecoder  # workers only for a big file: not a small one's start

        return ParallelDecoder(workers, sink, contents, clock, on_progress)

    # Millions of short-lived records would trigger the cyclic GC over and over (it was two
    # thirds of decode time); nothing built here is cyclic, so pause it while reading.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        contents = _walk(p, Collector, config, clock, parallel, on_read=on_read, opened=opened)
    finally:
        if was_enabled:
            gc.enable()
    contents.timing.update({k: round(v, 4) for k, v in clock.items()})
    contents.timing["workers"] = workers
    return contents


def read_trace(
    path: str | Path | UrlPath,
    on_progress: Callable[[TraceContents], None] | None = None,
    config: ReaderConfig | None = None,
    on_read: Callable[[int], None] | None = None,
) -> TraceContents:
    """Read one trace file (``.json`` or ``.json.gz``, or a pipe; an Nsight Systems SQLite export by its own
    reader, ``wizard.trace.read.formats`` tells which from the first bytes) into compact records.

    Big files are decoded by worker processes block by block and merged in file order;
    any block that needs the exact decoder sends the whole file down the sequential path,
    so both paths give the same result. ``on_read`` is told the bytes of the file consumed after
    each block (compressed bytes for .gz), on both paths: with workers, reading waits for them
    once a few blocks are in flight, so it moves at their pace.

    The file is opened once (``open_input``): its format is recognised from that open, and the reader of
    that format reads the same open file; where ``config.fingerprint`` asks, a regular file's ends are hashed from it
    too (``contents.ends``: the run's ``--from`` fingerprint of the file). A pipe's format is its name's, and its
    reader opens it.
    """
    config = config or ReaderConfig()
    if isinstance(path, UrlPath) or is_url(path):  # where traces live: streamed through fsspec (remote.py)
        remote = msgspec.structs.replace(config, workers=0)  # no worker re-reads a range of a remote object
        return read_url(
            str(path),
            lambda p, fh: _read_json(p, remote, on_progress, on_read, (fh, False)),
            lambda p, fmt, fh: _read_other(p, fmt, on_read, fh),
        )
    p = path if isinstance(path, Path) else input_path(path)
    if not _regular(p):
        fmt = detect(p)  # by the name: nothing opened
        return (
            _read_other(p, fmt, on_read, None)
            if fmt is not KINETO_JSON
            else _read_json(p, config, on_progress, on_read)
        )
    opened = open_input(p)
    with opened[0]:
        try:  # --from's fingerprint, from this open (wizard/file_ends.py), where the engine asks for it
            ends = opened_ends(p, opened[0].fileno()) if config.fingerprint else None
        except OSError:  # the read below says why, if it cannot read either; the engine then hashes on its own
            ends = None
        try:
            fmt = detect_opened(p, *opened)
            if fmt is not KINETO_JSON:
                contents = _read_other(p, fmt, on_read, opened[0])
            else:
                contents = _read_json(p, config, on_progress, on_read, opened)
        except InputFileError as exc:  # unreadable: what the open found still fingerprints it
            exc.ends = ends
            raise
    contents.ends = ends
    return contents


def _regular(p: Path) -> bool:
    """A regular file (or one that cannot be looked at: its open then says why)."""
    try:
        return stat.S_ISREG(p.stat().st_mode)
    except (OSError, ValueError):
        return True


def _read_json(
    p: Path,
    config: ReaderConfig,
    on_progress: Callable[[TraceContents], None] | None,
    on_read: Callable[[int], None] | None,
    opened: tuple[IO[bytes], bool] | None = None,
) -> TraceContents:
    """Chrome JSON: by worker processes for a big file, sequentially where a block needs the exact decoder."""
    workers = _parallel_workers(p, config)
    contents: TraceContents | None = None
    if workers:
        from wizard.trace.read.parallel import NeedsExactPath

        try:
            contents = _read(p, workers, config, on_progress, on_read, opened=opened)
        except NeedsExactPath:
            if opened is not None:
                opened[0].seek(0)  # workers read only a regular file: it seeks
    if contents is None:
        contents = _read(p, 0, config, on_read=on_read, opened=opened)
    contents.writer = json_writer(contents)
    return contents


def _read_other(
    p: Path, fmt: TraceFormat, on_read: Callable[[int], None] | None, opened: IO[bytes] | None
) -> TraceContents:
    """A format other than Chrome JSON, by the reader its row of the table names."""
    assert fmt.read is not None  # every format but the JSON this module walks has one
    contents: TraceContents = fmt.read(p, on_read, opened)
    return contents


_KINETO_CATEGORIES = frozenset({"cpu_op", "Operator", "kernel", "Kernel", "cuda_runtime", "Runtime", "ac2g"})


def json_writer(contents: TraceContents) -> str:
    """Who wrote a Chrome-JSON trace, where it says: Kineto's ``schemaVersion`` key or its categories; Cuspy's
    GPU side by what it leaves out (``wizard.trace.read.cuspy``), whose clamping is then counted for the checks."""
    from wizard.trace.read import cuspy

    if cuspy.is_cuspy(contents):
        contents.cannot_show.update(cuspy.CANNOT_SHOW)
        contents.metadata["cuspy"] = msgspec.structs.asdict(cuspy.clamped(contents))
        return cuspy.WRITER
    if "schemaVersion" in contents.metadata or _KINETO_CATEGORIES & contents.timeline.categories.keys():
        return "PyTorch profiler (Kineto)"
    return ""


MAX_PATH_BYTES = 4096  # PATH_MAX on Linux: no longer name can be opened


def shown_path(name: str) -> str:
    """A path from outside, for a message: controls escaped, at most 160 characters."""
    return cut(visible(name), 160)


def input_path(name: str) -> Path:
    """``name`` as a path to read, or an InputFileError saying why it cannot be one (a NUL, a
    length no file system takes): one line naming the path, not an internal error."""
    if not isinstance(name, str):
        raise InputFileError(f"{shown_path(repr(name))}: not a path (a {type(name).__name__}, expected text)")
    if "\0" in name:
        raise InputFileError(f"{shown_path(name)}: not a path: it holds a NUL character")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise InputFileError(f"{shown_path(name)}: not a path: longer than {MAX_PATH_BYTES} bytes")
    return Path(name)


def _folders(entries: list[Path]) -> str:
    """The folders a directory without traces holds, said after the error (a newcomer gave a folder of pairs, each
    pair a folder: one level is read, as tensorboard_trace_handler writes one), named as given, at most five."""
    folders = [f.name for f in entries if f.is_dir()]
    if not folders:
        return ""
    named = ", ".join(visible(cut(name, 60)) for name in folders[:5])
    more = f" and {len(folders) - 5} more" if len(folders) > 5 else ""
    return f"; it holds {plural(len(folders), 'folder')} ({named}{more}): name one, or its files"


def iter_trace_files(paths: list[str]) -> Iterator[Path | UrlPath]:
    """Expand directories (as tensorboard_trace_handler writes them) into their trace files; a URL's directory or
    glob into its objects (remote.py)."""
    for name in paths:
        if is_url(name):
            yield from (UrlPath(url) for url in expand(name))
            continue
        p = input_path(name)
        try:
            is_dir = p.is_dir()
        except OSError as exc:
            raise InputFileError(f"{shown_path(name)}: cannot read ({exc.strerror or exc})") from None
        if is_dir:
            try:
                entries = sorted(p.iterdir())
                found = [f for f in entries if f.is_file() and is_trace_name(f.name)]
            except OSError as exc:
                raise InputFileError(f"{p}: cannot list the directory ({exc.strerror or exc})") from None
            if not found:
                raise InputFileError(
                    f"{p}: directory holds no trace ({', '.join(trace_suffixes())}){_folders(entries)}"
                )
            yield from found
        else:
            yield p
