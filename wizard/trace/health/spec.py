"""The trace health check: every way a profiler trace is known to lie, counted from one read.

This module is the vocabulary (the checks, their statuses, the records a check gives) and the pass;
``health_checks`` gathers the counts over the reader's tables with numpy, imported only when a trace
has been read (so it adds nothing to the reader's peak memory). The counts follow docs/health.md
exactly (an independent computation in tests/health_oracle.py checks them on every public trace).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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

STATUSES = ("ok", "not_applicable", "info", "warning", "error")  # mildest first
RANK = {status: n for n, status in enumerate(STATUSES)}
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


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A check as registered: its id, where a diagnosis continues, and whether it reads one trace or a job."""

    id: str
    playbook: str | None
    title: str
    scope: str = "trace"  # trace | job


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("impossible-metrics", "negative-warps-per-sm", "impossible kernel metrics"),
    CheckSpec("kernels-missing", "kernels-missing", "kernels missing"),
    CheckSpec("kernels-overlap", "kernels-hidden", "kernels overlapping on a stream"),
    CheckSpec("graph-launches", "cuda-graphs", "CUDA/HIP graph launches"),
    CheckSpec("unlinked-kernels", "kernels-missing", "kernels with no launch"),
    CheckSpec("durations", "impossible-timing", "negative or zero durations"),
    CheckSpec("clock-skew", "impossible-timing", "kernels before their launch"),
    CheckSpec("trace-size", None, "trace size"),
    CheckSpec("stacks-missing", None, "Python stacks not recorded"),
    CheckSpec("summary-table", "summary-table", "key_averages() device times"),
    CheckSpec("profiler-overhead", "summary-table", "profiler overhead in the window"),
    CheckSpec("rank-skew", "rank-skew", "collective start skew across ranks", scope="job"),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
# Where a triage continues when several checks find problems: missing data first, because every other number
# depends on it; the kernel metrics last.
# How a status is marked where it is written for a person (the terminal, a triage's lines).
HEALTH_MARK = {"error": "✗", "warning": "!", "info": "i", "not_applicable": "-", "ok": "✓"}

TRIAGE_ORDER = (
    "kernels-missing",
    "impossible-timing",
    "cuda-graphs",
    "kernels-hidden",
    "rank-skew",
    "summary-table",
    "negative-warps-per-sm",
)
SPEC = {c.id: c for c in CHECKS}


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
