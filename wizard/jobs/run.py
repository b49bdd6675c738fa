"""``trace inspect --engine``/``--summaries``: a job's traces (paths or URLs, a directory or a glob of them) to
its ``JobInspection``, through the per-rank step on the engine asked for, then the reduce."""

from __future__ import annotations

from pathlib import Path

from wizard.errors import InputFileError
from wizard.inspect_options import InspectOptions
from wizard.jobs.engines import run_step
from wizard.jobs.reduce import JobInspection, reduce
from wizard.progress import NO_PROGRESS, Progress


def inspect_job(paths: list[str], options: InspectOptions, *, progress: Progress = NO_PROGRESS) -> JobInspection:
    """Every rank summed up (reused from ``options.summaries`` where current), then the job judged from the
    summaries alone. Raises InputFileError when nothing names a trace, MissingDependency for an extra not
    installed, OutputFileError for a summaries directory that cannot be written."""
    from wizard.trace.inspection.run import check_options
    from wizard.trace.read.reader import iter_trace_files

    options = check_options(options)
    files = [str(f) for f in iter_trace_files(paths)]
    if not files:
        raise InputFileError("no trace files given")
    if options.summaries:
        from wizard.outputs import make_parent

        make_parent(Path(options.summaries) / "summary.json", what="summaries directory")
    engine = options.engine or "none"
    outcomes = run_step(files, options, engine=engine, progress=progress)
    return reduce(outcomes, options, engine=engine)
