"""The per-rank step every engine runs: one trace (a path or a URL) to its ``RankSummary``, reused from the
summaries directory when one of that very file is there, or to a ``Failure``: a rank that cannot be read is a
finding about that rank, and the job goes on without it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wizard.errors import InputFileError
from wizard.inspect_options import InspectOptions
from wizard.jobs.summary import RankSummary, load, of_report, save, source_of
from wizard.untrusted import cut, visible


@dataclass(frozen=True, slots=True)
class Failure:
    """A rank whose summary could not be made: its path, the kind (``unreadable``, ``out of memory``, ``worker
    lost``, ``failed``) and the one line that says why."""

    path: str
    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the step sends back: the summary (or the failure), and whether it was reused rather than read."""

    summary: RankSummary | None
    failure: Failure | None = None
    reused: bool = False


def one_line(exc: BaseException) -> str:
    """An error as the one line a table shows: escaped, cut."""
    return cut(visible(str(exc).replace("\n", " ")), 300)


def summarize(path: str, options: InspectOptions, summaries: str | None = None) -> Outcome:
    """One rank's trace summed up (``options`` as ``check_options`` returned them): a summary of the same file
    in ``summaries`` is reused; else the trace is read once, in this process, and its summary written there."""
    from wizard.trace.inspection.run import inspect_trace
    from wizard.trace.read.reader import ReaderConfig

    try:
        source = source_of(path)
    except (InputFileError, OSError) as exc:
        return Outcome(None, Failure(path, "unreadable", _reason(path, exc)))
    directory = Path(summaries) if summaries else None
    if directory is not None and (found := load(directory, source, options.checks)) is not None:
        return Outcome(found, reused=True)
    try:
        # the scanner's thread only where ranks are read one after another here, not a process a core
        ahead = options.engine in (None, "none") and options.jobs != 1
        report = inspect_trace(path, options, config=ReaderConfig(workers=0, ahead=ahead))
    except InputFileError as exc:
        return Outcome(None, Failure(path, "unreadable", one_line(exc)))
    except MemoryError:
        return Outcome(None, Failure(path, "out of memory", f"{visible(path)}: out of memory while reading"))
    summary = of_report(report, source, options.checks)
    if directory is not None:
        save(directory, summary)
    return Outcome(summary)


def _reason(path: str, exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"{visible(path)}: no such file"
    if isinstance(exc, OSError):
        return f"{visible(path)}: cannot read ({exc.strerror or type(exc).__name__})"
    return one_line(exc)
