"""The job judged from its ranks' summaries: the job's own checks (ranks-complete, rank-skew: their ``run_job``,
the very functions a rank directory's inspection calls) fed summaries in place of full reports, and every rank's
verdicts folded into one table: per check, how many ranks at each status; the worst ranks first (``WORST``
rows, never one per rank); the ranks that failed, counted, the first ``NAMED`` named.

A failed rank has no summary: the job's checks see it as absent (ranks-complete calls it missing where the job's
world size is known), and the failures say why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.inspect_options import InspectOptions
from wizard.jobs.step import Failure, Outcome
from wizard.jobs.summary import RankSummary
from wizard.schemas import JOB_REPORT

WORST = 20  # ranks shown in the table of the worst ranks
NAMED = 64  # failed ranks named (the count says how many in all)


@dataclass(frozen=True, slots=True)
class _Health:
    """What the job checks read of a trace's health result: its rank, its collectives' starts, its place."""

    rank: int | None
    collectives: dict[str, list[float]]
    place: Any


@dataclass(frozen=True, slots=True)
class SummaryReport:
    """A summary seen as the job checks see a trace's report (``path``, ``truncation``, ``health_result``'s rank,
    collectives and place): what their ``run_job`` reads, and nothing else."""

    path: str
    truncation: str | None
    health_result: _Health

    @classmethod
    def of(cls, summary: RankSummary, place_type: Any) -> SummaryReport:
        """``place_type``: ranks-complete's ``JobPlace`` (imported once by the caller, not per rank)."""
        p = summary.place
        place = place_type(p.rank, p.world_size, p.backend, tuple(tuple(g) for g in p.groups))
        health = _Health(summary.rank, dict(summary.collectives), place)
        return cls(summary.path, summary.truncation if summary.truncated else None, health)


@dataclass(slots=True)
class RankRow:
    """One rank in the table of the worst: its label, worst status, and the checks not ok (check: status)."""

    label: str
    path: str
    status: str
    problems: dict[str, str]


@dataclass(slots=True)
class JobInspection:
    """The job over its summaries: the job's checks, the per-check fold, the worst ranks, the failures."""

    summaries: list[RankSummary]
    failures: list[Failure]
    job_health: list[Any]  # HealthCheck
    reused: int = 0
    engine: str = "none"
    folded: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return len(self.summaries) + len(self.failures)

    def worst(self, limit: int = WORST) -> list[RankRow]:
        """The ``limit`` worst ranks: worst status first, then most checks at it, then the most found."""
        from wizard.trace.health.spec import RANK

        def key(s: RankSummary) -> tuple[int, int, int, str]:
            top = RANK.get(s.health_status, 0)
            at_top = [v for v in s.health if RANK.get(v.status, 0) == top]
            return (-top, -len(at_top), -sum(v.count for v in at_top), s.path)

        rows = []
        for s in sorted(self.summaries, key=key)[:limit]:
            bad = {v.check: v.status for v in s.health if RANK.get(v.status, 0) >= RANK["warning"]}
            label = f"rank {s.rank}" if s.rank is not None else s.path.rsplit("/", 1)[-1]
            rows.append(RankRow(label, s.path, s.health_status, bad))
        return rows

    @property
    def health_status(self) -> str:
        """The worst of every rank's status and the job's checks; ``error`` when a rank failed."""
        from wizard.trace.health.spec import RANK

        statuses = [s.health_status for s in self.summaries] + [c.status for c in self.job_health]
        statuses += ["error"] if self.failures else []
        return max(statuses, key=RANK.__getitem__, default="ok")

    def problems(self, at_least: str = "warning") -> bool:
        """Whether any rank, the job's checks or a failure is at ``at_least`` or worse."""
        from wizard.trace.health.spec import RANK

        return RANK[self.health_status] >= RANK[at_least]

    def to_dict(self) -> dict[str, Any]:
        """The job's report (``warpwizard.job-report/1``): aggregates and the outliers, never a row per rank."""
        return {
            "schema": JOB_REPORT,
            "engine": self.engine,
            "ranks": self.ranks,
            "summarised": len(self.summaries),
            "reused": self.reused,
            "health_status": self.health_status,
            "health": [c.to_dict() for c in self.job_health],
            "checks": self.folded,
            "worst_ranks": [
                {"rank": r.label, "path": r.path, "status": r.status, "problems": r.problems} for r in self.worst()
            ],
            "failed_count": len(self.failures),
            "failed": [{"path": f.path, "kind": f.kind, "reason": f.reason} for f in self.failures[:NAMED]],
        }


def fold(summaries: Sequence[RankSummary]) -> dict[str, dict[str, int]]:
    """Per check, how many ranks gave each status (in the registry's order of checks as the summaries list them)."""
    out: dict[str, Counter[str]] = {}
    for s in summaries:
        for v in s.health:
            out.setdefault(v.check, Counter())[v.status] += 1
    return {check: dict(sorted(counts.items())) for check, counts in out.items()}


def reduce(outcomes: Sequence[Outcome], options: InspectOptions, *, engine: str = "none") -> JobInspection:
    """The job from every rank's outcome (``options`` as ``check_options`` returned them): the summaries in path
    order, as a rank directory's reports are, so the job's checks say what they say of the same directory."""
    from wizard.trace.health.checker import job_health

    summaries = sorted((o.summary for o in outcomes if o.summary is not None), key=lambda s: s.path)
    failures = [o.failure for o in outcomes if o.failure is not None]
    from wizard.trace.health.checks.ranks_complete import JobPlace

    reports = [SummaryReport.of(s, JobPlace) for s in summaries]
    checks = job_health(reports, options)
    reused = sum(1 for o in outcomes if o.reused)
    return JobInspection(summaries, failures, checks, reused, engine, fold(summaries))
