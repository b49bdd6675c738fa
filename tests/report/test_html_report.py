"""The HTML report (issue 18), opened in a real browser: Debian's Chromium driven by Playwright.

Each page is checked for what a user sees and what must never happen: no console error, no network
request (everything but the file is blocked and counted), plots drawn, every finding group in the table
with its full kernel name, a hostile kernel name shown as text that injects nothing and runs nothing.
Screenshots are kept as test artifacts (``WARPWIZARD_ARTIFACTS``, else the test's tmp directory).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import EXAMPLES, run_inprocess, strict_json
from tests.helpers import artifacts, chromium, needs_browser, open_page, payload
from wizard.testing.traces import KernelSpec, TraceBuilder

HOSTILE = "</script><img src=x onerror=alert(1)>"
pytest.importorskip("plotly", reason="the HTML report needs the html extra (plotly)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _hostile_trace(tmp_path: Path) -> Path:
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec(f"void evil<{HOSTILE}>", (100_000, 30_000, 1), (128, 1, 1), op=f"aten::{HOSTILE}"))
    builder.add(KernelSpec("void at::native::gemm<128, 4, float>", (4096, 1, 1), (384, 1, 1), 168, 231424, repeat=3))
    builder.add(KernelSpec("void at::native::ok<float>", (100, 1, 1), (256, 1, 1), repeat=50))
    return builder.write(tmp_path / "hostile.json")


@needs_browser
def test_an_inspection_page_opens_offline_draws_its_plots_and_injects_nothing(browser: Any, tmp_path: Path) -> None:
    trace = _hostile_trace(tmp_path)
    out = tmp_path / "inspect.html"
    result = run_inprocess("trace", "inspect", str(trace), "--report", str(out))
    assert result.status == 1, result.stderr
    html = out.read_text()
    assert "<img" not in html and HOSTILE not in html  # escaped in the table, the payload and the hover labels
    figures = payload(html)["figures"]  # strict JSON: no NaN/Infinity tokens
    assert len(figures) == 4  # warps, blocks, occupancy, timeline (one file: no per-rank bars)
    page, seen = open_page(browser, out, artifacts(tmp_path) / "inspect-1280.png")
    assert seen == {"errors": [], "blocked": [], "dialogs": []}
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    plots = page.query_selector_all(".plot")
    assert len(plots) == 4
    for plot in plots:
        assert plot.query_selector_all("svg.main-svg") and plot.query_selector_all(".scatterlayer .point")
    rows = page.eval_on_selector_all("#ww-findings tbody tr", "rs => rs.map(r => r.cells[1].textContent)")
    assert rows == [
        f"void evil<{HOSTILE}>",
        "void at::native::gemm<128, 4, float>",
        "void at::native::gemm<128, 4, float>",
    ]
    kernels = set(page.eval_on_selector_all("#ww-findings td.kernel:not(.frame)", "cs => cs.map(c => c.textContent)"))
    report = wizard.inspect_traces(trace)
    assert kernels == {g.kernel for g in report.findings}  # every group, whole names
    op_cells = page.eval_on_selector_all("#ww-findings tbody tr", "rs => rs.map(r => r.cells[4].textContent)")
    assert any(cell.startswith(f"aten::{HOSTILE}") for cell in op_cells)
    page.close()


@needs_browser
def test_the_findings_table_sorts_and_filters(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "inspect.html"
    run_inprocess("trace", "inspect", str(_hostile_trace(tmp_path)), "--report", str(out))
    page, seen = open_page(browser, out, tmp_path / "sort.png")
    page.fill("#ww-filter", "gemm")
    visible = page.eval_on_selector_all(
        "#ww-findings tbody tr:not([hidden])", "rs => rs.map(r => r.cells[0].textContent)"
    )
    assert visible == ["E", "F"]
    page.fill("#ww-filter", "")
    page.click("#ww-findings th:nth-child(3)")  # launches, ascending
    page.click("#ww-findings th:nth-child(3)")  # descending
    counts = page.eval_on_selector_all("#ww-findings tbody tr", "rs => rs.map(r => Number(r.cells[2].textContent))")
    assert counts == [3, 3, 1]  # E and F of the gemm (3 launches each), then A (1)
    assert seen["errors"] == []
    page.close()


def _rank_directory(tmp_path: Path) -> Path:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank, spec in enumerate(
        (
            KernelSpec("idx", (100_000, 30_000, 1), (128, 1, 1)),
            KernelSpec("mm", (99, 1, 1), (128, 1, 1), plant="B"),
            KernelSpec("add", (99, 1, 1), (128, 1, 1), plant="C"),
            KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424),
        )
    ):
        builder = TraceBuilder(gpu="RTX2080Ti" if spec.plant == "B" else "H100")
        builder.add(spec)
        builder.add(KernelSpec("ok", (100, 1, 1), (256, 1, 1), repeat=5))
        doc = builder.document()
        doc["distributedInfo"] = {"rank": rank, "world_size": 4}
        (ranks / f"rank{rank}.json").write_text(json.dumps(doc).replace("Infinity", '"inf"'))
    return ranks


@needs_browser
@pytest.mark.parametrize("width", [1280, 390])
def test_a_run_page_for_a_rank_directory_has_the_diagnosis_the_path_and_the_rank_bars(
    browser: Any, tmp_path: Path, width: int
) -> None:
    ranks = _rank_directory(tmp_path)
    answers = tmp_path / "a.yaml"
    answers.write_text(f"have: trace\ntrace_path: {ranks}\n")
    out = tmp_path / "run.html"
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--report", str(out))
    assert result.status == 0, result.stderr
    page, seen = open_page(browser, out, artifacts(tmp_path) / f"run-ranks-{width}.png", width)
    assert seen == {"errors": [], "blocked": [], "dialogs": []}
    assert "profiler-bug-grid-overflow" in page.text_content("#ww-run-verdict")
    assert page.eval_on_selector_all("[id]", "es => es.length - new Set(es.map(e => e.id)).size") == 0  # ids unique
    steps = page.eval_on_selector_all("#ww-steps > li", "ls => ls.length")
    assert steps >= 5
    assert len(page.query_selector_all(".plot")) == 5  # three metrics, the timeline, the per-rank bars
    assert "warpwizard's version" in page.text_content("#ww-env")
    bars = page.eval_on_selector_all(".plot .barlayer .point", "ps => ps.length")
    assert bars > 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than a phone
    page.close()


def test_without_plotly_an_html_report_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # import fails as if not installed
    out = tmp_path / "x.html"
    result = run_inprocess("trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json"), "--report", str(out))
    # its own code (issue 44 item 3): not a usage error; the wording: tests/cli/test_extras.py
    assert result.status == 9
    assert result.stderr.startswith("warpwizard: error: the HTML report needs plotly: ")
    assert " install " in result.stderr
    assert not out.exists()


def test_report_formats_follow_the_suffix_and_the_python_api_writes_the_same(tmp_path: Path) -> None:
    answers = EXAMPLES / "answers" / "grid-overflow.yaml"
    md = tmp_path / "r.md"
    js = tmp_path / "r.json"
    for target in (md, js):
        assert (
            run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--report", str(target)).status
            == 0
        )
    transcript = strict_json(js.read_text())
    assert transcript["schema"] == "warpwizard.transcript/1"
    api = wizard.run_playbook("negative-warps-per-sm", wizard.RunRequest(answers=answers))
    assert api.to_markdown().split("\n", 3)[3].count("|") == md.read_text().split("\n", 3)[3].count("|")
    bad = run_inprocess("trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json"), "--report", "x.pdf")
    assert bad.status == 2
    assert bad.stderr.startswith("warpwizard: error: --report x.pdf: unknown report format '.pdf'; choose from ")


def test_the_notebook_cell_shares_the_pages_table_and_escapes(tmp_path: Path) -> None:
    report = wizard.inspect_traces(_hostile_trace(tmp_path))
    cell = report._repr_html_()
    assert "<img" not in cell and "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in cell
    assert '<table id="ww-findings">' in cell
    assert report.to_html().startswith("<!DOCTYPE html>")
