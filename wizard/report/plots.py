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
from wizard.trace.metrics.findings import POINTS_CAP, PlotData
from wizard.trace.metrics.mechanisms import BY_ID, ORDER, is_wrong
from wizard.untrusted import cut, html_text

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


STATIC_ROWS = 12  # rows of a picture's static table (the most launched first); the rest counted


@dataclass(frozen=True, slots=True)
class Static:
    """A picture's data as a table, for a page read where no script runs (a screenshot before it draws, a mail
    client, a print preview): the page shows it until the script draws the plot, then hides it."""

    header: list[str]
    rows: list[list[str]]
    more: str = ""  # what the table leaves out, counted ("4 more lanes, 12 events")


def static_table(header: list[str], rows: list[list[str]], counted: list[int], what: tuple[str, str]) -> Static:
    """The first STATIC_ROWS of ``rows`` (sorted by the caller, the most first), and a count of the rest:
    ``counted`` holds each row's events, ``what`` names a row and an event, so the words say what is left out."""
    row, unit = what
    left = sum(counted[STATIC_ROWS:])
    more = (
        f"{plural(len(rows) - STATIC_ROWS, 'more ' + row)}, {plural(left, unit)}, not listed"
        if rows[STATIC_ROWS:]
        else ""
    )
    return Static(header, rows[:STATIC_ROWS], more)


@dataclass(frozen=True, slots=True)
class Picture:
    """One picture of the page: plotly's figure, and the words the page sets around it in HTML, where they
    wrap at any width (a plotly title or legend is one line, cut on a phone): the title, what the picture
    shows in a sentence, what it could not draw and why, the key to its colours, and its data as a table
    for a page where no script runs."""

    figure: str  # plotly's JSON; its layout keeps the title, the page draws it as a heading instead
    title: str
    notes: list[str] = field(default_factory=list)
    key: list[tuple[str, str, str]] = field(default_factory=list)  # (colour, marker symbol, label)
    description: str = ""  # what the picture shows, in words (read without JavaScript, and by a screen reader)
    static: Static | None = None


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


def _placement(points: list[Point], metric: str, past_cap: int = 0) -> tuple[dict[str, list[Point]], list[str], str]:
    """The points of one metric drawn in each part (the most launched, at most MAX_POINTS), the notes on
    those that cannot be drawn and why (``past_cap``: launches whose point the classifier did not keep), and the
    title (which counts the points left out)."""
    placed: dict[str, list[Point]] = {}
    for p in sorted((p for p in points if p[0] == metric), key=lambda p: -p[4]):
        placed.setdefault(_where(p), []).append(p)
    notes = [f"{plural(sum(p[4] for p in lost), 'launch')} not drawn: {why}" for why, lost in placed.items()]
    notes = [note for note, why in zip(notes, placed, strict=True) if why not in PARTS]
    if past_cap:
        notes.append(
            f"{plural(past_cap, 'launch')} not drawn: past {POINTS_CAP:,} distinct points in one trace (the first kept)"
        )
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


def reported_vs_true(points: list[Point], metric: str, past_cap: int = 0) -> Picture:
    """Reported against true values of one metric: each distinct point sized by its launches, coloured by
    mechanism where this value is wrong, the line where they are equal. Below, each in a strip of its own
    and only when there are some: the values a log axis cannot show (negative, zero, inf, nan) against
    their true value, and the launches whose true value is unknown (B without an SM count) at their
    reported value. Whatever is not drawn is counted, with why, in the picture's notes."""
    go = require_plotly()
    from plotly.subplots import make_subplots

    placed, notes, title = _placement(points, metric, past_cap)
    parts = [part for part in PARTS if placed.get(part)]
    words, static = _points_in_words(points, metric)
    if not parts:
        fig = go.Figure()
        fig.add_annotation(text="nothing to draw", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_layout(_layout(120, title={"text": title}, xaxis={"visible": False}, yaxis={"visible": False}))
        return Picture(str(fig.to_json(validate=False)), title, notes, [], words, static)
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
    return Picture(str(fig.to_json(validate=False)), title, notes, list(key.values()), words, static)


def _drawn_as(point: Point) -> str:
    """A point's colour in words, for the static table: its mechanism where this value is wrong, else right."""
    shown = _shown_as(point)
    if shown in (RIGHT, "ok") or not is_wrong(shown):
        return "right" if shown in (RIGHT, "ok") else f"{shown} (by design)"
    return f"{shown} (wrong)"


def _points_in_words(points: list[Point], metric: str) -> tuple[str, Static]:
    """What a reported-against-true picture shows, in a sentence (its launches by colour), and its points as a
    table, the most launched first (the same point on several ranks one row)."""
    alike: Counter[tuple[str, str, str]] = Counter()
    launches: Counter[str] = Counter()
    for p in points:
        if p[0] == metric:
            alike[(_drawn_as(p), _value(p[2]), _value(p[3]))] += p[4]
            launches[_drawn_as(p)] += p[4]
    said = "; ".join(f"{drawn}: {plural(n, 'launch')}" for drawn, n in sorted(launches.items(), key=lambda i: -i[1]))
    words = (
        f"Each distinct launch's reported {metric} (up) against the true value (across), a marker sized by its "
        f"launches; a point off the dotted line is a wrong value. {plural(len(alike), 'distinct point')} of "
        f"{plural(sum(launches.values()), 'launch')}: {said or 'none'}."
    )
    ordered = sorted(alike.items(), key=lambda item: (-item[1], item[0]))
    rows = [[drawn, str(n), reported, true] for (drawn, reported, true), n in ordered]
    header = ["drawn as", "launches", f"reported {metric}", f"true {metric}"]
    return words, static_table(header, rows, [n for _, n in ordered], ("point", "launch"))


def _value(value: float | None) -> str:
    return "unknown" if value is None else format(value, ".6g")


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
    return Picture(str(fig.to_json(validate=False)), title, [], key, *_timeline_in_words(spans, start))


def _timeline_in_words(spans: list[tuple[str, PlotData]], start: float) -> tuple[str, Static]:
    """The wrong launches over time in a sentence (each mechanism's launches, lanes and times) and as a table."""
    lines = [
        (f"{label} · stream {stream}", mechanism, times)
        for label, plot in spans
        for (stream, mechanism), times in plot.timeline.items()
        if times
    ]
    words = (
        f"When the wrong launches ran: a row per rank and stream, time across (ms since the traces' start), a "
        f"marker per busy stretch sized by its launches. {_lanes_in_words(lines, start, 'launch')}"
    )
    return words, _lanes_static(lines, start, "launch")


Lane = tuple[str, str, list[float]]  # (lane, what: a mechanism or a check, the times drawn, µs)


def _lanes_in_words(lines: list[Lane], start: float, unit: str) -> str:
    """Each mechanism's or check's events and lanes, and when they run, as a sentence."""
    by_what: dict[str, list[Lane]] = {}
    for line in lines:
        by_what.setdefault(line[1], []).append(line)
    said = []
    for what, mine in by_what.items():
        times = [t for _, _, ts in mine for t in ts]
        said.append(
            f"{what}: {plural(len(times), unit)} on {plural(len(mine), 'lane')}, "
            f"from {(min(times) - start) / 1000.0:.3f} to {(max(times) - start) / 1000.0:.3f} ms"
        )
    return "; ".join(said) + "." if said else ""


def _lanes_static(lines: list[Lane], start: float, unit: str) -> Static:
    """A picture over time as a table: each lane's events of one kind, where they start and end, the busiest
    lane first."""
    ordered = sorted(lines, key=lambda line: (-len(line[2]), line[0], line[1]))
    rows = [
        [lane, what, str(len(ts)), f"{(min(ts) - start) / 1000.0:.3f}", f"{(max(ts) - start) / 1000.0:.3f}"]
        for lane, what, ts in ordered
    ]
    header = ["lane", "what", plural(2, unit).split(" ", 1)[1], "first (ms)", "last (ms)"]
    return static_table(header, rows, [len(ts) for _, _, ts in ordered], ("lane", unit))


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


JOB_LANE = "all ranks"  # the lane of a job's findings (rank skew, rank accounting): they belong to no one rank
Marks = dict[tuple[str, str], list[tuple[str, float]]]  # (check, status) -> (lane, µs) of its events drawn


def _trace_marks(reports: list[tuple[str, list[Any], Span | None]]) -> Marks:
    """Each trace's findings: its checks' bounded samples, in the trace's lanes."""
    marks_of: Marks = {}
    for label, checks, _ in reports:
        for check in checks:
            if check.status in HEALTH_SHOWN and check.count and check.samples:
                marks_of.setdefault((check.check, check.status), []).extend(
                    (f"{label} · {lane}", ts) for ts, lane in check.samples
                )
    return marks_of


def _job_marks(job: list[Any]) -> tuple[Marks, list[tuple[str, str]]]:
    """A job's findings (a check over every rank): where its examples start, in the lane "all ranks" (rank skew's
    worst instance of each collective); one with no time of its own (a missing rank) is about the whole span.
    Every one is drawn: it was the only warning of an 8-rank page, and its picture left it out."""
    marks_of: Marks = {}
    whole: list[tuple[str, str]] = []
    for check in job:
        if check.status not in HEALTH_SHOWN:
            continue
        times = [float(e.ts) for e in check.examples if isinstance(e.ts, (int, float)) and math.isfinite(e.ts)]
        times += [ts for ts, _ in check.samples]
        if times:
            marks_of[(check.check, check.status)] = [(JOB_LANE, ts) for ts in times]
        else:
            whole.append((check.check, check.status))
    return marks_of, whole


STATUS_COLOUR = {"error": "#a40e26", "warning": "#e16f24"}  # a check that declares no colour, by its status


def _check_colour(check: str, status: str = "info") -> str:
    declared = SPEC.get(check)
    return (declared.colour if declared is not None else None) or STATUS_COLOUR.get(status, NO_COLOUR)


def _marks_trace(go: Any, check: str, status: str, marks: list[tuple[str, float]], axis: tuple[float, float]) -> Any:
    """One check's markers: its events binned over the axis (``start``, bin ``width``), sized by events."""
    start, width = axis
    binned: Counter[tuple[str, int]] = Counter(
        (lane, min(int((ts - start) / width), TIME_BINS - 1) if width > 0 else 0) for lane, ts in marks
    )
    rows = sorted(binned.items())
    return go.Scatter(
        x=[(b + 0.5) * width / 1000.0 for (_, b), _ in rows],
        y=[html_text(lane, 80) for (lane, _), _ in rows],
        mode="markers",
        name=f"{check} ({status})",
        marker={
            "color": _check_colour(check, status),
            "size": [_size(n) + (6 if lane == JOB_LANE else 0) for (lane, _), n in rows],
            "symbol": ["diamond" if lane == JOB_LANE else "circle" for (lane, _), _ in rows],
            "opacity": 0.85,
        },
        text=[
            f"{check} ({status}): {plural(n, 'event')} around {(b + 0.5) * width / 1000.0:.3f} ms" for (_, b), n in rows
        ],
        hoverinfo="text",
    )


def _whole_trace(go: Any, check: str, status: str, end_ms: float) -> Any:
    """A job finding with no time of its own: a bar over the whole span in the lane "all ranks"."""
    return go.Scatter(
        x=[0.0, end_ms],
        y=[JOB_LANE, JOB_LANE],
        mode="lines+markers",
        name=f"{check} ({status})",
        line={"color": _check_colour(check, status), "width": 6},
        marker={"color": _check_colour(check, status), "size": 8},
        text=[f"{check} ({status}): about the whole job, at no one time"] * 2,
        hoverinfo="text",
    )


def health_timeline(reports: list[tuple[str, list[Any], Span | None]], job: list[Any] | None = None) -> Picture | None:
    """Where the health check's findings lie in time, per rank and stream (or thread, for dropped launches), and
    the job's findings in a lane "all ranks": each finding check's bounded samples, binned over the traces' whole
    span, a marker per busy bin sized by events. Info findings are drawn too: dlrm's unlinked kernels, all at the
    trace's very start, are the previous step's tail, which is why they are info."""
    go = require_plotly()
    marks_of = _trace_marks(reports)
    job_marks, whole = _job_marks(job or [])
    if not marks_of and not job_marks and not whole:
        return None
    per_lane: Counter[str] = Counter(lane for marks in marks_of.values() for lane, _ in marks)
    shown = {lane for lane, _ in per_lane.most_common(HEALTH_LANES)}  # the busiest lanes, as the other plots cap
    omitted = len(per_lane) - len(shown)
    marks_of = {key: [m for m in marks if m[0] in shown] for key, marks in marks_of.items()}
    marks_of.update(job_marks)  # the job's lane always drawn
    spans = [span for _, _, span in reports]
    times = [ts for marks in marks_of.values() for _, ts in marks] or [t for s in spans if s for t in s] or [0.0]
    start, end = trace_span(spans, times)
    fig = go.Figure()
    order = {status: -n for n, status in enumerate(HEALTH_SHOWN)}  # the worst first in the key
    drawn = sorted([*marks_of, *whole], key=lambda item: order[item[1]])
    for check, status in drawn:
        marks = marks_of.get((check, status))
        axis = (start, (end - start) / TIME_BINS)
        fig.add_trace(
            _marks_trace(go, check, status, marks, axis)
            if marks
            else _whole_trace(go, check, status, (end - start) / 1e3)
        )
    lanes = {lane for marks in marks_of.values() for lane, _ in marks} | ({JOB_LANE} if whole else set())
    title = (
        "where the health check's findings lie, per rank and stream"
        + (", and over all ranks" if job_marks or whole else "")
        + (f" ({plural(omitted, 'more lane')} not drawn)" if omitted else "")
    )
    fig.update_layout(
        _layout(
            max(200, 60 + 28 * min(len(lanes), 40)),
            title={"text": title},
            xaxis=_time_axis(start, end, "ms since the trace's start"),
            yaxis=_lane_axis(),
        )
    )
    key = [
        (_check_colour(check, status), MARKERS[RIGHT] if (check, status) in job_marks else MARKERS["main"], label)
        for check, status in drawn
        for label in (
            f"{check} ({status}{', all ranks' if (check, status) in job_marks or (check, status) in whole else ''})",
        )
    ]
    words, static = _health_in_words(marks_of, whole, (start, end))
    words += _job_in_words(job or [])
    return Picture(str(fig.to_json(validate=False)), title, [], key, words, static)


def _job_in_words(job: list[Any]) -> str:
    """What the job's findings drawn are, in words: each one's count and the examples its marks stand for."""
    said = [
        f" {check.check} ({check.status}) is about all ranks: {cut(check.summary, 400)}"
        + (
            f"; drawn at {plural(len(check.examples), 'example')} ("
            + "; ".join(cut(e.detail or e.name, 200) for e in check.examples)
            + ")"
            if check.examples
            else "; drawn over the whole span, at no one time"
        )
        + "."
        for check in job
        if check.status in HEALTH_SHOWN
    ]
    return "".join(said)


def _health_in_words(marks_of: Marks, whole: list[tuple[str, str]], span: Span) -> tuple[str, Static]:
    """The health picture in a sentence (each trace check's events, lanes and times; the job's are said by
    ``_job_in_words``) and as a table, the job's findings in it too, one with no time of its own a row of its own."""
    start, end = span
    lines: list[Lane] = []
    for (check, status), marks in marks_of.items():
        per: dict[str, list[float]] = {}
        for lane, ts in marks:
            per.setdefault(lane, []).append(ts)
        lines += [(lane, f"{check} ({status})", ts) for lane, ts in per.items()]
    said = _lanes_in_words([line for line in lines if line[0] != JOB_LANE], start, "event")
    words = (
        'Where each health finding lies in time: a row per rank and stream (and a row "all ranks" for a finding '
        f"about the whole job), time across (ms since the traces' start), a marker per busy stretch. {said}"
    )
    static = _lanes_static(lines, start, "event")
    extra = [
        [JOB_LANE, f"{check} ({status})", "the whole job", "0.000", f"{(end - start) / 1e3:.3f}"]
        for check, status in whole
    ]
    return words.strip(), Static(static.header, extra + static.rows, static.more)


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
    return Picture(str(fig.to_json(validate=False)), title, [], key, *_ranks_in_words(counts, per_label))


def _ranks_in_words(counts: dict[str, dict[str, int]], per_label: Counter[str]) -> tuple[str, Static]:
    """The per-rank bars in a sentence (each mechanism's launches and ranks) and as a table, a row per rank."""
    mechanisms = sorted(counts, key=lambda m: ORDER.get(m, 99))
    said = "; ".join(
        f"{m}: {plural(sum(counts[m].values()), 'launch')} on {plural(len(counts[m]), 'rank')}" for m in mechanisms
    )
    words = f"Launches per rank (a bar each), stacked by mechanism, so which rank has which problem shows. {said}."
    ranks = sorted(per_label, key=lambda label: (-per_label[label], label))
    rows = [[label, *(str(counts[m].get(label, 0)) for m in mechanisms)] for label in ranks]
    return words, static_table(["rank", *mechanisms], rows, [per_label[label] for label in ranks], ("rank", "launch"))


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
    points = [p for r in inspection.reports if r.metrics.plot is not None for p in r.metrics.plot.points]
    if not points and inspection.launches:
        points = points_from_launches(inspection)
    past_cap: Counter[str] = Counter()
    for r in inspection.reports:
        if r.metrics.plot is not None:
            past_cap.update(r.metrics.plot.points_omitted)
    drawn = [m for m in METRICS if past_cap[m] or any(p[0] == m for p in points)]  # a metric all past the cap: said
    out = [reported_vs_true(points, m, past_cap[m]) for m in drawn]
    labelled = [(r.label, r.metrics.plot) for r in inspection.reports if r.metrics.plot is not None]
    health = health_timeline(
        [
            (r.label, r.health_result.checks, r.metrics.plot.span if r.metrics.plot else None)
            for r in inspection.reports
        ],
        inspection.job_health,
    )
    if health is not None:
        out.insert(0, health)  # the health section leads the page, so does its picture
    for extra in (timeline(labelled), per_rank(rank_counts)):
        if extra is not None:
            out.append(extra)
    return out
