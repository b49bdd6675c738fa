"""rank-skew: how far one collective's starts differ across a job's ranks (a job's check, not a trace's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    RANK_SKEW_FLOOR_US,
    Bounds,
    CheckFact,
    CheckSpec,
    HealthCheck,
    HealthExample,
    rank_of,
)

if TYPE_CHECKING:
    from wizard.inspect_options import InspectOptions
    from wizard.trace.read.collector import TraceContents


COLLECTIVE_NAMES = 64  # NCCL kernel names kept per trace for the cross-rank check
COLLECTIVE_INSTANCES = 10_000  # starts kept per name


class RankSkewDetails(TypedDict):
    ranks: Annotated[list[int], "the ranks compared"]
    median_us: Annotated[float | None, "the median skew, in µs"]
    max_us: Annotated[float | None, "the largest skew, in µs"]
    last_by_rank: Annotated[dict[str, int], "collectives each rank started last"]
    floor_us: Annotated[float, "the median skew at which the check warns, in µs", Bounds(minimum=0)]
    unmeasured: Annotated[int, "instances whose skew is not a finite number"]


CHECK = CheckSpec(
    "rank-skew",
    "rank-skew",
    "collective start skew across ranks",
    RankSkewDetails,
    order=120,
    triage_rank=50,
    counts=(
        "for a rank directory: the i-th kernel of each NCCL name on every rank, only instances present on "
        "every rank; skew = latest start minus earliest. `ranks`, `median_us`, `max_us`, `last_by_rank` "
        "(lowest rank on a tie), `floor_us`, `unmeasured` (instances whose skew is not a finite number: no "
        "measurement, left out of the rest). The rank is `distributedInfo.rank`, else the first number in the"
        " file name"
    ),
    status_rule=(
        "`warning` when `median_us` reaches the floor (NCCL time on the early ranks includes waiting); `info`"
        " below it (launch jitter); `not_applicable` for what is not a rank directory, or with no skew that is a "
        'finite number ("could not be measured")'
    ),
    scope="job",
    facts=(
        CheckFact(
            "rank_skew_collectives",
            int,
            "NCCL collectives compared across ranks (rank-skew)",
            how="first",
            default=0,
        ),
        CheckFact(
            "rank_skew_max_us",
            float | None,
            "largest start skew of one collective across ranks, in µs",
            "max_us",
            "first",
        ),
        CheckFact("rank_skew_median_us", float | None, "median start skew across ranks, in µs", "median_us", "first"),
        CheckFact(
            "rank_skew_floor_us",
            float,
            "the median skew at which rank-skew is a warning, in µs (the check's floor, docs/health.md)",
            "floor_us",
            "first",
            RANK_SKEW_FLOOR_US,
        ),
        CheckFact(
            "rank_skew_status",
            str,
            "the rank-skew check's status: warning at or above the floor, info below",
            "status",
            "first",
            "not_applicable",
        ),
        CheckFact("straggler_rank", int | None, "the rank that started last most often", "last_by_rank", "most"),
    ),
)


def collectives(contents: TraceContents) -> dict[str, list[float]]:
    """NCCL kernels' starts per name, in order (by start, file order for ties): what the cross-rank
    check needs from each rank, small enough to travel in a per-rank summary."""
    import numpy as np

    from wizard.trace.health.tables import Kernels

    kernels = Kernels.of(contents)
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
    import numpy as np

    order = sorted(ranks)
    empty: dict[str, Any] = {"median_us": None, "max_us": None, "last_by_rank": {}, "floor_us": floor_us}
    if len(order) < 2:
        reason = "not a rank directory: rank skew compares the traces of one job, a trace per rank"
        return CHECK.not_applicable(reason, ranks=order, unmeasured=0, **empty)
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
        return CHECK.not_applicable(
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
        return CHECK.verdict(0, "ok", "no NCCL collective is present on every rank", "", details=details)
    straggler, times = last.most_common(1)[0]
    summary = (
        f"{plural(len(skews), 'collective')} across {len(order)} ranks {verb(len(skews), 'starts', 'start')} up to "
        f"{max(skews):.1f} µs apart (median {median:.1f} µs); rank {straggler} started last {times} times"
        + (f"; {unmeasured} not measurable (start times not finite)" if unmeasured else "")
    )
    if median < floor_us:
        return CHECK.verdict(
            len(skews), "info", f"{summary}: below the {floor_us:g} µs floor, launch jitter",
            "the ranks reach their collectives together, within launch jitter: NCCL time is transfer time",
            details=details, examples=examples,
        )  # fmt: skip
    return CHECK.verdict(
        len(skews),
        "warning",
        summary,
        "an NCCL kernel's time on the early ranks includes waiting for the last rank to arrive: read it as "
        "launch skew, not transfer time, and look at the straggler rank's work before the collective",
        details=details,
        examples=examples,
    )


def run_job(reports: Sequence[Any], options: InspectOptions) -> HealthCheck:
    """The job's verdict from every rank's report: each carries its rank (``distributedInfo.rank``, else a number in
    its file name) and its collectives' starts, so no process has to read every rank's trace."""
    floor_us = RANK_SKEW_FLOOR_US if options.rank_skew_floor_us is None else options.rank_skew_floor_us
    if len(reports) < 2:
        return rank_skew({}, floor_us)
    by_rank: dict[int, Mapping[str, Sequence[float]]] = {}
    for report in reports:
        rank = rank_of(report.skew_rank, report.path)  # a file name's number only inside a rank directory
        if rank is None or rank in by_rank:
            return CHECK.not_applicable(
                "the traces' ranks are unknown or repeated (no distributedInfo.rank and no number in the file name)",
                ranks=[],
                unmeasured=0,
                floor_us=floor_us,
                median_us=None,
                max_us=None,
                last_by_rank={},
            )
        by_rank[rank] = report.collectives
    return rank_skew(by_rank, floor_us)
