"""The HTML report's reported-against-true points are counted as launches arrive, not from a check and a record
kept per distinct launch: past the memo's 16,384 distinct launches (MEMO_CAP) every launch had its own check, so a
picture of an export whose every kernel has its own grid kept ~1.5 KB a launch. Now a check's points are kept only
while the memo keeps the check, and at most POINTS_CAP distinct points per trace; the launches of any point past it
are counted per metric and said in the picture's notes.

The second computation is ``report.plots.points_from_launches``: the same points counted from the per-launch records
an inspection keeps with ``launches="all"`` (the DataFrame's rows), a walk of its own over the kernels.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import wizard
from tests.conftest import TRACES, needs_shared
from tests.helpers import passes_peak_bytes
from wizard.report import plots
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.metrics import classify, detectors


def _counted(points: list[tuple[str, str, float | None, float | None, int]]) -> Counter[str]:
    """Points as a multiset, keyed by their repr (a nan is equal to itself only as the same object)."""
    counts: Counter[str] = Counter()
    for metric, mechanism, reported, true, launches in points:
        counts[repr((metric, mechanism, reported, true))] += launches
    return counts


def _points(path: Path) -> tuple[Counter[str], Counter[str], dict[str, int]]:
    inspection = wizard.inspect_traces(path, jobs=1, launches="all", plots=True)
    (report,) = inspection.reports
    assert report.metrics.plot is not None
    plot = report.metrics.plot
    return _counted(plot.points), _counted(plots.points_from_launches(inspection)), plot.points_omitted


@needs_shared
@pytest.mark.parametrize("memo", [detectors.MEMO_CAP, 1], ids=["memo", "memo-of-one"])
@pytest.mark.parametrize("name", ["h800-deepseek-train-rank0.json.gz", "a100-alexnet.json.gz"])
def test_the_points_are_the_launch_records_counted(name: str, memo: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the memo holding every distinct launch or one (every launch then checked anew, as past MEMO_CAP), the
    picture's points are the records' points, each with the same launches."""
    monkeypatch.setattr(detectors, "MEMO_CAP", memo)
    drawn, recorded, omitted = _points(TRACES / name)
    assert sum(recorded.values()) > 200  # values reported by launches: the trace has something to draw
    assert drawn == recorded
    assert omitted == {}


def _distinct(path: Path, launches: int) -> Path:
    """A Kineto trace whose every kernel has its own grid (and so its own point), as some exports have."""
    b = TraceBuilder()
    for i in range(launches):
        b.add(KernelSpec(f"k{i % 3}", (133 + i, 1, 1), (256, 1, 1)))
    return b.write(path)


def test_points_past_the_cap_are_counted_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With POINTS_CAP at 50 and 40 launches' worth of distinct points per metric past it: the first 50 points are
    kept whole (their launches are the records' for them) and every launch's value past them is counted under its
    metric."""
    monkeypatch.setattr(classify, "POINTS_CAP", 50)
    drawn, recorded, omitted = _points(_distinct(tmp_path / "t.json", 30))
    per_metric = Counter(key.split("'")[1] for key in recorded)
    assert per_metric == {"blocks per SM": 30, "warps per SM": 30, "occupancy %": 30}  # 90 distinct points
    assert len(drawn) == 50
    assert all(recorded[key] == launches for key, launches in drawn.items())
    kept = Counter(key.split("'")[1] for key in drawn)
    assert omitted == {metric: 30 - kept[metric] for metric in per_metric if kept[metric] < 30}
    assert sum(omitted.values()) == 40


@pytest.mark.slow
def test_a_picture_of_distinct_launches_holds_no_bytes_per_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passes' heap peak per added launch with the picture's data gathered is what it is without: the memo and
    the points bounded small here (64 checks, 256 points), 3,000 to 6,000 distinct launches. Before, each launch past
    the memo kept its check and its record for the picture: 2,052 bytes a launch more with plots than without
    (786 without, 2,839 with, measured on the commit before)."""
    monkeypatch.setattr(detectors, "MEMO_CAP", 64)
    monkeypatch.setattr(classify, "MEMO_CAP", 64)
    monkeypatch.setattr(classify, "POINTS_CAP", 256)
    small, large = 3_000, 6_000
    paths = [_distinct(tmp_path / f"t{n}.json", n) for n in (small, large)]
    passes_peak_bytes(paths[0], plots=True)  # the modules each pass imports, loaded before measuring
    per_launch = {}
    for drawn in (False, True):
        peaks = [passes_peak_bytes(p, plots=drawn) for p in paths]
        per_launch[drawn] = (peaks[1] - peaks[0]) / (large - small)
    assert per_launch[True] - per_launch[False] < 100, per_launch


def test_the_picture_says_how_many_launches_were_past_the_cap() -> None:
    """The reported-against-true picture's notes count the launches whose point was not kept, and why."""
    pytest.importorskip("plotly")
    points: list[plots.Point] = [("warps per SM", "ok", 16.0, 16.0, 3)]
    picture = plots.reported_vs_true(points, "warps per SM", past_cap=7)
    right = "nothing impossible here: every warps per SM drawn is right"
    assert picture.notes == ["7 launches not drawn: past 100,000 distinct points in one trace (the first kept)", right]
    assert plots.reported_vs_true(points, "warps per SM").notes == [right]


def test_a_metric_whose_every_point_is_past_the_cap_still_has_its_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for two points, the first launch's blocks and warps per SM take it: occupancy's picture has nothing
    to draw and says how many launches' values were not kept."""
    pytest.importorskip("plotly")
    monkeypatch.setattr(classify, "POINTS_CAP", 2)
    inspection = wizard.inspect_traces(_distinct(tmp_path / "t.json", 4), jobs=1, launches="none", plots=True)
    pictures = {p.title.split(":")[0]: p for p in plots.figures(inspection, {})}
    assert "occupancy %" in pictures
    assert "4 launches not drawn: past 100,000 distinct points in one trace (the first kept)" in (
        pictures["occupancy %"].notes
    )
