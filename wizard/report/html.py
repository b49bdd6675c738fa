"""One self-contained HTML page: a trace inspection or a run, with plots, for a bug report or a chat.

Everything is inline (styles, scripts, plotly.js's basic bundle compressed: 0.6 MB a page); a
Content-Security-Policy lets the page fetch nothing at all. Every text from a trace, playbook or answers
file is escaped through ``untrusted.html_text`` before it reaches the page; the findings table is rendered
here, so it reads without JavaScript; the one static script sorts and filters it and draws the plots from a JSON payload
whose ``<``, ``>`` and ``&`` are escaped, so no data can close the script element. No event handler is
built from data.
"""

from __future__ import annotations

import datetime as _dt
import shlex
from pathlib import Path
from typing import Any

from wizard.engine.transcript import ENV_PROBE, Transcript
from wizard.formatting import plural
from wizard.profiler import split_trace_name
from wizard.report.view import (
    NAME_LIMIT,
    FindingRow,
    InspectionView,
    SummaryTableView,
    inspection_view,
    merged_rows,
    per_rank_counts,
    places,
    summary_table_views,
)
from wizard.trace.health.checks import SPEC
from wizard.trace.health.spec import HEALTH_LABEL, RANK
from wizard.trace.inspection.results import Inspection
from wizard.trace.metrics.mechanisms import BY_ID, is_wrong
from wizard.trace.read.formats import BY_ID as FORMATS_BY_ID
from wizard.trace.read.formats import FORMATS, NSYS_SQLITE
from wizard.untrusted import html_prose, html_text, script_json

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)

STYLE = """
:root { --fg:#1b1f24; --muted:#57606a; --line:#d0d7de; --bg:#ffffff; --card:#f6f8fa; --bad:#cf222e; --ok:#1a7f37;
        --info:#0969da; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; padding: 16px; max-width: 1200px; overflow-wrap: anywhere; }
h1 { font-size: 1.5em; margin: 0 0 4px; } h2 { font-size: 1.2em; margin: 28px 0 8px; }
h3 { font-size: 1em; margin: 16px 0 4px; }
.meta, .note { color: var(--muted); font-size: 0.9em; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.verdict.bad { border-left: 6px solid var(--bad); } .verdict.good { border-left: 6px solid var(--ok); }
.verdict.info { border-left: 6px solid var(--info); } #ww-headline { margin: 8px 0 12px; font-size: 1.05em; }
section.card { margin: 12px 0; }
.badge { display: inline-block; border-radius: 10px; padding: 1px 8px; margin: 2px 4px 2px 0;
         background: #fff; border: 1px solid var(--line); font-size: 0.85em; }
code, .kernel { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.85em; }
.kernel { word-break: break-all; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: var(--card); position: sticky; top: 0; white-space: nowrap; }
#ww-findings th { cursor: pointer; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
#ww-findings td.mech { width: 3em; } #ww-findings td.kernel:not(.frame) { width: 22%; }
#ww-findings td.evidence { width: 28%; } #ww-findings td.where { width: 10%; min-width: 8em; }
#ww-findings td.num { width: 4em; } .cells span { white-space: nowrap; }
code.check, td.status { white-space: nowrap; }
input[type=search] { width: 100%; max-width: 420px; padding: 6px 8px; margin: 4px 0 8px;
                     border: 1px solid var(--line); border-radius: 6px; font: inherit; }
figure.picture { margin: 8px 0 24px; } figure.picture h3 { font-weight: 600; }
.plot { width: 100%; min-height: 160px; } .plot[hidden], .static[hidden] { display: none; }
p.describe { margin: 2px 0 6px; } .static table { font-size: 0.85em; max-width: 900px; }
ul.key { list-style: none; padding: 0; margin: 4px 0; font-size: 0.85em; }
ul.key li { display: inline-block; margin: 2px 14px 2px 0; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 50%;
          background: var(--c); vertical-align: baseline; }
.swatch.square { border-radius: 1px; } .swatch.diamond { border-radius: 1px; transform: rotate(45deg) scale(0.85); }
.swatch.line { height: 0; width: 16px; border-radius: 0; border-top: 2px dotted var(--c); background: none; }
pre.command { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); padding: 6px 10px;
              border-radius: 6px; margin: 4px 0 12px; }
ol.steps li { margin: 6px 0; } .status { font-weight: 600; }
.status.fail, .status.error { color: var(--bad); } .status.pass, .status.ok { color: var(--ok); }
.status.warning { color: #9a6700; }
.status.info, .status.not_applicable { color: var(--muted); }
dl.env { display: grid; grid-template-columns: minmax(0, max-content) minmax(0, 1fr); gap: 2px 12px; }
dl.env dt { color: var(--muted); } dl.env dd { margin: 0; word-break: break-all; }
@media (max-width: 1000px) {
  /* a table is a stack of cards: each row a card, each cell a labelled line (the header sorts, as chips) */
  .reflow table, .reflow tbody, .reflow tr, .reflow td { display: block; width: auto !important; }
  .reflow thead tr { display: flex; flex-wrap: wrap; gap: 4px; margin-bottom: 4px; }
  .reflow th { position: static; border: 1px solid var(--line); border-radius: 12px; padding: 1px 8px;
               font-size: 0.85em; font-weight: 500; }
  .reflow.health thead { display: none; }
  .reflow tbody tr { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; padding: 6px 10px; }
  .reflow td { border: 0; padding: 2px 0; text-align: left; }
  .reflow td:empty { display: none; }
  .reflow.static thead { display: none; } .reflow.static tbody tr { padding: 2px 8px; margin: 4px 0; }
  .reflow.static td { display: inline-block; margin-right: 12px; }
  .reflow td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-size: 0.85em;
                                   font-family: system-ui, sans-serif; word-break: normal; }
  .reflow td.cells::before, .reflow td.evidence::before { display: block; }
}
@media (max-width: 600px) { body { padding: 10px; font-size: 14px; } h1 { font-size: 1.25em; }
  dl.env { grid-template-columns: minmax(0, 1fr); } dl.env dd { margin-bottom: 4px; } }
"""

# Static: it reads the payload and the table, never builds markup from data (textContent only).
SCRIPT = """
(function () {
  "use strict";
  var payload = JSON.parse(document.getElementById("ww-data").textContent);
  var table = document.getElementById("ww-findings");
  if (table) {
    var body = table.tBodies[0];
    var filter = document.getElementById("ww-filter");
    filter.addEventListener("input", function () {
      var q = filter.value.toLowerCase();
      Array.prototype.forEach.call(body.rows, function (row) {
        row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-sort") || a.cells[col].textContent;
          var y = b.cells[col].getAttribute("data-sort") || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y);
          var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
          return asc ? order : -order;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  if (!payload.figures.length) { return; }
  var packed = document.getElementById("ww-plotly").textContent.trim();
  var bytes = Uint8Array.from(atob(packed), function (c) { return c.charCodeAt(0); });
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (code) {
    var script = document.createElement("script");
    script.src = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    script.addEventListener("load", function () {
      payload.figures.forEach(function (figure, i) {
        var div = document.getElementById("ww-plot-" + i);
        var table = document.getElementById("ww-static-" + i);  // the data as a table, for a page without scripts
        div.hidden = false;
        if (table) { table.hidden = true; }
        figure.layout.title = { text: "" };  // the page's heading above says it, and wraps
        window.Plotly.newPlot(div, figure.data, figure.layout, { responsive: true, displaylogo: false });
      });
      document.body.setAttribute("data-plots", "drawn");
    });
    document.head.appendChild(script);
  });
})();
"""


def page(title: str, body: list[str], figures: list[str]) -> str:
    """The page around ``body``; ``figures`` are plotly's JSON, drawn into ``#ww-plot-N``."""
    from wizard import __version__
    from wizard.report.plots import plotly_bundle

    payload = '{"figures": [' + ",".join(figures) + "]}"
    bundle = plotly_bundle() if figures else ""
    made = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html_text(title, 200)}</title>",
            f"<style>{STYLE}</style></head><body>",
            f"<h1>{html_text(title, 200)}</h1>",
            f'<p class="meta">warpwizard {html_text(__version__, 40)}, {made}</p>',
            *body,
            f'<script type="application/json" id="ww-data">{script_json(payload)}</script>',
            f'<script type="text/plain" id="ww-plotly">{bundle}</script>',
            f"<script>{SCRIPT}</script>",
            "</body></html>",
        ]
    )


def _badges(mechanisms: dict[str, int]) -> str:
    out = []
    for m, n in sorted(mechanisms.items()):
        known = BY_ID.get(m)
        out.append(
            f'<span class="badge" title="{html_text(known.summary if known else m, 200)}">'
            f"<b>{html_text(m, 8)}</b> × {n}</span>"
        )
    return "".join(out) or '<span class="badge">none</span>'


CARD = {"error": "bad", "warning": "bad", "info": "info", "ok": "good", "not_applicable": "good"}  # a status's card


def mechanism_status(mechanisms: dict[str, int]) -> str:
    """The status the kernels' wrong values earn: each mechanism's own verdict (the impossible-metrics check's:
    E, harmless, is info), a mechanism no one knows a warning; ``ok`` with no wrong value (F is by design)."""
    found = [BY_ID[m].verdict if m in BY_ID else "warning" for m in mechanisms if is_wrong(m)]
    return max(found, key=RANK.__getitem__, default="ok")


def _verdict(view: InspectionView) -> str:
    status = mechanism_status(view.mechanisms)
    facts = [
        f"<div><b>{html_text(view.verdict, 600)}</b></div>",
        f"<div>mechanisms found: {_badges(view.mechanisms)}</div>",
        f"<div>{view.kernels_checked} of {view.kernels} kernel launches checked in {plural(view.files, 'file')}</div>",
        f"<div>devices: {html_text(', '.join(view.devices) or 'unknown', 600)}</div>",
    ]
    if len(view.ranks) > 1:  # "ranks: 0" said nothing of a single file
        facts.append(f"<div>ranks: {html_text(', '.join(map(str, view.ranks)), 400)}</div>")
    card = f'class="card verdict {CARD[status]}" id="ww-verdict" data-status="{status}"'
    return f"<section {card}>{''.join(facts)}</section>"


def _cell(text: str, limit: int, label: str, cls: str = "", sort: str | None = None) -> str:
    attrs = f' class="{cls}"' if cls else ""
    if sort is not None:
        attrs += f' data-sort="{html_text(sort, 40)}"'
    return f'<td data-label="{label}"{attrs}>{html_text(text, limit)}</td>'


def _row(row: FindingRow, multi: bool) -> str:
    values = "".join(
        f"<div><span>{html_text(c.metric, 60)}:</span> <span>{html_text(c.said(), 90)}</span></div>" for c in row.cells
    )
    return (
        "<tr>"
        + (_cell(row.where, 200, "where", "where") if multi else "")
        + f'<td data-label="mech" class="mech" title="{html_text(row.title, 200)}">'
        + f"<b>{html_text(row.mechanism, 8)}</b></td>"
        + _cell(row.kernel, NAME_LIMIT, "kernel", "kernel")
        + _cell(str(row.count), 20, "launches", "num", str(row.count))
        + f'<td data-label="reported → true" class="cells">{values}</td>'
        + _cell(row.launched_by, 1000, "launched by", "op")
        + _cell(row.python_frame or "", 400, "Python frame", "kernel frame")
        + _cell(row.evidence, 4000, "evidence", "evidence")
        + "</tr>"
    )


def findings_table(view: InspectionView) -> str:
    """The findings as an HTML table (the page's, and a notebook cell's): every text escaped."""
    multi = view.files > 1
    heads = (["where"] if multi else []) + [
        "mech",
        "kernel",
        "launches",
        "reported → true",
        "launched by",
        "Python frame",
        "evidence",
    ]
    rows = "".join(_row(r, multi) for r in (merged_rows(view.rows) if multi else view.rows))
    more = (
        f'<p class="note">{plural(view.rows_omitted, "more finding group")}, not listed '
        "(the JSON report has them all)</p>"
        if view.rows_omitted
        else ""
    )
    return (
        '<div class="scroll reflow"><table id="ww-findings"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in heads)
        + f"</tr></thead><tbody>{rows}</tbody></table></div>{more}"
    )


def _notes(view: InspectionView) -> str:
    if not view.notes:
        return ""
    items = "".join(
        f"<li>{html_text(note, 1200)}"
        + (f' <span class="note">({html_text(path.rsplit("/", 1)[-1], 120)})</span>' if view.files > 1 else "")
        + "</li>"
        for path, note in view.notes[:200]
    )
    return f"<h2>Notes</h2><ul>{items}</ul>"


def _health_rows(rows: list[tuple[str, Any]], several: bool) -> str:
    out = []
    for label, c in rows:
        meaning = f'<div class="note">{html_text(c.meaning, 600)}</div>' if c.problem and c.meaning else ""
        where = f'<td data-label="trace">{html_text(label, 80)}</td>' if several else ""
        playbook = f"<code>{html_text(f'warpwizard run {c.playbook}', 120)}</code>" if c.problem and c.playbook else ""
        out.append(
            f'<tr class="health {c.status}">{where}'
            f'<td data-label="status" class="status {c.status}">{HEALTH_LABEL[c.status]}</td>'
            f'<td data-label="check"><code class="check">{html_text(c.check, 40)}</code></td>'
            f'<td data-label="count" class="num">{c.count}</td>'
            f'<td data-label="what it found">{html_text(c.found, 600)}{meaning}</td>'
            f'<td data-label="continue with">{playbook}</td></tr>'
        )
    return "".join(out)


def _agrees(view: SummaryTableView) -> bool:
    """A trace's key_averages() table agrees with its GPU events counted once: no row marked, the check no
    problem (its info, a Self CUDA total above the GPU's busy time, is said in the folded line)."""
    return RANK[view.status] < RANK["warning"] and not any(row[7] for row in view.rows)


def summary_tables_disagree(inspection: Inspection) -> bool:
    """Whether any trace's key_averages() table misleads: then the page shows the tables early, and open."""
    return not all(_agrees(view) for view in summary_table_views(inspection))


def _summary_table(view: SummaryTableView) -> str:
    totals = "".join(f"<li>{html_text(what, 200)}: {us} µs</li>" for what, us in view.totals)
    body = "".join(
        f'<tr class="{"health warning" if off else ""}">'
        f'<td data-label="row"><code>{html_text(name, 300)}</code></td>'
        f'<td data-label="kind">{kind}</td><td data-label="calls" class="num">{calls}</td>'
        f'<td data-label="Self CUDA reported" class="num">{self_r}</td>'
        f'<td data-label="counted once" class="num">{self_t}</td>'
        f'<td data-label="CUDA total reported" class="num">{total_r}</td>'
        f'<td data-label="counted once" class="num">{total_t}</td></tr>'
        for name, kind, calls, self_r, self_t, total_r, total_t, off in view.rows
    )
    return (
        f"<ul>{totals}</ul>"
        '<div class="scroll reflow"><table><thead><tr><th>row</th><th>kind</th><th>calls</th>'
        "<th>Self CUDA reported (µs)</th><th>counted once</th><th>CUDA total reported (µs)</th>"
        f"<th>counted once</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def _misleads(view: SummaryTableView) -> str:
    off = sum(1 for row in view.rows if row[7])
    if off:
        return f"{plural(off, 'row')} {'misleads' if off == 1 else 'mislead'} by more than the check's margin"
    return (
        "its Self CUDA total exceeds the GPU's busy time" if view.status == "info" else f"the check says {view.status}"
    )


def summary_table_section(inspection: Inspection) -> str:
    """key_averages()' table as PyTorch reports it beside each GPU event counted once (the summary-table check);
    the rows that mislead by the check's margin marked. A table that misleads is open, each on its own; the
    tables that agree are folded together into one closed line (eight ranks' agreeing tables were the first
    12,000 px of a phone's page)."""
    views = summary_table_views(inspection)
    if not views:
        return ""
    names = {r.path: r.label for r in inspection.reports}
    off = [view for view in views if not _agrees(view)]
    fine = [view for view in views if _agrees(view)]
    parts = [
        f'<details class="key-averages" data-agree="no" open><summary><b>{html_text(view.path, 200)}</b> '
        f"({view.status}): {html_text(_misleads(view), 200)}</summary>{_summary_table(view)}</details>"
        for view in off
    ]
    if fine:
        which = places([names.get(view.path, view.path) for view in fine])
        said = (
            f"{plural(len(fine), 'table')} agree with"
            if len(fine) > 1
            else f"{'The' if not off else 'The other'} table agrees with"
        )
        over = [names.get(view.path, view.path) for view in fine if view.status == "info"]
        also = f"; the Self CUDA total exceeds the GPU's busy time (info) on {places(over)}" if over else ""
        parts.append(
            f'<details class="key-averages" data-agree="yes"><summary>{said} every GPU event counted once, within '
            f"the check's margin: {html_text(which + also, 800)}</summary>"
            + "".join(f"<h3>{html_text(view.path, 200)} ({view.status})</h3>{_summary_table(view)}" for view in fine)
            + "</details>"
        )
    return (
        '<section id="ww-summary-table"><h2>key_averages(), reported and counted once</h2>'
        "<p>PyTorch's summary table (<code>prof.key_averages()</code>) as it reports each row, beside the same row "
        "with every GPU event counted once; a row that misleads by more than the check's margin is marked.</p>"
        + "".join(parts)
        + "</section>"
    )


def health_section(inspection: Inspection) -> str:
    """The health check first: the problems of every trace as a table, worst first, each with what it means
    and where a playbook continues; the other checks folded below; the picture of where the problems lie
    is the page's first plot."""
    rows = inspection.health_rows()
    if not rows:
        return ""
    problems = [row for row in rows if row[1].problem]
    rest = [row for row in rows if not row[1].problem]
    several = len(inspection.reports) > 1
    head = ("<th>trace</th>" if several else "") + (
        "<th>status</th><th>check</th><th>count</th><th>what it found</th><th>continue with</th>"
    )

    def table(chosen: list[tuple[str, Any]], ident: str) -> str:
        return (
            f'<div class="scroll reflow health"><table id="{ident}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{_health_rows(chosen, several)}</tbody></table></div>"
        )

    folded = (
        f"<details><summary>{plural(len(rest), 'more check')}: info, ok or not applicable</summary>"
        f"{table(rest, 'ww-health-rest')}</details>"
        if rest
        else ""
    )
    return (
        f'<section id="ww-health"><h2>{html_text(inspection.health_headline, 80)}</h2>'
        f"{table(problems, 'ww-health-table') if problems else ''}{folded}</section>"
    )


def _key(key: list[tuple[str, str, str]]) -> str:
    items = "".join(
        f'<li><span class="swatch {html_text(symbol, 20)}" style="--c:{html_text(colour, 20)}"></span>'
        f"{html_text(label, 400)}</li>"
        for colour, symbol, label in key
    )
    return f'<ul class="key">{items}</ul>' if items else ""


def _static(picture: Any, i: int) -> str:
    """A picture's data as a table, shown where no script runs (a mail client, a print preview, a screenshot
    taken before plotly drew); the script hides it once the plot is drawn. Plain HTML: it needs nothing."""
    static = picture.static
    if static is None or not static.rows:
        return ""
    head = "".join(f"<th>{html_text(h, 80)}</th>" for h in static.header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td data-label="{html_text(h, 80)}">{html_text(c, 200)}</td>'
            for h, c in zip(static.header, row, strict=True)
        )
        + "</tr>"
        for row in static.rows
    )
    more = f'<p class="note">{html_text(static.more, 200)}</p>' if static.more else ""
    return (
        f'<div class="static reflow" id="ww-static-{i}"><p class="note">The picture\'s data (its plot is drawn by '
        f"the page's script):</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}</div>"
    )


def pictures_html(pictures: list[Any]) -> str:
    """Each picture's box: its title, what it shows in words, the plot the script draws (and until then, or
    where no script runs, its data as a table), what it could not draw and why, its key. The words are the
    page's own HTML (escaped), so they wrap at any width and read without JavaScript."""
    out = []
    for i, picture in enumerate(pictures):
        notes = "".join(f'<p class="note">{html_text(n, 600)}</p>' for n in picture.notes)
        words = f'<p class="describe">{html_text(picture.description, 2000)}</p>' if picture.description else ""
        out.append(
            f'<figure class="picture"><h3>{html_text(picture.title, 400)}</h3>{words}'
            f'<div class="plot" id="ww-plot-{i}" hidden></div>{_static(picture, i)}{notes}{_key(picture.key)}</figure>'
        )
    return "".join(out)


def perfetto_hint(inspection: Inspection) -> str:
    """How to look at the trace itself: the path, where to open it, and, when the health check found kernels
    a viewer hides, the ``trace fix --split-overlaps`` command and the lanes it adds. Per format (issue 45 item
    11): Perfetto opens Chrome JSON and .pftrace files, not an Nsight Systems SQLite export, and ``trace fix``
    rewrites Chrome JSON only."""
    databases = {f.id for f in FORMATS if f.container == "sqlite"}  # Perfetto opens none of them
    reports = [r for r in inspection.reports if r.format not in databases]
    exports = [r for r in inspection.reports if r.format == NSYS_SQLITE.id]
    others = [r for r in inspection.reports if r.format in databases and r.format != NSYS_SQLITE.id]
    if not inspection.reports:
        return ""
    nsys = (
        "<p>Perfetto does not open an Nsight Systems SQLite export"
        + (f" (<code>{html_text(exports[0].path, 400)}</code>)" if len(exports) == 1 else "")
        + ": look at that run in Nsight Systems itself, on the <code>.nsys-rep</code> it was exported from.</p>"
        if exports
        else ""
    ) + "".join(
        f"<p>Perfetto does not open {html_text(_format_named(r.format), 80)} (<code>{html_text(r.path, 400)}</code>):"
        " look at that run in the profiler's own tools.</p>"
        for r in others[:20]
    )
    if not reports:
        where = "Nsight Systems" if not others else "its profiler's own tools"
        return f'<section id="ww-perfetto"><h2>Open the run in {where}</h2>{nsys}</section>'
    paths = "".join(f"<li><code>{html_text(r.path, 400)}</code></li>" for r in reports[:20])
    more = f'<p class="note">and {plural(len(reports) - 20, "more trace")}</p>' if len(reports) > 20 else ""
    fixes = [fix for r in reports if _rewritable(r) for c in r.health_result.checks if (fix := _fix_html(r, c))]
    return (
        '<section id="ww-perfetto"><h2>Open the trace in Perfetto</h2>'
        "<p>Go to <code>ui.perfetto.dev</code>, choose <b>Open trace file</b> and pick "
        + ("this file" if len(reports) == 1 else "one of these files")
        + " (a .gz file opens as it is; <code>chrome://tracing</code> opens Chrome JSON too):</p>"
        + f"<ul>{paths}</ul>{more}{nsys}{''.join(fixes[:10])}</section>"
    )


def _format_named(format_id: str) -> str:
    return next((f.name_with_article for f in FORMATS if f.id == format_id), "this database")


def _rewritable(report: Any) -> bool:
    """Whether ``trace fix`` writes a copy of this report's format (Chrome trace JSON only)."""
    known = FORMATS_BY_ID.get(report.format)
    return known is None or known.rewritable


def _fix_html(report: Any, check: Any) -> str:
    """The ``trace fix`` a check declares (``CheckSpec.fix``) for what it found in one trace (info too): what it
    found where, and the command with the trace's own path."""
    declared = SPEC.get(check.check)
    fix = declared.fix if declared is not None else None
    if fix is None or not check.count:
        return ""
    places = sorted({e.stream for e in check.examples if e.stream is not None}, key=str)
    affected = max(int(check.details.get(fix.rows) or 0), len(places))
    where = ", ".join(f"{fix.place} {html_text(p, 20)}" for p in places[:5]) + (
        f" and {plural(affected - len(places[:5]), f'more {fix.place}')}" if affected > len(places[:5]) else ""
    )
    row = f"{fix.place} {html_text(places[0], 20)}" if places else f"{fix.place} N"
    source = Path(report.path)
    out = source.with_name(f"{split_trace_name(source.name)[0] or 'trace'}-{fix.output}.json")
    target = f"./{out}" if str(out).startswith("-") else str(out)  # never read as an option
    command = shlex.join(["warpwizard", "trace", "fix", fix.option, report.path, target])
    n = check.count
    return (
        f"<p>{plural(n, fix.unit)} of <code>{html_text(report.label, 200)}</code> "
        f"{html_text(fix.found[n != 1], 400)}{f' on {where}' if where else ''} {html_text(fix.means[n != 1], 1000)} "
        f"<code>{row} {html_text(fix.row, 200)}</code>{html_text(fix.rest, 400)}</p>"
        f'<pre class="command"><code>{html_text(command, 1000)}</code></pre>'
    )


Finding = tuple[str, str, str, str]  # (status, what, where, summary): one finding the page shows


def page_findings(inspection: Inspection, view: InspectionView) -> list[Finding]:
    """Every finding the page shows, worst first: each health check at info or worse (the job's too), and the
    kernels' wrong values where they are worse than every health verdict (the health check that says them was
    skipped), so the headline is never milder than the kernels' card."""
    found = [
        (c.status, c.check, label, c.summary) for label, c in inspection.health_rows() if RANK[c.status] >= RANK["info"]
    ]
    status = mechanism_status(view.mechanisms)
    if RANK[status] >= RANK["info"] and RANK[status] > max((RANK[f[0]] for f in found), default=-1):
        found.append((status, "wrong values", "", view.verdict))
    return sorted(found, key=lambda f: -RANK[f[0]])


def headline(found: list[Finding], several: bool) -> tuple[str, str]:
    """The page's first words and their status: the worst finding on the page, so a green "no problem found"
    never stands above a red box. Problems are counted as the health section's heading counts them."""
    problems = [f for f in found if RANK[f[0]] >= RANK["warning"]]
    if problems:
        status, what, where, summary = problems[0]
        at = f", {where}" if several and where else ""
        return status, f"{plural(len(problems), 'problem')} found; the worst: {what} ({status}{at}): {summary}"
    if found:
        seen: dict[str, set[str]] = {}
        for _, what, label, _ in found:
            seen.setdefault(what, set()).add(label)
        named = ", ".join(
            f"{what} ({places(sorted(labels))})" if several and any(labels) else what for what, labels in seen.items()
        )
        first = found[0]
        return "info", f"No problem found; for information only: {named}. {first[1]}: {first[3]}"
    return "ok", "No problem found: every check passed and no value is wrong"


def headline_html(inspection: Inspection, view: InspectionView) -> str:
    status, words = headline(page_findings(inspection, view), len(inspection.reports) > 1)
    return (
        f'<section class="card verdict {CARD[status]}" id="ww-headline" data-status="{status}">'
        f"<b>{html_text(words, 1200)}</b></section>"
    )


def _inspection_sections(inspection: Inspection, view: InspectionView) -> tuple[list[str], list[str]]:
    from wizard.report.plots import figures

    pictures = figures(inspection, per_rank_counts(inspection))
    body = [
        "<h2>Pictures</h2><p>Each picture is drawn from the whole trace; hover over a marker for what it counts, "
        "drag to zoom in, and double-click to zoom out. The key below each picture names its colours; where no "
        "script runs (a mail client, a print), each picture's data is a table instead.</p>"
        if pictures
        else "",
        f'<div id="ww-plots">{pictures_html(pictures)}</div>',
        "<h2>Findings</h2>",
        '<input type="search" id="ww-filter" placeholder="filter: kernel, op, mechanism, evidence" '
        'aria-label="filter the findings">',
        findings_table(view),
        _notes(view),
        perfetto_hint(inspection),
    ]
    return body, [picture.figure for picture in pictures]


def inspection_html(inspection: Inspection) -> str:
    """The page for ``warpwizard trace inspect --report FILE.html`` and ``Inspection.to_html()``: the worst
    finding first, then the health check, the kernels' verdict, the pictures and the findings; the key_averages()
    tables right after the health check where one misleads, else folded at the end."""
    view = inspection_view(inspection)
    body, plots = _inspection_sections(inspection, view)
    tables = summary_table_section(inspection)
    early = summary_tables_disagree(inspection)
    sections = [
        headline_html(inspection, view),
        health_section(inspection),
        tables if early else "",
        _verdict(view),
        *body[:-2],
        "" if early else tables,
        *body[-2:],
    ]
    return page("warpwizard trace inspection", sections, plots)


def _steps(t: Transcript) -> str:
    from wizard.report.markdown import by_playbook

    groups = by_playbook(t)
    if len(groups) == 1:
        return f"<h2>Path through the playbook</h2>{_path(groups[0][1], 'ww-steps')}"
    titles = {link.playbook["id"]: link.playbook.get("title", "") for link in t.chain}
    return "".join(
        f"<h2>Path through <code>{html_text(pb, 80)}</code>: {html_text(titles.get(pb, ''), 200)}</h2>"
        + _path(entries, f"ww-steps-{i}")
        for i, (pb, entries) in enumerate(groups, 1)
    )


def _path(entries: list[Any], ident: str) -> str:
    items = []
    for e in entries:
        if e.kind == "question":
            text = (
                f"<b>{html_text(e.prompt or e.node, 600)}</b> → {html_text(e.answer, 400)} "
                f'<span class="note">({html_text(e.answer_origin or "", 40)})</span>'
            )
        elif e.kind == "probe":
            evidence = "".join(f"<li>warning: {html_text(line, 2000)}</li>" for line in (e.warnings or [])[:20])
            evidence += "".join(f"<li>{html_text(line, 2000)}</li>" for line in (e.evidence or [])[:20])
            text = (
                f'<code>{html_text(e.node, 80)}</code> <span class="status {html_text(e.status or "", 20)}">'
                f"{html_text(e.status or '', 20)}</span> in {e.duration_s:.2f} s: {html_text(e.summary or '', 1000)}"
                + (f"<ul>{evidence}</ul>" if evidence else "")
            )
        elif e.kind == "decision":
            text = f"<code>{html_text(e.node, 80)}</code>: because {html_text(e.summary or '', 600)}"
        else:
            text = f"<code>{html_text(e.node, 80)}</code>: diagnosis"
        step = f'<span class="note">[{html_text(e.step, 40)}]</span> ' if e.step else ""
        branch = f' <span class="note">→ {html_text(e.next, 80)}</span>' if e.next else ""
        if e.carried_from:
            branch += f' <span class="note">(from {html_text(e.carried_from, 120)})</span>'
        items.append(f"<li>{step}{text}{branch}</li>")
    return f'<ol class="steps" id="{ident}">{"".join(items)}</ol>'


def _diagnosis(t: Transcript, trace: tuple[str, str] | None = None) -> str:
    """The run's headline: its diagnosis, and, where the run read a trace, the worst finding in it, the card
    coloured by the worse of the two (a green diagnosis never stands above a red finding)."""
    c = t.conclusion
    if c is None:
        card = 'class="card verdict bad" id="ww-run-verdict" data-status="error"'
        return f"<section {card}><b>No diagnosis reached</b></section>"
    evidence = "".join(f"<li>{html_prose(e, 4000)}</li>" for e in c.evidence)
    fixes = "".join(f"<li>{html_prose(f, 4000)}</li>" for f in c.fix)
    links = "".join(f"<li><code>{html_text(link, 400)}</code></li>" for link in c.links)
    status = c.severity if c.severity in RANK else "info"
    found = ""
    if trace is not None:
        status = max(status, trace[0], key=RANK.__getitem__)
        found = f'<p id="ww-run-trace-headline"><b>In the trace it read:</b> {html_text(trace[1], 1200)}</p>'
    return (
        f'<section class="card verdict {CARD[status]}" id="ww-run-verdict" data-status="{status}">'
        f"<div><b>Diagnosis: <code>{html_text(c.diagnosis, 120)}</code> ({html_text(c.severity, 20)})</b></div>"
        f"{found}<p>{html_prose(c.summary, 4000)}</p>"
        + (f"<h3>Evidence</h3><ul>{evidence}</ul>" if evidence else "")
        + (f"<h3>What to do</h3><ol>{fixes}</ol>" if fixes else "")
        + (f"<h3>Links</h3><ul>{links}</ul>" if links else "")
        + "</section>"
    )


def _environment(t: Transcript) -> str:
    from wizard.report.view import environment_rows

    facts: dict[str, Any] = {**t.host, **{f"warpwizard's {k}": v for k, v in t.tool.items()}}
    probed = False
    for e in t.entries:
        if e.probe == ENV_PROBE and e.facts:  # the env probe's machine facts
            facts.update(e.facts)
            probed = True
    rows = "".join(f"<dt>{html_text(k, 80)}</dt><dd>{html_text(v, 400)}</dd>" for k, v in environment_rows(facts)[:60])
    note = (
        ""
        if probed
        else '<p class="note">This run read a trace and probed nothing here: the profiled GPUs are the '
        "trace's (above); <code>warpwizard env</code> on the profiled machine gives its torch, CUDA and driver.</p>"
    )
    return f'<h2>Machine</h2><dl class="env" id="ww-env">{rows}</dl>{note}'


def transcript_html(t: Transcript, inspection: Inspection | None = None) -> str:
    """The page for ``warpwizard run --report FILE.html`` and ``Transcript.to_html()``: the diagnosis first,
    then the inspected trace's pictures and findings (when the run read one), the path taken, the machine."""
    title = f"warpwizard: {t.playbook.get('title', '')}"
    body = [_diagnosis(t)]
    plots: list[str] = []
    if inspection is not None:
        view = inspection_view(inspection)
        body = [_diagnosis(t, headline(page_findings(inspection, view), len(inspection.reports) > 1))]
        sections, plots = _inspection_sections(inspection, view)
        read = ", ".join(f"<code>{html_text(r.label, 200)}</code>" for r in inspection.reports[:5])
        more = f" and {plural(len(inspection.reports) - 5, 'more trace')}" if len(inspection.reports) > 5 else ""
        body += [
            "<h2>The trace</h2>",
            f"<p>What the trace doctor found in the trace this run read ({read}{more}): its health first, then "
            "the kernels' metrics.</p>",
            health_section(inspection),
            _verdict(view),
            *sections,
        ]
    body += [_steps(t), _environment(t)]
    return page(title, body, plots)
