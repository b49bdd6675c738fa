"""A second computation of what ``prof.key_averages()`` reports per op, from a trace's raw events (issue 38).

Written from PyTorch 2.13's Python (``torch/autograd/profiler.py`` and ``profiler_util.py``, the lines cited in
tests/health/test_summary_table.py) and sharing no code with warpwizard: the events as ``json`` gives them, one
FunctionEvent-like dict per op, children found by a plain search for the smallest enclosing span. GPU events
reach their op either by ``External id`` (``linked_correlation_id``: what PyTorch itself uses, and what the
builder writes) or, for real traces of every era, by the launch call with the same correlation id and the
latest-starting op on its thread that holds the call.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

Event = dict[str, Any]

GPU_CATS = frozenset({"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})
CALL_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
NODE_CATS = frozenset({"cpu_op", "Operator", "user_annotation"})


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _x(events: list[Event], cats: frozenset[str]) -> list[Event]:
    return [e for e in events if isinstance(e, dict) and e.get("cat") in cats and _num(e.get("ts")) is not None]


def _dur(e: Event) -> float:
    return max(_num(e.get("dur")) or 0.0, 0.0)


def _args(e: Event) -> dict[str, Any]:
    args = e.get("args")
    return args if isinstance(args, dict) else {}


def key_averages(events: list[Event], link: str = "call") -> dict[str, Any]:
    """{"ops": {name: [calls, self, total, true self, true total]}, "gpu": {name: [calls, us]},
    "annotations": {name: us}, "overhead": {name: us}, "table_self_us", "busy_us", "claiming"}."""
    nodes = _x(events, NODE_CATS)
    gpu = _x(events, GPU_CATS)
    by_thread: dict[tuple[Any, Any], list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        by_thread[(n.get("pid"), n.get("tid"))].append(i)
    parent, order = _parents(nodes, by_thread)
    owner = _owners(events, nodes, gpu, (by_thread, parent), link)
    claims: dict[int, int] = defaultdict(int)
    overheads = [e for e in events if isinstance(e, dict) and e.get("cat") == "overhead"]
    for o in overheads:
        corr = _args(o).get("correlation")
        if isinstance(corr, int):
            claims[corr] += 1
    own = [0.0] * len(nodes)
    claimed = [0.0] * len(nodes)
    for g, where in zip(gpu, owner, strict=True):
        if where is not None:
            own[where] += _dur(g)
            claimed[where] += _dur(g) * claims.get(_args(g).get("correlation"), 0)  # type: ignore[arg-type]

    totals = [own[i] + claimed[i] for i in range(len(nodes))]
    true_totals = list(own)
    children_total = [0.0] * len(nodes)
    for i in reversed(order):  # every child after its parent
        if parent[i] >= 0:
            totals[parent[i]] += totals[i]
            true_totals[parent[i]] += true_totals[i]
            children_total[parent[i]] += totals[i]
    ops: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for i, n in enumerate(nodes):
        row = ops[str(n.get("name"))]
        row[0] += 1
        # self = total less the children's totals; a claim is the overhead record's, a child of the op
        row[1] += totals[i] - children_total[i] - claimed[i]
        row[2] += totals[i]
        row[3] += own[i]
        row[4] += true_totals[i]
    gpu_rows, annotations, overhead, claiming, busy = _device(events, gpu, overheads)
    return {
        "ops": {k: v for k, v in ops.items() if v[2] > 0 or v[4] > 0},
        "gpu": dict(gpu_rows),
        "annotations": dict(annotations),
        "overhead": dict(overhead),
        "table_self_us": sum(v[1] for v in gpu_rows.values()),
        "busy_us": busy,
        "claiming": claiming,
    }


def _parents(nodes: list[Event], by_thread: dict[tuple[Any, Any], list[int]]) -> tuple[list[int], list[int]]:
    """Each node's parent (the nearest earlier span holding it whole, -1 for none), and every node in
    (thread, start, -end) order."""
    parent = [-1] * len(nodes)
    order: list[int] = []
    for members in by_thread.values():
        ranked = sorted(members, key=lambda i: (nodes[i]["ts"], -_dur(nodes[i]), i))
        for k, i in enumerate(ranked):
            s, e = nodes[i]["ts"], nodes[i]["ts"] + _dur(nodes[i])
            j = ranked[k - 1] if k else -1
            while j >= 0 and not (nodes[j]["ts"] <= s and e <= nodes[j]["ts"] + _dur(nodes[j])):
                j = parent[j]  # a span that holds this one holds every span between it and this one
            parent[i] = j
        order += ranked
    return parent, order


def _device(events: list[Event], gpu: list[Event], overheads: list[Event]) -> tuple[Any, ...]:
    """The GPU rows, the annotations' time, what overhead records claim (and how many do), the busy time."""
    gpu_rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for g in gpu:
        gpu_rows[str(g.get("name"))][0] += 1
        gpu_rows[str(g.get("name"))][1] += _dur(g)
    annotations: dict[str, float] = defaultdict(float)
    for a in _x(events, frozenset({"gpu_user_annotation"})):
        annotations[str(a.get("name"))] += _dur(a)
    by_corr: dict[Any, float] = defaultdict(float)
    for g in gpu:
        by_corr[_args(g).get("correlation")] += _dur(g)
    overhead: dict[str, float] = defaultdict(float)
    claiming = 0
    for o in overheads:
        corr = _args(o).get("correlation")
        if isinstance(corr, int) and corr in by_corr:
            claiming += 1
            overhead[str(o.get("name"))] += by_corr[corr]
    busy = 0.0
    for device in {_args(g).get("device") for g in gpu}:  # each GPU's own union
        spans = sorted((g["ts"], g["ts"] + _dur(g)) for g in gpu if _args(g).get("device") == device)
        reach = float("-inf")
        for s, e in spans:
            if e > reach:
                busy += e - max(s, reach)
                reach = e
    return gpu_rows, annotations, overhead, claiming, busy


def _owners(
    events: list[Event],
    nodes: list[Event],
    gpu: list[Event],
    tree: tuple[dict[tuple[Any, Any], list[int]], list[int]],
    link: str,
) -> list[int | None]:
    """Each GPU event's op (a node index), or None: by External id, or the latest-starting span on the launch
    call's thread at or before the call (the shortest on a tie), then up its parents until one holds the call
    (start <= call < end: PyTorch's tree has a span ending where the call starts not hold it)."""
    by_thread, parent = tree
    if link == "external":
        ext = {_args(n).get("External id"): i for i, n in enumerate(nodes) if n.get("cat") != "user_annotation"}
        return [ext.get(_args(g).get("External id")) for g in gpu]
    calls: dict[int, Event] = {}
    for c in _x(events, CALL_CATS):
        corr = _args(c).get("correlation")
        if isinstance(corr, int) and (corr not in calls or c["ts"] < calls[corr]["ts"]):
            calls[corr] = c
    ranked = {k: sorted(v, key=lambda i: (nodes[i]["ts"], -_dur(nodes[i]), i)) for k, v in by_thread.items()}
    starts = {k: [nodes[i]["ts"] for i in v] for k, v in ranked.items()}
    out: list[int | None] = []
    for g in gpu:
        call = calls.get(_args(g).get("correlation"))  # type: ignore[arg-type]
        found = None
        if call is not None:
            key = (call.get("pid"), call.get("tid"))
            at = bisect.bisect_right(starts.get(key, []), call["ts"]) - 1
            j = ranked[key][at] if at >= 0 else -1
            while j >= 0 and not (nodes[j]["ts"] <= call["ts"] < nodes[j]["ts"] + _dur(nodes[j])):
                j = parent[j]
            found = j if j >= 0 else None
        out.append(found)
    return out
