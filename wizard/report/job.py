"""A job of many ranks as a report file (``trace inspect --engine``/``--summaries`` with ``--markdown`` or
``--report``): the headline, the job's own checks, the per-check fold (ranks at each status), the worst ranks and
the failed ones, from ``JobInspection`` alone. As long at 10,000 ranks as at 10: aggregates and the outliers
(``reduce.WORST`` rows, ``reduce.NAMED`` failures), never a row or a picture per rank. Every text from a trace or
a summary is escaped (``wizard.untrusted``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.formatting import plural
from wizard.untrusted import html_text, markdown_code, markdown_prose

if TYPE_CHECKING:
    from wizard.jobs.reduce import JobInspection, RankRow

TITLE = "warpwizard job report"


def _headline(job: JobInspection) -> str:
    return (
        f"{plural(job.ranks, 'rank')}, {len(job.summaries)} summarised ({job.reused} reused), "
        f"{len(job.failures)} failed; engine {job.engine}; health {job.health_status}"
    )


def _fold_cells(counts: dict[str, int]) -> str:
    return ", ".join(f"{status} {n}" for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _problems(row: RankRow) -> str:
    return ", ".join(f"{check} {status}" for check, status in row.problems.items())


def _failed_rows(job: JobInspection) -> list[tuple[str, str, str]]:
    from wizard.jobs.reduce import NAMED

    return [(f.path, f.kind, f.reason) for f in job.failures[:NAMED]]


def job_markdown(job: JobInspection) -> str:
    """The job as Markdown (a bug report, a CI summary)."""
    lines = [f"# {TITLE}", "", markdown_prose(_headline(job)), ""]
    if job.job_health:
        lines += ["## The job's checks", "", "| status | check | found |", "|---|---|---|"]
        lines += [
            f"| {c.status} | {markdown_code(c.check, table=True)} | {markdown_prose(c.summary)} |"
            for c in job.job_health
        ]
        lines.append("")
    if job.folded:
        lines += ["## Checks over the ranks", "", "| check | ranks at each status |", "|---|---|"]
        lines += [f"| {markdown_code(check, table=True)} | {_fold_cells(c)} |" for check, c in job.folded.items()]
        lines.append("")
    worst = [row for row in job.worst() if row.problems]
    if worst:
        lines += [f"## The worst ranks (the first {len(worst)})", "", "| rank | status | checks |", "|---|---|---|"]
        lines += [f"| {markdown_prose(r.label)} | {r.status} | {markdown_prose(_problems(r))} |" for r in worst]
        lines.append("")
    if job.failures:
        lines += [f"## Failed ranks ({len(job.failures)}; the job was judged without them)", ""]
        lines += ["| file | kind | why |", "|---|---|---|"]
        lines += [
            f"| {markdown_code(path, table=True)} | {kind} | {markdown_prose(why)} |"
            for path, kind, why in _failed_rows(job)
        ]
        lines.append("")
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]]) -> str:
    """A static table; every cell is already escaped by its caller. A status or a check id is one word: its cell
    does not break (the page's ``td.status``/``code.check`` rule)."""
    th = "".join(f"<th>{h}</th>" for h in head)
    cls = ["" if h not in ("status", "kind") else ' class="status"' for h in head]
    wrap = ['<code class="check">{}</code>' if h == "check" else "{}" for h in head]
    body = "".join(
        "<tr>" + "".join(f"<td{c}>{w.format(cell)}</td>" for c, w, cell in zip(cls, wrap, row, strict=True)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _html_sections(job: JobInspection) -> list[str]:
    out = [f'<p class="headline">{html_text(_headline(job))}</p>']
    if job.job_health:
        rows = [[html_text(c.status, 20), html_text(c.check, 80), html_text(c.summary)] for c in job.job_health]
        out += ["<h2>The job's checks</h2>", _table(["status", "check", "found"], rows)]
    if job.folded:
        rows = [[html_text(check, 80), html_text(_fold_cells(c))] for check, c in job.folded.items()]
        out += ["<h2>Checks over the ranks</h2>", _table(["check", "ranks at each status"], rows)]
    worst = [row for row in job.worst() if row.problems]
    if worst:
        rows = [[html_text(r.label, 200), html_text(r.status, 20), html_text(_problems(r))] for r in worst]
        out += [f"<h2>The worst ranks (the first {len(worst)})</h2>", _table(["rank", "status", "checks"], rows)]
    if job.failures:
        rows = [[html_text(p, 300), html_text(k, 40), html_text(w)] for p, k, w in _failed_rows(job)]
        out += [f"<h2>Failed ranks ({len(job.failures)})</h2>", _table(["file", "kind", "why"], rows)]
    return out


def job_html(job: JobInspection) -> str:
    """The job as one page: static tables (no script, no pictures: a picture per rank is what it must not draw)."""
    from wizard.report.html import page

    return page(TITLE, _html_sections(job), [])
