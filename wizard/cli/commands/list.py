"""``warpwizard list``: the playbooks found on the search path, and what shadows what."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser("list", help=kw["help"])
    return parser


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import found_playbooks
    from wizard.ui.tables import playbooks_table

    found = found_playbooks(ctx.playbook_dirs, ctx.system.environ)
    rows = [(f.name, f.title, f.version, str(f.steps) if f.title else "", f.origin, f.problem) for f in found]
    ctx.console().print(playbooks_table(rows))
    for f in found:
        if f.shadowing:
            ctx.say(f"note: {f.shadowing}")
    for line in dict.fromkeys(line for f in found for line in f.fragment_shadowing):  # once, however many use it
        ctx.say(f"note: {line}")
    return ExitStatus.OK
