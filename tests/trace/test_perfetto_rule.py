"""kernels-overlap and ``trace fix --split-overlaps`` against Perfetto's own rule (issue 33 items 3-4, issue 36 item 1).

The second computation is tests/perfetto_rule.py, written from Perfetto's source (its docstring cites each file
and line) and sharing no code with warpwizard. Each planted trace (the project's builder) asserts the one right
count and status, and that the check and the rule agree; the fixer's copy goes through the same rule: nothing
on a kernel row that cannot nest, every launch arrow bound to its own GPU event. Then every real trace.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests import perfetto_rule
from tests.conftest import TRACES, RunCli, strict_json
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health import nesting
from wizard.trace.read.reader import read_trace


def spec(name: str, at: float, dur: float, **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), at=at, dur=dur, **kw)


def overlap_check(run_cli: RunCli, path: Path) -> dict[str, Any]:
    (report,) = inspect_json(run_cli, path, "--fail-on", "never", status=0)["reports"]
    (check,) = [c for c in report["health"] if c["check"] == "kernels-overlap"]
    assert isinstance(check, dict)
    return check


def kernel_rows(rule: perfetto_rule.Result) -> set[Any]:
    return {rule.rows[i] for i, e in enumerate(rule.events) if e.get("cat") in perfetto_rule.KERNEL_CATS}


def gpu_arrows(rule: perfetto_rule.Result) -> list[int]:
    """Wrong launch arrows on kernel rows (a flow end whose slice is not its own GPU event)."""
    rows = kernel_rows(rule)
    return [f for f in rule.wrong_arrows() if rule.rows[f] in rows]


def agree_and_fix(
    run_cli: RunCli, path: Path, tmp_path: Path, *, shared_starts: int = 0
) -> tuple[dict[str, Any], perfetto_rule.Result]:
    """The check's count is Perfetto's; the fixed copy has nothing Perfetto cannot nest on a kernel row, no launch
    arrow on another event (but ``shared_starts``: an event that starts with a shorter one nesting in it has its
    arrow on that one, flow_tracker.cc 98-104, in the input as in the copy), and the copy's own check says 0."""
    check = overlap_check(run_cli, path)
    rule = perfetto_rule.rule(path)
    assert check["count"] == len(rule.spilled_kernels())
    out = tmp_path / f"split-{path.name.removesuffix('.gz')}"
    fixed = run_cli("trace", "fix", "--split-overlaps", str(path), str(out), timeout=300)
    assert fixed.returncode == 0, fixed.stderr
    after = perfetto_rule.rule(out)
    rows = kernel_rows(after)
    assert [i for i in after.spilled if after.rows[i] in rows] == []
    assert len(gpu_arrows(after)) == shared_starts
    assert len(after.flows) == len(rule.flows)  # every arrow still binds
    assert overlap_check(run_cli, out)["count"] == 0
    return check, rule


# --- the rule on planted traces ----------------------------------------------------------------------


def test_kernels_nest_under_their_annotation(tmp_path: Path, run_cli: RunCli) -> None:
    """json_trace_parser.cc 228-268: every X event of a (pid, tid) is one row, annotations included; a kernel that
    ends inside the annotation nests (slice_tracker.cc 453), one that ends after it cannot."""
    b = TraceBuilder()
    b.add_gpu_annotation("step", at=0.0, dur=400.0)
    for i in range(3):
        b.add(spec(f"inside_{i}", at=10.0 + 100 * i, dur=50.0))
    b.add(spec("past_the_end", at=350.0, dur=100.0))  # 350-450: starts inside step, ends after it
    check, rule = agree_and_fix(run_cli, b.write(tmp_path / "t.json"), tmp_path)
    assert [rule.events[i]["name"] for i in rule.spilled_kernels()] == ["past_the_end"]
    assert (check["count"], check["status"], check["rounding"], check["pdl"]) == (1, "warning", 0, 0)
    assert check["max_overlap_us"] == 50.0  # the annotation's end minus the kernel's start


def test_equal_ends_and_zero_durations_nest(tmp_path: Path, run_cli: RunCli) -> None:
    """slice_tracker.cc 417-445: an event ending where the open one ends nests; one starting at an end pops it
    (unless both last 0); trace_sorter.h 206-216 puts the longer first on an equal start."""
    b = TraceBuilder()
    b.add(spec("outer", at=100.0, dur=50.0))  # 100-150
    b.add(spec("same_end", at=120.0, dur=30.0))  # 120-150
    b.add(spec("zero_at_end", at=150.0, dur=0.0))
    b.add(spec("zero_inside", at=130.0, dur=0.0))
    b.add(spec("shorter_same_start", at=100.0, dur=20.0))  # written after outer's equal start: nests
    b.add(spec("from_the_end", at=150.0, dur=10.0))  # starts where outer ends: outer is popped
    path = b.write(tmp_path / "t.json")
    before = perfetto_rule.rule(path)
    # outer's arrow: at ts 100 the row's top slice is shorter_same_start (pushed after outer), in Perfetto too
    wrong = gpu_arrows(before)
    assert [before.events[end]["name"] for f, _, end in before.flows if f in wrong and end is not None] == [
        "shorter_same_start"
    ]
    check, rule = agree_and_fix(run_cli, path, tmp_path, shared_starts=1)
    assert (check["count"], check["status"], rule.spilled) == (0, "ok", [])


def test_rounding_hides_a_kernel_whose_decimal_end_is_its_annotations(tmp_path: Path, run_cli: RunCli) -> None:
    """json_trace_tokenizer.cc 221-234: llround(us * 1000) of a microsecond-epoch double: 1700000000000100.25 µs is
    ...100352 ns, so equal decimal ends (110.5) come 102 ns apart and the kernel cannot nest."""
    b = TraceBuilder()
    b.add_gpu_annotation("range", at=100.0, dur=10.5)
    b.add(spec("rounded", at=100.25, dur=10.25))
    path = b.write(tmp_path / "t.json")
    events = strict_json(path.read_text())["traceEvents"]
    annotation = next(e for e in events if e["cat"] == "gpu_user_annotation")
    kernel = next(e for e in events if e["cat"] == "kernel")
    assert annotation["ts"] + annotation["dur"] == kernel["ts"] + kernel["dur"]  # equal as the file's numbers
    ns = [perfetto_rule.to_ns(e[k]) or 0 for e in (kernel, annotation) for k in ("ts", "dur")]
    assert ns[0] + ns[1] - (ns[2] + ns[3]) == 102
    check, _ = agree_and_fix(run_cli, path, tmp_path)
    assert (check["count"], check["rounding"], check["status"]) == (1, 1, "info")


def test_a_graph_replay_keeps_every_arrow_on_its_own_kernel(tmp_path: Path, run_cli: RunCli) -> None:
    """All of a replay's kernels carry the cudaGraphLaunch's correlation id (flow_tracker.cc 127-138: one flow id,
    ends bound each to its own top slice): only the moved kernel's flow end may move."""
    b = TraceBuilder()
    b.add_graph(
        [spec("node_0", at=0.0, dur=50.0), spec("node_1", at=40.0, dur=50.0), spec("node_2", at=100.0, dur=10.0)],
        flows=True,
    )
    path = b.write(tmp_path / "t.json")
    before = perfetto_rule.rule(path)
    assert len(gpu_arrows(before)) == 1  # node_1's arrow binds to node_0
    check, _ = agree_and_fix(run_cli, path, tmp_path)
    # 10 µs, under a launch's latency, and 10% of the 100 µs of kernel time counted once (at most 10%): info
    assert (check["count"], check["graph"], check["pdl"], check["sub_latency"]) == (1, 1, 0, 1)
    assert (check["sub_latency_us"], check["kernel_us"], check["status"]) == (10.0, 110.0, "info")
    copy = strict_json((tmp_path / "split-t.json").read_text())["traceEvents"]
    ends = sorted((e["ts"] - b._origin, e["tid"]) for e in copy if e.get("ph") == "f")
    assert ends == [(0.0, 7), (40.0, "stream 7 overlap 1"), (100.0, 7)]


def test_pdl_is_named_only_with_its_evidence(tmp_path: Path, run_cli: RunCli) -> None:
    """Eager cuLaunchKernelEx launches overlapping a kernel by at most 5 µs are info; a plain launch, or an overlap
    of 30 µs, is a warning."""
    b = TraceBuilder()
    b.add(spec("primary", at=0.0, dur=101.0, launch="cuLaunchKernelEx"))
    b.add(spec("dependent", at=100.0, dur=100.0, launch="cuLaunchKernelEx"))  # 1 µs before primary ends
    pdl = b.write(tmp_path / "pdl.json")
    check, _ = agree_and_fix(run_cli, pdl, tmp_path)
    assert (check["count"], check["pdl"], check["status"]) == (1, 1, "info")
    assert "Programmatic Dependent Launch" in check["meaning"]
    b = TraceBuilder()
    b.add(spec("primary", at=0.0, dur=130.0, launch="cuLaunchKernelEx"))
    b.add(spec("dependent", at=100.0, dur=100.0, launch="cuLaunchKernelEx"))  # 30 µs: an overrun, not PDL's
    b.add(spec("plain", at=190.0, dur=100.0))  # primary has ended and dependent was never on the row: nests
    b.add(spec("after_plain", at=280.0, dur=100.0))  # 10 µs into plain, launched with cudaLaunchKernel
    late = b.write(tmp_path / "late.json")
    check, _ = agree_and_fix(run_cli, late, tmp_path)
    assert (check["count"], check["pdl"], check["status"]) == (2, 0, "warning")


def test_an_annotation_copy_or_sync_that_cannot_nest_is_counted_apart(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    b.add(spec("kernel", at=0.0, dur=100.0))
    b.add_gpu_annotation("attention_kernel", at=50.0, dur=100.0)  # 50-150 over the kernel's end; "kernel" in its name
    check, rule = agree_and_fix(run_cli, b.write(tmp_path / "t.json"), tmp_path)
    assert (check["count"], check["status"], check["other_events"]) == (0, "ok", {"gpu_user_annotation": 1})
    assert "1 other GPU event (gpu_user_annotation) cannot nest either" in check["summary"]
    assert [rule.events[i]["cat"] for i in rule.spilled] == ["gpu_user_annotation"]


# --- the fixer's cost (issue 36 item 1) ---------------------------------------------------------------


def test_split_overlaps_of_100000_overlapping_kernels_is_n_log_n(tmp_path: Path) -> None:
    """Kernel i at i µs lasting 1000 µs: each starts inside the row's open kernel and ends after it, but every
    thousandth (the open one has just ended); 99,900 move to 999 lanes. The old fixer scanned every row per kernel."""
    n = 100_000
    b = TraceBuilder()
    b.add(KernelSpec("k", (64, 1, 1), (128, 1, 1), at=0.0, dur=1000.0))
    first = next(e for e in b._events if e.get("cat") == "kernel")
    for i in range(1, n):
        b._events.append({**first, "ts": b._origin + i, "args": {**first["args"], "correlation": 10 * n + i}})
    path = b.write(tmp_path / "many.json")
    contents = read_trace(path)
    events = nesting.gather(contents)
    hidden, _ = nesting.cannot_nest(events)
    moves = nesting.lanes(events, hidden)
    assert (len(hidden), max(moves.lanes.values())) == (n - n // 1000, 999)
    assert moves.scans <= 3 * len(hidden)  # a push and a pop per kernel, a pop per freed lane: no row scans
    started = time.process_time()
    summary = wizard.fix_trace(path, tmp_path / "split.json", split_overlaps=True)
    assert (summary.moved, summary.lanes) == (n - n // 1000, 999)
    assert time.process_time() - started < 120  # 177 s of CPU before, at this size


# --- every real trace ---------------------------------------------------------------------------------


def _shared_traces() -> list[Any]:
    if not TRACES.is_dir():
        return [pytest.param(None, id="no-shared-traces", marks=pytest.mark.skip(reason="../shared/traces is absent"))]
    found = sorted(p for p in TRACES.glob("**/*") if ".json" in p.name)
    return [pytest.param(p, id=p.name) for p in found]


# What Perfetto's rule finds on the shared traces (kernels that cannot nest, other GPU events that cannot):
REAL = {"b200-eager.json.gz": (38, {}), "a100-alexnet.json.gz": (0, {"cuda_sync": 8})}


@pytest.mark.parametrize("path", _shared_traces())
def test_every_shared_trace_agrees_with_perfetto_and_its_copy_nests(
    path: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    rule = perfetto_rule.rule(path)
    assert rule.unmodelled == 0  # no B/E or v2 flows: the rule as modelled is the whole rule for these files
    check, _ = agree_and_fix(run_cli, path, tmp_path)
    count, others = REAL.get(path.name, (0, {}))
    assert (check["count"], check["other_events"]) == (count, others)
    rows = kernel_rows(rule)
    found = sorted(str(rule.events[i].get("cat")) for i in rule.spilled if rule.rows[i] in rows)
    assert found == sorted(["kernel"] * count + [c for c, k in others.items() for _ in range(k)])
    if path.name == "b200-eager.json.gz":  # every one PDL's: eager cuLaunchKernelEx/cudaLaunchKernelExC, <= 3.744 µs
        assert (check["pdl"], check["status"], check["max_overlap_us"]) == (38, "info", 3.744)
        assert len(gpu_arrows(rule)) == 38  # each one's arrow on the kernel before it


def test_the_triage_takes_a_graph_replay_overlap_to_kernels_hidden_not_to_pdl(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()  # node_1 starts 30 µs before node_0 ends: more than a launch's latency (20 µs), a warning
    b.add_graph([spec("node_0", at=0.0, dur=50.0), spec("node_1", at=20.0, dur=50.0)], flows=True)
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {b.write(tmp_path / 'graph.json')}\nviewer: perfetto\n")
    result = run_cli("run", "triage", "--answers", str(answers), "--defaults", "--json")
    assert result.returncode in (0, 1), result.stderr
    data = strict_json(result.stdout)
    assert [link["playbook"]["id"] for link in data["chain"]] == ["triage", "kernels-hidden"]
    assert data["conclusion"]["diagnosis"] == "graph-replay-overlap"
