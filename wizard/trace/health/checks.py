"""The health checks' counts, over the reader's flat tables with numpy (docs/health.md defines each).

Gathering (the tables as arrays), judging (a status from the counts) and wording (what it means) are
kept apart per check; a gigabyte trace's checks cost a fraction of its read. Each per-trace check's function
registers under the id its declaration has (``@runs``; ``CHECKS`` in spec.py), and ``check_trace`` runs them.
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
from wizard.trace.health import nesting
from wizard.trace.health.spec import (
    CAPTURE_BEGIN,
    CAPTURE_END,
    CHECK_IDS,
    CHECKS,
    COLLECTIVE_INSTANCES,
    COLLECTIVE_NAMES,
    EXAMPLES,
    GRAPH_LAUNCH_CALLS,
    LAUNCH_CALLS,
    PDL_LAUNCH_CALLS,
    PDL_OVERLAP_US,
    PYTHON_SHARE_WORTH_A_WORD,
    RANK,
    RANK_SKEW_FLOOR_US,
    ROUNDING_US,
    SAMPLES,
    SIZE_CATEGORIES,
    SIZE_WORTH_A_WORD,
    SPEC,
    WINDOW_CHUNK,
    HealthCheck,
    HealthExample,
    make_check,
    not_applicable,
)
from wizard.trace.health.summary_table import profiler_overhead, summary_table_check
from wizard.trace.metrics.mechanisms import BY_ID, is_wrong
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.records import NO_CORRELATION, PROCESS_SHIFT

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


class Tables:
    """What a per-trace check reads: the trace's contents, the kernel checks' counts, and the calls, kernels and
    window as arrays, made when a check first needs them."""

    def __init__(
        self,
        contents: TraceContents,
        wrong_launches: int = 0,
        checked: int = 0,
        mechanisms: Mapping[str, int] | None = None,
    ) -> None:
        self.contents = contents
        self.wrong_launches = wrong_launches
        self.checked = checked
        self.mechanisms: Mapping[str, int] = mechanisms or {}
        self._calls: _Calls | None = None
        self._kernels: _Kernels | None = None
        self._window: tuple[tuple[float, float] | None] | None = None

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

    @property
    def window(self) -> tuple[float, float] | None:
        if self._window is None:
            self._window = (window(self.contents),)
        return self._window[0]


Check = Callable[[Tables], HealthCheck]
RUNS: dict[str, Check] = {}  # a per-trace check's function by its id: what ``check_trace`` runs


def runs(check_id: str) -> Callable[[Check], Check]:
    """Register the function that runs the per-trace check ``check_id`` (declared in ``CHECKS``, spec.py)."""

    if check_id not in SPEC or SPEC[check_id].scope != "trace":
        raise ValueError(f"{check_id}: not a declared per-trace check (CHECKS, spec.py)")

    def register(function: Check) -> Check:
        if check_id in RUNS:
            raise ValueError(f"{check_id}: a function is registered twice")
        RUNS[check_id] = function
        return function

    return register


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


def metrics_status(mechanisms: Mapping[str, int]) -> str:
    """The worst severity the flagship's conclusions give the wrong mechanisms found (``Mechanism.verdict``,
    the one table both read): E alone is the flagship's ``info``; an id no table knows is an ``error``."""
    worst: str | None = None
    for mechanism_id, n in mechanisms.items():
        found = BY_ID.get(mechanism_id)
        if not n or (found is not None and not found.wrong):
            continue
        verdict = found.verdict if found is not None else "error"
        worst = verdict if worst is None or RANK[verdict] > RANK[worst] else worst
    return worst or "error"  # wrong launches with no mechanism named: nothing says they are benign


@runs("impossible-metrics")
def impossible_metrics(t: Tables) -> HealthCheck:
    contents, wrong_launches, checked, mechanisms = t.contents, t.wrong_launches, t.checked, t.mechanisms
    if not checked:
        reason = "no kernel carries blocks or warps per SM to check" if len(contents.kernels) else "no GPU kernels"
        return not_applicable("impossible-metrics", reason, wrong_launches=0, mechanisms={})
    wrong = {m: n for m, n in sorted(mechanisms.items()) if n and is_wrong(m)}
    details = {"wrong_launches": wrong_launches, "mechanisms": wrong}
    if not wrong_launches:
        return make_check(
            "impossible-metrics", 0, "ok", f"every one of {plural(checked, 'checked launch')} "
            "holds possible values", "", details=details,
        )  # fmt: skip
    status = metrics_status(wrong)
    named = "; ".join(f"{m} ({n}), {BY_ID[m].summary}" if m in BY_ID else f"{m} ({n})" for m, n in wrong.items())
    meaning = (
        "the profiler judged occupancy with the default 48 KB shared-memory limit (mechanism E): the kernels "
        "ran as they should; read the true occupancy in the findings, not the trace's 0%"
        if status == "info"
        else "the profiler computed these values wrongly; read the true values in the findings, not the trace's"
    )
    what = (
        "a wrong value that is the profiler's and harmless"
        if status == "info"
        else "an impossible or wrong blocks/warps per SM or occupancy"
    )
    return make_check(
        "impossible-metrics",
        wrong_launches,
        status,
        f"{plural(wrong_launches, 'launch')} with {what}: {named}",
        meaning,
        details=details,
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


@runs("kernels-missing")
def kernels_missing(t: Tables) -> HealthCheck:
    contents, calls, kernels, span = t.contents, t.calls, t.kernels, t.window
    launches = int(calls.launch.sum())
    if not launches:
        return not_applicable(
            "kernels-missing", "no kernel launch calls in this trace to compare kernels against",
            launches=0, in_last_1pct=0, captured=0, no_correlation=0, profiler_ranges=0,
        )  # fmt: skip
    captured = _captured(contents, calls) & calls.launch
    has_id = calls.corr != NO_CORRELATION
    no_correlation = int((calls.launch & ~has_id).sum())
    kernel_ids = _distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    candidates = calls.launch & has_id & ~captured
    chosen = np.flatnonzero(candidates)
    missing = chosen[~_member(calls.corr[chosen], kernel_ids)]
    late_mask = np.zeros(len(missing), dtype=bool)
    if len(missing) and span is not None:
        first, last = span
        late_mask = calls.ts[missing] >= last - 0.01 * (last - first)
    late = int(late_mask.sum())
    # Kineto's CUPTI range profiler writes a cuda_profiler_range event (with counters) per kernel, carrying the
    # launch's correlation id, instead of a kernel event: the launch was measured, not dropped
    ranges = _distinct(np.array(contents.timeline.profiler_ranges, dtype=np.int64))
    ranged_mask = _member(calls.corr[missing], ranges) if len(ranges) else np.zeros(len(missing), dtype=bool)
    ranged = int(ranged_mask.sum())
    count = len(missing)
    apis = np.bincount(calls.name_of[calls.launch], minlength=len(calls.names))
    details = {
        "launches": launches,
        "in_last_1pct": late,
        "captured": int(captured.sum()),
        "no_correlation": no_correlation,
        "profiler_ranges": ranged,
        "apis": {calls.names[n]: int(c) for n, c in enumerate(apis.tolist()) if c},
    }
    if not count:
        return make_check("kernels-missing", 0, "ok", f"every one of {plural(launches, 'launch call')} has its kernel",
                      "", details=details)  # fmt: skip
    dropped = missing[~(late_mask | ranged_mask)]
    examples = [
        _call_example(contents, calls, int(i), "no kernel event has this correlation id")
        for i in (dropped if len(dropped) else missing)[:EXAMPLES]
    ]
    share = count / launches
    if ranged and not len(dropped):
        return make_check(
            "kernels-missing", count, "info",
            f"a CUPTI range-profiler trace: {plural(ranged, 'launch')} of {launches} "
            f"{verb(ranged, 'has', 'have')} a cuda_profiler_range event with counters instead of a kernel"
            + (f"; {count - ranged} more in the last 1%, cut by the profiler's stop" if count > ranged else ""),
            "the range profiler measures each kernel's counters and records no kernel events: nothing was dropped, "
            "but the trace has no kernel times (GPU time, idle %, per-op GPU time); profile without the range "
            "profiler for those",
            details=details, examples=examples,
        )  # fmt: skip
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


@dataclass(slots=True)
class _Hidden:
    """The kernels-overlap check's facts: which events of the kernel rows Perfetto cannot nest."""

    kernels: Ints  # kernel positions, in the rows' order
    overlap_ns: Ints  # per kernel: how long it shares with the open event it cannot nest under
    overhang_ns: Ints  # per kernel: how far it runs past that event's end
    under_kernel: npt.NDArray[np.bool_]  # per kernel: that open event is a kernel (not an annotation, copy, ...)
    rows: int  # rows holding such a kernel
    others: Counter[str]  # non-kernel events that cannot nest, by category


def _hidden(contents: TraceContents) -> _Hidden:
    """Perfetto's rule over the kernel rows (``nesting``), kept to the kernels, and the rest counted by category."""
    events = nesting.gather(contents)
    hidden, against = nesting.cannot_nest(events)
    is_kernel = events.kind[hidden] == nesting.KERNEL if len(hidden) else np.zeros(0, dtype=bool)
    mine, theirs = hidden[is_kernel], against[is_kernel]
    others = Counter(events.categories[j] for j in hidden[~is_kernel].tolist())
    return _Hidden(
        events.ref[mine],
        events.ts[theirs] + events.dur[theirs] - events.ts[mine],
        events.ts[mine] + events.dur[mine] - events.ts[theirs] - events.dur[theirs],
        events.kind[theirs] == nesting.KERNEL,
        len(_distinct(events.row[mine])),
        others,
    )


def _pdl(calls: _Calls, corr: Ints) -> npt.NDArray[np.bool_]:
    """Which of these correlation ids an eager launch call that can ask for PDL made."""
    ex = np.array([n in PDL_LAUNCH_CALLS for n in calls.names] or [False])
    made = calls.launch & ex[calls.name_of] if len(calls.name_of) else np.zeros(0, dtype=bool)
    ids = _distinct(calls.corr[made & (calls.corr != NO_CORRELATION)])
    return _member(corr, ids)


@runs("kernels-overlap")
def kernels_overlap(t: Tables) -> HealthCheck:
    contents, calls, kernels = t.contents, t.calls, t.kernels
    n = len(kernels.ts)
    if not n:
        return not_applicable(
            "kernels-overlap", "no GPU kernels",
            kernels=0, lanes=0, pdl=0, rounding=0, graph=0, max_overlap_us=0.0, other_events={},
        )  # fmt: skip
    found = _hidden(contents)
    count = len(found.kernels)
    corr = kernels.corr[found.kernels]
    overlap_us = found.overlap_ns / 1000.0
    launched_ex = _pdl(calls, corr)
    pdl = launched_ex & found.under_kernel & (overlap_us <= PDL_OVERLAP_US)
    rounding = ~found.under_kernel & (found.overhang_ns <= ROUNDING_US * 1000)
    graph_ids = _distinct(calls.corr[calls.graph & (calls.corr != NO_CORRELATION)])
    graph = int(_member(corr, graph_ids).sum())
    details = {
        "kernels": n, "lanes": found.rows, "pdl": int(pdl.sum()), "rounding": int(rounding.sum()), "graph": graph,
        "max_overlap_us": float(overlap_us.max()) if count else 0.0,
        "other_events": dict(sorted(found.others.items(), key=lambda kv: (-kv[1], kv[0]))),
    }  # fmt: skip
    status, summary, meaning = _overlap_verdict(count, found, details, overlap_us)
    if not count:
        return make_check("kernels-overlap", 0, status, summary, meaning, details=details)
    first = np.argsort(found.kernels, kind="stable")[:EXAMPLES].tolist()
    return make_check(
        "kernels-overlap", count, status, summary, meaning, details=details,
        examples=[
            kernels.example(
                int(found.kernels[i]),
                f"starts {overlap_us[i]:.3f} µs before the {'kernel' if found.under_kernel[i] else 'event'} "
                "open on its row ends, and ends after it"
                + (" (launched with cuLaunchKernelEx/cudaLaunchKernelExC)" if launched_ex[i] else ""),
            )
            for i in first
        ],
        samples=_kernel_samples(kernels, found.kernels),
    )  # fmt: skip


def _overlap_verdict(count: int, found: _Hidden, details: dict[str, Any], overlap_us: Floats) -> tuple[str, str, str]:
    """Status and words: overlaps of PDL's size with its launch evidence, and ends a rounding apart, are ``info``
    (only the viewer suffers); anything else a ``warning`` (a duration that overruns its successor, or an overlap
    nothing in the trace asked for)."""
    others = sum(found.others.values())
    other_words = (
        f"; {plural(others, 'other GPU event')} ({', '.join(found.others)}) cannot nest either" if others else ""
    )
    if not count:
        return "ok", f"every kernel nests on its row, as Perfetto draws it{other_words}", ""
    pdl, rounding, graph = details["pdl"], details["rounding"], details["graph"]
    rest = count - pdl - rounding
    summary = (
        f"{plural(count, 'kernel')} {verb(count, 'starts', 'start')} inside an earlier event on "
        f"{verb(count, 'its', 'their')} row and {verb(count, 'ends', 'end')} after it "
        f"({plural(found.rows, 'row')}, by up to {float(overlap_us.max()):.3f} µs): hidden before Perfetto v57, "
        f"apart with a wrong launch arrow from v57{other_words}"
    )
    causes = []
    if pdl:
        causes.append(
            f"{plural(pdl, 'kernel')} launched with cuLaunchKernelEx/cudaLaunchKernelExC "
            f"{verb(pdl, 'overlaps', 'overlap')} a kernel by at most {PDL_OVERLAP_US:g} µs: Programmatic Dependent "
            "Launch, the GPU ran them overlapped on purpose"
        )
    if rounding:
        causes.append(
            f"{plural(rounding, 'kernel')} {verb(rounding, 'ends', 'end')} at most {ROUNDING_US:g} µs after the "
            f"annotation or copy around {verb(rounding, 'it', 'them')}: the same microsecond, apart once Perfetto "
            "rounds microseconds to nanoseconds"
        )
    if rest:
        replay = (
            f", {plural(graph, 'graph-replay kernel')} among them (one cudaGraphLaunch: not Programmatic Dependent "
            "Launch)"
            if graph
            else ""
        )
        causes.append(
            f"{plural(rest, 'other')} overrun the event before {verb(rest, 'it', 'them')}{replay}: a recorded "
            "duration or time the GPU cannot have had, or an overlap nothing in the trace asked for"
        )
    meaning = (
        "Perfetto cannot nest a slice that starts inside another on its row and ends after it: v51 to v56 drop it "
        "(hidden), v57 on (ui.perfetto.dev) draw it on an extra row, and in both its launch arrow binds to the "
        "row's top slice, another event; older Perfetto builds embedded in other tools may misnest it. "
        f"{'; '.join(causes)}. `warpwizard trace fix --split-overlaps` writes a copy with them on rows of their own "
        "and each arrow on its own kernel"
    )
    return ("info" if rest == 0 else "warning"), summary, meaning


@runs("graph-launches")
def graph_launches(t: Tables) -> HealthCheck:
    contents, calls, kernels = t.contents, t.calls, t.kernels
    graphs = int(calls.graph.sum())
    launches = int(calls.launch.sum())
    with_id = np.flatnonzero(calls.graph & (calls.corr != NO_CORRELATION))
    graph_ids = _distinct(calls.corr[with_id])
    replayed = int(_member(kernels.corr, graph_ids).sum()) if len(graph_ids) else 0
    mode = "eager" if not graphs else ("graph" if not launches else "mixed")
    if not graphs:
        details = {"kernels": replayed, "mode": mode, "unrecorded": 0}
        return make_check("graph-launches", 0, "ok", "no graph launches: an eager trace", "", details=details)
    kernel_ids = _distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    empty = with_id[~_member(calls.corr[with_id], kernel_ids)]
    # under-recorded replays: a graph launch with no kernel while other graph launches have theirs
    unrecorded = empty if len(empty) < len(with_id) else empty[:0]
    details = {"kernels": replayed, "mode": mode, "unrecorded": len(unrecorded)}
    stands = (
        f"{plural(graphs, 'graph launch')} {verb(graphs, 'stands', 'stand')} for "
        f"{plural(replayed, 'kernel')} ({mode} trace)"
    )
    if not len(unrecorded):
        return make_check(
            "graph-launches", graphs, "info", f"{stands}; every replay's kernels are recorded",
            "a graph launch runs many kernels from one call, so per-op GPU time cannot be attributed to PyTorch "
            "ops and the CPU side shows one call per replay; the kernels' own times are complete",
            details=details,
            examples=[_call_example(contents, calls, int(i)) for i in np.flatnonzero(calls.graph)[:EXAMPLES]],
        )  # fmt: skip
    n = len(unrecorded)
    return make_check(
        "graph-launches",
        graphs,
        "warning",
        f"{stands}; {plural(n, 'replay')} {verb(n, 'has', 'have')} no kernel recorded while "
        f"{plural(len(with_id) - n, 'other')} {verb(len(with_id) - n, 'has', 'have')} theirs",
        "the profiler under-recorded the graph's replays: idle % and GPU busy time from this trace are too low "
        "(AMD-AGI/Hyperloom PR #1121: only about 1 of N replays recorded). Compare with an eager trace of the "
        "same step",
        details=details,
        examples=[
            _call_example(contents, calls, int(i), "no kernel has this correlation id") for i in unrecorded[:EXAMPLES]
        ],
        samples=_call_samples(contents, calls, unrecorded),
    )


def _before_window(orphan_ids: Ints, call_ids: Ints) -> npt.NDArray[np.bool_]:
    """Which unlinked kernels have a correlation id below every call's of their process: CUPTI numbers ids per
    process, in launch order. A reader of a format holding several processes (an Nsight Systems export) puts the
    process's index above bit PROCESS_SHIFT; a Kineto trace is one process, all its ids below it."""
    before = np.zeros(len(orphan_ids), dtype=bool)
    if not len(call_ids) or not len(orphan_ids):
        return before
    known = orphan_ids != NO_CORRELATION
    call_process = call_ids >> PROCESS_SHIFT
    orphan_process = orphan_ids >> PROCESS_SHIFT
    for process in _distinct(call_process).tolist():
        first = call_ids[call_process == process].min()
        before |= known & (orphan_process == process) & (orphan_ids < first)
    return before


@runs("unlinked-kernels")
def unlinked_kernels(t: Tables) -> HealthCheck:
    calls, kernels = t.calls, t.kernels
    n = len(kernels.ts)
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    if not (calls.launch | calls.graph).any():
        return not_applicable(
            "unlinked-kernels", "the trace has no launch or graph-launch calls",
            kernels=n, before_window=0, before_first_call=0,
        )  # fmt: skip
    ids = _distinct(calls.corr[linked_calls])
    orphans = np.flatnonzero(~_member(kernels.corr, ids))
    early = int((kernels.ts[orphans] < calls.ts.min()).sum()) if len(orphans) else 0
    # CUPTI hands out correlation ids in launch order: a kernel whose id is below every call's was launched
    # before the profiler recorded calls (the previous step's tail)
    call_ids = calls.corr[calls.corr != NO_CORRELATION]
    first_id = int(call_ids.min()) if len(call_ids) else None
    before = _before_window(kernels.corr[orphans], call_ids)
    before_window = int(before.sum())
    details = {"kernels": n, "before_window": before_window, "before_first_call": early}
    if not len(orphans):
        return make_check("unlinked-kernels", 0, "ok", "every kernel links to its launch call", "", details=details)
    count = len(orphans)
    inside = orphans[~before]
    if not len(inside):
        several = len(_distinct(call_ids >> PROCESS_SHIFT)) > 1  # an export of several processes (nsys)
        below = "the first call's of their process" if several else f"the first call's, {first_id}"
        return make_check(
            "unlinked-kernels", count, "info",
            f"{plural(count, 'kernel')} of {n} {verb(count, 'links', 'link')} to no launch call: launched before "
            f"the profiling window started (correlation {verb(count, 'id', 'ids')} below {below})",
            "how tracing works: the previous step's kernels were still running when the profiler started; "
            "every kernel launched inside the window links to its call",
            details=details,
            examples=[kernels.example(int(i), "launched before the profiling window") for i in orphans[:EXAMPLES]],
        )  # fmt: skip
    said = f"; {before_window} of them launched before the profiling window started" if before_window else ""
    return make_check(
        "unlinked-kernels",
        count,
        "warning",
        f"{plural(count, 'kernel')} of {n} {verb(count, 'links', 'link')} to no launch call{said}",
        "these kernels cannot be attributed to the op or Python line that launched them, and analyzers that "
        "follow launch links (critical path, launch latency) skip them: the launch API may be one the profiler "
        "does not record (cuLaunchKernelEx, Triton, ROCm) or the calls were dropped",
        details=details,
        examples=[kernels.example(int(i), "no launch call has this correlation id") for i in inside[:EXAMPLES]],
        samples=_kernel_samples(kernels, inside),
    )


@runs("durations")
def durations(t: Tables) -> HealthCheck:
    contents, kernels = t.contents, t.kernels
    ops = contents.timeline.gpu_ops
    op_dur = _floats(ops.dur)
    events = len(kernels.ts) + len(op_dur)
    if not events:
        return not_applicable("durations", "no GPU events", zero=0, gpu_events=0)
    negative_k = np.flatnonzero(kernels.dur < 0)
    negative_o = np.flatnonzero(op_dur < 0)
    zero = int((kernels.dur == 0).sum())
    count = len(negative_k) + len(negative_o)
    details: dict[str, Any] = {"zero": zero, "gpu_events": events}
    clamped = contents.metadata.get("cuspy")
    if not count and isinstance(clamped, dict):
        return _clamped_durations(clamped, details)
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


def _clamped_durations(clamped: Mapping[str, int], details: dict[str, Any]) -> HealthCheck:
    """A Cuspy trace, whose exporter clamps ts and dur at 0 (wizard/trace/read/cuspy.py): a negative duration cannot
    show, but what the clamping left can. An event pinned at ts 0 started before the trace's base time, which no
    real event can: a warning. Zero durations may be clamped negatives or real: said, at info."""
    at_zero, zero = int(clamped["at_zero"]), int(clamped["zero_duration"])
    details.update(at_zero=at_zero, clamped_zero=zero)
    may_hide = (
        f"{plural(zero, 'GPU event')} of zero duration, which may be negative durations Cuspy clamped to 0"
        if zero
        else "no GPU event of zero duration"
    )
    if at_zero:
        return make_check(
            "durations", at_zero, "warning",
            f"{plural(at_zero, 'event')} pinned at ts 0 by Cuspy's clamping (a start before the trace's base time); "
            + may_hide,
            "a start before the trace's base time is a bad timestamp (a 0 or garbage CUPTI time) that Cuspy clamped to "
            "0: the window, idle % and every span measured from the trace's start are wrong",
            details=details,
        )  # fmt: skip
    status = "info" if zero else "ok"
    return make_check("durations", 0, status, f"no negative durations can show (Cuspy clamps them); {may_hide}",
                      "", details=details)  # fmt: skip


@runs("clock-skew")
def clock_skew(t: Tables) -> HealthCheck:
    calls, kernels = t.calls, t.kernels
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    empty = {"linked": 0, "min_us": None, "median_us": None, "drift_us": None, "trend": "constant", "unmeasured": 0}
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
    measured = np.isfinite(offsets)  # a difference of times near 1e308 is no measurement: left out, counted
    unmeasured = int((~measured).sum())
    if unmeasured:
        offsets, linked_ok = offsets[measured], linked[measured]
        if not len(offsets):
            return not_applicable(
                "clock-skew", "the offsets could not be measured: kernel and call times are not finite differences",
                **{**empty, "linked": len(linked), "unmeasured": unmeasured},
            )  # fmt: skip
    else:
        linked_ok = linked
    before = linked_ok[offsets < 0]
    third = len(offsets) // 3
    median = float(np.median(offsets))
    drift = float(np.median(offsets[-third:]) - np.median(offsets[:third])) if third else None
    tolerance = max(10.0, 0.25 * abs(median))
    trend = "constant" if drift is None or abs(drift) <= tolerance else ("growing" if drift > 0 else "shrinking")
    details = {
        "linked": len(linked),
        "unmeasured": unmeasured,
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


@runs("trace-size")
def trace_size(t: Tables) -> HealthCheck:
    contents = t.contents
    ranked = sorted(contents.timeline.categories.items(), key=lambda kv: (-kv[1], str(kv[0])))
    count = sum(n for _, n in ranked)
    categories = dict(ranked[:SIZE_CATEGORIES])
    other = ranked[SIZE_CATEGORIES:]
    unpacked = contents.bytes_read
    size = _size_on_disk(contents.path) if contents.path else unpacked
    python = contents.timeline.categories.get("python_function", 0)
    share = python / count if count else 0.0
    largest = ranked[0][0] if ranked else None
    details = {
        "categories": categories,
        "other_categories": len(other),
        "other_events": sum(n for _, n in other),
        "bytes": size,
        "unpacked_bytes": unpacked,
        "compressed": contents.compressed,
        "python_share": share,
        "largest": largest,
    }
    packed = f"{_bytes(size)} ({_bytes(unpacked)} unpacked)" if contents.compressed else _bytes(size)
    if not count:
        return make_check("trace-size", 0, "ok", f"no categorised events in {packed}", "", details=details)
    said = f"{plural(count, 'event')} in {packed}; most events are {largest!s:.40} ({ranked[0][1]})"
    big, stacks = unpacked >= SIZE_WORTH_A_WORD, share >= PYTHON_SHARE_WORTH_A_WORD
    if stacks:
        said += f"; python_function events are {share:.0%} of them"
    if not (big or stacks):
        return make_check("trace-size", count, "ok", said, "", details=details)
    why = []
    if big:
        why.append(
            f"{_bytes(unpacked)} of JSON may not open in Perfetto or TensorBoard (the browser holds the whole "
            "text): profile fewer active steps"
        )
    if stacks:
        why.append(
            f"python_function events are {share:.0%} of the events (with_stack=True): drop with_stack where the "
            "Python line is not needed"
        )
    return make_check("trace-size", count, "info", said, "; ".join(why), details=details)


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@runs("stacks-missing")
def stacks_missing(t: Tables) -> HealthCheck:
    categories = t.contents.timeline.categories
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


@runs("summary-table")
def run_summary_table(t: Tables) -> HealthCheck:
    return summary_table_check(t.contents)


@runs("profiler-overhead")
def run_profiler_overhead(t: Tables) -> HealthCheck:
    return profiler_overhead(t.contents, t.window)


def check_trace(
    contents: TraceContents,
    *,
    wrong_launches: int,
    checked: int,
    mechanisms: Mapping[str, int] | None = None,
    selected: frozenset[str] | None = None,
) -> list[HealthCheck]:
    """Every selected per-trace check, in the registry's order (``CHECKS``), each by the function registered
    under its id."""
    chosen = set(CHECK_IDS) if selected is None else selected
    tables = Tables(contents, wrong_launches, checked, mechanisms)
    # times near 1e308 overflow to inf: each check counts what it cannot measure; numpy prints nothing
    with np.errstate(over="ignore", invalid="ignore"):
        return [RUNS[c.id](tables) for c in CHECKS if c.scope == "trace" and c.id in chosen]


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


def rank_skew(ranks: Mapping[int, Mapping[str, Sequence[float]]], floor_us: float = RANK_SKEW_FLOOR_US) -> HealthCheck:
    """How far the same collective's starts differ across ranks (the i-th kernel of one NCCL name on each);
    a warning when the median reaches ``floor_us``. A spread that is not a finite number (start times near
    1e308) is not a measurement: it is counted as ``unmeasured`` and judges nothing."""
    order = sorted(ranks)
    empty: dict[str, Any] = {"median_us": None, "max_us": None, "last_by_rank": {}, "floor_us": floor_us}
    if len(order) < 2:
        reason = "not a rank directory: rank skew compares the traces of one job, a trace per rank"
        return not_applicable("rank-skew", reason, ranks=order, unmeasured=0, **empty)
    names = set.intersection(*(set(ranks[r]) for r in order))
    skews: list[float] = []
    unmeasured = 0
    last: Counter[int] = Counter()
    examples: list[HealthExample] = []
    for name in sorted(names):
        depth = min(len(ranks[r][name]) for r in order)
        if not depth:
            continue
        starts = np.array([list(ranks[r][name][:depth]) for r in order], dtype=np.float64)  # ranks x instances
        with np.errstate(all="ignore"):  # 1e308 - -1e308 is inf: counted below, never printed as a warning
            spread = starts.max(axis=0) - starts.min(axis=0)
        measured = np.isfinite(spread)
        unmeasured += int((~measured).sum())
        if not measured.any():
            continue
        starts, spread = starts[:, measured], spread[measured]
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
    if unmeasured and not skews:
        return not_applicable(
            "rank-skew",
            f"the skew could not be measured: the start times of {plural(unmeasured, 'collective')} across ranks "
            "are not finite numbers",
            ranks=order, unmeasured=unmeasured, **empty,
        )  # fmt: skip
    median = float(np.median(skews)) if skews else None
    details = {
        "ranks": order,
        "median_us": median,
        "max_us": float(max(skews)) if skews else None,
        "last_by_rank": {str(r): n for r, n in sorted(last.items())},
        "floor_us": floor_us,
        "unmeasured": unmeasured,
    }
    if not skews or median is None:
        return make_check("rank-skew", 0, "ok", "no NCCL collective is present on every rank", "", details=details)
    straggler, times = last.most_common(1)[0]
    summary = (
        f"{plural(len(skews), 'collective')} across {len(order)} ranks {verb(len(skews), 'starts', 'start')} up to "
        f"{max(skews):.1f} µs apart (median {median:.1f} µs); rank {straggler} started last {times} times"
        + (f"; {unmeasured} not measurable (start times not finite)" if unmeasured else "")
    )
    if median < floor_us:
        return make_check(
            "rank-skew", len(skews), "info", f"{summary}: below the {floor_us:g} µs floor, launch jitter",
            "the ranks reach their collectives together, within launch jitter: NCCL time is transfer time",
            details=details, examples=examples,
        )  # fmt: skip
    return make_check(
        "rank-skew",
        len(skews),
        "warning",
        summary,
        "an NCCL kernel's time on the early ranks includes waiting for the last rank to arrive: read it as "
        "launch skew, not transfer time, and look at the straggler rank's work before the collective",
        details=details,
        examples=examples,
    )
