"""``ranks.baseline``: the job's rank skew against a zero-skew baseline (the same step profiled right after a
barrier), so a playbook can tell NCCL time that is waiting for a straggler from time spent transferring.

Each side is a rank directory, several trace files, or the per-rank ``--json`` reports each node wrote
(``warpwizard trace inspect --json``, as ``compare`` merges them): only the collectives' starts are needed.
A barrier lines the ranks up, so whatever skew remains after it is the hosts' clocks or a collective that
really starts late; the skew it removes was arrival skew (meta-pytorch/attention-gym PR #487).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.formatting import plural
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.trace.health.spec import RANK_SKEW_FLOOR_US, HealthCheck

WAITING_SHARE = 0.5  # a barrier that removes at least half the median skew: the skew was waiting
FLOOR_US = RANK_SKEW_FLOOR_US  # below this, skew is launch jitter: the rank-skew check's own floor


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [str(v) for v in value if v]
    return []


def _reports(paths: list[str]) -> list[Any] | None:
    """The files as warpwizard --json reports, or None when any of them is not one (a trace, a directory)."""
    import os

    from wizard.compare import load_report

    if not paths or any(os.path.isdir(p) or not p.endswith(".json") for p in paths):
        return None
    try:
        return [load_report(p) for p in paths]
    except InputFileError:
        return None


def job_skew(env: Environment, paths: list[str]) -> HealthCheck:
    """The rank-skew check of one job, from its traces or from its per-rank reports."""
    from wizard.compare import ranks_of
    from wizard.trace.health.checks.rank_skew import rank_skew

    reports = _reports(paths)
    if reports is not None:
        ranks = ranks_of(reports)
        if ranks is None:
            raise InputFileError(f"{', '.join(paths)}: a rank appears in two reports: they are not one job's")
        return rank_skew(ranks)
    from wizard.probes.inspections import inspection

    found = next((c for c in inspection(env, paths).job_health if c.check == "rank-skew"), None)
    return found if found is not None else rank_skew({})


@dataclass(frozen=True, slots=True)
class SkewComparison:
    median_us: float | None
    max_us: float | None
    baseline_median_us: float | None
    baseline_max_us: float | None

    @property
    def removed_us(self) -> float | None:
        if self.median_us is None or self.baseline_median_us is None:
            return None
        return self.median_us - self.baseline_median_us

    @property
    def waiting(self) -> bool | None:
        """The barrier removed most of the skew: the NCCL time on the early ranks was waiting."""
        if self.median_us is None or self.baseline_median_us is None:
            return None
        return self.median_us >= FLOOR_US and self.baseline_median_us <= self.median_us * (1 - WAITING_SHARE)


def _us(value: Any) -> float | None:
    """A skew in µs, or None where it is not a measurement (not a number, or not finite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


class RankBaselineFacts(TypedDict, total=False):
    """The facts RankBaselineProbe declares once (help, ``probes``, the schema and the loader read them)."""

    ranks: Annotated[list[int], "ranks compared"]
    error: Annotated[str, "why the traces or reports could not be read (when the probe errs)"]
    skew_median_us: Annotated[float | None, "median start skew of the job's collectives, µs"]
    skew_max_us: Annotated[float | None, "largest start skew, µs"]
    baseline_median_us: Annotated[float | None, "median start skew after the barrier, µs"]
    baseline_max_us: Annotated[float | None, "largest start skew after the barrier, µs"]
    skew_removed_us: Annotated[float | None, "median skew the barrier removed, µs: arrival skew, i.e. waiting"]
    waiting: Annotated[bool | None, "the barrier removed at least half the skew: NCCL time was mostly waiting"]
    straggler_rank: Annotated[int | None, "the rank that started last most often, before the barrier"]
    baseline_straggler_rank: Annotated[int | None, "the same after the barrier"]


class RankBaselineProbe:
    name = "ranks.baseline"
    summary = "Compare a job's NCCL start skew with a zero-skew baseline profiled after a barrier"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (
        ParamSpec(
            "paths",
            "paths",
            "the job's traces: a rank directory, trace files or per-rank --json reports",
            required=True,
        ),
        ParamSpec("baseline", "paths", "the same step profiled right after torch.distributed.barrier(), likewise"),
    )
    facts: tuple[FactSpec, ...] = declared_facts(RankBaselineFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        job, baseline = _paths(params.get("paths")), _paths(params.get("baseline"))
        if not job:
            return ProbeResult(Status.SKIP, "no traces of the job given", facts={"reason": "no traces"})
        if not baseline:
            return ProbeResult(
                Status.SKIP,
                "no baseline given: profile the same step right after torch.distributed.barrier() on every rank",
                facts={"reason": "no baseline traces"},
            )
        try:
            before, after = job_skew(env, job), job_skew(env, baseline)
        except InputFileError as exc:
            return ProbeResult(Status.ERROR, str(exc), facts={"error": str(exc)})
        for name, check in (("job", before), ("baseline", after)):
            if check.status == "not_applicable" or _us(check.details.get("median_us")) is None:
                why = check.reason or "no NCCL collective is present on every rank"
                return ProbeResult(Status.SKIP, f"the {name}'s traces give no rank skew: {why}", facts={"reason": why})
        compared = SkewComparison(
            _us(before.details.get("median_us")),
            _us(before.details.get("max_us")),
            _us(after.details.get("median_us")),
            _us(after.details.get("max_us")),
        )
        facts: RankBaselineFacts = {
            "ranks": list(before.details.get("ranks") or []),
            "skew_median_us": compared.median_us,
            "skew_max_us": compared.max_us,
            "baseline_median_us": compared.baseline_median_us,
            "baseline_max_us": compared.baseline_max_us,
            "skew_removed_us": compared.removed_us,
            "waiting": compared.waiting,
            "straggler_rank": _straggler(before),
            "baseline_straggler_rank": _straggler(after),
        }
        evidence = [
            f"before the barrier: median skew {compared.median_us:.1f} µs, max {compared.max_us:.1f} µs "
            f"over {plural(before.count, 'collective')}; rank {facts['straggler_rank']} started last most often",
            f"after the barrier: median skew {compared.baseline_median_us:.1f} µs, "
            f"max {compared.baseline_max_us:.1f} µs over {plural(after.count, 'collective')}",
        ]
        if compared.waiting:
            summary = (
                f"the barrier removed {compared.removed_us:.1f} µs of median skew: the NCCL time on the early ranks "
                "was mostly waiting for the last rank"
            )
            return ProbeResult(Status.FAIL, summary, facts=dict(facts), evidence=evidence)
        summary = "the skew stays after a barrier: not arrival skew (host clocks, or a collective that starts late)"
        return ProbeResult(Status.PASS, summary, facts=dict(facts), evidence=evidence)


def _straggler(check: HealthCheck) -> int | None:
    last = check.details.get("last_by_rank") or {}
    return int(max(last, key=lambda r: (last[r], -int(r)))) if last else None
