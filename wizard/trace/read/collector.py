"""What the reader keeps from a trace, and the collector that fills it, event by event."""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct, field

from wizard.compiled_core import compiled as compiled_core
from wizard.file_ends import OpenedEnds
from wizard.ranks import rank_value
from wizard.trace.read.counters import Counters
from wizard.trace.read.events import (
    EVENTS_DECODER,
    GPU_OP_CATEGORIES,
    INT_LIMIT,
    KERNEL_CATEGORIES,
    MEASURABLE,
    OP_CATEGORIES,
    PYTHON_CATEGORIES,
    RUNTIME_CATEGORIES,
    Event,
    EventArgs,
    as_float,
    as_int,
    decode_block,
    dim3,
    profiler_occupancy,
    reported,
    written_precision,
)
from wizard.trace.read.records import (
    GpuOpTable,
    IntervalIndex,
    KernelTable,
    OpInfo,
    ProfilerOccupancy,
    ReportedValue,
    RuntimeIndex,
    SliceTable,
    _ThreadIntervals,
)

if TYPE_CHECKING:
    from wizard._core import ScanAhead  # the core's type, declared once (_core.pyi)


class Truncation(Struct):
    """Where a trace stopped early, and what that cost."""

    at_byte: int
    partial_event_bytes: int
    last_complete_ts: float | None
    detail: str
    # whether events were lost: the cut fell before the event list closed (the trace-incomplete check's error);
    # a cut after it (in the metadata Kineto writes last, or a gzip trailer) kept every event
    events_lost: bool = True
    # the cut fell between the trace object's keys before its event list began: not one event was written
    before_events: bool = False


KERNELS, GPU_OPS, SLICES = 0, 1, 2  # the tables ExactTimes follows
# Characters kept of a name read from a trace (a kernel's, an op's, a call's, a frame's, an annotation's), in every
# format. The longest real name in the shared traces is 5,123 characters (a100-alexnet: a kernel's template arguments
# holding lambdas); three times that is kept whole. A longer one is a hostile length (1,500 distinct names of a
# megabyte took 3.4 GB, issue 47 item 1), cut where it is read so that it is never held: a kept name is a prefix of
# the file's own bytes, so names cost at most the file's unpacked size, and a megabyte's name what a long real one does.
MAX_NAME = 16_384


def cut_name(value: Any) -> Any:
    """A name as kept: text longer than ``MAX_NAME`` cut to it (nothing marks the cut: two names that differ only
    past it are one name); anything else as it is."""
    return value[:MAX_NAME] if type(value) is str and len(value) > MAX_NAME else value


class ExactTimes(Struct):
    """Integer nanoseconds of each event of the kernel, GPU-op and slice tables, in their order, where the file
    holds them (a .pftrace's TrackEvent and render-stage times): Perfetto reads those as they are, so the
    kernels-overlap check does too, instead of rounding microsecond doubles back (issue 45 item 10)."""

    ts: tuple[array[int], array[int], array[int]] = field(default_factory=lambda: (array("q"), array("q"), array("q")))
    dur: tuple[array[int], array[int], array[int]] = field(default_factory=lambda: (array("q"), array("q"), array("q")))

    usable: bool = True  # False once a time does not fit an int64 (then the microseconds are read instead)

    def add(self, table: int, ts: int, dur: int) -> None:
        if not (-(2**63) <= ts < 2**63 and -(2**63) <= dur < 2**63):
            self.usable = False
            ts = dur = 0  # kept in step with the table
        self.ts[table].append(ts)
        self.dur[table].append(dur)


STEP_CAP = 100_000  # ProfilerStep intervals kept (a trace has one per profiled step)
RANGE_CAP = 1_000_000  # correlation ids of cuda_profiler_range events kept (the range profiler's maxRanges is far less)
PROFILER_RANGE = "cuda_profiler_range"  # Kineto's CUPTI range profiler: one event per kernel, with counters
ANNOTATION_CAP = 100_000  # record_function spans, GPU annotations and profiler-overhead events kept (each kind)
OVERHEAD_CATEGORIES = frozenset({"overhead", "Overhead"})  # Kineto's ActivityType::OVERHEAD ("overhead")


class Timeline(Struct):
    """What passes other than the kernel checks need, kept in the same read and as compactly: GPU
    copies and sets, events per category (flow arrows included), the time window of every complete
    ("X") event the other tables do not hold and those events themselves (``slices``: where they lie and on
    which row, for the kernels-overlap check), and the ProfilerStep intervals."""

    gpu_ops: GpuOpTable = field(default_factory=GpuOpTable)
    slices: SliceTable = field(default_factory=SliceTable)
    categories: Counter[str] = field(default_factory=Counter)
    first_ts: float = math.inf  # over the X events kept nowhere else (annotations, steps, ...)
    last_end: float = -math.inf
    steps: list[tuple[float, float, str]] = field(default_factory=list)
    # the correlation ids of the CUPTI range profiler's events (its launches have no kernel event: health.md), and
    # how many carry none (Kineto before cd8d3190, 2025-05-31, wrote no id: matched to launches by order)
    profiler_ranges: list[int] = field(default_factory=list)
    unlinked_ranges: int = 0
    # for the summary-table check (what key_averages() adds up): record_function spans on CPU threads
    # (pid, tid, start, end, name), GPU annotations (start, end, name) and profiler-overhead events
    # (start, end, name, correlation or None)
    annotations: list[tuple[Any, Any, float, float, str]] = field(default_factory=list)
    gpu_annotations: list[tuple[float, float, str]] = field(default_factory=list)
    overheads: list[tuple[float, float, str, int | None]] = field(default_factory=list)

    def merge(self, other: Timeline) -> None:
        """A later block's timeline after this one."""
        self.gpu_ops.extend(other.gpu_ops)
        self.slices.extend(other.slices)
        self.categories.update(other.categories)
        self.first_ts = min(self.first_ts, other.first_ts)
        self.last_end = max(self.last_end, other.last_end)
        self.steps.extend(other.steps[: max(0, STEP_CAP - len(self.steps))])
        self.profiler_ranges.extend(other.profiler_ranges[: max(0, RANGE_CAP - len(self.profiler_ranges))])
        self.unlinked_ranges += other.unlinked_ranges
        self.annotations.extend(other.annotations[: max(0, ANNOTATION_CAP - len(self.annotations))])
        self.gpu_annotations.extend(other.gpu_annotations[: max(0, ANNOTATION_CAP - len(self.gpu_annotations))])
        self.overheads.extend(other.overheads[: max(0, ANNOTATION_CAP - len(self.overheads))])


class TraceContents(Struct):
    """Everything the analysis needs from one trace file, compactly."""

    path: str
    bytes_read: int = 0
    stored_bytes: int | None = None  # the object's size where it lies, for a trace read from a URL (not on disk)
    compressed: bool = False
    layout: str = "object"  # object | array (PyTorch 1.8) | sqlite (Nsight Systems)
    format: str = "kineto-json"  # wizard.trace.read.formats: which reader read it
    writer: str = ""  # the profiler that wrote it, where the file says ("" when it does not)
    cannot_show: dict[str, str] = field(default_factory=dict)  # health checks this writer's file cannot show, why
    metadata: dict[str, Any] = field(default_factory=dict)
    kernels: KernelTable = field(default_factory=KernelTable)
    runtime: RuntimeIndex = field(default_factory=RuntimeIndex)
    ops: IntervalIndex = field(default_factory=IntervalIndex)
    python: IntervalIndex = field(default_factory=IntervalIndex)
    non_finite: Counter[str] = field(default_factory=Counter)
    events: int = 0
    last_ts: float | None = None
    truncation: Truncation | None = None
    timing: dict[str, float] = field(default_factory=dict)
    full_precision: bool = False  # a metric written at full precision, as 2.14's typed metadata does
    rounded: bool = False  # a metric rounded as earlier profilers print (a fraction no float32 has)
    counter_events: int = 0  # events under a "GPU N Counters" pid (CUPTI PM sampling, PyTorch 2.15+)
    counters: Counters = field(default_factory=Counters)  # their samples, bounded (wizard.trace.read.counters)
    timeline: Timeline = field(default_factory=Timeline)
    ends: OpenedEnds | None = None  # the regular file as the read's one open found it, its ends hashed (--from)
    exact_ns: ExactTimes | None = None  # the tables' times in the file's own nanoseconds, where it has them

    @property
    def typed(self) -> bool:
        """PyTorch 2.14's typed metadata, decided from the whole trace (``written_precision``)."""
        return self.full_precision and not self.rounded

    @property
    def device_properties(self) -> list[dict[str, Any]]:
        props = self.metadata.get("deviceProperties")
        if not isinstance(props, list):
            props = self.metadata.get("computeProperties")
        return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []

    @property
    def is_rocm(self) -> bool:
        if "roctracer_version" in self.metadata or "hip_runtime_version" in self.metadata:
            return True
        props = self.device_properties
        return any("maxSharedMemoryPerMultiProcessor" in p or "AMD" in str(p.get("name", "")) for p in props)

    @property
    def rank(self) -> int | None:
        """The rank the trace says it is (``distributedInfo.rank``), for reports and the cross-rank check."""
        info = self.metadata.get("distributedInfo")
        return rank_value(info.get("rank")) if isinstance(info, dict) else None


class PieceResult(Struct, eq=False):
    """What a worker process made of one block of events; merged in file order."""

    kernels: KernelTable
    runtime: RuntimeIndex
    ops: IntervalIndex
    python: IntervalIndex
    non_finite: Counter[str]
    events: int
    last_ts: float | None
    full_precision: bool = False
    rounded: bool = False
    counter_events: int = 0
    timeline: Timeline = field(default_factory=Timeline)
    counters: Counters = field(default_factory=Counters)


def collect_piece(piece: bytes) -> PieceResult | None:
    """A block of whole events as compact records, the way a worker returns them: scanned by the core or decoded,
    as the reader's one process does (None where neither takes it: the parent's exact path then reads it); the
    counter events' values from the block's bytes."""
    part = TraceContents(path="")
    collector = Collector(part)
    if not collector.add_bytes(piece):
        events = decode_block(EVENTS_DECODER, piece)
        if events is None:
            return None
        collector.add(events)
    counter_values(part, 0, piece)
    return PieceResult(
        part.kernels,
        part.runtime,
        part.ops,
        part.python,
        part.non_finite,
        part.events,
        part.last_ts,
        part.full_precision,
        part.rounded,
        part.counter_events,
        part.timeline,
        part.counters,
    )


def counter_values(contents: TraceContents, before: int, piece: bytes | memoryview) -> None:
    """The counter events' values, read from their block's bytes where the block had any (``before``: the counter
    events counted before it was collected): the collector only counts them (a PM-sampling sample's values are
    read by counters.py)."""
    if contents.counter_events > before:
        contents.counters.add_block(piece if isinstance(piece, bytes) else bytes(piece))


class EventSink:
    """Where the reader delivers what it reads: decoded events (the collector) or, for a sink
    whose ``raw`` is True, each event's own bytes in file order (the fixer, which copies them)."""

    raw = False

    def add(self, events: list[Event]) -> None:
        """Decoded events (when ``raw`` is False)."""

    def add_raw(self, events: list[bytes]) -> None:
        """Each event's own bytes, in file order (when ``raw`` is True)."""

    def add_bytes(self, buf: bytes, start: int = 0, end: int | None = None, ahead: ScanAhead | None = None) -> bool:
        """A block of whole events as bytes (``buf[start:end]``: ``{...},{...}``), taken whole (True) or declined
        (False, nothing changed: the reader then decodes it and calls ``add``). Only the collector takes blocks, and
        only through the compiled core (``scan_events``); ``ahead``: what ``scan_ahead`` made, which may hold this
        block's first pass."""
        return False

    def scan_ahead(self) -> ScanAhead | None:
        """A thread for the first pass of the reader's next block (``add_bytes`` takes it), where this sink scans
        blocks; else None."""
        return None

    def meta(self, key: str, value: Any) -> None:
        """A top-level key other than traceEvents, in file order."""

    def events_start(self) -> None:
        """The traceEvents array (or the bare top-level array) begins."""

    def events_end(self) -> None:
        """The event array's closing bracket was read."""


_CAT_OF = operator.attrgetter("cat")
_OTHER_TABLES = KERNEL_CATEGORIES | PYTHON_CATEGORIES | GPU_OP_CATEGORIES
_NO_ARGS = EventArgs()
OCCUPANCY_KEY = "est. achieved occupancy %"
THEORETICAL_KEY = "theoretical occupancy %"


def _number(value: Any) -> float | None:
    """A timestamp or duration: numbers as they are, numeric strings parsed, the rest None (an integer
    past a double's range, e.g. 400 digits, too: ``float()`` of it raises OverflowError)."""
    if type(value) is float:
        return value
    if type(value) is int:  # Kineto's integer microseconds: as_float's answer without its four isinstance checks
        try:
            return float(value)
        except OverflowError:
            return None
    return as_float(value)


def _device(value: Any) -> int | None:
    """A device ordinal the trace meant: an int64 (numpy holds it) or none; 2^70 is damage, not a device."""
    return value if type(value) is int and -INT_LIMIT < value < INT_LIMIT else as_int(value)


class Collector(EventSink):
    """Turns decoded events into compact records; one per trace.

    This loop runs once per event of a gigabyte trace, so it avoids per-event objects:
    runtime calls go to flat arrays, ops to interval arrays with interned descriptors.
    """

    def __init__(self, contents: TraceContents) -> None:
        self.c = contents
        self._names: dict[str, str] = {}
        self._raws: dict[bytes, str] = {}
        self._op_refs: dict[tuple[Any, bytes, bytes, Any], int] = {}
        self._frame_refs: dict[Any, int] = {}
        self._reported: dict[Any, ReportedValue] = {}
        self._dim_tuples: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self._occupancies: dict[tuple[Any, ...], ProfilerOccupancy | None] = {}

    def _intern(self, text: str) -> str:
        return self._names.setdefault(text, text)

    def _name(self, value: Any) -> str:
        """A name as text, cut to ``MAX_NAME`` and interned: one string per distinct name, never a hostile length."""
        text = value if type(value) is str else str(value)
        if len(text) > MAX_NAME:
            text = text[:MAX_NAME]
        return self._names.setdefault(text, text)

    def _raw_text(self, data: bytes) -> str | None:
        if not data:
            return None
        cached = self._raws.get(data)
        if cached is None:
            try:  # one compact spelling, whatever the writer's indentation
                cached = msgspec.json.encode(msgspec.json.decode(data)).decode()
            except msgspec.DecodeError:
                cached = data.decode("utf-8", "replace")
            self._raws[data] = cached
        return cached

    def _op_ref(self, ev: Event) -> int:
        args = ev.args
        name = ev.name
        if type(name) is str and len(name) > MAX_NAME:  # cut_name, inline: once per op event
            name = name[:MAX_NAME]
        if args is None:
            key: tuple[Any, bytes, bytes, Any] = (name, b"", b"", None)
        else:
            dims = args.input_dims
            stack = args.call_stack
            key = (
                name,
                bytes(dims) if len(dims) else bytes(args.input_dims_old),
                bytes(args.input_type),
                stack if type(stack) is str else None,
            )
        ref = self._op_refs.get(key)
        if ref is None:
            info = OpInfo(
                self._name(name),
                self._raw_text(key[1]),
                self._raw_text(key[2]),
                self._intern(key[3]) if key[3] is not None else None,
            )
            ref = self._op_refs[key] = self.c.ops.ref(info)
        return ref

    def _frame_ref(self, name: Any) -> int:
        name = cut_name(name)
        ref = self._frame_refs.get(name)
        if ref is None:
            ref = self._frame_refs[name] = self.c.python.ref(self._name(name))
        return ref

    def add(self, events: list[Event]) -> None:
        c = self.c
        c.events += len(events)
        for ev in reversed(events):
            last = ev.ts
            if type(last) is float or type(last) is int:
                last = _number(last)
                if last is not None:
                    c.last_ts = last
                    break
        collect_events(self, events)

    def add_bytes(self, buf: bytes, start: int = 0, end: int | None = None, ahead: ScanAhead | None = None) -> bool:
        """``add`` of the events the block decodes to, without decoding them into structs: the compiled core's
        ``scan_events`` checks the block, then hands each event to ``collect_events``'s dispatch, and declines
        (False) any block msgspec might read otherwise (wizard/_core.c says which). Its twin is the reader's
        ``decode_block`` then ``add``: the tests compare them (tests/trace/test_scan_events.py). The block is read
        in place: the reader's buffer is not copied. ``ahead``: where its thread was handed this block, the check
        it made there is taken (the same code on the same bytes)."""
        return scan_events is not None and scan_events(self, buf, start, len(buf) if end is None else end, ahead)

    def scan_ahead(self) -> ScanAhead | None:
        """The core's ``ScanAhead`` where ``scan_events`` is the core's: the first pass of a block (its check, 40-55% of
        its instructions) on a thread of its own while this one collects the block before (wizard/_core.c)."""
        return new_scan_ahead()

    def _complete(self, ev: Event) -> None:
        """A complete event no table keeps (one with a duration: only "X" events have one; not decoding "ph"
        keeps the reader as fast as before): its place in the window, and a ProfilerStep's interval."""
        start = _number(ev.ts)
        if start is None:
            return
        timeline = self.c.timeline
        dur = _number(ev.dur) or 0.0
        end = start + max(dur, 0.0)
        timeline.slices.add(start, dur, (ev.pid, ev.tid, ev.cat))
        timeline.first_ts = min(timeline.first_ts, start)
        timeline.last_end = max(timeline.last_end, end)
        name = ev.name
        if (
            type(name) is str
            and name.startswith("ProfilerStep#")
            and len(timeline.steps) < STEP_CAP
            and dur <= MEASURABLE
        ):
            timeline.steps.append((start, end, self._name(name)))
        elif ev.cat == PROFILER_RANGE:
            corr = as_int(ev.args.correlation) if ev.args is not None else None
            if not corr:  # none, or Kineto's 0 for a kernel it could not name (CuptiRangeProfiler.cpp at cd8d3190)
                timeline.unlinked_ranges += 1
            elif len(timeline.profiler_ranges) < RANGE_CAP:
                timeline.profiler_ranges.append(corr)
        cat = ev.cat
        if cat == "user_annotation" and len(timeline.annotations) < ANNOTATION_CAP:
            timeline.annotations.append((ev.pid, ev.tid, start, end, self._name(name)))
        elif cat == "gpu_user_annotation" and len(timeline.gpu_annotations) < ANNOTATION_CAP:
            timeline.gpu_annotations.append((start, end, self._name(name)))
        elif cat in OVERHEAD_CATEGORIES and len(timeline.overheads) < ANNOTATION_CAP:
            corr = as_int(ev.args.correlation) if ev.args is not None else None  # bounded: an id, not damage
            measured = end if dur <= MEASURABLE else start  # 1.7e308 µs is no time, as a 400-digit one is none
            timeline.overheads.append((start, measured, self._name(name), corr))

    def _gpu_op(self, ev: Event) -> None:
        args = ev.args or _NO_ARGS
        ts, dur, corr, device, stream = _number(ev.ts), _number(ev.dur), args.correlation, args.device, args.stream
        if ts is None:
            return
        if stream is not None and type(stream) not in (int, str, float, bool):
            stream = str(stream)[:64]
        self.c.timeline.gpu_ops.add(
            ts,
            dur or 0.0,
            corr if type(corr) is int else as_int(corr),
            (self._name(ev.name), ev.pid, ev.tid, _device(device), stream),
        )

    def _python(self, ev: Event) -> None:
        start = _number(ev.ts)
        if start is not None:
            self.c.python.add(ev.pid, ev.tid, start, start + (_number(ev.dur) or 0.0), self._frame_ref(ev.name))

    def merge(self, part: PieceResult) -> None:
        """A worker's block, in file order: kernels and indexes appended."""
        c = self.c
        part.kernels.map_names(self._name)
        c.kernels.extend(part.kernels)
        c.runtime.merge(part.runtime)
        c.ops.merge(part.ops)
        c.python.merge(part.python)
        c.non_finite.update(part.non_finite)
        c.events += part.events
        c.full_precision = c.full_precision or part.full_precision
        c.rounded = c.rounded or part.rounded
        c.counter_events += part.counter_events
        c.counters.merge(part.counters)
        c.timeline.merge(part.timeline)
        if part.last_ts is not None:
            c.last_ts = part.last_ts

    def _dims(self, value: Any) -> tuple[int, int, int] | None:
        dims = dim3(value)
        return None if dims is None else self._dim_tuples.setdefault(dims, dims)

    def _value(self, value: Any) -> ReportedValue:
        """``reported()``, memoised: a trace repeats the same few thousand values."""
        if value is None or type(value) not in (int, float, str):
            return reported(value)
        found = self._reported.get(value)
        if found is None:
            found = self._reported[value] = reported(value)
            if type(value) is float and not self.c.rounded:
                written = written_precision(value)
                self.c.full_precision = self.c.full_precision or written > 0
                self.c.rounded = written < 0
        return found

    def _profiler_occupancy(self, value: Any) -> ProfilerOccupancy | None:
        """Kineto's occupancy object, one record per distinct object (a trace repeats a few)."""
        if type(value) is not dict:
            return None
        key = tuple(value.items())
        try:
            found = self._occupancies.get(key)
        except TypeError:  # a list or object inside: not a profiler's, read it once and keep nothing shared
            return profiler_occupancy(value)
        if found is None:
            found = self._occupancies[key] = profiler_occupancy(value)
        return found

    def _kernel(self, ev: Event) -> None:
        args = ev.args or _NO_ARGS
        occupancy_key = None
        occupancy_value = args.occupancy
        if occupancy_value is not None:
            occupancy_key = OCCUPANCY_KEY
        elif args.theoretical is not None:
            occupancy_key, occupancy_value = THEORETICAL_KEY, args.theoretical
        device, correlation, registers, smem = args.device, args.correlation, args.registers, args.shared_memory
        ts, dur = ev.ts, ev.dur
        value = self._value
        bps, wps, occ = value(args.blocks_per_sm), value(args.warps_per_sm), value(occupancy_value)
        stream = args.stream if args.original_stream is None else args.original_stream  # Cuspy's lanes: the real one
        if stream is not None and type(stream) not in (int, str, float, bool):
            stream = str(stream)[:64]  # a list or object as a stream id: shown, never a key that breaks
        # Positional: this runs for every kernel of a gigabyte trace (field order of KernelRecord).
        self.c.kernels.add(
            ts if type(ts) is float else (_number(ts) or 0.0),
            dur if type(dur) is float else (_number(dur) or 0.0),
            correlation if type(correlation) is int else as_int(correlation),
            (
                self._name(ev.name),
                ev.pid,
                ev.tid,
                device if type(device) is int and -INT_LIMIT < device < INT_LIMIT else as_int(device),
                stream,
                self._dims(args.grid),
                self._dims(args.block),
                registers if type(registers) is int else as_int(registers),
                smem if type(smem) is int else as_int(smem),
                bps,
                wps,
                occ,
                occupancy_key,
                args.fixed if isinstance(args.fixed, str) else None,
                self._profiler_occupancy(args.profiler_occupancy),
            ),
        )
        if bps.spelling != "number" or wps.spelling != "number" or occ.spelling != "number":
            self._count_non_finite(bps, wps, occ)

    def _count_non_finite(self, *values: ReportedValue) -> None:
        """The kernel's metrics written as inf or nan (bare or quoted), counted by spelling."""
        for r in values:
            if r.spelling in ("bare", "quoted") and r.value is not None and not math.isfinite(r.value):
                self.c.non_finite[r.spelling] += 1


def pure_collect_events(collector: Collector, events: list[Event]) -> None:  # noqa: PLR0912 - one flat dispatch
    """Each decoded event into the collector's tables, dispatched by its category: the Python twin of the compiled
    core's ``collect_events`` (wizard/_core.c), which runs instead where it is built and not refused
    (``WARPWIZARD_PURE=1``). Both give the same tables, the same bounds and the same errors; the tests compare
    them (tests/trace/test_compiled_core_json.py)."""
    c = collector.c
    categories = c.timeline.categories
    categories.update(map(_CAT_OF, events))  # counted at C speed
    categories.pop(None, None)  # type: ignore[call-overload]
    add_op = c.ops.add
    add_call = c.runtime.add
    op_ref = collector._op_ref
    # The JSON decoder gives every time as a float (events.Event): the checks below are one type test each, and
    # the two commonest kinds (ops, runtime calls) are handled inline (a method call per event was 8% of a read).
    for ev in events:
        cat = ev.cat
        if cat in OP_CATEGORIES:
            ts, dur = ev.ts, ev.dur
            if type(ts) is not float:
                ts = _number(ts)
                if ts is None:
                    continue
            if type(dur) is not float:
                dur = _number(dur) or 0.0
            add_op(ev.pid, ev.tid, ts, ts + dur, op_ref(ev))
        elif cat in RUNTIME_CATEGORIES:  # every call with a start, with or without a correlation id
            ts, dur = ev.ts, ev.dur
            if type(ts) is not float:
                ts = _number(ts)
                if ts is None:
                    continue
            if type(dur) is not float:
                dur = _number(dur) or 0.0
            args = ev.args
            corr = args.correlation if args is not None else None
            if type(corr) is not int and corr is not None:
                corr = as_int(corr)
            name = ev.name
            if type(name) is str and len(name) > MAX_NAME:  # cut_name, inline: once per call
                name = name[:MAX_NAME]
            add_call(corr, ev.pid, ev.tid, ts, name, dur=dur)
        elif cat in _OTHER_TABLES:  # one lookup for the rest of the tables: flow events are as common as ops
            if cat in KERNEL_CATEGORIES:
                collector._kernel(ev)
            elif cat in PYTHON_CATEGORIES:
                collector._python(ev)
            else:
                collector._gpu_op(ev)
        elif ev.dur is not None:  # a complete ("X") event: annotations, steps, ...: where they lie in time
            collector._complete(ev)
        elif type(ev.pid) is str and ev.pid.endswith(" Counters"):
            c.counter_events += 1


def compiled_collect_events() -> Callable[[Collector, list[Event]], None] | None:
    """The core's ``collect_events``, handed this module's categories, bounds and twins; None where the core is not
    built, refused (``WARPWIZARD_PURE=1``) or of another API (``core.py``)."""
    core = compiled_core()
    if core is None:
        return None
    core.json_bind(
        OP_CATEGORIES, RUNTIME_CATEGORIES, KERNEL_CATEGORIES, PYTHON_CATEGORIES, GPU_OP_CATEGORIES, MAX_NAME,
        _number, as_int, _ThreadIntervals, _NO_ARGS, OCCUPANCY_KEY, THEORETICAL_KEY, reported(None),
        pure_collect_events, Event, EventArgs, _keys(Event), _keys(EventArgs), Collector,
    )  # fmt: skip
    compiled: Callable[[Collector, list[Event]], None] = core.collect_events
    return compiled


def _keys(struct: type[Struct]) -> tuple[tuple[str, str], ...]:
    """A struct's fields as (attribute, JSON name), in its order: the keys the core's scanner looks for."""
    return tuple((f.name, f.encode_name) for f in msgspec.structs.fields(struct))


def _bind_json_core() -> Callable[[Collector, list[Event]], None]:
    """The compiled ``collect_events`` where the core is usable, else its twin."""
    return compiled_collect_events() or pure_collect_events


collect_events = _bind_json_core()
COMPILED = collect_events is not pure_collect_events


def _bind_scan() -> Callable[[Collector, bytes, int, int, ScanAhead | None], bool] | None:
    """The core's ``scan_events`` where the compiled collector is bound (it hands events to that collector's
    dispatch), else None: every block is decoded by msgspec, its twin."""
    core = compiled_core() if COMPILED else None
    return None if core is None else core.scan_events


scan_events = _bind_scan()


def _bind_scan_release() -> Callable[[], int] | None:
    """The core's ``scan_release`` where ``scan_events`` is the core's, else None (nothing kept)."""
    core = compiled_core() if scan_events is not None else None
    return None if core is None else core.scan_release


_scan_release = _bind_scan_release()


def new_scan_ahead() -> ScanAhead | None:
    """A ``ScanAhead`` of the core's where ``scan_events`` is the core's, else None (no thread: each block is
    scanned when it is added)."""
    core = compiled_core() if scan_events is not None else None
    if core is None:
        return None
    made: ScanAhead = core.ScanAhead()
    return made


def release_scan_arrays() -> int:
    """The arrays ``scan_events`` keeps from one block for the next, freed: called when a read's blocks are done, so
    they are not resident in the passes' peaks (up to a block's events and their spans, a few MiB); and the last
    kernels' shapes the core keeps from block to block for its collector, emptied. The bytes freed."""
    return 0 if _scan_release is None else _scan_release()
