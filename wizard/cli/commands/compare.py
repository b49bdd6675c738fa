"""``warpwizard compare REPORT.json...``: JSON reports from several machines side by side, with rank skew."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    cmp_: argparse.ArgumentParser = sub.add_parser("compare", help=kw["help"])
    cmp_.add_argument("reports", nargs="+", metavar="REPORT.json")
    cmp_.add_argument("--json", action="store_true")
    return cmp_


def run(ctx: Context) -> ExitStatus:
    from wizard.api import rank_skew_of
    from wizard.compare import compare, load_report

    result = compare([load_report(r) for r in ctx.args.reports])
    skew = rank_skew_of(result.machines)
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps({**result.to_dict(), "health": [skew.to_dict()] if skew else []}) + "\n")
        return ExitStatus.OK
    from wizard.ui.tables import comparison_table
    from wizard.untrusted import rich_text

    console = ctx.console()
    console.print(comparison_table(result))
    console.print(rich_text(result.verdict, "bold"))
    if skew is not None:
        console.print(rich_text(f"rank skew ({skew.status}): {skew.summary}", "bold"))
    return ExitStatus.OK
