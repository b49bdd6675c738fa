"""``warpwizard trace inspect PATH...``: a trace's health and every impossible kernel metric explained
(wizard.api.inspect_traces); its options beyond the output's are ``InspectOptions``' fields."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub, add_progress, add_report
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus
from wizard.schemas import TRACE_REPORT
from wizard.untrusted import visible

FAIL_ON = ("info", "warning", "error", "never")


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    ins: argparse.ArgumentParser = sub.add_parser(
        "inspect",
        description="Checks a trace's health (every way a profiler trace is known to lie: kernels missing or "
        "hidden, impossible durations or metrics, CUDA graphs, rank skew) and recomputes every kernel's blocks/warps "
        "per SM and occupancy, naming each wrong value's cause.",
        **kw,
    )
    ins.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="traces (Kineto or Cuspy JSON, .json.gz, .pftrace[.gz], nsys .sqlite) or per-rank directories",
    )
    ins.add_argument("--json", action="store_true", help=f"machine-readable (schema {TRACE_REPORT})")
    ins.add_argument("--markdown", metavar="FILE", help="write Markdown for a bug report ('-': to stdout, alone)")
    add_report(ins)
    ins.add_argument("--force", action="store_true", help="replace a --markdown or --report file that exists")
    ins.add_argument("--all", action="store_true", help="also list correct-by-design kernels (F)")
    ins.add_argument("--verbose", "-v", action="store_true", help="every health check, with what it means and examples")
    ins.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="warning",
        metavar="LEVEL",
        help="exit 1 when a health check is at LEVEL or worse: info, warning (default), error, or never",
    )
    add_progress(ins)
    _add_inspect_options(ins)
    return ins


def _add_inspect_options(parser: argparse.ArgumentParser) -> None:
    """What ``trace inspect`` asks of the inspection: one argument per field of
    ``wizard.inspect_options.InspectOptions`` declared as an option (help, metavar, kind, bounds) and nowhere else,
    wired by the same function as the probe options (``option_fields.add_arguments``)."""
    from wizard.inspect_options import InspectOptions
    from wizard.option_fields import add_arguments

    add_arguments(parser, InspectOptions)


def run(ctx: Context) -> ExitStatus:
    from dataclasses import replace

    from wizard.api import check_options, inspect_traces
    from wizard.inspect_options import InspectOptions, flag_of
    from wizard.outputs import STDOUT, check_outputs, stdout_output, write_text

    args = ctx.args
    stdout_output([(args.json, "--json"), (args.markdown, "--markdown")])  # '--markdown -' is stdout, alone
    if args.report or args.markdown is not None:  # the renderers load only when they write something
        from wizard.report.registry import FORMATS, format_for
    options = check_options(InspectOptions.parsed(args), spell=flag_of)  # before anything is written
    if options.engine is not None or options.summaries is not None:  # the job from per-rank summaries
        from wizard.cli.job import job_inspect

        return job_inspect(ctx, options)
    files = [(args.report, format_for(args.report))] if args.report else []  # the format's extra checked now
    if args.markdown not in (None, STDOUT):
        files.append((args.markdown, FORMATS[".md"]))  # --markdown FILE: Markdown whatever its suffix
    options = replace(options, plots=any(chosen.needs_inspection for _, chosen in files))
    check_outputs([(path, chosen.name) for path, chosen in files], inputs=args.paths, force=args.force)
    inspection = inspect_traces(args.paths, options, progress=ctx.system.progress, spell=flag_of)
    if args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(inspection.to_dict()) + "\n")
    elif args.markdown != STDOUT:  # '--markdown -' is the whole of stdout
        from wizard.runs import playbook_names
        from wizard.ui.render import health_view, inspection_view

        console = ctx.console()
        console.print(
            health_view(
                inspection, verbose=args.verbose, playbooks=playbook_names(ctx.playbook_dirs, ctx.system.environ)
            )
        )
        console.print(inspection_view(inspection, show_all=args.all))
    if args.markdown == STDOUT:
        ctx.write(FORMATS[".md"].inspection(inspection))
    for path, chosen in files:
        write_text(path, chosen.inspection(inspection), inputs=args.paths, force=args.force, what=chosen.name)
    if args.report and not args.json and args.markdown != STDOUT:
        ctx.stderr.write(visible(f"{files[0][1].name} written to {args.report}") + "\n")
    failing = args.fail_on != "never" and bool(inspection.problems(at_least=args.fail_on))
    return ExitStatus.FINDINGS if failing else ExitStatus.OK
