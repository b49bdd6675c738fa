"""The HTML report's pictures, as plotly figures (plotly is what Holistic Trace Analysis draws with).

Optional: ``pip install 'warpwizard[html]'`` (``'.[html]'`` in a clone: ``wizard/extras.py``). The figures
are built and validated with plotly's Python
objects and drawn in the page by plotly.js's basic bundle (scatter and bar: what the pictures draw), which
travels inside the page gzip-compressed (1.2 MB of JavaScript is 0.4 MB compressed; the full bundle's 4.8 MB
made every page 2 MB), so one file, e-mailed or attached, opens offline with its pictures. A trace's millions of
launches become its distinct (reported, true) points with their counts, and its wrong launches' times
are binned, so the page's size does not grow with the trace.
"""

from __future__ import annotations

import base64
import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import MissingDependency
from wizard.extras import install_command
from wizard.formatting import exact, plural
from wizard.trace.health.checks import SPEC
from wizard.trace.inspection.results import Inspection
from wizard.trace.kineto_math import prints_truth
from wizard.trace.metrics.findings import PlotData
from wizard.trace.metrics.mechanisms import BY_ID, ORDER, is_wrong
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


def install_message() -> str:
    """What to run for plotly, from where warpwizard stands (a clone's ``'.[html]'`` or the index's)."""
    return f"the HTML report needs plotly: {install_command('html')}"


def require_plotly() -> Any:
    """plotly's figure objects, or a one-line error saying what to install (exit 9 at the CLI)."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise MissingDependency(install_message()) from None
    return go


BUNDLE = "vendor/plotly-basic.min.js.gz"  # plotly.js's basic partial bundle: scatter and bar (vendor/README.md)
_BUNDLE_LOCK = threading.Lock()
_BUNDLE: list[str] = []  # the base64 of the compressed bundle, once read


def plotly_bundle() -> str:
    """plotly.js's basic bundle, gzip-compressed and base64-encoded, for the page to inflate in the browser:
    scatter and bar are all the pictures draw, so a page carries 0.5 MB of it, not the full bundle's 2 MB."""
    with _BUNDLE_LOCK:
        if not _BUNDLE:  # beside this module, as the playbook schema is (a wheel ships it: packaging test)
            _BUNDLE.append(base64.b64encode((Path(__file__).parent / BUNDLE).read_bytes()).decode())
        return _BUNDLE[0]


def prepare() -> None:
    """plotly is there (else the one-line error, before the trace is read)."""
    require_plotly()


@dataclass(frozen=True, slots=True)
class Picture:
    """One picture of the page: plotly's figure, and the words the page sets around it in HTML, where they
    wrap at any width (a plotly title or legend is one line, cut on a phone): the title, what the picture
    could not draw and why, and the key to its colours."""

    figure: str  # plotly's JSON; its layout keeps the title, the page draws it as a heading instead
    title: str
    notes: list[str] = field(default_factory=list)
    key: list[tuple[str, str, str]] = field(default_factory=list)  # (colour, marker symbol, label)


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


def _layout(height: int, **more: Any) -> dict[str, Any]:
    """What every picture shares: it fills its box at any width (the page's config makes it follow the
    window), the legend is the page's key below it, and the top margin is the toolbar's, never a title's."""
    return {
        "autosize": True,
        "height": height,
        "showlegend": False,
        "margin": {"l": 56, "r": 12, "t": 32, "b": 48},
        **more,
    }


Point = tuple[str, str, float | None, float | None, int]  # (metric, mechanism or "ok", reported, true, launches)
RIGHT = "right"  # a launch whose wrong value is another metric: this one is drawn as right
MARKERS = {"main": "circle", RIGHT: "diamond"}


def _shown_as(point: Point) -> str:
    """What a point is drawn as: its mechanism where this metric's value is wrong; "right" where the launch's
    mechanism made another of its values wrong (E's and D's blocks and warps per SM are right, only their
    occupancy is not), so a right value is never coloured as a wrong one."""
    _, mechanism, reported, true, _ = point
    if mechanism == "ok" or not is_wrong(mechanism):
        return mechanism
    if reported is not None and true is not None and prints_truth(reported, true):
        return RIGHT
    return mechanism


def _where(point: Point) -> str:
    """The part of a reported-against-true picture a point goes to, or why it cannot be drawn."""
    _, _, reported, true, _ = point
    if reported is None:
        return "no reported value"
    if true is None:
        return "unknown" if math.isfinite(reported) else "no true value and a reported value that is not finite"
    if not math.isfinite(true) or true <= 0:
        return f"a true value of {exact(true)}, which a log axis cannot show"
    return "main" if _impossible_row(reported) is None else "strip"


PARTS = ("main", "strip", "unknown")  # the rows of a reported-against-true picture, top to bottom
PART_HEIGHT = {"main": 280, "strip": 110, "unknown": 90}


def _placement(points: list[Point], metric: str) -> tuple[dict[str, list[Point]], list[str], str]:
    """The points of one metric drawn in each part (the most launched, at most MAX_POINTS), the notes on
    those that cannot be drawn and why, and the title (which counts the points left out)."""
    placed: dict[str, list[Point]] = {}
    for p in sorted((p for p in points if p[0] == metric), key=lambda p: -p[4]):
        placed.setdefault(_where(p), []).append(p)
    notes = [f"{plural(sum(p[4] for p in lost), 'launch')} not drawn: {why}" for why, lost in placed.items()]
    notes = [note for note, why in zip(notes, placed, strict=True) if why not in PARTS]
    drawable = sorted((p for part in PARTS for p in placed.get(part, [])), key=lambda p: -p[4])
    chosen = set(drawable[:MAX_POINTS])  # a page that draws, whatever the trace
    title = f"{metric}: reported against true, per distinct launch"
    left = drawable[MAX_POINTS:]
    title += _not_drawn(len(left), sum(p[4] for p in left), "point")
    return {part: [p for p in placed[part] if p in chosen] for part in PARTS if part in placed}, notes, title


def _points(go: Any, part: str, shown: str, ours: list[Point]) -> tuple[Any, tuple[str, str, str]]:
    """One mechanism's points in one part, and their key: a right value drawn as right, whatever its launch."""
    colour = PALETTE["ok"] if shown == RIGHT else PALETTE.get(shown, "#444444")
    symbol = MARKERS[RIGHT] if shown == RIGHT else MARKERS["main"]
    label = (
        "a right value, on launches whose wrong value is another metric ("
        + ", ".join(sorted({p[1] for p in ours}))
        + ")"
        if shown == RIGHT
        else _label(shown)
    )
    x: list[Any] = [p[2] if part == "unknown" else p[3] for p in ours]
    y: list[Any] = [
        p[2] if part == "main" else "true unknown" if part == "unknown" else _impossible_row(float(p[2] or 0))
        for p in ours
    ]
    trace = go.Scatter(
        x=x,
        y=y,
        mode="markers",
        name=html_text(label, 400),  # plotly reads names as HTML; the page's key escapes its own copy
        marker={"color": colour, "symbol": symbol, "size": [_size(p[4]) for p in ours], "opacity": 0.8},
        text=[
            f"{html_text(p[1], 8)}: {plural(p[4], 'launch')}<br>reported {html_text(p[2], 40)}"
            f"<br>true {'unknown' if p[3] is None else format(p[3], '.6g')}"
            + ("<br>this value is right" if shown == RIGHT else "")
            for p in ours
        ],
        hoverinfo="text",
    )
    return trace, (colour, symbol, label)


STEPS = (1.0, 2.0, 5.0)  # the labelled values of a log axis that spans less than two decades, per decade
MAX_DECADES = 8  # powers of ten labelled on one axis: more overlap at a phone's width


def log_ticks(values: list[float]) -> dict[str, Any]:
    """A log axis's labels: the powers of ten the values span (every one, up to MAX_DECADES), each written whole
    ("1000", not plotly's minor digits "2 5" or "9 8 7 6 5" between decades); 1, 2 and 5 of each decade where
    fewer than three powers of ten fall inside (a narrow range), so an axis always has labels to read."""
    shown = [v for v in values if math.isfinite(v) and v > 0]
    if not shown:
        return {}
    lo, hi = math.floor(math.log10(min(shown))), math.ceil(math.log10(max(shown)))
    inside = math.floor(math.log10(max(shown))) - math.ceil(math.log10(min(shown))) + 1  # powers of ten in range
    steps = (1.0,) if inside >= 3 else STEPS
    stride = max(1, -(-(hi - lo + 1) // MAX_DECADES))  # every second or third power of ten on a huge range
    ticks = [step * 10.0**e for e in range(lo, hi + 1, stride) for step in steps]
    # plotly draws those inside the axis's range (the values, padded), so the ends need no trimming
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [_whole(t) for t in ticks]}


def _whole(value: float) -> str:
    """A tick's label: the number as written ("0.01", "500"), "1e4" and "1e-4" past those (five characters at
    most, so a phone's axis holds its labels)."""
    if 1e-3 <= value < 1e4:
        return format(value, "g")
    exponent = math.floor(math.log10(value) + 1e-9)
    return f"{round(value / 10.0**exponent):d}e{exponent}"


def _axes(fig: Any, rows: dict[str, int], metric: str, placed: dict[str, list[Point]]) -> None:
    # the main axes hold the equality line from the least to the greatest value drawn, on both axes
    main = [float(v) for p in placed.get("main", []) for v in (p[2], p[3]) if v is not None]
    true_values = main + [float(p[3]) for p in placed.get("strip", []) if p[3] is not None]
    if "main" in rows:
        fig.update_xaxes(type="log", **log_ticks(true_values), row=rows["main"], col=1)
        fig.update_yaxes(type="log", title_text="reported", **log_ticks(main), row=rows["main"], col=1)
    if "strip" in rows:
        fig.update_xaxes(type="log", **log_ticks(true_values), row=rows["strip"], col=1)
        if "main" in rows:
            fig.update_xaxes(matches="x", row=rows["strip"], col=1)
        present = {_impossible_row(float(p[2] or 0)) for p in placed["strip"]}
        fig.update_yaxes(
            type="category",
            categoryorder="array",
            categoryarray=[r for r in IMPOSSIBLE_ROWS if r in present],
            row=rows["strip"],
            col=1,
        )
    true_row = rows.get("strip", rows.get("main"))
    if true_row is not None:
        fig.update_xaxes(title_text=f"true {metric}", row=true_row, col=1)
    if "unknown" in rows:
        fig.update_xaxes(title_text=f"reported {metric} (true value unknown)", row=rows["unknown"], col=1)
        fig.update_yaxes(type="category", row=rows["unknown"], col=1)


def reported_vs_true(points: list[Point], metric: str) -> Picture:
    """Reported against true values of one metric: each distinct point sized by its launches, coloured by
    mechanism where this value is wrong, the line where they are equal. Below, each in a strip of its own
    and only when there are some: the values a log axis cannot show (negative, zero, inf, nan) against
    their true value, and the launches whose true value is unknown (B without an SM count) at their
    reported value. Whatever is not drawn is counted, with why, in the picture's notes."""
    go = require_plotly()
    from plotly.subplots import make_subplots

    placed, notes, title = _placement(points, metric)
    parts = [part for part in PARTS if placed.get(part)]
    if not parts:
        fig = go.Figure()
        fig.add_annotation(text="nothing to draw", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_layout(_layout(120, title={"text": title}, xaxis={"visible": False}, yaxis={"visible": False}))
        return Picture(str(fig.to_json(validate=False)), title, notes)
    fig = make_subplots(
        rows=len(parts),
        cols=1,
        row_heights=[PART_HEIGHT[part] for part in parts],
        vertical_spacing=min(0.3, 70 / sum(PART_HEIGHT[part] for part in parts)) if len(parts) > 1 else 0.0,
    )
    rows = {part: i for i, part in enumerate(parts, 1)}
    key: dict[str, tuple[str, str, str]] = {}
    order = {shown: ORDER.get(shown, 98 if shown == RIGHT else 99) for p in points for shown in (_shown_as(p),)}
    for part in parts:
        shown_as = {p: _shown_as(p) for p in placed[part]}
        for shown in sorted(set(shown_as.values()), key=order.__getitem__):
            trace, entry = _points(go, part, shown, [p for p in placed[part] if shown_as[p] == shown])
            fig.add_trace(trace, row=rows[part], col=1)
            key.setdefault(shown, entry)
    key = dict(sorted(key.items(), key=lambda item: order[item[0]]))
    ends = [float(v) for p in placed.get("main", []) for v in (p[2], p[3]) if v is not None]
    if ends:  # the equality line spans every value drawn on the main axes
        lo, hi = min(ends), max(ends)
        fig.add_trace(
            go.Scatter(
                x=[lo, hi], y=[lo, hi], mode="lines", name="reported = true",
                line={"color": "#999999", "dash": "dot"}, hoverinfo="skip",
            ),
            row=1, col=1,
        )  # fmt: skip
        key["reported = true"] = ("#999999", "line", "reported = true (a point on this line is right)")
    _axes(fig, rows, metric, placed)
    if "unknown" in rows:
        notes.append(
            f"{plural(sum(p[4] for p in placed['unknown']), 'launch')} with no true value to set against (the "
            'trace lacks the SM count; --sms N gives it): drawn at their reported value, in the row "true unknown"'
        )
    if not any(is_wrong(_shown_as(p)) for part in parts for p in placed[part]):
        notes.append(f"nothing impossible here: every {metric} drawn is right")
    height = sum(PART_HEIGHT[part] for part in parts) + 60 + 70 * (len(parts) - 1)
    fig.update_layout(_layout(height, title={"text": title}))
    return Picture(str(fig.to_json(validate=False)), title, notes, list(key.values()))


def _not_drawn(items: int, launches: int, what: str) -> str:
    """The words a picture's title adds for what it leaves out (the most launched are drawn)."""
    if not items:
        return ""
    return f" (the top {what}s by launches; {plural(items, 'more ' + what)}, {plural(launches, 'launch')}, not drawn)"


def _top_lanes(launches: Counter[str]) -> set[str]:
    return {lane for lane, _ in launches.most_common(MAX_LANES)}


def _bins(times: list[float], start: float, width: float) -> Counter[int]:
    return Counter(min(int((t - start) / width), TIME_BINS - 1) if width > 0 else 0 for t in times)


def _lane_axis() -> dict[str, Any]:
    """A category axis of lanes whose names stay inside the picture (automargin), at any width."""
    return {"type": "category", "automargin": True, "tickfont": {"size": 10}}


def timeline(reports: list[tuple[str, PlotData]]) -> Picture | None:
    """When the wrong launches ran, per rank and stream: binned, a marker per busy bin sized by launches."""
    go = require_plotly()
    spans = [(label, p) for label, p in reports if p.timeline]
    if not spans:
        return None
    start, end = trace_span([p.span for _, p in spans], [t for _, p in spans for ts in p.timeline.values() for t in ts])
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
    key = []
    for mechanism in sorted(rows, key=lambda m: ORDER.get(m, 99)):
        marks = rows[mechanism]
        colour = PALETTE.get(mechanism, "#444444")
        key.append((colour, MARKERS["main"], _label(mechanism)))
        fig.add_trace(
            go.Scatter(
                x=[m[0] for m in marks],
                y=[m[1] for m in marks],
                mode="markers",
                name=_label(mechanism),
                marker={"color": colour, "size": [_size(m[2]) for m in marks]},
                text=[f"{html_text(mechanism, 8)}: {plural(m[2], 'launch')} around {m[0]:.3f} ms" for m in marks],
                hoverinfo="text",
            )
        )
    omitted = sum(p.timeline_omitted for _, p in spans)
    title = (
        "wrong launches over time, per rank and stream"
        + (f" ({plural(omitted, 'more launch')} not drawn)" if omitted else "")
        + lanes_left
    )
    lanes = len({m[1] for marks in rows.values() for m in marks})
    fig.update_layout(
        _layout(
            max(200, 60 + 28 * lanes),
            title={"text": title},
            xaxis=_time_axis(start, end, "ms since the trace's start"),
            yaxis=_lane_axis(),
        )
    )
    return Picture(str(fig.to_json(validate=False)), title, [], key)


NO_COLOUR = "#444444"  # a check that declares no colour (CheckSpec.colour)


HEALTH_LANES = 30  # lanes drawn in the health timeline: the ones with the most problem events


Span = tuple[float, float]  # a trace's first start and last end, µs


def trace_span(spans: list[Span | None], times: list[float]) -> Span:
    """Where a time axis runs: from the earliest start of the traces drawn to their latest end (so where a
    problem lies in its trace shows: at the very start, all through, at the end), or over the times drawn
    where no trace's span is known (an inspection made without plot data)."""
    known = [s for s in spans if s is not None]
    first, last = min(times), max(times)
    return min([first] + [s[0] for s in known]), max([last] + [s[1] for s in known])


def _time_axis(start: float, end: float, what: str) -> dict[str, Any]:
    """The axis of a picture over time: ms from the traces' start, the whole span shown (plotly's own range
    would stop at the last marker)."""
    return {
        "title": {"text": what},
        "automargin": True,
        "range": [0.0, max((end - start) / 1000.0, 1e-3) * 1.01],
        "rangemode": "nonnegative",
    }


HEALTH_SHOWN = ("info", "warning", "error")  # a check's findings drawn: info too (where it lies says why it is info)


def health_timeline(reports: list[tuple[str, list[Any], Span | None]]) -> Picture | None:
    """Where the health check's findings lie in time, per rank and stream (or thread, for dropped launches):
    each finding check's bounded samples, binned over the traces' whole span, a marker per busy bin sized by
    events. Info findings are drawn too: dlrm's unlinked kernels, all at the trace's very start, are the
    previous step's tail, which is why they are info."""
    go = require_plotly()
    marks_of: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for label, checks, _ in reports:
        for check in checks:
            if check.status in HEALTH_SHOWN and check.count and check.samples:
                marks_of.setdefault((check.check, check.status), []).extend(
                    (f"{label} · {lane}", ts) for ts, lane in check.samples
                )
    if not marks_of:
        return None
    per_lane: Counter[str] = Counter(lane for marks in marks_of.values() for lane, _ in marks)
    shown = {lane for lane, _ in per_lane.most_common(HEALTH_LANES)}  # the busiest lanes, as the other plots cap
    omitted = len(per_lane) - len(shown)
    marks_of = {key: [m for m in marks if m[0] in shown] for key, marks in marks_of.items()}
    start, end = trace_span([span for _, _, span in reports], [ts for marks in marks_of.values() for _, ts in marks])
    width = (end - start) / TIME_BINS
    fig = go.Figure()
    lanes: set[str] = set()
    key = []
    order = {status: -n for n, status in enumerate(HEALTH_SHOWN)}  # the worst first in the key
    for (check, status), marks in sorted(marks_of.items(), key=lambda item: order[item[0][1]]):
        binned: Counter[tuple[str, int]] = Counter(
            (lane, min(int((ts - start) / width), TIME_BINS - 1) if width > 0 else 0) for lane, ts in marks
        )
        rows = sorted(binned.items())
        lanes.update(html_text(lane, 80) for (lane, _), _ in rows)
        declared = SPEC.get(check)
        colour = (declared.colour if declared is not None else None) or NO_COLOUR
        label = f"{check} ({status})"
        key.append((colour, MARKERS["main"], label))
        fig.add_trace(
            go.Scatter(
                x=[(b + 0.5) * width / 1000.0 for (_, b), _ in rows],
                y=[html_text(lane, 80) for (lane, _), _ in rows],
                mode="markers",
                name=label,
                marker={"color": colour, "size": [_size(n) for _, n in rows], "opacity": 0.85},
                text=[
                    f"{check} ({status}): {plural(n, 'event')} around {(b + 0.5) * width / 1000.0:.3f} ms"
                    for (_, b), n in rows
                ],
                hoverinfo="text",
            )
        )
    title = "where the health check's findings lie, per rank and stream" + (
        f" ({plural(omitted, 'more lane')} not drawn)" if omitted else ""
    )
    fig.update_layout(
        _layout(
            max(200, 60 + 28 * min(len(lanes), 40)),
            title={"text": title},
            xaxis=_time_axis(start, end, "ms since the trace's start"),
            yaxis=_lane_axis(),
        )
    )
    return Picture(str(fig.to_json(validate=False)), title, [], key)


def per_rank(counts: dict[str, dict[str, int]]) -> Picture | None:
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
    key = []
    for mechanism in sorted(counts, key=lambda m: ORDER.get(m, 99)):
        per = counts[mechanism]
        colour = PALETTE.get(mechanism, "#444444")
        key.append((colour, "square", _label(mechanism)))
        fig.add_trace(
            go.Bar(
                x=[html_text(label, 80) for label in labels],
                y=[per.get(label, 0) for label in labels],
                name=_label(mechanism),
                marker={"color": colour},
            )
        )
    title = f"launches per mechanism and rank{left}"
    fig.update_layout(
        _layout(340, barmode="stack", title={"text": title}, xaxis={"automargin": True}, yaxis={"title": "launches"})
    )
    return Picture(str(fig.to_json(validate=False)), title, [], key)


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


def figures(inspection: Inspection, rank_counts: dict[str, dict[str, int]]) -> list[Picture]:
    """Every picture of an inspection, in page order."""
    points = [p for r in inspection.reports if r.plot is not None for p in r.plot.points]
    if not points and inspection.launches:
        points = points_from_launches(inspection)
    out = [reported_vs_true(points, metric) for metric in METRICS if any(p[0] == metric for p in points)]
    labelled = [(r.label, r.plot) for r in inspection.reports if r.plot is not None]
    health = health_timeline([(r.label, r.health, r.plot.span if r.plot else None) for r in inspection.reports])
    if health is not None:
        out.insert(0, health)  # the health section leads the page, so does its picture
    for extra in (timeline(labelled), per_rank(rank_counts)):
        if extra is not None:
            out.append(extra)
    return out
