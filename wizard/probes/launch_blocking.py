"""``cuda.launch_blocking``: re-run with CUDA_LAUNCH_BLOCKING=1 so a failing kernel is
reported at its own launch, then name the error and the Python frame that launched it;
compute-sanitizer's memcheck runs too when installed and allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, ensure_dir
from wizard.probes.common import HARNESS, harness_failure, no_workload, run_harness, workload_argv
from wizard.probes.cuda_errors import find_cuda_failure, parse_sanitizer, sanitizer_summary


class LaunchBlockingProbe:
    name = "cuda.launch_blocking"
    summary = "Re-run with CUDA_LAUNCH_BLOCKING=1 (and device-side assertions); find the first CUDA error"
    runs_programs = "the workload with CUDA_LAUNCH_BLOCKING=1 (and compute-sanitizer with --allow-sanitizer)"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("workload", "str", "command to run (default: --workload)", default=None, runs=True),
        ParamSpec("sanitizer", "bool", "also run compute-sanitizer memcheck (needs --allow-sanitizer)", default=True),
    )
    facts: tuple[FactSpec, ...] = (
        FactSpec("cuda_available", "bool", "whether the workload saw a CUDA device"),
        FactSpec("cuda_error", "str", "the CUDA error message, or None"),
        FactSpec("error_name", "str", "cudaErrorXxx when printed"),
        FactSpec("exception", "str", "the Python exception type"),
        FactSpec("python_frame", "str", "file:line in function that launched the failing kernel"),
        FactSpec("device_assert", "str", "a device-side assertion line, when one fired"),
        FactSpec("exit_code", "int", "the workload's exit code"),
        FactSpec("dsa", "str", "device-side assertions: enabled | unavailable in this build"),
        FactSpec("sanitizer_errors", "int", "compute-sanitizer memcheck error count (None: not run)"),
        FactSpec("sanitizer_first", "str", "its first error record (an invalid access or an assert)"),
        FactSpec("sanitizer_location", "str", "kernel+offset [file:line] of that access"),
        FactSpec("sanitizer_python_frame", "str", "the Python frame compute-sanitizer saved for that record"),
        FactSpec("sanitizer_summary", "str", "what compute-sanitizer found, in words (or why it did not run)"),
    )

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        argv = workload_argv(env, dict(params))
        if argv is None:
            return no_workload(self.name)
        out_dir = ensure_dir(env.settings.report_dir / "launch-blocking")
        extra = {"CUDA_LAUNCH_BLOCKING": "1", "TORCH_USE_CUDA_DSA": "1", "PYTORCH_USE_CUDA_DSA": "1"}
        run = run_harness(env, "run", ["--", *argv], timeout=timeout, log_name="launch-blocking", extra_env=extra)
        if run.result is not None:
            cuda = bool(run.result.get("cuda_available"))
        else:  # the workload took the harness down with it: ask separately
            preflight = run_harness(env, "env", [], timeout=min(timeout, 120), log_name="launch-blocking-env")
            cuda = bool(preflight.result and preflight.result.get("cuda_available"))
        if run.command.timed_out:
            failed = harness_failure(self.name, run)
            assert failed is not None
            return failed
        output = run.command.output
        failure = find_cuda_failure(output)
        exit_code = run.result.get("exit_code") if run.result else run.command.returncode
        facts: dict[str, Any] = {
            "cuda_available": cuda,
            "cuda_error": None,
            "error_name": None,
            "exception": None,
            "python_frame": None,
            "device_assert": None,
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
        files = [run.command.log_path or ""]
        evidence: list[str] = []
        if failure is not None:
            facts.update(
                cuda_error=failure.message,
                error_name=failure.error_name,
                exception=failure.exception,
                python_frame=failure.python_frame,
                device_assert=failure.device_assert,
            )
            evidence.append(
                f"CUDA error: {failure.message}" + (f" ({failure.error_name})" if failure.error_name else "")
            )
            if failure.python_frame:
                evidence.append(f"launched from {failure.python_frame}")
            if failure.device_assert:
                evidence.append(failure.device_assert)
            if failure.dsa_unavailable:
                evidence.append(
                    "device-side assertions are unavailable in this build (stock wheels lack "
                    "TORCH_USE_CUDA_DSA); the error above is the blocking launch's own"
                )
        sanitizer = env.system.which("compute-sanitizer")
        if cuda and sanitizer and params.get("sanitizer", True):
            if not env.settings.allow_sanitizer:
                facts["sanitizer_summary"] = "not run (installed: rerun with --allow-sanitizer for memcheck, slow)"
                evidence.append("compute-sanitizer is installed; rerun with --allow-sanitizer to run memcheck (slow)")
            else:
                log = out_dir / "memcheck.log"
                cmd = [
                    sanitizer,
                    "--tool",
                    "memcheck",
                    "--target-processes",
                    "all",
                    "--error-exitcode",
                    "99",
                    "--print-limit",
                    "20",
                    "--log-file",
                    str(log),
                    env.settings.python,
                    str(HARNESS),
                    "run",
                    "--",
                    *argv,
                ]
                env.system.runner.run(
                    cmd,
                    timeout=timeout * 4,
                    env=env.child_env(PYTORCH_NO_CUDA_MEMORY_CACHING="1"),
                    log_path=out_dir / "memcheck-run.log",
                )
                if log.exists():
                    report = parse_sanitizer(log.read_text(encoding="utf-8", errors="replace"))
                    facts.update(
                        sanitizer_errors=report.errors,
                        sanitizer_first=report.first,
                        sanitizer_location=report.location,
                        sanitizer_python_frame=report.python_frame,
                        sanitizer_summary=sanitizer_summary(report),
                    )
                    files.append(str(log))
                    if report.errors:
                        evidence.append(f"compute-sanitizer: {facts['sanitizer_summary']}")
                else:
                    facts["sanitizer_summary"] = "ran but wrote no log; see memcheck-run.log"
        if failure is not None or (facts["sanitizer_errors"] or 0) > 0:
            return ProbeResult(
                Status.FAIL,
                f"CUDA error at launch: {facts['cuda_error'] or facts['sanitizer_first']}",
                facts=facts,
                evidence=evidence,
                files=files,
            )
        if not cuda:
            return ProbeResult(
                Status.SKIP,
                "no CUDA device: the workload ran on the CPU, so there is no kernel launch "
                f"to serialise (exit code {exit_code})",
                facts=facts,
                evidence=evidence,
                files=files,
            )
        if exit_code not in (0, None):
            return ProbeResult(
                Status.WARN,
                f"the workload failed (exit {exit_code}) without a CUDA error; see the log",
                facts=facts,
                evidence=evidence,
                files=files,
            )
        return ProbeResult(
            Status.PASS, "no CUDA error with blocking launches", facts=facts, evidence=evidence, files=files
        )
