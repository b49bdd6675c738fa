"""Report formats, registered in one place (httpie's formatter registry is the model): a file's suffix
picks the renderer, for ``trace inspect`` and ``run`` alike, and an unknown suffix is a one-line usage
error naming the valid ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.engine.transcript import Transcript
from wizard.errors import UsageError
from wizard.formatting import plural
from wizard.rendering import register
from wizard.trace.inspection.results import Inspection

if TYPE_CHECKING:
    from wizard.jobs.reduce import JobInspection


def _inspection_markdown(inspection: Inspection) -> str:
    from wizard.report.markdown import inspection_markdown

    return inspection_markdown(inspection)


def _inspection_html(inspection: Inspection) -> str:
    from wizard.report.html import inspection_html

    return inspection_html(inspection)


def _inspection_json(inspection: Inspection) -> str:
    from wizard.serialize import dumps

    return dumps(inspection.to_dict()) + "\n"


def _transcript_markdown(transcript: Transcript, inspection: Inspection | None) -> str:
    from wizard.report.markdown import transcript_markdown

    return transcript_markdown(transcript)


def _transcript_html(transcript: Transcript, inspection: Inspection | None) -> str:
    from wizard.report.html import transcript_html

    return transcript_html(transcript, inspection)


def _transcript_json(transcript: Transcript, inspection: Inspection | None) -> str:
    from wizard.serialize import dumps

    return dumps(transcript.to_dict()) + "\n"


def _job_markdown(job: JobInspection) -> str:
    from wizard.report.job import job_markdown

    return job_markdown(job)


def _job_html(job: JobInspection) -> str:
    from wizard.report.job import job_html

    return job_html(job)


def _job_json(job: JobInspection) -> str:
    from wizard.serialize import dumps

    return dumps(job.to_dict()) + "\n"


def _plotly_ready() -> None:
    """plotly is there (else a one-line error now, before the trace is read)."""
    from wizard.report.plots import prepare

    prepare()


@dataclass(frozen=True, slots=True)
class ReportFormat:
    """How one kind of file is written: its name, its renderers, and what it needs installed."""

    name: str
    inspection: Callable[[Inspection], str]
    transcript: Callable[[Transcript, Inspection | None], str]
    job: Callable[[JobInspection], str]  # a job judged from per-rank summaries (trace inspect --engine)
    check: Callable[[], None] = lambda: None  # raises MissingDependency before any work
    needs_inspection: bool = False  # the transcript's page draws the trace it read


FORMATS: dict[str, ReportFormat] = {
    ".md": ReportFormat("Markdown report", _inspection_markdown, _transcript_markdown, _job_markdown),
    ".html": ReportFormat(
        "HTML report", _inspection_html, _transcript_html, _job_html, _plotly_ready, needs_inspection=True
    ),
    ".json": ReportFormat("JSON report", _inspection_json, _transcript_json, _job_json),
}
FORMATS[".markdown"] = FORMATS[".md"]
FORMATS[".htm"] = FORMATS[".html"]


def format_for(path: str | Path, *, pictures: bool = True) -> ReportFormat:
    """The format a report file's suffix asks for, its dependencies checked now (before any work); ``pictures=False``
    for a page that draws none (a job's tables), which needs no plotting library."""
    suffix = Path(path).suffix.lower()
    found = FORMATS.get(suffix)
    if found is None:
        valid = ", ".join(sorted(FORMATS))
        raise UsageError(f"--report {path}: unknown report format {suffix or '(no suffix)'!r}; choose from {valid}")
    if pictures:
        found.check()
    return found


def render_inspection(inspection: Inspection, suffix: str) -> str:
    """An inspection in the format a suffix names (``.md``, ``.html``, ``.json``)."""
    return format_for(f"report{suffix}").inspection(inspection)


def render_transcript(transcript: Transcript, suffix: str, inspection: Callable[[], Inspection | None]) -> str:
    """A run's record in the format a suffix names; the HTML page draws the trace the run read, which the
    record supplies (``inspection``, called only by a format that draws it: the report computes nothing)."""
    chosen = format_for(f"report{suffix}")
    return chosen.transcript(transcript, inspection() if chosen.needs_inspection else None)


NOTEBOOK_ROWS = 200  # finding groups in a notebook cell; the rest are counted


def notebook_html(inspection: Inspection) -> str:
    """A notebook cell: the verdict and the HTML page's findings table (by-design groups included), no
    plots, so it needs nothing beyond warpwizard."""
    from wizard.report.html import findings_table
    from wizard.report.view import inspection_view
    from wizard.untrusted import html_text

    view = inspection_view(inspection, limit=NOTEBOOK_ROWS)
    caption = f"<p><b>warpwizard</b>: {plural(view.files, 'trace')}, {html_text(view.verdict, 600)}</p>"
    return caption + (findings_table(view) if view.rows else "")


# The seam records render through (wizard/rendering.py): registered when this module is imported.
register("inspection", render_inspection)
register("transcript", render_transcript)
register("notebook", notebook_html)
register("format", lambda path: format_for(path).name)  # a report file's format, checked before any work
register("draws", lambda path: "trace" if format_for(path).needs_inspection else "")  # a run gathers plots up front
