"""durations: GPU events of negative duration (and what a Cuspy trace's clamping left)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from wizard.compat import NotRequired
from wizard.formatting import plural
from wizard.trace.health.spec import (
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
    HealthExample,
)

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


class DurationsDetails(TypedDict):
    zero: Annotated[int, "kernels of zero duration"]
    gpu_events: Annotated[int, "GPU events"]
    at_zero: NotRequired[Annotated[int, "a Cuspy trace's events pinned at ts 0"]]
    clamped_zero: NotRequired[Annotated[int, "a Cuspy trace's GPU events of zero duration"]]


CHECK = CheckSpec(
    "durations",
    "impossible-timing",
    "negative or zero durations",
    DurationsDetails,
    order=60,
    triage_rank=20,
    counts=("GPU events with `dur < 0`; `zero` (kernels with `dur == 0`), `gpu_events`"),
    status_rule=("`error`; `not_applicable` without GPU events"),
    facts=(
        CheckFact("negative_durations", int, "GPU events with a negative duration"),
        CheckFact("zero_durations", int, "kernels with a zero duration", "zero"),
    ),
    colour="#0550ae",
)


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import floats, kernel_samples

    contents, kernels = tables.contents, tables.kernels
    ops = contents.timeline.gpu_ops
    op_dur = floats(ops.dur)
    events = len(kernels.ts) + len(op_dur)
    if not events:
        return CHECK.not_applicable("no GPU events", zero=0, gpu_events=0)
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
        return CHECK.verdict(0, "ok", summary, "", details=details)
    examples = [kernels.example(int(i), "negative duration") for i in negative_k[:EXAMPLES]]
    for i in negative_o[: max(0, EXAMPLES - len(examples))]:
        s = ops.shapes[ops.shape[i]]
        examples.append(
            HealthExample(str(s[0]), ops.ts[i], ops.dur[i], s[4], s[3], None, s[1], s[2], "negative duration")
        )
    return CHECK.verdict(
        count,
        "error",
        f"{plural(count, 'GPU event')} with a negative duration"
        + (f"; {plural(zero, 'kernel')} of zero duration" if zero else ""),
        "sums and means of GPU time over these events are wrong (a negative duration subtracts time); the "
        "timestamps were recorded wrongly (an end of 0 or -1, deferred completion on ROCm)",
        details=details,
        examples=examples,
        samples=kernel_samples(kernels, negative_k),
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
        return CHECK.verdict(
            at_zero, "warning",
            f"{plural(at_zero, 'event')} pinned at ts 0 by Cuspy's clamping (a start before the trace's base time); "
            + may_hide,
            "a start before the trace's base time is a bad timestamp (a 0 or garbage CUPTI time) that Cuspy clamped to "
            "0: the window, idle % and every span measured from the trace's start are wrong",
            details=details,
        )  # fmt: skip
    status = "info" if zero else "ok"
    return CHECK.verdict(0, status, f"no negative durations can show (Cuspy clamps them); {may_hide}",
                      "", details=details)  # fmt: skip
