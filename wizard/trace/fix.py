"""``trace fix``: a copy of a trace with the impossible values replaced by the true ones.

Perfetto, TensorBoard and HTA then show true numbers. Each corrected kernel keeps what the
profiler wrote under ``warpwizard original`` and the mechanism under ``warpwizard mechanism``;
only the values that were wrong are replaced (blocks and warps per SM as the exact quotients,
occupancy as the integer percent the profiler itself prints). Every other event is copied byte
for byte, except that a bare ``inf``/``nan`` token (invalid JSON, mechanism C') becomes the string
``"inf"``/``"nan"``, as later profilers write it: the copy is always valid JSON, also when the
input was cut off (the event list and the object are closed after the last complete event).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from wizard.errors import InputFileError
from wizard.formatting import non_finite_text
from wizard.outputs import atomic_file, check_output
from wizard.progress import NO_PROGRESS, Progress, reading
from wizard.trace.kineto_math import prints_truth
from wizard.trace.metrics.detectors import MemoChecker
from wizard.trace.metrics.devices import device_table
from wizard.trace.read.collector import TraceContents, Truncation
from wizard.trace.read.events import BARE_MARK, GPU_OP_CATEGORIES, as_float
from wizard.trace.read.reader import KERNEL_CATEGORIES, EventSink, nesting_budget, parse_into, read_trace
from wizard.trace.read.records import NO_CORRELATION, KernelRecord
from wizard.trace.read.remote import is_url, shown

ORIGINAL_ARG = "warpwizard original"
ORIGINAL_TID_ARG = "warpwizard original tid"
MECHANISM_ARG = "warpwizard mechanism"
_MARKED = re.compile(rb'"' + re.escape(BARE_MARK.encode()) + rb'(-?(?:inf|nan|Infinity|NaN))"')


@dataclass(slots=True)
class FixSummary:
    source: str
    output: str
    kernels: int
    corrected: int
    mechanisms: dict[str, int]
    uncorrectable: int
    truncation: Truncation | None = None
    moved: int = 0  # kernels put on an extra lane by --split-overlaps
    lanes: int = 0  # extra lanes made for them
    moved_other: int = 0  # copies, syncs and annotations of kernel rows moved with them


def _quoted(raw: bytes) -> bytes:
    """An event's bytes with every bare non-finite token as a JSON string."""
    return _MARKED.sub(rb'"\1"', raw) if BARE_MARK.encode() in raw else raw


def _unmarked(value: Any) -> Any:
    """A decoded value with the reader's bare-token marker taken off its strings."""
    if isinstance(value, str) and value.startswith(BARE_MARK):
        return value[len(BARE_MARK) :]
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _json_value(value: float | int, *, typed: bool) -> Any:
    """A corrected value in the trace's own spelling: non-finite as a string; in a typed (PyTorch 2.14)
    trace a whole number as an integer, as the profiler writes it. Doubles keep their full precision."""
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite_text(value)
    if typed and isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False).encode()


class _FixSink(EventSink):
    raw = True

    def __init__(
        self,
        out: IO[bytes],
        corrections: dict[int, tuple[str, dict[str, Any]]],
        array: bool,
        typed: bool,
        lanes: Lanes | None = None,
    ) -> None:
        self.out = out
        self.lanes = lanes
        self.typed = typed
        self.corrections = corrections
        self.array = array
        self.kernel_index = 0
        self.first_key = True
        self.first_event = True
        self.events_open = False

    def _key(self, key: str) -> None:
        self.out.write(b"\n" if self.first_key else b",\n")
        self.first_key = False
        self.out.write(b"  " + _dumps(key) + b": ")

    def meta(self, key: str, value: Any) -> None:
        self._key(key)
        self.out.write(_dumps(_unmarked(value)))

    def events_start(self) -> None:
        if not self.array:
            self._key("traceEvents")
        self.out.write(b"[")
        self.events_open = True

    def events_end(self) -> None:
        if self.lanes is not None:  # name the extra lanes, as the profiler names its rows
            for event in self.lanes.names():
                self._write(_dumps(event))
        self.out.write(b"\n]")
        self.events_open = False

    def add_raw(self, events: list[bytes]) -> None:
        for raw in events:
            self._write(self._fix(raw) if b'ernel"' in raw else self._not_kernel(raw))

    def _not_kernel(self, raw: bytes) -> bytes:
        """Any other event: a flow end or a copy, sync or annotation that moves with --split-overlaps, or as it is."""
        lanes = self.lanes
        if lanes is not None and lanes.flows and b'"f"' in raw:
            return self._move_flow(raw)
        if lanes is not None and lanes.marks and any(mark in raw for mark in lanes.marks):
            return self._move_other(raw)
        return _quoted(raw)

    def _write(self, raw: bytes) -> None:
        """One event of the copy's list, after a separator."""
        self.out.write(b"\n  " if self.first_event else b",\n  ")
        self.first_event = False
        self.out.write(raw)

    def _fix(self, raw: bytes) -> bytes:
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):  # ValueError: also a number of more than 4,300 digits
            return _quoted(raw)
        if not isinstance(event, dict):
            return _quoted(raw)
        if event.get("cat") not in KERNEL_CATEGORIES:  # "kernel" in a name or an argument
            return self._not_kernel(raw)
        index = self.kernel_index
        self.kernel_index += 1
        fix = self.corrections.get(index)
        lane = self.lanes.moved.get(index) if self.lanes is not None else None
        args = event.get("args")
        if lane is not None and args is None:
            event["args"] = args = {}
        if (fix is None and lane is None) or not isinstance(args, dict):
            return _quoted(raw)
        event = _unmarked(event)
        args = event["args"]
        if lane is not None:
            args[ORIGINAL_TID_ARG] = event.get("tid")
            event["tid"] = lane
        if fix is None:
            return _dumps(event)
        mechanism, values = fix
        original: dict[str, Any] = {}
        for metric, value in values.items():
            if metric in args:
                original[metric] = args[metric]
                args[metric] = _json_value(value, typed=self.typed)
        args[ORIGINAL_ARG] = original
        args[MECHANISM_ARG] = mechanism
        return _dumps(event)

    def _move_flow(self, raw: bytes) -> bytes:
        """A flow arrow's end follows its own event (same id, row and start) to that event's lane: Perfetto binds an
        end with ``bp: "e"`` to the top slice of its row at its time (flow_tracker.cc ``End``), so on the lane it
        binds to that event and nothing else moves (a graph replay's kernels share one id)."""
        assert self.lanes is not None
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            return _quoted(raw)
        if not isinstance(event, dict) or event.get("ph") != "f":  # '"f"' elsewhere in the event
            marks = self.lanes.marks
            return self._move_other(raw) if marks and any(mark in raw for mark in marks) else _quoted(raw)
        where = (event.get("pid"), event.get("tid"), _number(event.get("ts")))
        lane = self.lanes.flows.get((event.get("id"), *where)) or self.lanes.flows.get((None, *where))
        if lane is None:
            return _quoted(raw)
        event = _unmarked(event)
        event["tid"] = lane
        return _dumps(event)

    def _move_other(self, raw: bytes) -> bytes:
        """A copy, set, sync or annotation that cannot nest on a kernel row, to its lane (matched by category, row,
        start and duration: identical events nest alike)."""
        assert self.lanes is not None
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            return _quoted(raw)
        if not isinstance(event, dict) or event.get("ph") != "X":
            return _quoted(raw)
        cat = event.get("cat")
        where = (event.get("pid"), event.get("tid"), _number(event.get("ts")), _number(event.get("dur")) or 0.0)
        lane = self.lanes.gpu_ops.get(where) if cat in GPU_OP_CATEGORIES else self.lanes.others.get((cat, *where))
        if lane is None:
            return _quoted(raw)
        event = _unmarked(event)
        args = event.get("args")
        if not isinstance(args, dict):
            event["args"] = args = {}
        args[ORIGINAL_TID_ARG] = event.get("tid")
        event["tid"] = lane
        return _dumps(event)


def _number(value: Any) -> float | None:
    """A time as the reader reads it (numbers as they are, numeric strings parsed)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return None
    return as_float(value)


class Lanes:
    """``--split-overlaps``: the events Perfetto cannot nest on a kernel row (``kernels-overlap``: kernels, and the
    copies, syncs and annotations beside them), and those nested past its depth limit (``nesting.MAX_DEPTH``, which
    it drops), moved to extra rows of that row, the lowest one free at each start (``nesting.lanes``, O(n log n)),
    named after the row's stream; every flow end follows its own event only."""

    def __init__(self, contents: TraceContents) -> None:
        self.moved: dict[int, str] = {}  # kernel index -> its new tid
        self.gpu_ops: dict[tuple[Any, ...], str] = {}  # (pid, tid, ts, dur) -> new tid
        self.others: dict[tuple[Any, ...], str] = {}  # (cat, pid, tid, ts, dur) -> new tid
        self.flows: dict[tuple[Any, ...], str] = {}  # (id or None, pid, tid, ts) of an arrow's end
        self.rows: dict[tuple[Any, str], str] = {}  # (pid, new tid) -> the row's name
        self.marks: tuple[bytes, ...] = ()  # bytes an event to move besides kernels holds (its category)
        import numpy as np

        from wizard.trace.health import nesting  # numpy, only when asked

        events = nesting.gather(contents)
        hidden, _, deep = nesting.walk(events)
        moves = nesting.lanes(events, np.union1d(hidden, deep))  # sorted: the rows' order, as lanes takes them
        self.scans = moves.scans
        kernels, ops, slices = contents.kernels, contents.timeline.gpu_ops, contents.timeline.slices
        streams: dict[tuple[Any, Any], Any] = {}  # a row's stream, named by its kernels
        for shape in kernels.columns()[4]:
            streams.setdefault(nesting.perfetto_row(shape[1], shape[2]), shape[4])
        marks: set[bytes] = set()
        for (kind, ref), lane in moves.lanes.items():
            if kind == nesting.KERNEL:
                k = kernels[ref]
                pid, tid, ts, corr = k.pid, k.tid, k.ts, k.correlation
            elif kind == nesting.GPU_OP:
                shape = ops.shapes[ops.shape[ref]]
                pid, tid, ts = shape[1], shape[2], ops.ts[ref]
                corr = None if ops.corr[ref] == NO_CORRELATION else ops.corr[ref]
            else:
                pid, tid, cat = slices.rows[slices.row[ref]]
                ts, corr = slices.ts[ref], None
            stream = streams.get(nesting.perfetto_row(pid, tid), tid)
            name = f"stream {stream} overlap {lane}"
            self.rows[(pid, name)] = f"stream {stream} (overlapping kernels, lane {lane})"
            self.flows[(corr, pid, tid, ts)] = name
            if kind == nesting.KERNEL:
                self.moved[ref] = name
            elif kind == nesting.GPU_OP:
                self.gpu_ops[(pid, tid, ts, ops.dur[ref])] = name
                marks.update(_dumps(c) for c in GPU_OP_CATEGORIES)
            else:
                self.others[(cat, pid, tid, ts, slices.dur[ref])] = name
                marks.add(_dumps(cat))
        self.marks = tuple(sorted(marks))

    @property
    def moved_other(self) -> int:
        return len(self.gpu_ops) + len(self.others)

    def names(self) -> list[dict[str, Any]]:
        return [
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            for (pid, tid), name in self.rows.items()
        ]


def wrong_values(k: KernelRecord, corrected: dict[str, float | int | None]) -> dict[str, float | int]:
    """The corrected values of the metrics this launch has wrong; a right value is never rewritten."""
    written = {"blocks per SM": k.blocks_per_sm, "warps per SM": k.warps_per_sm}
    if k.occupancy_key is not None:
        written[k.occupancy_key] = k.occupancy
    out: dict[str, float | int] = {}
    for metric, truth in corrected.items():
        reported = written.get(metric)
        if truth is None or reported is None or reported.value is None:
            continue  # nothing to compare with, or nothing the profiler wrote
        if prints_truth(reported.value, float(truth)):
            continue
        out[metric] = truth
    return out


def fix_trace(
    source: str | Path,
    output: str | Path,
    *,
    force: bool = False,
    split_overlaps: bool = False,
    progress: Progress = NO_PROGRESS,
) -> FixSummary:
    """Write ``output`` (gzip if it ends in .gz) with corrected kernel metrics (and, with ``split_overlaps``,
    overlapping kernels on rows of their own).

    The output is checked before the input is read (never the input itself, even through a
    hard link; never a file that exists, unless ``force``) and appears only when complete.
    """
    if is_url(source):  # a path would fold the URL's // and say "no such file"
        raise InputFileError(f"{shown(str(source))}: trace fix rewrites a local file: copy the object here first")
    with nesting_budget():  # the reader and the fixer's own json.loads take the same nesting
        return _fix_trace(Path(source), Path(output), force=force, split_overlaps=split_overlaps, progress=progress)


def _fix_trace(src: Path, out: Path, *, force: bool, split_overlaps: bool, progress: Progress) -> FixSummary:
    check_output(out, inputs=[src], force=force, what="corrected trace")
    with reading(progress, src) as on_read:
        contents = read_trace(src, on_read=on_read)
    devices = device_table(contents.device_properties, contents.kernels)
    checker = MemoChecker(devices, contents.is_rocm, contents.typed)
    corrections: dict[int, tuple[str, dict[str, Any]]] = {}
    mechanisms: dict[str, int] = {}
    uncorrectable = 0
    for k in contents.kernels:
        result = checker.check(k)
        bugs = [f for f in result.findings if f.mechanism.correctable]
        if not bugs:
            continue
        names = "+".join(sorted({f.mechanism.value for f in bugs}))
        mechanisms[names] = mechanisms.get(names, 0) + 1
        values = wrong_values(k, result.corrected)
        if not values:
            uncorrectable += 1
            continue
        corrections[k.index] = (names, values)
    with atomic_file(out, inputs=[src], force=force, what="corrected trace") as target:
        compressed = gzip.GzipFile(fileobj=target, mode="wb", mtime=0) if out.name.endswith(".gz") else None
        fh = cast(IO[bytes], compressed) if compressed is not None else target
        lanes = Lanes(contents) if split_overlaps else None
        sink = _FixSink(fh, corrections, contents.layout == "array", contents.typed, lanes)
        if contents.layout != "array":
            fh.write(b"{")
        with reading(progress, src, "writing the corrected copy") as on_read:
            parsed = parse_into(src, sink, on_read=on_read)
        if sink.events_open:  # the input was cut off inside the event list: close it here
            sink.events_end()
        fh.write(b"\n" if contents.layout == "array" else b"\n}\n")
        if compressed is not None:
            compressed.close()
    return FixSummary(
        str(src),
        str(out),
        len(contents.kernels),
        len(corrections),
        mechanisms,
        uncorrectable,
        parsed.truncation,
        moved=len(lanes.moved) if lanes else 0,
        lanes=len(lanes.rows) if lanes else 0,
        moved_other=lanes.moved_other if lanes else 0,
    )
