"""What the per-trace health checks read: the reader's flat tables as numpy arrays, made once per trace when a
check first needs them (``Tables``), and the small array helpers the checks share.

numpy is imported here, and this module only inside a check's function, after the read: the checks' declarations
(wizard/trace/health/checks/) stay light for the CLI, the probes and the docs.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from wizard.trace.health.spec import GRAPH_LAUNCH_CALLS, LAUNCH_CALLS, SAMPLES, WINDOW_CHUNK, HealthExample
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.records import NO_CORRELATION

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.integer[Any]]


class Calls(msgspec.Struct, eq=False):
    """The runtime calls, classified once by name."""

    ts: Floats
    corr: Ints
    thread: Ints
    launch: npt.NDArray[np.bool_]
    graph: npt.NDArray[np.bool_]
    names: list[str]
    name_of: Ints

    @classmethod
    def of(cls, contents: TraceContents) -> Calls:
        rt = contents.runtime
        names = rt.name_list
        kinds = np.array(
            [0 if n in LAUNCH_CALLS else 1 if n in GRAPH_LAUNCH_CALLS else 2 for n in names] or [2], dtype=np.int8
        )
        name_of = ints(rt.names)
        kind = kinds[name_of] if len(name_of) else np.zeros(0, dtype=np.int8)
        return cls(floats(rt.starts), ints(rt.correlations), ints(rt.threads), kind == 0, kind == 1, names, name_of)


class Kernels(msgspec.Struct, eq=False):
    ts: Floats
    dur: Floats
    corr: Ints
    shape: Ints
    shapes: list[tuple[Any, ...]]

    @classmethod
    def of(cls, contents: TraceContents) -> Kernels:
        ts, dur, corr, shape, shapes = contents.kernels.columns()
        return cls(floats(ts), floats(dur), ints(corr), ints(shape), shapes)

    def example(self, i: int, detail: str = "") -> HealthExample:
        s = self.shapes[int(self.shape[i])]
        corr = int(self.corr[i])
        return HealthExample(
            str(s[0]), float(self.ts[i]), float(self.dur[i]), s[4], s[3],
            None if corr == NO_CORRELATION else corr, s[1], s[2], detail,
        )  # fmt: skip

    def order(self) -> Ints | None:
        """Kernel positions by start, file order for ties (the stable sort's); None where the kernels are in that
        order already (a NaN start is not): no sort, and no gathered copies of the columns by an identity."""
        ts = self.ts
        if len(ts) < 2 or bool((ts[1:] >= ts[:-1]).all()):
            return None
        return np.argsort(ts, kind="stable").astype(np.int64, copy=False)


def spread(positions: Ints) -> Ints:
    """At most SAMPLES of these positions, evenly spread."""
    step = max(1, -(-len(positions) // SAMPLES))
    return positions[::step]


def kernel_samples(kernels: Kernels, positions: Ints) -> list[tuple[float, str]]:
    return [
        (float(kernels.ts[i]), f"stream {kernels.shapes[int(kernels.shape[i])][4]}")
        for i in spread(np.sort(positions)).tolist()
    ]


def call_samples(contents: TraceContents, calls: Calls, positions: Ints) -> list[tuple[float, str]]:
    return [
        (float(calls.ts[i]), f"tid {contents.runtime.thread(int(calls.thread[i]))[1]}")
        for i in spread(positions).tolist()
    ]


def floats(values: Any) -> Floats:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0, dtype=np.float64)


def ints(values: Any) -> Ints:
    """An array's items as numpy integers, without a copy (ids stay 32-bit where they were)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(values, dtype=np.int64 if values.itemsize == 8 else np.int32)


def distinct(values: Ints) -> Ints:
    """The values sorted, each once (``np.unique``'s hash path is slow on a million ids in numpy 2.4); without the
    sort where they already are (correlation ids in launch order: a sort of 5 million was ~50 ms, the look ~5)."""
    if len(values) < 2:
        return np.sort(values)
    keep = np.empty(len(values), dtype=bool)
    np.greater_equal(values[1:], values[:-1], out=keep[1:])
    ordered = values if bool(keep[1:].all()) else np.sort(values)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def median(values: npt.NDArray[Any]) -> float:
    """``np.median`` of a 1-D array, the same value (the mean of the middle one or two, NaN where one is NaN)
    without the numpy.ma import that np.median makes on its first call (17 ms of a small trace's start-up)."""
    ordered = np.sort(values)
    if not len(ordered):
        return math.nan
    if np.isnan(ordered[-1]):
        return float(ordered[-1])
    n = len(ordered)
    return float(ordered[(n - 1) // 2 : n // 2 + 1].mean())


DENSE = 4  # ids spanning up to this many values an id (and 4096) are looked up in a table, not searched
CHUNK = 1 << 18  # values a lookup's temporaries hold: reused, where a whole column's of 5 million is fresh memory


def _span(sorted_ids: Ints) -> tuple[np.int64, np.int64] | None:
    """The smallest and largest id where the ids are dense enough for a table of their span (``DENSE``), else
    None. Correlation ids are handed out one after another: a table of their span is a few bytes an id, and one
    look each where a binary search took ~23 (240 instructions a value, and a cache miss or more at 5 million)."""
    low, high = int(sorted_ids[0]), int(sorted_ids[-1])
    if high - low >= DENSE * len(sorted_ids) + 4096 or high - low >= 1 << 31:
        return None
    return np.int64(low), np.int64(high)  # 64-bit arithmetic whatever the values' width


def _offsets(values: Ints, low: np.int64, high: np.int64) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """Each value's offset from ``low`` (32-bit; 0 outside [low, high]) and whether it lies inside."""
    inside = values >= low
    inside &= values <= high
    offsets = np.empty(len(values), dtype=np.int32)
    np.subtract(values, low, out=offsets, where=inside, casting="unsafe")  # within [0, high - low] where inside
    offsets *= inside  # 0 outside (and where nothing was written)
    return offsets, inside


def _chunks(n: int) -> range:
    return range(0, n, CHUNK)


def searched(part: Ints, sorted_ids: Ints, found: npt.NDArray[np.bool_]) -> Ints:
    """Each value's place among ``sorted_ids`` by binary search (clipped to the last), and in ``found`` whether the
    id there is the value (``sorted_ids`` not empty): the sparse path of ``member`` and ``find``, and the summary
    table's lookups a chunk at a time."""
    near = np.searchsorted(sorted_ids, part)
    np.minimum(near, len(sorted_ids) - 1, out=near)
    np.equal(sorted_ids[near], part, out=found)
    return near


def member(values: Ints, sorted_ids: Ints) -> npt.NDArray[np.bool_]:
    """``np.isin`` for a sorted id array: a table of the ids' span where they are dense (``_span``), else a binary
    search; no sort of the two arrays together (a gigabyte trace's million calls would need a temporary of tens of
    megabytes), and a chunk of values at a time (temporaries of ``CHUNK`` values)."""
    found = np.zeros(len(values), dtype=bool)
    if not len(sorted_ids) or not len(values):
        return found
    span = _span(sorted_ids)
    if span is None:
        for at in _chunks(len(values)):
            searched(values[at : at + CHUNK], sorted_ids, found[at : at + CHUNK])
        return found
    low, high = span
    seen = np.zeros(int(high - low) + 1, dtype=bool)
    for at in _chunks(len(sorted_ids)):
        seen[sorted_ids[at : at + CHUNK] - low] = True
    for at in _chunks(len(values)):
        offsets, inside = _offsets(values[at : at + CHUNK], low, high)
        np.logical_and(seen[offsets], inside, out=found[at : at + CHUNK])
    return found


def find(values: Ints, sorted_ids: Ints) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """For each value, the position of the equal id among ``sorted_ids`` (sorted, each once; fewer than 2**31) and
    whether there is one (the position is meaningless where not): ``np.searchsorted``'s where it finds the value,
    by a table of the ids' span where they are dense (``_span``), a chunk of values at a time."""
    where = np.zeros(len(values), dtype=np.int32)
    found = np.zeros(len(values), dtype=bool)
    if not len(sorted_ids) or not len(values):
        return where, found
    span = _span(sorted_ids)
    if span is None:
        for at in _chunks(len(values)):
            where[at : at + CHUNK] = searched(values[at : at + CHUNK], sorted_ids, found[at : at + CHUNK])
        return where, found
    low, high = span
    table = np.full(int(high - low) + 1, -1, dtype=np.int32)  # each id's position; -1: no id
    for at in _chunks(len(sorted_ids)):
        part = sorted_ids[at : at + CHUNK]
        table[part - low] = np.arange(at, at + len(part), dtype=np.int32)
    for at in _chunks(len(values)):
        offsets, inside = _offsets(values[at : at + CHUNK], low, high)
        got = where[at : at + CHUNK]
        np.take(table, offsets, out=got, mode="clip")  # offsets within the table: clip changes none
        np.greater_equal(got, 0, out=found[at : at + CHUNK])
        found[at : at + CHUNK] &= inside
    return where, found


def call_example(contents: TraceContents, calls: Calls, i: int, detail: str = "") -> HealthExample:
    pid, tid = contents.runtime.thread(int(calls.thread[i]))
    corr = int(calls.corr[i])
    return HealthExample(
        calls.names[int(calls.name_of[i])], float(calls.ts[i]), None, None, None,
        None if corr == NO_CORRELATION else corr, pid, tid, detail,
    )  # fmt: skip


class Tables:
    """What a per-trace check reads of the trace (``tables``): its contents, and the calls, kernels and window as
    arrays, made when a check first needs them (the kernel checks' result is ``metrics``, asked for apart)."""

    def __init__(self, contents: TraceContents) -> None:
        self.contents = contents
        self._calls: Calls | None = None
        self._kernels: Kernels | None = None
        self._window: tuple[tuple[float, float] | None] | None = None

    @property
    def calls(self) -> Calls:
        if self._calls is None:
            self._calls = Calls.of(self.contents)
        return self._calls

    @property
    def kernels(self) -> Kernels:
        if self._kernels is None:
            self._kernels = Kernels.of(self.contents)
        return self._kernels

    @property
    def window(self) -> tuple[float, float] | None:
        if self._window is None:
            self._window = (window(self.contents),)
        return self._window[0]


def window(contents: TraceContents) -> tuple[float, float] | None:
    """From the smallest start to the largest end over every complete event (a negative duration ends
    where it starts)."""
    starts: list[float] = []
    ends: list[float] = []

    def span(ts: Any, dur: Any) -> None:
        t, d = floats(ts), floats(dur)
        for at in range(0, len(t), WINDOW_CHUNK):  # chunks: no temporary the size of a million calls
            part = np.maximum(d[at : at + WINDOW_CHUNK], 0.0)
            part += t[at : at + WINDOW_CHUNK]
            starts.append(float(t[at : at + WINDOW_CHUNK].min()))
            ends.append(float(part.max()))

    span(contents.kernels.columns()[0], contents.kernels.columns()[1])
    if len(contents.runtime):
        starts.append(float(floats(contents.runtime.starts).min()))
        ends.append(contents.runtime.last_end)
    span(contents.timeline.gpu_ops.ts, contents.timeline.gpu_ops.dur)
    for index in (contents.ops, contents.python):
        for thread_starts, thread_ends in index.arrays():
            first = floats(thread_starts)
            starts.append(float(first.min()))
            ends.append(max(float(first.max()), float(floats(thread_ends).max())))
    if math.isfinite(contents.timeline.first_ts):
        starts.append(contents.timeline.first_ts)
        ends.append(contents.timeline.last_end)
    if not starts:
        return None
    return min(starts), max(ends)
