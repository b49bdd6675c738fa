"""``warpwizard run``: walk a playbook to a diagnosis (the run itself, with a terminal around it:
wizard/cli/run.py). Its options are ``wizard.run_request.RunRequest``'s fields; the bare ``warpwizard`` runs the
triage through ``cmd_run``."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub, add_probe_options, add_progress, add_report
from wizard.cli.context import Context, probe_options_of
from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks", "from_node": "nodes"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    """``run``'s parser; its help is ``_add_run``'s own (the table's summary says the same: tested)."""
    kw.pop("help")
    _add_run(sub, kw)
    parser: argparse.ArgumentParser = sub.choices["run"]
    return parser


def run(ctx: Context) -> ExitStatus:
    return cmd_run(ctx)


def _add_run(sub: Sub, kw: dict[str, Any]) -> None:
    """``run``'s arguments: the playbook, then one per command-line field of ``wizard.run_request.RunRequest``
    (declared there and nowhere else), then the probes' options (``Options``')."""
    run = sub.add_parser("run", help="walk a playbook to a diagnosis", **kw)
    from wizard.option_fields import add_arguments
    from wizard.run_request import RunRequest

    run.add_argument("playbook", help="playbook name (see 'list') or path to a .yaml file")
    add_arguments(run, RunRequest, shared={"report": add_report})
    add_probe_options(run)
    add_progress(run)


def cmd_run(ctx: Context, playbook_name: str | None = None) -> ExitStatus:
    from wizard.cli.run import run_command
    from wizard.run_request import RunRequest

    request = RunRequest.parsed(ctx.args, options=probe_options_of(ctx), playbook_dirs=ctx.playbook_dirs)
    playbook = playbook_name or ctx.args.playbook
    ui = ctx.console(stderr=request.json_out)
    return run_command(playbook, request, ctx.system, ui=ui, out=ctx.console(), stdout=ctx.stdout)
