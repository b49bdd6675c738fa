"""The trace health check: every way a profiler trace is known to lie, counted from one read.

This module is the vocabulary (the checks, their statuses, the records a check gives) and the pass;
``health_checks`` gathers the counts over the reader's tables with numpy, imported only when a trace
has been read (so it adds nothing to the reader's peak memory). The counts follow docs/health.md
exactly (an independent computation in tests/health_oracle.py checks them on every public trace).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipLaunchCooperativeKernel",
    }
)
GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "hipGraphLaunch"})
CAPTURE_BEGIN = frozenset({"cudaStreamBeginCapture", "hipStreamBeginCapture"})
CAPTURE_END = frozenset({"cudaStreamEndCapture", "hipStreamEndCapture"})

STATUSES = ("ok", "not_applicable", "info", "warning", "error")  # mildest first
RANK = {status: n for n, status in enumerate(STATUSES)}
EXAMPLES = 5  # examples kept per check
WINDOW_CHUNK = 1 << 16  # events per slice when finding the window's end
SAMPLES = 2000  # events per check kept for the health timeline (spread evenly over all of them)
COLLECTIVE_NAMES = 64  # NCCL kernel names kept per trace for the cross-rank check
COLLECTIVE_INSTANCES = 10_000  # starts kept per name


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


_NUMBER = re.compile(r"\d+")


def rank_of(declared: int | None, path: str) -> int | None:
    """distributedInfo.rank, else the first number in the file name."""
    if declared is not None:
        return declared
    found = _NUMBER.search(os.path.basename(path))
    return int(found.group()) if found else None
