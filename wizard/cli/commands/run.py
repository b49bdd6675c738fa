"""``warpwizard run``: walk a playbook to a diagnosis (the run itself: wizard/cli/run.py).

``_add_run`` and ``cmd_run`` are moved here unchanged from parser.py and app.py (another branch rewrites ``run``'s
options); ``add_parser`` and ``run`` are the table's adapters around them."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import _Sub, _Unbuilt
from wizard.cli.arguments import add_probe_options as _add_probe_options
from wizard.cli.arguments import add_progress as _add_progress
from wizard.cli.arguments import add_report as _add_report
from wizard.cli.context import Context
from wizard.cli.context import probe_options_of as _probe_options
from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks", "from_node": "nodes"}


def add_parser(sub: _Sub, **kw: Any) -> argparse.ArgumentParser:
    """``run``'s parser; its help is ``_add_run``'s own (the table's summary says the same: tested)."""
    kw.pop("help")
    _add_run(sub, kw)
    parser: argparse.ArgumentParser = sub.choices["run"]
    return parser


def run(ctx: Context) -> ExitStatus:
    return cmd_run(ctx)


def _add_run(sub: _Sub, kw: dict[str, Any]) -> None:
    """``run``'s arguments, one per field of ``wizard.cli.run.RunOptions`` (declared there and nowhere else),
    then the probes' options (``Options``')."""
    run = sub.add_parser("run", help="walk a playbook to a diagnosis", **kw)
    if isinstance(run, _Unbuilt):
        return
    import dataclasses

    from wizard.cli.run import RunOptions

    groups: dict[str, Any] = {}
    for spec in dataclasses.fields(RunOptions):
        meta = dict(spec.metadata)
        if meta.get("positional"):
            run.add_argument(spec.name, help=meta["help"])
        elif meta.get("shared") == "report":
            _add_report(run)
        elif meta:
            kind = dict(meta["kind"])
            group = kind.pop("group", None)
            if group and group not in groups:
                groups[group] = run.add_mutually_exclusive_group()
            target = groups[group] if group else run
            flag = meta["flag"] or "--" + spec.name.replace("_", "-")
            if meta["metavar"]:
                kind["metavar"] = meta["metavar"]
            target.add_argument(flag, dest=spec.name, help=meta["help"], **kind)
    _add_probe_options(run)
    _add_progress(run)


def cmd_run(ctx: Context, playbook_name: str | None = None) -> ExitStatus:
    from wizard.cli.run import RunOptions, run_command

    options = RunOptions.parsed(ctx.args, options=_probe_options(ctx), playbook_dirs=ctx.playbook_dirs)
    options.playbook = playbook_name or options.playbook
    return run_command(options, ctx.system, ctx.console(stderr=options.json_out), ctx.console(), ctx.stdout)
