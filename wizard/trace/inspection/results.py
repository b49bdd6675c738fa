"""What the trace doctor reports, and its JSON form (schema ``warpwizard.trace-report/2``).

The types are plain records the analysis fills; each knows its own ``to_dict`` here, next to the
schema it writes, so the CLI, the probes and the library all serialise through one place.
"""

from __future__ import annotations

import platform
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from wizard.formatting import plural
from wizard.frames import innermost_user_frame, trace_frame_path
from wizard.rendering import render
from wizard.schemas import TRACE_REPORT
from wizard.serialize import clean
from wizard.trace.health.spec import HEALTH_MARK, RANK, HealthCheck
from wizard.trace.metrics.detectors import Finding
from wizard.trace.metrics.mechanisms import is_wrong
from wizard.trace.read.collector import Truncation


@dataclass(slots=True)
class OpLink:
    """What launched a kernel, found through the runtime call's correlation id: the PyTorch op
    around that call, and the Python frames around it. ``op`` is None for a kernel launched
    without an op (a raw kernel through the driver API: seen on an H200 with torch.cuda._compile_kernel).
    """

    op: str | None
    runtime_call: str
    thread: str
    input_dims: str | None = None
    input_types: str | None = None
    python_stack: list[str] = field(default_factory=list)
    via: str = "correlation"

    @property
    def user_frame(self) -> str | None:
        """The innermost frame outside torch: where the user's code launched the kernel."""
        return innermost_user_frame(self.python_stack, trace_frame_path)


@dataclass(frozen=True, slots=True)
class Launch:
    """One launch with a wrong value, as scripts need it: when, where, and reported against true."""

    ts: float
    device: int | None
    stream: Any
    correlation: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    reported: dict[str, float | None]
    true: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class KernelLaunch:
    """One checked kernel launch, for scripts and notebooks: what the trace says beside what is true.

    Field names are Holistic Trace Analysis's kernel-frame columns where they mean the same thing
    (``ts``, ``dur``, ``pid``, ``tid``, ``stream``, ``correlation``, ``device``, ``grid``, ``block``,
    ``registers_per_thread``, ``shared_memory``, ``blocks_per_sm``, ``warps_per_sm``,
    ``est_occupancy``, ``input_dims``, ``input_type``; ``s_name`` is HTA's decoded kernel name), so
    the two frames join on ``correlation`` (and ``pid``) per rank. Reported values are floats as the
    trace holds them (``inf``/``nan`` included; None where absent); ``true_*`` are what the launch had.
    """

    s_name: str
    ts: float
    dur: float
    pid: Any
    tid: Any
    device: int | None
    stream: Any
    correlation: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers_per_thread: int | None
    shared_memory: int | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    est_occupancy: float | None
    true_blocks_per_sm: float | None
    true_warps_per_sm: float | None
    true_est_occupancy: float | None
    mechanism: str | None  # the first wrong mechanism (trace.mechanisms.WRONG), else F, else None
    mechanisms: tuple[str, ...]  # every mechanism found for this launch
    op: str | None  # the PyTorch op that launched it, where the trace links one
    input_dims: str | None
    input_type: str | None
    trace: str  # the file it came from
    rank: int | None

    @property
    def wrong(self) -> bool:
        """Whether the trace holds a wrong value for this launch (F, by design, is not wrong)."""
        return any(is_wrong(m) for m in self.mechanisms)


LAUNCH_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(KernelLaunch))


@dataclass(slots=True)
class FindingGroup:
    """All kernels with one name and one mechanism."""

    mechanism: str
    title: str
    severity: str
    kernel: str
    count: int
    first_ts: float
    worst: Finding
    op: OpLink | None = None
    examples: list[int] = field(default_factory=list)  # kernel indexes tried for the op link
    launch_refs: list[tuple[int, Finding]] = field(default_factory=list)  # (kernel index, its finding)
    launches: list[Launch] = field(default_factory=list)  # built from launch_refs when the trace is done
    launches_omitted: int = 0

    @property
    def wrong(self) -> bool:
        """Whether this group's launches hold wrong values (every mechanism but F)."""
        return is_wrong(self.mechanism)

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst
        return _plain(
            {
                "mechanism": self.mechanism,
                "title": self.title,
                "severity": self.severity,
                "kernel": self.kernel,
                "count": self.count,
                "first_ts": self.first_ts,
                "worst": {
                    "ts": worst.ts,
                    "device": worst.device,
                    "correlation": worst.correlation,
                    "grid": list(worst.grid) if worst.grid else None,
                    "block": list(worst.block) if worst.block else None,
                    "reported": worst.reported,
                    "true": worst.true,
                    "evidence": worst.evidence,
                    "limiting_factors": list(worst.limiting_factors),
                },
                "op": asdict(self.op) if self.op else None,
                "launches": [asdict(launch) for launch in self.launches],
                "launches_omitted": self.launches_omitted,
            }
        )


MAX_GROUPS = 1000  # finding groups listed per trace in JSON and Markdown; the rest are counted


TIMELINE_CAP = 100_000  # wrong launches' start times kept per (stream, mechanism) for a picture


@dataclass(slots=True)
class PlotData:
    """What a picture of one trace needs, small whatever the trace's size: distinct (reported, true) points
    with how many launches share each, and when the wrong launches ran, per stream and mechanism."""

    points: list[tuple[str, str, float | None, float | None, int]] = field(default_factory=list)
    # (metric, mechanism or "ok", reported, true, launches)
    timeline: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (stream, mechanism) -> ts
    timeline_omitted: int = 0
    span: tuple[float, float] | None = None  # the trace's first start and last end (µs): where its time axis starts


@dataclass(slots=True)
class TraceReport:
    path: str
    rank: int | None
    layout: str
    compressed: bool
    bytes_read: int
    events: int
    kernels: int
    kernels_checked: int
    devices: list[dict[str, Any]]
    rocm: bool
    truncation: Truncation | None
    mechanisms: dict[str, int]
    groups: list[FindingGroup]
    notes: list[str]
    max_true_warps_per_sm: float | None
    timing: dict[str, float]
    non_finite: dict[str, int] = field(default_factory=dict)  # spelling -> values (bare | quoted)
    launches: list[KernelLaunch] = field(default_factory=list)  # when asked for: every checked, or every wrong
    workload: str = ""  # fingerprint of the work recorded (kernels, grids, blocks): compare's "same work?"
    wrong_launches: int = 0  # launches with at least one wrong value, each counted once
    plot: PlotData | None = None  # when a picture was asked for (the HTML report)
    health: list[HealthCheck] = field(default_factory=list)  # the health check's verdicts, in registry order
    collectives: dict[str, list[float]] = field(default_factory=dict)  # NCCL kernels' starts: for rank skew
    skew_rank: int | None = (
        None  # distributedInfo.rank for the cross-rank check (a rank directory falls back to the file name)
    )
    passes: dict[str, Any] = field(default_factory=dict)  # registered passes' results, by pass name
    rocm_metrics: int = 0  # kernels of a ROCm trace that carry blocks/warps per SM (listed, never checked)
    resident_warps: list[int] = field(default_factory=list)  # per-SM warp limits F is counted against (not ROCm)
    format: str = "kineto-json"  # which reader read it (wizard.trace.read.formats)
    computed_launches: int = 0  # launches printing no metrics whose true values were computed (Cuspy, nsys)
    writer: str = ""  # the profiler that wrote it, where the file says

    @property
    def impossible(self) -> bool:
        return any(is_wrong(m) for m in self.mechanisms)

    @property
    def label(self) -> str:
        """What a report calls this trace beside others: its rank, else its file name."""
        return f"rank {self.rank}" if self.rank is not None else self.path.rsplit("/", 1)[-1]

    def to_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "path": self.path,
                "rank": self.rank,
                "layout": self.layout,
                "format": self.format,
                "writer": self.writer,
                "compressed": self.compressed,
                "bytes_read": self.bytes_read,
                "events": self.events,
                "kernels": self.kernels,
                "kernels_checked": self.kernels_checked,
                "computed_launches": self.computed_launches,
                "wrong_launches": self.wrong_launches,
                "devices": self.devices,
                "rocm": self.rocm,
                "rocm_metrics": self.rocm_metrics,
                "truncation": asdict(self.truncation) if self.truncation else None,
                "impossible": self.impossible,
                "mechanisms": self.mechanisms,
                "max_true_warps_per_sm": self.max_true_warps_per_sm,
                "groups": [g.to_dict() for g in self.groups[:MAX_GROUPS]],
                "groups_omitted": max(0, len(self.groups) - MAX_GROUPS),
                "workload": self.workload,
                "notes": self.notes,
                "non_finite": self.non_finite,
                "timing": self.timing,
                "health": [check.to_dict() for check in self.health],
                "health_status": worst_status(self.health),
                "collectives": {"rank": self.skew_rank, "starts": self.collectives},
            }
        )


def launched_by(link: OpLink | None) -> str:
    """The 'launched by' cell: the op and its shapes, else the user's Python frame, else a dash."""
    if link is None:
        return "—"
    if link.op is not None:
        return link.op + (f" {link.input_dims}" if link.input_dims else "")
    return f"no op; {link.user_frame}" if link.user_frame else "—"


@dataclass
class HealthLine:
    """One line of the health summary: a check's status on the traces it names (several ranks' alike
    collapsed), with the first trace's words."""

    check: str
    status: str
    playbook: str | None
    where: list[str]  # the traces' labels; empty for a single trace
    summaries: list[str]

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
        """The first trace's words; said once when every trace says the same, else with whose they are."""
        first = self.summaries[0]
        if len(set(self.summaries)) <= 1:
            return first
        return f"{first} ({self.where[0]}; --verbose shows each trace's)"

    def plain(self) -> str:
        """As the terminal prints it, without colour: a mark, the status, the check, where, what it found."""
        return f"{HEALTH_MARK[self.status]} {self.status:<8} {self.check}{self.label}  {self.summary}"


@dataclass(slots=True)
class Inspection:
    """The result over every file asked for (one per rank for a directory)."""

    reports: list[TraceReport]
    job_health: list[HealthCheck] = field(default_factory=list)  # checks over every rank (rank skew)

    @property
    def impossible(self) -> bool:
        return any(r.impossible for r in self.reports)

    @property
    def health(self) -> list[HealthCheck]:
        """Every check's verdict: each trace's in turn, then the job's (rank skew)."""
        return [check for r in self.reports for check in r.health] + list(self.job_health)

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
        rows = [(r.label, c) for r in self.reports for c in r.health] + [("all ranks", c) for c in self.job_health]
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
                continue
            lines.append(
                HealthLine(check.check, check.status, check.playbook, [label] if several else [], [check.summary])
            )
        return lines

    @property
    def health_headline(self) -> str:
        """'Trace health: 2 problems found', or 'Trace health: no problem found'."""
        problems = sum(1 for c in self.health if c.problem)
        return f"Trace health: {plural(problems, 'problem')} found" if problems else "Trace health: no problem found"

    def health_dataframe(self) -> Any:
        """Every check's examples as one pandas DataFrame (a ``check`` and a ``trace`` column added)."""
        return _frame([(r.label, c) for r in self.reports for c in r.health] + [("job", c) for c in self.job_health])

    @property
    def mechanisms(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for r in self.reports:
            total.update(r.mechanisms)
        return dict(total)

    @property
    def launches(self) -> list[KernelLaunch]:
        """Every launch record the inspection was asked to keep, file after file."""
        return [launch for r in self.reports for launch in r.launches]

    @property
    def findings(self) -> list[FindingGroup]:
        """Wrong values grouped by kernel and mechanism, most serious first, file after file."""
        return [g for r in self.reports for g in r.groups]

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

        prints = sorted({r.workload for r in self.reports})
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


def worst_status(checks: list[HealthCheck]) -> str:
    return max((c.status for c in checks), key=RANK.__getitem__, default="ok")


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
