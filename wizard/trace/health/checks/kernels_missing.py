"""kernels-missing: launch calls whose kernel the trace never recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from wizard.compat import NotRequired
from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    CAPTURE_BEGIN,
    CAPTURE_END,
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
    HealthExample,
)
from wizard.trace.read.records import NO_CORRELATION, PROCESS_SHIFT

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from wizard.trace.health.tables import Calls, Floats, Ints, Kernels, Tables
    from wizard.trace.read.collector import TraceContents


class KernelsMissingDetails(TypedDict):
    launches: Annotated[int, "kernel launch calls"]
    in_last_1pct: Annotated[int, "missing kernels' calls in the window's last 1%"]
    after_window: Annotated[int, "missing kernels' calls made while the GPU ran behind at the window's end"]
    max_backlog_us: Annotated[float | None, "the largest call-start-to-kernel-end time of their processes, in µs"]
    captured: Annotated[int, "launch calls made while capturing a graph"]
    no_correlation: Annotated[int, "launch calls without a correlation id"]
    profiler_ranges: Annotated[int, "missing kernels' calls a cuda_profiler_range event measured"]
    apis: NotRequired[Annotated[dict[str, int], "launch calls per API name"]]


CHECK = CheckSpec(
    "kernels-missing",
    "kernels-missing",
    "kernels missing",
    KernelsMissingDetails,
    order=20,
    triage_rank=10,
    counts=(
        "launch calls, not captured, whose correlation id matches no kernel event; `launches`, `in_last_1pct`"
        " (those starting in the window's last 1%, where the profiler's stop cuts), `profiler_ranges` (those "
        "a range event measured, not dropped: its correlation id, or, in a trace without kernel events where no range "
        "event carries one (Kineto before cd8d3190, 2025-05-31), the first ones in launch order, one per range "
        "event), `after_window` (the "
        "others that start after their process's last launch that has its kernel and no earlier than the "
        "window's end minus the largest call-start-to-kernel-end time of that process's launches that have their "
        "kernel (`max_backlog_us`: queued behind the GPU, they would run after the window closed), `captured`, "
        "`no_correlation`"
    ),
    status_rule=(
        "`error`; `info` when each lies in the last 1%, has a range event or is `after_window`; `not_applicable` "
        "without launch calls"
    ),
    facts=(
        CheckFact("missing_kernels", int, "launch calls whose kernel is not in the trace (kernels-missing)"),
        CheckFact("launch_calls", int, "kernel launch calls in the traces", "launches"),
        CheckFact(
            "missing_in_last_1pct",
            int,
            "of the missing ones, those in the last 1% of the trace (cut by the profiler's stop)",
            "in_last_1pct",
        ),
        CheckFact(
            "captured_launches",
            int,
            "launch calls made while capturing a CUDA graph (they run no kernel)",
            "captured",
        ),
        CheckFact(
            "missing_after_window",
            int,
            "of the missing ones, those made while the GPU ran behind at the window's end (not in the last 1%)",
            "after_window",
        ),
        CheckFact("launches_without_id", int, "launch calls without a correlation id", "no_correlation"),
        CheckFact(
            "launch_apis",
            list[str],
            "the kernel launch APIs the trace records (cudaLaunchKernel, cuLaunchKernelEx, ...)",
            "apis",
            "keys",
        ),
        CheckFact(
            "range_profiler_launches",
            int,
            "launches measured by the CUPTI range profiler (a cuda_profiler_range event instead of a kernel)",
            "profiler_ranges",
        ),
    ),
    colour="#cf222e",
)


def _captured(contents: TraceContents, calls: Calls) -> npt.NDArray[np.bool_]:
    """Launch calls made while their thread was capturing a graph (between Begin and End capture)."""
    import numpy as np

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


def _ranged(contents: TraceContents, calls: Calls, missing: Ints) -> npt.NDArray[np.bool_]:
    """Which missing launches the CUPTI range profiler measured. Kineto writes one cuda_profiler_range event (with
    counters) per kernel instead of a kernel event. Since cd8d3190 (2025-05-31) each carries its launch's
    correlation id; before, none did (CuptiRangeProfiler.cpp addRangeEvents), but in auto-range mode the ranges
    are the kernels in launch order, and until bbde3430 (2025-05-29) the range profiler refused to run beside kernel
    activities: in a trace whose ranges carry no id and that has no kernel event, the first launches without a
    kernel, in launch order, as many as there are ranges. Beside kernel events, a launch without one was dropped."""
    import numpy as np

    from wizard.trace.health.tables import distinct, member

    ids = distinct(np.array(contents.timeline.profiler_ranges, dtype=np.int64))
    if len(ids):
        return member(calls.corr[missing], ids)
    ranged = np.zeros(len(missing), dtype=bool)
    if not len(contents.kernels):
        ranged[np.argsort(calls.ts[missing], kind="stable")[: contents.timeline.unlinked_ranges]] = True
    return ranged


def _kernel_ends(kernels: Kernels) -> tuple[Ints, Floats]:
    """Each correlation id that has a kernel, sorted, with the latest end of its kernels."""
    import numpy as np

    known = np.flatnonzero(kernels.corr != NO_CORRELATION)
    order = known[np.argsort(kernels.corr[known], kind="stable")]
    ids = kernels.corr[order]
    ends = kernels.ts[order] + np.maximum(kernels.dur[order], 0.0)
    if not len(ids):
        return ids, ends
    first = np.ones(len(ids), dtype=bool)
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return ids[first], np.maximum.reduceat(ends, np.flatnonzero(first))


def _after_window(t: Tables, matched: Ints, missing: Ints) -> tuple[npt.NDArray[np.bool_], float | None]:
    """Which missing launches were made while the GPU ran behind at the window's end, and the largest backlog.

    Per process (CUPTI's ids are per process): a missing launch is after the window when it starts after the
    process's last launch that has its kernel, and no earlier than the window's end minus the process's largest
    backlog: call start to its kernel's end, over its launches that have their kernel. Kernels run in launch order
    behind that backlog: one launched that late would have ended after the profiler stopped recording. Where the
    GPU kept up (a backlog of microseconds), only launches in the window's last microseconds qualify."""
    import numpy as np

    from wizard.trace.health.tables import distinct  # not np.unique, which imports numpy.ma

    calls, span = t.calls, t.window
    after = np.zeros(len(missing), dtype=bool)
    if not len(missing) or not len(matched) or span is None:
        return after, None
    ids, ends = _kernel_ends(t.kernels)
    backlogs = ends[np.searchsorted(ids, calls.corr[matched])] - calls.ts[matched]
    matched_process = calls.corr[matched] >> PROCESS_SHIFT
    missing_process = calls.corr[missing] >> PROCESS_SHIFT
    largest: float | None = None
    ts = calls.ts[missing]
    for process in distinct(missing_process).tolist():
        mine = matched_process == process
        if not mine.any():
            continue
        backlog = float(backlogs[mine].max())
        largest = max(largest or 0.0, backlog)
        last = float(calls.ts[matched[mine]].max())
        after |= (missing_process == process) & (ts > last) & (ts >= span[1] - backlog)
    return after, largest


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import call_example, distinct, member

    contents, calls, kernels, span = tables.contents, tables.calls, tables.kernels, tables.window
    launches = int(calls.launch.sum())
    if not launches:
        return CHECK.not_applicable(
            "no kernel launch calls in this trace to compare kernels against",
            launches=0, in_last_1pct=0, after_window=0, max_backlog_us=None, captured=0, no_correlation=0,
            profiler_ranges=0,
        )  # fmt: skip
    captured = _captured(contents, calls) & calls.launch
    has_id = calls.corr != NO_CORRELATION
    kernel_ids = distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    chosen = np.flatnonzero(calls.launch & has_id & ~captured)
    found = member(calls.corr[chosen], kernel_ids)
    missing = chosen[~found]
    late = np.zeros(len(missing), dtype=bool)
    if len(missing) and span is not None:
        late = calls.ts[missing] >= span[1] - 0.01 * (span[1] - span[0])
    ranged = _ranged(contents, calls, missing) if len(missing) else late.copy()
    after, backlog = np.zeros(len(missing), dtype=bool), None
    if (~(late | ranged)).any():  # only then: the backlog needs the kernels sorted by id
        after, backlog = _after_window(tables, chosen[found], missing[~(late | ranged)])
        after = _spread(after, ~(late | ranged))
    apis = np.bincount(calls.name_of[calls.launch], minlength=len(calls.names))
    details = {
        "launches": launches,
        "in_last_1pct": int(late.sum()),
        "after_window": int(after.sum()),
        "max_backlog_us": backlog,
        "captured": int(captured.sum()),
        "no_correlation": int((calls.launch & ~has_id).sum()),
        "profiler_ranges": int(ranged.sum()),
        "apis": {calls.names[n]: int(c) for n, c in enumerate(apis.tolist()) if c},
    }
    if not len(missing):
        return CHECK.verdict(0, "ok", f"every one of {plural(launches, 'launch call')} has its kernel",
                      "", details=details)  # fmt: skip
    dropped = missing[~(late | ranged | after)]
    examples = [
        call_example(contents, calls, int(i), "no kernel event has this correlation id")
        for i in (dropped if len(dropped) else missing)[:EXAMPLES]
    ]
    return _verdict(tables, missing, dropped, details, examples)


def _spread(values: npt.NDArray[np.bool_], where: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``values`` (one per True of ``where``) back in ``where``'s positions, False elsewhere."""
    import numpy as np

    out = np.zeros(len(where), dtype=bool)
    out[where] = values
    return out


def _verdict(
    t: Tables, missing: Ints, dropped: Ints, details: dict[str, Any], examples: list[HealthExample]
) -> HealthCheck:
    """The words: measured by the range profiler, cut by the stop, launched while the GPU ran behind, or dropped."""
    from wizard.trace.health.tables import call_samples

    count, launches, ranged = len(missing), details["launches"], details["profiler_ranges"]
    late, after, lag = details["in_last_1pct"], details["after_window"], details["max_backlog_us"]
    if ranged and not len(dropped):
        return CHECK.verdict(
            count, "info",
            f"a CUPTI range-profiler trace: {plural(ranged, 'launch')} of {launches} "
            f"{verb(ranged, 'has', 'have')} a cuda_profiler_range event with counters instead of a kernel"
            + (f"; {count - ranged} more at the window's end, cut by the profiler's stop" if count > ranged else ""),
            "the range profiler measures each kernel's counters and records no kernel events: nothing was dropped, "
            "but the trace has no kernel times (GPU time, idle %, per-op GPU time); profile without the range "
            "profiler for those",
            details=details, examples=examples,
        )  # fmt: skip
    if late == count:
        return CHECK.verdict(
            count, "info",
            f"{plural(count, 'launch')} in the last 1% of the trace {verb(count, 'has', 'have')} no kernel: "
            "cut by the profiler's stop",
            "expected at the end of a profiling window; the numbers before it are complete",
            details=details, examples=examples,
        )  # fmt: skip
    if not len(dropped) and lag is not None:
        return CHECK.verdict(
            count, "info",
            f"{plural(count, 'launch')} of {launches} {verb(count, 'has', 'have')} no kernel: made after the last "
            f"launch that has one, within the GPU's backlog ({lag / 1000:,.1f} ms from a call to its kernel's end) of "
            f"the window's end, so their kernels would run after the window closed ({after} after the window, "
            f"{late} in its last 1%)",
            "expected when the CPU runs ahead of the GPU at the profiler's stop: nothing was dropped and the numbers "
            "before them are complete, but the window's last kernels are not in it; to keep them, synchronize "
            "(torch.cuda.synchronize()) before the profiler stops",
            details=details, examples=examples,
        )  # fmt: skip
    return CHECK.verdict(
        count, "error",
        f"{plural(count, 'launch')} of {launches} ({count / launches:.1%}) {verb(count, 'has', 'have')} no kernel "
        "event",
        "GPU time, idle %, kernel counts and every per-op GPU figure read from this trace are too low: the "
        "profiler dropped kernel records (CUPTI failing, records out of range after a second profiling "
        "session, buffer overflow, or the trace read before the flush)",
        details=details, examples=examples, samples=call_samples(t.contents, t.calls, missing),
    )  # fmt: skip
