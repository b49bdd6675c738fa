"""The bare ``warpwizard`` (no command on the line): the triage at a terminal, the front door. Not a subcommand,
so not a row of the table: wizard.cli.app.main calls it when argparse found no command."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import IO, cast

from wizard.cli.commands.run import cmd_run
from wizard.cli.context import Context
from wizard.cli.parser import innermost
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus

TRIAGE = "triage"  # the playbook `warpwizard` alone starts


def run(ctx: Context, parser: argparse.ArgumentParser, given: Sequence[str] = ()) -> ExitStatus:
    """No command at a terminal: the triage, the front door (it asks what you have, checks the trace's
    health and continues into the playbook for what it finds); without a triage playbook on the search
    path, the list to pick from (``warpwizard list`` shows it too). ``given``: ``run``'s options typed
    without a command (``warpwizard --teach``), which the run takes as its own."""
    asked = _asked(parser, given)
    answered = asked is not None and (asked.answers is not None or bool(asked.sets) or asked.defaults or asked.resume)
    if not ctx.system.interactive and not answered:  # answers given (a file, --set, the defaults, a saved run's)
        parser.print_usage(cast(IO[str], ctx.stderr))  # the usage line, as argparse shows a usage error
        raise UsageError(
            "warpwizard: no command given and stdin is not a terminal; try 'warpwizard run PLAYBOOK --answers FILE'"
        )
    from wizard.runs import found_playbooks
    from wizard.ui.prompts import choose_playbook

    found = found_playbooks(ctx.playbook_dirs, ctx.system.environ)
    if not found:
        raise UsageError("warpwizard: no playbooks found")
    triage = [f for f in found if f.name == TRIAGE and f.problem is None]
    if not triage and not ctx.system.interactive:
        raise UsageError(f"warpwizard: no playbook named '{TRIAGE}' to take the answers; name one: "
                         "'warpwizard run PLAYBOOK --answers FILE' ('warpwizard list' shows them)")  # fmt: skip
    name = TRIAGE if triage else choose_playbook(found, ctx.console())
    run_args = asked if asked is not None and name == TRIAGE else parser.parse_args(["run", name, *given])
    run_args.no_color, run_args.playbook_dir = ctx.args.no_color, ctx.args.playbook_dir
    ctx.args = run_args
    return cmd_run(ctx, name)


def _asked(parser: argparse.ArgumentParser, given: Sequence[str]) -> argparse.Namespace | None:
    """``run triage``'s options as typed without the command; one it does not know refused in its name, as
    ``warpwizard run triage --bogus`` refuses it."""
    if not given:
        return None
    asked, unknown = parser.parse_known_args(["run", TRIAGE, *given])
    if unknown:
        innermost(parser, asked).error(f"unrecognized arguments: {' '.join(unknown)}")
    return asked
