"""A second, independent computation of the trace health checks (issue 25), for the tests.

Written from the JSON contract's text alone (the sentences quoted in each docstring) and sharing no
code with warpwizard: only ``json``, ``gzip``, ``math``, ``re``, ``statistics`` and ``yaml`` (to read
the flagship playbook's own verdicts). The tests compare every count that ``warpwizard trace inspect
--json`` reports with what this module finds in the same file; two readings that agree on every real
trace are worth more than one reading tested against itself.

Readings of the contract that its text leaves open, chosen here and named where they are used:
- an event counts only when it is a JSON object; "ph X" events only are calls, kernels and GPU events;
- an event with no numeric ``ts`` takes no part in what needs a time (order, window, overlap, offsets);
- a correlation id is an integer (``True`` is not one);
- the first and last thirds for ``drift_us`` hold ``n // 3`` linked kernels each.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

Event = dict[str, Any]

KERNEL_CATS = frozenset({"kernel", "Kernel"})
GPU_CATS = KERNEL_CATS | {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
CPU_OP_CATS = frozenset({"cpu_op", "Operator"})
DOCS = Path(__file__).resolve().parents[1] / "docs" / "health.md"
FLAGSHIP = Path(__file__).resolve().parents[1] / "playbooks" / "negative-warps-per-sm.yaml"


def _names_after(label: str) -> frozenset[str]:
    """The call names docs/health.md lists after ``label`` (its Terms: backticked names up to the line's end)."""
    for line in DOCS.read_text().splitlines():
        if line.startswith(f"- **{label}**"):
            return frozenset(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", line))
    raise AssertionError(f"docs/health.md has no {label!r} term")


# Contract: the Terms' "Launch calls" and "Graph-launch calls" lines (each a list of backticked names).
LAUNCH_NAMES = _names_after("Launch calls")
GRAPH_LAUNCH_NAMES = _names_after("Graph-launch calls")
RANGE_CAT = "cuda_profiler_range"
SIZE_WORTH_A_WORD = 256 * 1024 * 1024  # contract: "unpacked size of 256 MiB or more"
TOP_CATEGORIES = 20  # contract: "the 20 largest categories"
RANK_SKEW_FLOOR_US = 100.0  # contract: "the floor, 100 µs unless --rank-skew-floor-us says otherwise"
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


def _ranged_ids(events: list[Event], counted: list[Event]) -> set[int]:
    """Contract: "`profiler_ranges` (those a range event measured, not dropped: its correlation id, or, in a trace
    without kernel events where no range event carries one (Kineto before cd8d3190, 2025-05-31), the first ones in
    launch order, one per range event)". A correlation of 0 is none (Kineto wrote 0 for a kernel it could not
    name)."""
    ranges = [e for e in events if e.get("cat") == RANGE_CAT]
    range_ids = {c for e in ranges if (c := correlation(e))}
    if range_ids:
        return {id(e) for e in counted if correlation(e) in range_ids}
    if any(is_kernel(e) for e in events):
        return set()
    return {id(e) for _, e in in_order(counted)[: len(ranges)]}


def _after_window(events: list[Event], counted: list[Event], explained: set[int]) -> tuple[set[int], float | None]:
    """Contract: "`after_window` (the others that start after their process's last launch that has its kernel and
    no earlier than the window's end minus the largest call-start-to-kernel-end time of that process's launches that
    have their kernel (`max_backlog_us`)". A process: the call's pid (a Kineto trace is one process)."""
    span = window(events)
    kernel_end: dict[int, float] = {}
    for e in events:
        if is_kernel(e) and (c := correlation(e)) is not None and (ts := ts_of(e)) is not None:
            kernel_end[c] = max(kernel_end.get(c, -math.inf), end_of(e, ts))
    last: dict[Any, float] = {}
    backlog: dict[Any, float] = {}
    for e in events:
        c, ts = correlation(e), ts_of(e)
        if is_launch(e) and c in kernel_end and ts is not None:
            last[e.get("pid")] = max(last.get(e.get("pid"), -math.inf), ts)
            backlog[e.get("pid")] = max(backlog.get(e.get("pid"), -math.inf), kernel_end[c] - ts)
    after: set[int] = set()
    if span is None:
        return after, None
    for e in counted:
        pid, ts = e.get("pid"), ts_of(e)
        if id(e) in explained or ts is None or pid not in last:
            continue
        if ts > last[pid] and ts >= span[1] - backlog[pid]:
            after.add(id(e))
    pids = {e.get("pid") for e in counted if id(e) not in explained}
    largest = max((backlog[p] for p in pids if p in backlog), default=None)
    return after, largest


def kernels_missing(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = launch calls, not captured, with a correlation id matching no kernel event's correlation
    anywhere in the file. `launches`: all launch calls. `in_last_1pct`: how many of the counted ones start
    at ts >= window_end - 0.01 * (window_end - window_start). `captured`: captured launch calls (all of
    them). `no_correlation`: launch calls without a correlation id." `profiler_ranges` and `after_window`: above.
    ``explained`` is this oracle's own field: counted launches in the last 1%, with a range event or after the window.
    """
    launches = [e for e in events if is_launch(e)]
    kernel_ids = {c for e in events if is_kernel(e) and (c := correlation(e)) is not None}
    captured = captured_ids(events)
    counted = [
        e for e in launches if id(e) not in captured and (c := correlation(e)) is not None and c not in kernel_ids
    ]
    span = window(events)
    late: set[int] = set()
    if span is not None:
        start, end = span
        cut = end - 0.01 * (end - start)
        late = {id(e) for e in counted if (ts := ts_of(e)) is not None and ts >= cut}
    ranged = _ranged_ids(events, counted)
    after, backlog = _after_window(events, counted, late | ranged)
    return {
        "count": len(counted),
        "launches": len(launches),
        "in_last_1pct": len(late),
        "captured": len(captured),
        "no_correlation": sum(1 for e in launches if correlation(e) is None),
        "profiler_ranges": len(ranged),
        "after_window": len(after),
        "max_backlog_us": backlog,
        "explained": len(late | ranged | after),
    }


SUB_LATENCY_NS = 20_000  # issue 45: "overlap a kernel by at most 20 µs"
MATERIAL_SHARE = 0.10  # docs/health.md: "at most 10% of the kernel time counted once (summary-table's margin)"
PDL_LAUNCH_NAMES = frozenset(
    {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz"}
)


def kernels_overlap(events: list[Event]) -> dict[str, Any]:
    """Contract: "kernels Perfetto cannot nest on their row (tests/perfetto_rule.py: Perfetto's source). `lanes`: rows
    with such a kernel; `kernels`: all kernel events; `pdl`: those launched by a cuLaunchKernelEx/cudaLaunchKernelExC
    call (same correlation id) that overlap a kernel by at most 5 µs; `rounding`: those that end at most 1 µs after
    the end of the other event they overlap; `graph`: those whose correlation id is a graph launch call's;
    `max_overlap_us`: the open event's end minus the kernel's start, at most; `other_events`: the other X events of
    kernel rows that cannot nest, by category." Issue 45: "`sub_latency`: the others that overlap a kernel by at
    most 20 µs; `sub_latency_us`: their overlaps added up; `kernel_us`: every kernel's duration added up, a negative
    or missing one as 0; `material`: `sub_latency_us` above 10% of `kernel_us` minus it (the kernel time counted
    once)." """
    from tests import perfetto_rule

    result = perfetto_rule.rule_of(events)
    kernels = [i for i, e in enumerate(events) if is_kernel(e)]
    kernel_rows = {result.rows[i] for i in kernels if i in result.rows}
    hidden = [i for i in result.spilled if is_kernel(events[i])]
    pdl_ids = {
        c for e in events if is_launch(e) and e.get("name") in PDL_LAUNCH_NAMES and (c := correlation(e)) is not None
    }
    graph_ids = {c for e in events if is_graph_launch(e) and (c := correlation(e)) is not None}
    pdl = rounding = sub_latency = sub_latency_ns = concurrent = 0
    longest = 0

    def ran_on(e: Event) -> Any:
        """The stream a kernel ran on: an exporter that moved it to a display lane writes the lane as args.stream
        and the stream as args.original_stream (pytorch/pytorch#194854; Cuspy's logical lanes)."""
        args = e.get("args")
        return args.get("original_stream", args.get("stream")) if isinstance(args, dict) else None

    def ns(value: Any) -> int:
        found = perfetto_rule.to_ns(value)
        assert found is not None  # an event on a stack has a time
        return found

    for i in hidden:
        other = events[result.conflicts[i]]
        other_end = ns(other["ts"]) + ns(other["dur"])
        shared, past = other_end - ns(events[i]["ts"]), ns(events[i]["ts"]) + ns(events[i]["dur"]) - other_end
        longest = max(longest, shared)
        if is_kernel(other) and ran_on(other) != ran_on(events[i]):
            concurrent += 1
        elif is_kernel(other) and correlation(events[i]) in pdl_ids and shared <= 5000:
            pdl += 1
        elif not is_kernel(other) and past <= 1000:
            rounding += 1
        elif is_kernel(other) and shared <= SUB_LATENCY_NS:
            sub_latency += 1
            sub_latency_ns += shared
    kernel_us = 0.0
    for e in events:
        d = dur_of(e) if is_kernel(e) else None
        if d is not None and math.isfinite(d) and d > 0:
            kernel_us += d
    others = Counter(
        str(events[i].get("cat")) for i in result.spilled if not is_kernel(events[i]) and result.rows[i] in kernel_rows
    )
    return {
        "count": len(hidden),
        "lanes": len({result.rows[i] for i in hidden}),
        "kernels": len(kernels),
        "pdl": pdl,
        "rounding": rounding,
        "graph": sum(1 for i in hidden if correlation(events[i]) in graph_ids),
        "sub_latency": sub_latency,
        "concurrent": concurrent,
        "sub_latency_us": round(sub_latency_ns / 1000, 3),
        "kernel_us": round(kernel_us, 3),
        "material": sub_latency_ns / 1000 > MATERIAL_SHARE * (kernel_us - sub_latency_ns / 1000),
        "max_overlap_us": longest / 1000,
        "other_events": dict(others),
    }


def graph_launches(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = graph-launch calls. `kernels`: kernel events whose correlation id is a graph launch call's.
    `mode`: "eager" (no graph launches), "graph" (graph launches and no launch calls) or "mixed"."
    """
    graphs = [e for e in events if is_graph_launch(e)]
    graph_ids = {c for e in graphs if (c := correlation(e)) is not None}
    kernels = sum(1 for e in events if is_kernel(e) and correlation(e) in graph_ids)
    any_launch = any(is_launch(e) for e in events)
    mode = "eager" if not graphs else "mixed" if any_launch else "graph"
    # Contract: "`unrecorded`: graph-launch calls (with a correlation id) whose id matches no kernel, counted
    # only while at least one other graph-launch call has a kernel"
    kernel_ids = {c for e in events if is_kernel(e) and (c := correlation(e)) is not None}
    with_id = [c for e in graphs if (c := correlation(e)) is not None]
    empty = [c for c in with_id if c not in kernel_ids]
    unrecorded = len(empty) if len(empty) < len(with_id) else 0
    return {"count": len(graphs), "kernels": kernels, "mode": mode, "unrecorded": unrecorded}


def unlinked_kernels(events: list[Event]) -> dict[str, Any]:
    """Contract: "count = kernel events whose correlation id (or none) matches no launch or graph-launch call's
    correlation in the file. status not_applicable (count 0) when the file has neither launch nor
    graph-launch calls. `kernels`: all kernel events."

    ``applicable`` is this oracle's own field: False where the status must be not_applicable.
    """
    calls = [e for e in events if is_launch(e) or is_graph_launch(e)]
    kernels = [e for e in events if is_kernel(e)]
    if not calls:
        return {"count": 0, "kernels": len(kernels), "before_window": 0, "before_first_call": 0, "applicable": False}
    linked = {c for e in calls if (c := correlation(e)) is not None}
    unlinked = [e for e in kernels if correlation(e) is None or correlation(e) not in linked]
    # Contract: "`before_window`: those whose correlation id is below the smallest correlation id of any call
    # in the file (CUPTI numbers launches in order)"; "`before_first_call`: those whose ts is below the
    # smallest ts of any call"
    call_ids = [c for e in events if is_call(e) and (c := correlation(e)) is not None]
    first_id = min(call_ids) if call_ids else None
    call_ts = [ts for e in events if is_call(e) and (ts := ts_of(e)) is not None]
    first_ts = min(call_ts) if call_ts else None
    before = sum(1 for e in unlinked if first_id is not None and (c := correlation(e)) is not None and c < first_id)
    early = sum(1 for e in unlinked if first_ts is not None and (ts := ts_of(e)) is not None and ts < first_ts)
    return {
        "count": len(unlinked),
        "kernels": len(kernels),
        "before_window": before,
        "before_first_call": early,
        "applicable": True,
    }


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
    every = [
        ts - call_ts[c] for ts, e in in_order([e for e in events if is_kernel(e)]) if (c := correlation(e)) in call_ts
    ]
    # Contract: "an offset that is not a finite number (times near 1e308) is no measurement: `unmeasured` counts
    # those kernels; they take no part in count, min, median or drift"
    offsets = [o for o in every if math.isfinite(o)]
    third = len(offsets) // 3
    drift = None
    if len(offsets) >= 3:
        drift = statistics.median(offsets[-third:]) - statistics.median(offsets[:third])
    return {
        "count": sum(1 for o in offsets if o < 0),
        "linked": len(every),
        "unmeasured": len(every) - len(offsets),
        "min_us": min(offsets) if offsets else None,
        "median_us": statistics.median(offsets) if offsets else None,
        "drift_us": drift,
    }


def trace_size(events: list[Event], path: Path) -> dict[str, Any]:
    """Contract: "count = events (any ph) that have a `cat`. `categories`: the 20 largest categories {cat: count}
    (most events first, then by name); `other_categories`, `other_events`: how many categories, and events
    in them, are left out. `bytes`: the file's size on disk; `unpacked_bytes`: the JSON's size (unpacked,
    for a .gz); `compressed`. `python_share`: python_function events / count (0 when count is 0).
    `largest`: the category with the most events."

    The contract names no tie-break for ``largest``: ``largest_ties`` lists every category at the top.
    """
    categories = Counter(str(e["cat"]) for e in events if "cat" in e)
    count = sum(categories.values())
    top = max(categories.values(), default=0)
    ties = sorted(cat for cat, n in categories.items() if n == top)
    ranked = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))
    raw = path.read_bytes()
    packed = path.name.endswith(".gz")
    return {
        "count": count,
        "categories": dict(ranked[:TOP_CATEGORIES]),
        "other_categories": len(ranked[TOP_CATEGORIES:]),
        "other_events": sum(n for _, n in ranked[TOP_CATEGORIES:]),
        "bytes": len(raw),
        "unpacked_bytes": len(gzip.decompress(raw)) if packed else len(raw),
        "compressed": packed,
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
    """Contract: "the rank is distributedInfo.rank, else a rank-like file name: a word rank3, rank_3, rank-3 or
    worker3 in its stem (the name up to its first dot), or r3 as its last word, else a stem that is a number, except
    in a tensorboard_trace_handler name (worker.time.pt.trace.json); never another number (a GPU's model, a step, a
    size)." """
    info = top.get("distributedInfo") if isinstance(top, dict) else None
    if isinstance(info, dict) and isinstance(info.get("rank"), int) and not isinstance(info["rank"], bool):
        return int(info["rank"])
    name = Path(filename).name
    handler = re.fullmatch(r"[^.]*\.[0-9]+\..*", name, re.S)
    stem = name.split(".")[0]
    words = re.split(r"[^A-Za-z0-9]+", stem)
    for at, word in enumerate(words):
        said = re.fullmatch(r"(?i)(?:rank|worker)([0-9]+)", word)
        if said:
            return int(said.group(1))
        if word.lower() in ("rank", "worker") and at + 1 < len(words) and words[at + 1].isdigit():
            return int(words[at + 1])
    last = re.fullmatch(r"(?i)r([0-9]+)", words[-1]) if words and stem.endswith(words[-1]) else None
    if last:
        return int(last.group(1))
    return int(stem) if stem.isascii() and stem.isdigit() and not handler else None


def rank_skew(ranked: list[tuple[int, list[Event]]], floor_us: float = RANK_SKEW_FLOOR_US) -> dict[str, Any]:
    """Contract: "Take the i-th kernel (in order) of one name containing "nccl" (case-insensitive) on each rank;
    only instances present on every rank count. Skew = largest start minus smallest. `count`: those
    instances (zero skew included). `median_us`, `max_us`: of the skews. `last_by_rank`: {rank (as a
    string key): how often it started last}, with the lowest rank on a tie. `ranks`: the ranks, sorted.
    A skew that is not a finite number is no measurement: `unmeasured` counts those instances, they take
    no part in the rest, and with none measured the check is not applicable. `floor_us`: the floor."

    ``applicable`` is this oracle's own field: a single trace is not_applicable.
    """
    ranks = sorted(rank for rank, _ in ranked)
    if len(ranked) < 2:
        return {"count": 0, "ranks": ranks, "unmeasured": 0, "floor_us": floor_us, "applicable": False}
    starts: list[dict[str, list[float]]] = []  # per rank: nccl kernel name -> starts in order
    for _, events in ranked:
        by_name: dict[str, list[float]] = defaultdict(list)
        for ts, e in in_order([e for e in events if is_kernel(e)]):
            name = e.get("name")
            if isinstance(name, str) and "nccl" in name.lower():
                by_name[name].append(ts)
        starts.append(by_name)
    skews: list[float] = []
    unmeasured = 0
    last: Counter[int] = Counter()
    short: Counter[int] = Counter()  # contract: "a compared rank with fewer instances of a name than another"
    shared = set(starts[0]).intersection(*starts[1:])
    for name in sorted(shared):
        most = max(len(s[name]) for s in starts)
        for (rank, _), s in zip(ranked, starts, strict=True):
            short[rank] += most - len(s[name])
        for i in range(min(len(s[name]) for s in starts)):
            instance = [(rank, s[name][i]) for (rank, _), s in zip(ranked, starts, strict=True)]
            latest = max(ts for _, ts in instance)
            skew = latest - min(ts for _, ts in instance)
            if not math.isfinite(skew):
                unmeasured += 1
                continue
            skews.append(skew)
            last[min(rank for rank, ts in instance if ts == latest)] += 1
    return {
        "count": len(skews),
        "median_us": statistics.median(skews) if skews else None,
        "max_us": max(skews) if skews else None,
        "last_by_rank": {str(rank): n for rank, n in sorted(last.items())},
        "ranks": ranks,
        "unmeasured": unmeasured,
        "floor_us": floor_us,
        "short": {str(rank): n for rank, n in sorted(short.items()) if n},
        "applicable": bool(skews) or not unmeasured,
    }


def ranks_complete(traces: list[tuple[str, Any]]) -> dict[str, Any]:
    """Contract (docs/health.md, ranks-complete): "the job is the distributedInfo.world_size and backend most of
    its traces declare; a trace declaring another, or a rank outside the world, is foreign; of the rest, each rank
    once is ranks, a rank in several traces duplicated, a rank of the world with no trace missing, a trace with no
    rank unplaced, a trace listing a process group that a member rank present lists none of groups_disagree;
    count = missing + extra traces of duplicated ranks + foreign + unplaced + disagreeing." ``traces``: (file
    name, top-level value). ``foreign``, ``groups_disagree`` here: the traces' file names, sorted.
    """
    if len(traces) < 2:
        return {"count": 0, "applicable": False}
    infos: dict[str, dict[str, Any]] = {}
    for name, top in traces:
        info = top.get("distributedInfo") if isinstance(top, dict) else None
        infos[name] = info if isinstance(info, dict) else {}

    def world_of(info: dict[str, Any]) -> int | None:
        w = info.get("world_size")
        return w if isinstance(w, int) and not isinstance(w, bool) and w >= 1 else None

    jobs = Counter(
        (world_of(info), info.get("backend") if isinstance(info.get("backend"), str) else None)
        for info in infos.values()
        if world_of(info) is not None
    )
    world, backend = jobs.most_common(1)[0][0] if jobs else (None, None)  # ties: the first met
    rank = {name: rank_of(top, name) for name, top in traces}
    foreign = set()
    for name, info in infos.items():
        declared = world_of(info)
        other_job = declared is not None and (declared, info.get("backend")) != (world, backend)
        place = rank[name]
        outside = world is not None and place is not None and place >= world
        if other_job or outside:
            foreign.add(name)
    counted = Counter(rank[n] for n in infos if n not in foreign and rank[n] is not None)
    alone = {rank[n]: n for n in infos if n not in foreign and rank[n] is not None and counted[rank[n]] == 1}

    def groups(name: str) -> list[set[int]]:
        config = infos[name].get("pg_config")
        out = []
        for g in config if isinstance(config, list) else []:
            members = g.get("ranks") if isinstance(g, dict) else None
            if isinstance(members, list) and world is not None and 1 < len(members) < world:
                out.append(set(members))
        return out

    present = {rank[n] for n in infos if n not in foreign and rank[n] is not None}
    disagree = set()
    for r, name in alone.items():
        for group in groups(name):
            if r in group and any(
                s in alone and s != r and groups(alone[s]) and group not in groups(alone[s]) for s in group
            ):
                disagree.add(name)
    missing = sorted(set(range(world)) - present) if world is not None else []
    duplicated = {str(r): n for r, n in sorted(counted.items()) if n > 1}
    unplaced = sorted(n for n in infos if n not in foreign and rank[n] is None)
    count = len(missing) + sum(n - 1 for n in duplicated.values()) + len(foreign) + len(unplaced) + len(disagree)
    return {
        "count": count,
        "world_size": world,
        "ranks": sorted(present),
        "missing_count": len(missing),
        "missing": missing[:64],
        "duplicated": duplicated,
        "foreign": sorted(foreign),
        "unplaced": unplaced,
        "groups_disagree": sorted(disagree),
        "applicable": world is not None or count > 0,
    }


# --- Status ------------------------------------------------------------------------------------------


def allowed_statuses(check: str, fields: dict[str, Any]) -> set[str]:
    """Contract (docs/health.md, "The checks" and its status column): the one status each check's counts give.
    ``kernels-overlap`` keeps "warning or error" here (its rule is Perfetto's, checked elsewhere)."""
    if fields.get("applicable") is False:
        return {"not_applicable"}
    if fields["count"] == 0:
        return {"not_applicable"} if cannot_show(check, fields) else {"ok"}
    one: dict[str, Callable[[], str]] = {
        "impossible-metrics": lambda: metrics_status(fields.get("mechanisms") or {}),
        "kernels-missing": lambda: "info" if fields["explained"] == fields["count"] else "error",
        "graph-launches": lambda: "warning" if fields["unrecorded"] else "info",
        "unlinked-kernels": lambda: "info" if fields["before_window"] == fields["count"] else "warning",
        "durations": lambda: "error",
        "clock-skew": lambda: "warning",
        # issue 44 item 12: a statistic every trace has is not a finding; size alone is worth a word
        "trace-size": lambda: "info" if fields["unpacked_bytes"] >= SIZE_WORTH_A_WORD else "ok",
        "stacks-missing": lambda: "ok",  # a setting (with_stack), said with its count, never a finding
        # docs/health.md: info when every kernel that cannot nest is PDL's, a rounding's or below a launch's
        # latency, and those add up to at most 10% of the kernel time
        "kernels-overlap": lambda: (
            "info"
            if fields["pdl"] + fields["rounding"] + fields["sub_latency"] + fields["concurrent"] == fields["count"]
            and not fields["material"]
            else "warning"
        ),
        "rank-skew": lambda: "warning" if fields["median_us"] >= fields.get("floor_us", RANK_SKEW_FLOOR_US) else "info",
        "ranks-complete": lambda: "warning",
    }
    if check in one:
        return {one[check]()}
    return {"warning", "error"}


def flagship_verdicts() -> dict[str, str]:
    """Contract: "impossible-metrics: the worst severity the flagship playbook's conclusions give the mechanisms
    found". Read from the playbook's text itself: its route_mechanism branches ``'X' in
    facts.inspect.mechanisms`` and the severity of the conclusion each goes to; the ids the route does not name
    take the docs' table (C' with C's conclusion, ? the unresolved one's)."""
    import yaml

    playbook = yaml.safe_load(FLAGSHIP.read_text())
    nodes = {n["id"]: n for n in playbook["nodes"]}
    verdicts: dict[str, str] = {}
    for branch in nodes["route_mechanism"]["branches"]:
        named = re.fullmatch(r"""['"](.+)['"] in facts\.inspect\.mechanisms""", branch["when"].strip())
        assert named, branch["when"]
        verdicts[named.group(1)] = nodes[branch["goto"]]["severity"]
    verdicts["C'"] = verdicts["C"]
    verdicts["?"] = nodes["unresolved"]["severity"]
    return verdicts


def metrics_status(mechanisms: dict[str, int]) -> str:
    """The worst verdict over the wrong mechanisms found (F, by design, is not wrong)."""
    order = ["info", "warning", "error"]
    verdicts = flagship_verdicts()
    found = [verdicts.get(m, "error") for m, n in mechanisms.items() if n and m != "F"]
    return max(found, key=order.index) if found else "error"


def cannot_show(check: str, fields: dict[str, Any]) -> bool:
    """docs/health.md: a check is not applicable where the trace cannot show its problem: no kernel checked
    (impossible-metrics), no launch calls (kernels-missing), no kernels (kernels-overlap), no GPU events
    (durations), no kernel linked to a launch (clock-skew), no CPU ops (stacks-missing)."""
    return {
        "impossible-metrics": fields.get("checked") == 0,
        "kernels-missing": fields.get("launches") == 0,
        "kernels-overlap": fields.get("kernels") == 0,
        "durations": fields.get("gpu_events") == 0,
        "clock-skew": fields.get("linked") == 0 or fields.get("linked") == fields.get("unmeasured"),
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


# Checks a second computation of their own compares: summary-table's and profiler-overhead's (tests/summary_oracle.py,
# tests/health/test_summary_table.py), and each check with a test module of its own,
# tests/health/test_<its module>_check.py (found in any room), which holds its unit tests and its second computation
# over the shared traces (where a new check's test goes: one file).
def own_test_modules() -> dict[str, Path]:
    """Check id -> its own test module (tests/health/test_<module>_check.py)."""
    return {
        p.name.removeprefix("test_").removesuffix("_check.py").replace("_", "-"): p
        for p in sorted(Path(__file__).resolve().parent.rglob("test_*_check.py"))
    }


CHECKED_ELSEWHERE = ("summary-table", "profiler-overhead", *own_test_modules())


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
