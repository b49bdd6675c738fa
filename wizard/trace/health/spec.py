"""The trace health check: every way a profiler trace is known to lie, counted from one read.

This module is the vocabulary: the checks, each declared once (``CHECKS``: what the runner, the generated docs,
trace.inspect's facts and the reports read), their statuses, the records a check gives. It imports no numpy;
``checks`` gathers the counts over the reader's tables with numpy, imported only when a trace has been read (so it
adds nothing to the reader's peak memory). The counts follow docs/health.md exactly (an independent computation
in tests/health_oracle.py checks them on every public trace).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from wizard.cluster import rank_in_name, rank_value

KINETO = "pytorch/kineto@114171dfba6867d2a898634670d9a3197dbb9595"  # the commit the sources below were read at
_RUNTIME = (
    f"{KINETO} libkineto/src/CuptiActivity.h:104 names a runtime call runtimeCbidName(cbid), which "
    "cupti_strings.cpp:106-123 takes from cuptiGetCallbackName less its _vNNNN suffix (CUPTI's "
    "CUPTI_RUNTIME_TRACE_CBID_<name>_vNNNN); Kineto records every runtime call"
)
_DRIVER = f"{KINETO} libkineto/src/CuptiCbidRegistry.cpp:165-178: the only driver calls Kineto records"
_ROCM = f"{KINETO} libkineto/src/RocprofLogger.cpp:210-227 isKernelApi: the HIP calls Kineto records as launches"


@dataclass(frozen=True, slots=True)
class LaunchApi:
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


@dataclass(frozen=True, slots=True)
class StatusWord:
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
COLLECTIVE_NAMES = 64  # NCCL kernel names kept per trace for the cross-rank check
COLLECTIVE_INSTANCES = 10_000  # starts kept per name
# The median start skew across ranks at which rank-skew is a warning (and the rank-skew playbook diagnoses
# waiting): below it, skew is NCCL launch jitter (dlrm-2ranks: 17 µs median between two ranks of one host).
# ``trace inspect --rank-skew-floor-us`` / ``inspect_traces(rank_skew_floor_us=...)`` set another.
RANK_SKEW_FLOOR_US = 100.0
# trace-size is worth a word (info) from these: the unpacked JSON a viewer must hold (Perfetto's UI and
# TensorBoard load the whole text in a browser tab), or a with_stack trace whose Python events dominate
SIZE_WORTH_A_WORD = 256 << 20
PYTHON_SHARE_WORTH_A_WORD = 0.4
SIZE_CATEGORIES = 20  # trace-size's categories: the largest, the rest counted
# Launch calls that can carry the programmatic-stream-serialization attribute (Programmatic Dependent Launch):
# the evidence that an overlap was asked for; a graph replay's kernels share one cudaGraphLaunch and are not it.
PDL_LAUNCH_CALLS = frozenset(
    {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz"}
)
# The longest overlap still read as PDL's: the dependent kernel starts while its predecessor's last blocks drain
# (on the B200 trace 0.13-3.7 µs); a predecessor whose recorded end runs tens of µs past its successor's start
# is a duration the GPU cannot have had, not a launch the program asked for (docs/health.md).
PDL_OVERLAP_US = 5.0
# A kernel that ends this little after the annotation or copy around it shares that event's microsecond: Perfetto's
# llround(us * 1000) of microsecond-epoch doubles (a step of 0.25 µs) puts equal decimal ends apart.
ROUNDING_US = 1.0
MARGIN = 0.10  # summary-table: a reported device time more than 10% above the GPU events counted once misleads
MIN_US = 1.0  # and by at least a microsecond (a rounding never fires)
OVERHEAD_SHARE = 0.10  # profiler overhead above 10% of the window (nsys-ai's doctor warns there, fails at 20%)
TABLE_ROWS = 20  # summary-table's rows kept in the report (by reported self device time)
STEPS_KEPT = 64  # ProfilerStep durations kept in profiler-overhead's details


@dataclass(frozen=True, slots=True)
class HealthExample:
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


@dataclass(slots=True)
class HealthCheck:
    """One check's verdict on one trace (or, for ``rank-skew``, on a job)."""

    check: str
    status: str
    count: int
    playbook: str | None
    summary: str
    meaning: str
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    examples: list[HealthExample] = field(default_factory=list)
    # where the problem lies in time, for a picture: (ts, lane) of at most SAMPLES events spread over all
    samples: list[tuple[float, str]] = field(default_factory=list)

    @property
    def problem(self) -> bool:
        """At warning or above: a number read from this trace may be wrong."""
        return RANK[self.status] >= RANK["warning"]

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


@dataclass(frozen=True, slots=True)
class Bounds:
    """JSON Schema bounds on a detail (``Annotated[int, "meaning", Bounds(minimum=0)]``), for the schema."""

    minimum: float | None = None
    maximum: float | None = None
    max_items: int | None = None
    max_properties: int | None = None


@dataclass(frozen=True, slots=True)
class CheckFact:
    """A trace.inspect fact read from one check: ``detail`` is a key of its details, or ``count`` / ``status``;
    ``how`` sums it over a job's traces; ``default`` is the fact when no trace has the check."""

    name: str
    type: Any  # the fact's type, as trace.inspect declares it to playbooks (int, float | None, list[str], ...)
    meaning: str
    detail: str = "count"
    how: How = "total"
    default: Any = None


@dataclass(frozen=True, slots=True)
class CheckFix:
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


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A health check declared once: what the runner, the docs (docs/health.md's table, docs/health.schema.json,
    both generated: ``python -m wizard.trace.health.generate``), trace.inspect's facts and the reports read.

    ``details`` is a TypedDict of the fields the check adds to its verdict (``Annotated[type, "meaning"]``;
    ``NotRequired`` where a verdict may leave one out); ``counts`` and ``status_rule`` are its row of the
    docs' table (what ``count`` counts and its other fields; the status when ``count`` > 0); ``colour`` marks
    its problems in the pictures; ``fix`` is the ``trace fix`` a report offers for it. The function that runs a
    per-trace check registers under its id (``wizard.trace.health.checks.runs``)."""

    id: str
    playbook: str | None
    title: str
    details: type
    counts: str
    status_rule: str
    scope: Scope = "trace"
    facts: tuple[CheckFact, ...] = ()
    colour: str | None = None
    fix: CheckFix | None = None


class ImpossibleMetricsDetails(TypedDict):
    wrong_launches: Annotated[int, "launches with a wrong blocks/warps per SM or occupancy"]
    mechanisms: Annotated[dict[str, int], "launches per wrong mechanism id"]


class KernelsMissingDetails(TypedDict):
    launches: Annotated[int, "kernel launch calls"]
    in_last_1pct: Annotated[int, "missing kernels' calls in the window's last 1%"]
    captured: Annotated[int, "launch calls made while capturing a graph"]
    no_correlation: Annotated[int, "launch calls without a correlation id"]
    profiler_ranges: Annotated[int, "missing kernels' calls whose id a cuda_profiler_range event carries"]
    apis: NotRequired[Annotated[dict[str, int], "launch calls per API name"]]


class KernelsOverlapDetails(TypedDict):
    kernels: Annotated[int, "kernel events"]
    lanes: Annotated[int, "rows holding a kernel that cannot nest"]
    pdl: Annotated[int, "of those kernels, Programmatic Dependent Launch's"]
    rounding: Annotated[int, "of those kernels, a rounding's"]
    graph: Annotated[int, "of those kernels, run by a graph launch"]
    max_overlap_us: Annotated[float, "the longest overlap, in µs"]
    other_events: Annotated[dict[str, int], "other events of kernel rows that cannot nest, by category"]


class GraphLaunchesDetails(TypedDict):
    kernels: Annotated[int, "kernels run by graph launches"]
    mode: Annotated[Literal["eager", "graph", "mixed"], "the trace's launches: eager, graph or both"]
    unrecorded: Annotated[int, "graph launches with no kernel while others have theirs"]


class UnlinkedKernelsDetails(TypedDict):
    kernels: Annotated[int, "kernel events"]
    before_first_call: Annotated[int, "unlinked kernels starting before the first call"]
    before_window: Annotated[int, "unlinked kernels whose id is below every call's"]


class DurationsDetails(TypedDict):
    zero: Annotated[int, "kernels of zero duration"]
    gpu_events: Annotated[int, "GPU events"]
    at_zero: NotRequired[Annotated[int, "a Cuspy trace's events pinned at ts 0"]]
    clamped_zero: NotRequired[Annotated[int, "a Cuspy trace's GPU events of zero duration"]]


class ClockSkewDetails(TypedDict):
    linked: Annotated[int, "kernels linked to a launch call"]
    min_us: Annotated[float | None, "the smallest kernel start minus call start, in µs"]
    median_us: Annotated[float | None, "the median kernel start minus call start, in µs"]
    drift_us: Annotated[float | None, "the last third's median offset minus the first third's, in µs"]
    trend: Annotated[Literal["constant", "growing", "shrinking"], "how the offset moves over the trace"]
    unmeasured: Annotated[int, "linked kernels whose offset is not a finite number"]


class TraceSizeDetails(TypedDict):
    categories: Annotated[dict[str, int], "events per category, the largest", Bounds(max_properties=SIZE_CATEGORIES)]
    bytes: Annotated[int, "the file's size on disk"]
    python_share: Annotated[float, "python_function events' share of the events", Bounds(minimum=0, maximum=1)]
    largest: Annotated[str | None, "the category with the most events"]
    other_categories: Annotated[int, "categories left out"]
    other_events: Annotated[int, "their events"]
    unpacked_bytes: Annotated[int, "the JSON's size"]
    compressed: Annotated[bool, "whether the file is compressed"]


class StacksMissingDetails(TypedDict):
    cpu_ops: Annotated[int, "CPU ops"]


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


class ProfilerOverheadDetails(TypedDict):
    overhead_us: Annotated[float, "the overhead records' summed durations, in µs"]
    window_us: Annotated[float, "the window, in µs"]
    share: Annotated[float, "their share of the window", Bounds(minimum=0)]
    threshold: Annotated[float, "the share above which the check warns"]
    kinds: Annotated[dict[str, float], "µs per overhead kind"]
    steps: Annotated[int, "ProfilerStep spans", Bounds(minimum=0)]
    step_us: Annotated[list[float], "their durations, in µs", Bounds(max_items=STEPS_KEPT)]
    median_step_us: Annotated[float | None, "their median, in µs"]
    drift: Annotated[float | None, "the last third's mean against the first third's"]


class RankSkewDetails(TypedDict):
    ranks: Annotated[list[int], "the ranks compared"]
    median_us: Annotated[float | None, "the median skew, in µs"]
    max_us: Annotated[float | None, "the largest skew, in µs"]
    last_by_rank: Annotated[dict[str, int], "collectives each rank started last"]
    floor_us: Annotated[float, "the median skew at which the check warns, in µs", Bounds(minimum=0)]
    unmeasured: Annotated[int, "instances whose skew is not a finite number"]


def _overlap_fix() -> CheckFix:
    return CheckFix(
        option="--split-overlaps",
        output="lanes",
        unit="kernel",
        found=("starts inside an earlier event", "start inside an earlier event"),
        means=(
            "and ends after it: Perfetto hides such a kernel before v57 and draws it apart, its launch arrow on "
            "another kernel, from v57. This writes a copy that shows them all, each arrow on its own kernel, on new "
            "rows",
            "and end after it: Perfetto hides such a kernel before v57 and draws it apart, its launch arrow on "
            "another kernel, from v57. This writes a copy that shows them all, each arrow on its own kernel, on new "
            "rows",
        ),
        row="(overlapping kernels, lane 1)",
        rest=", lane 2 and so on, the lowest free at each start:",
        rows="lanes",
    )


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec(
        "impossible-metrics",
        "negative-warps-per-sm",
        "impossible kernel metrics",
        ImpossibleMetricsDetails,
        counts=(
            "launches with a wrong blocks/warps per SM or occupancy (`wrong_launches`): the kernel checks' "
            "findings; `mechanisms` (launches per wrong mechanism)"
        ),
        status_rule=(
            "the worst severity the flagship playbook's conclusions give the mechanisms found "
            "(`Mechanism.verdict`, the table below): `info` for E alone"
        ),
    ),
    CheckSpec(
        "kernels-missing",
        "kernels-missing",
        "kernels missing",
        KernelsMissingDetails,
        counts=(
            "launch calls, not captured, whose correlation id matches no kernel event; `launches`, `in_last_1pct`"
            " (those starting in the window's last 1%, where the profiler's stop cuts), `profiler_ranges` (those "
            "whose id a range event carries: measured by the range profiler, not dropped), `captured`, "
            "`no_correlation`"
        ),
        status_rule=("`error`; `info` when each lies in the last 1% or has a range event"),
        facts=(
            CheckFact("missing_kernels", int, "launch calls whose kernel is not in the trace (kernels-missing)"),
            CheckFact("launch_calls", int, "kernel launch calls in the traces", "launches"),
            CheckFact(
                "missing_in_last_1pct",
                int,
                "of the missing ones, those in the last 1% of the trace (cut by the profiler's stop)",
                "in_last_1pct",
            ),
            CheckFact(
                "captured_launches",
                int,
                "launch calls made while capturing a CUDA graph (they run no kernel)",
                "captured",
            ),
            CheckFact("launches_without_id", int, "launch calls without a correlation id", "no_correlation"),
            CheckFact(
                "launch_apis",
                list[str],
                "the kernel launch APIs the trace records (cudaLaunchKernel, cuLaunchKernelEx, ...)",
                "apis",
                "keys",
            ),
            CheckFact(
                "range_profiler_launches",
                int,
                "launches measured by the CUPTI range profiler (a cuda_profiler_range event instead of a kernel)",
                "profiler_ranges",
            ),
        ),
        colour="#cf222e",
    ),
    CheckSpec(
        "kernels-overlap",
        "kernels-hidden",
        "kernels overlapping on a stream",
        KernelsOverlapDetails,
        counts=(
            "kernels Perfetto cannot nest on their row, by Perfetto's own rule (below): per row (`pid`, `tid` as "
            "Perfetto keys them: a number as an unsigned 32-bit one, out of range 0; a `tid` of 0 is the `pid` "
            "when that is not 0), every complete event of the row (kernels, `gpu_memcpy`/`gpu_memset`, "
            "`gpu_user_annotation`, `cuda_sync`, any other X event the trace puts there) in the order `ts`, the "
            "longer first, file order, with times as Perfetto's nanoseconds (`llround(us * 1000)`, a whole number"
            " of µs times 1000); an event that ends at or before the end of the innermost open event nests under "
            "it (equal ends and zero durations nest; an event starting where the open one ends closes it), one "
            "that starts inside it and ends after it cannot nest and is left off the row. `lanes` (rows with such"
            " a kernel), `kernels`, `pdl` (those launched by an eager `cuLaunchKernelEx`/`cudaLaunchKernelExC` "
            f"call with their correlation id that overlap a kernel by at most {PDL_OVERLAP_US:g} µs), `rounding` "
            f"(those that end at most {ROUNDING_US:g} µs after the annotation or copy they overlap), `graph` (those "
            "a graph launch ran), "
            "`max_overlap_us` (the open event's end minus the kernel's start, at most), `other_events` (the other"
            " events of kernel rows that cannot nest, by category: counted apart, not in `count`, status `ok` "
            "when no kernel is among them)"
        ),
        status_rule=(
            "`info` when each is `pdl` or `rounding`: only the viewer suffers; `warning` otherwise: a duration "
            "that overruns its successor, or an overlap nothing in the trace asked for"
        ),
        facts=(
            CheckFact(
                "overlapping_kernels",
                int,
                "kernels Perfetto cannot nest on their row: they start inside an earlier event and end after it",
            ),
            CheckFact(
                "pdl_overlapping_kernels",
                int,
                f"of those, launched with cuLaunchKernelEx/cudaLaunchKernelExC and overlapping a kernel by at most "
                f"{PDL_OVERLAP_US:g} µs",
                "pdl",
            ),
            CheckFact(
                "rounding_overlapping_kernels",
                int,
                f"of those, ending at most {ROUNDING_US:g} µs after the annotation or copy they overlap (a rounding)",
                "rounding",
            ),
            CheckFact(
                "graph_overlapping_kernels",
                int,
                "of those, run by a graph launch (one correlation id: not PDL)",
                "graph",
            ),
        ),
        colour="#bf8700",
        fix=_overlap_fix(),
    ),
    CheckSpec(
        "graph-launches",
        "cuda-graphs",
        "CUDA/HIP graph launches",
        GraphLaunchesDetails,
        counts=(
            "graph-launch calls; `kernels` (kernel events whose correlation id is a graph launch's), `mode` "
            "(`eager`, `graph`, `mixed`), `unrecorded` (graph-launch calls with an id that matches no kernel, "
            "counted only while another graph-launch call has a kernel: replays the profiler did not record)"
        ),
        status_rule=("`info` (what a graph trace can tell); `warning` when `unrecorded` > 0"),
        facts=(
            CheckFact("graph_launches", int, "cudaGraphLaunch / hipGraphLaunch calls"),
            CheckFact("graph_kernels", int, "kernels run by those graph launches", "kernels"),
            CheckFact("graph_mode", str, "eager, graph or mixed", "mode", "worst"),
            CheckFact(
                "graph_unrecorded",
                int,
                "graph launches with no kernel while other graph launches have theirs",
                "unrecorded",
            ),
        ),
    ),
    CheckSpec(
        "unlinked-kernels",
        "kernels-missing",
        "kernels with no launch",
        UnlinkedKernelsDetails,
        counts=(
            "kernel events whose correlation id (or none) matches no launch or graph-launch call; `kernels`, "
            "`before_window` (those whose id is below the smallest correlation id of any call in the file: "
            "launched before the profiling window), `before_first_call` (those whose `ts` is below the first "
            "call's: the time-based sign, which misses kernels launched before the window that ran after it "
            "opened). `not_applicable` without launch or graph-launch calls"
        ),
        status_rule=("`info` when every one is `before_window`; else `warning`"),
        facts=(
            CheckFact("unlinked_kernels", int, "kernels whose correlation id matches no launch call"),
            CheckFact(
                "unlinked_before_first_call",
                int,
                "of those, the ones that ran before the trace's first runtime call",
                "before_first_call",
            ),
            CheckFact(
                "unlinked_before_window",
                int,
                "of those, the ones launched before the profiling window (correlation id below every call's)",
                "before_window",
            ),
        ),
        colour="#8250df",
    ),
    CheckSpec(
        "durations",
        "impossible-timing",
        "negative or zero durations",
        DurationsDetails,
        counts=("GPU events with `dur < 0`; `zero` (kernels with `dur == 0`), `gpu_events`"),
        status_rule=("`error`"),
        facts=(
            CheckFact("negative_durations", int, "GPU events with a negative duration"),
            CheckFact("zero_durations", int, "kernels with a zero duration", "zero"),
        ),
        colour="#0550ae",
    ),
    CheckSpec(
        "clock-skew",
        "impossible-timing",
        "kernels before their launch",
        ClockSkewDetails,
        counts=(
            "kernels whose `ts` is below their call's (the earliest launch or graph-launch call with the same "
            "correlation id); `linked`, `min_us`, `median_us` (kernel minus call), `drift_us` (median of the last"
            " third minus the first third, kernel order), `trend` (`constant`, `growing`, `shrinking`: beyond 10 "
            "µs and a quarter of the median), `unmeasured` (linked kernels whose offset is not a finite number, "
            "times near 1e308: no measurement, left out of the rest)"
        ),
        status_rule=("`warning`"),
        facts=(
            CheckFact("kernels_before_launch", int, "kernels that start before their own launch call (clock-skew)"),
            CheckFact(
                "launch_offset_min_us",
                float | None,
                "smallest kernel start minus launch call start, in µs",
                "min_us",
                "first",
            ),
            CheckFact(
                "launch_offset_median_us",
                float | None,
                "median kernel start minus launch call start, in µs",
                "median_us",
                "first",
            ),
            CheckFact(
                "launch_offset_trend", str | None, "constant, growing or shrinking over the trace", "trend", "first"
            ),
        ),
        colour="#1a7f37",
    ),
    CheckSpec(
        "trace-size",
        None,
        "trace size",
        TraceSizeDetails,
        counts=(
            f"events with a `cat`; `categories` (the {SIZE_CATEGORIES} largest, most events first, then by name), "
            "`other_categories` and `other_events` (the categories left out, and their events), `bytes` (the file"
            " on disk: compressed for a `.gz`), `unpacked_bytes` (the JSON itself), `compressed`, `python_share`,"
            " `largest`"
        ),
        status_rule=(
            f"`ok`; `info` when the unpacked JSON is {SIZE_WORTH_A_WORD >> 20} MiB or more (a viewer holds the whole"
            " text: Perfetto's UI and TensorBoard may not open it) or `python_share` is "
            f"{PYTHON_SHARE_WORTH_A_WORD:g} or more (a `with_stack` trace)"
        ),
        facts=(CheckFact("trace_events", int, "events with a category in the traces"),),
    ),
    CheckSpec(
        "stacks-missing",
        None,
        "Python stacks not recorded",
        StacksMissingDetails,
        counts=("CPU ops (`cpu_op`, `Operator`) of a trace with no `python_function` event; `cpu_ops`"),
        status_rule=("`info`"),
        facts=(
            CheckFact(
                "python_stacks", bool, "whether Python stacks were recorded (python_function events)", how="none"
            ),
        ),
    ),
    CheckSpec(
        "summary-table",
        "summary-table",
        "key_averages() device times",
        SummaryTableDetails,
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
            "only the total exceeds GPU busy"
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
            CheckFact(
                "summary_busy_us", float, "the wall-clock union of the GPU events (GPU busy time), in µs", "busy_us"
            ),
            CheckFact(
                "summary_annotation_us",
                float,
                "gpu_user_annotation time shown as Self CUDA rows, in µs",
                "annotation_us",
            ),
        ),
    ),
    CheckSpec(
        "profiler-overhead",
        "summary-table",
        "profiler overhead in the window",
        ProfilerOverheadDetails,
        counts=(
            f"overhead records; `overhead_us` (their summed durations), `window_us`, `share`, `threshold` "
            f"({OVERHEAD_SHARE:g}), "
            "`kinds`, and the ProfilerStep spans: `steps`, `step_us`, `median_step_us`, `drift` (the last third's"
            " mean against the first third's, None under 3 steps)"
        ),
        status_rule=f"`warning` above {OVERHEAD_SHARE:.0%} of the window (nsys-ai's doctor warns there), else `info`",
        facts=(
            CheckFact("overhead_records", int, "CUPTI profiler-overhead records in the traces"),
            CheckFact(
                "overhead_share",
                float | None,
                "the largest share of a trace's window spent in them (0.1 = 10%)",
                "share",
                "max",
            ),
            CheckFact(
                "step_drift",
                float | None,
                "the ProfilerStep spans' drift: the last third's mean against the first third's (0.1 = +10%)",
                "drift",
                "largest",
            ),
        ),
    ),
    CheckSpec(
        "rank-skew",
        "rank-skew",
        "collective start skew across ranks",
        RankSkewDetails,
        counts=(
            "for a rank directory: the i-th kernel of each NCCL name on every rank, only instances present on "
            "every rank; skew = latest start minus earliest. `ranks`, `median_us`, `max_us`, `last_by_rank` "
            "(lowest rank on a tie), `floor_us`, `unmeasured` (instances whose skew is not a finite number: no "
            "measurement, left out of the rest). The rank is `distributedInfo.rank`, else the first number in the"
            " file name"
        ),
        status_rule=(
            "`warning` when `median_us` reaches the floor (NCCL time on the early ranks includes waiting); `info`"
            " below it (launch jitter)"
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
            CheckFact(
                "rank_skew_median_us", float | None, "median start skew across ranks, in µs", "median_us", "first"
            ),
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
    ),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
SPEC = {c.id: c for c in CHECKS}
CHECK_FACTS: tuple[CheckFact, ...] = tuple(f for c in CHECKS for f in c.facts)
# Where a triage continues when several checks find problems: missing data first, because every other number
# depends on it; the kernel metrics last. Each check's playbook is one of them (tests/test_check_declarations.py).
TRIAGE_ORDER = (
    "kernels-missing",
    "impossible-timing",
    "cuda-graphs",
    "kernels-hidden",
    "rank-skew",
    "summary-table",
    "negative-warps-per-sm",
)


def check_facts(trace_checks: Sequence[HealthCheck], job_checks: Sequence[HealthCheck]) -> dict[str, Any]:
    """Every check's declared facts, each summed over the traces as it says (a job's check over the job)."""
    return {
        fact.name: _sum_fact(
            fact, [c for c in (job_checks if spec.scope == "job" else trace_checks) if c.check == spec.id]
        )
        for spec in CHECKS
        for fact in spec.facts
    }


def _value(check: HealthCheck, fact: CheckFact) -> Any:
    if fact.detail == "count":
        return check.count
    if fact.detail == "status":
        return check.status
    return check.details.get(fact.detail, fact.default) if fact.how == "first" else check.details.get(fact.detail)


def _sum_fact(fact: CheckFact, checks: list[HealthCheck]) -> Any:
    values = [_value(c, fact) for c in checks]
    if fact.how == "total":
        return sum(float(v or 0) for v in values) if fact.type is float else sum(int(v or 0) for v in values)
    if fact.how == "any":
        return any(values)
    if fact.how == "none":
        return not any(values)
    if fact.how == "first":
        return values[0] if values else fact.default
    if fact.how == "max":
        return max((float(v) for v in values if v is not None), default=fact.default)
    if fact.how == "largest":
        return max((v for v in values if v is not None), key=abs, default=fact.default)
    if fact.how == "keys":
        return sorted({name for v in values for name in (v or {})})
    if fact.how == "worst":
        words = _words(SPEC[_owner(fact)].details, fact.detail)
        return next((w for w in reversed(words) if w in values), words[0])
    counts = (values[0] or {}) if values else {}  # most
    return int(max(counts, key=lambda r: (counts[r], -int(r)))) if counts else fact.default


def _owner(fact: CheckFact) -> str:
    return next(c.id for c in CHECKS if fact in c.facts)


def _words(details: type, field: str) -> tuple[str, ...]:
    """A detail's declared words (its Literal's), mildest first."""
    hint = typing.get_type_hints(details, include_extras=True)[field]
    return tuple(typing.get_args(typing.get_args(hint)[0]))


def check_selection(only: Iterable[str] | None, skip: Iterable[str] | None) -> frozenset[str]:
    """The checks to run: ``only`` (all when None) less ``skip``; an unknown id is a ValueError naming
    the valid ones (the CLI and the API turn it into their usage error)."""
    chosen = set(CHECK_IDS if only is None else only)
    skipped = set(skip or ())
    unknown = sorted((chosen | skipped) - set(CHECK_IDS))
    if unknown:
        raise ValueError(f"unknown health check {', '.join(unknown)}; the checks are {', '.join(CHECK_IDS)}")
    return frozenset(chosen - skipped)


def make_check(spec_id: str, count: int, status: str, summary: str, meaning: str, **kw: Any) -> HealthCheck:
    return HealthCheck(spec_id, status, count, SPEC[spec_id].playbook, summary, meaning, **kw)


def not_applicable(spec_id: str, reason: str, **details: Any) -> HealthCheck:
    return make_check(spec_id, 0, "not_applicable", f"not applicable: {reason}", "", reason=reason, details=details)


def rank_of(declared: int | None, path: str) -> int | None:
    """distributedInfo.rank, else the first number in the file name (wizard.cluster: ASCII digits, a range)."""
    if declared is not None:
        return rank_value(declared)
    return rank_in_name(os.path.basename(path))
