"""The health checks' counts, over the reader's flat tables with numpy (docs/health.md defines each).

Gathering (the tables as arrays), judging (a status from the counts) and wording (what it means) are
kept apart per check; a gigabyte trace's checks cost a fraction of its read.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from wizard.formatting import plural, verb
from wizard.trace.collector import TraceContents
from wizard.trace.health import (
    CAPTURE_BEGIN,
    CAPTURE_END,
    CHECK_IDS,
    CHECKS,
    COLLECTIVE_INSTANCES,
    COLLECTIVE_NAMES,
    EXAMPLES,
    GRAPH_LAUNCH_CALLS,
    LAUNCH_CALLS,
    SAMPLES,
    WINDOW_CHUNK,
    HealthCheck,
    HealthExample,
    make_check,
    not_applicable,
)
from wizard.trace.records import NO_CORRELATION
from wizard.trace.summary_table import profiler_overhead, summary_table_check

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.integer[Any]]


# -- gathering: the trace's tables as numpy arrays ------------------------------------------------


@dataclass(slots=True)
class _Calls:
    """The runtime calls, classified once by name."""

    ts: Floats
    corr: Ints
    thread: Ints
    launch: npt.NDArray[np.bool_]
    graph: npt.NDArray[np.bool_]
    names: list[str]
    name_of: Ints

    @classmethod
    def of(cls, contents: TraceContents) -> _Calls:
        rt = contents.runtime
        names = rt.name_list
        kinds = np.array(
            [0 if n in LAUNCH_CALLS else 1 if n in GRAPH_LAUNCH_CALLS else 2 for n in names] or [2], dtype=np.int8
        )
        name_of = _ints(rt.names)
        kind = kinds[name_of] if len(name_of) else np.zeros(0, dtype=np.int8)
        return cls(_floats(rt.starts), _ints(rt.correlations), _ints(rt.threads), kind == 0, kind == 1, names, name_of)


@dataclass(slots=True)
class _Kernels:
    ts: Floats
    dur: Floats
    corr: Ints
    shape: Ints
    shapes: list[tuple[Any, ...]]

    @classmethod
    def of(cls, contents: TraceContents) -> _Kernels:
        ts, dur, corr, shape, shapes = contents.kernels.columns()
        return cls(_floats(ts), _floats(dur), _ints(corr), _ints(shape), shapes)

    def example(self, i: int, detail: str = "") -> HealthExample:
        s = self.shapes[int(self.shape[i])]
        corr = int(self.corr[i])
        return HealthExample(
            str(s[0]), float(self.ts[i]), float(self.dur[i]), s[4], s[3],
            None if corr == NO_CORRELATION else corr, s[1], s[2], detail,
        )  # fmt: skip

    def order(self) -> Ints:
        """Kernel positions by start, file order for ties."""
        return np.argsort(self.ts, kind="stable").astype(np.int64)


def _spread(positions: Ints) -> Ints:
    """At most SAMPLES of these positions, evenly spread."""
    step = max(1, -(-len(positions) // SAMPLES))
    return positions[::step]


def _kernel_samples(kernels: _Kernels, positions: Ints) -> list[tuple[float, str]]:
    return [
        (float(kernels.ts[i]), f"stream {kernels.shapes[int(kernels.shape[i])][4]}")
        for i in _spread(np.sort(positions)).tolist()
    ]


def _call_samples(contents: TraceContents, calls: _Calls, positions: Ints) -> list[tuple[float, str]]:
    return [
        (float(calls.ts[i]), f"tid {contents.runtime.thread(int(calls.thread[i]))[1]}")
        for i in _spread(positions).tolist()
    ]


def _floats(values: Any) -> Floats:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0, dtype=np.float64)


def _ints(values: Any) -> Ints:
    """An array's items as numpy integers, without a copy (ids stay 32-bit where they were)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(values, dtype=np.int64 if values.itemsize == 8 else np.int32)


def _distinct(values: Ints) -> Ints:
    """The values sorted, each once (``np.unique``'s hash path is slow on a million ids in numpy 2.4)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _member(values: Ints, sorted_ids: Ints) -> npt.NDArray[np.bool_]:
    """``np.isin`` for a sorted id array, by binary search: no sort of the two arrays together (a gigabyte
    trace's million calls would need a temporary of tens of megabytes)."""
    if not len(sorted_ids) or not len(values):
        return np.zeros(len(values), dtype=bool)
    where = np.searchsorted(sorted_ids, values)
    np.minimum(where, len(sorted_ids) - 1, out=where)
    found: npt.NDArray[np.bool_] = sorted_ids[where] == values
    return found


def _call_example(contents: TraceContents, calls: _Calls, i: int, detail: str = "") -> HealthExample:
    pid, tid = contents.runtime.thread(int(calls.thread[i]))
    corr = int(calls.corr[i])
    return HealthExample(
        calls.names[int(calls.name_of[i])], float(calls.ts[i]), None, None, None,
        None if corr == NO_CORRELATION else corr, pid, tid, detail,
    )  # fmt: skip


def window(contents: TraceContents) -> tuple[float, float] | None:
    """From the smallest start to the largest end over every complete event (a negative duration ends
    where it starts)."""
    starts: list[float] = []
    ends: list[float] = []

    def span(ts: Any, dur: Any) -> None:
        t, d = _floats(ts), _floats(dur)
        for at in range(0, len(t), WINDOW_CHUNK):  # chunks: no temporary the size of a million calls
            part = np.maximum(d[at : at + WINDOW_CHUNK], 0.0)
            part += t[at : at + WINDOW_CHUNK]
            starts.append(float(t[at : at + WINDOW_CHUNK].min()))
            ends.append(float(part.max()))

    span(contents.kernels.columns()[0], contents.kernels.columns()[1])
    if len(contents.runtime):
        starts.append(float(_floats(contents.runtime.starts).min()))
        ends.append(contents.runtime.last_end)
    span(contents.timeline.gpu_ops.ts, contents.timeline.gpu_ops.dur)
    for index in (contents.ops, contents.python):
        for thread_starts, thread_ends in index.arrays():
            first = _floats(thread_starts)
            starts.append(float(first.min()))
            ends.append(max(float(first.max()), float(_floats(thread_ends).max())))
    if math.isfinite(contents.timeline.first_ts):
        starts.append(contents.timeline.first_ts)
        ends.append(contents.timeline.last_end)
    if not starts:
        return None
    return min(starts), max(ends)


def impossible_metrics(contents: TraceContents, wrong_launches: int, checked: int) -> HealthCheck:
    if not checked:
        reason = "no kernel carries blocks or warps per SM to check" if len(contents.kernels) else "no GPU kernels"
        return not_applicable("impossible-metrics", reason, wrong_launches=0)
    if not wrong_launches:
        return make_check(
            "impossible-metrics", 0, "ok", f"every one of {plural(checked, 'checked launch')} "
            "holds possible values", "", details={"wrong_launches": 0},
        )  # fmt: skip
    return make_check(
        "impossible-metrics",
        wrong_launches,
        "error",
        f"{plural(wrong_launches, 'launch')} with an impossible or wrong blocks/warps per SM or occupancy",
        "the profiler computed these values wrongly; read the true values in the findings, not the trace's",
        details={"wrong_launches": wrong_launches},
    )


def _captured(contents: TraceContents, calls: _Calls) -> npt.NDArray[np.bool_]:
    """Launch calls made while their thread was capturing a graph (between Begin and End capture)."""
    captured = np.zeros(len(calls.ts), dtype=bool)
    begin_ids = {n for n, name in enumerate(calls.names) if name in CAPTURE_BEGIN}
    if not begin_ids:
        return captured
    end_ids = {n for n, name in enumerate(calls.names) if name in CAPTURE_END}
    marks = np.isin(calls.name_of, list(begin_ids | end_ids))
    relevant = np.flatnonzero(marks | calls.launch)
    capturing_threads = set(calls.thread[np.isin(calls.name_of, list(begin_ids))].tolist())
    relevant = relevant[np.isin(calls.thread[relevant], list(capturing_threads))]
    order = relevant[np.lexsort((relevant, calls.ts[relevant], calls.thread[relevant]))]
    open_threads: set[int] = set()
    for i in order.tolist():
        name_id, thread = int(calls.name_of[i]), int(calls.thread[i])
        if name_id in begin_ids:
            open_threads.add(thread)
        elif name_id in end_ids:
            open_threads.discard(thread)
        elif thread in open_threads:
            captured[i] = True
    return captured


def kernels_missing(
    contents: TraceContents, calls: _Calls, kernels: _Kernels, span: tuple[float, float] | None
) -> HealthCheck:
    launches = int(calls.launch.sum())
    if not launches:
        return not_applicable(
            "kernels-missing", "no kernel launch calls in this trace to compare kernels against",
            launches=0, in_last_1pct=0, captured=0, no_correlation=0,
        )  # fmt: skip
    captured = _captured(contents, calls) & calls.launch
    has_id = calls.corr != NO_CORRELATION
    no_correlation = int((calls.launch & ~has_id).sum())
    kernel_ids = _distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    candidates = calls.launch & has_id & ~captured
    chosen = np.flatnonzero(candidates)
    missing = chosen[~_member(calls.corr[chosen], kernel_ids)]
    late = 0
    if len(missing) and span is not None:
        first, last = span
        late = int((calls.ts[missing] >= last - 0.01 * (last - first)).sum())
    count = len(missing)
    apis = np.bincount(calls.name_of[calls.launch], minlength=len(calls.names))
    details = {
        "launches": launches,
        "in_last_1pct": late,
        "captured": int(captured.sum()),
        "no_correlation": no_correlation,
        "apis": {calls.names[n]: int(c) for n, c in enumerate(apis.tolist()) if c},
    }
    examples = [
        _call_example(contents, calls, i, "no kernel event has this correlation id") for i in missing[:EXAMPLES]
    ]
    if not count:
        return make_check("kernels-missing", 0, "ok", f"every one of {plural(launches, 'launch call')} has its kernel",
                      "", details=details)  # fmt: skip
    share = count / launches
    if late == count:
        return make_check(
            "kernels-missing", count, "info",
            f"{plural(count, 'launch')} in the last 1% of the trace "
            f"{verb(count, 'has', 'have')} no kernel: "
            "cut by the profiler's stop",
            "expected at the end of a profiling window; the numbers before it are complete",
            details=details, examples=examples,
        )  # fmt: skip
    samples = _call_samples(contents, calls, missing)
    return make_check(
        "kernels-missing", count, "error",
        f"{plural(count, 'launch')} of {launches} ({share:.1%}) "
        f"{verb(count, 'has', 'have')} no kernel event",
        "GPU time, idle %, kernel counts and every per-op GPU figure read from this trace are too low: the "
        "profiler dropped kernel records (CUPTI failing, records out of range after a second profiling "
        "session, buffer overflow, or the trace read before the flush)",
        details=details, examples=examples, samples=samples,
    )  # fmt: skip


def _lanes(kernels: _Kernels) -> Ints:
    """Each kernel's (device, stream) lane as a number."""
    lane_ids: dict[tuple[Any, Any], int] = {}
    per_shape = np.array([lane_ids.setdefault((s[3], s[4]), len(lane_ids)) for s in kernels.shapes] or [0])
    return per_shape[kernels.shape].astype(np.int64) if len(kernels.shape) else np.zeros(0, dtype=np.int64)


def overlapping(kernels: _Kernels) -> Ints:
    """Kernels that start before an earlier kernel on their (device, stream) ended, in lane-and-time order."""
    n = len(kernels.ts)
    if n < 2:
        return np.zeros(0, dtype=np.int64)
    lanes = _lanes(kernels)
    order = np.lexsort((kernels.ts, lanes))  # stable: file order for ties
    ts = kernels.ts[order]
    ends = ts + np.maximum(kernels.dur[order], 0.0)
    lane = lanes[order]
    bounds = np.flatnonzero(np.diff(lane)) + 1
    hits: list[Ints] = []
    for start, stop in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [n])), strict=True):
        if stop - start < 2:
            continue
        running = np.maximum.accumulate(ends[start : stop - 1])
        found = np.flatnonzero(ts[start + 1 : stop] < running) + start + 1
        if len(found):
            hits.append(order[found])
    return np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)


def overlapping_kernels(contents: TraceContents) -> list[int]:
    """The positions of the kernels a viewer hides (``kernels-overlap``), for ``trace fix --split-overlaps``."""
    return sorted(overlapping(_Kernels.of(contents)).tolist())


def kernels_overlap(kernels: _Kernels) -> HealthCheck:
    n = len(kernels.ts)
    if not n:
        return not_applicable("kernels-overlap", "no GPU kernels", kernels=0, lanes=0)
    hidden = overlapping(kernels)
    lanes = _lanes(kernels)
    affected = len(_distinct(lanes[hidden])) if len(hidden) else 0
    details = {"kernels": n, "lanes": affected}
    if not len(hidden):
        return make_check("kernels-overlap", 0, "ok", "no two kernels overlap on one stream", "", details=details)
    first = np.sort(hidden)[:EXAMPLES]
    return make_check(
        "kernels-overlap",
        len(hidden),
        "warning",
        f"{plural(len(hidden), 'kernel')} {verb(len(hidden), 'starts', 'start')} before the previous kernel on "
        f"{verb(len(hidden), 'its', 'their')} stream ended "
        f"({plural(affected, 'stream')})",
        "Perfetto drops (and chrome://tracing misnests) a complete event that overlaps an earlier one on the same "
        "row, so these kernels are in the file but not on screen; `warpwizard trace fix --split-overlaps` writes "
        "a copy that shows them all. Programmatic Dependent Launch overlaps kernels legitimately",
        details=details,
        examples=[kernels.example(int(i), "starts before the previous kernel on its stream ended") for i in first],
        samples=_kernel_samples(kernels, hidden),
    )


def graph_launches(contents: TraceContents, calls: _Calls, kernels: _Kernels) -> HealthCheck:
    graphs = int(calls.graph.sum())
    launches = int(calls.launch.sum())
    graph_ids = _distinct(calls.corr[calls.graph & (calls.corr != NO_CORRELATION)])
    replayed = int(_member(kernels.corr, graph_ids).sum()) if len(graph_ids) else 0
    mode = "eager" if not graphs else ("graph" if not launches else "mixed")
    details = {"kernels": replayed, "mode": mode}
    if not graphs:
        return make_check("graph-launches", 0, "ok", "no graph launches: an eager trace", "", details=details)
    return make_check(
        "graph-launches",
        graphs,
        "warning",
        f"{plural(graphs, 'graph launch')} {verb(graphs, 'stands', 'stand')} for "
        f"{plural(replayed, 'kernel')} ({mode} trace)",
        "a graph launch runs many kernels from one call, so per-op GPU time cannot be attributed to PyTorch ops, "
        "and profilers under-record replays: idle % and GPU busy time from this trace are unreliable. "
        "Compare with an eager trace of the same step",
        details=details,
        examples=[_call_example(contents, calls, int(i)) for i in np.flatnonzero(calls.graph)[:EXAMPLES]],
    )


def unlinked_kernels(calls: _Calls, kernels: _Kernels) -> HealthCheck:
    n = len(kernels.ts)
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    if not (calls.launch | calls.graph).any():
        return not_applicable("unlinked-kernels", "the trace has no launch or graph-launch calls", kernels=n)
    ids = _distinct(calls.corr[linked_calls])
    orphans = np.flatnonzero(~_member(kernels.corr, ids))
    early = int((kernels.ts[orphans] < calls.ts.min()).sum()) if len(orphans) else 0
    details = {"kernels": n, "before_first_call": early}
    if not len(orphans):
        return make_check("unlinked-kernels", 0, "ok", "every kernel links to its launch call", "", details=details)
    before = (
        f"; {early} of them ran before the trace's first runtime call (launched before the profiler started)"
        if early
        else ""
    )
    return make_check(
        "unlinked-kernels",
        len(orphans),
        "warning",
        f"{plural(len(orphans), 'kernel')} of {n} {verb(len(orphans), 'links', 'link')} to no launch call{before}",
        "these kernels cannot be attributed to the op or Python line that launched them, and analyzers that "
        "follow launch links (critical path, launch latency) skip them: the launch API may be one the profiler "
        "does not record (cuLaunchKernelEx, Triton, ROCm) or the calls were dropped",
        details=details,
        examples=[kernels.example(int(i), "no launch call has this correlation id") for i in orphans[:EXAMPLES]],
        samples=_kernel_samples(kernels, orphans),
    )


def durations(contents: TraceContents, kernels: _Kernels) -> HealthCheck:
    ops = contents.timeline.gpu_ops
    op_dur = _floats(ops.dur)
    events = len(kernels.ts) + len(op_dur)
    if not events:
        return not_applicable("durations", "no GPU events", zero=0, gpu_events=0)
    negative_k = np.flatnonzero(kernels.dur < 0)
    negative_o = np.flatnonzero(op_dur < 0)
    zero = int((kernels.dur == 0).sum())
    count = len(negative_k) + len(negative_o)
    details = {"zero": zero, "gpu_events": events}
    if not count:
        summary = "no negative durations" + (f"; {plural(zero, 'kernel')} of zero duration" if zero else "")
        return make_check("durations", 0, "ok", summary, "", details=details)
    examples = [kernels.example(int(i), "negative duration") for i in negative_k[:EXAMPLES]]
    for i in negative_o[: max(0, EXAMPLES - len(examples))]:
        s = ops.shapes[ops.shape[i]]
        examples.append(
            HealthExample(str(s[0]), ops.ts[i], ops.dur[i], s[4], s[3], None, s[1], s[2], "negative duration")
        )
    return make_check(
        "durations",
        count,
        "error",
        f"{plural(count, 'GPU event')} with a negative duration"
        + (f"; {plural(zero, 'kernel')} of zero duration" if zero else ""),
        "sums and means of GPU time over these events are wrong (a negative duration subtracts time); the "
        "timestamps were recorded wrongly (an end of 0 or -1, deferred completion on ROCm)",
        details=details,
        examples=examples,
        samples=_kernel_samples(kernels, negative_k),
    )


def clock_skew(contents: TraceContents, calls: _Calls, kernels: _Kernels) -> HealthCheck:
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    empty = {"linked": 0, "min_us": None, "median_us": None, "drift_us": None, "trend": "constant"}
    if not linked_calls.any() or not len(kernels.ts):
        return not_applicable("clock-skew", "no kernel links to a launch call", **empty)
    ids, ts = calls.corr[linked_calls], calls.ts[linked_calls]
    by_id = np.lexsort((ts, ids))
    ids, ts = ids[by_id], ts[by_id]
    first = np.concatenate(([True], ids[1:] != ids[:-1]))
    ids, ts = ids[first], ts[first]  # the earliest call per correlation id
    order = kernels.order()
    where = np.searchsorted(ids, kernels.corr[order])
    where_ok = where < len(ids)
    found = np.zeros(len(order), dtype=bool)
    found[where_ok] = ids[where[where_ok]] == kernels.corr[order][where_ok]
    linked = order[found]
    if not len(linked):
        return not_applicable("clock-skew", "no kernel links to a launch call", **empty)
    offsets = kernels.ts[linked] - ts[where[found]]
    before = linked[offsets < 0]
    third = len(offsets) // 3
    median = float(np.median(offsets))
    drift = float(np.median(offsets[-third:]) - np.median(offsets[:third])) if third else None
    tolerance = max(10.0, 0.25 * abs(median))
    trend = "constant" if drift is None or abs(drift) <= tolerance else ("growing" if drift > 0 else "shrinking")
    details = {
        "linked": len(linked),
        "min_us": float(offsets.min()),
        "median_us": median,
        "drift_us": drift,
        "trend": trend,
    }
    if not len(before):
        return make_check(
            "clock-skew", 0, "ok", f"every kernel starts after its launch call (median {median:.1f} µs later)", "",
            details=details,
        )  # fmt: skip
    worst = float(offsets.min())
    return make_check(
        "clock-skew",
        len(before),
        "warning",
        f"{plural(len(before), 'kernel')} {verb(len(before), 'starts before its', 'start before their')} own launch "
        f"call (by up to {-worst:.3f} µs; "
        f"offsets {trend})",
        "GPU and CPU clocks disagree in this trace: launch latency, the CPU-GPU gaps and the flow arrows are "
        "wrong by the offset; a constant offset is a clock-domain difference, a growing one is drift or "
        "timestamps from several profiling sessions in one process",
        details=details,
        examples=[kernels.example(int(i), "starts before its launch call") for i in np.sort(before)[:EXAMPLES]],
        samples=_kernel_samples(kernels, before),
    )


def _size_on_disk(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def trace_size(contents: TraceContents) -> HealthCheck:
    categories = dict(sorted(contents.timeline.categories.items(), key=lambda kv: (-kv[1], str(kv[0]))))
    count = sum(categories.values())
    size = _size_on_disk(contents.path) if contents.path else contents.bytes_read
    python = categories.get("python_function", 0)
    share = python / count if count else 0.0
    largest = next(iter(categories), None)
    details = {"categories": categories, "bytes": size, "python_share": share, "largest": largest}
    if not count:
        return make_check("trace-size", 0, "ok", "no categorised events", "", details=details)
    why = (
        f"python_function events are {share:.0%} of the events: the trace was recorded with with_stack=True"
        if share >= 0.4
        else f"most events are {largest!s:.40} ({categories[largest] if largest else 0})"
    )
    return make_check(
        "trace-size",
        count,
        "info",
        f"{plural(count, 'event')} in {_bytes(size)}; {why}",
        "a trace above a few hundred MB may not open in Perfetto or TensorBoard: profile fewer active steps, "
        "drop with_stack or record_shapes where not needed",
        details=details,
    )


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def stacks_missing(contents: TraceContents) -> HealthCheck:
    categories = contents.timeline.categories
    cpu_ops = categories.get("cpu_op", 0) + categories.get("Operator", 0)
    if not cpu_ops:
        return not_applicable("stacks-missing", "no CPU ops in this trace", cpu_ops=0)
    if categories.get("python_function", 0):
        return make_check("stacks-missing", 0, "ok", "Python stacks were recorded", "", details={"cpu_ops": cpu_ops})
    return make_check(
        "stacks-missing",
        cpu_ops,
        "info",
        f"{plural(cpu_ops, 'CPU op')} without Python stacks (no python_function events)",
        "findings name the op and shapes that launched a kernel but not the Python line; profile with "
        "with_stack=True to get it",
        details={"cpu_ops": cpu_ops},
    )


# -- one trace, every check ----------------------------------------------------------------------


class _Tables:
    """The calls and kernels as arrays, made when a selected check first needs them."""

    def __init__(self, contents: TraceContents) -> None:
        self.contents = contents
        self._calls: _Calls | None = None
        self._kernels: _Kernels | None = None

    @property
    def calls(self) -> _Calls:
        if self._calls is None:
            self._calls = _Calls.of(self.contents)
        return self._calls

    @property
    def kernels(self) -> _Kernels:
        if self._kernels is None:
            self._kernels = _Kernels.of(self.contents)
        return self._kernels


def check_trace(
    contents: TraceContents, *, wrong_launches: int, checked: int, selected: frozenset[str] | None = None
) -> list[HealthCheck]:
    """Every selected per-trace check, in the registry's order."""
    chosen = set(CHECK_IDS) if selected is None else selected
    tables = _Tables(contents)
    makers: dict[str, Callable[[], HealthCheck]] = {
        "impossible-metrics": lambda: impossible_metrics(contents, wrong_launches, checked),
        "kernels-missing": lambda: kernels_missing(contents, tables.calls, tables.kernels, window(contents)),
        "kernels-overlap": lambda: kernels_overlap(tables.kernels),
        "graph-launches": lambda: graph_launches(contents, tables.calls, tables.kernels),
        "unlinked-kernels": lambda: unlinked_kernels(tables.calls, tables.kernels),
        "durations": lambda: durations(contents, tables.kernels),
        "clock-skew": lambda: clock_skew(contents, tables.calls, tables.kernels),
        "trace-size": lambda: trace_size(contents),
        "stacks-missing": lambda: stacks_missing(contents),
        "summary-table": lambda: summary_table_check(contents),
        "profiler-overhead": lambda: profiler_overhead(contents, window(contents)),
    }
    return [makers[c.id]() for c in CHECKS if c.scope == "trace" and c.id in chosen]


def collectives(contents: TraceContents) -> dict[str, list[float]]:
    """NCCL kernels' starts per name, in order (by start, file order for ties): what the cross-rank
    check needs from each rank, small enough to travel in a per-rank summary."""
    kernels = _Kernels.of(contents)
    named = [n for n, s in enumerate(kernels.shapes) if "nccl" in str(s[0]).lower()]
    if not named:
        return {}
    by_name: dict[str, list[int]] = {}
    for n in named:
        by_name.setdefault(str(kernels.shapes[n][0]), []).append(n)
    out: dict[str, list[float]] = {}
    for name in sorted(by_name)[:COLLECTIVE_NAMES]:
        mine = np.flatnonzero(np.isin(kernels.shape, by_name[name]))
        starts = np.sort(kernels.ts[mine], kind="stable")
        out[name] = starts[:COLLECTIVE_INSTANCES].tolist()
    return out


def rank_skew(ranks: Mapping[int, Mapping[str, Sequence[float]]]) -> HealthCheck:
    """How far the same collective's starts differ across ranks (the i-th kernel of one NCCL name on each)."""
    order = sorted(ranks)
    if len(order) < 2:
        reason = "not a rank directory: rank skew compares the traces of one job, a trace per rank"
        return not_applicable("rank-skew", reason, ranks=order, median_us=None, max_us=None, last_by_rank={})
    names = set.intersection(*(set(ranks[r]) for r in order))
    skews: list[float] = []
    last: Counter[int] = Counter()
    examples: list[HealthExample] = []
    for name in sorted(names):
        depth = min(len(ranks[r][name]) for r in order)
        if not depth:
            continue
        starts = np.array([list(ranks[r][name][:depth]) for r in order])  # ranks x instances
        spread = starts.max(axis=0) - starts.min(axis=0)
        skews.extend(spread.tolist())
        latest = np.argmax(starts, axis=0)  # first (lowest) rank among equals
        last.update(order[int(r)] for r in latest)
        worst = int(np.argmax(spread))
        if len(examples) < EXAMPLES:
            examples.append(
                HealthExample(name, float(starts[:, worst].min()), 0.0, None, None, None, None, None,
                              f"instance {worst}: rank {order[int(latest[worst])]} started {spread[worst]:.1f} µs "
                              "after the first")
            )  # fmt: skip
    details = {
        "ranks": order,
        "median_us": float(np.median(skews)) if skews else None,
        "max_us": float(max(skews)) if skews else None,
        "last_by_rank": {str(r): n for r, n in sorted(last.items())},
    }
    if not skews:
        return make_check("rank-skew", 0, "ok", "no NCCL collective is present on every rank", "", details=details)
    straggler, times = last.most_common(1)[0]
    return make_check(
        "rank-skew",
        len(skews),
        "warning",
        f"{plural(len(skews), 'collective')} across {len(order)} ranks {verb(len(skews), 'starts', 'start')} up to "
        f"{max(skews):.1f} µs apart "
        f"(median {details['median_us']:.1f} µs); rank {straggler} started last {times} times",
        "an NCCL kernel's time on the early ranks includes waiting for the last rank to arrive: read it as "
        "launch skew, not transfer time, and look at the straggler rank's work before the collective",
        details=details,
        examples=examples,
    )
