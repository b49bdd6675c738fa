"""``profiler.kineto_log``: profile the workload once more, one session in a fresh process, with Kineto's
log raised, and read what the profiler says about itself.

The only visible sign of kernel records dropped out of the capture window is Kineto's ``Record counts:
Out-of-range = N`` INFO line (pytorch/pytorch#192021, pytorch/kineto#996); CUPTI's failures show as
``CUPTI_ERROR_*`` codes or PyTorch's "CUPTI tracing is not available" warning (pytorch/pytorch#65393,
#118982). The parser is a pure function over the log's text; the probe runs the harness through the
System's runner with ``KINETO_LOG_LEVEL`` set, then counts kernels against launches in the fresh trace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.formatting import plural
from wizard.probes.base import WORKLOAD, FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.common import profile_once
from wizard.untrusted import cut

_COUNTS = re.compile(r"Record counts:\s*(.*)$")
# Counts are ASCII digits (``\d`` would take Arabic-Indic or fullwidth ones); a sign or more than
# COUNT_DIGITS digits is not a count a profiler printed, and the pair is ignored (a log is untrusted text).
_PAIR = re.compile(r"([A-Za-z][A-Za-z0-9 ?_-]*?)\s*=\s*(-?[0-9]+)")
_CUPTI_ERROR = re.compile(r"\bCUPTI_ERROR_[A-Z_]+\b")
_UNAVAILABLE = re.compile(r"CUPTI tracing is not available|CUDA profiler activities will be missing", re.IGNORECASE)
_DROPPED = re.compile(
    r"(?:dropped\s+(-?[0-9]+)|(-?[0-9]+)\s+(?:activity\s+)?records?\s+(?:were\s+)?dropped)", re.IGNORECASE
)
_BUFFER = re.compile(r"Requested GPU activity buffer|activity buffer.*(?:limit|exceed|full)|maxGpuBufferCount", re.I)
_PROCESSED = re.compile(r"Processed\s+(-?[0-9]+)\s+GPU records")
MAX_LINES = 200_000  # of the log read; the runner already bounds its size
COUNT_DIGITS = 15  # a count past 10^15 records is no profiler's (a 5,000-digit int() took seconds, then exit 70)
MAX_COUNT_NAMES = 32  # distinct names in "Record counts" kept


def count(text: str) -> int | None:
    """A record count as the log wrote it, or None: negative, or longer than COUNT_DIGITS digits."""
    if text.startswith("-") or len(text) > COUNT_DIGITS:
        return None
    return int(text)


@dataclass(slots=True)
class KinetoLog:
    """What Kineto and CUPTI said in one profiled run."""

    record_counts: dict[str, int] = field(default_factory=dict)
    cupti_errors: list[str] = field(default_factory=list)
    nvgpuctrperm: bool = False
    cupti_unavailable: bool = False
    dropped_records: int = 0
    buffer_lines: list[str] = field(default_factory=list)
    gpu_records: int | None = None
    lines: list[str] = field(default_factory=list)  # the lines that said any of it, for evidence

    @property
    def out_of_range(self) -> int:
        return self.record_counts.get("Out-of-range", 0)


def parse_kineto_log(text: str) -> KinetoLog:
    """Kineto's record counts, CUPTI's error codes, the fallback warning and dropped-record lines."""
    found = KinetoLog()
    errors: list[str] = []
    for line in text.splitlines()[:MAX_LINES]:
        said = False
        counts = _COUNTS.search(line)
        if counts:
            for key, written in _PAIR.findall(counts.group(1)):
                name, value = key.strip(), count(written)
                known = name in found.record_counts or len(found.record_counts) < MAX_COUNT_NAMES
                if value is not None and known:
                    found.record_counts[name] = found.record_counts.get(name, 0) + value
            said = True
        for code in _CUPTI_ERROR.findall(line):
            if code not in errors:
                errors.append(code)
            said = True
        if "ERR_NVGPUCTRPERM" in line:
            found.nvgpuctrperm = said = True
        if _UNAVAILABLE.search(line):
            found.cupti_unavailable = said = True
        dropped = _DROPPED.search(line)
        if dropped and ("record" in line.lower() or "cupti" in line.lower()):
            found.dropped_records += count(dropped.group(1) or dropped.group(2)) or 0
            said = True
        if _BUFFER.search(line):
            found.buffer_lines.append(cut(line.strip(), 300))
            said = True
        processed = _PROCESSED.search(line)
        processed_count = count(processed.group(1)) if processed else None
        if processed_count is not None:
            found.gpu_records = (found.gpu_records or 0) + processed_count
            said = True
        if said and len(found.lines) < 12:
            found.lines.append(cut(line.strip(), 300))
    found.cupti_errors = errors
    return found


class KinetoLogFacts(TypedDict, total=False):
    """The facts KinetoLogProbe declares once (help, ``probes``, the schema and the loader read them)."""

    trace: Annotated[str | None, "the fresh trace"]
    cuda_available: Annotated[bool | None, "whether the workload saw a CUDA device"]
    record_counts: Annotated[dict[str, int], "Kineto's 'Record counts' line: name -> count (Out-of-range, ...)"]
    out_of_range: Annotated[int | None, "records Kineto dropped as outside the capture window"]
    cupti_errors: Annotated[list[str], "CUPTI_ERROR_* codes in the log"]
    cupti_privileges: Annotated[bool | None, "ERR_NVGPUCTRPERM or CUPTI_ERROR_INSUFFICIENT_PRIVILEGES was logged"]
    cupti_not_initialized: Annotated[bool | None, "CUPTI_ERROR_NOT_INITIALIZED was logged"]
    cupti_unavailable: Annotated[bool | None, "'CUPTI tracing is not available' (the profiler fell back)"]
    dropped_records: Annotated[int | None, "records CUPTI reported dropped"]
    buffer_warnings: Annotated[list[str], "activity-buffer lines of the log"]
    gpu_records: Annotated[int | None, "GPU records Kineto processed ('Processed N GPU records')"]
    log_lines: Annotated[list[str], "the log lines behind these facts"]
    kernels: Annotated[int | None, "kernels in the fresh trace"]
    launch_calls: Annotated[int | None, "launch calls in the fresh trace"]
    missing_kernels: Annotated[int | None, "launch calls of the fresh trace without their kernel"]


def log_facts(log: KinetoLog) -> KinetoLogFacts:
    return {
        "record_counts": dict(log.record_counts),
        "out_of_range": log.out_of_range,
        "cupti_errors": list(log.cupti_errors),
        "cupti_privileges": log.nvgpuctrperm or "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in log.cupti_errors,
        "cupti_not_initialized": "CUPTI_ERROR_NOT_INITIALIZED" in log.cupti_errors,
        "cupti_unavailable": log.cupti_unavailable,
        "dropped_records": log.dropped_records,
        "buffer_warnings": list(log.buffer_lines),
        "gpu_records": log.gpu_records,
        "log_lines": list(log.lines),
    }


def judge(log: KinetoLog, cuda: bool, kernels: int, missing: int) -> tuple[Status, str]:
    """The log's verdict first (it names the cause), then the fresh trace's counts."""
    if log.nvgpuctrperm or "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in log.cupti_errors:
        return Status.FAIL, "CUPTI refused for lack of privileges (ERR_NVGPUCTRPERM)"
    if log.cupti_errors:
        return Status.FAIL, f"CUPTI failed: {', '.join(log.cupti_errors)}"
    if log.cupti_unavailable:
        return Status.FAIL, "CUPTI tracing is not available: the profiler fell back and records no kernels"
    if log.out_of_range:
        return Status.FAIL, f"Kineto dropped {plural(log.out_of_range, 'record')} as out of the capture window"
    if log.dropped_records:
        return Status.FAIL, f"CUPTI dropped {plural(log.dropped_records, 'record')} (activity buffer limits)"
    if log.buffer_lines:
        return (
            Status.FAIL,
            f"CUPTI ran short of activity buffers ({plural(len(log.buffer_lines), 'warning')} in the log)",
        )
    if not cuda:
        return (
            Status.SKIP,
            "no CUDA device here: the log shows no CUPTI problem, and no kernel ran to compare with launches",
        )
    if not kernels:
        return Status.FAIL, "the fresh single-session trace holds no kernel at all, though CUDA was available"
    if missing:
        return Status.FAIL, f"the fresh single-session trace still misses {plural(missing, 'kernel')} of its launches"
    return Status.PASS, f"one session in a fresh process records every kernel ({kernels}): the loss is not reproduced"


class KinetoLogProbe:
    name = "profiler.kineto_log"
    summary = "Re-profile once in a fresh process with KINETO_LOG_LEVEL raised; read Record counts and CUPTI errors"
    runs_programs = "the workload under torch.profiler (one session) with Kineto's verbose log"
    params: tuple[ParamSpec, ...] = (
        WORKLOAD,
        ParamSpec(
            "log_level", "int", "KINETO_LOG_LEVEL (0 = VERBOSE/INFO, the level that prints Record counts)", default=0
        ),
    )
    facts: tuple[FactSpec, ...] = declared_facts(KinetoLogFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        level = 0 if params.get("log_level") is None else int(params["log_level"])
        profiled = profile_once(
            env,
            self.name,
            dict(params),
            folder="kineto-log",
            trace_name="single-session.json",
            timeout=timeout,
            extra_env={"KINETO_LOG_LEVEL": str(level)},
        )
        if isinstance(profiled, ProbeResult):
            return profiled
        run, trace, cuda = profiled.run, profiled.trace, profiled.cuda
        log = parse_kineto_log(run.command.output)
        facts: KinetoLogFacts = {"cuda_available": cuda, **log_facts(log), "trace": None}
        kernels = launches = missing = 0
        if trace.exists():
            from wizard.probes.inspections import inspection
            from wizard.probes.trace_inspect import inspection_facts

            fresh = inspection_facts(inspection(env, [str(trace)]))
            kernels, launches, missing = fresh["kernels"], fresh["launch_calls"], fresh["missing_kernels"]
            facts["trace"] = str(trace)
        facts.update({"kernels": kernels, "launch_calls": launches, "missing_kernels": missing})
        status, summary = judge(log, cuda, kernels, missing)
        counts = ", ".join(f"{k} = {v}" for k, v in log.record_counts.items()) or "none logged"
        evidence = [
            f"one profiling session in a fresh process, KINETO_LOG_LEVEL={level}",
            f"Kineto's record counts: {counts}",
            f"CUPTI errors: {', '.join(log.cupti_errors) or 'none'}"
            + ("; CUPTI tracing is not available (fallback)" if log.cupti_unavailable else ""),
            f"fresh trace: {plural(kernels, 'kernel')}, {plural(launches, 'launch call')}, "
            f"{missing} without their kernel"
            if facts["trace"]
            else "no fresh trace was written",
            *log.lines[:6],
        ]
        files = [p for p in (facts["trace"], run.command.log_path) if p]
        reason = {"reason": "no CUDA device: no kernels to count against launches"} if status is Status.SKIP else {}
        return ProbeResult(status, summary, facts={**facts, **reason}, evidence=evidence, files=files)
