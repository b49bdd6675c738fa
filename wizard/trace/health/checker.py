"""The health check as a pass over one read (``HEALTH_PASS``, which reads the flagship's ``KernelMetrics``
typed), and the job's checks over every rank's summary.

Light on purpose: the checks' declarations are (wizard/trace/health/checks/), and their functions import numpy
only when a pass finishes, after the read, so it adds nothing to the reader's peak memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from wizard.inspect_options import DEFAULT_OPTIONS, InspectOptions
from wizard.trace.health.checks import check_job
from wizard.trace.health.checks.ranks_complete import JobPlace, job_place
from wizard.trace.health.spec import RANK, HealthCheck
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import Results, TracePass
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.formats import cannot_show


class HealthResult(Struct):
    """The health pass's result for one trace: its checks, and what the cross-rank check needs of it."""

    checks: list[HealthCheck]
    collectives: dict[str, list[float]]
    rank: int | None
    place: JobPlace = field(default_factory=JobPlace)  # its distributedInfo, for ranks-complete

    def to_dict(self) -> dict[str, Any]:
        """Its fields of a trace's report in --json (docs/json-output.md, docs/health.md)."""
        return {
            "health": [check.to_dict() for check in self.checks],
            "health_status": worst_status(self.checks),
            "collectives": {
                "rank": self.rank,
                "starts": self.collectives,
                "world_size": self.place.world_size,
                "backend": self.place.backend,
            },
        }


def worst_status(checks: Sequence[HealthCheck]) -> str:
    return max((c.status for c in checks), key=RANK.__getitem__, default="ok")


class HealthPass:
    """Every per-trace check, after the kernel checks (whose wrong-launch count is one of them): the pass keeps the
    options whole and hands each check what it asks for (the metrics result whole, the options it declares)."""

    def __init__(self, options: InspectOptions) -> None:
        self.options = options
        self.selected: frozenset[str] | None = None if options.checks is None else frozenset(options.checks)

    def feed(self, contents: TraceContents) -> None:
        """Nothing while reading: the checks need every event."""

    def finish(self, contents: TraceContents, before: Results) -> HealthResult:
        from wizard.trace.health.checks import check_trace
        from wizard.trace.health.checks.rank_skew import collectives

        return HealthResult(
            _as_format_shows(contents, check_trace(contents, before.get(METRICS_PASS), self.options)),
            collectives(contents) if self.selected is None or "rank-skew" in self.selected else {},
            contents.rank,
            job_place(contents.metadata),
        )


HEALTH_PASS = TracePass("health", HealthResult, HealthPass, HealthResult.to_dict, needs=(METRICS_PASS,))


def _as_format_shows(contents: TraceContents, checks: list[HealthCheck]) -> list[HealthCheck]:
    """A check whose problem the file's format cannot carry is not applicable, with the format's reason: an
    Nsight Systems export has no occupancy to be impossible, so "ok" would claim what it never showed."""
    cannot = cannot_show(contents)
    return [_not_shown(check, cannot[check.check]) if check.check in cannot else check for check in checks]


def _not_shown(check: HealthCheck, reason: str) -> HealthCheck:
    return replace(
        check, status="not_applicable", count=0, summary=f"not applicable: {reason}", meaning="", reason=reason,
        examples=[], samples=[],
    )  # fmt: skip


def job_health(reports: Sequence[Any], options: InspectOptions = DEFAULT_OPTIONS) -> list[HealthCheck]:
    """The checks over a job's traces (ranks-complete, rank-skew), each by its module's ``run_job`` from every rank's
    report, so no process has to read every rank's trace (``checks.check_job``: each handed what it asks for)."""
    return check_job(reports, options)
