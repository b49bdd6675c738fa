"""``warpwizard validate PLAYBOOK...``: check playbooks (files, names or directories), every problem reported."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus

COMPLETES = {"paths": "playbooks"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    val: argparse.ArgumentParser = sub.add_parser("validate", help=kw["help"])
    val.add_argument("paths", nargs="+", metavar="PLAYBOOK")
    return val


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import check_playbooks
    from wizard.ui.render import program_use_lines

    checked = check_playbooks(ctx.args.paths, ctx.playbook_dirs, ctx.system.environ)
    for one in checked:
        for line in one.problems or [one.summary, *one.warnings, *program_use_lines(one.program_uses)]:
            ctx.say(line)
    return ExitStatus.INVALID_PLAYBOOK if any(one.problems for one in checked) else ExitStatus.OK
