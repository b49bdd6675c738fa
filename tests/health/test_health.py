"""The trace health check: each problem planted by the builder, counted exactly as defined (docs/health.md),
through the API and the real command line; the one-read contract of the passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import wizard
from tests import perfetto_rule
from tests.conftest import RunCli, strict_json
from tests.frozen_facts import FROZEN_CHECKS
from tests.helpers import inspect_json, rank_trace
from wizard.errors import UsageError
from wizard.inspect_options import InspectOptions
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.checker import HEALTH_PASS
from wizard.trace.health.checks import CHECK_IDS
from wizard.trace.inspection.passes import register_pass, unregister_pass
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import Results, TracePass
from wizard.trace.read import source
from wizard.trace.read.collector import TraceContents


def spec(name: str = "k", **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), **kw)


def checks(path: Path) -> dict[str, Any]:
    """Each check's JSON object for a one-file trace, read through the real CLI's JSON."""
    from tests.conftest import run_inprocess

    (report,) = inspect_json(run_inprocess, path, "--fail-on", "never", status=0)["reports"]
    return {c["check"]: c for c in report["health"]}


def healthy(b: TraceBuilder, n: int = 4) -> None:
    for i in range(n):
        b.add(spec(f"healthy_{i}"))


def test_a_healthy_trace_is_ok_on_every_check(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b)
    b.add_memcpy()
    found = checks(b.write(tmp_path / "t.json"))
    assert list(found) == [c for c in CHECK_IDS if c not in ("ranks-complete", "rank-skew")]  # the job's: not here
    # A check declared since says what it gives here in its own test module (tests/health/test_<module>_check.py)
    assert {k: v["status"] for k, v in found.items() if k in FROZEN_CHECKS} == {
        "impossible-metrics": "ok",
        "kernels-missing": "ok",
        "kernels-overlap": "ok",
        "graph-launches": "ok",
        "unlinked-kernels": "ok",
        "durations": "ok",
        "clock-skew": "ok",
        "trace-size": "ok",  # small, and no Python events: nothing worth a word (issue 37 item 9)
        "stacks-missing": "ok",  # no python_function frames: a setting, said with its count (issue 44 item 12)
        "summary-table": "ok",
        "profiler-overhead": "ok",
    }
    assert found["graph-launches"]["mode"] == "eager"
    assert found["durations"]["gpu_events"] == 5
    assert found["kernels-missing"]["launches"] == 4


def test_dropped_kernels_are_counted_and_a_cut_at_the_end_is_only_info(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 3)
    b.add(spec("dropped", kernel=False, repeat=2))
    healthy(b, 300)  # the dropped ones lie early in the window
    found = checks(b.write(tmp_path / "mid.json"))["kernels-missing"]
    assert (found["status"], found["count"], found["in_last_1pct"], found["launches"]) == ("error", 2, 0, 305)
    assert found["playbook"] == "kernels-missing"
    assert [e["name"] for e in found["examples"]] == ["cudaLaunchKernel", "cudaLaunchKernel"]

    late = TraceBuilder()
    healthy(late, 300)
    late.add(spec("cut", kernel=False))
    found = checks(late.write(tmp_path / "end.json"))["kernels-missing"]
    assert (found["status"], found["count"], found["in_last_1pct"]) == ("info", 1, 1)


def test_captured_launches_are_not_missing(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 2)
    b.add_call("cudaStreamBeginCapture")
    b.add(spec("captured", kernel=False, repeat=3))
    b.add_call("cudaStreamEndCapture")
    b.add(spec("after", kernel=False))  # after the capture: really missing
    b.add_call("cudaStreamBeginCapture")  # left open to the end of the file
    b.add(spec("open", kernel=False))
    found = checks(b.write(tmp_path / "t.json"))["kernels-missing"]
    assert (found["count"], found["captured"], found["launches"]) == (1, 4, 7)


def test_launch_calls_without_an_id_are_counted(tmp_path: Path) -> None:
    doc = {
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
            {"ph": "X", "cat": "cuda_runtime", "name": "cuLaunchKernelEx", "pid": 1, "tid": 1, "ts": 20, "dur": 2,
             "args": {"correlation": 5}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 3,
             "args": {"correlation": 5, "device": 0, "stream": 7}},
        ]
    }  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(__import__("json").dumps(doc))
    found = checks(path)
    assert (found["kernels-missing"]["no_correlation"], found["kernels-missing"]["count"]) == (1, 0)
    assert found["unlinked-kernels"]["count"] == 0  # cuLaunchKernelEx is a launch call


def test_overlapping_kernels_on_one_stream(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("long", dur=250.0))  # 30-280 (the builder launches every 100 us)
    b.add(spec("hidden_1", dur=200.0))  # 130-330: starts inside long, ends after it
    b.add(spec("hidden_2", dur=200.0))  # 230-430: long is still the open slice (hidden_1 was never pushed)
    b.add(spec("other_stream", stream=9, dur=500.0))  # 330-830
    b.add(spec("hidden_on_9", stream=9, dur=500.0))  # 430-930
    b.add(spec("nested_on_9", stream=9))  # 530-542: inside other_stream, nests
    healthy(b, 3)
    found = checks(b.write(tmp_path / "t.json"))["kernels-overlap"]
    assert (found["status"], found["count"], found["lanes"], found["kernels"]) == ("warning", 3, 2, 9)
    assert (found["pdl"], found["graph"], found["max_overlap_us"], found["other_events"]) == (0, 0, 400.0, {})
    assert [e["name"] for e in found["examples"]] == ["hidden_1", "hidden_2", "hidden_on_9"]
    assert found["playbook"] == "kernels-hidden"


def test_identical_starts_nest_longer_first(tmp_path: Path) -> None:
    """Perfetto sorts equal starts longer first (trace_sorter.h 206-216): a, then c (equal end: nests), then b
    (zero duration: nests); nothing is hidden."""
    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 100, "dur": d,
         "args": {"device": 0, "stream": 7}}
        for n, d in (("a", 5), ("b", 0), ("c", 5))
    ]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(__import__("json").dumps({"traceEvents": events}))
    found = checks(path)
    assert (found["kernels-overlap"]["count"], found["kernels-overlap"]["status"]) == (0, "ok")
    assert found["durations"]["zero"] == 1


def test_graph_launches_and_their_kernels(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add_graph([spec(f"node_{i}") for i in range(5)])
    b.add_graph([spec(f"node_{i}") for i in range(5)])
    found = checks(b.write(tmp_path / "graph.json"))
    graphs = found["graph-launches"]
    # a graph trace whose replays are all recorded is a fact about what it can tell, not a problem (issue 33 item 5)
    assert (graphs["status"], graphs["count"], graphs["kernels"], graphs["mode"]) == ("info", 2, 10, "graph")
    assert graphs["unrecorded"] == 0
    assert found["unlinked-kernels"]["count"] == 0  # graph kernels link to their graph launch
    assert found["kernels-missing"]["status"] == "not_applicable"
    b.add(spec("eager"))
    assert checks(b.write(tmp_path / "mixed.json"))["graph-launches"]["mode"] == "mixed"


def test_unlinked_kernels(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 2)
    b.add(spec("triton_kernel", launch=None, repeat=3))
    found = checks(b.write(tmp_path / "t.json"))["unlinked-kernels"]
    assert (found["status"], found["count"], found["kernels"]) == ("warning", 3, 5)
    assert found["before_first_call"] == 0


def test_unlinked_is_not_applicable_without_launch_calls(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {}}]
    path = tmp_path / "t.json"
    path.write_text(__import__("json").dumps({"traceEvents": events}))
    found = checks(path)["unlinked-kernels"]
    assert (found["status"], found["count"]) == ("not_applicable", 0)
    assert found["reason"] == "the trace has no launch or graph-launch calls"


def test_negative_and_zero_durations(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 2)
    b.add(spec("negative", dur=-3.0))
    b.add(spec("zero", dur=0.0, repeat=2))
    b.add_memcpy(dur=-1.0)
    found = checks(b.write(tmp_path / "t.json"))["durations"]
    assert (found["status"], found["count"], found["zero"], found["gpu_events"]) == ("error", 2, 2, 6)
    assert found["playbook"] == "impossible-timing"


def test_kernels_before_their_launch(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 3)
    b.add(spec("early", kernel_delay=-4.0, repeat=2))
    found = checks(b.write(tmp_path / "t.json"))["clock-skew"]
    assert (found["status"], found["count"], found["linked"]) == ("warning", 2, 5)
    assert found["min_us"] == -4.0
    assert found["median_us"] == 27.0


def test_trace_size_and_missing_stacks(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(3):
        b.add(spec(f"k{i}", python_stack=("nn.py(5): __call__", "model.py(1): forward", "train.py(9): <module>")))
    path = b.write(tmp_path / "t.json")
    found = checks(path)
    size = found["trace-size"]
    # per launch: 3 python frames, 1 op, 1 launch, 1 kernel, 2 flow ends
    assert size["categories"] == {"python_function": 9, "ac2g": 6, "cpu_op": 3, "cuda_runtime": 3, "kernel": 3}
    assert (size["count"], size["bytes"], size["largest"]) == (24, path.stat().st_size, "python_function")
    assert size["python_share"] == 9 / 24
    assert (found["stacks-missing"]["status"], found["stacks-missing"]["count"]) == ("ok", 0)


def test_rank_skew_across_a_rank_directory(tmp_path: Path, run_cli: RunCli) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    rank_trace(ranks, 0, [0, 0])
    rank_trace(ranks, 1, [30, 0])  # rank 1 is 30 us late on both
    rank_trace(ranks, 2, [10, 50], declared=False)  # rank from the file name; 60 us late on the second
    # a 60 µs median is below the 100 µs floor: launch jitter, info
    data = inspect_json(run_cli, ranks, status=0)
    complete, skew = data["health"]  # the job's checks, in order: ranks-complete, then rank-skew
    assert (complete["check"], complete["status"], complete["ranks"], complete["world_size"]) == (
        "ranks-complete",
        "ok",
        [0, 1, 2],
        3,
    )
    assert skew["check"] == "rank-skew"
    assert (skew["status"], skew["count"], skew["ranks"], skew["floor_us"]) == ("info", 3, [0, 1, 2], 100.0)
    # broadcast: 1, 2 and 3 instances on ranks 0, 1, 2: compared over the first; ranks 0 and 1 are short (named)
    assert (skew["left_out"], skew["short"]) == ({}, {"0": 2, "1": 1})
    # instance 0: starts 0, 30, 10 -> 30; instance 1: 0, 30, 60 -> 60 (each rank's clock moved by its waits);
    # broadcast: 1 instance on every rank, started after the all-reduces: 0+0, 30, 60 -> 60
    assert (skew["median_us"], skew["max_us"]) == (60.0, 60.0)
    assert skew["last_by_rank"] == {"1": 1, "2": 2}


def test_one_read_many_passes(tmp_path: Path) -> None:
    """A pass added from outside runs in the same read as the kernel checks and the health check."""
    b = TraceBuilder()
    healthy(b, 3)
    b.add_memcpy()
    b.add_memcpy()
    path = b.write(tmp_path / "t.json")

    class MemcpyCount:
        def __init__(self, options: InspectOptions) -> None:
            self.fed = 0

        def feed(self, contents: TraceContents) -> None:
            self.fed += 1

        def finish(self, contents: TraceContents, before: Results) -> int:
            assert before.get(METRICS_PASS).kernels_checked == 3  # the built-in passes ran first, typed
            assert before.get(HEALTH_PASS).checks[0].check == "impossible-metrics"
            return len(contents.timeline.gpu_ops)

    counting = TracePass("memcpy-count", int, MemcpyCount, int, needs=(METRICS_PASS, HEALTH_PASS))
    opened, read = source.STATS.opened[str(path)], source.STATS.bytes_read[str(path)]
    register_pass(counting)
    try:
        inspection = wizard.inspect_traces(path, jobs=1)
    finally:
        unregister_pass("memcpy-count")
    (report,) = inspection.reports
    assert report.passes == {"memcpy-count": 2}
    assert source.STATS.opened[str(path)] - opened == 1  # the reader's own counters: opened once
    assert source.STATS.bytes_read[str(path)] - read == path.stat().st_size  # and every byte read once
    # trace-incomplete (issue 45 item 1) is declared between them
    assert [c.check for c in report.health_result.checks][:3] == [
        "impossible-metrics",
        "trace-incomplete",
        "kernels-missing",
    ]


def test_checks_chosen_and_bad_ids_refused(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    b.add(spec("early", kernel_delay=-4.0))
    path = b.write(tmp_path / "t.json")
    only = wizard.inspect_traces(path, checks=["clock-skew", "durations"])
    assert [c.check for c in only.health] == ["durations", "clock-skew"]
    skipped = wizard.inspect_traces(path, skip_checks=["clock-skew"])
    assert "clock-skew" not in [c.check for c in skipped.health]
    with pytest.raises(UsageError, match="unknown health check clock-skw; the checks are impossible-metrics"):
        wizard.inspect_traces(path, checks=["clock-skw"])
    result = run_cli("trace", "inspect", "--checks", "clock-skw", str(path))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("warpwizard: error: --checks: unknown health check clock-skw;")
    )
    # issue 44 item 11: a typo in --skip-checks was blamed on --checks
    skip = run_cli("trace", "inspect", "--skip-checks", "clock-skw", str(path))
    assert skip.returncode == 2
    assert skip.stderr.strip().splitlines()[-1].startswith("warpwizard: error: --skip-checks: unknown health check ")
    with pytest.raises(UsageError, match=r"^skip_checks: unknown health check clock-skw;"):
        wizard.inspect_traces(path, skip_checks=["clock-skw"])
    # exit codes: a warning fails by default, not with --fail-on error, and never with --skip-checks
    assert run_cli("trace", "inspect", str(path)).returncode == 1
    assert run_cli("trace", "inspect", "--fail-on", "error", str(path)).returncode == 0
    assert run_cli("trace", "inspect", "--skip-checks", "clock-skew", str(path)).returncode == 0


def test_terminal_summary_leads_with_the_problems_worst_first(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    healthy(b, 2)
    b.add(spec("early", kernel_delay=-4.0))
    b.add(spec("negative", dur=-3.0))
    path = b.write(tmp_path / "t.json")
    out = run_cli("trace", "inspect", str(path), env=None).stdout
    lines = out.splitlines()
    assert lines[0] == "Trace health: 2 problems found"
    assert lines[1].lstrip().startswith("✗ error    durations")
    assert lines[2].lstrip().startswith("! warning  clock-skew")
    assert "more checks ok or not applicable; --verbose shows every one" in out
    verbose = run_cli("trace", "inspect", "--verbose", str(path)).stdout
    assert "e.g. early at" in verbose and "starts before its launch call" in verbose
    assert "✓ ok       kernels-overlap" in verbose


def test_health_examples_as_a_dataframe(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    b = TraceBuilder()
    b.add(spec("negative", dur=-3.0))
    frame = wizard.inspect_traces(b.write(tmp_path / "t.json")).health_dataframe()
    rows = frame[frame["check"] == "durations"]
    assert rows[["name", "dur", "status"]].values.tolist() == [["negative", -3.0, "error"]]


def test_split_overlaps_shows_every_kernel(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    b.add(spec("long", dur=250.0))  # 30-280 (the builder launches every 100 us)
    b.add(spec("nested", dur=120.0))  # 130-250: inside long, stays
    b.add(spec("hidden_1", dur=200.0))  # 230-430: starts inside nested, ends after it: lane 1
    b.add(spec("after", dur=200.0))  # 330-530: long and nested have ended, hidden_1 is not on row 0: stays
    b.add(spec("hidden_2", dur=200.0))  # 430-630: over after's end; lane 1 again (hidden_1 ends at 430)
    b.add(spec("other_stream", stream=9, dur=500.0))  # 530-1030
    b.add(spec("hidden_on_9", stream=9, dur=500.0))  # 630-1130
    healthy(b, 3)
    path = b.write(tmp_path / "t.json")
    rule = perfetto_rule.rule(path)
    hidden = {rule.events[i]["name"] for i in rule.spilled_kernels()}
    assert hidden == {"hidden_1", "hidden_2", "hidden_on_9"}
    out = tmp_path / "split.json"
    result = run_cli("trace", "fix", "--split-overlaps", str(path), str(out))
    assert result.returncode == 0, result.stderr
    assert "moved 3 overlapping kernels to 2 extra rows" in result.stdout
    doc = strict_json(out.read_text())
    events = doc["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert sorted(k["name"] for k in kernels) == sorted(
        e["name"] for e in b.document()["traceEvents"] if e.get("cat") == "kernel"
    )
    moved = {k["name"]: (k["tid"], k["args"]["warpwizard original tid"]) for k in kernels if k["tid"] not in (7, 9)}
    assert moved == {
        "hidden_1": ("stream 7 overlap 1", 7),
        "hidden_2": ("stream 7 overlap 1", 7),
        "hidden_on_9": ("stream 9 overlap 1", 9),
    }
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M"}
    assert names[(0, "stream 7 overlap 1")] == "stream 7 (overlapping kernels, lane 1)"
    fixed = perfetto_rule.rule(out)  # Perfetto's rule on the copy: everything nests, every arrow on its kernel
    assert (fixed.spilled, fixed.wrong_arrows(), len(fixed.flows)) == ([], [], len(rule.flows))
    validator = pytest.importorskip("torch.profiler._trace_validator")
    validator.validate_trace(str(out))  # PyTorch's own validator takes the copy


def test_rank_skew_from_per_rank_summaries_equals_the_directory(tmp_path: Path, run_cli: RunCli) -> None:
    """Each node writes its own --json summary; compare merges them: no process reads every trace."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank, delays in ((0, [0, 0]), (1, [30, 0]), (2, [10, 50])):
        rank_trace(ranks, rank, delays)
    together = inspect_json(run_cli, ranks)["health"][1]  # rank-skew
    summaries = []
    for rank in range(3):
        result = run_cli("trace", "inspect", "--json", str(ranks / f"rank{rank}.json"))
        summary = tmp_path / f"node{rank}.json"
        summary.write_text(result.stdout)
        summaries.append(str(summary))
    merged = strict_json(run_cli("compare", "--json", *summaries).stdout)["health"][0]
    assert merged == together
    assert "collectives" not in strict_json(run_cli("compare", "--json", *summaries).stdout)["machines"][0]
    shown = run_cli("compare", *summaries).stdout
    assert "rank skew (info): 3 collectives across 3 ranks start up to 60.0 µs apart" in " ".join(shown.split())
    twice = strict_json(run_cli("compare", "--json", summaries[0], summaries[0]).stdout)["health"][0]
    assert (twice["status"], twice["reason"]) == (
        "not_applicable",
        "a rank appears in two reports: they are not one job's",
    )


def test_every_report_fits_the_published_schema(tmp_path: Path, run_cli: RunCli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from tests.conftest import REPO

    schema = strict_json((REPO / "docs" / "health.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    b = TraceBuilder()
    healthy(b, 2)
    b.add(spec("early", kernel_delay=-4.0))
    b.add(spec("dropped", kernel=False))
    b.add_graph([spec("node")])
    b.add_memcpy(dur=-1.0)
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        rank_trace(ranks, rank, [0, 10 * rank])
    for target in (b.write(tmp_path / "t.json"), ranks):
        doc = inspect_json(run_cli, target)
        jsonschema.validate(doc, schema)
    bad = {**doc, "health": [{**doc["health"][0], "status": "fine"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_the_profiler_hook_warns_once_per_health_problem(tmp_path: Path) -> None:
    import warnings

    b = TraceBuilder()
    healthy(b, 3)
    b.add(spec("early", kernel_delay=-4.0))
    text = b.text()

    class Profile:
        def export_chrome_trace(self, path: str) -> None:
            Path(path).write_text(text)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = wizard.profiler.export_chrome_trace(Profile(), tmp_path / "t.json")
    messages = [str(w.message) for w in caught if issubclass(w.category, wizard.WarpWizardWarning)]
    assert messages == [
        "warpwizard: trace health warning: clock-skew: 1 kernel starts before its own launch call "
        "(by up to 4.000 µs; offsets shrinking)"
    ]
    assert check.warnings == messages


def test_markdown_leads_with_the_health_table(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("negative", dur=-3.0))
    text = wizard.inspect_traces(b.write(tmp_path / "t.json")).to_markdown()
    lines = text.splitlines()
    assert lines[2] == "## Trace health: 1 problem found"
    assert lines[6].startswith("| t.json | error | `durations` | 1 | 1 GPU event with a negative duration")
    assert lines[6].endswith("| `warpwizard run impossible-timing` |")


def test_the_inspect_probe_gives_the_health_as_facts(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, 300)
    b.add(spec("early", kernel_delay=-4.0))
    b.add(spec("dropped", kernel=False, launch="cuLaunchKernelEx"))
    healthy(b, 5)
    b.add(spec("overlapping", dur=250.0))
    b.add(spec("overlapped", dur=200.0))  # starts inside "overlapping", ends after it
    healthy(b, 2)
    (entry,) = wizard.run_probe("trace.inspect", {"paths": str(b.write(tmp_path / "t.json"))}).entries
    facts = entry.facts
    assert facts is not None
    assert facts["health_problems"] == ["kernels-missing", "kernels-overlap", "clock-skew"]
    assert facts["health_playbooks"] == ["kernels-missing", "impossible-timing", "kernels-hidden"]
    assert facts["health_next"] == "kernels-missing"
    assert facts["health_status"] == "error"
    assert (facts["missing_kernels"], facts["launch_calls"], facts["missing_in_last_1pct"]) == (1, 311, 0)
    assert facts["launch_apis"] == ["cuLaunchKernelEx", "cudaLaunchKernel"]
    assert (facts["overlapping_kernels"], facts["kernels_before_launch"]) == (1, 1)
    assert facts["launch_offset_min_us"] == -4.0
    assert facts["graph_mode"] == "eager"
