"""rank-skew: how far one collective's starts differ across a job's ranks (a job's check, not a trace's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import msgspec

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
    left_out: Annotated[dict[str, str], "ranks not compared, each with why (a cut trace, no NCCL collective)"]
    short: Annotated[dict[str, int], "compared ranks with fewer instances of a collective than another: how many"]


CHECK = CheckSpec(
    "rank-skew",
    "rank-skew",
    "collective start skew across ranks",
    RankSkewDetails,
    order=120,
    triage_rank=50,
    counts=(
        "for a rank directory: the i-th kernel of each NCCL name on every compared rank, only instances present "
        "on every compared rank; skew = latest start minus earliest. A rank whose trace is cut short, or (in a "
        "rank directory) with no NCCL kernel where another rank has one, is not compared: `left_out` (rank: why); a"
        " compared rank with fewer instances of a name than another is `short` (rank: instances fewer, summed over "
        "names). "
        "`ranks` (compared), `median_us`, `max_us`, `last_by_rank` "
        "(lowest rank on a tie), `floor_us`, `unmeasured` (instances whose skew is not a finite number: no "
        "measurement, left out of the rest). The rank is `distributedInfo.rank`, else a rank-like file name (as "
        "`ranks-complete` reads it: `rank3`, `worker3`, a last word `r3`, `3.json`; never a GPU's model number)"
    ),
    status_rule=(
        "`warning` when `median_us` reaches the floor (NCCL time on the early ranks includes waiting), or when "
        "an uncut rank has no NCCL kernel where another has (it never reached the collectives the others waited "
        "in, or its profile missed them); `info` below the floor (launch jitter); `not_applicable` for what is not"
        " a rank directory, with fewer than two ranks to compare, or with no skew that is a finite number "
        '("could not be measured")'
    ),
    scope="job",
    options=("rank_skew_floor_us",),
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


Starts = Mapping[str, Sequence[float]]


def left_out(ranks: Mapping[int, Starts], cut: Collection[int] = (), *, one_job: bool = False) -> dict[int, str]:
    """The ranks that cannot be compared, each with why: a trace cut short (its last collectives lost, so the
    instances every rank has would end where it was cut), or, in ``one_job`` (a rank directory, whose
    ranks-complete says whether it is one job), no NCCL kernel where another rank has one."""
    out = {r: "its trace is cut short" for r in sorted(ranks) if r in cut}
    if one_job and any(ranks[r] for r in ranks if r not in out):
        out.update({r: "no NCCL kernel" for r in sorted(ranks) if r not in out and not ranks[r]})
    return dict(sorted(out.items()))


class _Measured(msgspec.Struct, eq=False):
    """The skews over the compared ranks, and what the verdict says of them."""

    skews: list[float] = msgspec.field(default_factory=list)
    unmeasured: int = 0
    last: Counter[int] = msgspec.field(default_factory=Counter)
    short: Counter[int] = msgspec.field(default_factory=Counter)
    examples: list[HealthExample] = msgspec.field(default_factory=list)


def _measure(ranks: Mapping[int, Starts], order: list[int]) -> _Measured:
    """Each NCCL name every compared rank has: its instances every compared rank has, instance by instance."""
    import numpy as np

    out = _Measured()
    for name in sorted(set.intersection(*(set(ranks[r]) for r in order))):
        counts = [len(ranks[r][name]) for r in order]
        depth, most = min(counts), max(counts)  # once: max() per rank made 10,000 ranks 10^8 steps
        out.short.update({r: most - n for r, n in zip(order, counts, strict=True) if n < most})
        if not depth:
            continue
        starts = np.array([list(ranks[r][name][:depth]) for r in order], dtype=np.float64)  # ranks x instances
        with np.errstate(all="ignore"):  # 1e308 - -1e308 is inf: counted below, never printed as a warning
            spread = starts.max(axis=0) - starts.min(axis=0)
        measured = np.isfinite(spread)
        out.unmeasured += int((~measured).sum())
        if not measured.any():
            continue
        starts, spread = starts[:, measured], spread[measured]
        out.skews.extend(spread.tolist())
        latest = np.argmax(starts, axis=0)  # first (lowest) rank among equals
        out.last.update(order[int(r)] for r in latest)
        worst = int(np.argmax(spread))
        if len(out.examples) < EXAMPLES:
            out.examples.append(
                HealthExample(name, float(starts[:, worst].min()), 0.0, None, None, None, None, None,
                              f"instance {worst}: rank {order[int(latest[worst])]} started {spread[worst]:.1f} µs "
                              "after the first")
            )  # fmt: skip
    return out


def _aside(left: Mapping[int, str], short: Mapping[int, int]) -> str:
    """The ranks left out and the short ones, in words ("" when none)."""
    parts = [f"rank {r} not compared: {why}" for r, why in left.items()]
    if short:
        parts.append(
            f"{'rank' if len(short) == 1 else 'ranks'} {', '.join(str(r) for r in sorted(short))} "
            f"{verb(len(short), 'has', 'have')} fewer instances of a collective than another rank: compared "
            "over the instances every compared rank has"
        )
    return "".join(f"; {p}" for p in parts)


def rank_skew(
    ranks: Mapping[int, Starts],
    floor_us: float = RANK_SKEW_FLOOR_US,
    cut: Collection[int] = (),
    *,
    one_job: bool = False,
) -> HealthCheck:
    """How far the same collective's starts differ across ranks (the i-th kernel of one NCCL name on each, over
    the ranks that can be compared: ``left_out``); a warning when the median reaches ``floor_us``, or when an
    uncut rank has no NCCL kernel at all. A spread that is not a finite number (start times near 1e308) is not a
    measurement: it is counted as ``unmeasured`` and judges nothing. ``one_job``: the ranks are a rank directory's
    (``warpwizard compare``'s reports may be any machines': a rank without NCCL is no finding there)."""
    left = left_out(ranks, cut, one_job=one_job)
    order = sorted(r for r in ranks if r not in left)
    silent = [r for r, why in left.items() if why == "no NCCL kernel"]
    empty: dict[str, Any] = {"median_us": None, "max_us": None, "last_by_rank": {}, "floor_us": floor_us,
                             "left_out": {str(r): why for r, why in left.items()}, "short": {}}  # fmt: skip
    if len(ranks) < 2:
        reason = "not a rank directory: rank skew compares the traces of one job, a trace per rank"
        return CHECK.not_applicable(reason, ranks=order, unmeasured=0, **empty)
    if len(order) < 2 and not silent:
        reason = f"fewer than two ranks can be compared{_aside(left, {})}"
        return CHECK.not_applicable(reason, ranks=order, unmeasured=0, **empty)
    m = _measure(ranks, order) if len(order) >= 2 else _Measured()
    if m.unmeasured and not m.skews and not silent:
        return CHECK.not_applicable(
            f"the skew could not be measured: the start times of {plural(m.unmeasured, 'collective')} across ranks "
            "are not finite numbers",
            ranks=order, unmeasured=m.unmeasured, **empty,
        )  # fmt: skip
    return _verdict(order, m, left, silent, floor_us)


def _verdict(order: list[int], m: _Measured, left: dict[int, str], silent: list[int], floor_us: float) -> HealthCheck:
    """The words and status of a measured skew."""
    import statistics  # here: loading the checks' registry would import it (and fractions, random) for every trace

    median = float(statistics.median(m.skews)) if m.skews else None
    details = {
        "ranks": order,
        "median_us": median,
        "max_us": float(max(m.skews)) if m.skews else None,
        "last_by_rank": {str(r): n for r, n in sorted(m.last.items())},
        "floor_us": floor_us,
        "unmeasured": m.unmeasured,
        "left_out": {str(r): why for r, why in left.items()},
        "short": {str(r): n for r, n in sorted(m.short.items())},
    }
    aside = _aside(left, m.short)
    if silent:
        return CHECK.verdict(
            len(silent), "warning",
            f"{'rank' if len(silent) == 1 else 'ranks'} {', '.join(map(str, silent))} recorded no NCCL kernel where "
            f"the other ranks did{_measured_words(m, order, median)}{aside}",
            "a rank without the collectives the others ran never reached them (a hang, a crash, a slower path) or "
            "its profile missed them: the others' NCCL time is waiting for it; look at that rank's trace and log",
            details=details, examples=m.examples,
        )  # fmt: skip
    if not m.skews or median is None:
        return CHECK.verdict(0, "ok", f"no NCCL collective is present on every compared rank{aside}", "",
                             details=details)  # fmt: skip
    summary = _measured_words(m, order, median).removeprefix("; ") + aside
    if median < floor_us:
        return CHECK.verdict(
            len(m.skews), "info", f"{summary}: below the {floor_us:g} µs floor, launch jitter",
            "the ranks reach their collectives together, within launch jitter: NCCL time is transfer time",
            details=details, examples=m.examples,
        )  # fmt: skip
    return CHECK.verdict(
        len(m.skews),
        "warning",
        summary,
        "an NCCL kernel's time on the early ranks includes waiting for the last rank to arrive: read it as "
        "launch skew, not transfer time, and look at the straggler rank's work before the collective",
        details=details,
        examples=m.examples,
    )


def _measured_words(m: _Measured, order: list[int], median: float | None) -> str:
    """ "; N collectives across R ranks start up to X µs apart (median Y µs); rank S started last T times"."""
    if not m.skews or median is None:
        return ""
    straggler, times = m.last.most_common(1)[0]
    return (
        f"; {plural(len(m.skews), 'collective')} across {len(order)} ranks "
        f"{verb(len(m.skews), 'starts', 'start')} up to {max(m.skews):.1f} µs apart (median {median:.1f} µs); rank "
        f"{straggler} started last {times} times"
        + (f"; {m.unmeasured} not measurable (start times not finite)" if m.unmeasured else "")
    )


def run_job(reports: Sequence[Any], rank_skew_floor_us: float | None) -> HealthCheck:
    """The job's verdict from every rank's report: each carries its rank (``distributedInfo.rank``, else a number in
    its file name), its collectives' starts and whether its read was cut short, so no process has to read every
    rank's trace."""
    floor_us = RANK_SKEW_FLOOR_US if rank_skew_floor_us is None else rank_skew_floor_us
    if len(reports) < 2:
        return rank_skew({}, floor_us)
    by_rank: dict[int, Mapping[str, Sequence[float]]] = {}
    cut: set[int] = set()
    for report in reports:
        rank = rank_of(report.health_result.rank, report.path)  # a file name's number only inside a rank directory
        if rank is None or rank in by_rank:
            return CHECK.not_applicable(
                "the traces' ranks are unknown or repeated (no distributedInfo.rank and no rank in the file name)",
                ranks=[], unmeasured=0, floor_us=floor_us, median_us=None, max_us=None, last_by_rank={},
                left_out={}, short={},
            )  # fmt: skip
        by_rank[rank] = report.health_result.collectives
        if report.truncation is not None:
            cut.add(rank)
    return rank_skew(by_rank, floor_us, cut, one_job=True)
