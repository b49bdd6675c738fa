"""Truth on today's stack (issue 17), the parts done so far: traces cut after their events."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_inprocess, strict_json

GRID = EXAMPLES / "traces" / "grid-overflow.json"


@pytest.mark.parametrize("compressed", [False, True])
def test_a_trace_cut_inside_its_trailing_metadata_is_read_like_any_cut_trace(tmp_path: Path, compressed: bool) -> None:
    """Kineto writes "traceName" after the events; a file cut inside it kept every event but was
    refused whole (exit 6). Now: the same findings as the whole file, and a truncation note."""
    text = GRID.read_text()
    cut = text[: text.index('"traceName": "') + 20]
    path = tmp_path / ("cut.json.gz" if compressed else "cut.json")
    if compressed:
        path.write_bytes(gzip.compress(text.encode())[:-12])  # the gzip stream cut in its trailer
    else:
        path.write_text(cut)
    whole = strict_json(run_inprocess("trace", "inspect", str(GRID), "--json").stdout)
    result = run_inprocess("trace", "inspect", str(path), "--json")
    assert result.status == 1, result.stderr
    report = strict_json(result.stdout)
    assert report["mechanisms"] == whole["mechanisms"] == {"A": 1, "E": 1, "F": 1}
    assert report["reports"][0]["kernels"] == whole["reports"][0]["kernels"] == 4
    assert report["reports"][0]["truncation"] is not None
    fixed = tmp_path / "fixed.json"
    done = run_inprocess("trace", "fix", str(path), str(fixed))
    assert done.status == 0, done.stderr
    kernels = [e for e in strict_json(fixed.read_text())["traceEvents"] if e.get("cat") == "kernel"]
    assert sum("warpwizard original" in k["args"] for k in kernels) == 2  # A and E corrected, as in the whole file


def test_damage_before_the_events_end_is_still_refused(tmp_path: Path) -> None:
    text = GRID.read_text()
    at = text.index('"traceEvents"')
    path = tmp_path / "bad.json"
    path.write_text(text[:at] + '"traceName": "unterminated\n' + text[at:])
    result = run_inprocess("trace", "inspect", str(path))
    assert result.status == 6
    assert "invalid JSON" in result.stderr
