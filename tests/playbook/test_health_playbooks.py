"""The health check's six playbooks: each validates, starts like the flagship, and reaches every one of its
conclusions from an answers file on a trace the builder made (through the real CLI); the flagship's conclusions
that no example reaches, each from a case here; and the guard that every playbook the triage offers is among them."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, TRACES, RunCli, cli_env, strict_json
from tests.helpers import LINED_UP, SKEWED, rank_dir
from wizard.playbook.derived import declared_triage
from wizard.playbook.loader import load_playbook
from wizard.playbook.model import ConclusionNode, Playbook, ProbeNode, QuestionNode
from wizard.probes.registry import catalog
from wizard.testing.traces import KernelSpec, TraceBuilder

PLAYBOOKS = ("kernels-missing", "kernels-hidden", "cuda-graphs", "impossible-timing", "rank-skew", "summary-table")
CORRUPT = REPO / "examples" / "traces" / "corrupt.json"


def spec(name: str = "k", **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), **kw)


def healthy(b: TraceBuilder, n: int = 4, **kw: Any) -> TraceBuilder:
    for i in range(n):
        b.add(spec(f"healthy_{i}", **kw))
    return b


# -- the traces: one builder per planted problem --------------------------------------------------------------


def t_healthy(d: Path) -> Path:
    return healthy(TraceBuilder()).write(d / "healthy.json")


def t_cpu_only(d: Path) -> Path:
    b = TraceBuilder()
    for name in ("aten::empty", "aten::mm"):
        b.add_cpu_op(name)
    return b.write(d / "cpu.json")


def t_dropped_middle(d: Path) -> Path:
    b = healthy(TraceBuilder(), 3)
    b.add(spec("dropped", kernel=False, repeat=2))
    return healthy(b, 300).write(d / "dropped.json")


def t_cut_at_end(d: Path) -> Path:
    b = healthy(TraceBuilder(), 300)
    b.add(spec("cut", kernel=False))
    return b.write(d / "cut.json")


def t_gpu_behind(d: Path) -> Path:
    """A launch every 100 µs, kernels of 150 µs back to back: the GPU falls behind; the stop cuts 100 launches."""
    b = TraceBuilder()
    for i in range(300):
        b.add(spec(f"step_{i}", dur=150.0, kernel_delay=27.0 + 50.0 * i, kernel=i < 200))
    return b.write(d / "behind.json")


def t_cut_in_events(d: Path) -> Path:
    """A trace cut 300 bytes before its end, inside its event list (trace-incomplete's error)."""
    text = healthy(TraceBuilder(), 20).text()
    path = d / "cut-short.json"
    path.write_text(text[: len(text) - 300])
    return path


def t_before_window(d: Path) -> Path:
    b = TraceBuilder()
    b.add(spec("previous_step_tail", launch=None, repeat=2))
    return healthy(b).write(d / "before.json")


def t_range_profiler(d: Path) -> Path:
    b = TraceBuilder()
    b.add_ranged(spec("gemm", repeat=3))
    return b.write(d / "ranges.json")


def t_graph_unrecorded(d: Path) -> Path:
    b = TraceBuilder()
    nodes = [spec(f"node_{i}") for i in range(5)]
    b.add_graph(nodes)
    b.add_graph([])  # a replay whose kernels the profiler did not record
    b.add_graph(nodes)
    return b.write(d / "graph-unrecorded.json")


def t_unlinked(d: Path) -> Path:
    b = healthy(TraceBuilder(), 2)
    b.add(spec("triton_kernel", launch=None, repeat=3))
    return b.write(d / "unlinked.json")


def t_pdl(d: Path) -> Path:
    b = healthy(TraceBuilder(), 2)
    b.add(spec("moe_a", launch="cuLaunchKernelEx", dur=101.0))  # 230-331
    b.add(spec("moe_b", launch="cuLaunchKernelEx", dur=101.0))  # 330-431: 1 µs before moe_a ends
    return healthy(b, 2).write(d / "pdl.json")


def t_overlap(d: Path) -> Path:
    b = TraceBuilder()
    b.add(spec("long", dur=250.0))  # 30-280
    b.add(spec("over", dur=200.0))  # 130-330: starts inside long, ends after it
    return healthy(b, 2).write(d / "overlap.json")


def t_overlap_zero(d: Path) -> Path:
    b = TraceBuilder()
    b.add(spec("long", dur=250.0))  # 30-280
    b.add(spec("zero", dur=0.0))  # 130: nests
    b.add(spec("over", dur=200.0))  # 230-430: over long's end
    return healthy(b, 2).write(d / "overlap-zero.json")


def t_graph_overlap(d: Path) -> Path:
    b = TraceBuilder()
    b.add_graph([spec("node_0", at=0.0, dur=50.0), spec("node_1", at=40.0, dur=50.0)], flows=True)
    return b.write(d / "graph-overlap.json")


def t_sub_latency_graph(d: Path) -> Path:
    """A replay whose second kernel starts 2 µs before the first ends: under a launch's latency, 2% of the kernel
    time (issue 45 item 5)."""
    b = TraceBuilder()
    b.add_graph([spec("node_0", at=0.0, dur=50.0), spec("node_1", at=48.0, dur=50.0)], flows=True)
    return b.write(d / "graph-sub-latency.json")


def t_rounding(d: Path) -> Path:
    b = TraceBuilder()
    b.add_gpu_annotation("range", at=100.0, dur=10.5)
    b.add(spec("rounded", at=100.25, dur=10.25))  # the same decimal end; 102 ns past it in Perfetto's ns
    return b.write(d / "rounding.json")


def t_graph_replays(d: Path) -> Path:
    b = TraceBuilder()
    nodes = [spec(f"node_{i}") for i in range(5)]
    b.add_graph(nodes)
    b.add_graph(nodes)
    return b.write(d / "graph.json")


def t_capture(d: Path) -> Path:
    b = TraceBuilder()
    b.add_call("cudaStreamBeginCapture")
    b.add(spec("captured", kernel=False, repeat=3))
    b.add_call("cudaStreamEndCapture")
    return b.write(d / "capture.json")


def t_negative(d: Path) -> Path:
    b = healthy(TraceBuilder(), 2)
    b.add(spec("negative", dur=-3.0))
    return b.write(d / "negative.json")


def t_rocm_negative(d: Path) -> Path:
    b = healthy(TraceBuilder(gpu="MI300X"), 2, launch="hipLaunchKernel")
    b.add(spec("negative", dur=-3.0, launch="hipLaunchKernel"))
    return b.write(d / "rocm-negative.json")


def t_zero(d: Path) -> Path:
    b = healthy(TraceBuilder(), 2)
    b.add(spec("zero", dur=0.0, repeat=2))
    return b.write(d / "zero.json")


def t_constant_offset(d: Path) -> Path:
    return healthy(TraceBuilder(), 6, kernel_delay=-4.0).write(d / "offset.json")


def t_rocm_offset(d: Path) -> Path:
    return healthy(TraceBuilder(gpu="MI300X"), 6, kernel_delay=-4.0, launch="hipLaunchKernel").write(d / "rocm.json")


def t_drifting(d: Path) -> Path:
    b = TraceBuilder()
    for i, delay in enumerate((-1.0, -1.0, -50.0, -100.0, -150.0, -200.0)):
        b.add(spec(f"k{i}", kernel_delay=delay))
    return b.write(d / "drift.json")


def t_skewed(d: Path) -> Path:
    return rank_dir(d / "job", SKEWED)


def t_rank_missing(d: Path) -> Path:
    """Ranks 0 and 2 of a world of 3 lined up (rank_dir's traces, rank 1's left out): ranks-complete warns."""
    job = rank_dir(d / "job", LINED_UP)
    (job / "rank1.json").unlink()
    return job


def t_rank_without_collectives(d: Path) -> Path:
    """Three ranks lined up, and rank 1 re-written with no NCCL kernel (it never reached them)."""
    job = rank_dir(d / "job", LINED_UP)
    b = TraceBuilder()
    b.set_metadata("distributedInfo", {"rank": 1, "world_size": 3})
    b.add(KernelSpec("sm90_xmma_gemm_bf16", (64, 1, 1), (256, 1, 1)))
    b.write(job / "rank1.json")
    return job


def t_lined_up(d: Path) -> Path:
    return rank_dir(d / "job", LINED_UP)


def t_corrupt(d: Path) -> Path:
    return CORRUPT


def t_overhead_claims(d: Path) -> Path:
    """pytorch PR #193392's A100 report: an OVERHEAD record carrying a launch's correlation id claims its kernel."""
    b = TraceBuilder()
    b.span("ProfilerStep#3", [spec("k_add", op="aten::add", dur=8.1)], cat="user_annotation")
    b.add_overhead("Activity Buffer Request", 30.0, correlation=b.last_correlation)
    b.add(spec("k_mul", op="aten::mul", dur=5.0))
    return b.write(d / "overhead-claims.json")


def t_concurrent_streams(d: Path) -> Path:
    b = TraceBuilder()
    b.add(spec("long", dur=150.0, stream=7))  # +30 to +180
    b.add(spec("side", dur=60.0, stream=9))  # +130 to +190 on another stream: 50 µs at once
    return b.write(d / "streams.json")


def t_gpu_annotation(d: Path) -> Path:
    b = TraceBuilder()
    b.add(spec("k", dur=20.0))
    b.add_gpu_annotation("ProfilerStep#1", at=0.0, dur=95.0)  # over the kernel, on its row
    return b.write(d / "annotation.json")


def t_overhead_window(d: Path) -> Path:
    """Six 100 µs steps; the profiler's own records take 65 of the 600 µs window (10.8% > 10%), claiming nothing."""
    b = TraceBuilder()
    for n in range(6):
        b.span(f"ProfilerStep#{n}", [spec("k", dur=10.0)], cat="user_annotation")
    b.add_overhead("Activity Buffer Request", 40.0, ts=b.clock - 550)
    b.add_overhead("Lazy Function Loading", 25.0, ts=b.clock - 350)
    return b.write(d / "overhead-window.json")


@dataclass
class Case:
    playbook: str
    trace: Callable[[Path], Path] | None
    answers: dict[str, Any]
    diagnosis: str
    evidence: str
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, Callable[[Path], Path]] = field(default_factory=dict)  # answer id -> a path built for it


SESSION_ONE = {"read_when": "after", "sessions": "one"}

CASES = [
    # kernels-missing
    Case("kernels-missing", t_healthy, {}, "no-kernels-missing", "4 kernels, 4 launch calls, 0 without a kernel"),
    Case("kernels-missing", t_cut_at_end, {},
         "kernels-cut-at-stop", "1 of 301 launch calls have no kernel; 1 of them in the last 1%"),
    Case("kernels-missing", t_gpu_behind, {}, "kernels-after-window",
         "100 of 300 launch calls have no kernel; 98 of them made while the GPU ran behind at the window's end, 2 in"),
    Case("kernels-missing", t_cut_in_events, {}, "trace-cut-short", "the file ends inside its event list at byte"),
    Case("kernels-missing", t_before_window, {},
         "kernels-launched-before-window",
         "2 unlinked kernels, 2 of them with a correlation id below the first call's; 2 ran before the first"),
    Case("kernels-missing", t_range_profiler, {},
         "cupti-range-profiler-trace", "3 of 3 launch calls measured by the range profiler"),
    Case("kernels-missing", t_unlinked, {}, "unlinked-launch-api", "launch APIs recorded: cudaLaunchKernel"),
    Case("kernels-missing", t_cpu_only, {"activities": False},
         "cuda-activity-not-requested", "0 kernels, 0 launch calls in the trace"),
    Case("kernels-missing", t_cpu_only, {"activities": True, "same_machine": True}, "second-libcupti",
         "2 directories on LD_LIBRARY_PATH hold a libcupti",
         env={"LD_LIBRARY_PATH": "cuda/extras/CUPTI/lib64:venv/cupti"}),
    Case("kernels-missing", t_dropped_middle, {"read_when": "early"},
         "trace-read-before-flush", "2 of 305 launch calls have no kernel"),
    Case("kernels-missing", t_dropped_middle, {"read_when": "after", "sessions": "several"},
         "records-dropped-second-session", "2 of 305 launch calls have no kernel"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "privileges"},
         "cupti-privileges", "ERR_NVGPUCTRPERM"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "not_initialized"},
         "cupti-init-failed", "CUPTI_ERROR_NOT_INITIALIZED"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "not_available"},
         "cupti-unavailable", "pytorch/pytorch#67349"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "out_of_range"},
         "records-out-of-range", "pytorch/kineto#996"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "dropped"},
         "cupti-buffer-limit", "maxGpuBufferCount"),
    Case("kernels-missing", t_dropped_middle, {**SESSION_ONE, "log_said": "nothing"},
         "kernels-missing-cause-unknown", "2 of 305 launch calls have no kernel; 303 kernels in all"),
    Case("kernels-missing", t_corrupt, {}, "trace-unreadable", "byte 767"),
    # kernels-hidden
    Case("kernels-hidden", t_pdl, {"viewer": "perfetto"},
         "pdl-overlap-hidden", "launch APIs: cuLaunchKernelEx, cudaLaunchKernel"),
    Case("kernels-hidden", t_pdl, {"viewer": "perfetto"}, "pdl-overlap-hidden",
         "cannot nest: 1; launched with cuLaunchKernelEx/cudaLaunchKernelExC, overlapping a kernel by at most 5 µs: 1"),
    Case("kernels-hidden", t_graph_overlap, {"viewer": "perfetto"}, "graph-replay-overlap",
         "kernels Perfetto cannot nest: 1; run by graph launches: 1; graph launches: 1"),
    Case("kernels-hidden", t_sub_latency_graph, {"viewer": "perfetto"}, "sub-latency-overlap",
         "kernels Perfetto cannot nest: 1; below a launch latency: 1; in graph replays: 1"),
    Case("kernels-hidden", t_rounding, {"viewer": "perfetto"}, "overlap-from-rounding",
         "kernels Perfetto cannot nest: 1; ending at most 1 µs after the event around them: 1"),
    Case("kernels-hidden", None,
         {"have": "description", "hidden_symptom": "gap", "viewer": "perfetto", "pdl_question": True},
         "pdl-overlap-hidden", "google/perfetto#4280"),
    Case("kernels-hidden", t_overlap, {"viewer": "chrome"},
         "same-stream-overlap", "inside an earlier kernel on their stream and end after it (1 kernel), with no PDL"),
    Case("kernels-hidden", t_overlap_zero, {"viewer": "perfetto"}, "overlap-from-bad-durations", "0 negative, 1 zero"),
    Case("kernels-hidden", t_overlap, {"viewer": "analyser"}, "overlap-double-counted", "1 overlapping kernel"),
    Case("kernels-hidden", t_healthy, {}, "kernels-not-hidden", "4 kernels, 0 overlapping"),
    Case("kernels-hidden", t_corrupt, {}, "trace-unreadable", "byte 767"),
    # cuda-graphs
    Case("cuda-graphs", t_healthy, {}, "no-graph-launches", "graph launches: 0; mode eager; 4 kernels"),
    Case("cuda-graphs", t_capture, {}, "graph-capture-only", "3 captured launches, 0 graph launches, 0 kernels"),
    Case("cuda-graphs", t_graph_replays, {"goal": "per_op"},
         "graph-no-op-attribution", "2 launches ran 10 kernels; mode graph"),
    Case("cuda-graphs", t_graph_replays, {"goal": "idle", "graph_nodes": 8},
         "graph-replays-under-recorded", "kernels linked to them 10, expected 16"),
    Case("cuda-graphs", t_graph_replays, {"goal": "idle", "graph_nodes": 5},
         "graph-idle-unverified", "as many as 5 nodes per replay expect"),
    Case("cuda-graphs", t_graph_replays, {"goal": "kernels"},
         "graph-kernel-times-ok", "graph launches 2, their kernels 10"),
    Case("cuda-graphs", t_graph_unrecorded, {},
         "graph-replays-unrecorded", "graph launches 3, without a kernel 1, kernels linked to them 10"),
    Case("cuda-graphs", t_corrupt, {}, "trace-unreadable", "byte 767"),
    # impossible-timing
    Case("impossible-timing", t_negative, {}, "negative-durations-recorded", "durations: 1 GPU event"),
    Case("impossible-timing", t_rocm_negative, {}, "rocm-negative-durations", "GPUs: AMD Instinct MI300X"),
    Case("impossible-timing", t_zero, {}, "zero-durations", "Zero durations on 2 kernels: sub-microsecond"),
    Case("impossible-timing", t_constant_offset, {}, "constant-clock-offset", "smallest -4 µs, trend constant"),
    Case("impossible-timing", t_rocm_offset, {},
         "rocm-clock-source", "kernel minus launch: median -4.0 µs, trend constant"),
    Case("impossible-timing", t_drifting, {"sessions": "several"}, "clock-domain-reregistered", "trend shrinking"),
    Case("impossible-timing", t_drifting, {"sessions": "one"},
         "clock-drift", "kernel minus launch: median -75.0 µs, smallest -200.0 µs"),
    Case("impossible-timing", t_healthy, {"timing_symptom": "analyser"},
         "analyser-rounding", "negative durations in the file: 0"),
    Case("impossible-timing", t_overlap, {"timing_symptom": "overrun"},
         "duration-overrun", "kernels that overlap their stream predecessor: 1"),
    Case("impossible-timing", t_healthy, {"timing_symptom": "nothing"},
         "timing-consistent", "no negative or zero duration, no kernel before its launch"),
    Case("impossible-timing", t_corrupt, {}, "trace-unreadable", "byte 767"),
    # rank-skew
    Case("rank-skew", t_healthy, {}, "rank-skew-needs-every-rank", "what was read here (1 trace) holds one rank"),
    Case("rank-skew", t_lined_up, {}, "no-rank-skew", "collectives compared: 3"),
    Case("rank-skew", t_rank_missing, {}, "rank-directory-incomplete",
         "not one job's ranks, each once (1 rank of a world of 3 without a trace)"),
    Case("rank-skew", t_rank_without_collectives, {}, "rank-without-collectives",
         "rank 1 recorded no NCCL kernel where the other ranks did"),
    Case("rank-skew", t_skewed, {"same_host": True, "have_baseline": False},
         "rank-skew-waiting-suspected", "rank 2 starts last most often"),
    Case("rank-skew", t_skewed, {"same_host": True, "have_baseline": True}, "nccl-time-is-waiting",
         "before: median 600 µs, max 600 µs; after the barrier: median 2 µs", files={"baseline_path": t_lined_up}),
    Case("rank-skew", t_skewed, {"same_host": False, "have_baseline": True}, "host-clock-offset",
         "before: median 600 µs; after the barrier: median 600 µs", files={"baseline_path": t_skewed}),
    Case("rank-skew", t_skewed, {"same_host": True, "have_baseline": True}, "straggler-persists",
         "after the barrier: median 600 µs, max 600 µs", files={"baseline_path": t_skewed}),
    Case("rank-skew", t_corrupt, {}, "trace-unreadable", "byte 767"),
    # summary-table (its two conclusions from a timed workload: TIMED below)
    Case("summary-table", t_healthy, {}, "key-averages-consistent",
         "Self CUDA total 48 µs, GPU busy 48 µs, no overhead record claims a kernel"),
    Case("summary-table", t_overhead_claims, {},
         "overhead-records-claim-kernels", "overhead records carrying a GPU event correlation id: 1"),
    Case("summary-table", t_concurrent_streams, {}, "self-cuda-summed-past-wall-clock",
         "key_averages() Self CUDA time total 210.0 µs; the GPU was busy 160.0 µs (the union of its events)"),
    Case("summary-table", t_gpu_annotation, {}, "gpu-annotations-as-self-cuda",
         "gpu_user_annotation), 95.0 µs of them. They run no kernel of their own"),
    Case("summary-table", t_overhead_window, {"measure": False}, "profiler-overhead-in-window",
         "took 10.8% of the trace window"),
    Case("summary-table", None, {"have": "description", "described": "slower", "measure": False},
         "profiler-overhead-in-window", "took a large share of the window"),
    Case("summary-table", t_corrupt, {}, "trace-unreadable", "byte 767"),
]  # fmt: skip


def loaded(playbook: str) -> Playbook:
    """The playbook as it runs: its fragments' nodes (``uses: trace-start``) inserted."""
    return load_playbook(REPO / "playbooks" / f"{playbook}.yaml", catalog())


def conclusions(playbook: str) -> set[str]:
    return {n.diagnosis for n in loaded(playbook).nodes.values() if isinstance(n, ConclusionNode)}


def shown(data: dict[str, Any]) -> str:
    conclusion = data["conclusion"]
    lines = [conclusion["summary"], *conclusion["evidence"], *conclusion.get("fix", [])]
    lines += [line for e in data["entries"] for line in (e.get("evidence") or [])]
    return " ".join(" ".join(lines).split())


def walk(run_cli: RunCli, case: Case, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    answers: dict[str, Any] = {"have": "trace"}
    if case.trace is not None:
        answers["trace_path"] = str(case.trace(tmp_path))
    for key, build in case.files.items():
        base = tmp_path / key
        base.mkdir()
        answers[key] = str(build(base))
    answers.update(case.answers)
    path = tmp_path / "answers.yaml"
    path.write_text(yaml.safe_dump(answers))
    if case.env:  # a machine with these variables, and libcupti files where LD_LIBRARY_PATH looks
        paths = [tmp_path / d for d in case.env.get("LD_LIBRARY_PATH", "").split(":") if d]
        for directory in paths:
            directory.mkdir(parents=True)
            (directory / "libcupti.so.12").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00")  # ET_DYN
        env = cli_env(WARPWIZARD_REPORT_DIR=str(tmp_path / "report"), LD_LIBRARY_PATH=":".join(map(str, paths)))
    result = run_cli("run", case.playbook, "--answers", str(path), "--json", *extra, env=env)
    assert result.returncode == 0, result.stderr
    return strict_json(result.stdout)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.playbook}:{c.diagnosis}")
def test_each_conclusion_is_reached_from_answers(run_cli: RunCli, case: Case, tmp_path: Path) -> None:
    data = walk(run_cli, case, tmp_path)
    assert data["conclusion"]["diagnosis"] == case.diagnosis, shown(data)
    assert case.evidence in shown(data), shown(data)


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_conclusion_has_a_case(playbook: str) -> None:
    cases: list[Case | Measured | Timed] = [*CASES, *MEASURED, *TIMED]
    reached = {c.diagnosis for c in cases if c.playbook == playbook}
    assert reached == conclusions(playbook)


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_each_playbook_validates(run_cli: RunCli, playbook: str) -> None:
    result = run_cli("validate", f"playbooks/{playbook}.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_each_starts_like_the_flagship(playbook: str) -> None:
    """One answers file starts any of them, and a triage continues into them sharing the inspection."""

    def head(name: str) -> dict[str, Any]:
        pb = loaded(name)
        have, trace_path, inspect = pb.nodes["have"], pb.nodes["trace_path"], pb.nodes["inspect"]
        assert isinstance(have, QuestionNode) and isinstance(trace_path, QuestionNode)
        assert isinstance(inspect, ProbeNode)
        return {
            "first": pb.start,
            "choices": [(c.value, c.label) for c in have.choices],
            "trace_path": (trace_path.type, trace_path.validation, trace_path.next),
            "inspect": (inspect.probe, {k: getattr(v, "source", v) for k, v in inspect.params.items()}),
        }

    assert head(playbook) == head("negative-warps-per-sm")
    pb = loaded(playbook)
    missing = [n.id for n in pb.nodes.values() if not isinstance(n, ConclusionNode) and not n.explain]
    missing = [
        i for i in missing if i not in ("baseline_path", "replay_route", "log_route", "persist_route", "platform")
    ]
    assert not missing, f"nodes without explain: {missing}"
    assert all(s.explain for s in pb.steps)


# -- the measured path: the kineto_log probe on a machine with a GPU, through the injected runner -------------


NO_VALIDATOR = {"ok": True, "available": False, "reason": "not here"}  # torch's trace validator, as a torch without it


def answered(argv: list[str], result: dict[str, Any], log_path: Path | None, before: str = "") -> Any:
    """A harness run as the runner returns it: what it printed (``before``), then its result line."""
    from wizard.runner import CommandResult

    output = before + "WARPWIZARD_RESULT " + json.dumps(result) + "\n"
    return CommandResult(argv, 0, output, 0.1, False, log_path=str(log_path) if log_path else None)


class FakeHarness:
    """The runner of the probed interpreter's harness runs, faked: PyTorch's validator (every health playbook's
    start asks for it) answers as a torch without it; every other run is recorded (``calls``, ``envs``) and answered
    by ``answer``."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.envs: list[dict[str, str]] = []

    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> Any:
        argv = [str(a) for a in argv]
        if argv[2:3] == ["validate"]:
            return answered(argv, NO_VALIDATOR, log_path)
        self.calls.append(argv)
        self.envs.append(dict(env or {}))
        return self.answer(argv, log_path)

    def answer(self, argv: list[str], log_path: Path | None) -> Any:
        raise NotImplementedError


class GpuHarness(FakeHarness):
    """Answers the harness as a CUDA machine's would: writes the fresh trace the profile asked for and
    prints Kineto's log."""

    def __init__(self, log: str, trace: Callable[[Path], Path]) -> None:
        super().__init__()
        self.log, self.trace = log, trace

    def answer(self, argv: list[str], log_path: Path | None) -> Any:
        mode = argv[2] if len(argv) > 2 else ""
        if mode == "profile":
            out = Path(argv[3])
            (out.parent / "built").mkdir(exist_ok=True)
            built = self.trace(out.parent / "built")
            out.write_bytes(built.read_bytes())
            result = {"ok": True, "exit_code": 0, "cuda_available": True, "torch_version": "2.13.0+cu130"}
            return answered(argv, result, log_path, before=self.log + "\n")
        return answered(argv, {"ok": True, "dirs": []}, log_path)


def run_with(
    runner: Any, *args: str, cwd: Path, which: Callable[[str], str | None] = shutil.which
) -> tuple[int, str, str]:
    from wizard.cli.app import main
    from wizard.system import System

    out, err = io.StringIO(), io.StringIO()
    environ = cli_env(WARPWIZARD_REPORT_DIR=str(cwd / "report"))
    system = System(stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ, runner=runner,
                    isatty=lambda s: False, which=which)  # fmt: skip
    status = main(["--debug", *args], system)
    return status, out.getvalue(), err.getvalue()


RECORD_COUNTS = (
    "INFO:2026-11-30 22:10:01 4242:4242 CuptiActivityProfiler.cpp:1012] Processed 305 GPU records (9760 bytes)\n"
    "INFO:2026-11-30 22:10:01 4242:4242 CuptiActivityProfiler.cpp:1120] Record counts: Out-of-range = 2, "
    "Blocklisted runtime = 0, Invalid ext correlations = 0, CPU GPU out-of-order = 0, Unexpected CUDA events = 0, "
    "CUPTI stopped early? = 0\n"
)


@dataclass
class Measured:
    playbook: str
    log: str
    fresh: Callable[[Path], Path]
    diagnosis: str
    evidence: str


MEASURED = [
    Measured("kernels-missing", RECORD_COUNTS, t_dropped_middle, "records-out-of-range",
             "Record counts: Out-of-range = 2"),
    Measured("kernels-missing", "INFO: Record counts: Out-of-range = 0, Blocklisted runtime = 0\n", t_healthy,
             "kernels-missing-not-reproduced", "records every kernel (4 of 4 launches)"),
    Measured("kernels-missing", "WARNING: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: see ERR_NVGPUCTRPERM\n", t_cpu_only,
             "cupti-privileges", "ERR_NVGPUCTRPERM"),
    Measured("kernels-missing", "ERROR: cuptiActivityEnable failed: CUPTI_ERROR_NOT_INITIALIZED\n", t_cpu_only,
             "cupti-init-failed", "CUPTI_ERROR_NOT_INITIALIZED"),
    Measured("kernels-missing", "UserWarning: CUPTI tracing is not available, falling back to legacy CUDA profiling\n",
             t_cpu_only, "cupti-unavailable", "falling back"),
    Measured("kernels-missing", "WARNING: CUPTI dropped 120 activity records (maxGpuBufferCount reached)\n", t_healthy,
             "cupti-buffer-limit", "dropped records: 120"),
]  # fmt: skip


@pytest.mark.parametrize("case", MEASURED, ids=lambda c: c.diagnosis)
def test_the_measured_path_on_a_gpu_machine(case: Measured, tmp_path: Path) -> None:
    """kernels-missing with a workload on a (simulated) CUDA machine: the probe runs the harness once with
    KINETO_LOG_LEVEL=0 and the playbook concludes from Kineto's log and the fresh trace's counts."""
    trace = t_dropped_middle(tmp_path)
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(trace), **SESSION_ONE}))
    runner = GpuHarness(case.log, case.fresh)
    status, out, err = run_with(runner, "run", case.playbook, "--answers", str(answers), "--json",
                                "--workload", "python train.py", cwd=tmp_path)  # fmt: skip
    assert status == 0, err
    data = strict_json(out)
    assert data["conclusion"]["diagnosis"] == case.diagnosis, shown(data)
    assert case.evidence in shown(data), shown(data)
    (profiled,) = [i for i, argv in enumerate(runner.calls) if argv[2] == "profile"]
    assert runner.envs[profiled]["KINETO_LOG_LEVEL"] == "0"
    assert runner.calls[profiled][-2:] == ["--", "train.py"]


# -- summary-table's timed path: the profiler.overhead probe's harness run, through the injected runner ----------


class OverheadHarness(FakeHarness):
    """Answers the harness's ``overhead`` mode with these timings, in the keys harness.py's ``overhead`` emits; any
    other harness run (PyTorch's validator aside) fails the test (the playbook asks for none)."""

    def __init__(self, plain: list[float], profiled: list[float]) -> None:
        super().__init__()
        self.plain, self.profiled = plain, profiled

    def answer(self, argv: list[str], log_path: Path | None) -> Any:
        assert argv[2] == "overhead", argv
        result = {"ok": True, "exit_code": 0, "cuda_available": True, "failure": None, "torch_version": "2.13.0",
                  "plain_s": self.plain, "profiled_s": self.profiled,
                  "plain_cpu_s": self.plain, "profiled_cpu_s": self.profiled}  # fmt: skip
        return answered(argv, result, log_path)


@dataclass
class Timed:
    playbook: str
    plain: list[float]
    profiled: list[float]
    diagnosis: str
    evidence: str


TIMED = [
    Timed("summary-table", [1.0] * 5, [1.25] * 5, "profiler-inflates-the-step",
          "took 25% longer than without it: above 10%"),  # fail: above 20%
    Timed("summary-table", [1.0] * 5, [1.0, 1.2, 1.15, 1.1, 1.2], "profiler-inflates-the-step",
          "plain median 1 s, profiled median 1.15 s"),  # warn: 15%, between 10% and 20%
    Timed("summary-table", [2.0, 2.0, 2.1, 1.9, 2.0], [2.1] * 5, "profiler-overhead-small",
          "took 5% longer than without it: within 10%"),
]  # fmt: skip


@pytest.mark.parametrize("case", TIMED, ids=lambda c: f"{c.diagnosis}:{max(c.profiled)}")
def test_the_timed_path_with_a_workload(case: Timed, tmp_path: Path) -> None:
    """A trace whose profiler records take over 10% of the window, a workload to time: the probe runs the harness
    once (5 plain and 5 profiled runs) and the playbook concludes from the medians."""
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(t_overhead_window(tmp_path)),
                                       "measure": True}))  # fmt: skip
    runner = OverheadHarness(case.plain, case.profiled)
    status, out, err = run_with(runner, "run", case.playbook, "--answers", str(answers), "--json",
                                "--workload", "python train.py", cwd=tmp_path)  # fmt: skip
    assert status == 0, err
    data = strict_json(out)
    assert data["conclusion"]["diagnosis"] == case.diagnosis, shown(data)
    assert case.evidence in shown(data), shown(data)
    (call,) = runner.calls
    assert call[2:] == ["overhead", "5", "--", "train.py"]


def test_nothing_to_time_concludes_from_the_window(run_cli: RunCli, tmp_path: Path) -> None:
    """Yes to timing but no workload: the probe skips and overhead_route's default concludes from the trace."""
    case = Case("summary-table", t_overhead_window, {"measure": True}, "profiler-overhead-in-window", "")
    data = walk(run_cli, case, tmp_path)
    assert [e["node"] for e in data["entries"]] == [
        "have", "trace_path", "inspect", "route", "measure", "overhead_probe", "overhead_route", "overhead_share"
    ]  # fmt: skip
    probe = data["entries"][5]
    assert (probe["status"], probe["summary"]) == (
        "skip", 'profiler.overhead: no workload given (run with --workload "python train.py --steps 3")'
    )  # fmt: skip
    assert data["conclusion"]["diagnosis"] == "profiler-overhead-in-window"
    assert "took 10.8% of the trace window" in shown(data)
    assert "schedule(wait=1, warmup=1, active=3)" in shown(data) and "nsys" not in shown(data)  # torch.profiler's


@pytest.mark.skipif(not (TRACES / "nsys-mock.sqlite").exists(), reason="needs ../shared/traces")
def test_an_nsys_export_s_overhead_is_answered_with_nsys_s_warm_up(run_cli: RunCli, tmp_path: Path) -> None:
    """A newcomer's walk: the overhead records of an Nsight Systems export were answered with torch.profiler's
    schedule(wait=1, warmup=1, active=3), which nsys does not read; its warm-up is skipped by where nsys captures."""
    case = Case("summary-table", lambda _: TRACES / "nsys-mock.sqlite", {"measure": False},
                "profiler-overhead-in-window", "")  # fmt: skip
    data = walk(run_cli, case, tmp_path)
    assert data["conclusion"]["diagnosis"] == "profiler-overhead-in-window"
    said = shown(data)
    assert "nsys profile --capture-range=cudaProfilerApi" in said and "--delay SECONDS" in said
    assert "schedule(" not in said


# -- the flagship's conclusions that no example reaches ------------------------------------------------------

FLAGSHIP = "negative-warps-per-sm"
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float> >"


def t_garbled(d: Path) -> Path:
    """examples/build.py's unexplained-aten-op: values no mechanism explains, on an op with recorded shapes."""
    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec(MUL, (2048, 1, 1), (128, 1, 1), 24, 0, "aten::mul", [[1024, 256], [1024, 256]],
                     ["float", "float"], plant="garbled"))  # fmt: skip
    return b.write(d / "garbled.json")


def t_garbled_tall_grid(d: Path) -> Path:
    """The same unexplained values on a grid no legal launch has (y above 65535)."""
    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("void my_ext::k<float>", (64, 70000, 1), (256, 1, 1), plant="garbled"))
    return b.write(d / "tall-grid.json")


def t_old_sm_count(d: Path) -> Path:
    """The workload profiled again shows a known mechanism: B, an SM count read as -1."""
    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec(MUL, (2048, 1, 1), (128, 1, 1), 24, 0, "aten::mul", [[1024, 256], [1024, 256]],
                     ["float", "float"], plant="B"))  # fmt: skip
    return b.write(d / "fresh-b.json")


def two_machines(d: Path) -> list[str]:
    """--compare reports of the same kernel from two machines: mechanism D on the H100 only (test_cli_run's)."""
    from tests.conftest import run_inprocess

    args = []
    for host, gpu, plant in (("node3", "H100", "D"), ("node4", "A100", None)):
        b = TraceBuilder(gpu=gpu)
        b.add(KernelSpec("gemm_kernel", (64, 8, 1), (256, 1, 1), plant=plant))
        report = d / f"{host}.json"
        report.write_text(run_inprocess("trace", "inspect", "--json", str(b.write(d / f"{host}-trace.json"))).stdout)
        args += ["--compare", str(report)]
    return args


def no_args(d: Path) -> list[str]:
    return []


class CudaHarness(FakeHarness):
    """The harness and op.isolate's repro as a CUDA machine's would answer: ``profile`` writes ``fresh``'s trace
    (None: no trace at all), the repro writes ``repro``'s; the legacy profiler reports nothing to use."""

    def __init__(self, fresh: Callable[[Path], Path] | None = None, repro: Callable[[Path], Path] | None = None):
        super().__init__()
        self.fresh, self.repro = fresh, repro

    def answer(self, argv: list[str], log_path: Path | None) -> Any:
        result: dict[str, Any]
        if argv[1].endswith("repro.py"):
            assert self.repro is not None, argv
            Path(argv[2]).write_bytes(self.repro(Path(argv[2]).parent).read_bytes())
            result = {"ok": True, "device": "cuda", "error": None, "output": argv[2]}
        elif argv[2] == "profile":
            if self.fresh is not None:
                Path(argv[3]).write_bytes(self.fresh(Path(argv[3]).parent).read_bytes())
            result = {"ok": True, "exit_code": 0, "cuda_available": True, "torch_version": "2.13.0+cu130"}
        else:
            result = {"ok": True, "exit_code": 0, "cuda_available": True, "torch_version": "2.13.0+cu130", "dirs": []}
        return answered(argv, result, log_path)


@dataclass
class FlagshipCase:
    trace: Callable[[Path], Path] | None
    answers: dict[str, Any]
    diagnosis: str
    evidence: str
    harness: Callable[[], CudaHarness] | None = None  # None: the real runner, through the run_cli fixture
    args: Callable[[Path], list[str]] = no_args


WORKLOAD = ("--workload", "python train.py")

FLAGSHIP_CASES = [
    FlagshipCase(None, {"have": "description", "symptom": "negative", "torch_era": "some"},
                 "likely-profiler-bug-grid-overflow", "Most likely mechanism A"),
    FlagshipCase(None, {"have": "description", "symptom": "non_finite"}, "likely-profiler-bug-unknown-device",
                 "Most likely mechanism C: the profiler did not know the device's SM count and divided by 0"),
    FlagshipCase(t_garbled_tall_grid, {"other_profile": "", "custom_kernel": True, "launch_math": True},
                 "kernel-launch-configuration",
                 "(grid 64x70000x1 = 4480000 blocks, block 256x1x1 = 256 threads)"),
    FlagshipCase(t_garbled, {"other_profile": "", "custom_kernel": False}, "hardware-or-driver-specific",
                 "hardware or driver specific: D only on", args=two_machines),
    FlagshipCase(t_garbled, {"other_profile": "", "custom_kernel": False}, "op-specific",
                 'The op aten::mul alone, with shapes [[1024,256],[1024,256]] and dtypes ["float","float"], reproduces '
                 "the anomaly (?)", harness=lambda: CudaHarness(repro=t_garbled)),
    FlagshipCase(t_garbled, {"other_profile": ""}, "profiler-bug-unknown",
                 "fresh torch.profiler trace: mechanisms ['B']", harness=lambda: CudaHarness(fresh=t_old_sm_count),
                 args=lambda d: list(WORKLOAD)),
    FlagshipCase(t_garbled, {"other_profile": ""}, "not-reproduced",
                 "fresh torch.profiler trace: mechanisms none", harness=lambda: CudaHarness(fresh=t_healthy),
                 args=lambda d: list(WORKLOAD)),
    FlagshipCase(None, {"have": "workload", "workload_cmd": "python train.py"}, "workload-not-profiled",
                 "Your workload was not profiled (error: see the probe above)", harness=CudaHarness,
                 args=lambda d: ["--allow-commands"]),
]  # fmt: skip


@pytest.mark.parametrize("case", FLAGSHIP_CASES, ids=lambda c: c.diagnosis)
def test_the_flagship_conclusions_no_example_reaches(run_cli: RunCli, case: FlagshipCase, tmp_path: Path) -> None:
    as_case = Case(FLAGSHIP, case.trace, case.answers, case.diagnosis, case.evidence)
    extra = case.args(tmp_path)
    if case.harness is None:
        data = walk(run_cli, as_case, tmp_path, *extra)
    else:
        answers: dict[str, Any] = {"have": "trace", **({"trace_path": str(case.trace(tmp_path))} if case.trace else {})}
        path = tmp_path / "answers.yaml"
        path.write_text(yaml.safe_dump({**answers, **case.answers}))
        status, out, err = run_with(case.harness(), "run", FLAGSHIP, "--answers", str(path), "--json", *extra,
                                    cwd=tmp_path, which=lambda name: None)  # fmt: skip
        assert status == 0, err
        data = strict_json(out)
    assert data["conclusion"]["diagnosis"] == case.diagnosis, shown(data)
    assert case.evidence in shown(data), shown(data)  # what the run shows, not a probe's one-line summary


# The flagship's conclusions a test in another file reaches through the CLI and asserts (the examples aside:
# tests/first_hour/test_examples.py::test_example_reaches_its_diagnosis walks every entry of examples/manifest.yaml).
ELSEWHERE = {
    "trace-cut-off-before-kernels":  # a trace cut off before its kernels
    "tests/trace/test_wild_traces.py::test_kernels_lost_with_the_end_of_a_cut_off_trace",
    "workload-failed":  # a real CPU run (torch)
    "tests/safety/test_safety.py::test_python_dash_c_workload_and_a_failing_one",
    "kernel-launch-failure":  # a recorded H200 device-side assert replayed by a real workload (torch)
    "tests/probes/test_gpu_recordings.py::test_flagship_sends_a_workload_that_dies_under_the_profiler_to_step_4",
    "likely-profiler-bug-occupancy-calculator": "tests/cli/test_cli_run.py::test_set_answers_on_the_command_line",
    "profiler-bug-other-profile":  # step 1 decided by a second profile the user has (issue 50)
    "tests/trace/test_diff.py::test_the_flagship_decides_step_1_with_a_profile_the_user_has",
}


def asserted_in(test: str, diagnosis: str) -> bool:
    """Whether the named test function asserts that the conclusion's diagnosis is this one."""
    import ast

    file, name = test.split("::")
    source = (REPO / file).read_text()
    (function,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name]
    return f'["diagnosis"] == "{diagnosis}"' in (ast.get_source_segment(source, function) or "")


def test_every_flagship_conclusion_is_reached() -> None:
    examples = yaml.safe_load((REPO / "examples" / "manifest.yaml").read_text())["examples"]
    by_example = {e["diagnosis"] for e in examples if e["playbook"] == FLAGSHIP}
    here = {c.diagnosis for c in FLAGSHIP_CASES}
    assert [d for d, test in ELSEWHERE.items() if not asserted_in(test, d)] == []
    assert by_example | here | set(ELSEWHERE) == conclusions(FLAGSHIP)
    assert here.isdisjoint(by_example | set(ELSEWHERE))  # each case here reaches what nothing else does


def test_every_playbook_the_triage_offers_has_each_conclusion_reached() -> None:
    """A playbook the triage offers (a `triage:` block) joins PLAYBOOKS, whose every conclusion
    test_every_conclusion_has_a_case requires a case for; the flagship's, test_every_flagship_conclusion_is_reached."""
    offered = {
        loaded(path.stem).id for path in (REPO / "playbooks").glob("*.yaml") if declared_triage(path) is not None
    }
    assert offered == {*PLAYBOOKS, FLAGSHIP}


def test_examples_list_the_health_playbooks(run_cli: RunCli, tmp_path: Path) -> None:
    listed = run_cli("examples").stdout
    for name in PLAYBOOKS:
        assert f"(warpwizard run {name})" in listed
    copied = run_cli("examples", "rank-skew", "--to", str(tmp_path / "try"))
    assert copied.returncode == 0, copied.stderr
    assert f"try it: warpwizard run rank-skew --answers {tmp_path / 'try' / 'answers.yaml'}" in copied.stdout
    assert sorted(p.name for p in (tmp_path / "try" / "rank-skew-baseline").iterdir()) == [
        "rank0.json", "rank1.json", "rank2.json"
    ]  # fmt: skip
    result = run_cli("run", "rank-skew", "--answers", str(tmp_path / "try" / "answers.yaml"), "--json")
    assert strict_json(result.stdout)["conclusion"]["diagnosis"] == "nccl-time-is-waiting"


def test_the_graphs_doc_is_current() -> None:
    from wizard.playbook.graph import mermaid
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    committed = (REPO / "docs" / "playbook-graphs.md").read_text()
    for path in sorted((REPO / "playbooks").glob("*.yaml")):
        pb = load_playbook(path, catalog())
        assert f"## {pb.id}\n" in committed and "```mermaid\n" + mermaid(pb) + "```" in committed, (
            "run: bash scripts/update-graph"
        )


def test_the_readme_lists_every_playbook() -> None:
    readme = (REPO / "README.md").read_text()
    for path in (REPO / "playbooks").glob("*.yaml"):
        assert f"| [`{path.stem}`](playbooks/{path.name}) |" in readme
