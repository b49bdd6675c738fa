"""``trace inspect --engine``/``--summaries``: the job judged from per-rank summaries (wizard/jobs/), printed as
lines or written as ``--json``; the report files of a full inspection (--report, --markdown) are not made here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wizard.errors import UsageError
from wizard.exit_status import ExitStatus

if TYPE_CHECKING:
    from wizard.inspect_options import InspectOptions


def job_inspect(ctx: Any, options: InspectOptions) -> ExitStatus:
    """Run the per-rank step and the reduce; exit 1 when the job is at ``--fail-on`` or worse (a failed rank is
    ``error``)."""
    from wizard.jobs.run import inspect_job
    from wizard.jobs.words import job_lines

    args = ctx.args
    if args.report or args.markdown is not None:
        raise UsageError("--engine and --summaries write --json or lines, not --report or --markdown")
    job = inspect_job(args.paths, options, progress=ctx.system.progress)
    if args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(job.to_dict()) + "\n")
    else:
        for line in job_lines(job):
            ctx.say(line)
    failing = args.fail_on != "never" and job.problems(at_least=args.fail_on)
    return ExitStatus.FINDINGS if failing else ExitStatus.OK
