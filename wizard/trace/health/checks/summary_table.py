"""summary-table: key_averages()' device times against each GPU event counted once (the table itself is rebuilt
in wizard/trace/health/key_averages.py, which the profiler hook and the report read too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypedDict

from wizard.trace.health.spec import (
    MARGIN,
    MIN_US,
    TABLE_ROWS,
    Bounds,
    CheckFact,
    CheckSpec,
    HealthCheck,
)

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


class SummaryRowDetails(TypedDict):
    name: Annotated[str, "the row's name"]
    kind: Annotated[Literal["op", "gpu", "gpu_annotation", "overhead"], "what the row is"]
    calls: Annotated[int, "instances", Bounds(minimum=0)]
    reported_self_us: Annotated[float, "self device time key_averages() reports, in µs"]
    reported_total_us: Annotated[float, "device total key_averages() reports, in µs"]
    true_self_us: Annotated[float, "self device time, each GPU event once, in µs"]
    true_total_us: Annotated[float, "device total, each GPU event once, in µs"]


class SmActiveDetails(TypedDict):
    device: Annotated[int, "the device"]
    counter: Annotated[str, "the PM-sampling counter"]
    samples: Annotated[int, "its samples"]
    span_us: Annotated[float, "the span they cover, in µs"]
    kernel_busy_pct: Annotated[float, "the share of that time any kernel ran, in %"]
    sm_active_pct: Annotated[float, "the mean share of SM cycles with work, in %"]


class SummaryTableDetails(TypedDict):
    gpu_events: Annotated[int, "GPU events", Bounds(minimum=0)]
    linked: Annotated[int, "GPU events attributed to an op", Bounds(minimum=0)]
    table_self_us: Annotated[float, "the table's Self CUDA time total, in µs"]
    busy_us: Annotated[float, "each device's union of GPU events, summed, in µs"]
    annotation_us: Annotated[float, "GPU annotations' time, in µs"]
    overhead_events: Annotated[int, "overhead records", Bounds(minimum=0)]
    claiming: Annotated[int, "overhead records carrying a GPU event's correlation id", Bounds(minimum=0)]
    claimed_us: Annotated[float, "the GPU time they claim, in µs"]
    inflated_ops: Annotated[int, "op rows whose device total exceeds their GPU events'", Bounds(minimum=0)]
    over_wall_clock: Annotated[bool, "whether the Self CUDA total exceeds GPU busy by the margin"]
    margin: Annotated[float, "the margin (0.1 = 10%)"]
    rows: Annotated[list[SummaryRowDetails], "the rows with the most self time", Bounds(max_items=TABLE_ROWS)]
    sm_active: Annotated[list[SmActiveDetails], "GPU busy against SM active, per device with the counter"]


CHECK = CheckSpec(
    "summary-table",
    "summary-table",
    "key_averages() device times",
    SummaryTableDetails,
    order=100,
    triage_rank=60,
    counts=(
        "what `prof.key_averages()` reports per op against each GPU event counted once (below): op rows whose"
        f" device total exceeds their GPU events' by more than {MARGIN:.0%} and {MIN_US:g} µs, plus overhead "
        "rows that claim GPU"
        " time, plus 1 when the table's Self CUDA total exceeds the wall-clock union of the GPU events by the"
        " same margin (that alone is `info`: the total is the sum the table says, a reading to correct). "
        '`gpu_events`, `linked` (attributed to an op), `table_self_us` (the table\'s "Self CUDA time total"), '
        "`busy_us` (each device's union of GPU events, summed), `annotation_us`, `overhead_events`, "
        "`claiming` (overhead records carrying a GPU event's correlation id), `claimed_us`, `inflated_ops`, "
        f"`over_wall_clock`, `margin`, `rows` (the {TABLE_ROWS} with the most self time), `sm_active` (below)"
    ),
    status_rule=(
        "`warning` where an op row or an overhead row claims time its GPU events did not run; `info` where "
        "only the total exceeds GPU busy; `not_applicable` without GPU events"
    ),
    facts=(
        CheckFact(
            "summary_inflated_ops",
            int,
            "key_averages() rows whose device total exceeds their GPU events counted once by the margin",
            "inflated_ops",
        ),
        CheckFact(
            "summary_claiming_overheads",
            int,
            "profiler-overhead records carrying a GPU event's correlation id",
            "claiming",
        ),
        CheckFact(
            "summary_over_wall_clock",
            bool,
            "whether key_averages()' Self CUDA total exceeds the time the GPU was busy by the margin",
            "over_wall_clock",
            "any",
        ),
        CheckFact(
            "summary_self_us",
            float,
            "key_averages()' Self CUDA time total, recomputed from the trace, in µs",
            "table_self_us",
        ),
        CheckFact("summary_busy_us", float, "the wall-clock union of the GPU events (GPU busy time), in µs", "busy_us"),
        CheckFact(
            "summary_annotation_us",
            float,
            "gpu_user_annotation time shown as Self CUDA rows, in µs",
            "annotation_us",
        ),
    ),
)


def run(tables: Tables) -> HealthCheck:
    from wizard.trace.health.key_averages import summary_table_check

    return summary_table_check(tables.contents, CHECK)
