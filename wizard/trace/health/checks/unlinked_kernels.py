"""unlinked-kernels: kernels that link to no launch call, and those launched before the window."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.read.records import NO_CORRELATION, PROCESS_SHIFT

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from wizard.trace.health.tables import Ints, Tables


class UnlinkedKernelsDetails(TypedDict):
    kernels: Annotated[int, "kernel events"]
    before_first_call: Annotated[int, "unlinked kernels starting before the first call"]
    before_window: Annotated[int, "unlinked kernels whose id is below every call's"]


CHECK = CheckSpec(
    "unlinked-kernels",
    "kernels-missing",
    "kernels with no launch",
    UnlinkedKernelsDetails,
    order=50,
    triage_rank=10,
    counts=(
        "kernel events whose correlation id (or none) matches no launch or graph-launch call; `kernels`, "
        "`before_window` (those whose id is below the smallest correlation id of any call in the file: "
        "launched before the profiling window), `before_first_call` (those whose `ts` is below the first "
        "call's: the time-based sign, which misses kernels launched before the window that ran after it "
        "opened)"
    ),
    status_rule=(
        "`info` when every one is `before_window`; else `warning`; `not_applicable` without launch or "
        "graph-launch calls"
    ),
    facts=(
        CheckFact("unlinked_kernels", int, "kernels whose correlation id matches no launch call"),
        CheckFact(
            "unlinked_before_first_call",
            int,
            "of those, the ones that ran before the trace's first runtime call",
            "before_first_call",
        ),
        CheckFact(
            "unlinked_before_window",
            int,
            "of those, the ones launched before the profiling window (correlation id below every call's)",
            "before_window",
        ),
    ),
    colour="#8250df",
)


def _before_window(orphan_ids: Ints, call_ids: Ints) -> npt.NDArray[np.bool_]:
    """Which unlinked kernels have a correlation id below every call's of their process: CUPTI numbers ids per
    process, in launch order. A reader of a format holding several processes (an Nsight Systems export) puts the
    process's index above bit PROCESS_SHIFT; a Kineto trace is one process, all its ids below it."""
    import numpy as np

    from wizard.trace.health.tables import distinct

    before = np.zeros(len(orphan_ids), dtype=bool)
    if not len(call_ids) or not len(orphan_ids):
        return before
    known = orphan_ids != NO_CORRELATION
    call_process = call_ids >> PROCESS_SHIFT
    orphan_process = orphan_ids >> PROCESS_SHIFT
    for process in distinct(call_process).tolist():
        first = call_ids[call_process == process].min()
        before |= known & (orphan_process == process) & (orphan_ids < first)
    return before


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import distinct, kernel_samples, member

    calls, kernels = tables.calls, tables.kernels
    n = len(kernels.ts)
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    if not (calls.launch | calls.graph).any():
        return CHECK.not_applicable(
            "the trace has no launch or graph-launch calls",
            kernels=n, before_window=0, before_first_call=0,
        )  # fmt: skip
    ids = distinct(calls.corr[linked_calls])
    orphans = np.flatnonzero(~member(kernels.corr, ids))
    early = int((kernels.ts[orphans] < calls.ts.min()).sum()) if len(orphans) else 0
    # CUPTI hands out correlation ids in launch order: a kernel whose id is below every call's was launched
    # before the profiler recorded calls (the previous step's tail)
    call_ids = calls.corr[calls.corr != NO_CORRELATION]
    first_id = int(call_ids.min()) if len(call_ids) else None
    before = _before_window(kernels.corr[orphans], call_ids)
    before_window = int(before.sum())
    details = {"kernels": n, "before_window": before_window, "before_first_call": early}
    if not len(orphans):
        return CHECK.verdict(0, "ok", "every kernel links to its launch call", "", details=details)
    count = len(orphans)
    inside = orphans[~before]
    if not len(inside):
        several = len(distinct(call_ids >> PROCESS_SHIFT)) > 1  # an export of several processes (nsys)
        below = "the first call's of their process" if several else f"the first call's, {first_id}"
        return CHECK.verdict(
            count, "info",
            f"{plural(count, 'kernel')} of {n} {verb(count, 'links', 'link')} to no launch call: launched before "
            f"the profiling window started (correlation {verb(count, 'id', 'ids')} below {below})",
            "how tracing works: the previous step's kernels were still running when the profiler started; "
            "every kernel launched inside the window links to its call",
            details=details,
            examples=[kernels.example(int(i), "launched before the profiling window") for i in orphans[:EXAMPLES]],
            samples=kernel_samples(kernels, orphans),  # the "where" picture shows them at the trace's start
        )  # fmt: skip
    said = f"; {before_window} of them launched before the profiling window started" if before_window else ""
    return CHECK.verdict(
        count,
        "warning",
        f"{plural(count, 'kernel')} of {n} {verb(count, 'links', 'link')} to no launch call{said}",
        "these kernels cannot be attributed to the op or Python line that launched them, and analyzers that "
        "follow launch links (critical path, launch latency) skip them: the launch API may be one the profiler "
        "does not record (cuLaunchKernelEx, Triton, ROCm) or the calls were dropped",
        details=details,
        examples=[kernels.example(int(i), "no launch call has this correlation id") for i in inside[:EXAMPLES]],
        samples=kernel_samples(kernels, inside),
    )
