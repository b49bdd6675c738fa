"""``warpwizard examples [NAME]``: the shipped examples, or one copied out to try."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus

COMPLETES = {"name": "examples"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    ex: argparse.ArgumentParser = sub.add_parser("examples", help=kw["help"])
    ex.add_argument("name", nargs="?", help="the example to copy (see the list)")
    ex.add_argument("--to", metavar="DIR", help="where to copy it (default: ./NAME)")
    return ex


def run(ctx: Context) -> ExitStatus:
    from wizard.examples import copy_example, list_examples

    name = ctx.args.name
    if name is None:  # a header says what the columns are (two bare columns read as a list of pairs)
        ctx.say(f"{'EXAMPLE':<28} DIAGNOSIS IT REACHES (the playbook to run, where not negative-warps-per-sm)", hang=29)
        for example in list_examples():
            other = f"  (warpwizard run {example.playbook})" if example.playbook != "negative-warps-per-sm" else ""
            ctx.say(f"{example.name:<28} {example.diagnosis}{other}", hang=29)
        ctx.say("copy one out to try it: warpwizard examples NAME [--to DIR]")
        return ExitStatus.OK
    from pathlib import Path

    destination = Path(ctx.args.to or name)
    written = copy_example(name, destination)
    for path in written:
        ctx.write(f"wrote {path}\n")
    flag = " --allow-commands" if any(p.suffix == ".py" for p in written) else ""  # its answers name a workload
    playbook = next(e.playbook for e in list_examples() if e.name == name)
    ctx.write(f"try it: warpwizard run {playbook} --answers {destination / 'answers.yaml'}{flag}\n")
    return ExitStatus.OK
