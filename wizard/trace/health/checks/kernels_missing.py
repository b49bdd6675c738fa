"""kernels-missing: launch calls whose kernel the trace never recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NotRequired, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    CAPTURE_BEGIN,
    CAPTURE_END,
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.read.records import NO_CORRELATION

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from wizard.trace.health.tables import Calls, Tables
    from wizard.trace.read.collector import TraceContents


class KernelsMissingDetails(TypedDict):
    launches: Annotated[int, "kernel launch calls"]
    in_last_1pct: Annotated[int, "missing kernels' calls in the window's last 1%"]
    captured: Annotated[int, "launch calls made while capturing a graph"]
    no_correlation: Annotated[int, "launch calls without a correlation id"]
    profiler_ranges: Annotated[int, "missing kernels' calls whose id a cuda_profiler_range event carries"]
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
        "whose id a range event carries: measured by the range profiler, not dropped), `captured`, "
        "`no_correlation`"
    ),
    status_rule=(
        "`error`; `info` when each lies in the last 1% or has a range event; `not_applicable` without launch calls"
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


def run(t: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import call_example, call_samples, distinct, member

    contents, calls, kernels, span = t.contents, t.calls, t.kernels, t.window
    launches = int(calls.launch.sum())
    if not launches:
        return CHECK.not_applicable(
            "no kernel launch calls in this trace to compare kernels against",
            launches=0, in_last_1pct=0, captured=0, no_correlation=0, profiler_ranges=0,
        )  # fmt: skip
    captured = _captured(contents, calls) & calls.launch
    has_id = calls.corr != NO_CORRELATION
    no_correlation = int((calls.launch & ~has_id).sum())
    kernel_ids = distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    candidates = calls.launch & has_id & ~captured
    chosen = np.flatnonzero(candidates)
    missing = chosen[~member(calls.corr[chosen], kernel_ids)]
    late_mask = np.zeros(len(missing), dtype=bool)
    if len(missing) and span is not None:
        first, last = span
        late_mask = calls.ts[missing] >= last - 0.01 * (last - first)
    late = int(late_mask.sum())
    # Kineto's CUPTI range profiler writes a cuda_profiler_range event (with counters) per kernel, carrying the
    # launch's correlation id, instead of a kernel event: the launch was measured, not dropped
    ranges = distinct(np.array(contents.timeline.profiler_ranges, dtype=np.int64))
    ranged_mask = member(calls.corr[missing], ranges) if len(ranges) else np.zeros(len(missing), dtype=bool)
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
        return CHECK.verdict(0, "ok", f"every one of {plural(launches, 'launch call')} has its kernel",
                      "", details=details)  # fmt: skip
    dropped = missing[~(late_mask | ranged_mask)]
    examples = [
        call_example(contents, calls, int(i), "no kernel event has this correlation id")
        for i in (dropped if len(dropped) else missing)[:EXAMPLES]
    ]
    share = count / launches
    if ranged and not len(dropped):
        return CHECK.verdict(
            count, "info",
            f"a CUPTI range-profiler trace: {plural(ranged, 'launch')} of {launches} "
            f"{verb(ranged, 'has', 'have')} a cuda_profiler_range event with counters instead of a kernel"
            + (f"; {count - ranged} more in the last 1%, cut by the profiler's stop" if count > ranged else ""),
            "the range profiler measures each kernel's counters and records no kernel events: nothing was dropped, "
            "but the trace has no kernel times (GPU time, idle %, per-op GPU time); profile without the range "
            "profiler for those",
            details=details, examples=examples,
        )  # fmt: skip
    if late == count:
        return CHECK.verdict(
            count, "info",
            f"{plural(count, 'launch')} in the last 1% of the trace "
            f"{verb(count, 'has', 'have')} no kernel: "
            "cut by the profiler's stop",
            "expected at the end of a profiling window; the numbers before it are complete",
            details=details, examples=examples,
        )  # fmt: skip
    samples = call_samples(contents, calls, missing)
    return CHECK.verdict(
        count, "error",
        f"{plural(count, 'launch')} of {launches} ({share:.1%}) "
        f"{verb(count, 'has', 'have')} no kernel event",
        "GPU time, idle %, kernel counts and every per-op GPU figure read from this trace are too low: the "
        "profiler dropped kernel records (CUPTI failing, records out of range after a second profiling "
        "session, buffer overflow, or the trace read before the flush)",
        details=details, examples=examples, samples=samples,
    )  # fmt: skip
