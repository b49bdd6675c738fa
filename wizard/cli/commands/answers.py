"""``warpwizard answers PLAYBOOK``: a commented answers file to fill in, for ``run --answers``."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context, load_playbook
from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    ans: argparse.ArgumentParser = sub.add_parser("answers", help=kw["help"])
    ans.add_argument("playbook")
    return ans


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import answers_file_template

    ctx.write(answers_file_template(load_playbook(ctx, ctx.args.playbook), ctx.playbook_dirs, ctx.system.environ))
    return ExitStatus.OK
