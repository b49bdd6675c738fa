"""clock-skew: kernels that start before their own launch call, and how the offset moves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.read.records import NO_CORRELATION

if TYPE_CHECKING:
    from wizard.trace.health.tables import Floats, Ints, Kernels, Tables


class ClockSkewDetails(TypedDict):
    linked: Annotated[int, "kernels linked to a launch call"]
    min_us: Annotated[float | None, "the smallest kernel start minus call start, in µs"]
    median_us: Annotated[float | None, "the median kernel start minus call start, in µs"]
    drift_us: Annotated[float | None, "the last third's median offset minus the first third's, in µs"]
    trend: Annotated[Literal["constant", "growing", "shrinking"], "how the offset moves over the trace"]
    unmeasured: Annotated[int, "linked kernels whose offset is not a finite number"]


CHECK = CheckSpec(
    "clock-skew",
    "impossible-timing",
    "kernels before their launch",
    ClockSkewDetails,
    order=70,
    triage_rank=20,
    counts=(
        "kernels whose `ts` is below their call's (the earliest launch or graph-launch call with the same "
        "correlation id); `linked`, `min_us`, `median_us` (kernel minus call), `drift_us` (median of the last"
        " third minus the first third, kernel order), `trend` (`constant`, `growing`, `shrinking`: beyond 10 "
        "µs and a quarter of the median), `unmeasured` (linked kernels whose offset is not a finite number, "
        "times near 1e308: no measurement, left out of the rest)"
    ),
    status_rule=(
        "`warning`; `not_applicable` with no kernel linked to a launch call, or no offset that is a finite number"
    ),
    facts=(
        CheckFact("kernels_before_launch", int, "kernels that start before their own launch call (clock-skew)"),
        CheckFact(
            "launch_offset_min_us",
            float | None,
            "smallest kernel start minus launch call start, in µs",
            "min_us",
            "first",
        ),
        CheckFact(
            "launch_offset_median_us",
            float | None,
            "median kernel start minus launch call start, in µs",
            "median_us",
            "first",
        ),
        CheckFact("launch_offset_trend", str | None, "constant, growing or shrinking over the trace", "trend", "first"),
    ),
    colour="#1a7f37",
)


_EMPTY: ClockSkewDetails = {
    "linked": 0, "min_us": None, "median_us": None, "drift_us": None, "trend": "constant", "unmeasured": 0
}  # fmt: skip


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    linked = _linked_offsets(tables)
    if linked is None:
        return CHECK.not_applicable("no kernel links to a launch call", **_EMPTY)
    kernels_linked, offsets = linked
    measured = np.isfinite(offsets)  # a difference of times near 1e308 is no measurement: left out, counted
    unmeasured = int((~measured).sum())
    if unmeasured:
        offsets, linked_ok = offsets[measured], kernels_linked[measured]
        if not len(offsets):
            return CHECK.not_applicable(
                "the offsets could not be measured: kernel and call times are not finite differences",
                **{**_EMPTY, "linked": len(kernels_linked), "unmeasured": unmeasured},
            )  # fmt: skip
    else:
        linked_ok = kernels_linked
    details = _offset_details(offsets, linked=len(kernels_linked), unmeasured=unmeasured)
    before = linked_ok[offsets < 0]
    if not len(before):
        return CHECK.verdict(
            0, "ok", f"every kernel starts after its launch call (median {details['median_us']:.1f} µs later)", "",
            details=details,
        )  # fmt: skip
    return _skewed(tables.kernels, before, details)


def _linked_offsets(tables: Tables) -> tuple[Ints, Floats] | None:
    """Each kernel linked to its earliest launch or graph-launch call (kernel order), and its start minus the call's.

    Gathering only, no judgement: the call is the earliest with the
    kernel's correlation id, as CHECK's `counts` declares. None when no kernel links to a call."""
    import numpy as np

    from wizard.trace.health.tables import find

    calls, kernels = tables.calls, tables.kernels
    linked_calls = (calls.launch | calls.graph) & (calls.corr != NO_CORRELATION)
    if not linked_calls.any() or not len(kernels.ts):
        return None
    ids, ts = calls.corr[linked_calls], calls.ts[linked_calls]
    by_id = _by_id_then_start(ids, ts)
    if by_id is not None:
        ids, ts = ids[by_id], ts[by_id]
    first = np.concatenate(([True], ids[1:] != ids[:-1]))
    if not first.all():
        ids, ts = ids[first], ts[first]  # the earliest call per correlation id
    order = kernels.order()  # None: in start order already
    where, found = find(kernels.corr if order is None else kernels.corr[order], ids)
    linked = np.flatnonzero(found) if order is None else order[found]
    if not len(linked):
        return None
    return linked, kernels.ts[linked] - ts[where[found]]


def _by_id_then_start(ids: Ints, ts: Floats) -> Ints | None:
    """``np.lexsort((ts, ids))``, or None where that is the identity; without the two sorts where the calls are
    in start order (an Nsight Systems export's are, and their ids rise with it): the lexsort was 1.4 s of 18 at
    5 million calls (issue 48). Ties keep file order in all three ways; a NaN start takes the lexsort."""
    import numpy as np

    if len(ids) < 2:
        return None
    later = ts[1:] >= ts[:-1]  # False beside a NaN: lexsort puts NaN last, which only the lexsort then does
    if bool(np.all(ids[1:] >= ids[:-1])) and bool(np.all((ids[1:] > ids[:-1]) | later)):
        return None  # sorted by id, and by start within an id: the lexsort's stable order is file order
    if bool(np.all(later)):
        return np.argsort(ids, kind="stable")  # within an id, file order is start order
    return np.lexsort((ts, ids))


def _offset_details(offsets: Floats, *, linked: int, unmeasured: int) -> ClockSkewDetails:
    """The offsets' size and how they move: a constant offset is a clock domain, a moving one is drift.

    The trend is the last third's median minus the first third's, beyond 10 µs and a quarter of the median."""
    from wizard.trace.health.tables import median as median_of

    third = len(offsets) // 3
    median = median_of(offsets)
    drift = median_of(offsets[-third:]) - median_of(offsets[:third]) if third else None
    tolerance = max(10.0, 0.25 * abs(median))
    trend: Literal["constant", "growing", "shrinking"] = (
        "constant" if drift is None or abs(drift) <= tolerance else ("growing" if drift > 0 else "shrinking")
    )
    return {
        "linked": linked,
        "unmeasured": unmeasured,
        "min_us": float(offsets.min()),
        "median_us": median,
        "drift_us": drift,
        "trend": trend,
    }


def _skewed(kernels: Kernels, before: Ints, details: ClockSkewDetails) -> HealthCheck:
    """The warning's wording: how many kernels, by how much, and what the offset's trend means for the reader."""
    import numpy as np

    from wizard.trace.health.tables import kernel_samples

    worst = details["min_us"]
    assert worst is not None  # set whenever an offset was measured
    return CHECK.verdict(
        len(before),
        "warning",
        f"{plural(len(before), 'kernel')} {verb(len(before), 'starts before its', 'start before their')} own launch "
        f"call (by up to {-worst:.3f} µs; "
        f"offsets {details['trend']})",
        "GPU and CPU clocks disagree in this trace: launch latency, the CPU-GPU gaps and the flow arrows are "
        "wrong by the offset; a constant offset is a clock-domain difference, a growing one is drift or "
        "timestamps from several profiling sessions in one process",
        details=details,
        examples=[kernels.example(int(i), "starts before its launch call") for i in np.sort(before)[:EXAMPLES]],
        samples=kernel_samples(kernels, before),
    )
