"""The health checks (issue 25) against a second, independent computation: tests/health_oracle.py.

First the oracle itself, on small event lists whose answers are worked out by hand here; then every
real trace in ../shared/traces through ``warpwizard trace inspect --json``, each count and field of
each check compared with the oracle's, check by check.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests import health_oracle as oracle
from tests.conftest import TRACES, RunCli, strict_json

Event = dict[str, Any]


def kernel(
    ts: float, corr: int | None = None, *, dur: float | None = 1, stream: Any = 7, device: Any = 0, name: str = "k"
) -> Event:
    args: dict[str, Any] = {}
    if device is not None:
        args["device"] = device
    if stream is not None:
        args["stream"] = stream
    if corr is not None:
        args["correlation"] = corr
    event: Event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "args": args}
    if dur is not None:
        event["dur"] = dur
    return event


def call(name: str, ts: float, corr: int | None = None, *, tid: int = 1, pid: int = 1) -> Event:
    args = {} if corr is None else {"correlation": corr}
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": 1, "args": args}


def cpu_op(ts: float, dur: float, cat: str = "cpu_op") -> Event:
    return {"ph": "X", "cat": cat, "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": dur}


LAUNCH = "cudaLaunchKernel"
BEGIN, END = "cudaStreamBeginCapture", "cudaStreamEndCapture"


# --- the oracle on hand-worked lists -----------------------------------------------------------------


def test_kernels_missing_counts_uncaptured_launches_with_no_kernel() -> None:
    events = [
        cpu_op(0, 1000),  # the window: [0, 1000], so the last 1% starts at 990
        call(LAUNCH, 5, 1),
        kernel(8, 1),  # launch 1 has its kernel
        call(LAUNCH, 10, 2),  # no kernel: counted
        call(LAUNCH, 20),  # no correlation id: not counted, in no_correlation
        call(BEGIN, 50, tid=1),
        call(LAUNCH, 51, 5, tid=1),  # captured on thread (1, 1)
        call(LAUNCH, 52, 6, tid=2),  # another thread: not captured, counted
        call(END, 60, tid=1),
        call(LAUNCH, 70, 7, tid=1),  # after the capture ended: counted
        call(BEGIN, 80, tid=3),
        call(LAUNCH, 90, 9, tid=3),  # the capture is open to the end of the file: captured
        call(LAUNCH, 989.5, 8),  # counted, just before the last 1%
        call(LAUNCH, 990, 3),  # counted, in the last 1% (ts >= 990)
    ]
    # launch calls: 1, 2, no-id, 5, 6, 7, 9, 8, 3 = 9; counted: 2, 6, 7, 8, 3 = 5; captured: 5, 9. After the
    # window: none; launch 1 waited 4 µs from its call to its kernel's end (a backlog of 4: only ts >= 996 would do)
    expected = {
        "count": 5, "launches": 9, "in_last_1pct": 1, "captured": 2, "no_correlation": 1,
        "profiler_ranges": 0, "after_window": 0, "max_backlog_us": 4.0, "explained": 1,
    }  # fmt: skip
    assert oracle.kernels_missing(events) == expected
    assert oracle.allowed_statuses("kernels-missing", expected) == {"error"}


def test_kernels_missing_all_in_the_last_percent_is_info() -> None:
    events = [cpu_op(0, 1000), call(LAUNCH, 995, 1), call(LAUNCH, 999, 2)]
    fields = oracle.kernels_missing(events)
    assert fields == {
        "count": 2, "launches": 2, "in_last_1pct": 2, "captured": 0, "no_correlation": 0,
        "profiler_ranges": 0, "after_window": 0, "max_backlog_us": None, "explained": 2,
    }  # fmt: skip
    assert oracle.allowed_statuses("kernels-missing", fields) == {"info"}


def test_kernels_missing_a_range_profiler_trace_is_info() -> None:
    """Kineto's CUPTI range profiler: a cuda_profiler_range event carries the launch's correlation id."""
    ranged = {"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 0, "ts": 10, "dur": 5}
    events = [
        cpu_op(0, 1000),
        call(LAUNCH, 5, 1),
        {**ranged, "args": {"correlation": 1, "sm__inst_executed.sum": 42}},
        call(LAUNCH, 6, 2),
        {**ranged, "args": {"correlation": 2, "sm__inst_executed.sum": 43}},
    ]
    fields = oracle.kernels_missing(events)
    assert (fields["count"], fields["profiler_ranges"], fields["explained"]) == (2, 2, 2)
    assert oracle.allowed_statuses("kernels-missing", fields) == {"info"}
    dropped = oracle.kernels_missing([*events, call(LAUNCH, 7, 3)])  # one launch with neither: a drop
    assert (dropped["count"], dropped["profiler_ranges"], dropped["explained"]) == (3, 2, 2)
    assert oracle.allowed_statuses("kernels-missing", dropped) == {"error"}


def test_capture_ties_in_ts_go_by_file_order() -> None:
    events = [
        call(LAUNCH, 50, 1),  # same ts as the begin, earlier in the file: before it, not captured
        call(BEGIN, 50),
        call(LAUNCH, 50, 2),  # same ts, later in the file: captured
        call(LAUNCH, 60, 3),  # same ts as the end, earlier in the file: captured
        call(END, 60),
        call(LAUNCH, 60, 4),  # after the end: not captured
        call("cudaStreamBeginCapture", 70, pid=2),  # another process's thread (2, 1): no capture on (1, 1)
        call(LAUNCH, 71, 5),
    ]
    fields = oracle.kernels_missing(events)
    assert fields["captured"] == 2  # launches 2 and 3
    assert fields["count"] == 3  # launches 1, 4 and 5: none has a kernel
    # the same calls written in another file order: launch 4, end, launch 3, launch 1, launch 2, begin.
    # By ts then file order: 1, 2, begin (all at 50), then 4, end, 3 (all at 60): only launch 4 is captured
    shuffled = [events[5], events[4], events[3], events[0], events[2], events[1]]
    assert oracle.kernels_missing(shuffled)["captured"] == 1


def test_kernels_overlap_is_what_perfetto_cannot_nest_per_row() -> None:
    annotation = {"ph": "X", "cat": "gpu_user_annotation", "name": "a", "pid": 0, "tid": 8, "ts": 0, "dur": 50}
    memcpy = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 11, "dur": 10}
    events = [
        kernel(5, dur=10),  # written first, sorted second: starts inside [0, 10) and ends at 15: cannot nest
        kernel(0, dur=10),
        kernel(2, dur=3),  # ends at 5, inside [0, 10): nests
        kernel(10, dur=5),  # starts where [0, 10) ends: that one is popped, this one nests
        memcpy,  # 11-21 on the same row: over [10, 15)'s end: cannot nest, not a kernel
        kernel(12, dur=None),  # no dur: Perfetto drops it (json_parser_failure)
        kernel(20, dur=-5),  # negative: dropped before the stack is looked at
        kernel(14, dur=2),  # 14-16: over [10, 15)'s end (the copy was never pushed): cannot nest
        annotation,  # row (0, 8)
        kernel(3, dur=100, stream=8),  # inside the annotation, ends after it: cannot nest
        kernel(60, dur=1, stream=8),  # the annotation ended at 50: nests
        kernel(30, dur=5, device=1, stream=9),
        kernel(30, dur=5, device=1, stream=9),  # identical: nests in the first
        call(LAUNCH, 1, 1),  # not a kernel
    ]
    assert oracle.kernels_overlap(events) == {
        "count": 3, "lanes": 2, "kernels": 11, "pdl": 0, "rounding": 0, "graph": 0, "max_overlap_us": 47.0,
        "sub_latency": 2, "concurrent": 0, "sub_latency_us": 6.0, "kernel_us": 141.0, "material": False,
        "other_events": {"gpu_memcpy": 1},
    }  # fmt: skip


def test_graph_launches_and_mode() -> None:
    graph = [call("cudaGraphLaunch", 0, 10), kernel(1, 10), kernel(2, 10), kernel(3, 10), kernel(4, 12)]
    assert oracle.graph_launches(graph) == {"count": 1, "kernels": 3, "mode": "graph", "unrecorded": 0}
    mixed = [*graph, call("hipGraphLaunch", 5, 12), call(LAUNCH, 6, 11), kernel(7, 11)]
    assert oracle.graph_launches(mixed) == {"count": 2, "kernels": 4, "mode": "mixed", "unrecorded": 0}
    eager = oracle.graph_launches([call(LAUNCH, 6, 11), kernel(7, 11)])
    assert eager == {"count": 0, "kernels": 0, "mode": "eager", "unrecorded": 0}
    # a replay with no kernel while another has its kernels: under-recorded, a warning
    short = [*graph, call("cudaGraphLaunch_ptsz", 9, 20)]
    assert oracle.graph_launches(short) == {"count": 2, "kernels": 3, "mode": "graph", "unrecorded": 1}
    assert oracle.allowed_statuses("graph-launches", oracle.graph_launches(short)) == {"warning"}
    assert oracle.allowed_statuses("graph-launches", oracle.graph_launches(graph)) == {"info"}
    # no graph launch has a kernel: nothing to compare a replay with, so none counts as unrecorded
    bare = oracle.graph_launches([call("cudaGraphLaunch", 0, 10), call("cudaGraphLaunch", 5, 11)])
    assert bare["unrecorded"] == 0


def test_unlinked_kernels() -> None:
    events = [
        call(LAUNCH, 0, 1),
        call("cudaGraphLaunch", 1, 2),
        call("cudaMemcpyAsync", 2, 4),  # a call, but no launch: its kernel is unlinked
        kernel(10, 1),
        kernel(11, 2),
        kernel(12, 3),  # no call has 3
        kernel(13, None),  # no correlation id
        kernel(14, 4),
    ]
    assert oracle.unlinked_kernels(events) == {
        "count": 3, "kernels": 5, "before_window": 0, "before_first_call": 0, "applicable": True,
    }  # fmt: skip
    no_calls = oracle.unlinked_kernels([kernel(1, 1), call("cudaMemcpyAsync", 0, 1)])
    assert no_calls == {"count": 0, "kernels": 1, "before_window": 0, "before_first_call": 0, "applicable": False}
    assert oracle.allowed_statuses("unlinked-kernels", no_calls) == {"not_applicable"}


def test_unlinked_kernels_launched_before_the_window() -> None:
    """CUPTI numbers launches in order: a kernel whose id is below every call's was launched before the profiler
    recorded calls, wherever its ts lies (here one runs after the first call: ``before_first_call`` misses it)."""
    events = [
        kernel(1, 40),  # before the first call in time, and id 40 < 50
        call("cudaMemcpyAsync", 2, 50),  # the smallest call id: 50
        kernel(3, 41),  # id 41 < 50, but after the first call in time
        call(LAUNCH, 4, 51),
        kernel(5, 51),
    ]
    fields = oracle.unlinked_kernels(events)
    assert (fields["count"], fields["before_window"], fields["before_first_call"]) == (2, 2, 1)
    assert oracle.allowed_statuses("unlinked-kernels", fields) == {"info"}
    inside = oracle.unlinked_kernels([*events, kernel(6, 60)])  # id 60 is inside the window: a lost link
    assert (inside["count"], inside["before_window"]) == (3, 2)
    assert oracle.allowed_statuses("unlinked-kernels", inside) == {"warning"}


def test_durations_negative_zero_and_missing() -> None:
    memcpy = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 0, "dur": -2}
    memset = {"ph": "X", "cat": "Memset", "name": "Memset", "ts": 0, "dur": 0}
    events = [
        kernel(0, dur=-1),  # negative (and not zero)
        memcpy,  # negative GPU event
        kernel(1, dur=None),  # missing: not negative, but zero
        kernel(2, dur=0),  # zero
        kernel(3, dur=0.0),  # zero, written as a float
        memset,  # dur 0 but no kernel: not in zero
        cpu_op(0, -3),  # not a GPU event
        {**kernel(4, dur=-7), "ph": "i"},  # not an X event: no kernel, no GPU event
    ]
    assert oracle.durations(events) == {"count": 2, "zero": 3, "gpu_events": 6}


def test_clock_skew_offsets_drift_and_the_earliest_call() -> None:
    events = [
        kernel(420, 4),  # written first; fourth in kernel order
        call(LAUNCH, 100, 1),
        call(LAUNCH, 90, 1),  # same id, earlier ts though later in the file: the call of kernel 1
        kernel(95, 1),  # 95 - 90 = 5 (it would be -5 against the first-written call)
        call(LAUNCH, 200, 2),
        kernel(198, 2),  # -2: before its call
        call(LAUNCH, 300, 3),
        kernel(310, 3),  # 10
        call(LAUNCH, 400, 4),  # kernel 4: 20
        kernel(600, 99),  # no call: not linked
        call("cudaGraphLaunch", 500, 6),
        kernel(530, 6),  # 30
        kernel(531, 6),  # 31
    ]
    # offsets in kernel order: [5, -2, 10, 20, 30, 31]; thirds of 2: medians 1.5 and 30.5
    assert oracle.clock_skew(events) == {
        "count": 1,
        "linked": 6,
        "unmeasured": 0,
        "min_us": -2.0,
        "median_us": 15.0,
        "drift_us": 29.0,
    }
    two = oracle.clock_skew([call(LAUNCH, 0, 1), kernel(3, 1), call(LAUNCH, 1, 2), kernel(2, 2)])
    assert two == {"count": 0, "linked": 2, "unmeasured": 0, "min_us": 1.0, "median_us": 2.0, "drift_us": None}
    far = oracle.clock_skew([call(LAUNCH, 1.7e308, 1), kernel(-1.7e308, 1), call(LAUNCH, 0, 2), kernel(3, 2)])
    assert far == {"count": 0, "linked": 2, "unmeasured": 1, "min_us": 3.0, "median_us": 3.0, "drift_us": None}
    assert oracle.clock_skew([kernel(1, 1)]) == {
        "count": 0,
        "linked": 0,
        "unmeasured": 0,
        "min_us": None,
        "median_us": None,
        "drift_us": None,
    }


def test_clock_skew_thirds_round_down() -> None:
    # 7 linked kernels: thirds of 7 // 3 = 2: first [0, 1], last [5, 6]: drift 5.5 - 0.5 = 5
    events = [e for i in range(7) for e in (call(LAUNCH, 10 * i, i), kernel(10 * i + i, i))]
    assert oracle.clock_skew(events)["drift_us"] == 5.0


def test_trace_size(tmp_path: Path) -> None:
    events: list[Event] = [
        {"ph": "X", "cat": "a", "ts": 0},
        {"ph": "i", "cat": "a", "ts": 0},
        {"ph": "f", "cat": "a", "ts": 0, "id": 1},
        {"ph": "X", "cat": "python_function", "ts": 0},
        {"ph": "i", "cat": "python_function", "ts": 0},
        {"ph": "M", "name": "process_name"},  # no cat: not counted
        {"ph": "X", "name": "no cat", "ts": 0},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    fields = oracle.trace_size(events, path)
    assert fields == {
        "count": 5,
        "categories": {"a": 3, "python_function": 2},
        "other_categories": 0,
        "other_events": 0,
        "bytes": len(path.read_bytes()),
        "unpacked_bytes": len(path.read_bytes()),
        "compressed": False,
        "python_share": 0.4,
        "largest": "a",
        "largest_ties": ["a"],
    }
    assert oracle.allowed_statuses("trace-size", fields) == {"ok"}  # python_share 0.4 of a small trace: a statistic
    assert oracle.allowed_statuses("trace-size", {**fields, "unpacked_bytes": 256 << 20}) == {"info"}  # too big
    small = oracle.trace_size(events[:3], path)
    assert oracle.allowed_statuses("trace-size", small) == {"ok"}
    many = [{"ph": "i", "cat": f"c{n:02}", "ts": 0} for n in range(25) for _ in range(n + 1)]
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(json.dumps({"traceEvents": many}).encode()))
    fields = oracle.trace_size(many, packed)
    assert list(fields["categories"]) == [f"c{n:02}" for n in range(24, 4, -1)]  # the 20 largest
    assert (fields["other_categories"], fields["other_events"]) == (5, 1 + 2 + 3 + 4 + 5)
    assert fields["compressed"] and fields["unpacked_bytes"] == len(gzip.decompress(packed.read_bytes()))
    assert oracle.trace_size([], path)["python_share"] == 0


def test_stacks_missing() -> None:
    ops = [cpu_op(0, 1), cpu_op(1, 1), cpu_op(2, 1, cat="Operator"), {"ph": "i", "cat": "cpu_op", "ts": 3}]
    assert oracle.stacks_missing(ops) == {"count": 3, "cpu_ops": 3}
    with_python = [*ops, {"ph": "X", "cat": "python_function", "ts": 0, "dur": 9}]
    assert oracle.stacks_missing(with_python) == {"count": 0, "cpu_ops": 3}


def test_rank_skew_instances_on_every_rank_and_ties() -> None:
    def nccl(name: str, *starts: float) -> list[Event]:
        return [kernel(ts, name=name, dur=1) for ts in starts]

    ar, sr, bc = "ncclKernel_AllReduce_RING_LL", "NCCL_SendRecv", "ncclBroadcast"
    rank0 = [*nccl(ar, 50, 10), *nccl(sr, 100), *nccl(bc, 5), kernel(0, name="gemm")]  # 50 written first
    rank1 = [*nccl(ar, 12, 50, 90), *nccl(sr, 104), *nccl(bc, 6)]
    rank2 = [*nccl(ar, 11, 50), *nccl(sr, 104)]  # no broadcast: it is on no instance
    # AllReduce #0: 10, 12, 11 -> skew 2, rank 1 last; #1: 50, 50, 50 -> skew 0, a tie: rank 0;
    # #2 is on rank 1 only. SendRecv (case-insensitive): 100, 104, 104 -> skew 4, ranks 1 and 2 tie: 1.
    fields = oracle.rank_skew([(2, rank2), (0, rank0), (1, rank1)])
    assert fields == {
        "count": 3,
        "median_us": 2.0,
        "max_us": 4.0,
        "last_by_rank": {"0": 1, "1": 2},
        "ranks": [0, 1, 2],
        "unmeasured": 0,
        "floor_us": 100.0,
        "short": {"0": 1, "2": 1},  # AllReduce: 2, 3 and 2 instances: ranks 0 and 2 have one fewer than rank 1
        "applicable": True,
    }
    assert oracle.allowed_statuses("rank-skew", fields) == {"info"}  # 2 µs: below the 100 µs floor
    # ranks 0 and 1 alone: skews 2, 0, 4 and 1 (the broadcast too): a median of 1.5 reaches a 1.5 µs floor
    assert oracle.allowed_statuses("rank-skew", oracle.rank_skew([(0, rank0), (1, rank1)], floor_us=1.5)) == {"warning"}
    single = oracle.rank_skew([(0, rank0)])
    assert single == {"count": 0, "ranks": [0], "unmeasured": 0, "floor_us": 100.0, "applicable": False}
    assert oracle.allowed_statuses("rank-skew", single) == {"not_applicable"}


def test_rank_of() -> None:
    assert oracle.rank_of({"distributedInfo": {"rank": 3}}, "worker12.json") == 3
    assert oracle.rank_of({"distributedInfo": {"backend": "nccl"}}, "worker12_step_3.json") == 12
    assert oracle.rank_of([], "dir7/worker1_step_12.json") == 1  # the file's name, not its directory
    assert oracle.rank_of({}, "trace.json") is None


def test_load_events_bare_tokens_gzip_and_array(tmp_path: Path) -> None:
    text = (
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "inference nan -inf", "ts": 1, "dur": 2,\n'
        '"args": {"a": inf, "b": -inf, "c": nan, "d": Infinity, "e": -Infinity, "f": NaN}}, 7]}'
    )
    path = tmp_path / "bare.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    events, top = oracle.load_events(path)
    assert len(events) == 1 and isinstance(top, dict)  # the 7 is no event
    args = events[0]["args"]
    assert events[0]["name"] == "inference nan -inf"  # strings untouched
    assert args["a"] == args["d"] == math.inf and args["b"] == args["e"] == -math.inf
    assert math.isnan(args["c"]) and math.isnan(args["f"])
    array = tmp_path / "pt18.json"
    array.write_text(json.dumps([kernel(1, 1), call(LAUNCH, 0, 1)]))
    events, top = oracle.load_events(array)
    assert isinstance(top, list) and [e["cat"] for e in events] == ["kernel", "cuda_runtime"]


# --- every real trace through the CLI, against the oracle ---------------------------------------------

FLOAT_FIELDS = frozenset(
    {"min_us", "median_us", "drift_us", "python_share", "max_us", "max_backlog_us", "kernel_us", "sub_latency_us"}
)
COMMON = {"check", "status", "count", "playbook", "summary", "meaning", "reason", "examples"}
EXAMPLE_KEYS = {"name", "ts", "dur", "stream", "device", "correlation", "pid", "tid"}
NOT_IMPLEMENTED = "health check not implemented in this build"


def _shared_traces() -> list[Any]:
    if not TRACES.is_dir():
        return [pytest.param(None, id="no-shared-traces", marks=pytest.mark.skip(reason="../shared/traces is absent"))]
    # A trace, or a rank directory (trace files directly inside): ncu/ holds Nsight Compute reports and pairs/
    # folders of two profiles each (compared by tests/trace/test_diff.py), neither a rank directory.
    found = sorted(p for p in TRACES.iterdir() if (p.is_dir() and _trace_files(p)) or ".json" in p.name)
    return [pytest.param(p, id=p.name) for p in found]


def _trace_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if ".json" in p.name) if path.is_dir() else [path]


def _same(label: str, field: str, got: Any, want: Any) -> None:
    if field in FLOAT_FIELDS and isinstance(want, float) and isinstance(got, (int, float)):
        assert got == pytest.approx(want, rel=1e-6, abs=0.0), f"{label} {field}: report {got!r}, oracle {want!r}"
    else:
        assert got == want, f"{label} {field}: report {got!r}, oracle {want!r}"


def _check_common(label: str, entry: dict[str, Any], fields: dict[str, Any]) -> None:
    assert set(entry) >= COMMON, f"{label}: missing {sorted(COMMON - set(entry))}"
    status = entry["status"]
    allowed = oracle.allowed_statuses(entry["check"], fields)
    assert status in allowed, f"{label} status: report {status!r}, oracle allows {sorted(allowed)}"
    assert (entry["reason"] is not None) == (status == "not_applicable"), f"{label} reason: {entry['reason']!r}"
    assert isinstance(entry["examples"], list) and len(entry["examples"]) <= 5, f"{label} examples: over 5"
    for example in entry["examples"]:
        assert set(example) >= EXAMPLE_KEYS, f"{label} example lacks {sorted(EXAMPLE_KEYS - set(example))}"


def _compare_report(name: str, report: dict[str, Any], path: Path) -> None:
    events, _ = oracle.load_events(path)
    expected = oracle.per_trace(events, path)
    health = report["health"]
    ids = [c["check"] for c in health if c["check"] not in oracle.CHECKED_ELSEWHERE]
    assert ids == list(oracle.PER_TRACE_CHECKS), f"{name}: checks or their order"
    by_id = {c["check"]: c for c in health}
    impossible = by_id["impossible-metrics"]  # the mechanisms are not computable here: the report's, judged here
    assert impossible["count"] == report["wrong_launches"], f"{name} impossible-metrics count"
    wrong = {m: n for m, n in report["mechanisms"].items() if n and m != "F"}
    if impossible["status"] != "not_applicable":
        assert impossible["mechanisms"] == wrong, f"{name} impossible-metrics mechanisms"
    _check_common(
        f"{name} impossible-metrics",
        impossible,
        {"count": report["wrong_launches"], "checked": report["kernels_checked"], "mechanisms": wrong},
    )
    for check, fields in expected.items():
        entry = by_id[check]
        label = f"{name} {check}"
        _check_common(label, entry, fields)
        for field, want in fields.items():
            if field in ("applicable", "explained"):
                continue
            if field == "largest_ties":
                assert entry["largest"] in want, f"{label} largest: report {entry['largest']!r}, oracle {want}"
                continue
            if field == "largest" and len(fields["largest_ties"]) > 1:
                continue  # a tie: the contract names no winner (checked just above)
            assert field in entry, f"{label}: no field {field!r}"
            _same(label, field, entry[field], want)
    trend = by_id["clock-skew"].get("trend")
    drift = expected["clock-skew"]["drift_us"]
    assert trend in ("constant", "growing", "shrinking"), f"{name} clock-skew trend: {trend!r}"
    if trend != "constant":  # the contract gives no threshold, only the direction
        assert drift is not None and (drift > 0) == (trend == "growing"), (
            f"{name} clock-skew trend {trend}, drift {drift}"
        )


def _compare_ranks_complete(name: str, entry: dict[str, Any], files: list[Path]) -> None:
    label = f"{name} ranks-complete"
    fields = oracle.ranks_complete([(path.name, oracle.load_events(path)[1]) for path in files])
    _check_common(label, entry, fields)
    for field, want in fields.items():
        if field == "applicable":
            continue
        got = entry[field]
        if field in ("foreign", "groups_disagree"):  # the report names each trace with why: "NAME: why"
            got = sorted(item.split(": ", 1)[0] for item in got)
        _same(label, field, got, want)


def _compare_rank_skew(name: str, top_health: list[dict[str, Any]], files: list[Path]) -> None:
    assert [c["check"] for c in top_health] == ["ranks-complete", "rank-skew"], f"{name}: top-level health"
    _compare_ranks_complete(name, top_health[0], files)
    entry = top_health[1]
    label = f"{name} rank-skew"
    if len(files) < 2:  # a single trace
        _check_common(label, entry, {"count": 0, "applicable": False})
        _same(label, "count", entry["count"], 0)
        return
    ranked = []
    for path in files:
        events, top = oracle.load_events(path)
        rank = oracle.rank_of(top, path.name)
        assert rank is not None, f"{name}: no rank for {path.name}"
        ranked.append((rank, events))
    fields = oracle.rank_skew(ranked)
    _check_common(label, entry, fields)
    for field, want in fields.items():
        if field == "applicable":
            continue
        if field == "last_by_rank":  # ranks that never started last may be written as 0 or left out
            got = {rank: n for rank, n in entry[field].items() if n}
            assert got == want, f"{label} last_by_rank: report {entry[field]!r}, oracle {want!r}"
            continue
        assert field in entry, f"{label}: no field {field!r}"
        _same(label, field, entry[field], want)


@pytest.mark.parametrize("path", _shared_traces())
def test_health_matches_the_oracle_on_every_shared_trace(path: Path, run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", "--json", str(path), timeout=300)
    assert result.returncode in (0, 1), result.stderr
    data = strict_json(result.stdout)  # strict: NaN or Infinity in the document is an error
    if "health" not in data or any("health" not in r for r in data["reports"]):
        pytest.skip(NOT_IMPLEMENTED)
    files = _trace_files(path)
    by_name = {Path(r["path"]).name: r for r in data["reports"]}
    assert sorted(by_name) == sorted(p.name for p in files), f"{path.name}: one report per file"
    for file in files:
        _compare_report(f"{path.name}:{file.name}" if path.is_dir() else path.name, by_name[file.name], file)
    _compare_rank_skew(path.name, data["health"], files)


def _report_as_the_contract_says(path: Path) -> dict[str, Any]:
    """A report written from the oracle's own fields, as a correct build would: for testing the comparison."""
    events, _ = oracle.load_events(path)
    health: list[dict[str, Any]] = [
        {
            "check": "impossible-metrics",
            "status": "ok",
            "count": 0,
            "playbook": None,
            "summary": "",
            "meaning": "",
            "mechanisms": {},
        }
    ]
    for check, fields in oracle.per_trace(events, path).items():
        status = sorted(oracle.allowed_statuses(check, fields))[0]
        own = {k: v for k, v in fields.items() if k not in ("applicable", "largest_ties")}
        health.append({"check": check, "status": status, "playbook": None, "summary": "", "meaning": "", **own})
    for entry in health:
        entry["reason"] = "no launch calls" if entry["status"] == "not_applicable" else None
        entry["examples"] = []
    health[6]["trend"] = "constant"
    return {"path": str(path), "wrong_launches": 0, "kernels_checked": 1, "mechanisms": {}, "health": health}


def test_the_comparison_names_trace_check_and_field(tmp_path: Path) -> None:
    events = [cpu_op(0, 100), call(LAUNCH, 1, 1), kernel(5, 1, dur=10), kernel(6, 1, dur=10), call(LAUNCH, 7, 2)]
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"traceEvents": events}))
    report = _report_as_the_contract_says(path)
    _compare_report("small.json", report, path)  # agrees with itself
    overlap = next(c for c in report["health"] if c["check"] == "kernels-overlap")
    assert overlap["count"] == 1 and overlap["status"] == "warning"
    overlap["lanes"] = 2
    with pytest.raises(AssertionError, match=re.escape("small.json kernels-overlap lanes: report 2, oracle 1")):
        _compare_report("small.json", report, path)
    overlap["lanes"], overlap["status"] = 1, "ok"
    with pytest.raises(AssertionError, match=re.escape("small.json kernels-overlap status: report 'ok'")):
        _compare_report("small.json", report, path)
