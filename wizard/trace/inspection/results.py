"""What an inspection reports, and its JSON form (schema ``warpwizard.trace-report/2``): one
``TraceInspection`` per trace (what was read, and each pass's result by the pass's name) and the job's
``Inspection`` over them.

The types are plain records the run fills; each knows its own ``to_dict`` here, next to the schema it writes, so
the CLI, the probes and the library all serialise through one place. The flagship's own records (finding groups,
launches) are in wizard/trace/metrics/findings.py, the health check's in wizard/trace/health/.
"""

from __future__ import annotations

import platform
import warnings
from collections import Counter
from typing import Any, TypeVar

from msgspec import Struct, field
from msgspec.structs import asdict

from wizard.file_ends import OpenedEnds
from wizard.formatting import plural
from wizard.rendering import render
from wizard.schemas import TRACE_REPORT
from wizard.serialize import clean
from wizard.trace.health.checker import HEALTH_PASS, HealthResult, worst_status
from wizard.trace.health.spec import HEALTH_MARK, RANK, HealthCheck
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.metrics.findings import LAUNCH_COLUMNS, FindingGroup, KernelLaunch, KernelMetrics
from wizard.trace.passes import TracePass
from wizard.trace.profile.summary import PROFILE_PASS, ProfileSummary
from wizard.trace.read.collector import TraceContents, Truncation

R = TypeVar("R")

# The passes whose fields are a trace's report's own (warpwizard.trace-report/2, where they have always been);
# every other pass's result is written under the report's ``passes``, by name.
INLINE: tuple[TracePass[Any], ...] = (METRICS_PASS, HEALTH_PASS, PROFILE_PASS)


class TraceInspection(Struct):
    """One trace inspected: what its read found, and every pass's result by the pass's name (``results``). Each
    built-in pass's result is read by its one accessor (``metrics``, ``health_result``, ``profile``:
    ``report.metrics.groups``, ``report.health_result.checks``), any pass's by ``result(PASS)``, the registered
    and installed ones' through ``passes``. The record holds no pass's fields of its own."""

    path: str
    rank: int | None
    layout: str
    format: str  # which reader read it (wizard.trace.read.formats)
    writer: str  # the profiler that wrote it, where the file says
    compressed: bool
    bytes_read: int
    events: int
    kernels: int
    truncation: Truncation | None
    non_finite: dict[str, int]  # spelling -> values (bare | quoted)
    timing: dict[str, float]
    results: dict[str, object] = field(default_factory=dict)  # pass name -> its result, in the order they ran
    written: dict[str, Any] = field(default_factory=dict)  # the other passes' (not INLINE) as --json writes them
    ends: OpenedEnds | None = None  # the file as its read opened it, its ends hashed: the run's --from fingerprint
    # what an inspection of several traces calls it where "rank N" would be ambiguous (name_traces): its file
    named: str | None = None

    @classmethod
    def of(
        cls, contents: TraceContents, results: dict[str, object], written: dict[str, Any], *, passes_s: float
    ) -> TraceInspection:
        report = cls(
            path=contents.path,
            rank=contents.rank,
            layout=contents.layout,
            format=contents.format,
            writer=contents.writer,
            compressed=contents.compressed,
            bytes_read=contents.bytes_read,
            events=contents.events,
            kernels=len(contents.kernels),
            truncation=contents.truncation,
            non_finite=dict(contents.non_finite),
            timing=dict(contents.timing),
            results=results,
            written=written,
            ends=contents.ends,  # back with the report from a worker process, which read the file
        )
        report.timing["analyse_s"] = report.metrics.analyse_s
        report.timing["passes_s"] = passes_s
        return report

    def result(self, of: TracePass[R]) -> R:
        """A pass's result, as its declared type."""
        value = self.results[of.name]
        if not isinstance(value, of.result):
            raise TypeError(f"{of.who}'s result is {type(value).__name__}, not {of.result.__name__}")
        return value

    @property
    def passes(self) -> dict[str, object]:
        """The results of the passes written under ``passes`` (all but INLINE: registered, installed), by name."""
        return {name: value for name, value in self.results.items() if name in self.written}

    @property
    def metrics(self) -> KernelMetrics:
        """The flagship's result: every kernel's metrics checked (wizard/trace/metrics/classify.py)."""
        return self.result(METRICS_PASS)

    @property
    def health_result(self) -> HealthResult:
        """The health check's result: every check's verdict in registry order, and what the job's checks read
        (wizard/trace/health/checker.py)."""
        return self.result(HEALTH_PASS)

    @property
    def profile(self) -> ProfileSummary:
        """The trace summed up for comparison (wizard/trace/profile/summary.py): what `warpwizard diff` reads."""
        return self.result(PROFILE_PASS)

    # Names of the metrics pass's fields that docs/api.md once listed on the trace's record: kept one release,
    # each warning that it goes (read them on ``metrics``).
    @property
    def kernels_checked(self) -> int:
        """Deprecated: ``metrics.kernels_checked``."""
        return _deprecated("kernels_checked", self.metrics.kernels_checked)

    @property
    def devices(self) -> list[dict[str, Any]]:
        """Deprecated: ``metrics.devices``."""
        return _deprecated("devices", self.metrics.devices)

    @property
    def mechanisms(self) -> dict[str, int]:
        """Deprecated: ``metrics.mechanisms``."""
        return _deprecated("mechanisms", self.metrics.mechanisms)

    @property
    def groups(self) -> list[FindingGroup]:
        """Deprecated: ``metrics.groups``."""
        return _deprecated("groups", self.metrics.groups)

    @property
    def notes(self) -> list[str]:
        """Deprecated: ``metrics.notes``."""
        return _deprecated("notes", self.metrics.notes)

    @property
    def launches(self) -> list[KernelLaunch]:
        """Deprecated: ``metrics.launches``."""
        return _deprecated("launches", self.metrics.launches)

    @property
    def label(self) -> str:
        """What a report calls this trace beside others: its rank, else (no rank, or a rank another trace of the
        inspection declares too) its file name."""
        if self.named is not None:
            return self.named
        return f"rank {self.rank}" if self.rank is not None else self.path.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        """The trace's report: what was read, the flagship's and the health check's fields where they have always
        been, then ``passes``: each other pass's written result by name (only when there is one)."""
        report = {
            "path": self.path,
            "rank": self.rank,
            "layout": self.layout,
            "format": self.format,
            "writer": self.writer,
            "compressed": self.compressed,
            "bytes_read": self.bytes_read,
            "events": self.events,
            "kernels": self.kernels,
            **METRICS_PASS.write(self.metrics),
            "truncation": asdict(self.truncation) if self.truncation else None,
            "non_finite": self.non_finite,
            "timing": self.timing,
            **HEALTH_PASS.write(self.health_result),
            **PROFILE_PASS.write(self.profile),
        }
        if self.written:
            report["passes"] = self.written
        return _plain(report)


TraceReport = TraceInspection  # the name users' code knows (docs/api.md)

V = TypeVar("V")

# TraceInspection's deprecated names (docs/api.md, "Deprecated names"): kept in 0.1, gone in the release after.
DEPRECATED_NAMES = ("kernels_checked", "devices", "mechanisms", "groups", "notes", "launches")


def _deprecated(name: str, value: V) -> V:
    """``value``, with a DeprecationWarning at the caller's line naming where the field is read now."""
    warnings.warn(
        f"TraceInspection.{name} is deprecated and goes in the next release: read .metrics.{name} "
        "(the metrics pass's result)",
        DeprecationWarning,
        stacklevel=3,
    )
    return value


SHOWN_COUNTS = 4  # a combined health line's per-trace counts named before "N more"


class HealthLine(Struct):
    """One line of the health summary: a check's status on the traces it names (several ranks' alike
    collapsed), with the first trace's words."""

    check: str
    status: str
    playbook: str | None
    where: list[str]  # the traces' labels; empty for a single trace
    summaries: list[str]
    counts: list[int] = field(default_factory=list)  # each trace's count, as ``where``

    @property
    def problem(self) -> bool:
        return RANK[self.status] >= RANK["warning"]

    @property
    def label(self) -> str:
        """ " [rank 3]", " [8 ranks]", or "" for a single trace."""
        if not self.where:
            return ""
        if len(self.where) == 1:
            return f" [{self.where[0]}]"
        return f" [{plural(len(self.where), 'rank' if all(w.startswith('rank ') for w in self.where) else 'trace')}]"

    @property
    def summary(self) -> str:
        """The first trace's words, said once when every trace says the same; else led by the count summed over
        the traces and each trace's own, so that one trace's "6 launches" does not stand for three traces' 197."""
        first = self.summaries[0]
        if len(set(self.summaries)) <= 1:
            return first
        whose = f"on {self.where[0]}: {first}; --verbose shows each trace's"
        if len(self.counts) != len(self.where) or not any(self.counts):
            return whose
        each = [f"{w}: {n:,}" for w, n in zip(self.where, self.counts, strict=True)]
        more = len(each) - SHOWN_COUNTS
        shown = ", ".join(each[:SHOWN_COUNTS]) + (f", {more} more" if more > 0 else "")
        return f"{sum(self.counts):,} in all ({shown}); {whose}"

    def plain(self) -> str:
        """As the terminal prints it, without colour: a mark, the status, the check, where, what it found."""
        return f"{HEALTH_MARK[self.status]} {self.status:<8} {self.check}{self.label}  {self.summary}"


def name_traces(reports: list[TraceInspection]) -> list[TraceInspection]:
    """Each trace whose rank is unknown or repeated named by its file ("rank 0" of three files that all say rank 0
    named none of them): by its file name, by its path where two traces' names are the same. The reports, named."""
    ranks = Counter(r.rank for r in reports)
    names = Counter(r.path.rsplit("/", 1)[-1] for r in reports)
    for r in reports:
        if r.rank is None or ranks[r.rank] > 1:
            name = r.path.rsplit("/", 1)[-1]
            r.named = name if names[name] == 1 else r.path
    return reports


class Inspection(Struct):
    """The result over every file asked for (one per rank for a directory)."""

    reports: list[TraceInspection]
    job_health: list[HealthCheck] = field(default_factory=list)  # checks over every rank (rank skew)

    @property
    def impossible(self) -> bool:
        return any(r.metrics.impossible for r in self.reports)

    @property
    def health(self) -> list[HealthCheck]:
        """Every check's verdict: each trace's in turn, then the job's (rank skew)."""
        return [check for r in self.reports for check in r.health_result.checks] + list(self.job_health)

    @property
    def health_status(self) -> str:
        """The worst status of any check (``ok`` when every check is ok)."""
        return worst_status(self.health)

    def problems(self, at_least: str = "warning") -> list[HealthCheck]:
        """The checks at ``at_least`` or worse, worst first."""
        floor = RANK[at_least]
        found = [c for c in self.health if RANK[c.status] >= floor]
        return sorted(found, key=lambda c: -RANK[c.status])

    def health_rows(self) -> list[tuple[str, HealthCheck]]:
        """Every check with what it is about (the trace's label, or "all ranks" for the job's), worst first:
        what the terminal, Markdown and HTML show."""
        rows = self._per_trace() + [("all ranks", c) for c in self.job_health]
        return sorted(rows, key=lambda row: -RANK[row[1].status])

    def health_summary(self) -> list[HealthLine]:
        """The checks that are not ok, worst first, each said once: a check with the same status on several
        ranks' traces is one line for all of them (eight ranks' ``trace-size`` was eight lines); what the
        terminal's summary and a triage show."""
        rows = [(label, c) for label, c in self.health_rows() if c.status not in ("ok", "not_applicable")]
        several = len(self.reports) > 1
        lines: list[HealthLine] = []
        for label, check in rows:
            same = next((x for x in lines if x.check == check.check and x.status == check.status), None)
            if same is not None and label != "all ranks":
                same.where.append(label)
                same.summaries.append(check.summary)
                same.counts.append(check.count)
                continue
            where = [label] if several else []
            lines.append(HealthLine(check.check, check.status, check.playbook, where, [check.summary], [check.count]))
        return lines

    @property
    def health_headline(self) -> str:
        """'Trace health: 2 problems found', or 'Trace health: no problem found'."""
        problems = sum(1 for c in self.health if c.problem)
        return f"Trace health: {plural(problems, 'problem')} found" if problems else "Trace health: no problem found"

    def health_dataframe(self) -> Any:
        """Every check's examples as one pandas DataFrame (a ``check`` and a ``trace`` column added)."""
        return _frame(self._per_trace() + [("job", c) for c in self.job_health])

    def _per_trace(self) -> list[tuple[str, HealthCheck]]:
        """Each trace's checks with the trace's label, trace after trace, in registry order."""
        return [(r.label, c) for r in self.reports for c in r.health_result.checks]

    @property
    def mechanisms(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for r in self.reports:
            total.update(r.metrics.mechanisms)
        return dict(total)

    @property
    def launches(self) -> list[KernelLaunch]:
        """Every launch record the inspection was asked to keep, file after file."""
        return [launch for r in self.reports for launch in r.metrics.launches]

    @property
    def findings(self) -> list[FindingGroup]:
        """Wrong values grouped by kernel and mechanism, most serious first, file after file."""
        return [g for r in self.reports for g in r.metrics.groups]

    def to_dataframe(self) -> Any:
        """The launch records as a pandas DataFrame (columns: ``LAUNCH_COLUMNS``); needs pandas."""
        from wizard.errors import MissingDependency

        try:
            import pandas as pd
        except ImportError:
            raise MissingDependency("to_dataframe() needs pandas: pip install pandas (or warpwizard[pandas])") from None
        rows = [tuple(getattr(launch, c) for c in LAUNCH_COLUMNS) for launch in self.launches]
        return pd.DataFrame.from_records(rows, columns=list(LAUNCH_COLUMNS))

    @property
    def workload(self) -> str:
        """The work all these traces recorded, as one fingerprint (per-rank traces of one job agree)."""
        from wizard.schemas import work_fingerprint

        prints = sorted({r.metrics.workload for r in self.reports})
        return prints[0] if len(prints) == 1 else work_fingerprint(prints)

    def _repr_html_(self) -> str:
        """In a notebook: the findings table the HTML page shows, every text escaped (no plotly needed)."""
        return render("notebook", self)

    def to_html(self) -> str:
        """One self-contained HTML page with plots (needs ``warpwizard[html]``): what ``--report FILE.html`` writes."""
        return render("inspection", self, ".html")

    def to_markdown(self) -> str:
        """The Markdown report ``trace inspect --report FILE.md`` writes."""
        return render("inspection", self, ".md")

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": TRACE_REPORT,
            "host": {"hostname": platform.node()},  # so `warpwizard compare` can tell machines apart
            "impossible": self.impossible,
            "mechanisms": self.mechanisms,
            "workload": self.workload,
            "health_status": self.health_status,
            "health": [check.to_dict() for check in self.job_health],
            "reports": [r.to_dict() for r in self.reports],
        }


EXAMPLE_COLUMNS = (
    "trace",
    "check",
    "status",
    "name",
    "ts",
    "dur",
    "stream",
    "device",
    "correlation",
    "pid",
    "tid",
    "detail",
)


def _frame(checks: list[tuple[str, HealthCheck]]) -> Any:
    from wizard.errors import MissingDependency

    try:
        import pandas as pd
    except ImportError:
        raise MissingDependency("health_dataframe() needs pandas: pip install pandas (or warpwizard[pandas])") from None
    rows = [
        (label, c.check, c.status, e.name, e.ts, e.dur, e.stream, e.device, e.correlation, e.pid, e.tid, e.detail)
        for label, c in checks
        for e in c.examples
    ]
    return pd.DataFrame.from_records(rows, columns=list(EXAMPLE_COLUMNS))


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    cleaned = clean(value)
    assert isinstance(cleaned, dict)
    return cleaned
