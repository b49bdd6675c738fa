"""Shared by the probes that run the workload: the harness call and its parsed result."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.environment import Environment, Workload
from wizard.errors import WizardError
from wizard.probes.base import ProbeResult, Status, ensure_dir
from wizard.progress import task
from wizard.runner import CommandResult
from wizard.untrusted import cut, visible

HARNESS = Path(__file__).with_name("harness.py")
MARK = "WARPWIZARD_RESULT "


@dataclass(slots=True)
class HarnessRun:
    command: CommandResult
    result: dict[str, Any] | None

    @property
    def output(self) -> str:
        """The workload's own output, without the harness's result line."""
        return "\n".join(line for line in self.command.output.splitlines() if not line.startswith(MARK))


def parse_result(output: str) -> dict[str, Any] | None:
    for line in reversed(output.splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK) :])
            except ValueError:  # not JSON, or an integer past Python's 4,300 digits (a workload can print the line)
                return None
            return data if isinstance(data, dict) else None
    return None


def run_harness(
    env: Environment,
    mode: str,
    args: list[str],
    *,
    timeout: float,
    log_name: str,
    extra_env: dict[str, str] | None = None,
    python: str | None = None,
    doing: str | None = None,
) -> HarnessRun:
    argv = [python or env.settings.python, str(HARNESS), mode, *args]
    with task(env.system.progress, "", doing=doing or _doing(mode, args, python or env.settings.python)):
        result = env.system.runner.run(
            argv,
            timeout=timeout,
            env=env.child_env(**(extra_env or {})),
            log_path=env.settings.report_dir / "logs" / f"{log_name}.log",
        )
    return HarnessRun(result, parse_result(result.output))


def shown_command(argv: list[str], limit: int = 60) -> str:
    """A command as a person would type it, for a progress line."""
    return cut(visible(shlex.join(argv)), limit)


def _doing(mode: str, args: list[str], python: str) -> str:
    """What a harness run is doing, in words, for the live line of its probe."""
    workload = ["python", *args[args.index("--") + 1 :]] if "--" in args else []
    doing = {
        "profile": f"profiling `{shown_command(workload)}` under torch.profiler",
        "legacy": f"profiling `{shown_command(workload)}` under the legacy autograd profiler",
        "run": f"running `{shown_command(workload)}`",
        "overhead": f"timing `{shown_command(workload)}` with and without torch.profiler",
        "validate": "running PyTorch's trace validator",
        "env": f"asking {cut(visible(python), 60)} for its torch and GPUs",
    }
    return doing.get(mode, f"running the harness ({mode})")


def workload_argv(env: Environment, params: dict[str, Any]) -> list[str] | None:
    """The workload as harness arguments: the script and its arguments."""
    text = params.get("workload")
    workload = env.settings.workload
    if isinstance(text, str) and text.strip():
        try:
            workload = Workload.parse(text, env.settings.python)
        except ValueError as exc:
            raise WizardError(f"workload {visible(text)[:200]!r}: {exc}") from None
    if workload is None:
        return None
    argv = list(workload.argv)
    if argv and argv[0] == env.settings.python:
        argv = argv[1:]
    return argv


def no_workload(name: str) -> ProbeResult:
    return ProbeResult(
        Status.SKIP,
        f'{name}: no workload given (run with --workload "python train.py --steps 3")',
        facts={"reason": "no workload"},
    )


def harness_failure(name: str, run: HarnessRun) -> ProbeResult | None:
    """A result for a harness that did not report, or None when it did."""
    if run.command.timed_out:
        return ProbeResult(
            Status.ERROR,
            f"{name}: the workload ran past its timeout "
            f"({run.command.duration_s:.0f} s) and was killed with its children",
            facts={"timed_out": True},
            files=[run.command.log_path or ""],
        )
    if run.result is None:
        tail = run.output.strip().splitlines()[-3:]
        return ProbeResult(
            Status.ERROR,
            f"{name}: the harness did not report (exit {run.command.returncode}): " + " | ".join(tail),
            facts={"timed_out": False},
            files=[run.command.log_path or ""],
        )
    if run.result.get("error"):
        return ProbeResult(Status.SKIP, f"{name}: {run.result['error']}", facts={"reason": run.result["error"]})
    return None


@dataclass(frozen=True, slots=True)
class Profiled:
    """A workload profiled once under torch.profiler in a fresh process, its harness having reported."""

    argv: list[str]
    out_dir: Path
    trace: Path  # where the profiler was asked to write (it may not have)
    run: HarnessRun
    result: dict[str, Any]  # the harness's result line: run.result, known not None
    cuda: bool


def profile_once(
    env: Environment,
    name: str,
    params: dict[str, Any],
    *,
    folder: str,
    trace_name: str,
    timeout: float,
    extra_env: dict[str, str] | None = None,
) -> Profiled | ProbeResult:
    """The workload profiled once in a fresh process, into ``report_dir/folder/trace_name`` (log: ``folder``).

    One place for the steps every re-profiling probe takes: a ProbeResult when there is no workload or the
    harness did not report (the probe returns it as it is), else what was profiled."""
    argv = workload_argv(env, params)
    if argv is None:
        return no_workload(name)
    out_dir = ensure_dir(env.settings.report_dir / folder)
    trace = out_dir / trace_name
    run = run_harness(
        env, "profile", [str(trace), "--", *argv], timeout=timeout, log_name=folder, extra_env=extra_env
    )  # fmt: skip
    failed = harness_failure(name, run)
    if failed is not None:
        return failed
    assert run.result is not None  # harness_failure returns a result otherwise
    return Profiled(argv, out_dir, trace, run, run.result, bool(run.result.get("cuda_available")))
