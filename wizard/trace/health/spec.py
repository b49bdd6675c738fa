"""The trace health check's vocabulary: what a check declares (``CheckSpec``), the verdicts it gives
(``HealthCheck``), the status words, the launch calls Kineto writes and the thresholds the checks share.

Each check is a module of wizard/trace/health/checks/ (its declaration and its function); the registry there
finds them. Nothing here or in a check's declaration imports numpy: a check's function imports it, and the
arrays it reads (``tables``), only when a trace has been read, so the CLI, the probes and the docs read the
declarations without loading the checks, and numpy adds nothing to the reader's peak memory. The counts follow
docs/health.md exactly (an independent computation in tests/health_oracle.py checks them on every public trace).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from wizard.ranks import rank_in_name, rank_value

KINETO = "pytorch/kineto@114171dfba6867d2a898634670d9a3197dbb9595"  # the commit the sources below were read at
_RUNTIME = (
    f"{KINETO} libkineto/src/CuptiActivity.h:104 names a runtime call runtimeCbidName(cbid), which "
    "cupti_strings.cpp:106-123 takes from cuptiGetCallbackName less its _vNNNN suffix (CUPTI's "
    "CUPTI_RUNTIME_TRACE_CBID_<name>_vNNNN); Kineto records every runtime call"
)
_DRIVER = f"{KINETO} libkineto/src/CuptiCbidRegistry.cpp:165-178: the only driver calls Kineto records"
_ROCM = f"{KINETO} libkineto/src/RocprofLogger.cpp:210-227 isKernelApi: the HIP calls Kineto records as launches"


class LaunchApi(msgspec.Struct, frozen=True, eq=False):
    """A call name Kineto writes for a kernel launch (``launch``) or a graph replay (``graph``), and where its
    source says so: one table that the checks, docs/health.md and the tests read."""

    name: str
    kind: str  # launch | graph
    source: str


LAUNCH_APIS: tuple[LaunchApi, ...] = (
    *(
        LaunchApi(name, "launch", _RUNTIME)
        for name in (
            "cudaLaunchKernel",
            "cudaLaunchKernel_ptsz",
            "__cudaLaunchKernel",  # CUDA 13 routes cudaLaunchKernel through it (CUPTI ..._v13000)
            "__cudaLaunchKernel_ptsz",
            "cudaLaunchKernelExC",
            "cudaLaunchKernelExC_ptsz",
            "cudaLaunchCooperativeKernel",
            "cudaLaunchCooperativeKernel_ptsz",
            "cudaLaunchCooperativeKernelMultiDevice",
        )
    ),
    LaunchApi("cuLaunchKernel", "launch", _DRIVER),
    LaunchApi("cuLaunchKernelEx", "launch", _DRIVER),
    LaunchApi(
        "cuLaunchCooperativeKernel", "launch", "written by other CUPTI-based profilers' traces (kept from before)"
    ),
    *(
        LaunchApi(name, "launch", _ROCM)
        for name in (
            "hipLaunchKernel",
            "hipLaunchKernel_spt",
            "hipExtLaunchKernel",
            "hipModuleLaunchKernel",
            "hipExtModuleLaunchKernel",
            "hipHccModuleLaunchKernel",
            "hipLaunchCooperativeKernel",
            "hipLaunchCooperativeKernel_spt",
            "hipModuleLaunchCooperativeKernel",
            "hipLaunchCooperativeKernelMultiDevice",
            "hipModuleLaunchCooperativeKernelMultiDevice",
            "hipExtLaunchMultiKernelMultiDevice",
        )
    ),
    LaunchApi("cudaGraphLaunch", "graph", _RUNTIME),
    LaunchApi("cudaGraphLaunch_ptsz", "graph", _RUNTIME),
    LaunchApi("hipGraphLaunch", "graph", f"{KINETO} libkineto/src/RocprofActivity_inl.h:198 (a flow start)"),
)
LAUNCH_CALLS = frozenset(a.name for a in LAUNCH_APIS if a.kind == "launch")
GRAPH_LAUNCH_CALLS = frozenset(a.name for a in LAUNCH_APIS if a.kind == "graph")
CAPTURE_BEGIN = frozenset({"cudaStreamBeginCapture", "hipStreamBeginCapture"})
CAPTURE_END = frozenset({"cudaStreamEndCapture", "hipStreamEndCapture"})


class StatusWord(msgspec.Struct, frozen=True, eq=False):
    """A health status as every reader writes it: the word (JSON, facts), its mark for a person (the terminal,
    a triage's lines) and its label in a report's table."""

    word: str
    mark: str
    label: str


STATUS_WORDS = (
    StatusWord("ok", "✓", "ok"),
    StatusWord("not_applicable", "-", "n/a"),
    StatusWord("info", "i", "info"),
    StatusWord("warning", "!", "warning"),
    StatusWord("error", "✗", "error"),
)  # mildest first
STATUSES = tuple(s.word for s in STATUS_WORDS)
RANK = {status: n for n, status in enumerate(STATUSES)}
HEALTH_MARK = {s.word: s.mark for s in STATUS_WORDS}
HEALTH_LABEL = {s.word: s.label for s in STATUS_WORDS}
EXAMPLES = 5  # examples kept per check
WINDOW_CHUNK = 1 << 16  # events per slice when finding the window's end
SAMPLES = 2000  # events per check kept for the health timeline (spread evenly over all of them)
# The median start skew across ranks at which rank-skew is a warning (and the rank-skew playbook diagnoses
# waiting): below it, skew is NCCL launch jitter (dlrm-2ranks: 17 µs median between two ranks of one host).
# ``trace inspect --rank-skew-floor-us`` / ``inspect_traces(rank_skew_floor_us=...)`` set another.
RANK_SKEW_FLOOR_US = 100.0
MARGIN = 0.10  # summary-table: a reported device time more than 10% above the GPU events counted once misleads
MIN_US = 1.0  # and by at least a microsecond (a rounding never fires)
OVERHEAD_SHARE = 0.10  # profiler overhead above 10% of the window (nsys-ai's doctor warns there, fails at 20%)
TABLE_ROWS = 20  # summary-table's rows kept in the report (by reported self device time)
STEPS_KEPT = 64  # ProfilerStep durations kept in profiler-overhead's details


class HealthExample(msgspec.Struct, frozen=True):
    """One event that shows the problem: what a user searches for in a viewer."""

    name: str
    ts: float
    dur: float | None  # None for a runtime call: the reader keeps calls' starts, not their durations
    stream: Any
    device: int | None
    correlation: int | None
    pid: Any
    tid: Any
    detail: str = ""


class HealthCheck(msgspec.Struct):
    """One check's verdict on one trace (or, for ``rank-skew``, on a job)."""

    check: str
    status: str
    count: int
    playbook: str | None
    summary: str
    meaning: str
    reason: str | None = None
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    examples: list[HealthExample] = msgspec.field(default_factory=list)
    # where the problem lies in time, for a picture: (ts, lane) of at most SAMPLES events spread over all
    samples: list[tuple[float, str]] = msgspec.field(default_factory=list)

    @property
    def problem(self) -> bool:
        """At warning or above: a number read from this trace may be wrong."""
        return RANK[self.status] >= RANK["warning"]

    @property
    def found(self) -> str:
        """What it found, for a line or a row that shows its status beside: a check that does not apply gives its
        reason (its summary begins 'not applicable: ', which the status has said)."""
        return self.reason if self.status == "not_applicable" and self.reason else self.summary

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "count": self.count,
            "playbook": self.playbook,
            "summary": self.summary,
            "meaning": self.meaning,
            "reason": self.reason,
            **self.details,
            "examples": [
                {
                    "name": e.name,
                    "ts": e.ts,
                    "dur": e.dur,
                    "stream": e.stream,
                    "device": e.device,
                    "correlation": e.correlation,
                    "pid": e.pid,
                    "tid": e.tid,
                    "detail": e.detail,
                }
                for e in self.examples
            ],
        }


Scope = Literal["trace", "job"]
# How a fact sums a check's value over a job's traces: ``total`` adds them (as an int, or as a float for a float
# fact), ``any`` / ``none`` whether any is true, ``first`` the first trace's, ``max`` the largest, ``largest``
# the largest in size (either sign), ``keys`` a dict's keys over every trace (sorted), ``worst`` the last of the
# detail's declared words that any trace has (the first when none), ``most`` the key of a dict with the largest
# value (the lowest number on a tie).
How = Literal["total", "any", "none", "first", "max", "largest", "keys", "worst", "most"]


class Bounds(msgspec.Struct, frozen=True, eq=False):
    """JSON Schema bounds on a detail (``Annotated[int, "meaning", Bounds(minimum=0)]``), for the schema."""

    minimum: float | None = None
    maximum: float | None = None
    max_items: int | None = None
    max_properties: int | None = None


class CheckFact(msgspec.Struct, frozen=True, eq=False):
    """A trace.inspect fact read from one check: ``detail`` is a key of its details, or ``count`` / ``status``;
    ``how`` sums it over a job's traces; ``default`` is the fact when no trace has the check."""

    name: str
    type: Any  # the fact's type, as trace.inspect declares it to playbooks (int, float | None, list[str], ...)
    meaning: str
    detail: str = "count"
    how: How = "total"
    default: Any = None


class CheckFix(msgspec.Struct, frozen=True, eq=False):
    """A ``trace fix`` option that repairs what a check found, which a report offers with the trace's own path:
    ``{unit}s of TRACE {found} on PLACE {means} <PLACE row>{row} ...{rest}``. ``rows`` is the detail counting
    the places (rows) affected, the examples' ``place`` (their stream) naming them."""

    option: str  # the trace fix option, e.g. --split-overlaps
    output: str  # the copy is written beside the trace as STEM-{output}.json
    unit: str  # what the check counts, singular (plural by wizard.formatting.plural)
    found: tuple[str, str]  # what it does, for one and for several: "starts inside an earlier event"
    means: tuple[str, str]  # after the place: "and ends after it: ..."
    row: str  # the new row's name after the place's: "(overlapping kernels, lane 1)"
    rest: str  # after the row's name
    rows: str  # the detail counting the rows affected
    place: str = "stream"


class CheckSpec(msgspec.Struct, frozen=True, eq=False):
    """A health check declared once, as ``CHECK`` in its own module of wizard/trace/health/checks/ beside the
    function that runs it: what the runner, the docs (docs/health.md's table, docs/health.schema.json, both
    generated: ``python -m wizard.trace.health.generate``), trace.inspect's facts, the triage and the reports read.

    ``details`` is a TypedDict of the fields the check adds to its verdict (``Annotated[type, "meaning"]``;
    ``NotRequired`` where a verdict may leave one out); ``order`` its place in every list of checks (the terminal's,
    --json's, docs/health.md's; the numbers leave gaps, so a new check goes between two without renumbering);
    ``triage_rank`` how soon the triage continues into its playbook when several checks find problems (lowest
    first: missing data before timing before the kernel metrics, because every later number depends on the earlier
    ones); ``counts`` and ``status_rule`` its row of the docs' table (what ``count`` counts and its other fields;
    the status when ``count`` > 0); ``colour`` marks its problems in the pictures; ``fix`` is the ``trace fix`` a
    report offers for it; ``options`` the ``InspectOptions`` fields its function reads, each handed to it as the
    parameter of that name (an option no check declares reaches none; the registry holds the two to each other)."""

    id: str
    playbook: str | None
    title: str
    details: type
    order: int
    counts: str
    status_rule: str
    triage_rank: int | None = None
    scope: Scope = "trace"
    facts: tuple[CheckFact, ...] = ()
    colour: str | None = None
    fix: CheckFix | None = None
    options: tuple[str, ...] = ()

    def verdict(self, count: int, status: str, summary: str, meaning: str, **kw: Any) -> HealthCheck:
        """This check's verdict on a trace (or a job), naming its playbook."""
        return HealthCheck(self.id, status, count, self.playbook, summary, meaning, **kw)

    def not_applicable(self, reason: str, **details: Any) -> HealthCheck:
        """The verdict where the trace cannot show this check's problem, with the reason and its details."""
        return self.verdict(0, "not_applicable", f"not applicable: {reason}", "", reason=reason, details=details)


def rank_of(declared: int | None, path: str) -> int | None:
    """distributedInfo.rank, else a rank-like file name (wizard.ranks.rank_in_name: never a GPU's model number)."""
    if declared is not None:
        return rank_value(declared)
    return rank_in_name(os.path.basename(path))
