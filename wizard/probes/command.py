"""``command.run``: run a command a playbook names. Off unless the user passes
``--allow-commands``: a playbook from someone else must not run programs unasked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.common import shown_command
from wizard.progress import task


class CommandFacts(TypedDict, total=False):
    """The facts CommandProbe declares once (help, ``probes``, the schema and the loader read them)."""

    exit_code: Annotated[int | None, "the command's exit code (None: not run or timed out)"]
    output_tail: Annotated[str, "the last lines of its output"]
    allowed: Annotated[bool, "whether the user allowed commands"]


class CommandProbe:
    name = "command.run"
    summary = "Run a command (only with --allow-commands); pass when it exits as expected"
    runs_programs = "the command the playbook names (only with --allow-commands)"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("argv", "list[str]", "the command and its arguments (no shell)", required=True, runs=True),
        ParamSpec("expect_exit", "int", "exit code that means pass", default=0),
    )
    facts: tuple[FactSpec, ...] = declared_facts(CommandFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        argv = [str(a) for a in params.get("argv") or []]
        if not env.settings.allow_commands:
            return ProbeResult(
                Status.SKIP,
                f"this playbook wants to run a command; rerun with --allow-commands to permit it: {' '.join(argv)}",
                facts={"exit_code": None, "output_tail": "", "allowed": False},
            )
        if not argv:
            return ProbeResult(
                Status.ERROR, "no command given", facts={"exit_code": None, "output_tail": "", "allowed": True}
            )
        with task(env.system.progress, "", doing=f"running `{shown_command(argv)}`"):
            result = env.system.runner.run(
                argv,
                timeout=timeout,
                env=env.child_env(),
                log_path=env.settings.report_dir / "logs" / "command.log",
            )
        tail = "\n".join(result.output.strip().splitlines()[-10:])
        facts = {"exit_code": result.returncode, "output_tail": tail, "allowed": True}
        if result.timed_out:
            return ProbeResult(
                Status.ERROR, f"timed out after {result.duration_s:.0f} s; killed with its children", facts=facts
            )
        expected = params.get("expect_exit", 0)
        status = Status.PASS if result.returncode == expected else Status.FAIL
        return ProbeResult(
            status, f"exit code {result.returncode} (expected {expected})", facts=facts, files=[result.log_path or ""]
        )
