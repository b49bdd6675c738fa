"""Cuspy's Chrome JSON (issue 35): recognised by what it leaves out, its clamping counted, its lanes read on the
real stream.

The writer is PyTorch's own: in a subprocess, torch 2.13 (the tests' pinned CPU build) profiles a real matmul on
the CPU, exports Kineto's CPU-side trace, and `torch.profiler._cupti_monitor_trace.merge_trace_window_into_chrome_trace`
(Cuspy's exporter under its 2.13 name, `cupti_monitor`; 2.15 moved it to `torch/profiler/_cuspy/trace.py` with the
same clamping) merges GPU records into it, as it does the CUPTI records it collects on a GPU. cupti-python (on the
package index, CPU-only here) provides the callback-id enums it names runtime calls with. The GPU records are
planted: a kernel whose end is before its start, a runtime call that started before the trace's base time, a
launch whose kernel is missing. Lanes (2.15's `original_stream`) are planted with the trace builder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HAVE_TORCH, health_check, inspected
from wizard.testing.traces import KernelSpec, TraceBuilder

cupti = pytest.importorskip("cupti.cupti", reason="cupti-python (the test extra) provides the enums Cuspy imports")

EXPORT = r"""
import json, sys
import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._cupti_monitor_trace import merge_trace_window_into_chrome_trace

cpu_trace, window_file, out = sys.argv[1:]
a = torch.randn(64, 64)
with profile(activities=[ProfilerActivity.CPU]) as p:
    torch.mm(a, a)
p.export_chrome_trace(cpu_trace)
doc = json.load(open(cpu_trace))
op = next(e for e in doc["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == "aten::mm")
base = doc["baseTimeNanoseconds"]
start = base + int(op["ts"] * 1000)  # inside aten::mm, on its thread
plan = json.load(open(window_file))
events = []
for e in plan:
    e = dict(e)
    for key in ("start_ns", "end_ns"):
        if key in e:
            e[key] = (start + e[key]) if e.get("absolute") is None else e[key]
    if e["kind"] == "cuda_runtime":
        e.update(process_id=op["pid"], thread_id=op["tid"])
    e.pop("absolute", None)
    events.append(e)
merge_trace_window_into_chrome_trace(cpu_trace, out, {"events": events})
"""


def _kernel(corr: int, start: int, end: int) -> dict[str, Any]:
    return {"kind": "kernel", "name": "void gemm_kernel<128>", "device_id": 0, "stream_id": 7, "context_id": 1,
            "correlation_id": corr, "start_ns": start, "end_ns": end}  # fmt: skip


def _launch(corr: int, start: int, **kw: Any) -> dict[str, Any]:
    cbid = cupti.Runtime_api_trace_cbid.__members__["cudaLaunchKernel_v7000"].value
    return {"kind": "cuda_runtime", "cbid": cbid, "correlation_id": corr, "start_ns": start, "end_ns": start + 3_000,
            **kw}  # fmt: skip


@pytest.fixture(scope="module")
def cuspy_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_TORCH:
        pytest.skip("torch is not installed in this interpreter")
    tmp = tmp_path_factory.mktemp("cuspy")
    plan = [
        _launch(101, 1_000), _kernel(101, 20_000, 25_000),
        _launch(102, 5_000), _kernel(102, 30_000, 28_000),  # its end is before its start: clamped to dur 0
        _launch(103, 9_000),  # no kernel: dropped
        _launch(104, 5, absolute=True), _kernel(104, 40_000, 41_000),  # a start before the base time: ts 0
    ]  # fmt: skip
    (tmp / "window.json").write_text(json.dumps(plan))
    out = tmp / "cuspy.json"
    done = subprocess.run(
        [sys.executable, "-c", EXPORT, str(tmp / "cpu.json"), str(tmp / "window.json"), str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_the_real_exporter_is_recognised_with_what_it_hides(run_cli: Any, cuspy_trace: Path) -> None:
    doc = json.loads(cuspy_trace.read_text())  # the second reading: the file as the exporter wrote it
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert [k["dur"] for k in kernels] == [5.0, 0.0, 1.0] and not any("blocks per SM" in k["args"] for k in kernels)
    pinned = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime" and e["ts"] == 0]
    assert len(pinned) == 1
    report = inspected(run_cli, cuspy_trace)
    assert report["writer"] == "PyTorch profiler with the Cuspy collector (PyTorch 2.15; cupti_monitor in 2.13-2.14)"
    durations = health_check(report, "durations")
    assert (durations["status"], durations["count"], durations["at_zero"], durations["clamped_zero"]) == (
        "warning", 1, 1, 1
    )  # fmt: skip
    assert durations["summary"] == (
        "1 event pinned at ts 0 by Cuspy's clamping (a start before the trace's base time); 1 GPU event of zero "
        "duration, which may be negative durations Cuspy clamped to 0"
    )
    assert health_check(report, "kernels-missing")["count"] == 1
    metrics = health_check(report, "impossible-metrics")
    assert (metrics["status"], metrics["reason"]) == (
        "not_applicable", "Cuspy writes no blocks per SM, warps per SM or occupancy to check"
    )  # fmt: skip


def test_its_kernels_link_to_the_op_that_launched_them(cuspy_trace: Path) -> None:
    from wizard.trace.metrics.classify import link_op
    from wizard.trace.read.reader import read_trace

    contents = read_trace(cuspy_trace)
    link = link_op(contents, next(iter(contents.kernels)))
    assert link is not None and (link.op, link.runtime_call) == ("aten::mm", "cudaLaunchKernel")


def test_lanes_keep_the_real_stream(tmp_path: Path) -> None:
    """2.15 moves CUDA-graph ops to logical lanes: tid and args.stream the lane, args.original_stream the stream.
    The kernel's stream is the real one; its row (pid, tid) stays the lane a viewer draws."""
    from wizard.trace.read.reader import read_trace

    b = TraceBuilder()
    b.set_metadata("schemaVersion", 1)
    b.add(KernelSpec("void graphed", (64, 1, 1), (128, 1, 1)))
    doc = b.document()
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            for key in ("blocks per SM", "warps per SM", "est. achieved occupancy %"):
                e["args"].pop(key, None)
            e["args"]["original_stream"], e["args"]["stream"], e["tid"] = 7, 90001, 90001
    path = tmp_path / "lanes.json"
    path.write_text(json.dumps(doc))
    contents = read_trace(path)
    kernel = next(iter(contents.kernels))
    assert (kernel.stream, kernel.tid) == (7, 90001)
    assert contents.metadata["cuspy"]["lanes"] == 1
    from wizard.trace.inspection.run import inspect_trace

    assert inspect_trace(path).metrics.notes[:2] == [
        "read as a Chrome trace JSON, written by PyTorch profiler with the Cuspy collector (PyTorch 2.15; "
        "cupti_monitor in 2.13-2.14)",
        "1 kernel drawn on Cuspy's logical lanes (CUDA-graph ops moved off their stream): checked on their real stream "
        "(original_stream), shown on the lane",
    ]
