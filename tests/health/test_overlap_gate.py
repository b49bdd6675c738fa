"""kernels-overlap as a gate (issue 45 items 5-6): an overlap a user can act on exits 1, a systematic one below a
kernel launch's latency that changes no sum they read is `info` and exits 0, worded with what is known.

The second computation is tests/health_oracle.py's (its own Perfetto rule, tests/perfetto_rule.py, and its own
classification in nanoseconds), sharing no code with warpwizard; the Nsight Systems export is read with plain SQL.

What is known of overlaps inside a CUDA graph replay, as the tests plant them:
- A kernel node of a CUDA graph can carry a programmatic edge: the CUDA Driver API's ``CUgraphEdgeData``
  (docs.nvidia.com/cuda/cuda-driver-api, struct CUgraphEdgeData, ``from_port``): "Only kernel nodes define
  non-zero ports ... CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC", which activates when every block has triggered
  programmatic launch completion, before the kernel ends; the dependent kernel may start before its predecessor
  ends, and a profiler trace records no edge.
- PyTorch's Cuspy exporter clamps overlapping GPU ops on a lane before writing a .pftrace because "CUPTI
  graph-replay timestamps overlap ~13%": pytorch/pytorch at 966f54357ea8280c6821673ec306e16e18bbc0b5,
  ``torch/profiler/_cuspy/trace.py``, function ``_build_render_stages``, the comment that opens "Serialize
  overlapping kernel/memcpy/memset render stages per lane" (the code search serves the file by character, not
  line: character 60,937 of its 105,512), and ``_nest_track_slices`` (its docstring: "CUPTI reports serial
  GPU-stream slices whose start/end can jitter into ~ns overlaps").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests import health_oracle as oracle
from tests import perfetto_rule
from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

# Kineto writes times relative to its base (a three-month period's start): about 3e9 µs, where a double resolves
# well under a nanosecond, so 0.11 µs stays 0.11 µs (the builder's default origin, a microsecond epoch, steps by
# 0.25 µs)
BASE_US = 3_000_000_000.0


def builder(gpu: str) -> TraceBuilder:
    return TraceBuilder(gpu=gpu, _clock=BASE_US, _origin=BASE_US)


def spec(name: str, at: float, dur: float, **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), at=at, dur=dur, **kw)


def gate(run_cli: RunCli, path: Path) -> tuple[int, dict[str, Any]]:
    """The exit status of `trace inspect --json` with the default --fail-on warning, and the kernels-overlap
    entry."""
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.returncode in (0, 1), result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    (check,) = [c for c in report["health"] if c["check"] == "kernels-overlap"]
    worse = [c["check"] for c in report["health"] if c["status"] in ("warning", "error") and c is not check]
    assert worse == [], worse  # the planted overlap is the only thing the gate can exit 1 on
    return result.returncode, check


def agrees(path: Path, check: dict[str, Any]) -> dict[str, Any]:
    """The check's counts are the oracle's, and its status the one the oracle's counts allow."""
    events, _ = oracle.load_events(path)
    fields = oracle.kernels_overlap(events)
    for key in ("count", "pdl", "rounding", "graph", "sub_latency", "material", "lanes"):
        assert check[key] == fields[key], (key, check[key], fields[key])
    assert check["sub_latency_us"] == pytest.approx(fields["sub_latency_us"], abs=1e-6)
    assert check["kernel_us"] == pytest.approx(fields["kernel_us"], rel=1e-9)
    assert {check["status"]} == oracle.allowed_statuses("kernels-overlap", fields)
    return fields


def replays(b: TraceBuilder, layers: int, overlaps: list[float], call: str = "cudaGraphLaunch") -> None:
    """Decode-like replays: each a graph launch of 12 kernels of 20 µs, 0.5 µs apart, where kernel 3k+1 starts
    ``overlaps[k]`` µs before the kernel before it ends (the same pairs in every replay)."""
    for _ in range(layers):
        base = b.clock - b._origin + 30.0
        specs, at = [], base
        for i in range(12):
            k, r = divmod(i, 3)
            shift = overlaps[k] if r == 1 and k < len(overlaps) else -0.5
            at = at - shift if i else at
            specs.append(spec(f"node_{i}", at=at, dur=20.0))
            at += 20.0
        b.add_graph(specs, call=call)


def test_b300_like_graph_replays_are_info_and_say_what_is_known(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 45 item 5: 0.13-4.6 µs overlaps, the same kernel pairs in every replay, under one cudaGraphLaunch."""
    b = builder("B200")
    replays(b, 30, [0.13, 1.7, 4.6])
    path = b.write(tmp_path / "b300-like.json")
    status, check = gate(run_cli, path)
    fields = agrees(path, check)
    assert (status, check["status"], check["count"]) == (0, "info", 90)
    assert (fields["sub_latency"], fields["graph"], fields["pdl"], fields["material"]) == (90, 90, 0, False)
    assert check["max_overlap_us"] == fields["max_overlap_us"] == pytest.approx(4.6, abs=1e-3)
    meaning = check["meaning"]
    longest = fields["max_overlap_us"]
    assert (
        f"90 kernels of graph replays (cudaGraphLaunch) overlap the kernel before them by at most {longest:.3f} µs"
        in meaning
    )
    assert "CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC" in meaning and "CUPTI's graph-replay timestamps" in meaning
    assert "not Programmatic Dependent Launch" not in meaning
    assert "no number read from the trace changes" in meaning


def test_v100_replays_of_1_to_13_us_are_info(tmp_path: Path, run_cli: RunCli) -> None:
    """HTA's trace_diff V100 trace: 24 overlaps of 1-13 µs inside replays, no PDL on a V100."""
    b = builder("V100")
    replays(b, 8, [1.0, 6.5, 13.0])
    path = b.write(tmp_path / "v100-like.json")
    status, check = gate(run_cli, path)
    agrees(path, check)
    assert (status, check["status"], check["count"], check["sub_latency"]) == (0, "info", 24, 24)


def test_a_hip_graph_replay_says_hipgraphlaunch(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 45 item 6: a HIP trace's words name hipGraphLaunch, and claim nothing of CUDA's or CUPTI's."""
    b = builder("MI300X")
    replays(b, 4, [0.11, 2.4], call="hipGraphLaunch")
    path = b.write(tmp_path / "mi300-graph.json")
    status, check = gate(run_cli, path)
    agrees(path, check)
    assert (status, check["status"], check["count"], check["graph"]) == (0, "info", 8, 8)
    assert "8 kernels of graph replays (hipGraphLaunch)" in check["meaning"]
    for cuda in ("cudaGraphLaunch", "CUPTI", "CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC"):
        assert cuda not in check["meaning"]
    assert all("hipGraphLaunch" in e["detail"] for e in check["examples"])


def eager(b: TraceBuilder, n: int, overlaps: dict[int, float]) -> None:
    """``n`` kernels launched one by one, 100 µs apart, 60 µs long; kernel ``i`` in ``overlaps`` starts that many
    µs before kernel i-1 ends (i-1 runs longer, so every kernel still starts after its own launch)."""
    for i in range(n):
        dur = 100.0 + overlaps[i + 1] if i + 1 in overlaps else 60.0
        b.add(spec(f"k{i}", at=100.0 * i + 30.0, dur=dur))


def test_one_12_us_overlap_in_4000_kernels_is_info(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 45 item 6: one 12.4 µs overlap among 4,010 kernels (nsys-mfu_2gpu_before), eager launches."""
    b = builder("H100")
    eager(b, 4010, {2000: 12.4})
    path = b.write(tmp_path / "single.json")
    status, check = gate(run_cli, path)
    fields = agrees(path, check)
    assert (status, check["status"], check["count"], check["sub_latency"], check["graph"]) == (0, "info", 1, 1, 0)
    longest = fields["max_overlap_us"]
    assert longest == pytest.approx(12.4, abs=1e-3)
    assert f"1 kernel launched one by one overlaps the kernel before it by at most {longest:.3f} µs" in check["meaning"]


def test_rocm_eager_overlaps_are_info(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 45 item 6: 0.11-2.4 µs on ROCm traces."""
    b = builder("MI300X")
    eager(b, 40, {5: 0.11, 17: 1.2, 30: 2.4})
    path = b.write(tmp_path / "rocm.json")
    status, check = gate(run_cli, path)
    agrees(path, check)
    assert (status, check["status"], check["count"], check["sub_latency"]) == (0, "info", 3, 3)
    assert "cudaGraphLaunch" not in check["meaning"]


def test_an_overlap_past_a_launch_latency_exits_1(tmp_path: Path, run_cli: RunCli) -> None:
    """25 µs is more than a launch takes: a duration the GPU cannot have had."""
    b = builder("H100")
    eager(b, 40, {10: 25.0, 20: 3.0})
    path = b.write(tmp_path / "overrun.json")
    status, check = gate(run_cli, path)
    agrees(path, check)
    assert (status, check["status"], check["count"], check["sub_latency"]) == (1, "warning", 2, 1)
    assert "1 other overruns the event before it by more than a launch's latency (20 µs)" in check["meaning"]


def test_small_overlaps_that_add_up_past_the_margin_exit_1(tmp_path: Path, run_cli: RunCli) -> None:
    """Each overlap 15 µs, below a launch's latency, but 100 of them on 115 + 16 µs pairs: 1,500 of 13,100 µs of
    kernel time (11.5%), past summary-table's 10%: summed kernel time is wrong by that much."""
    b = TraceBuilder()
    for i in range(200):
        b.add(spec(f"k{i}", at=100.0 * i + 30.0, dur=115.0 if i % 2 == 0 else 16.0))
    path = b.write(tmp_path / "dense.json")
    status, check = gate(run_cli, path)
    agrees(path, check)
    assert (status, check["status"], check["count"], check["sub_latency"], check["material"]) == (
        1, "warning", 100, 100, True
    )  # fmt: skip
    assert (check["sub_latency_us"], check["kernel_us"]) == (1500.0, 13100.0)
    assert "counts that time twice" in check["meaning"]


@needs_shared
def test_the_nsys_export_s_one_overlap_is_info_by_plain_sql(run_cli: RunCli) -> None:
    """nsys-mfu_2gpu_before.sqlite: the GPU ops of each (device, stream) read with SQL, Perfetto's rule applied by
    tests/perfetto_rule.py, the overlap measured in the export's own nanoseconds."""
    path = TRACES / "nsys-mfu_2gpu_before.sqlite"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    events: list[dict[str, Any]] = []
    for table, cat in (("KERNEL", "kernel"), ("MEMCPY", "gpu_memcpy"), ("MEMSET", "gpu_memset")):
        for start, end, device, stream in db.execute(
            f"SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_{table}"
        ):
            events.append({"ph": "X", "cat": cat, "name": cat, "pid": device + 1, "tid": stream,
                           "ts": start / 1000, "dur": (end - start) / 1000, "ns": (start, end)})  # fmt: skip
    rule = perfetto_rule.rule_of(events)
    hidden = rule.spilled_kernels()
    assert len(hidden) == 1
    (i,) = hidden
    under = events[rule.conflicts[i]]
    overlap_ns = under["ns"][1] - events[i]["ns"][0]
    kernel_ns = sum(e["ns"][1] - e["ns"][0] for e in events if e["cat"] == "kernel")
    assert under["cat"] == "kernel" and overlap_ns <= 20_000 and overlap_ns <= 0.10 * kernel_ns
    status, check = gate(run_cli, path)
    assert (status, check["status"], check["count"], check["sub_latency"]) == (0, "info", 1, 1)
    assert check["max_overlap_us"] == pytest.approx(overlap_ns / 1000, abs=0.002)
    assert check["kernel_us"] == pytest.approx(kernel_ns / 1000, rel=1e-6)
    assert "`trace fix` writes corrected copies of Chrome trace JSON only" in check["meaning"]
    assert "--split-overlaps" not in check["meaning"]


# -- issue 45 item 11: advice per format and writer ------------------------------------------------------------


def _walk_hidden(run_cli: RunCli, tmp_path: Path, trace: Path) -> dict[str, Any]:
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\nviewer: perfetto\n")
    result = run_cli("run", "kernels-hidden", "--answers", str(answers), "--json")
    assert result.returncode == 0, result.stderr
    data = strict_json(result.stdout)
    assert isinstance(data, dict)
    return data


def test_an_nsys_export_is_not_told_to_split_or_upgrade_pytorch(tmp_path: Path, run_cli: RunCli) -> None:
    """`trace fix` refuses SQLite (formats.py: NSYS_SQLITE is not rewritable), Perfetto does not open SQLite, and
    the Kineto fixes do not touch what Nsight Systems recorded: none of it is offered on an export."""
    from wizard.testing.nsys import Call, Kernel, write_export

    calls = [Call(1_000_000 * i, 1_000_000 * i + 5_000, 100 + i) for i in range(1, 4)]
    kernels = [  # the second starts 30 µs before the first ends
        Kernel(1_000_000 + 20_000, 1_000_000 + 150_000, 101),
        Kernel(1_000_000 + 120_000, 1_000_000 + 200_000, 102),
        Kernel(3_000_000 + 20_000, 3_000_000 + 60_000, 103),
    ]
    export = write_export(tmp_path / "run.sqlite", kernels, calls)
    data = _walk_hidden(run_cli, tmp_path, export)
    conclusion = data["conclusion"]
    assert conclusion["diagnosis"] == "same-stream-overlap"
    fixes = " ".join(conclusion["fix"])
    assert "--split-overlaps" not in fixes and "Upgrade PyTorch" not in fixes and "Cuspy" not in fixes
    assert "This trace is an Nsight Systems SQLite export: `trace fix` writes corrected copies of Chrome" in fixes
    assert "Perfetto does not open SQLite" in fixes
    refused = run_cli("trace", "fix", "--split-overlaps", str(export), str(tmp_path / "out.json"))
    assert refused.returncode != 0 and "Chrome trace JSON only" in refused.stderr  # what the advice says


def test_a_json_trace_is_told_what_writes_a_pftrace_today(tmp_path: Path, run_cli: RunCli) -> None:
    """Kineto's protobuf writer (pytorch/kineto PR #1186, commit e64a9886) is not an ancestor of Kineto's main
    (114171df); fe0f5dd8 (2025-12-15, "Move PerfettoTraceBuilder to fb internal") deleted
    libkineto/src/PerfettoTraceBuilder.cpp and .h from it. The advice names Cuspy's .pftrace instead."""
    b = builder("H100")
    eager(b, 10, {5: 30.0})
    data = _walk_hidden(run_cli, tmp_path, b.write(tmp_path / "overrun.json"))
    conclusion = data["conclusion"]
    assert conclusion["diagnosis"] == "same-stream-overlap"
    fixes = " ".join(conclusion["fix"])
    assert "warpwizard trace fix --split-overlaps" in fixes and "Upgrade PyTorch past the Kineto overlap fixes" in fixes
    assert "never reached its open-source main: commit fe0f5dd8 (2025-12-15)" in fixes
    assert "export Kineto's protobuf" not in fixes and "168296" not in fixes


def test_the_page_of_an_nsys_export_says_nsight_systems_not_perfetto(tmp_path: Path, run_cli: RunCli) -> None:
    """The report page offered `ui.perfetto.dev` and `trace fix --split-overlaps` for a .sqlite: tools that show an
    Nsight Systems export in Perfetto convert it to Perfetto JSON first (GindaChen/nsys-ai#2: "detect .sqlite on
    remote, convert to Perfetto JSON"), and trace fix refuses SQLite (the test above runs it)."""
    pytest.importorskip("plotly")
    from wizard.testing.nsys import Call, Kernel, write_export

    calls = [Call(1_000_000 * i, 1_000_000 * i + 5_000, 100 + i) for i in range(1, 3)]
    kernels = [
        Kernel(1_000_000 + 20_000, 1_000_000 + 150_000, 101),
        Kernel(1_000_000 + 120_000, 1_000_000 + 200_000, 102),
    ]
    export = write_export(tmp_path / "run.sqlite", kernels, calls)
    out = tmp_path / "page.html"
    result = run_cli("trace", "inspect", str(export), "--report", str(out), "--jobs", "1")
    assert result.returncode == 1, result.stderr  # a 30 µs overrun: a warning
    html = out.read_text()
    hint = html[html.index('<section id="ww-perfetto">') :]
    hint = hint[: hint.index("</section>")]
    assert "<h2>Open the run in Nsight Systems</h2>" in hint and "Perfetto does not open an Nsight Systems" in hint
    assert "ui.perfetto.dev" not in hint and "--split-overlaps" not in hint
