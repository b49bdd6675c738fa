"""``warpwizard trace fix INPUT OUTPUT``: a copy of a trace with true values (wizard.api.fix_trace)."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub, add_progress
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus
from wizard.untrusted import visible


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    fix: argparse.ArgumentParser = sub.add_parser("fix", **kw)
    fix.add_argument("input")
    fix.add_argument("output")
    fix.add_argument("--force", action="store_true", help="replace an output file that exists")
    add_progress(fix)
    fix.add_argument(
        "--split-overlaps",
        action="store_true",
        help="move the kernels Perfetto cannot nest on their stream's row to extra rows, each with its own launch "
        "arrow, so Perfetto shows them all",
    )
    return fix


def run(ctx: Context) -> ExitStatus:
    from wizard.api import fix_trace
    from wizard.ui.render import fix_summary_lines, truncation_warning

    args = ctx.args
    summary = fix_trace(
        args.input,
        args.output,
        force=args.force,
        split_overlaps=args.split_overlaps,
        progress=ctx.system.progress,
    )
    for line in fix_summary_lines(summary):
        ctx.say(line)
    if summary.truncation is not None:
        ctx.stderr.write(visible(truncation_warning(args.input, summary.truncation.detail)) + "\n")
    return ExitStatus.OK
