"""The HTML report's pictures, as plotly figures (plotly is what Holistic Trace Analysis draws with).

Optional: ``pip install 'warpwizard[html]'``. The figures are built and validated with plotly's Python
objects and drawn in the page by plotly.js, which travels inside the page gzip-compressed (4.8 MB of
JavaScript is 1.5 MB compressed), so the page opens offline and stays small. A trace's millions of
launches become its distinct (reported, true) points with their counts, and its wrong launches' times
are binned, so the page's size does not grow with the trace.
"""

from __future__ import annotations

import base64
import gzip
import math
import threading
from collections import Counter
from typing import Any

from wizard.errors import MissingDependency
from wizard.trace.inspect import Inspection
from wizard.trace.mechanisms import BY_ID, ORDER
from wizard.trace.report import PlotData
from wizard.untrusted import html_text

METRICS = ("warps per SM", "blocks per SM", "occupancy %")
IMPOSSIBLE_ROWS = ("negative", "zero", "inf", "-inf", "nan")  # reported values a log axis would drop
TIME_BINS = 300
MAX_POINTS = 1000  # distinct points drawn per metric: the most launched ones (the table is capped too)
MAX_LANES = 30  # ranks and streams drawn: the ones with the most wrong launches
PALETTE = {
    "A": "#d62728", "A'": "#ff7f0e", "B": "#9467bd", "C": "#8c564b", "C'": "#e377c2", "D": "#bcbd22",
    "E": "#17becf", "G": "#1f77b4", "F": "#7f7f7f", "?": "#000000", "ok": "#2ca02c",
}  # fmt: skip
INSTALL = "the HTML report needs plotly: pip install 'warpwizard[html]'"


def require_plotly() -> Any:
    """plotly's figure objects, or a one-line error saying what to install (exit 2 at the CLI)."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise MissingDependency(INSTALL) from None
    return go


_BUNDLE_LOCK = threading.Lock()
_BUNDLE: list[str] = []  # the one compressed plotly.js of this process, once made


def plotly_bundle() -> str:
    """plotly.js, gzip-compressed and base64-encoded, for the page to inflate in the browser; made once
    (``prepare`` makes it in the background while the trace is read)."""
    with _BUNDLE_LOCK:
        if not _BUNDLE:
            require_plotly()
            from plotly.offline import get_plotlyjs

            _BUNDLE.append(base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=6, mtime=0)).decode())
        return _BUNDLE[0]


_PREPARING: list[threading.Thread] = []


def prepare() -> None:
    """Import plotly and compress its bundle in a thread, once: zlib lets the trace be read meanwhile, so
    the page costs little more time than the JSON report (benchmarks/html_report.py)."""
    require_plotly()
    with _BUNDLE_LOCK:
        if _PREPARING or _BUNDLE:
            return
        _PREPARING.append(threading.Thread(target=plotly_bundle, name="warpwizard-plotly", daemon=True))
    _PREPARING[0].start()


def _impossible_row(value: float) -> str | None:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value < 0:
        return "negative"
    if value == 0:
        return "zero"
    return None


def _label(mechanism: str) -> str:
    known = BY_ID.get(mechanism)
    return f"{mechanism}: {known.summary}" if known else ("no wrong value" if mechanism == "ok" else mechanism)


def _size(count: int) -> float:
    return 7 + 4 * math.log10(max(count, 1))


def reported_vs_true(points: list[tuple[str, str, float | None, float | None, int]], metric: str) -> str:
    """Reported against true values of one metric: each distinct point sized by its launches, coloured by
    mechanism, the line where they are equal; below, in a strip of its own, the values a log axis
    cannot show (negative, zero, inf, nan) against their true value."""
    go = require_plotly()
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, row_heights=[0.75, 0.25], vertical_spacing=0.12, shared_xaxes=True)
    drawable = [p for p in points if p[0] == metric and p[3] is not None and p[3] > 0 and p[2] is not None]
    chosen = sorted(drawable, key=lambda p: -p[4])[:MAX_POINTS]  # a page that draws, whatever the trace
    left = _not_drawn(len(drawable) - len(chosen), sum(p[4] for p in drawable) - sum(p[4] for p in chosen), "point")
    ends: list[float] = []  # every value drawn on the log axes: the equality line spans them
    for mechanism in sorted({p[1] for p in chosen}, key=lambda m: ORDER.get(m, 99)):
        mine = [p for p in chosen if p[1] == mechanism]
        good = [p for p in mine if _impossible_row(p[2]) is None]  # type: ignore[arg-type]
        bad = [p for p in mine if _impossible_row(p[2]) is not None]  # type: ignore[arg-type]
        colour = PALETTE.get(mechanism, "#444444")
        for row, group, ys in (
            (1, good, [p[2] for p in good]),
            (2, bad, [_impossible_row(p[2]) for p in bad]),  # type: ignore[arg-type]
        ):
            if not group:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[p[3] for p in group],
                    y=ys,
                    mode="markers",
                    name=_label(mechanism),
                    legendgroup=mechanism,
                    showlegend=row == 1 or not good,
                    marker={"color": colour, "size": [_size(p[4]) for p in group], "opacity": 0.8},
                    text=[
                        f"{html_text(mechanism, 8)}: {p[4]} launch(es)<br>reported {html_text(p[2], 40)}"
                        f"<br>true {p[3]:.6g}"
                        for p in group
                    ],
                    hoverinfo="text",
                ),
                row=row,
                col=1,
            )
        ends += [float(p[3] or 0) for p in mine] + [float(p[2] or 0) for p in good if (p[2] or 0) > 0]
    if ends:
        lo, hi = min(ends), max(ends)
        fig.add_trace(
            go.Scatter(
                x=[lo, hi], y=[lo, hi], mode="lines", name="reported = true",
                line={"color": "#999999", "dash": "dot"}, hoverinfo="skip",
            ),
            row=1, col=1,
        )  # fmt: skip
    fig.update_xaxes(type="log", title_text=f"true {metric}", row=2, col=1)
    fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(type="log", title_text=f"reported {metric}", row=1, col=1)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=list(IMPOSSIBLE_ROWS), row=2, col=1)
    fig.update_layout(
        title={"text": f"{metric}: reported against true, per distinct launch{left}"},
        height=520, margin={"l": 60, "r": 10, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.25},
    )  # fmt: skip
    return str(fig.to_json(validate=False))


def _not_drawn(items: int, launches: int, what: str) -> str:
    """The words a picture's title adds for what it leaves out (the most launched are drawn)."""
    return f" (the top {what}s by launches; {items} more {what}(s), {launches} launch(es), not drawn)" if items else ""


def _top_lanes(launches: Counter[str]) -> set[str]:
    return {lane for lane, _ in launches.most_common(MAX_LANES)}


def _bins(times: list[float], start: float, width: float) -> Counter[int]:
    return Counter(int((t - start) / width) if width > 0 else 0 for t in times)


def timeline(reports: list[tuple[str, PlotData]]) -> str | None:
    """When the wrong launches ran, per rank and stream: binned, a marker per busy bin sized by launches."""
    go = require_plotly()
    spans = [(label, p) for label, p in reports if p.timeline]
    if not spans:
        return None
    start = min(min(t) for _, p in spans for t in p.timeline.values())
    end = max(max(t) for _, p in spans for t in p.timeline.values())
    width = (end - start) / TIME_BINS
    fig = go.Figure()
    per_lane: Counter[str] = Counter()
    for label, plot in spans:
        for (stream, _), times in plot.timeline.items():
            per_lane[f"{label} · stream {stream}"] += len(times)
    drawn = _top_lanes(per_lane)
    rows: dict[str, list[tuple[float, str, int]]] = {}
    for label, plot in spans:
        for (stream, mechanism), times in plot.timeline.items():
            name = f"{label} · stream {stream}"
            if name not in drawn:
                continue
            for b, n in sorted(_bins(times, start, width).items()):
                rows.setdefault(mechanism, []).append(((b + 0.5) * width / 1000.0, html_text(name, 80), n))
    lanes_left = _not_drawn(
        len(per_lane) - len(drawn), sum(per_lane.values()) - sum(per_lane[n] for n in drawn), "lane"
    )
    for mechanism in sorted(rows, key=lambda m: ORDER.get(m, 99)):
        marks = rows[mechanism]
        fig.add_trace(
            go.Scatter(
                x=[m[0] for m in marks],
                y=[m[1] for m in marks],
                mode="markers",
                name=_label(mechanism),
                marker={"color": PALETTE.get(mechanism, "#444444"), "size": [_size(m[2]) for m in marks]},
                text=[f"{html_text(mechanism, 8)}: {m[2]} launch(es) around {m[0]:.3f} ms" for m in marks],
                hoverinfo="text",
            )
        )
    omitted = sum(p.timeline_omitted for _, p in spans)
    fig.update_layout(
        title={"text": "wrong launches over time, per rank and stream"
               + (f" ({omitted} more launches not drawn)" if omitted else "") + lanes_left},
        xaxis={"title": {"text": "ms since the first launch"}}, yaxis={"type": "category"},
        height=max(260, 60 + 28 * len({m[1] for marks in rows.values() for m in marks})),
        margin={"l": 160, "r": 10, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.3},
    )  # fmt: skip
    return str(fig.to_json(validate=False))


HEALTH_COLOURS = {
    "kernels-missing": "#cf222e",
    "kernels-overlap": "#bf8700",
    "unlinked-kernels": "#8250df",
    "durations": "#0550ae",
    "clock-skew": "#1a7f37",
}


HEALTH_LANES = 30  # lanes drawn in the health timeline: the ones with the most problem events


def health_timeline(reports: list[tuple[str, list[Any]]]) -> str | None:
    """Where the health problems lie in time, per rank and stream (or thread, for dropped launches): each
    check's bounded samples, binned, a marker per busy bin sized by events."""
    go = require_plotly()
    marks_of: dict[str, list[tuple[str, float]]] = {}
    for label, checks in reports:
        for check in checks:
            if check.problem and check.samples:
                marks_of.setdefault(check.check, []).extend((f"{label} · {lane}", ts) for ts, lane in check.samples)
    if not marks_of:
        return None
    per_lane: Counter[str] = Counter(lane for marks in marks_of.values() for lane, _ in marks)
    shown = {lane for lane, _ in per_lane.most_common(HEALTH_LANES)}  # the busiest lanes, as the other plots cap
    omitted = len(per_lane) - len(shown)
    marks_of = {check: [m for m in marks if m[0] in shown] for check, marks in marks_of.items()}
    times = [ts for marks in marks_of.values() for _, ts in marks]
    start, end = min(times), max(times)
    width = (end - start) / TIME_BINS
    fig = go.Figure()
    lanes: set[str] = set()
    for check, marks in marks_of.items():
        binned: Counter[tuple[str, int]] = Counter(
            (lane, int((ts - start) / width) if width > 0 else 0) for lane, ts in marks
        )
        rows = sorted(binned.items())
        lanes.update(html_text(lane, 80) for (lane, _), _ in rows)
        fig.add_trace(
            go.Scatter(
                x=[(b + 0.5) * width / 1000.0 for (_, b), _ in rows],
                y=[html_text(lane, 80) for (lane, _), _ in rows],
                mode="markers",
                name=check,
                marker={"color": HEALTH_COLOURS.get(check, "#444444"), "size": [_size(n) for _, n in rows]},
                text=[f"{check}: {n} event(s) around {(b + 0.5) * width / 1000.0:.3f} ms" for (_, b), n in rows],
                hoverinfo="text",
            )
        )
    fig.update_layout(
        title={"text": "where the trace's problems are, per rank and stream"
               + (f" ({omitted} more lanes not drawn)" if omitted else "")},
        xaxis={"title": {"text": "ms since the first problem"}}, yaxis={"type": "category"},
        height=max(260, 60 + 28 * min(len(lanes), 40)),
        margin={"l": 160, "r": 10, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.3},
    )  # fmt: skip
    return str(fig.to_json(validate=False))


def per_rank(counts: dict[str, dict[str, int]]) -> str | None:
    """Launches per mechanism and rank, stacked: which rank has which problem."""
    go = require_plotly()
    per_label: Counter[str] = Counter()
    for per in counts.values():
        per_label.update(per)
    if len(per_label) < 2:
        return None
    labels = sorted(_top_lanes(per_label))
    left = _not_drawn(len(per_label) - len(labels), sum(per_label.values()) - sum(per_label[n] for n in labels), "rank")
    fig = go.Figure()
    for mechanism in sorted(counts, key=lambda m: ORDER.get(m, 99)):
        per = counts[mechanism]
        fig.add_trace(
            go.Bar(
                x=[html_text(label, 80) for label in labels],
                y=[per.get(label, 0) for label in labels],
                name=_label(mechanism),
                marker={"color": PALETTE.get(mechanism, "#444444")},
            )
        )
    fig.update_layout(
        barmode="stack", title={"text": f"launches per mechanism and rank{left}"}, height=360,
        margin={"l": 60, "r": 10, "t": 50, "b": 50}, legend={"orientation": "h", "y": -0.25},
    )  # fmt: skip
    return str(fig.to_json(validate=False))


def points_from_launches(inspection: Inspection) -> list[tuple[str, str, float | None, float | None, int]]:
    """For an inspection made without plot data (a library call that kept launch records): the same
    distinct points, counted from the records."""
    counts: Counter[tuple[str, str, float | None, float | None]] = Counter()
    for launch in inspection.launches:
        mechanism = launch.mechanism or "ok"
        for metric, reported, true in (
            ("blocks per SM", launch.blocks_per_sm, launch.true_blocks_per_sm),
            ("warps per SM", launch.warps_per_sm, launch.true_warps_per_sm),
            ("occupancy %", launch.est_occupancy, launch.true_est_occupancy),
        ):
            if reported is not None:
                counts[(metric, mechanism, reported, true)] += 1
    return [(m, mech, r, t, n) for (m, mech, r, t), n in counts.items()]


def figures(inspection: Inspection, rank_counts: dict[str, dict[str, int]]) -> list[str]:
    """Every picture of an inspection, in page order, each as plotly's JSON."""
    points = [p for r in inspection.reports if r.plot is not None for p in r.plot.points]
    if not points and inspection.launches:
        points = points_from_launches(inspection)
    out = [reported_vs_true(points, metric) for metric in METRICS if any(p[0] == metric for p in points)]
    labelled = [(r.label, r.plot) for r in inspection.reports if r.plot is not None]
    health = health_timeline([(r.label, r.health) for r in inspection.reports])
    if health is not None:
        out.insert(0, health)  # the health section leads the page, so does its picture
    for extra in (timeline(labelled), per_rank(rank_counts)):
        if extra is not None:
            out.append(extra)
    return out
