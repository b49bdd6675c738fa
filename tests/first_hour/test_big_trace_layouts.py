"""benchmarks/make_big_trace.py, which makes every file of issue 48's speed series: its layouts must hold the same
trace, or the series compares content instead of the reader (docs/performance.md quotes lines against minified
against relative), and the kernels it plants must be the ones the inspection finds. A builder-made source, so this
runs where ../shared is absent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, RunCli
from tests.helpers import demo_trace, inspect_json

LAYOUTS = ("lines", "minified", "indented", "relative")
MAKER = REPO / "benchmarks" / "make_big_trace.py"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    """Each layout's file, 2 MB of the builder's demo trace over and over, and the kernels the maker says it
    planted."""
    folder = tmp_path_factory.mktemp("layouts")
    source = demo_trace(folder / "source.json", repeat=3)
    files = {}
    for layout in LAYOUTS:
        path = folder / f"big-{layout}.json"
        done = subprocess.run(
            [sys.executable, str(MAKER), str(source), str(path), "--size-gb", "0.002", "--layout", layout],
            check=True, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        planted = re.search(r", (\d+) overflowing kernels planted$", done.stdout.strip())
        assert planted is not None, done.stdout
        files[layout] = (path, int(planted.group(1)))
    return files


def _without_the_file(document: dict[str, Any]) -> dict[str, Any]:
    """The document less what differs with the file's bytes and not its trace: its path, its size (the report's and
    the trace-size check's) and the read's timings."""
    (report,) = document["reports"]
    for key in ("path", "bytes_read", "timing"):
        report.pop(key)
    report["health"] = [c for c in report["health"] if c["check"] != "trace-size"]
    return document


def test_the_layouts_of_one_trace_inspect_alike(run_cli: RunCli, made: dict[str, tuple[Path, int]]) -> None:
    documents = {layout: inspect_json(run_cli, made[layout][0], status=1) for layout in LAYOUTS}
    sizes = {layout: made[layout][0].stat().st_size for layout in LAYOUTS}
    assert sizes["minified"] < sizes["lines"] < sizes["indented"]  # three layouts indeed, not one file thrice
    lines = _without_the_file(documents["lines"])
    assert _without_the_file(documents["minified"]) == lines
    assert _without_the_file(documents["indented"]) == lines
    # relative: the same events with PyTorch 2's times (µs since a base, nanosecond digits made up), so the times
    # and what is summed from them differ; what is counted does not
    relative = documents["relative"]
    (ours, theirs) = (relative["reports"][0], lines["reports"][0])
    assert (ours["events"], ours["kernels"]) == (theirs["events"], theirs["kernels"])
    assert relative["mechanisms"] == lines["mechanisms"]
    assert [(c["check"], c["status"]) for c in ours["health"] if c["check"] != "trace-size"] == [
        (c["check"], c["status"]) for c in theirs["health"]
    ]


def test_the_planted_kernels_are_the_overflows_found(run_cli: RunCli, made: dict[str, tuple[Path, int]]) -> None:
    source = inspect_json(run_cli, made["lines"][0].parent / "source.json", status=0)
    assert "A" not in source["mechanisms"]  # the demo trace has none of its own: every one found was planted
    for layout in LAYOUTS:
        path, planted = made[layout]
        assert planted == 5
        assert inspect_json(run_cli, path, status=1)["mechanisms"]["A"] == planted, layout
