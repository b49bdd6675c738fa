"""``warpwizard explain PLAYBOOK``: the whole tree in words, for onboarding."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context, load_playbook
from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    exp: argparse.ArgumentParser = sub.add_parser("explain", help=kw["help"])
    exp.add_argument("playbook")
    return exp


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import explain_playbook

    text = explain_playbook(load_playbook(ctx, ctx.args.playbook))
    if ctx.system.isatty(ctx.system.stdout):
        from wizard.ui.render import explain_view

        ctx.console().print(explain_view(text))
    else:
        ctx.write(text)
    return ExitStatus.OK
