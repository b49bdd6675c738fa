"""``warpwizard diff A B --report page.html``: the two profiles on one page, for a bug report or a review.

The verdict and the factors first (a comparison that cannot be made shows no change, as at the terminal), then the
kernels and ops that changed, each drawn as two bars, BEFORE over AFTER, on the row's own scale, so a slowdown reads
at a glance and without a script: the bars are plain HTML (a width per bar), the page fetches nothing, and every
text from a trace goes through ``untrusted.html_text`` (the page shell is wizard/report/html.py's).
"""

from __future__ import annotations

from typing import Any

from wizard.diff import KernelChange, OpChange, ProfileDiff, RankChange, launch_shape
from wizard.formatting import plural
from wizard.report.html import page
from wizard.untrusted import html_text

ROWS = 25  # changed kernels and ops drawn; the rest counted
RANK_ROWS = 10  # the worst ranks, as at the terminal

# Bars beside the page's own style (html.STYLE): BEFORE grey, AFTER red when slower, green when faster.
DIFF_STYLE = """<style>
.factors td.differs.blocks { color: var(--bad); font-weight: 600; } .factors td.differs.caveat { color: #9a6700; }
.factors td.unknown { color: var(--muted); }
.bars { min-width: 180px; } .bar { display: block; height: 10px; margin: 3px 0; border-radius: 2px; min-width: 2px; }
.bar.before { background: #8c959f; } .bar.after { background: var(--info); }
.bar.after.slower { background: var(--bad); } .bar.after.faster { background: var(--ok); }
td.change.slower { color: var(--bad); font-weight: 600; } td.change.faster { color: var(--ok); font-weight: 600; }
ul.key.diff { margin-top: 0; }
.diff td.num, .factors td.differs, .factors td.unknown, .factors td.same { white-space: nowrap; }
@media (max-width: 1000px) { .reflow.diff thead { display: none; } .diff td.num { white-space: normal; } }
</style>"""
KEY = (
    '<ul class="key diff"><li><span class="swatch square" style="--c:#8c959f"></span>before</li>'
    '<li><span class="swatch square" style="--c:var(--bad)"></span>after, slower beyond the threshold</li>'
    '<li><span class="swatch square" style="--c:var(--ok)"></span>after, faster</li>'
    '<li><span class="swatch square" style="--c:var(--info)"></span>after, within the threshold or noise</li>'
    "<li>each row's bars on its own scale: the longer is that row's larger median</li></ul>"
)


def _verdict(diff: ProfileDiff) -> str:
    tone = {"comparable": "good", "comparable with caveats": "info", "not comparable": "bad"}[diff.verdict]
    found = plural(len(diff.regressions), "kernel regression")
    extra = [plural(len(diff.op_regressions), "op regression")] if diff.ops_matched_on != "none" else []
    extra += [plural(len(diff.rank_regressions), "rank") + " with a regression"] if diff.ranks else []
    said = (
        "No changes are shown: a comparison that cannot be made shows no result."
        if diff.verdict == "not comparable"
        else f"{plural(len(diff.profiler_bugs), 'launch')} where Nsight Compute shows the trace's number wrong."
        if diff.ncu
        else f"{', '.join([found, *extra])} beyond {diff.threshold_pct} and the noise."
    )
    return (
        f'<section class="card verdict {tone}" id="ww-verdict"><p id="ww-headline"><b>{html_text(diff.said, 600)}</b>'
        f"</p><p>{html_text(said, 600)}</p></section>"
    )


def _factors(diff: ProfileDiff) -> str:
    """The factors that differ or are unknown as a table; the ones that are the same in one line."""
    # what blocks the comparison first, then the caveats, then what could not be checked
    shown = sorted(
        (f for f in diff.factors if f.status != "same"), key=lambda f: (f.status != "differs", f.effect != "blocks")
    )
    rows = "".join(
        f'<tr><td data-label="factor">{html_text(f.name, 80)}</td><td data-label="before">{html_text(f.before, 200)}'
        f'</td><td data-label="after">{html_text(f.after, 200)}</td>'
        f'<td class="{f.status} {f.effect}" data-label="status">{f.status}</td>'
        f'<td data-label="what it means">{html_text(f.meaning, 600)}</td></tr>'
        for f in shown
    )
    table = (
        '<table class="factors"><thead><tr><th>factor</th><th>before</th><th>after</th><th></th>'
        f"<th>what it means</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    same = [f.name for f in diff.factors if f.status == "same"]
    line = f'<p class="note">The same on both sides: {html_text(", ".join(same), 2000)}.</p>' if same else ""
    return f'<h2>Can the two be compared?</h2><div class="reflow diff">{table}</div>{line}'


def _bars(before: float, after: float, change: Any) -> str:
    """Two bars, BEFORE over AFTER, on the row's own scale (the larger median is the full width): a table's
    medians span 25 µs to 7 ms, and on one scale the short rows' change could not be seen at all."""
    tone = "slower" if change.regression else ("faster" if change.improvement else "")
    scale = max(before, after)
    width = [max(0.0, min(100.0, 100 * v / scale)) if scale > 0 else 0.0 for v in (before, after)]
    return (
        f'<div class="bars" role="img" aria-label="median {before:.3f} µs before, {after:.3f} µs after">'
        f'<span class="bar before" style="width:{width[0]:.1f}%"></span>'
        f'<span class="bar after {tone}" style="width:{width[1]:.1f}%"></span></div>'
    )


def _change_cells(c: KernelChange | OpChange, calls: tuple[str, int, int]) -> str:
    """The counts (``calls``: its label, before, after), medians, bars, change and noise of one row."""
    tone = "slower" if c.regression else ("faster" if c.improvement else "")
    return (
        f'<td class="num" data-label="{calls[0]}">{calls[1]} → {calls[2]}</td>'
        f'<td class="num" data-label="median µs">{c.before_median_us:.3f} → {c.after_median_us:.3f}</td>'
        f'<td data-label="before / after">{_bars(c.before_median_us, c.after_median_us, c)}</td>'
        f'<td class="num change {tone}" data-label="change">{c.change:+.1%}</td>'
        f'<td class="num" data-label="noise">±{c.noise:.1%}</td>'
    )


def _kernels(diff: ProfileDiff) -> str:
    moved = [c for c in diff.changes if c.regression or c.improvement][:ROWS]
    head = (
        f"<h2>Kernels that changed</h2><p>{plural(len(diff.changes), 'kernel')} on both sides, matched by normalised "
        f"name and launch configuration; {len(moved)} moved beyond {diff.threshold_pct} and the noise.</p>"
    )
    if not moved:
        return head
    rows = "".join(
        f'<tr><td class="kernel" data-label="kernel">{html_text(c.name, 300)}</td>'
        f'<td data-label="grid / block">{html_text(launch_shape(c), 80)}</td>'
        f"{_change_cells(c, ('launches', c.before_launches, c.after_launches))}</tr>"
        for c in moved
    )
    return head + KEY + _table(("kernel", "grid / block", "launches", "median µs", "before / after", "change",
                                "noise"), rows, "ww-kernels")  # fmt: skip


def _ops(diff: ProfileDiff) -> str:
    if diff.ops_matched_on == "none":
        return ""
    how = "name and input shapes" if diff.ops_matched_on == "name and shapes" else "name alone (a side has no shapes)"
    moved = [c for c in diff.ops if c.regression or c.improvement][:ROWS]
    head = (
        f"<h2>Ops that changed</h2><p>{plural(len(diff.ops), 'op')} on both sides, matched by {how}; CPU time, "
        f"inclusive of the ops each one called; {len(moved)} moved beyond the threshold and the noise.</p>"
    )
    if not moved:
        return head
    rows = "".join(
        f'<tr><td class="kernel" data-label="op">{html_text(c.name, 200)}</td>'
        f'<td class="kernel" data-label="input shapes">{html_text(c.shapes or "—", 200)}</td>'
        f"{_change_cells(c, ('calls', c.before_calls, c.after_calls))}</tr>"
        for c in moved
    )
    return head + _table(("op", "input shapes", "calls", "median µs", "before / after", "change", "noise"), rows,
                         "ww-ops")  # fmt: skip


def _rank_row(r: RankChange) -> str:
    step = (
        "—"
        if r.before_step_us is None or r.after_step_us is None
        else f"{r.before_step_us / 1e3:.3f} → {r.after_step_us / 1e3:.3f}"
    )
    return (
        f'<tr><td class="num" data-label="rank">{r.rank}</td>'
        f'<td class="num" data-label="GPU time ms">{r.before_gpu_us / 1e3:.3f} → {r.after_gpu_us / 1e3:.3f}</td>'
        f'<td class="num change {"slower" if r.regressions else ""}" data-label="change">{r.change:+.1%}</td>'
        f'<td class="num" data-label="median step ms">{step}</td>'
        f'<td class="num" data-label="regressions">{r.regressions}</td>'
        f'<td class="kernel" data-label="slowest kernel">{html_text(r.worst or "—", 200)} ({r.worst_change:+.1%})</td>'
        "</tr>"
    )


def _ranks(diff: ProfileDiff) -> str:
    if not diff.ranks:
        return ""
    shown = diff.ranks[:RANK_ROWS]
    head = (
        f"<h2>Rank by rank</h2><p>{plural(len(diff.ranks), 'rank')} compared rank against rank; "
        f"{plural(len(diff.rank_regressions), 'rank')} with a kernel regression; the worst {len(shown)}:</p>"
    )
    cols = ("rank", "GPU time ms", "change", "median step ms", "regressions", "slowest kernel")
    return head + _table(cols, "".join(_rank_row(r) for r in shown), "ww-ranks")


def _table(header: tuple[str, ...], rows: str, ident: str) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    table = f'<table id="{ident}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return f'<div class="reflow diff">{table}</div>'


def _words(diff: ProfileDiff) -> str:
    said = [*diff.mechanisms, *(f"health: {h}" for h in diff.health)]
    if diff.only_before or diff.only_after:
        said.append(f"{len(diff.only_before)} kernels only in BEFORE, {len(diff.only_after)} only in AFTER")
    if not said:
        return ""
    items = "".join(f"<li>{html_text(s, 600)}</li>" for s in said[:20])
    return f"<h2>Also</h2><ul>{items}</ul>"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _ncu(diff: ProfileDiff) -> str:
    """Nsight Compute's kernels beside the trace's launches: how each was joined, its label and why."""
    rows = "".join(
        f'<tr><td class="kernel" data-label="kernel">{html_text(j.kernel, 300)}</td>'
        f'<td data-label="joined on">{html_text(j.matched, 200)}</td><td data-label="label">{html_text(j.label)}</td>'
        f'<td class="num" data-label="Kineto est. %">{_pct(j.kineto_occupancy_pct)}</td>'
        f'<td class="num" data-label="ncu achieved %">{_pct(j.ncu_achieved_pct)}</td>'
        f'<td data-label="why">{html_text(j.why, 600)}</td></tr>'
        for j in diff.ncu[:ROWS]
    )
    cols = ("kernel", "joined on", "label", "Kineto est. %", "ncu achieved %", "why")
    head = f"<h2>Nsight Compute beside the trace</h2><p>{plural(len(diff.ncu), 'kernel')} Nsight Compute profiled.</p>"
    return head + _table(cols, rows, "ww-ncu")


def diff_html(diff: ProfileDiff) -> str:
    """The page: verdict and factors, then (when the two can be compared) the kernels, ops and ranks that moved."""
    body = [DIFF_STYLE, _verdict(diff), _factors(diff)]
    if diff.ncu and diff.verdict != "not comparable":
        body.append(_ncu(diff))
    elif diff.verdict != "not comparable":
        body += [_kernels(diff), _ops(diff), _ranks(diff), _words(diff)]
    return page(f"{diff.before} → {diff.after}", [part for part in body if part], [])
