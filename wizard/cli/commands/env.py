"""``warpwizard env``: versions, GPUs and profilers available here (or in another Python, ``--python``)."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    envp: argparse.ArgumentParser = sub.add_parser("env", help=kw["help"])
    envp.add_argument("--python", metavar="PATH")
    envp.add_argument("--json", action="store_true")
    return envp


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import machine_facts

    result = machine_facts(ctx.system, ctx.args.python)
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(result.facts) + "\n")
    else:
        ctx.say(_own_line())
        for line in result.evidence:
            ctx.say(line)
    return ExitStatus.OK


def _own_line() -> str:
    """warpwizard's own version and interpreter first: what a bug report asks for before the GPU's."""
    import platform
    import sys

    from wizard import __version__

    return f"warpwizard {__version__} on Python {platform.python_version()} ({sys.executable})"
