"""``warpwizard trace ACTION``: inspect or fix profiler traces. Its actions are a table of their own, the same
shape as the commands' (``ACTIONS``: one module and one row each)."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Parser, Sub, mark_completions
from wizard.cli.context import Context
from wizard.cli.table import Command, load
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus

ACTIONS: dict[str, Command] = {
    "inspect": Command(
        "wizard.cli.commands.trace_inspect", "check a trace's health and explain every impossible kernel metric"
    ),
    "fix": Command("wizard.cli.commands.trace_fix", "write a copy of a trace with true values"),
}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    trace: argparse.ArgumentParser = sub.add_parser("trace", help=kw.pop("help"))
    tsub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=Parser)
    for action in ACTIONS.values():
        module = load(action)
        mark_completions(module.add_parser(tsub, **{**kw, "help": action.summary}), getattr(module, "COMPLETES", {}))
    return trace


def run(ctx: Context) -> ExitStatus:
    action = ctx.args.trace_command
    if action in ACTIONS:
        status: ExitStatus = load(ACTIONS[action]).run(ctx)
        return status
    raise UsageError("warpwizard trace: choose an action: inspect or fix (see --help)")
