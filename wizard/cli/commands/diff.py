"""``warpwizard diff BEFORE AFTER``: two profiles of one workload side by side (wizard.diff, docs/comparing.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    diffp: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help=kw["help"],
        description="Compare two profiles (traces in any format, rank directories, or `trace inspect --json` "
        "reports): whether they can be compared (devices, ranks, steps, graphs, versions, capture options, health, "
        "shared kernels), then which kernels changed beyond --threshold and their noise.",
    )
    diffp.add_argument("before", metavar="BEFORE")
    diffp.add_argument("after", metavar="AFTER")
    diffp.add_argument(
        "--threshold", default="10", metavar="PCT",
        help="a kernel's median duration this many percent slower (and beyond its noise) is a regression, exit 1: "
        "above 0 and below 1000 (default 10)",
    )  # fmt: skip
    diffp.add_argument("--json", action="store_true", help="the comparison as JSON (schema warpwizard.diff/1)")
    diffp.add_argument(
        "--markdown", metavar="FILE",
        help="also write a short Markdown summary (a CI job summary; '-': to stdout, alone)",
    )  # fmt: skip
    diffp.add_argument(
        "--report", metavar="PAGE.html",
        help="also write an HTML page with both sides: the verdict and factors, then what changed, drawn as bars",
    )  # fmt: skip
    diffp.add_argument("--jobs", type=int, default=None, metavar="N", help="processes for reading traces")
    return diffp


def run(ctx: Context) -> ExitStatus:
    """Two profiles side by side: the comparability verdict first; changes only when they can be compared."""
    from wizard.diff import diff_profiles, markdown, threshold_of
    from wizard.outputs import check_outputs, output_files, stdout_output, write_text

    args = ctx.args
    inputs = [args.before, args.after]
    threshold = threshold_of(args.threshold)
    stdout = stdout_output([(args.json, "--json"), (args.markdown, "--markdown")])
    if args.report is not None and Path(args.report).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--report {args.report}: the diff's page is HTML; name it .html")
    files = output_files([(args.markdown, "Markdown summary"), (args.report, "HTML page")])
    check_outputs(files, inputs=inputs, force=False)
    result = diff_profiles(args.before, args.after, threshold=threshold, jobs=args.jobs)
    if stdout == "--json":
        from wizard.serialize import dumps

        ctx.write(dumps(result.to_dict()) + "\n")
    elif stdout == "--markdown":
        ctx.write(markdown(result))
    else:
        from wizard.ui.tables import diff_view

        ctx.console().print(diff_view(result))
    if (args.markdown, "Markdown summary") in files:
        write_text(args.markdown, markdown(result), inputs=inputs, what="Markdown summary")
    if args.report is not None:
        from wizard.report.diff_page import diff_html

        write_text(args.report, diff_html(result), inputs=inputs, what="HTML page")
    if result.verdict == "not comparable":
        return ExitStatus.NOT_COMPARABLE
    found = result.regressions or result.op_regressions or result.rank_regressions or result.profiler_bugs
    return ExitStatus.FINDINGS if found else ExitStatus.OK
