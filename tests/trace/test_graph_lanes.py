"""Issue 45 item 13: a trace whose graphed kernels PyTorch's exporter moved onto display lanes.

pytorch/pytorch#194854 (``torch/profiler/_chrome_trace_export.py``, ``export_chrome_trace``, read at 04c95643): with
``cuda_graph_annotations`` and ``graph_lanes="all"`` each graphed kernel moves to its annotation's lane or to
``default_stream`` (7): "A moved event carries its lane in ``tid`` and ``args["stream"]``, and the stream it actually
ran on as ``args["original_stream"]``", and the envelope says ``"cudaGraphInlineAnnotated": true``. So ordinary
Kineto JSON can now hold a row that is not a stream. The planted replay here is what that exporter writes: two
streams' kernels running concurrently, both drawn on lane 7.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import RunCli, health_check, strict_json
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder

LANE = 7
STREAMS = (20, 21)


def _moved(tmp_path: Path, pairs: int) -> tuple[Path, int]:
    """``pairs`` replays of two kernels on streams 20 and 21, the second starting 10 µs into the first (concurrent
    streams), each moved onto lane 7 as the exporter does; and how many kernels cannot nest on the lane."""
    b = TraceBuilder()
    for _ in range(pairs):
        b.add_graph([KernelSpec(f"gemm_s{s}", (132, 1, 1), (256, 1, 1), dur=40.0, stream=s) for s in STREAMS])
    document: dict[str, Any] = b.document()
    document["cudaGraphInlineAnnotated"] = True
    kernels = [e for e in document["traceEvents"] if e.get("cat") == "kernel"]
    for first, second in zip(kernels[::2], kernels[1::2], strict=True):
        second["ts"] = first["ts"] + 10.0  # concurrent: the other stream's kernel starts while this one runs
    for e in kernels:
        e["args"]["original_stream"] = e["args"]["stream"]
        e["args"]["stream"] = e["tid"] = LANE
    path = tmp_path / "graph-lanes.json"
    path.write_text(json.dumps(document))
    # the second computation: on lane 7, each second kernel starts inside the first and ends after it
    hidden = sum(1 for a, b_ in zip(kernels[::2], kernels[1::2], strict=True)
                 if a["ts"] < b_["ts"] < a["ts"] + a["dur"] < b_["ts"] + b_["dur"])  # fmt: skip
    return path, hidden


def test_streams_drawn_on_one_lane_are_concurrent_not_a_problem(run_cli: RunCli, tmp_path: Path) -> None:
    path, hidden = _moved(tmp_path, pairs=5)
    # the gate passes: nothing a user must act on
    (report,) = inspect_json(run_cli, path, status=0)["reports"]
    overlap = health_check(report, "kernels-overlap")
    assert (overlap["status"], overlap["count"], overlap["concurrent"]) == ("info", hidden, hidden) and hidden == 5
    assert overlap["sub_latency"] == overlap["pdl"] == 0  # 30 µs of overlap: concurrency, not a latency's
    assert "a row here is a lane, not a CUDA stream" in overlap["meaning"]
    assert any("drawn on the lanes PyTorch's exporter moved them to" in n for n in report["notes"])
    graphs = health_check(report, "graph-launches")
    assert (graphs["kernels"], graphs["mode"]) == (10, "graph")


def test_one_stream_overrunning_itself_on_a_lane_is_still_a_warning(run_cli: RunCli, tmp_path: Path) -> None:
    """The lane does not excuse a stream running two kernels at once: both kernels of stream 20 here."""
    path, _ = _moved(tmp_path, pairs=3)
    document = json.loads(path.read_text())
    for e in document["traceEvents"]:
        if e.get("cat") == "kernel":
            e["args"]["original_stream"] = STREAMS[0]
    path.write_text(json.dumps(document))
    result = run_cli("trace", "inspect", "--json", str(path))
    overlap = health_check(strict_json(result.stdout)["reports"][0], "kernels-overlap")
    assert (overlap["status"], overlap["concurrent"], overlap["count"], result.returncode) == ("warning", 0, 3, 1)
