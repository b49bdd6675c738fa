"""Perfetto's nesting depth limit (issue 47 item 10): 600 kernels nested 600 deep on one stream were "every kernel
nests, as Perfetto draws it", yet Perfetto drops the 88 past its depth limit.

Perfetto's source, google/perfetto at ec5d16b14b743ba6063d720956d6d6af6610fd72 (the commit tests/perfetto_rule.py
follows): ``src/trace_processor/importers/common/slice_tracker.h`` line 43, ``static constexpr uint32_t kMaxDepth =
512;``; ``slice_tracker.cc`` lines 136-141 (``StartSlice``): ``size_t depth = stack.size(); if (depth >= kMaxDepth)
{ LogMaxDepthExceeded(...); return {}; }``, before the slice table's insert, so a slice that would open at depth 512
(the 513th nested) is not in the table at all; ``slice_tracker_unittest.cc`` 520-534: "Exceeded slice should be
dropped, row count remains kMaxDepth". The depth of each kernel is computed here a second way, by counting the
kernels that hold it, sharing no code with wizard/trace/health/nesting.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.conftest import RunCli, inspected, strict_json
from wizard.testing.pftrace import convert

DEPTH = 600
KMAX_DEPTH = 512  # slice_tracker.h 43


def _nested(depth: int) -> dict[str, Any]:
    """``depth`` kernels on stream 7, each inside the one before: kernel i spans [1000 + i, 1000 + 2 * depth - i) µs,
    each with its launch (correlation i + 1) on the CPU thread."""
    events: list[dict[str, Any]] = []
    for i in range(depth):
        ts, dur = 1000.0 + i, float(2 * depth - 2 * i)
        events.append({"ph": "X", "cat": "kernel", "name": f"void nested_{i}", "pid": 0, "tid": 7, "ts": ts,
                       "dur": dur, "args": {"device": 0, "stream": 7, "correlation": i + 1, "grid": [1, 1, 1],
                                            "block": [128, 1, 1]}})  # fmt: skip
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts - 500.0 + i * 0.1, "dur": 0.05, "args": {"correlation": i + 1}})  # fmt: skip
    return {"traceEvents": events}


def _depths(events: list[dict[str, Any]]) -> dict[tuple[Any, Any], list[int]]:
    """Per (pid, tid) row, each kernel's depth: how many other kernels of the row hold it (start at or before its
    start, end at or after its end, and come first in Perfetto's order: earlier, or as early and longer)."""
    rows: dict[tuple[Any, Any], list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") == "kernel":
            rows.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    out = {}
    for row, spans in rows.items():
        out[row] = [sum(1 for (s2, e2) in spans if (s2, -e2) < (s, -e) and s2 <= s and e <= e2) for (s, e) in spans]
    return out


def _overlap(report: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in report["health"] if c["check"] == "kernels-overlap"]
    assert isinstance(check, dict)
    return check


def test_kernels_past_perfettos_depth_are_reported_as_not_drawn(run_cli: RunCli, tmp_path: Path) -> None:
    doc = _nested(DEPTH)
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(doc))
    deep = sum(1 for d in _depths(doc["traceEvents"])[(0, 7)] if d >= KMAX_DEPTH)
    assert deep == DEPTH - KMAX_DEPTH == 88
    check = _overlap(inspected(run_cli, path))
    assert (check["status"], check["count"], check["too_deep"]) == ("warning", deep, deep)
    assert check["summary"].startswith("88 kernels nest 512 or more levels deep on their row: Perfetto does not draw")
    assert "--split-overlaps" in check["meaning"]


def test_512_deep_is_drawn_whole(run_cli: RunCli, tmp_path: Path) -> None:
    """The last depth Perfetto keeps: 512 kernels, the innermost at depth 511."""
    path = tmp_path / "deep512.json"
    path.write_text(json.dumps(_nested(KMAX_DEPTH)))
    check = _overlap(inspected(run_cli, path))
    assert (check["status"], check["count"], check["too_deep"]) == ("ok", 0, 0)


def test_trace_fix_moves_the_kernels_past_the_depth_to_rows_perfetto_draws(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(_nested(DEPTH)))
    fixed = tmp_path / "fixed.json.gz"
    result = run_cli("trace", "fix", str(path), str(fixed), "--split-overlaps")
    assert result.status == 0, result.stderr
    events = strict_json(gzip.decompress(fixed.read_bytes()))["traceEvents"]
    depths = _depths(events)
    assert sum(len(d) for d in depths.values()) == DEPTH  # every kernel still there
    assert max(max(d) for d in depths.values()) < KMAX_DEPTH  # and each row within Perfetto's depth
    assert len(depths[(0, 7)]) == KMAX_DEPTH  # the first 512 stay on the stream's row
    check = _overlap(inspected(run_cli, fixed))
    assert (check["status"], check["too_deep"]) == ("ok", 0)


def test_a_pftrace_too_deep_is_reported_and_fix_says_it_cannot(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "deep.pftrace"
    path.write_bytes(convert(_nested(DEPTH)))
    check = _overlap(inspected(run_cli, path))
    assert (check["count"], check["too_deep"]) == (88, 88)
    assert "`trace fix` writes corrected copies of Chrome trace JSON only" in check["meaning"]
    result = run_cli("trace", "fix", str(path), str(tmp_path / "out.json"), "--split-overlaps")
    assert result.status != 0 and len(result.stderr.strip().splitlines()) == 1, result.stderr
