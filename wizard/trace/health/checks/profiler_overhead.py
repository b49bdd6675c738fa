"""profiler-overhead: the profiler's own records' share of the window, and the steps' drift."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from wizard.trace.health.spec import (
    OVERHEAD_SHARE,
    STEPS_KEPT,
    Bounds,
    CheckFact,
    CheckSpec,
    HealthCheck,
)

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


class ProfilerOverheadDetails(TypedDict):
    overhead_us: Annotated[float, "the overhead records' summed durations inside the window, in µs"]
    outside_us: Annotated[float, "their summed durations outside it, in µs (an Nsight Systems export's)"]
    window_us: Annotated[float, "the window, in µs"]
    share: Annotated[float, "their share of the window", Bounds(minimum=0)]
    threshold: Annotated[float, "the share above which the check warns"]
    kinds: Annotated[dict[str, float], "µs per overhead kind"]
    steps: Annotated[int, "ProfilerStep spans", Bounds(minimum=0)]
    step_us: Annotated[list[float], "their durations, in µs", Bounds(max_items=STEPS_KEPT)]
    median_step_us: Annotated[float | None, "their median, in µs"]
    drift: Annotated[float | None, "the last third's mean against the first third's"]


CHECK = CheckSpec(
    "profiler-overhead",
    "summary-table",
    "profiler overhead in the window",
    ProfilerOverheadDetails,
    order=110,
    triage_rank=60,
    counts=(
        f"overhead records (Kineto's `overhead` events; an Nsight Systems export's `PROFILER_OVERHEAD` and "
        f"`CUPTI_ACTIVITY_KIND_OVERHEAD` rows); `overhead_us` (their summed durations inside the window), "
        f"`outside_us` (the rest: nsys's own initialisation and final flush run outside it), `window_us`, "
        f"`share` (`overhead_us` over `window_us`), `threshold` "
        f"({OVERHEAD_SHARE:g}), "
        "`kinds`, and the ProfilerStep spans: `steps`, `step_us`, `median_step_us`, `drift` (the last third's"
        " mean against the first third's, None under 3 steps)"
    ),
    status_rule=(
        f"`warning` above {OVERHEAD_SHARE:.0%} of the window (nsys-ai's doctor warns there), else `info`; "
        "`not_applicable` with neither overhead records nor GPU events (CUPTI writes them)"
    ),
    facts=(
        CheckFact("overhead_records", int, "CUPTI profiler-overhead records in the traces"),
        CheckFact(
            "overhead_share",
            float | None,
            "the largest share of a trace's window spent in them (0.1 = 10%)",
            "share",
            "max",
        ),
        CheckFact(
            "step_drift",
            float | None,
            "the ProfilerStep spans' drift: the last third's mean against the first third's (0.1 = +10%)",
            "drift",
            "largest",
        ),
    ),
)


def run(tables: Tables) -> HealthCheck:
    from wizard.trace.health.key_averages import profiler_overhead

    return profiler_overhead(tables.contents, tables.window, CHECK)
