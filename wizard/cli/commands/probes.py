"""``warpwizard probes [NAME]``: the registered probes, their parameters and facts."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus

COMPLETES = {"name": "probes"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    probes: argparse.ArgumentParser = sub.add_parser("probes", help=kw["help"])
    probes.add_argument("name", nargs="?", help="one probe, shown in full (every parameter and fact)")
    probes.add_argument("--json", action="store_true", help="every probe (or the one named), whole")
    return probes


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import list_probes

    probes = list_probes()
    name = ctx.args.name
    if name is not None and name not in probes:
        raise UsageError(f"unknown probe {name!r}; registered: {', '.join(sorted(probes))}")
    chosen = {name: probes[name]} if name else probes
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps([info.to_dict() for info in chosen.values()]) + "\n")
    elif name:
        from wizard.ui.tables import probe_lines

        for line in probe_lines(probes[name]):
            ctx.say(line)
    else:
        from wizard.ui.tables import probes_table

        console = ctx.console()
        console.print(probes_table(probes, console.width))
    return ExitStatus.OK
