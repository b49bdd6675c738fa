"""The HTML report's layout and pictures, measured in a real browser (issue 27): every element inside the
window at a phone's width and a laptop's, and after a resize; nothing clipped; each picture with its axes,
the launches it cannot set against a true value drawn or counted, a right value never drawn as wrong; and
how to open the trace in Perfetto.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, run_inprocess
from tests.helpers import AUDIT, artifacts, chromium, needs_browser, open_page, payload

pytest.importorskip("plotly", reason="the HTML report needs the html extra (plotly)")
pytest.importorskip("playwright.sync_api", reason="browser tests need playwright")

TRACES = EXAMPLES / "traces"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _page(tmp_path: Path, name: str, *traces: Path, status: int = 1) -> Path:
    """The report page of ``traces``; ``status``: 1 where the health check finds a problem (every trace here
    but the healthy one)."""
    out = tmp_path / f"{name}.html"
    result = run_inprocess("trace", "inspect", *map(str, traces), "--report", str(out), "--jobs", "1")
    assert result.status == status, result.stderr
    return out


def _figures(page: Path) -> list[dict[str, Any]]:
    return [json.loads(f) if isinstance(f, str) else f for f in payload(page.read_text())["figures"]]


def _picture(page: Path, metric: str) -> dict[str, Any]:
    return next(f for f in _figures(page) if f["layout"]["title"]["text"].startswith(f"{metric}: reported"))


def _markers(figure: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in figure["data"] if t.get("mode") == "markers"]


@needs_browser
@pytest.mark.parametrize("width", [390, 768, 1280])
def test_every_element_fits_the_window_and_nothing_is_cut(browser: Any, tmp_path: Path, width: int) -> None:
    page_file = _page(
        tmp_path,
        "several",
        TRACES / "old-sm-count.json",
        TRACES / "grid-overflow.json",
        TRACES / "shared-memory-over-48k.json",
        TRACES / "kernels-hidden.json",
    )
    page, seen = open_page(browser, page_file, artifacts(tmp_path) / f"layout-{width}.png", width)
    assert seen["errors"] == [] and seen["blocked"] == []
    assert page.evaluate(AUDIT, width) == []  # was 232 elements at 390 px (plots 465 px wide), 31 at 1280
    titles = page.eval_on_selector_all("figure.picture > h3", "hs => hs.map(h => h.textContent)")
    assert "warps per SM: reported against true, per distinct launch" in titles  # whole, wrapped, never cut
    drawn_titles = page.eval_on_selector_all(".plot .gtitle", "ts => ts.map(t => t.textContent)")
    assert all(t == "" for t in drawn_titles)  # no one-line plotly title for the toolbar to cover
    assert page.query_selector_all(".plot .legend") == []  # the key is the page's, below each picture
    for table in ("#ww-findings", "#ww-health-table"):
        boxes = page.eval_on_selector_all(f"{table} tbody td", "cs => cs.map(c => c.getBoundingClientRect().right)")
        assert boxes and max(boxes) <= width
    page.close()


@needs_browser
def test_the_pictures_follow_the_window_when_it_narrows(browser: Any, tmp_path: Path) -> None:
    page_file = _page(tmp_path, "grid", TRACES / "grid-overflow.json")
    page, _ = open_page(browser, page_file, tmp_path / "wide.png", 1280)
    page.set_viewport_size({"width": 390, "height": 900})
    _until(
        page,
        "Array.from(document.querySelectorAll('.plot svg.main-svg'))"
        ".every(s => s.getBoundingClientRect().right <= 390)",
    )
    assert page.evaluate(AUDIT, 390) == []
    page.set_viewport_size({"width": 1280, "height": 900})
    _until(page, "document.querySelector('.plot svg.main-svg').getBoundingClientRect().width > 1000")
    page.close()


def _until(page: Any, condition: str) -> None:
    """Wait for plotly's resize (the page's CSP forbids wait_for_function's eval): up to 10 s, polled."""
    for _ in range(100):
        if page.evaluate(f"() => {condition}"):
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"never true: {condition}")


def test_launches_with_no_true_value_are_drawn_at_their_reported_value_and_counted(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    trace = TRACES / "old-sm-count.json"
    page = _page(tmp_path, "old", trace)
    document = json.loads(trace.read_text())
    events = document["traceEvents"] if isinstance(document, dict) else document
    kernels = [e for e in events if str(e.get("cat", "")).lower() == "kernel"]
    for metric in ("warps per SM", "blocks per SM"):
        figure = _picture(page, metric)
        drawn = _markers(figure)
        assert {(x, y) for t in drawn for x, y in zip(t["x"], t["y"], strict=True)} == {
            (e["args"][metric], "true unknown") for e in kernels
        }  # every B launch, at its reported value (none was drawn before)
        assert all(t["name"].startswith("B: SM count read as -1") for t in drawn)
    html = page.read_text()
    assert "4 launches with no true value to set against (the trace lacks the SM count; --sms N gives it)" in html
    assert "device 0 (no deviceProperties: SM count and compute capability unknown)" in html


def test_a_picture_with_nothing_impossible_keeps_its_axes_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    page = _page(tmp_path, "healthy", TRACES / "healthy-small.json", status=0)
    for metric in ("warps per SM", "blocks per SM"):
        layout = _picture(page, metric)["layout"]
        assert "yaxis2" not in layout  # no empty strip below (it held the x axis, leaving the plot without one)
        assert layout["xaxis"]["title"]["text"] == f"true {metric}"
        assert f"nothing impossible here: every {metric} drawn is right" in page.read_text()
    # was "10 more check(s)"; 2 more: issue 38; trace-incomplete and ranks-complete: issue 45 items 1 and 2
    assert "14 more checks: info, ok or not applicable" in page.read_text()


@pytest.mark.parametrize(("trace", "mechanism"), [("shared-memory-over-48k", "E"), ("occupancy-calculator", "D")])
def test_a_right_value_is_never_drawn_as_wrong(tmp_path: Path, trace: str, mechanism: str) -> None:
    pytest.importorskip("plotly")
    # E alone is the flagship's info (issue 33): the gate passes; D is a warning
    page = _page(tmp_path, trace, TRACES / f"{trace}.json", status=0 if mechanism == "E" else 1)
    for metric in ("warps per SM", "blocks per SM"):  # E and D leave these right: only the occupancy is wrong
        names = {t["name"] for t in _markers(_picture(page, metric))}
        assert not any(n.startswith(f"{mechanism}: ") for n in names), names
        assert f"a right value, on launches whose wrong value is another metric ({mechanism})" in names
    occupancy = _markers(_picture(page, "occupancy %"))
    assert {t["name"][:2] for t in occupancy} == {f"{mechanism}:"}
    assert {y for t in occupancy for y in t["y"]} == ({"zero"} if mechanism == "E" else {"negative"})


@needs_browser
def test_the_timeline_key_never_covers_an_axis_title(browser: Any, tmp_path: Path) -> None:
    page_file = _page(tmp_path, "timeline", TRACES / "grid-overflow.json")  # A and E over time: a key of two
    for width in (390, 1280):
        page, _ = open_page(browser, page_file, tmp_path / f"timeline-{width}.png", width)
        overlaps = page.evaluate(
            """() => Array.from(document.querySelectorAll('.plot')).flatMap(plot => {
                 const titles = Array.from(plot.querySelectorAll('[class^=g-x], [class^=g-y]'))
                   .map(t => t.getBoundingClientRect()).filter(r => r.width > 0);
                 const keys = Array.from(plot.querySelectorAll('.legend'))
                   .concat(Array.from(plot.parentElement.querySelectorAll('ul.key')))
                   .map(k => k.getBoundingClientRect());
                 return titles.filter(t => keys.some(k => k.left < t.right && t.left < k.right
                   && k.top < t.bottom && t.top < k.bottom)).map(() => plot.id);
               })"""
        )
        assert overlaps == []
        titled = page.eval_on_selector_all(
            ".plot", "ps => ps.map(p => Array.from(p.querySelectorAll('[class^=g-x]')).some(t => t.textContent !== ''))"
        )
        assert titled and all(titled)  # every picture keeps a named x axis
        page.close()


def test_the_page_says_how_to_open_the_trace_and_the_fix_that_shows_hidden_kernels(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    trace = tmp_path / "in <b>&'dir" / "kernels-hidden.json"
    trace.parent.mkdir()
    trace.write_text((TRACES / "kernels-hidden.json").read_text())
    page = _page(tmp_path, "hidden", trace, status=0)  # PDL's overlap and E are info
    html = page.read_text()
    hint = html[html.index('<section id="ww-perfetto">') :]
    hint = hint[: hint.index("</section>")]
    assert "<b>&" not in hint and "in &lt;b&gt;&amp;&#x27;dir" in hint  # the path, escaped
    assert "Go to <code>ui.perfetto.dev</code>, choose <b>Open trace file</b>" in hint
    assert "<code>chrome://tracing</code>" in hint
    assert (
        "1 kernel of <code>kernels-hidden.json</code> starts inside an earlier event on stream 7 and ends after" in hint
    )
    assert "<code>stream 7 (overlapping kernels, lane 1)</code>" in hint
    import html as html_module

    command = html_module.unescape(hint.split('<pre class="command"><code>')[1].split("</code>")[0])
    argv = shlex.split(command)
    assert argv == [
        "warpwizard",
        "trace",
        "fix",
        "--split-overlaps",
        str(trace),
        str(trace.parent / "kernels-hidden-lanes.json"),
    ]
    result = run_inprocess(*argv[1:])  # the command as printed does what the page says
    assert result.status == 0, result.stderr
    written = json.loads(Path(argv[5]).read_text())
    rows = {e["args"]["name"] for e in written["traceEvents"] if e.get("name") == "thread_name"}
    assert "stream 7 (overlapping kernels, lane 1)" in rows
