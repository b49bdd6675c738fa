"""``cuda.launch_blocking``: re-run with CUDA_LAUNCH_BLOCKING=1 so a failing kernel is
reported at its own launch, then name the error and the Python frame that launched it;
compute-sanitizer's memcheck runs too when installed and allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import WORKLOAD, FactSpec, ParamSpec, ProbeResult, declared_facts, ensure_dir
from wizard.probes.common import HARNESS, HarnessRun, harness_failure, no_workload, run_harness, workload_argv
from wizard.probes.cuda_errors import CudaFailure, find_cuda_failure, parse_sanitizer, sanitizer_summary
from wizard.probes.verdicts import launch_blocking_verdict


class LaunchBlockingFacts(TypedDict, total=False):
    """The facts LaunchBlockingProbe declares once (help, ``probes``, the schema and the loader read them)."""

    cuda_available: Annotated[bool, "whether the workload saw a CUDA device"]
    cuda_error: Annotated[str | None, "the CUDA error message, or None"]
    error_name: Annotated[str | None, "cudaErrorXxx when printed"]
    exception: Annotated[str | None, "the Python exception type"]
    python_frame: Annotated[str | None, "file:line in function that launched the failing kernel"]
    device_assert: Annotated[str | None, "a device-side assertion line, when one fired"]
    exit_code: Annotated[int, "the workload's exit code"]
    dsa: Annotated[str, "device-side assertions: enabled | unavailable in this build"]
    sanitizer_errors: Annotated[int | None, "compute-sanitizer memcheck error count (None: not run)"]
    sanitizer_first: Annotated[str | None, "its first error record (an invalid access or an assert)"]
    sanitizer_location: Annotated[str | None, "kernel+offset [file:line] of that access"]
    sanitizer_python_frame: Annotated[str | None, "the Python frame compute-sanitizer saved for that record"]
    sanitizer_summary: Annotated[str, "what compute-sanitizer found, in words (or why it did not run)"]


class LaunchBlockingProbe:
    name = "cuda.launch_blocking"
    summary = "Re-run with CUDA_LAUNCH_BLOCKING=1 (and device-side assertions); find the first CUDA error"
    runs_programs = "the workload with CUDA_LAUNCH_BLOCKING=1 (and compute-sanitizer with --allow-sanitizer)"
    params: tuple[ParamSpec, ...] = (
        WORKLOAD,
        ParamSpec("sanitizer", "bool", "also run compute-sanitizer memcheck (needs --allow-sanitizer)", default=True),
    )
    facts: tuple[FactSpec, ...] = declared_facts(LaunchBlockingFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        argv = workload_argv(env, dict(params))
        if argv is None:
            return no_workload(self.name)
        out_dir = ensure_dir(env.settings.report_dir / "launch-blocking")
        extra = {"CUDA_LAUNCH_BLOCKING": "1", "TORCH_USE_CUDA_DSA": "1", "PYTORCH_USE_CUDA_DSA": "1"}
        run = run_harness(env, "run", ["--", *argv], timeout=timeout, log_name="launch-blocking", extra_env=extra)
        if run.command.timed_out:
            failed = harness_failure(self.name, run)
            assert failed is not None
            return failed
        cuda = _cuda_available(env, run, timeout)
        failure = find_cuda_failure(run.command.output)
        exit_code = run.result.get("exit_code") if run.result else run.command.returncode
        facts = _facts(cuda, exit_code, failure)
        files = [run.command.log_path or ""]
        evidence = _failure_evidence(failure)
        if cuda and params.get("sanitizer", True):
            more_facts, more_files, more_evidence = _memcheck(env, argv, out_dir, timeout)
            facts.update(more_facts)
            files += more_files
            evidence += more_evidence
        status, summary = launch_blocking_verdict(
            facts["cuda_error"], facts["sanitizer_errors"], facts["sanitizer_first"], cuda, exit_code
        )
        return ProbeResult(status, summary, facts=facts, evidence=evidence, files=files)


def _cuda_available(env: Environment, run: HarnessRun, timeout: float) -> bool:
    if run.result is not None:
        return bool(run.result.get("cuda_available"))
    # The workload took the harness down with it: ask separately.
    preflight = run_harness(env, "env", [], timeout=min(timeout, 120), log_name="launch-blocking-env")
    return bool(preflight.result and preflight.result.get("cuda_available"))


def _facts(cuda: bool, exit_code: Any, failure: CudaFailure | None) -> dict[str, Any]:
    return {
        "cuda_available": cuda,
        "cuda_error": failure.message if failure else None,
        "error_name": failure.error_name if failure else None,
        "exception": failure.exception if failure else None,
        "python_frame": failure.python_frame if failure else None,
        "device_assert": failure.device_assert if failure else None,
        "exit_code": exit_code,
        "dsa": "unavailable in this build"
        if (failure and failure.dsa_unavailable)
        else "enabled if the build supports it",
        "sanitizer_errors": None,
        "sanitizer_first": None,
        "sanitizer_location": None,
        "sanitizer_python_frame": None,
        "sanitizer_summary": "not run" + ("" if cuda else " (no CUDA device)"),
    }


def _failure_evidence(failure: CudaFailure | None) -> list[str]:
    if failure is None:
        return []
    evidence = [f"CUDA error: {failure.message}" + (f" ({failure.error_name})" if failure.error_name else "")]
    if failure.python_frame:
        evidence.append(f"launched from {failure.python_frame}")
    if failure.device_assert:
        evidence.append(failure.device_assert)
    if failure.dsa_unavailable:
        evidence.append(
            "device-side assertions are unavailable in this build (stock wheels lack TORCH_USE_CUDA_DSA); the error "
            "above is the blocking launch's own"
        )
    return evidence


def _memcheck(
    env: Environment, argv: list[str], out_dir: Path, timeout: float
) -> tuple[dict[str, Any], list[str], list[str]]:
    """compute-sanitizer's memcheck, when installed and allowed: (facts, files, evidence) it adds."""
    sanitizer = env.system.which("compute-sanitizer")
    if not sanitizer:
        return {}, [], []
    if not env.settings.allow_sanitizer:
        return (
            {"sanitizer_summary": "not run (installed: rerun with --allow-sanitizer for memcheck, slow)"},
            [],
            ["compute-sanitizer is installed; rerun with --allow-sanitizer to run memcheck (slow)"],
        )
    log = out_dir / "memcheck.log"
    options = ["--tool", "memcheck", "--target-processes", "all", "--error-exitcode", "99", "--print-limit", "20"]
    cmd = [sanitizer, *options, "--log-file", str(log), env.settings.python, str(HARNESS), "run", "--", *argv]
    env.system.runner.run(
        cmd,
        timeout=timeout * 4,
        env=env.child_env(PYTORCH_NO_CUDA_MEMORY_CACHING="1"),
        log_path=out_dir / "memcheck-run.log",
    )
    if not log.exists():
        return {"sanitizer_summary": "ran but wrote no log; see memcheck-run.log"}, [], []
    report = parse_sanitizer(log.read_text(encoding="utf-8", errors="replace"))
    facts = {
        "sanitizer_errors": report.errors,
        "sanitizer_first": report.first,
        "sanitizer_location": report.location,
        "sanitizer_python_frame": report.python_frame,
        "sanitizer_summary": sanitizer_summary(report),
    }
    return facts, [str(log)], [f"compute-sanitizer: {facts['sanitizer_summary']}"] if report.errors else []
