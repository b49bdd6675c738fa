"""What ``prof.key_averages()`` reports per op, recomputed from the trace, beside each GPU event counted once.

PyTorch 2.13 builds the table this way (torch/autograd/profiler.py ``_parse_kineto_results``,
torch/autograd/profiler_util.py ``EventList._build_tree``, ``FunctionEvent.device_time_total`` /
``self_device_time_total``, ``key_averages``, ``_build_table``; the tests cite the lines):

- every GPU event (kernel, copy, set) whose launch links to a CPU op becomes one of that op's ``kernels``;
  an op's device total is its own kernels plus its children's totals, its self time the total less the
  children's; ops nest by time on their thread;
- a profiler OVERHEAD record is a CPU event: one that carries a launch's correlation id is given that
  launch's kernels too, so the op around it counts them twice and the overhead row shows them as its own;
- GPU events and ``gpu_user_annotation`` spans are rows of their own (self = duration), and the table's
  "Self CUDA time total" (the denominator of every "Self CUDA %") sums the GPU rows, annotations left out
  since 2.4.

Gathering (the op tree and what each op launched), judging (the margins) and wording are separate functions;
``health_checks`` registers the two checks.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from wizard.formatting import plural, verb
from wizard.trace.collector import TraceContents
from wizard.trace.health import HealthCheck, make_check, not_applicable
from wizard.trace.records import NO_CORRELATION

MARGIN = 0.10  # a reported device time more than 10% above the GPU events counted once misleads
MIN_US = 1.0  # and by at least a microsecond (a rounding never fires)
OVERHEAD_SHARE = 0.10  # profiler overhead above 10% of the window (nsys-ai's doctor warns there, fails at 20%)
TABLE_ROWS = 20  # rows kept in the report (by reported self device time)
STEPS_KEPT = 64  # ProfilerStep durations kept in the details


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One row of the table, as ``key_averages()`` reports it and as the GPU events counted once give it."""

    name: str
    kind: str  # op | gpu (a kernel, copy or set) | gpu_annotation | overhead
    calls: int
    reported_self_us: float
    reported_total_us: float
    true_self_us: float
    true_total_us: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "calls": self.calls,
            "reported_self_us": self.reported_self_us,
            "reported_total_us": self.reported_total_us,
            "true_self_us": self.true_self_us,
            "true_total_us": self.true_total_us,
        }


@dataclass(slots=True)
class SummaryTable:
    """The whole table and the sums a reader compares."""

    rows: list[SummaryRow] = field(default_factory=list)
    gpu_events: int = 0
    linked: int = 0  # GPU events attributed to an op
    table_self_us: float = 0.0  # "Self CUDA time total": the GPU rows' self times (annotations left out)
    busy_us: float = 0.0  # the wall-clock union of the GPU events
    annotation_us: float = 0.0  # gpu_user_annotation time shown as rows' Self CUDA
    overhead_events: int = 0
    claiming: int = 0  # overhead events carrying a GPU event's correlation id
    claimed_us: float = 0.0


# -- gathering ---------------------------------------------------------------------------------------


def _gpu_events(contents: TraceContents) -> list[tuple[float, float, int, str, str]]:
    """(start, duration, correlation, name, kind) of every kernel, copy and set."""
    ts, dur, corr, shape, shapes = contents.kernels.columns()
    out = [(ts[i], dur[i], corr[i], str(shapes[shape[i]][0]), "gpu") for i in range(len(ts))]
    ops = contents.timeline.gpu_ops
    out += [(ops.ts[i], ops.dur[i], ops.corr[i], str(ops.shapes[ops.shape[i]][0]), "gpu") for i in range(len(ops))]
    return out


def _first_calls(contents: TraceContents) -> dict[int, tuple[tuple[Any, Any], float]]:
    """Each correlation id's earliest runtime call: its thread and start."""
    rt = contents.runtime
    out: dict[int, tuple[tuple[Any, Any], float]] = {}
    for i, corr in enumerate(rt.correlations):
        if corr == NO_CORRELATION:
            continue
        found = out.get(corr)
        if found is None or rt.starts[i] < found[1]:
            out[corr] = (rt.thread(rt.threads[i]), rt.starts[i])
    return out


@dataclass(slots=True)
class _Node:
    start: float
    end: float
    name: str
    parent: int = -1
    own: float = 0.0  # GPU time launched from this op itself
    claimed: float = 0.0  # the same GPU time again, through overhead records carrying its launch's id


def _tree(contents: TraceContents) -> dict[tuple[Any, Any], list[_Node]]:
    """Per thread, the CPU ops and record_function spans sorted by (start, -end), each with its parent: the
    innermost earlier span that holds it whole (``_populate_cpu_children``'s rule)."""
    spans: dict[tuple[Any, Any], list[_Node]] = defaultdict(list)
    for key, starts, ends, infos in contents.ops.threads():
        spans[key] += [_Node(s, e, info.name) for s, e, info in zip(starts, ends, infos, strict=True)]
    for pid, tid, start, end, name in contents.timeline.annotations:
        spans[(pid, tid)].append(_Node(start, end, name))
    for nodes in spans.values():
        nodes.sort(key=lambda n: (n.start, -n.end))
        stack: list[int] = []
        for i, node in enumerate(nodes):
            while stack and (node.start >= nodes[stack[-1]].end or node.end > nodes[stack[-1]].end):
                stack.pop()
            node.parent = stack[-1] if stack else -1
            stack.append(i)
    return spans


def _innermost(nodes: list[_Node], times: list[float]) -> list[int]:
    """For each time (sorted), the innermost node holding it, start <= t < end as PyTorch's tree has it (a call
    starting where an op ends is not its child); -1 for none. One sweep with a stack."""
    out: list[int] = []
    stack: list[int] = []
    j = 0
    for t in times:
        while j < len(nodes) and nodes[j].start <= t:
            while stack and nodes[stack[-1]].end <= nodes[j].start:
                stack.pop()
            stack.append(j)
            j += 1
        while stack and nodes[stack[-1]].end <= t:
            stack.pop()
        out.append(stack[-1] if stack else -1)
    return out


def summary_table(contents: TraceContents) -> SummaryTable:
    """The table ``key_averages()`` prints for this trace, with each row's time from the GPU events counted once."""
    events = _gpu_events(contents)
    calls = _first_calls(contents)
    tree = _tree(contents)
    claims: dict[int, int] = defaultdict(int)  # correlation id -> overhead records carrying it
    overheads = contents.timeline.overheads
    for _, _, _, corr in overheads:
        if corr is not None:
            claims[corr] += 1
    queries: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
    for n, (_, _, corr, _, _) in enumerate(events):
        found = calls.get(corr)
        if found is not None and found[0] in tree:
            queries[found[0]].append((found[1], n))
    linked = 0
    claimed_by_name: dict[str, float] = defaultdict(float)
    by_corr: dict[int, float] = defaultdict(float)
    for _, dur, corr, _, _ in events:
        if corr in claims:
            by_corr[corr] += max(dur, 0.0)
    for key, wanted in queries.items():
        wanted.sort()
        nodes = tree[key]
        for (_, n), where in zip(wanted, _innermost(nodes, [t for t, _ in wanted]), strict=True):
            if where < 0:
                continue
            linked += 1
            dur = max(events[n][1], 0.0)
            nodes[where].own += dur
            nodes[where].claimed += dur * claims.get(events[n][2], 0)
    table = SummaryTable(gpu_events=len(events), linked=linked, overhead_events=len(overheads))
    table.rows = _op_rows(tree) + _device_rows(events, contents)
    for _, _, name, corr in overheads:
        if corr is not None and corr in by_corr:
            table.claiming += 1
            claimed_by_name[name] += by_corr[corr]
    table.rows += [SummaryRow(name, "overhead", 1, us, us, 0.0, 0.0) for name, us in claimed_by_name.items()]
    table.claimed_us = sum(claimed_by_name.values())
    table.rows.sort(key=lambda r: (-r.reported_self_us, -r.reported_total_us, r.name))
    table.table_self_us = sum(r.reported_self_us for r in table.rows if r.kind == "gpu")
    table.annotation_us = sum(r.reported_self_us for r in table.rows if r.kind == "gpu_annotation")
    table.busy_us = _union([(e[0], e[0] + max(e[1], 0.0)) for e in events])
    return table


def _op_rows(tree: dict[tuple[Any, Any], list[_Node]]) -> list[SummaryRow]:
    """Per op name: key_averages()'s self and total (the overhead records' claims in the total), and the same
    with each GPU event once."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for nodes in tree.values():
        total = [n.own + n.claimed for n in nodes]
        true_total = [n.own for n in nodes]
        for i in range(len(nodes) - 1, -1, -1):  # children come after their parent
            parent = nodes[i].parent
            if parent >= 0:
                total[parent] += total[i]
                true_total[parent] += true_total[i]
        for i, node in enumerate(nodes):
            row = sums[node.name]
            row[0] += 1
            row[1] += node.own
            row[2] += total[i]
            row[3] += node.own
            row[4] += true_total[i]
    return [
        SummaryRow(name, "op", int(s[0]), s[1], s[2], s[3], s[4]) for name, s in sums.items() if s[2] > 0 or s[4] > 0
    ]


def _device_rows(events: list[tuple[float, float, int, str, str]], contents: TraceContents) -> list[SummaryRow]:
    """The GPU events' own rows (self = total = duration), and the GPU annotations' (no device work of their own)."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for _, dur, _, name, kind in events:
        row = sums[(name, kind)]
        row[0] += 1
        row[1] += max(dur, 0.0)
    for start, end, name in contents.timeline.gpu_annotations:
        row = sums[(name, "gpu_annotation")]
        row[0] += 1
        row[1] += end - start
    return [
        SummaryRow(name, kind, int(s[0]), s[1], s[1], s[1] if kind == "gpu" else 0.0, s[1] if kind == "gpu" else 0.0)
        for (name, kind), s in sums.items()
    ]


def _union(spans: list[tuple[float, float]]) -> float:
    """The length of the union of intervals."""
    total, end = 0.0, -float("inf")
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


# -- judging -----------------------------------------------------------------------------------------


def off_by_margin(reported: float, true: float) -> bool:
    """A reported time more than MARGIN above the true one (and by MIN_US): what would mislead a reader."""
    return reported - true > max(MIN_US, MARGIN * true)


def inflated_rows(table: SummaryTable) -> list[SummaryRow]:
    """Op rows whose device total exceeds their GPU events counted once, and overhead rows claiming GPU time."""
    return [
        r
        for r in table.rows
        if (r.kind == "op" and off_by_margin(r.reported_total_us, r.true_total_us))
        or (r.kind == "overhead" and r.reported_self_us > 0)
    ]


def over_wall_clock(table: SummaryTable) -> bool:
    """The table's Self CUDA total above the wall-clock time the GPU events covered, beyond the margin."""
    return off_by_margin(table.table_self_us, table.busy_us)


# -- wording -----------------------------------------------------------------------------------------


def _us(value: float) -> str:
    return f"{value:,.1f} µs"


def summary_table_check(contents: TraceContents) -> HealthCheck:
    """The ``summary-table`` check: where ``key_averages()`` would mislead its reader, and by how much."""
    table = summary_table(contents)
    details: dict[str, Any] = {
        "gpu_events": table.gpu_events,
        "linked": table.linked,
        "table_self_us": table.table_self_us,
        "busy_us": table.busy_us,
        "annotation_us": table.annotation_us,
        "overhead_events": table.overhead_events,
        "claiming": table.claiming,
        "claimed_us": table.claimed_us,
        "inflated_ops": 0,
        "over_wall_clock": False,
        "margin": MARGIN,
        "rows": [r.to_dict() for r in table.rows[:TABLE_ROWS]],
    }
    if not table.gpu_events:
        return not_applicable(
            "summary-table", "no GPU events: key_averages() reports no device time for this trace", **details
        )
    inflated = inflated_rows(table)
    over = over_wall_clock(table)
    details["inflated_ops"] = sum(1 for r in inflated if r.kind == "op")
    details["over_wall_clock"] = over
    annotations = (
        f"; {_us(table.annotation_us)} of GPU annotations shown as Self CUDA rows, left out of the total"
        if table.annotation_us
        else ""
    )
    if not inflated and not over:
        return make_check(
            "summary-table", 0, "ok",
            f"key_averages()' device times match the GPU events counted once (Self CUDA total "
            f"{_us(table.table_self_us)}, GPU busy {_us(table.busy_us)}){annotations}",
            "", details=details,
        )  # fmt: skip
    parts = []
    if inflated:
        ops = sum(1 for r in inflated if r.kind == "op")
        parts.append(
            f"{plural(ops, 'op')} {verb(ops, 'reports', 'report')} more device time than {verb(ops, 'its', 'their')} "
            f"GPU events ran ({plural(table.claiming, 'overhead record')} {verb(table.claiming, 'claims', 'claim')} "
            f"{_us(table.claimed_us)} of kernels)"
        )
    if over:
        parts.append(
            f"Self CUDA total {_us(table.table_self_us)} is {table.table_self_us / max(table.busy_us, 1e-9):.2f}x "
            f"the {_us(table.busy_us)} the GPU was busy"
        )
    count = len(inflated) + (1 if over else 0)
    return make_check(
        "summary-table",
        count,
        "warning",
        "; ".join(parts) + annotations,
        f"prof.key_averages().table() would mislead here by more than {MARGIN:.0%}: profiler OVERHEAD records "
        "that carry a launch's correlation id make the op around them count its kernels twice (pytorch#193392); "
        "kernels on concurrent streams add up past the wall clock, so Self CUDA % is a share of summed kernel "
        "time, not of GPU time. Read the corrected table (the report's summary-table section) instead",
        details=details,
    )


def step_drift(steps: list[tuple[float, float, str]]) -> dict[str, Any]:
    """The active ProfilerStep#N spans' durations and how they drift: the last third's mean against the first
    third's (None below three steps)."""
    ordered = sorted(steps)
    durations = [end - start for start, end, _ in ordered]
    third = len(durations) // 3
    drift = None
    if third:
        first = statistics.fmean(durations[:third])
        last = statistics.fmean(durations[-third:])
        drift = (last - first) / first if first > 0 else None
    return {
        "steps": len(durations),
        "step_us": durations[:STEPS_KEPT],
        "median_step_us": statistics.median(durations) if durations else None,
        "drift": drift,
    }


def profiler_overhead(contents: TraceContents, span: tuple[float, float] | None) -> HealthCheck:
    """The ``profiler-overhead`` check: CUPTI's overhead records (buffer requests, lazy function loading, ...)
    as a share of the window, and the steps' drift."""
    overheads = contents.timeline.overheads
    by_name: dict[str, float] = defaultdict(float)
    for start, end, name, _ in overheads:
        by_name[name] += max(end - start, 0.0)
    overhead_us = sum(by_name.values())
    window_us = (span[1] - span[0]) if span is not None else 0.0
    share = overhead_us / window_us if window_us > 0 else 0.0
    details: dict[str, Any] = {
        "overhead_us": overhead_us,
        "window_us": window_us,
        "share": share,
        "threshold": OVERHEAD_SHARE,
        "kinds": dict(sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))),
        **step_drift(contents.timeline.steps),
    }
    drift = details["drift"]
    steps = (
        f"; {plural(details['steps'], 'step')}, the last third {drift:+.0%} against the first"
        if drift is not None
        else ""
    )
    if not overheads:
        if not len(contents.kernels) and not len(contents.timeline.gpu_ops):
            return not_applicable("profiler-overhead", "no GPU activity: CUPTI writes the overhead records", **details)
        return make_check(
            "profiler-overhead", 0, "ok", f"no profiler-overhead records in the trace{steps}", "", details=details
        )
    n = len(overheads)
    status = "warning" if share > OVERHEAD_SHARE else "info"
    return make_check(
        "profiler-overhead",
        n,
        status,
        f"{plural(n, 'profiler-overhead record')} ({', '.join(sorted(by_name))}) took {_us(overhead_us)}, "
        f"{share:.1%} of the window{steps}",
        "the profiler spent this time on its own work (CUPTI activity buffer requests, lazy function loading) "
        f"inside the profiled window; above {OVERHEAD_SHARE:.0%} the measured step is inflated: time an "
        "unprofiled run with the profiler.overhead probe",
        details=details,
    )


# -- the table the user printed (the profiler hook) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrintedRow:
    """One row of ``prof.key_averages()`` as the user's table shows it (µs)."""

    name: str
    calls: int
    self_us: float
    total_us: float
    device: bool  # a device-type row (a kernel, copy, set, or a GPU annotation)
    annotation: bool  # is_user_annotation


def printed_total(rows: list[PrintedRow]) -> float:
    """ "Self CUDA time total" as ``_build_table`` sums it: device rows' self time, user annotations left out."""
    return sum(r.self_us for r in rows if r.device and not r.annotation)


def compare_printed(rows: list[PrintedRow], check: HealthCheck) -> list[str]:
    """What the printed table claims beyond the trace's GPU events counted once (the summary-table check's rows
    and sums): each CPU row whose device total exceeds its GPU events by the margin, and the Self CUDA total
    against the time the GPU was busy. Nothing where the trace has no GPU events (a CPU run)."""
    if check.status == "not_applicable":
        return []
    true = {r["name"]: r for r in check.details.get("rows", []) if r["kind"] == "op"}
    lines = []
    for row in rows:
        found = true.get(row.name)
        if row.device or found is None or not off_by_margin(row.total_us, found["true_total_us"]):
            continue
        lines.append(
            f"key_averages() row {row.name} reports {_us(row.total_us)} of device time in "
            f"{plural(row.calls, 'call')}; its GPU events ran {_us(found['true_total_us'])}"
        )
    total, busy = printed_total(rows), float(check.details.get("busy_us", 0.0))
    if off_by_margin(total, busy):
        lines.append(
            f"key_averages() Self CUDA time total {_us(total)} is {total / max(busy, 1e-9):.2f}x the {_us(busy)} "
            "the GPU was busy: each Self CUDA % is a share of summed kernel time, not of GPU time"
        )
    return lines
