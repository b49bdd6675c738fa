"""``profiler.overhead``: how much longer the workload takes under torch.profiler than without it.

The workload runs in one fresh process (the harness's ``overhead`` mode): an untimed warm-up run plain and one
profiled (Kineto's one-time start), then ``runs`` plain and ``runs`` profiled runs interleaved, each timed with
the device synchronised. The inflation is the profiled median over the plain median, less one; its thresholds
are nsys-ai's doctor's (warn above 10%, fail above 20%). A profiled step slower than the real one makes every
time in the trace too long.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import WORKLOAD, FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.common import harness_failure, no_workload, run_harness, workload_argv

WARN = 0.10  # inflation above which the trace's times are too long to read as the real step's
FAIL = 0.20
MAX_RUNS = 50


class ProfilerOverheadFacts(TypedDict, total=False):
    """What profiler.overhead measures, declared once (help, ``probes``, the schema and the loader read it)."""

    runs: Annotated[int, "timed runs of each kind (plain, profiled)"]
    plain_s: Annotated[list[float], "each plain run's wall time, in seconds"]
    profiled_s: Annotated[list[float], "each profiled run's wall time, in seconds"]
    plain_median_s: Annotated[float | None, "median plain run, in seconds"]
    profiled_median_s: Annotated[float | None, "median profiled run, in seconds"]
    inflation: Annotated[float | None, "profiled median / plain median - 1 (0.1 = 10% slower under the profiler)"]
    cpu_inflation: Annotated[
        float | None,
        "the same over the process's CPU time (time.process_time): less sensitive to other programs on the machine",
    ]
    best_inflation: Annotated[
        float | None, "fastest profiled run / fastest plain run - 1: the same, less the noise of a loaded machine"
    ]
    cuda_available: Annotated[bool, "whether the workload saw a CUDA device (profiled with CUDA activity)"]
    exit_code: Annotated[int | None, "the workload's exit code"]


def overhead_verdict(plain: list[float], profiled: list[float]) -> tuple[Status, str, float | None]:
    """(status, summary, inflation) from the two sets of timings: warn above WARN, fail above FAIL."""
    if not plain or not profiled:
        return Status.SKIP, "no timed run finished", None
    base, under = statistics.median(plain), statistics.median(profiled)
    if base <= 0:
        return Status.SKIP, f"the plain run took {base:.3f} s: too short to time", None
    inflation = under / base - 1
    words = f"under torch.profiler the workload took {under:.3f} s against {base:.3f} s ({inflation:+.1%})"
    if inflation > FAIL:
        return Status.FAIL, f"{words}: above {FAIL:.0%}, the trace's times are inflated", inflation
    if inflation > WARN:
        return Status.WARN, f"{words}: above {WARN:.0%}, read the trace's times as upper bounds", inflation
    return Status.PASS, f"{words}: within {WARN:.0%}", inflation


def _seconds(value: Any) -> bool:
    """A wall or CPU time as the harness writes it: a finite, non-negative number of seconds (nan, inf, a string
    or a 400-digit integer are not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value < 1e15  # nan compares false; a bigint stays an int, never a float that overflows


def result_problem(result: Mapping[str, Any]) -> str | None:
    """What is wrong with the harness's result line, or None: the workload shares the harness's output, so it can
    print a line of its own after the harness's (a string, a bigint or 5,000 digits as the exit code; nan times)."""
    for key in ("plain_s", "profiled_s", "plain_cpu_s", "profiled_cpu_s"):
        times = result.get(key)
        if times is None:
            continue
        if not isinstance(times, list) or len(times) > MAX_RUNS or not all(_seconds(t) for t in times):
            return f"{key} is not a list of at most {MAX_RUNS} times in seconds"
    code = result.get("exit_code")
    if code is not None and (type(code) is not int or not -(1 << 31) <= code < 1 << 31):
        return "exit_code is not an exit code"
    return None


def _ratio(profiled: Any, plain: Any) -> float | None:
    """Median over median, less one, of two lists of seconds (None where either is empty or zero)."""
    if not isinstance(profiled, list) or not isinstance(plain, list) or not profiled or not plain:
        return None
    base = statistics.median(float(x) for x in plain)
    return statistics.median(float(x) for x in profiled) / base - 1 if base > 0 else None


class ProfilerOverheadProbe:
    name = "profiler.overhead"
    summary = "Time the workload with and without torch.profiler; report how much the profiler inflates it"
    runs_programs = "the workload, 2 + 2 x runs times in one process (plain and under torch.profiler)"
    params: tuple[ParamSpec, ...] = (
        WORKLOAD,
        ParamSpec("runs", "int", f"timed runs of each kind (1 to {MAX_RUNS})", default=5),
    )
    facts: tuple[FactSpec, ...] = declared_facts(ProfilerOverheadFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        argv = workload_argv(env, dict(params))
        if argv is None:
            return no_workload(self.name)
        runs = params.get("runs", 5)
        if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= MAX_RUNS:
            why = f"runs must be a whole number from 1 to {MAX_RUNS}, not {runs!r}"
            return ProbeResult(Status.ERROR, f"{self.name}: {why}", facts={"reason": why})
        run = run_harness(env, "overhead", [str(runs), "--", *argv], timeout=timeout, log_name="profiler-overhead")
        failed = harness_failure(self.name, run)
        if failed is not None:
            return failed
        assert run.result is not None
        problem = result_problem(run.result)
        if problem is not None:
            why = (
                f"the result line is not one the harness writes ({problem}; the workload can print such a line itself)"
            )
            return ProbeResult(
                Status.ERROR, f"{self.name}: {why}", facts={"reason": why}, files=[run.command.log_path or ""]
            )
        plain = [float(x) for x in run.result.get("plain_s") or []]
        profiled = [float(x) for x in run.result.get("profiled_s") or []]
        status, summary, inflation = overhead_verdict(plain, profiled)
        if not run.result.get("ok"):
            status, summary = (
                Status.ERROR,
                f"the workload failed (exit {run.result.get('exit_code')}): "
                + str(run.result.get("failure") or "see the log"),
            )
        facts = {
            "runs": runs,
            "plain_s": plain,
            "profiled_s": profiled,
            "plain_median_s": statistics.median(plain) if plain else None,
            "profiled_median_s": statistics.median(profiled) if profiled else None,
            "inflation": inflation,
            "best_inflation": min(profiled) / min(plain) - 1 if plain and profiled and min(plain) > 0 else None,
            "cpu_inflation": _ratio(run.result.get("profiled_cpu_s"), run.result.get("plain_cpu_s")),
            "cuda_available": bool(run.result.get("cuda_available")),
            "exit_code": run.result.get("exit_code"),
        }
        evidence = [
            "plain runs (s): " + ", ".join(f"{x:.4f}" for x in plain),
            "profiled runs (s): " + ", ".join(f"{x:.4f}" for x in profiled),
        ]
        return ProbeResult(
            status, f"{self.name}: {summary}", facts=facts, evidence=evidence, files=[run.command.log_path or ""]
        )
