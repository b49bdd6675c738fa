"""``trace inspect --engine``/``--summaries``: the job judged from per-rank summaries (wizard/jobs/), printed as
lines or ``--json``, and written as ``--markdown``/``--report`` files (wizard/report/job.py: aggregates and the
outliers, as readable at 10,000 ranks as at 10)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wizard.exit_status import ExitStatus

if TYPE_CHECKING:
    from wizard.inspect_options import InspectOptions


def job_inspect(ctx: Any, options: InspectOptions) -> ExitStatus:
    """Run the per-rank step and the reduce; exit 1 when the job is at ``--fail-on`` or worse (a failed rank is
    ``error``)."""
    from wizard.jobs.run import inspect_job
    from wizard.jobs.words import job_lines
    from wizard.outputs import STDOUT

    args = ctx.args
    files = _report_files(args)
    job = inspect_job(args.paths, options, progress=ctx.system.progress)
    if args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(job.to_dict()) + "\n")
    elif args.markdown == STDOUT:  # '--markdown -' is the whole of stdout
        from wizard.report.job import job_markdown

        ctx.write(job_markdown(job))
    else:
        for line in job_lines(job):
            ctx.say(line)
    if files:
        from wizard.outputs import write_text

        for path, chosen in files:
            write_text(path, chosen.job(job), inputs=args.paths, force=args.force, what=chosen.name)
    failing = args.fail_on != "never" and job.problems(at_least=args.fail_on)
    return ExitStatus.FINDINGS if failing else ExitStatus.OK


def _report_files(args: Any) -> list[tuple[str, Any]]:
    """The report files asked for, their formats and places checked before any rank is read."""
    from wizard.outputs import STDOUT, check_outputs
    from wizard.report.registry import FORMATS, format_for

    files = [(args.report, format_for(args.report, pictures=False))] if args.report else []  # tables, no plots
    if args.markdown not in (None, STDOUT):
        files.append((args.markdown, FORMATS[".md"]))
    check_outputs([(path, chosen.name) for path, chosen in files], inputs=args.paths, force=args.force)
    return files
