"""A second, independent computation of the trace health checks (issue 25), for the tests.

Written from the JSON contract's text alone (the sentences quoted in each docstring) and sharing no
code with warpwizard: only ``json``, ``gzip``, ``re`` and ``statistics``. The tests compare every count
that ``warpwizard trace inspect --json`` reports with what this module finds in the same file; two
readings that agree on every real trace are worth more than one reading tested against itself.

Readings of the contract that its text leaves open, chosen here and named where they are used:
- an event counts only when it is a JSON object; "ph X" events only are calls, kernels and GPU events;
- an event with no numeric ``ts`` takes no part in what needs a time (order, window, overlap, offsets);
- a correlation id is an integer (``True`` is not one);
- the first and last thirds for ``drift_us`` hold ``n // 3`` linked kernels each.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

Event = dict[str, Any]

KERNEL_CATS = frozenset({"kernel", "Kernel"})
GPU_CATS = KERNEL_CATS | {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
CPU_OP_CATS = frozenset({"cpu_op", "Operator"})
LAUNCH_NAMES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipLaunchCooperativeKernel",
    }
)
GRAPH_LAUNCH_NAMES = frozenset({"cudaGraphLaunch", "hipGraphLaunch"})
BEGIN_CAPTURE = frozenset({"cudaStreamBeginCapture", "hipStreamBeginCapture"})
END_CAPTURE = frozenset({"cudaStreamEndCapture", "hipStreamEndCapture"})

# Bare tokens some real traces hold (C's printf of an infinite float): outside strings only.
_STRING_OR_BARE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?)\b(inf|nan)\b')
_CONSTANTS = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def _bare_to_json(match: re.Match[str]) -> str:
    if match.group(2) is None:
        return match.group(0)  # a string: left as written
    return match.group(1) + ("Infinity" if match.group(2) == "inf" else "NaN")


def load_events(path: Path) -> tuple[list[Event], Any]:
    """The trace's events (objects only, in file order) and its top-level value.

    A PyTorch 1.8 trace is a top-level array of events; later ones are an object with ``traceEvents``.
    ``inf``/``-inf``/``nan`` written bare, and ``Infinity``/``NaN``, are read as floats.
    """
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode("utf-8")
    try:
        top = json.loads(text, parse_constant=_CONSTANTS.__getitem__)
    except json.JSONDecodeError:
        top = json.loads(_STRING_OR_BARE.sub(_bare_to_json, text), parse_constant=_CONSTANTS.__getitem__)
    found = top if isinstance(top, list) else top.get("traceEvents", []) if isinstance(top, dict) else []
    return [e for e in found if isinstance(e, dict)], top


# --- Terms -------------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _args(e: Event) -> dict[str, Any]:
    args = e.get("args")
    return args if isinstance(args, dict) else {}


def ts_of(e: Event) -> float | None:
    return _number(e.get("ts"))


def dur_of(e: Event) -> float | None:
    return _number(e.get("dur"))


def end_of(e: Event, ts: float) -> float:
    """Contract: "A missing dur counts as 0, and so does a negative dur when computing an end." """
    dur = dur_of(e)
    return ts + (dur if dur is not None and dur > 0 else 0.0)


def correlation(e: Event) -> int | None:
    """Contract: "Correlation id: args.correlation (an integer)." """
    value = _args(e).get("correlation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_kernel(e: Event) -> bool:
    """Contract: "Kernel events: ph: "X", cat kernel or Kernel." """
    return e.get("ph") == "X" and e.get("cat") in KERNEL_CATS


def is_gpu_event(e: Event) -> bool:
    """Contract: "GPU events: kernels, plus cat gpu_memcpy, gpu_memset, Memcpy or Memset." (X events, as kernels.)"""
    return e.get("ph") == "X" and e.get("cat") in GPU_CATS


def is_call(e: Event) -> bool:
    """Contract: "A call: an X event of cat cuda_runtime, cuda_driver or Runtime." """
    return e.get("ph") == "X" and e.get("cat") in CALL_CATS


def is_launch(e: Event) -> bool:
    return is_call(e) and e.get("name") in LAUNCH_NAMES


def is_graph_launch(e: Event) -> bool:
    return is_call(e) and e.get("name") in GRAPH_LAUNCH_NAMES


def in_order(events: list[Event]) -> list[tuple[float, Event]]:
    """Contract: "Order: order by ts, with file order for ties." Python's sort is stable, so file order holds."""
    timed = [(ts, e) for e in events if (ts := ts_of(e)) is not None]
    return sorted(timed, key=lambda pair: pair[0])


def window(events: list[Event]) -> tuple[float, float] | None:
    """Contract: "Window: from the smallest ts to the largest ts + dur over all X events of the file." """
    spans = [(ts, end_of(e, ts)) for e in events if e.get("ph") == "X" and (ts := ts_of(e)) is not None]
    if not spans:
        return None
    return min(s for s, _ in spans), max(end for _, end in spans)


def captured_ids(events: list[Event]) -> set[int]:
    """``id()`` of every captured launch call.

    "Captured launch: a launch call on a thread (pid, tid) between a cudaStreamBeginCapture /
    hipStreamBeginCapture call and the next ...EndCapture call (cudaStreamEndCapture /
    hipStreamEndCapture) on that thread (or the end of the file, if the capture is still open)."
    """
    open_on: dict[tuple[Any, Any], bool] = defaultdict(bool)
    captured: set[int] = set()
    for _, e in in_order([e for e in events if is_call(e)]):
        thread = (e.get("pid"), e.get("tid"))
        name = e.get("name")
        if name in BEGIN_CAPTURE:
            open_on[thread] = True
        elif name in END_CAPTURE:
            open_on[thread] = False
        elif name in LAUNCH_NAMES and open_on[thread]:
            captured.add(id(e))
    return captured


# --- Per-trace checks -------------------------------------------------------------------------------


def kernels_missing(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = launch calls, not captured, with a correlation id matching no kernel event's correlation
    anywhere in the file. `launches`: all launch calls. `in_last_1pct`: how many of the counted ones start
    at ts >= window_end - 0.01 * (window_end - window_start). `captured`: captured launch calls (all of
    them). `no_correlation`: launch calls without a correlation id."
    """
    launches = [e for e in events if is_launch(e)]
    kernel_ids = {c for e in events if is_kernel(e) and (c := correlation(e)) is not None}
    captured = captured_ids(events)
    counted = [
        e for e in launches if id(e) not in captured and (c := correlation(e)) is not None and c not in kernel_ids
    ]
    span = window(events)
    late = 0
    if span is not None:
        start, end = span
        cut = end - 0.01 * (end - start)
        late = sum(1 for e in counted if (ts := ts_of(e)) is not None and ts >= cut)
    return {
        "count": len(counted),
        "launches": len(launches),
        "in_last_1pct": late,
        "captured": len(captured),
        "no_correlation": sum(1 for e in launches if correlation(e) is None),
    }


def kernels_overlap(events: list[Event]) -> dict[str, Any]:
    """Contract: "per (args.device, args.stream) (missing ones are None keys) kernels in order; count the kernels
    whose ts is below the largest end (ts + max(dur,0)) of the earlier kernels on that lane. `lanes`: how
    many lanes have at least one such kernel. `kernels`: all kernel events."
    """
    kernels = [e for e in events if is_kernel(e)]
    reach: dict[tuple[Any, Any], float] = {}
    hidden: Counter[tuple[Any, Any]] = Counter()
    for ts, e in in_order(kernels):
        args = _args(e)
        lane = (args.get("device"), args.get("stream"))
        if lane in reach and ts < reach[lane]:
            hidden[lane] += 1
        reach[lane] = max(reach.get(lane, end_of(e, ts)), end_of(e, ts))
    return {"count": sum(hidden.values()), "lanes": len(hidden), "kernels": len(kernels)}


def graph_launches(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = graph-launch calls. `kernels`: kernel events whose correlation id is a graph launch call's.
    `mode`: "eager" (no graph launches), "graph" (graph launches and no launch calls) or "mixed"."
    """
    graphs = [e for e in events if is_graph_launch(e)]
    graph_ids = {c for e in graphs if (c := correlation(e)) is not None}
    kernels = sum(1 for e in events if is_kernel(e) and correlation(e) in graph_ids)
    any_launch = any(is_launch(e) for e in events)
    mode = "eager" if not graphs else "mixed" if any_launch else "graph"
    return {"count": len(graphs), "kernels": kernels, "mode": mode}


def unlinked_kernels(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = kernel events whose correlation id (or none) matches no launch or graph-launch call's
    correlation in the file. status not_applicable (count 0) when the file has neither launch nor
    graph-launch calls. `kernels`: all kernel events."

    ``applicable`` is this oracle's own field: False where the status must be not_applicable.
    """
    calls = [e for e in events if is_launch(e) or is_graph_launch(e)]
    kernels = [e for e in events if is_kernel(e)]
    if not calls:
        return {"count": 0, "kernels": len(kernels), "applicable": False}
    linked = {c for e in calls if (c := correlation(e)) is not None}
    unlinked = sum(1 for e in kernels if correlation(e) is None or correlation(e) not in linked)
    return {"count": unlinked, "kernels": len(kernels), "applicable": True}


def durations(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = GPU events with dur < 0 (a missing dur is not negative). `zero`: kernel events with
    dur == 0 (a missing dur counts as 0). `gpu_events`: all GPU events."
    """
    gpu = [e for e in events if is_gpu_event(e)]
    negative = sum(1 for e in gpu if (d := dur_of(e)) is not None and d < 0)
    zero = sum(1 for e in gpu if is_kernel(e) and (dur_of(e) or 0.0) == 0)
    return {"count": negative, "zero": zero, "gpu_events": len(gpu)}


def clock_skew(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = kernels whose ts is below the ts of their call: the earliest (by the order above) launch or
    graph-launch call with the same correlation id. `linked`: kernels that have such a call. `min_us`,
    `median_us`: the minimum and median (statistics.median) of kernel.ts - call.ts over the linked kernels
    (null if none). `drift_us`: median offset of the last third of linked kernels minus that of the first
    third, taking the linked kernels in kernel order (null when fewer than 3 linked)."

    ``trend`` ("constant", "growing" or "shrinking") has no rule in the contract; not computed here.
    """
    call_ts: dict[int, float] = {}
    for ts, e in in_order([e for e in events if is_launch(e) or is_graph_launch(e)]):
        c = correlation(e)
        if c is not None and c not in call_ts:
            call_ts[c] = ts  # the earliest by order: the first one met
    offsets = [
        ts - call_ts[c] for ts, e in in_order([e for e in events if is_kernel(e)]) if (c := correlation(e)) in call_ts
    ]
    third = len(offsets) // 3
    drift = None
    if len(offsets) >= 3:
        drift = statistics.median(offsets[-third:]) - statistics.median(offsets[:third])
    return {
        "count": sum(1 for o in offsets if o < 0),
        "linked": len(offsets),
        "min_us": min(offsets) if offsets else None,
        "median_us": statistics.median(offsets) if offsets else None,
        "drift_us": drift,
    }


def trace_size(events: list[Event], path: Path) -> dict[str, Any]:
    """Contract: "count = events (any ph) that have a `cat`. `categories`: {cat: count}. `bytes`: the file's size on
    disk. `python_share`: python_function events / count (0 when count is 0). `largest`: the category
    with the most events."

    The contract names no tie-break for ``largest``: ``largest_ties`` lists every category at the top.
    """
    categories = Counter(str(e["cat"]) for e in events if "cat" in e)
    count = sum(categories.values())
    top = max(categories.values(), default=0)
    ties = sorted(cat for cat, n in categories.items() if n == top)
    return {
        "count": count,
        "categories": dict(categories),
        "bytes": path.stat().st_size,
        "python_share": categories["python_function"] / count if count else 0,
        "largest": ties[0] if ties else None,
        "largest_ties": ties,
    }


def stacks_missing(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = the CPU ops (cat cpu_op or Operator, X events) of a trace with no python_function event,
    else 0. `cpu_ops`: all CPU op events."
    """
    cpu_ops = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in CPU_OP_CATS)
    has_python = any(e.get("cat") == "python_function" for e in events)
    return {"count": 0 if has_python else cpu_ops, "cpu_ops": cpu_ops}


# --- Across ranks -----------------------------------------------------------------------------------


def rank_of(top: Any, filename: str) -> int | None:
    """Contract: "the rank is distributedInfo.rank, else the first number in the file name." """
    info = top.get("distributedInfo") if isinstance(top, dict) else None
    if isinstance(info, dict) and isinstance(info.get("rank"), int) and not isinstance(info["rank"], bool):
        return int(info["rank"])
    digits = re.search(r"\d+", Path(filename).name)
    return int(digits.group()) if digits else None


def rank_skew(ranked: list[tuple[int, list[Event]]]) -> dict[str, Any]:
    """Contract: "Take the i-th kernel (in order) of one name containing "nccl" (case-insensitive) on each rank;
    only instances present on every rank count. Skew = largest start minus smallest. `count`: those
    instances (zero skew included). `median_us`, `max_us`: of the skews. `last_by_rank`: {rank (as a
    string key): how often it started last}, with the lowest rank on a tie. `ranks`: the ranks, sorted."

    ``applicable`` is this oracle's own field: a single trace is not_applicable.
    """
    ranks = sorted(rank for rank, _ in ranked)
    if len(ranked) < 2:
        return {"count": 0, "ranks": ranks, "applicable": False}
    starts: list[dict[str, list[float]]] = []  # per rank: nccl kernel name -> starts in order
    for _, events in ranked:
        by_name: dict[str, list[float]] = defaultdict(list)
        for ts, e in in_order([e for e in events if is_kernel(e)]):
            name = e.get("name")
            if isinstance(name, str) and "nccl" in name.lower():
                by_name[name].append(ts)
        starts.append(by_name)
    skews: list[float] = []
    last: Counter[int] = Counter()
    shared = set(starts[0]).intersection(*starts[1:])
    for name in sorted(shared):
        for i in range(min(len(s[name]) for s in starts)):
            instance = [(rank, s[name][i]) for (rank, _), s in zip(ranked, starts, strict=True)]
            latest = max(ts for _, ts in instance)
            skews.append(latest - min(ts for _, ts in instance))
            last[min(rank for rank, ts in instance if ts == latest)] += 1
    return {
        "count": len(skews),
        "median_us": statistics.median(skews) if skews else None,
        "max_us": max(skews) if skews else None,
        "last_by_rank": {str(rank): n for rank, n in sorted(last.items())},
        "ranks": ranks,
        "applicable": True,
    }


# --- Status ------------------------------------------------------------------------------------------


def allowed_statuses(check: str, fields: dict[str, Any]) -> set[str]:
    """Contract: "Status: ok when count is 0; info for trace-size, stacks-missing, and a kernels-missing whose counted
    launches all lie in the last 1% of the window; warning or error for the others with count > 0." """
    if fields.get("applicable") is False:
        return {"not_applicable"}
    if fields["count"] == 0:
        return {"not_applicable"} if cannot_show(check, fields) else {"ok"}
    if check in ("trace-size", "stacks-missing"):
        return {"info"}
    if check == "kernels-missing" and fields["in_last_1pct"] == fields["count"]:
        return {"info"}
    return {"warning", "error"}


def cannot_show(check: str, fields: dict[str, Any]) -> bool:
    """docs/health.md: a check is not applicable where the trace cannot show its problem: no kernel checked
    (impossible-metrics), no launch calls (kernels-missing), no kernels (kernels-overlap), no GPU events
    (durations), no kernel linked to a launch (clock-skew), no CPU ops (stacks-missing)."""
    return {
        "impossible-metrics": fields.get("checked") == 0,
        "kernels-missing": fields.get("launches") == 0,
        "kernels-overlap": fields.get("kernels") == 0,
        "durations": fields.get("gpu_events") == 0,
        "clock-skew": fields.get("linked") == 0,
        "stacks-missing": fields.get("cpu_ops") == 0,
    }.get(check, False)


PER_TRACE_CHECKS = (
    "impossible-metrics",
    "kernels-missing",
    "kernels-overlap",
    "graph-launches",
    "unlinked-kernels",
    "durations",
    "clock-skew",
    "trace-size",
    "stacks-missing",
)
# checks a second computation of their own compares (tests/summary_oracle.py, tests/test_summary_table.py)
CHECKED_ELSEWHERE = ("summary-table", "profiler-overhead")


def per_trace(events: list[Event], path: Path) -> dict[str, dict[str, Any]]:
    """Every per-trace check this oracle can compute, by check id (impossible-metrics is not one)."""
    return {
        "kernels-missing": kernels_missing(events),
        "kernels-overlap": kernels_overlap(events),
        "graph-launches": graph_launches(events),
        "unlinked-kernels": unlinked_kernels(events),
        "durations": durations(events),
        "clock-skew": clock_skew(events),
        "trace-size": trace_size(events, path),
        "stacks-missing": stacks_missing(events),
    }
