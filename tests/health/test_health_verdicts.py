"""Issue 33: the health check is right about the world, and quiet when nothing is wrong.

Each rule on a trace the builder writes with the problem planted (the one right count and status), the CI gate
(`trace inspect` with the default `--fail-on warning`) through the real CLI on each benign case and each real
problem, and the playbooks' conclusions on them. The shared traces are checked against tests/health_oracle.py
in test_health_oracle.py.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, RunCli, strict_json
from tests.helpers import inspect_json, rank_dir
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.spec import GRAPH_LAUNCH_CALLS, LAUNCH_APIS, LAUNCH_CALLS, RANK_SKEW_FLOOR_US
from wizard.trace.metrics.mechanisms import Mechanism

SMEM = 64 * 1024  # above Kineto's 48 KB default: mechanism E on a big grid


def spec(name: str = "k", **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), **kw)


def healthy(b: TraceBuilder, n: int = 4, **kw: Any) -> TraceBuilder:
    for i in range(n):
        b.add(spec(f"healthy_{i}", python_stack=("train.py(12): step",), **kw))
    return b


def inspect(run_cli: RunCli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """The CI gate: `trace inspect --json` with the default --fail-on; its exit code and each check by id."""
    result = run_cli("trace", "inspect", "--json", *extra, str(path))
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr == "", result.stderr
    data = strict_json(result.stdout)
    found = {c["check"]: c for r in data["reports"] for c in r["health"]}
    found.update({c["check"]: c for c in data["health"]})
    return result.returncode, found


def conclude(run_cli: RunCli, playbook: str, trace: Path, tmp_path: Path, **answers: Any) -> dict[str, Any]:
    path = tmp_path / f"{playbook}-answers.yaml"
    path.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(trace), **answers}))
    result = run_cli("run", playbook, "--answers", str(path), "--json")
    assert result.returncode == 0, result.stderr
    return strict_json(result.stdout)["conclusion"]  # type: ignore[no-any-return]


def words(conclusion: dict[str, Any]) -> str:
    return " ".join(" ".join([conclusion["summary"], *conclusion["evidence"], *conclusion.get("fix", [])]).split())


# -- 1. impossible-metrics: the flagship's own verdict per mechanism, from one table ---------------------------


def test_every_mechanism_has_the_verdict_of_its_flagship_conclusion() -> None:
    """Mechanism.conclusion / .verdict are the one table: each names a conclusion of the flagship whose severity
    is the verdict, and the flagship's route sends each mechanism it names to that conclusion."""
    doc = yaml.safe_load((REPO / "playbooks" / "negative-warps-per-sm.yaml").read_text())
    nodes = {n["id"]: n for n in doc["nodes"]}
    routed = {}
    for branch in nodes["route_mechanism"]["branches"]:
        named = re.fullmatch(r"""['"](.+)['"] in facts\.inspect\.mechanisms""", branch["when"])
        assert named, branch["when"]
        routed[named.group(1)] = branch["goto"]
    for m in Mechanism:
        node = nodes[m.conclusion]
        assert node["kind"] == "conclusion", m
        assert node["severity"] == m.verdict, f"{m.value}: {m.conclusion} is {node['severity']}, not {m.verdict}"
        if m.value in routed:
            assert routed[m.value] == m.conclusion, m
    assert set(routed) == {"A", "A'", "B", "C", "D", "E", "G"}
    assert Mechanism.SHARED_MEMORY_LIMIT.verdict == "info"


def e_only(d: Path) -> Path:
    b = healthy(TraceBuilder(gpu="H100"), 2)
    b.add(KernelSpec("cutlass_gemm", (4096, 1, 1), (96, 1, 1), shared_memory=SMEM, repeat=3))
    return b.write(d / "e-only.json")


def grid_overflow(d: Path) -> Path:
    b = healthy(TraceBuilder(gpu="H100"), 2)
    b.add(KernelSpec("huge_elementwise", (2147483647, 2, 1), (32, 1, 1)))
    b.add(KernelSpec("cutlass_gemm", (4096, 1, 1), (96, 1, 1), shared_memory=SMEM))
    return b.write(d / "a-and-e.json")


def test_e_only_is_info_and_passes_the_gate(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, e_only(tmp_path))
    metrics = found["impossible-metrics"]
    assert (metrics["status"], metrics["count"], metrics["mechanisms"]) == ("info", 3, {"E": 3})
    assert code == 0
    assert conclude(run_cli, "triage", e_only(tmp_path), tmp_path)["diagnosis"] == "trace-healthy"


def test_a_wrong_grid_product_beside_e_is_a_warning_and_fails_the_gate(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, grid_overflow(tmp_path))
    metrics = found["impossible-metrics"]
    assert (metrics["status"], metrics["count"], metrics["mechanisms"]) == ("warning", 2, {"A": 1, "E": 1})
    assert code == 1


# -- 2. unlinked kernels launched before the window --------------------------------------------------------


def before_window(d: Path, *, inside: bool = False) -> Path:
    """Three kernels of the previous step (no launch call; ids 100-102, below the first call's 103): two run
    before the first call, one long after it opened (the time-based count misses it)."""
    b = TraceBuilder()
    b.add(spec("optimizer_tail", launch=None, repeat=2))
    b.add(spec("optimizer_late", launch=None, kernel_delay=2000.0))
    healthy(b, 4)
    if inside:
        b.add(spec("triton_kernel", launch=None))  # an id inside the window: a lost link
    return b.write(d / ("inside.json" if inside else "before.json"))


def test_kernels_launched_before_the_window_are_info_and_pass_the_gate(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, before_window(tmp_path))
    unlinked = found["unlinked-kernels"]
    assert (unlinked["status"], unlinked["count"], unlinked["before_window"], unlinked["before_first_call"]) == (
        "info", 3, 3, 2,
    )  # fmt: skip
    assert code == 0


def test_a_kernel_unlinked_inside_the_window_is_a_warning(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, before_window(tmp_path, inside=True))
    unlinked = found["unlinked-kernels"]
    assert (unlinked["status"], unlinked["count"], unlinked["before_window"]) == ("warning", 4, 3)
    assert [e["name"] for e in unlinked["examples"]] == ["triton_kernel"]  # the one that is a problem
    assert code == 1


def test_kernels_missing_concludes_before_the_window_never_upgrade_pytorch(tmp_path: Path, run_cli: RunCli) -> None:
    conclusion = conclude(run_cli, "kernels-missing", before_window(tmp_path), tmp_path)
    assert conclusion["diagnosis"] == "kernels-launched-before-window"
    said = words(conclusion)
    assert "3 unlinked kernels, 3 of them with a correlation id below the first call's; 2 ran before" in said
    assert "Start the profiler a step earlier, or use a schedule with warm-up" in said
    assert "upgrade" not in said.lower()
    assert conclude(run_cli, "triage", before_window(tmp_path), tmp_path)["diagnosis"] == "trace-healthy"


# -- 5. graph launches: info unless replays went unrecorded ------------------------------------------------


def decode(d: Path, *, unrecorded: int = 0) -> Path:
    b = TraceBuilder()
    nodes = [spec(f"decode_layer_{i}") for i in range(6)]
    for _ in range(4):
        b.add_graph(nodes, call="cudaGraphLaunch_ptsz")
    for _ in range(unrecorded):
        b.add_graph([])
    return b.write(d / f"decode-{unrecorded}.json")


def test_a_graph_trace_with_every_replay_recorded_is_info(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, decode(tmp_path))
    graphs = found["graph-launches"]
    assert (graphs["status"], graphs["count"], graphs["kernels"], graphs["unrecorded"]) == ("info", 4, 24, 0)
    assert code == 0
    assert conclude(run_cli, "triage", decode(tmp_path), tmp_path)["diagnosis"] == "trace-healthy"


def test_an_unrecorded_replay_is_a_warning_and_the_playbook_says_so(tmp_path: Path, run_cli: RunCli) -> None:
    trace = decode(tmp_path, unrecorded=2)
    code, found = inspect(run_cli, trace)
    graphs = found["graph-launches"]
    assert (graphs["status"], graphs["count"], graphs["kernels"], graphs["unrecorded"]) == ("warning", 6, 24, 2)
    assert [e["name"] for e in graphs["examples"]] == ["cudaGraphLaunch", "cudaGraphLaunch"]
    assert code == 1
    conclusion = conclude(run_cli, "cuda-graphs", trace, tmp_path)
    assert conclusion["diagnosis"] == "graph-replays-unrecorded"
    assert "graph launches 6, without a kernel 2, kernels linked to them 24" in words(conclusion)


# -- 6. the CUPTI range profiler: counters per kernel, not dropped kernels -----------------------------------


def ranged(d: Path, *, dropped: bool = False) -> Path:
    b = TraceBuilder()
    b.add_ranged(spec("gemm", repeat=4), {"sm__inst_executed_pipe_tensor.sum": 4096.0})
    if dropped:
        b.add(spec("lost", kernel=False))
        b.add_ranged(spec("gemm_after"))
    return b.write(d / ("ranged-dropped.json" if dropped else "ranged.json"))


def test_a_range_profiler_trace_dropped_nothing(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, ranged(tmp_path))
    missing = found["kernels-missing"]
    assert (missing["status"], missing["count"], missing["profiler_ranges"]) == ("info", 4, 4)
    assert missing["summary"].startswith("a CUPTI range-profiler trace: 4 launches of 4 have a cuda_profiler_range")
    assert "dropped" not in missing["summary"]
    assert code == 0
    assert conclude(run_cli, "triage", ranged(tmp_path), tmp_path)["diagnosis"] == "cupti-range-profiler-trace"
    assert conclude(run_cli, "kernels-missing", ranged(tmp_path), tmp_path)["diagnosis"] == "cupti-range-profiler-trace"


def test_a_launch_with_neither_kernel_nor_range_is_still_a_drop(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, ranged(tmp_path, dropped=True))
    missing = found["kernels-missing"]
    assert (missing["status"], missing["count"], missing["profiler_ranges"]) == ("error", 6, 5)
    assert [e["correlation"] for e in missing["examples"]] == [104]  # the lost one
    assert code == 1


# -- 7. rank skew: a floor between launch jitter and waiting -----------------------------------------------

JITTER: list[list[float]] = [[0, 0, 0], [20, 0, 0], [0, 17, 0]]  # starts apart by 20, 20 and 20 µs: NCCL launch jitter
STRAGGLER: list[list[float]] = [[0, 0, 0], [400, 0, 0], [100, 500, 0]]  # 400, 600, 600 µs


def test_jitter_level_rank_skew_is_info_and_passes_the_gate(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, rank_dir(tmp_path / "job", JITTER))
    skew = found["rank-skew"]
    assert (skew["status"], skew["count"], skew["median_us"], skew["floor_us"]) == ("info", 3, 20.0, 100.0)
    assert code == 0
    conclusion = conclude(run_cli, "rank-skew", tmp_path / "job", tmp_path)
    assert conclusion["diagnosis"] == "no-rank-skew"
    assert "median skew 20 µs, below the 100 µs floor" in words(conclusion)


def test_a_straggler_is_a_warning_and_fails_the_gate(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, rank_dir(tmp_path / "job", STRAGGLER))
    skew = found["rank-skew"]
    assert (skew["status"], skew["count"], skew["median_us"]) == ("warning", 3, 600.0)
    assert code == 1


def test_the_floor_is_settable_from_the_cli_and_the_api(tmp_path: Path, run_cli: RunCli) -> None:
    job = rank_dir(tmp_path / "job", JITTER)
    code, found = inspect(run_cli, job, "--rank-skew-floor-us", "20")
    assert (found["rank-skew"]["status"], found["rank-skew"]["floor_us"], code) == ("warning", 20.0, 1)
    import wizard

    complete, check = wizard.inspect_traces(job, rank_skew_floor_us=25.0, jobs=1).job_health
    assert (complete.check, complete.status, check.check) == ("ranks-complete", "ok", "rank-skew")
    assert (check.status, check.details["floor_us"]) == ("info", 25.0)
    assert RANK_SKEW_FLOOR_US == 100.0
    for bad in ("-1", "nan", "inf"):
        result = run_cli("trace", "inspect", "--rank-skew-floor-us", bad, str(job))
        assert result.returncode == 2
        assert (
            result.stderr.strip()
            .splitlines()[-1]
            .endswith(f"--rank-skew-floor-us must be a finite number of µs, 0 or more, not {float(bad)}")
        ), result.stderr


def test_the_rank_skew_playbook_and_the_baseline_probe_read_the_checks_floor() -> None:
    from wizard.probes import rank_baseline

    assert rank_baseline.FLOOR_US == RANK_SKEW_FLOOR_US == 100.0
    text = (REPO / "playbooks" / "rank-skew.yaml").read_text()
    assert "facts.inspect.rank_skew_median_us >= facts.inspect.rank_skew_floor_us" in text
    assert ">= 10" not in text


# -- issue 36 item 13: a spread that is not a number is no verdict ------------------------------------------


def far_apart(directory: Path) -> Path:
    """Two ranks whose collective starts lie near -1.7e308 and +1.7e308 µs: their difference overflows to inf."""
    directory.mkdir()
    for rank, wait in ((0, -1.7e308), (1, 1.7e308)):
        b = TraceBuilder()
        b.set_metadata("distributedInfo", {"rank": rank, "world_size": 2})
        b.wait(wait)
        b.add(spec("ncclDevKernel_AllReduce_Sum_f32_RING_LL"))
        b.write(directory / f"rank{rank}.json")
    return directory


def test_a_non_finite_skew_is_not_a_verdict(tmp_path: Path, run_cli: RunCli) -> None:
    job = far_apart(tmp_path / "job")
    result = run_cli("trace", "inspect", "--json", str(job))
    assert "Warning" not in result.stderr and "overflow" not in result.stderr, result.stderr
    complete, skew = strict_json(result.stdout)["health"]  # ranks-complete: both ranks of a world of 2
    assert (complete["check"], complete["status"]) == ("ranks-complete", "ok")
    assert (skew["status"], skew["count"], skew["unmeasured"], skew["median_us"]) == ("not_applicable", 0, 1, None)
    assert skew["reason"].startswith("the skew could not be measured")
    assert not re.search(r"\binf\b", run_cli("trace", "inspect", "--verbose", str(job)).stdout)


def test_the_baseline_probe_does_not_fail_on_a_skew_that_is_not_a_number(tmp_path: Path) -> None:
    from tests.helpers import LINED_UP
    from wizard.environment import Environment
    from wizard.probes.base import Status
    from wizard.probes.rank_baseline import RankBaselineProbe

    job, baseline = far_apart(tmp_path / "job"), rank_dir(tmp_path / "after", LINED_UP)
    result = RankBaselineProbe().run(
        Environment.of(report_dir=tmp_path), {"paths": str(job), "baseline": str(baseline)}
    )
    assert result.status is Status.SKIP
    assert "could not be measured" in result.summary and "inf" not in result.summary


# -- 8. the launch calls Kineto writes: one table, the doc written from it --------------------------------


def test_the_doc_lists_exactly_the_launch_table() -> None:
    text = (REPO / "docs" / "health.md").read_text()

    def listed(label: str) -> list[str]:
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"- **{label}**")]
        return re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", line)

    assert listed("Launch calls") == [a.name for a in LAUNCH_APIS if a.kind == "launch"]
    assert listed("Graph-launch calls") == [a.name for a in LAUNCH_APIS if a.kind == "graph"]
    assert len({a.name for a in LAUNCH_APIS}) == len(LAUNCH_APIS)


def test_the_hip_launches_are_kinetos_is_kernel_api() -> None:
    """pytorch/kineto@114171dfba6867d2a898634670d9a3197dbb9595, libkineto/src/RocprofLogger.cpp:210-227:
    ``bool isKernelApi(uint32_t id)`` returns true for exactly these ROCPROFILER_HIP_RUNTIME_API_ID_* ids (and
    RocprofActivity_inl.h:198 makes ``hipGraphLaunch`` a flow start). On the CUDA side
    CuptiActivity.h:104 names a runtime call ``runtimeCbidName(cbid)``: CUPTI's callback name less the
    ``_vNNNN`` suffix (cupti_strings.cpp:106-123), so CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 is
    written ``cudaLaunchKernel_ptsz``; CuptiCbidRegistry.cpp:165-178 registers the only driver calls recorded,
    cuLaunchKernel and cuLaunchKernelEx."""
    is_kernel_api = {
        "hipExtLaunchKernel", "hipExtLaunchMultiKernelMultiDevice", "hipLaunchCooperativeKernel",
        "hipLaunchCooperativeKernelMultiDevice", "hipLaunchKernel", "hipModuleLaunchCooperativeKernel",
        "hipModuleLaunchCooperativeKernelMultiDevice", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
        "hipHccModuleLaunchKernel", "hipLaunchCooperativeKernel_spt", "hipLaunchKernel_spt",
    }  # fmt: skip
    assert {n for n in LAUNCH_CALLS if n.startswith("hip")} == is_kernel_api
    ptsz = {"cudaLaunchKernel_ptsz", "cudaLaunchKernelExC_ptsz", "cudaLaunchCooperativeKernel_ptsz"}
    assert ptsz <= LAUNCH_CALLS and {"cuLaunchKernel", "cuLaunchKernelEx"} <= LAUNCH_CALLS
    assert {"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "hipGraphLaunch"} == GRAPH_LAUNCH_CALLS


@pytest.mark.parametrize("launch", ["cudaLaunchKernel_ptsz", "cudaLaunchKernelExC_ptsz", "hipLaunchKernel_spt"])
def test_a_per_thread_stream_launch_without_its_kernel_is_a_drop(tmp_path: Path, run_cli: RunCli, launch: str) -> None:
    b = healthy(TraceBuilder(), 3, launch=launch)
    b.add(spec("lost", launch=launch, kernel=False))
    healthy(b, 300, launch=launch)
    code, found = inspect(run_cli, b.write(tmp_path / "ptsz.json"))
    missing = found["kernels-missing"]
    assert (missing["status"], missing["count"], missing["launches"], missing["apis"]) == (
        "error", 1, 304, {launch: 304},
    )  # fmt: skip
    assert found["unlinked-kernels"]["count"] == 0  # their kernels link to them
    assert code == 1


# -- 9. trace-size: the unpacked size, and a word only when it is worth one --------------------------------


def test_trace_size_on_a_gz_gives_both_sizes_and_is_ok(tmp_path: Path, run_cli: RunCli) -> None:
    path = healthy(TraceBuilder(), 20).write(tmp_path / "t.json.gz")
    code, found = inspect(run_cli, path)
    size = found["trace-size"]
    unpacked = len(gzip.decompress(path.read_bytes()))
    assert (size["status"], size["bytes"], size["unpacked_bytes"], size["compressed"]) == (
        "ok", path.stat().st_size, unpacked, True,
    )  # fmt: skip
    assert f"({unpacked / 1024:.1f} KB unpacked)" in size["summary"]
    assert code == 0
    # nothing is worth a word: --fail-on info no longer fails every trace
    health = inspect_json(run_cli, path, "--fail-on", "info", status=0)["reports"][0]["health"]
    assert {c["status"] for c in health} == {"ok"}


def test_a_small_with_stack_trace_says_its_share_and_is_ok(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 44 item 12: every with_stack trace is mostly python_function events, so the share alone is a statistic
    (ok, said with its numbers), and --fail-on info passes it."""
    b = TraceBuilder()
    for i in range(4):
        b.add(spec(f"k{i}", python_stack=("a.py(1): f", "b.py(2): g", "c.py(3): h", "d.py(4): i")))
    path = b.write(tmp_path / "stacks.json")
    code, found = inspect(run_cli, path)
    size = found["trace-size"]
    assert (size["status"], size["python_share"]) == ("ok", 16 / 36)  # 4 frames of 9 events per launch
    assert "python_function events are 44% of them" in size["summary"]
    assert code == 0
    assert run_cli("trace", "inspect", "--fail-on", "info", str(path)).returncode == 0


def test_trace_size_keeps_the_twenty_largest_categories(tmp_path: Path, run_cli: RunCli) -> None:
    doc = healthy(TraceBuilder(), 2).document()
    doc["traceEvents"] += [
        {"ph": "i", "cat": f"user_{n:02}", "name": "mark", "pid": 1, "tid": 1, "ts": 1.0, "s": "t"}
        for n in range(30)
        for _ in range(n + 1)
    ]
    path = tmp_path / "many.json"
    path.write_text(json.dumps(doc))
    _, found = inspect(run_cli, path)
    size = found["trace-size"]
    assert list(size["categories"]) == [f"user_{n:02}" for n in range(29, 9, -1)]  # 30 down to 11 events each
    builders = {e["cat"] for e in doc["traceEvents"] if "cat" in e and not e["cat"].startswith("user_")}
    assert builders  # the builder's own categories have at most 10 events here: left out with user_00..09
    left = sum(1 for e in doc["traceEvents"] if "cat" in e) - sum(size["categories"].values())
    assert (size["other_categories"], size["other_events"]) == (10 + len(builders), left)
    assert size["count"] == sum(1 for e in doc["traceEvents"] if "cat" in e)


def test_times_near_1e308_print_no_numpy_warning_and_no_infinite_verdict(tmp_path: Path, run_cli: RunCli) -> None:
    """A kernel at -1.7e308 µs against its call at +1.7e308: the offset overflows; it is counted as unmeasured, and
    the one offset that is a number decides (3 µs after its call: no kernel before its launch)."""

    def event(cat: str, name: str, ts: float, corr: int, dur: float = 1.0) -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 7, "ts": ts, "dur": dur,
                "args": {"correlation": corr, "device": 0, "stream": 7}}  # fmt: skip

    events = [
        event("cuda_runtime", "cudaLaunchKernel", 1.7e308, 1),
        event("kernel", "far", -1.7e308, 1, dur=1.7e308),
        event("cuda_runtime", "cudaLaunchKernel", 0.0, 2),
        event("kernel", "near", 3.0, 2),
        event("cpu_op", "aten::mm", 1.7e308, 0, dur=1.7e308),
    ]
    path = tmp_path / "far.json"
    path.write_text(json.dumps({"traceEvents": events}))
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.stderr == "", result.stderr  # no RuntimeWarning: overflow encountered in ...
    found = {c["check"]: c for c in strict_json(result.stdout)["reports"][0]["health"]}
    skew = found["clock-skew"]
    assert (skew["status"], skew["count"], skew["linked"], skew["unmeasured"]) == ("ok", 0, 2, 1)
    assert (skew["min_us"], skew["median_us"]) == (3.0, 3.0)
    assert not re.search(r"\binf\b", run_cli("trace", "inspect", "--verbose", str(path)).stdout)


def test_the_docs_verdict_table_is_the_mechanism_table() -> None:
    text = (REPO / "docs" / "health.md").read_text()
    rows = re.findall(r"^\| (\S+) \(.*\) \| `(\w+)` \| `(\w+)`", text, flags=re.MULTILINE)
    assert rows == [(m.value, m.conclusion, m.verdict) for m in Mechanism]


def test_the_triage_calls_jitter_level_skew_healthy(tmp_path: Path, run_cli: RunCli) -> None:
    conclusion = conclude(run_cli, "triage", rank_dir(tmp_path / "job", JITTER), tmp_path)
    assert conclusion["diagnosis"] == "trace-healthy"
    late = rank_dir(tmp_path / "late", STRAGGLER)  # the triage continues into rank-skew, which diagnoses it
    straggling = conclude(run_cli, "triage", late, tmp_path, same_host=True, have_baseline=False)
    assert straggling["diagnosis"] == "rank-skew-waiting-suspected"


def test_the_flagships_words_on_d_and_g(tmp_path: Path, run_cli: RunCli) -> None:
    """D on a V100 (cc 7.0, known to every CUDA header) never says to get a newer PyTorch; G with values on
    114 SMs and deviceProperties of 132 prints no empty line."""
    import msgspec

    v100 = TraceBuilder(gpu="V100")
    v100.add(KernelSpec("gemm", (64, 8, 1), (256, 1, 1), plant="D"))
    d = conclude(run_cli, "negative-warps-per-sm", v100.write(tmp_path / "d.json"), tmp_path)
    assert d["diagnosis"] == "profiler-bug-occupancy-calculator"
    said = " ".join([d["summary"], *d["fix"]])
    assert "newer PyTorch" not in said.replace("A newer PyTorch or CUDA will not change this", "")
    h100 = TraceBuilder(gpu="H100")
    h100.limits = msgspec.structs.replace(h100.limits, num_sms=114)  # the profiler's GPU had 114 SMs
    h100.add(KernelSpec("gemm", (456, 1, 1), (256, 1, 1)))
    g = conclude(run_cli, "negative-warps-per-sm", h100.write(tmp_path / "g.json"), tmp_path)
    assert g["diagnosis"] == "trace-sm-count-mismatch"
    assert all(line.strip() for line in [*g["evidence"], *g["fix"]])
    assert "on 114 SMs the true values are 4 and 32, on 132 SMs they would be 3.45454545" in g["evidence"][0]


def test_worker_processes_keep_every_range_events_id(tmp_path: Path) -> None:
    """The ids travel from each worker's block to the merged timeline (Timeline.merge), in file order."""
    from wizard.trace.read.reader import ReaderConfig, read_trace

    b = TraceBuilder()
    b.add_ranged(spec("gemm", repeat=300))
    path = b.write(tmp_path / "ranges.json")
    small: dict[str, Any] = {"block_size": 4096, "parallel_block": 2048, "parallel_min_bytes": 0}
    one = read_trace(path, config=ReaderConfig(**small, workers=0))
    two = read_trace(path, config=ReaderConfig(**small, workers=2))
    assert two.timing["workers"] == 2
    assert one.timeline.profiler_ranges == two.timeline.profiler_ranges == list(range(100, 400))
