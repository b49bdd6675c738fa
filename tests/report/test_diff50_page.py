"""`warpwizard diff A B --report page.html`: both sides on one page, read in Chromium (issue 50, outputs).

The page is loaded as a user sees it (as tests/report/test_html_report.py's ``_open`` does: no request leaves the file,
no script error) at 1280 and 390 px, and must show the verdict first, then the planted kernel with its before/after
bars whose widths are the two medians' ratio (computed here from the planted durations).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from tests.helpers import GEMM, GEMM_US, chromium, needs_browser, open_page
from tests.helpers import diff_trace as _trace

HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _open(browser: Any, page_file: Path, shot: Path, width: int) -> tuple[Any, dict[str, Any]]:
    """The page opened as every report page is (errors, dialogs and any request but the file's collected), without
    the wait for plotly: the diff's page draws its bars in HTML, so it has nothing to wait for."""
    return open_page(browser, page_file, shot, width, plots=False)


def _page(run_cli: RunCli, before: Path, after: Path, out: Path, status: int) -> Path:
    result = run_cli("diff", str(before), str(after), "--report", str(out))
    assert result.returncode == status, result.stderr
    return out


@needs_browser
@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_shows_the_verdict_then_the_slower_kernel(
    browser: Any, run_cli: RunCli, tmp_path: Path, width: int
) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    page_file = _page(run_cli, before, after, tmp_path / "page.html", 1)
    page, seen = _open(browser, page_file, tmp_path / f"page-{width}.png", width)
    assert (seen["errors"], seen["blocked"], seen["dialogs"]) == ([], [], [])
    assert page.inner_text("#ww-headline") == "comparable (unknown: world size)"  # a builder trace has none
    assert "1 kernel regression" in page.inner_text("#ww-verdict")
    verdict_y = page.locator("#ww-verdict").bounding_box()["y"]
    row = page.locator("#ww-kernels tbody tr").first
    assert row.bounding_box()["y"] > verdict_y  # the verdict first, then what changed
    assert GEMM in row.inner_text() and "+20.0%" in row.inner_text()
    bars = [page.locator(f"#ww-kernels tbody tr >> .bar.{side}").first.bounding_box() for side in ("before", "after")]
    expected = statistics.median(GEMM_US) / statistics.median(d * 1.2 for d in GEMM_US)
    assert bars[0]["width"] / bars[1]["width"] == pytest.approx(expected, abs=0.02)
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than the screen
    page.close()


def test_a_kernel_name_from_the_trace_is_escaped(run_cli: RunCli, tmp_path: Path) -> None:
    """A kernel name is someone else's text: on the page it is text, never markup."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    paths = []
    for name, scale in (("before.json", 1.0), ("after.json", 1.5)):
        b = TraceBuilder()
        for dur in GEMM_US:
            b.add(KernelSpec(HOSTILE, (132, 1, 1), (256, 1, 1), dur=dur * scale))
        paths.append(b.write(tmp_path / name))
    text = _page(run_cli, paths[0], paths[1], tmp_path / "page.html", 1).read_text()
    assert HOSTILE not in text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text


def test_a_report_that_is_not_html_is_refused_before_any_work(run_cli: RunCli, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "a.json")
    result = run_cli("diff", str(trace), str(trace), "--report", str(tmp_path / "page.pdf"))
    assert result.returncode == 2 and "name it .html" in result.stderr and not (tmp_path / "page.pdf").exists()


@needs_browser
@needs_shared
def test_a_pair_that_cannot_be_compared_shows_no_change(browser: Any, run_cli: RunCli, tmp_path: Path) -> None:
    pair = TRACES / "pairs/h100-vs-mi300-bert-small"
    page_file = _page(run_cli, pair / "h100.json.gz", pair / "mi300.json.gz", tmp_path / "page.html", 10)
    page, seen = _open(browser, page_file, tmp_path / "page.png", 390)
    assert seen["errors"] == [] and page.inner_text("#ww-headline").startswith(
        "not comparable (blocked by shared kernels; unknown: world size, "
    )
    assert "No changes are shown" in page.inner_text("#ww-verdict")
    assert page.locator("#ww-kernels").count() == 0 and "GPU vendor" in page.inner_text("table.factors")
    page.close()


@needs_shared
def test_an_ncu_report_beside_a_trace_shows_each_kernels_label(run_cli: RunCli, tmp_path: Path) -> None:
    """The trace is written from the report's own kernels (tests/trace/test_diff_ncu.py's builder); the page lists each
    kernel with the label the --json gives, and the verdict line counts the profiler bugs (none here)."""
    from tests.helpers import ncu_kernels as _read
    from tests.helpers import ncu_trace_of as _trace_of

    NCU = TRACES / "ncu"

    report = NCU / "gtx1660ti-one-block.ncu-rep"
    trace = _trace_of(_read(report), tmp_path / "trace.json")
    data = strict_json(run_cli("diff", str(trace), str(report), "--json").stdout)
    text = _page(run_cli, trace, report, tmp_path / "page.html", 0).read_text()
    table = text.split('id="ww-ncu"', 1)[1]
    assert table.count("<tr><td") == len(data["ncu"]) > 0
    assert all(f'data-label="label">{j["label"]}</td>' in table for j in data["ncu"])
    assert "0 launches where Nsight Compute shows the trace&#x27;s number wrong" in text
