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
  (the fix for pytorch#130730).

Gathering (the op tree and what each op launched), judging (the margins) and wording are separate functions;
the summary-table and profiler-overhead checks (wizard/trace/health/checks/) run the two verdicts.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from wizard.compiled_core import compiled
from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    MARGIN,
    MIN_US,
    OVERHEAD_SHARE,
    STEPS_KEPT,
    TABLE_ROWS,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.health.tables import distinct, searched  # not np.unique, which imports numpy.ma
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.records import NO_CORRELATION
from wizard.untrusted import cut

KINDS_KEPT = 16  # overhead record names kept in the details (CUPTI has nine; a hostile trace any number)
KINDS_SHOWN = 4  # and named in the summary
_CHUNK = 1 << 13  # events (the union) or spans (which hold a launch) taken at once: each temporary 64 KiB

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Overheads = list[tuple[float, float, str, int | None]]  # TraceContents.timeline.overheads: start, end, name, corr


class SummaryRow(msgspec.Struct, frozen=True, eq=False):
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


class SummaryTable(msgspec.Struct, eq=False):
    """The whole table and the sums a reader compares."""

    rows: list[SummaryRow] = msgspec.field(default_factory=list)
    gpu_events: int = 0
    linked: int = 0  # GPU events attributed to an op
    table_self_us: float = 0.0  # "Self CUDA time total": the GPU rows' self times (annotations left out)
    busy_us: float = 0.0  # the wall-clock union of the GPU events, per device, summed
    annotation_us: float = 0.0  # gpu_user_annotation time shown as rows' Self CUDA
    overhead_events: int = 0
    claiming: int = 0  # overhead events carrying a GPU event's correlation id
    claimed_us: float = 0.0


# -- gathering ---------------------------------------------------------------------------------------


def _floats(values: Any) -> Floats:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0, dtype=np.float64)


def _ints(values: Any) -> Ints:
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(values, dtype=np.int64 if values.itemsize == 8 else np.int32).astype(np.int64)


class _Launched(msgspec.Struct, eq=False):
    """Every kernel, copy and set's correlation and duration (a negative one as 0): what the op tree's sums read,
    made before the events' other columns, which are not held under the sums' peak (1.2 MB at 200 MB)."""

    corr: Ints
    dur: Floats

    @classmethod
    def of(cls, contents: TraceContents) -> _Launched:
        """The kernels' own columns where there are no copies or sets to join (views)."""
        _, dur, corr, _, _ = contents.kernels.columns()
        ops = contents.timeline.gpu_ops
        durations = _joined(_floats(dur), _floats(ops.dur))
        return cls(
            _joined(_as_stored(corr), _as_stored(ops.corr)),
            np.maximum(durations, 0.0) if bool(np.signbit(durations).any()) else durations,
        )


class _Events(msgspec.Struct, eq=False):
    """Every kernel, copy and set: start, duration (a negative one as 0), correlation, and a name id."""

    ts: Floats
    dur: Floats
    corr: Ints
    name: Ints
    names: list[str]
    device: Ints  # -1 where the event names none

    @classmethod
    def of(cls, contents: TraceContents, launched: _Launched) -> _Events:
        """The kernels' own columns where there are no copies or sets to join (views: an export of ten million
        kernels copied five times was ~40 bytes a kernel at the summary table's peak), names and devices by the
        kernels' combinations of name and device (``base_columns``), 32-bit where they fit."""
        ts, _, _, _, _ = contents.kernels.columns()
        shape, shapes = contents.kernels.base_columns()
        ops = contents.timeline.gpu_ops
        names: list[str] = []
        ids: dict[str, int] = {}

        def name_ids(shape_names: list[str]) -> Ints:
            return np.array([ids.setdefault(n, len(ids)) for n in shape_names] or [0], dtype=np.int32)

        kernel_names = name_ids([str(s[0]) for s in shapes])
        op_names = name_ids([str(s[0]) for s in ops.shapes])
        names = list(ids)
        return cls(
            _joined(_floats(ts), _floats(ops.ts)),
            launched.dur,
            launched.corr,
            _joined(kernel_names[_as_stored(shape)], op_names[_as_stored(ops.shape)]),
            names,
            _joined(_narrow(_devices(shapes))[_as_stored(shape)], _narrow(_devices(ops.shapes))[_as_stored(ops.shape)]),
        )


def _joined(kernels: Any, ops: Any) -> Any:
    """The kernels' column, then the copies' and sets': the kernels' itself (a view) where there are none."""
    return kernels if not len(ops) else np.concatenate((kernels, ops))


def _as_stored(values: Any) -> Any:
    """An integer array as numpy, without a copy (a view: never written to)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(values, dtype=np.int64 if values.itemsize == 8 else np.int32)


def _narrow(values: Ints) -> Any:
    """The values as 32-bit integers where they all fit (a device per kernel is then 4 bytes, not 8)."""
    fits = not len(values) or (int(values.min()) > -(1 << 31) and int(values.max()) < 1 << 31)
    return values.astype(np.int32) if fits else values


def _devices(shapes: Any) -> Ints:
    """Each shape's device (its fourth field), -1 where it is not a whole number."""
    return np.array([d if type(d) is int else -1 for d in (s[3] for s in shapes)] or [-1], dtype=np.int64)


def _launches(contents: TraceContents, corr: Ints) -> tuple[Any, Floats]:
    """For each GPU event, its launch: the earliest runtime call with its correlation id (thread id, start; the
    first in file order among equal starts, a NaN start only where every call's is); thread -1 where no call has
    the id. The calls are read a chunk at a time against the events' ids, so only the events' arrays and a chunk's
    are made (sorting every call's id and start held ~56, then 32, bytes a call: the health pass's peak)."""
    wanted = distinct(corr[corr != NO_CORRELATION])
    best_at = np.zeros(len(wanted), dtype=np.float64)
    best_thread = np.full(len(wanted), -1, dtype=np.int32)
    rt = contents.runtime
    ids, starts, threads = _as_stored(rt.correlations), _floats(rt.starts), _as_stored(rt.threads)
    if len(wanted):
        for lo in range(0, len(ids), _CALLS):
            chunk = (ids[lo : lo + _CALLS], starts[lo : lo + _CALLS], threads[lo : lo + _CALLS])
            _earliest_calls(wanted, chunk, best_at, best_thread)
    thread = np.full(len(corr), -1, dtype=np.int32)
    at = np.zeros(len(corr), dtype=np.float64)
    hit = np.empty(min(len(corr), _CALLS), dtype=bool)
    for lo in range(0, len(corr) if len(wanted) else 0, _CALLS):  # a chunk of GPU events at a time too
        mine = corr[lo : lo + _CALLS]
        where = searched(mine, wanted, hit[: len(mine)])
        found = np.flatnonzero(hit[: len(mine)])  # NO_CORRELATION is not among them
        thread[lo + found] = best_thread[where[found]]
        at[lo + found] = best_at[where[found]]
    return thread, at


_CALLS = 1 << 14  # runtime calls _launches reads at once (each temporary 128 KiB)


def _earliest_calls(wanted: Any, chunk: tuple[Any, Floats, Any], best_at: Floats, best_thread: Any) -> None:
    """Fold one chunk of calls (in file order, after every earlier chunk) into each wanted id's earliest call so
    far (``best_thread`` -1 for none yet): the chunk's earliest per id by (start, file order), NaN last as a sort
    puts it, taken where it starts strictly before the one kept or where that one's start is NaN."""
    ids, starts, threads = chunk
    found = np.empty(len(ids), dtype=bool)
    where = searched(ids, wanted, found)
    hit = np.flatnonzero(found)  # a call without an id (NO_CORRELATION) is never wanted
    if not len(hit):
        return
    slot, at = where[hit], starts[hit]
    order = np.lexsort((at, slot))  # stable: equal starts keep file order
    slot, at, hit = slot[order], at[order], hit[order]
    first = np.ones(len(slot), dtype=bool)
    first[1:] = slot[1:] != slot[:-1]
    slot, at, hit = slot[first], at[first], hit[first]
    kept = best_at[slot]
    take = (best_thread[slot] < 0) | (at < kept) | (np.isnan(kept) & ~np.isnan(at))
    best_at[slot[take]] = at[take]
    best_thread[slot[take]] = threads[hit[take]]


class _Thread(msgspec.Struct, eq=False):
    """One thread's ops and record_function spans that hold a launch, sorted by (start, -end), with parents."""

    start: Floats
    end: Floats
    name: Ints  # span ids (``_Spans.name_of`` gives their names)
    parent: array[int]  # each span's parent, -1 for none


Part = tuple[Floats, Floats, Any]  # spans' starts, ends and span ids (``_Spans.name_of`` gives each its name id)


class _Spans(msgspec.Struct, eq=False):
    """Per thread, its CPU ops' columns (views of the index's arrays, span ids the ops' descriptor refs), then its
    record_function spans apart (their own span ids): joining them copied every annotated thread's columns, and an
    int64 name per op was made (~40 bytes an op of the summary table's peak). The names by id."""

    threads: dict[tuple[Any, Any], list[Part]]
    name_of: Ints  # the name id of each span id
    names: list[str]

    @classmethod
    def of(cls, contents: TraceContents) -> _Spans:
        threads: dict[tuple[Any, Any], list[Part]] = {}
        found = list(contents.ops.threads())
        top = max((int(_as_stored(refs).max()) for _, _, _, refs in found if len(refs)), default=-1)
        ids_of: dict[str, int] = {}  # descriptors differ by shapes and stacks; key_averages() keys by name
        name_of = [ids_of.setdefault(contents.ops.descriptor(r).name, len(ids_of)) for r in range(top + 1)]
        for key, starts, ends, refs in found:
            threads[key] = [(_floats(starts), _floats(ends), _as_stored(refs))]
        extra: dict[tuple[Any, Any], list[tuple[float, float, int]]] = defaultdict(list)
        for pid, tid, start, end, name in contents.timeline.annotations:
            extra[(pid, tid)].append((start, end, ids_of.setdefault(name, len(ids_of))))
        for key, spans in extra.items():
            first = len(name_of)
            name_of += [x[2] for x in spans]
            ids = np.arange(first, len(name_of), dtype=np.int64)
            part = (np.array([x[0] for x in spans]), np.array([x[1] for x in spans]), ids)
            threads.setdefault(key, []).append(part)
        return cls(threads, np.array(name_of, dtype=np.int64), list(ids_of))

    def calls(self) -> Ints:
        """Instances per name id: key_averages() counts every one, with device time or not."""
        per_span = np.zeros(len(self.name_of), dtype=np.int64)
        for parts in self.threads.values():
            for _, _, ids in parts:
                per_span += np.bincount(ids, minlength=len(self.name_of))
        counts = np.zeros(len(self.names), dtype=np.int64)
        np.add.at(counts, self.name_of, per_span)
        return counts


def _thread_tree(start: Floats, end: Floats, names: Ints, queries: Floats, more: Sequence[Part] = ()) -> _Thread:
    """The spans that hold at least one launch (the others carry no device time), sorted by (start, -end), each
    with its parent: the innermost earlier span holding it whole (``_populate_cpu_children``'s rule). ``more``:
    other parts of the thread's spans, after these (only the spans that hold a launch are joined)."""
    q = np.sort(queries)
    held = [(s[h], e[h], n[h]) for s, e, n in ((start, end, names), *more) for h in [_holds_one(q, s, e)]]
    start, end, names = held[0] if len(held) == 1 else (np.concatenate(c) for c in zip(*held, strict=True))
    del held, q
    order = np.lexsort((-end, start))
    start = start[order]  # one column reordered at a time, the unordered one let go as it is
    end = end[order]
    names = names[order]
    del order
    return _Thread(start, end, names, _parents(start, end))


def pure_parents(start: Floats, end: Floats) -> array[int]:
    """Each span's parent (-1 for none), the spans in (start, -end) order: one pass with a stack of the open
    spans, their starts and ends made Python floats ``_SWEEP`` at a time (whole-thread lists were ~64 bytes a
    span at the summary table's peak), the parents as 64-bit integers (a list of Python ints was 36 bytes each).
    The twin of the compiled core's ``parents`` (``compiled_parents``), where the core is not built."""
    parent = array("q")
    # the open spans and their ends, under a root that is never popped: NaN's end compares false both ways, and
    # its index -1 is "no parent" (an empty stack's answer)
    stack, tops = [-1], [math.nan]
    for lo in range(0, len(start), _SWEEP):
        for i, si, ei in zip(
            range(lo, lo + _SWEEP), start[lo : lo + _SWEEP].tolist(), end[lo : lo + _SWEEP].tolist(), strict=False
        ):
            top = tops[-1]
            while si >= top or ei > top:
                stack.pop()
                tops.pop()
                top = tops[-1]
            parent.append(stack[-1])
            stack.append(i)
            tops.append(ei)
    return parent


def _holds_one(q: Floats, start: Floats, end: Floats) -> npt.NDArray[np.bool_]:
    """Per span, whether a sorted time falls in it (start <= t < end): the first time at or after its start is
    before its end. One binary search per span, not two (the ends, unsorted, cost the most); a span with a NaN
    edge counts the times below each edge, as NaN sorts last. A chunk of spans at a time: whole-thread positions
    and their times were ~25 bytes a span at the summary table's peak."""
    holds = np.zeros(len(start), dtype=bool)
    if len(q):
        for lo in range(0, len(start), _CHUNK):
            holds[lo : lo + _CHUNK] = _holds_chunk(q, start[lo : lo + _CHUNK], end[lo : lo + _CHUNK])
    return holds


def _holds_chunk(q: Floats, start: Floats, end: Floats) -> npt.NDArray[np.bool_]:
    """``_holds_one`` of some spans, ``q`` not empty."""
    first = np.searchsorted(q, start, side="left")
    holds = q[np.minimum(first, len(q) - 1)] < end
    holds &= first < len(q)
    odd = np.flatnonzero(np.isnan(start) | np.isnan(end))
    if len(odd):
        holds[odd] = np.searchsorted(q, end[odd], side="left") > first[odd]
    return holds


def pure_innermost(tree: _Thread, times: Floats) -> Ints:
    """For each time, the innermost span holding it (start <= t < end, as PyTorch's tree has it: a call starting
    where an op ends is not its child), -1 for none: the latest-starting span at or before t, then up its
    parents until one holds t.

    One sweep (issue 47 item 9: walking every unresolved time one parent a pass was quadratic in the depth, 108 s
    for 300k nested ops): times in order, spans pushed in order onto the stack ``_thread_tree`` builds, whose entries
    are a span's chain of parents, their ends never decreasing downwards (a parent holds its child whole). The spans
    on top that end by a time hold no later time either, and every later span starts after that time, so they are
    popped for good; the top is then the answer. O(spans + times log times). The twin of the compiled core's
    ``innermost`` (``compiled_innermost``), where the core is not built."""
    where = np.searchsorted(tree.start, times, side="right") - 1
    order = np.argsort(times, kind="stable")
    out = np.full(len(times), -1, dtype=np.int64)
    stack, tops = [-1], [math.nan]  # the open spans and their ends, on _thread_tree's root that is never popped
    pushed = 0  # spans pushed so far (all those starting at or before the current time)
    # Python floats and ints (a numpy scalar per time, and its comparisons, were a third of the loop), made a chunk
    # at a time: the times in order, the spans as they are pushed (whole-thread lists were the health pass's peak)
    base, s, e = 0, tree.start[:_SWEEP].tolist(), tree.end[:_SWEEP].tolist()
    for first in range(0, len(order), _SWEEP):
        chunk = order[first : first + _SWEEP]
        found = []
        for t, last in zip(times[chunk].tolist(), where[chunk].tolist(), strict=True):
            while pushed <= last:
                if pushed - base == len(s):
                    base = pushed
                    s, e = tree.start[base : base + _SWEEP].tolist(), tree.end[base : base + _SWEEP].tolist()
                start, end, top = s[pushed - base], e[pushed - base], tops[-1]
                while start >= top or end > top:
                    stack.pop()
                    tops.pop()
                    top = tops[-1]
                stack.append(pushed)
                tops.append(end)
                pushed += 1
            while tops[-1] <= t:
                stack.pop()
                tops.pop()
            found.append(stack[-1] if last >= 0 else -1)
        out[chunk] = found
    return out


_SWEEP = 2048  # times (and spans) _innermost and _parents turn into Python numbers at once
_CHUNK_BYTES = 1 << 16  # spans and times the compiled sweeps take at once (a copy of each chunk, 8 bytes a value)


def _float64_bytes(values: Floats) -> bytes:
    """Values as the compiled sweeps read them: float64 bytes, in order."""
    return np.ascontiguousarray(values, dtype=np.float64).tobytes()


def _root() -> tuple[bytearray, bytearray]:
    """A sweep's stack of open spans as the compiled core keeps it: int64 indices and double ends, the root (-1,
    NaN) first, never popped."""
    return bytearray(array("q", [-1]).tobytes()), bytearray(array("d", [math.nan]).tobytes())


def compiled_parents(core: Any, start: Floats, end: Floats) -> array[int]:
    """``pure_parents`` by the compiled core, a chunk of spans at a time (the stack kept between chunks)."""
    parent = array("q")
    stack, tops = _root()
    step = _CHUNK_BYTES // 8
    for lo in range(0, len(start), step):
        chunk = _float64_bytes(start[lo : lo + step]), _float64_bytes(end[lo : lo + step])
        parent.frombytes(core.parents(*chunk, lo, stack, tops))
    return parent


def compiled_innermost(core: Any, tree: _Thread, times: Floats) -> Ints:
    """``pure_innermost`` by the compiled core: the times in order a chunk at a time, the spans handed over a chunk
    at a time as the sweep reaches them."""
    where = np.searchsorted(tree.start, times, side="right") - 1
    order = np.argsort(times, kind="stable")
    out = np.full(len(times), -1, dtype=np.int64)
    stack, tops = _root()
    step = _CHUNK_BYTES // 8
    base = pushed = 0

    def spans(at: int) -> tuple[bytes, bytes]:
        return _float64_bytes(tree.start[at : at + step]), _float64_bytes(tree.end[at : at + step])

    starts, ends = spans(base)
    for first in range(0, len(order), step):
        chunk = order[first : first + step]
        t = _float64_bytes(times[chunk])
        lasts = np.ascontiguousarray(where[chunk], dtype=np.int64).tobytes()
        found = []
        while True:
            answered, pushed, got = core.innermost(starts, ends, base, t, lasts, stack, tops, pushed)
            found.append(got)
            if answered * 8 == len(t):
                break
            t, lasts = t[answered * 8 :], lasts[answered * 8 :]
            base = pushed
            starts, ends = spans(base)
            if not starts:  # a time's latest span is past the thread's: `where` cannot say so, a hang must not
                raise ValueError("innermost: a time's span past the thread's spans")
        out[chunk] = np.frombuffer(b"".join(found), dtype=np.int64)
    return out


def _doubles(values: Any) -> bytearray:
    """A copy of float64 values as the bytes of doubles, read from their buffer (``tobytes`` made a second copy
    first): what the compiled ``up_the_tree`` adds into in place, and numpy reads without a copy."""
    return bytearray(memoryview(values).cast("B"))


def pure_up_the_tree(parent: array[int], total: bytearray, true_total: bytearray) -> tuple[Floats, Floats]:
    """Each span's device total: its own plus its children's (an overhead record's claim is in ``total`` as a
    child's would be), and the same with each GPU event once. Doubles in place, summed in the same order as
    lists of floats were (a Python float per span was 32 bytes, two lists of them the summary table's peak). The
    twin of the compiled core's ``up_the_tree`` (``compiled_up_the_tree``), where the core is not built."""
    totals, true_totals = memoryview(total).cast("d"), memoryview(true_total).cast("d")
    for i in range(len(totals) - 1, -1, -1):  # children come after their parent
        up = parent[i]
        if up >= 0:
            totals[up] += totals[i]
            true_totals[up] += true_totals[i]
    totals.release()
    true_totals.release()
    return _floats(total), _floats(true_total)


def compiled_up_the_tree(
    core: Any, parent: array[int], total: bytearray, true_total: bytearray
) -> tuple[Floats, Floats]:
    """``pure_up_the_tree`` by the compiled core, the parents handed a chunk at a time from the last (a copy of
    each chunk, not of the thread's); the twin's where the three are not as long as one another (its errors)."""
    spans = len(total) // 8
    if len(parent) != spans or len(true_total) != len(total) or len(total) % 8:
        return pure_up_the_tree(parent, total, true_total)
    step = _CHUNK_BYTES // 8
    for hi in range(spans, 0, -step):
        lo = max(0, hi - step)
        core.up_the_tree(parent[lo:hi].tobytes(), lo, total, true_total)
    return _floats(total), _floats(true_total)


def _bind_sweeps() -> tuple[
    Callable[[Floats, Floats], array[int]],
    Callable[[_Thread, Floats], Ints],
    Callable[[array[int], bytearray, bytearray], tuple[Floats, Floats]],
]:
    """The compiled sweeps where the core is built (and of this API), else their twins."""
    core = compiled()
    if core is None:
        return pure_parents, pure_innermost, pure_up_the_tree
    return partial(compiled_parents, core), partial(compiled_innermost, core), partial(compiled_up_the_tree, core)


_parents, _innermost, _up_the_tree = _bind_sweeps()


def summary_table(contents: TraceContents) -> SummaryTable:
    """The table ``key_averages()`` prints for this trace, with each row's time from the GPU events counted once."""
    launched = _Launched.of(contents)
    overheads = contents.timeline.overheads
    claims = _claims(overheads)
    spans = _Spans.of(contents)
    sums, linked = _op_sums(contents, launched, spans, _claim_times(launched, claims))
    events = _Events.of(contents, launched)
    table = SummaryTable(gpu_events=len(events.ts), linked=linked, overhead_events=len(overheads))
    calls = spans.calls().tolist()
    own_s, total_s, true_s, held_s = (row.tolist() for row in sums)
    table.rows = [
        SummaryRow(name, "op", calls[n], own_s[n], total_s[n], own_s[n], true_s[n])
        for n, name in enumerate(spans.names)
        if held_s[n]
    ] + _device_rows(events, contents)
    claimed_by_name, table.claiming = _claimed_by_name(events, overheads, claims)
    table.rows += [SummaryRow(name, "overhead", 1, us, us, 0.0, 0.0) for name, us in claimed_by_name.items()]
    table.claimed_us = sum(claimed_by_name.values())
    table.rows.sort(key=lambda r: (-r.reported_self_us, -r.reported_total_us, r.name))
    table.table_self_us = sum(r.reported_self_us for r in table.rows if r.kind == "gpu")
    table.annotation_us = sum(r.reported_self_us for r in table.rows if r.kind == "gpu_annotation")
    table.busy_us = _busy(events)
    return table


def _busy(events: _Events) -> float:
    """The GPU's busy time, per device: two GPUs busy at once are busy twice, as their kernels' sum counts them.
    One device's events are the columns themselves (no masked copies)."""
    devices = distinct(events.device).tolist()
    if len(devices) == 1:
        return sum([_union(events.ts, events.dur, durations=True)])
    return sum(_union(events.ts[events.device == d], events.dur[events.device == d], durations=True) for d in devices)


def _claims(overheads: Overheads) -> dict[int, int]:
    """Correlation id -> the overhead records carrying it: each claims the GPU event's time once more."""
    claims: dict[int, int] = defaultdict(int)
    for _, _, _, corr in overheads:
        if corr is not None:
            claims[corr] += 1
    return claims


def _claim_times(events: _Launched, claims: dict[int, int]) -> Floats | None:
    """Per GPU event, how many overhead records claim it (0.0 for none): the extra times its duration is summed;
    None where no record claims one (no column of zeros per GPU event and per thread's launches)."""
    if not claims:
        return None
    claim_ids = np.array(sorted(claims), dtype=np.int64)
    claim_counts = np.array([claims[c] for c in sorted(claims)], dtype=np.float64)
    found = np.empty(len(events.corr), dtype=bool)
    where = searched(events.corr, claim_ids, found)
    return np.where(found, claim_counts[where], 0.0)


def _op_sums(contents: TraceContents, events: _Launched, spans: _Spans, times: Floats | None) -> tuple[Floats, int]:
    """Per op name: own, total, true total and held count (rows of the array), summed over every thread's tree of
    spans, each GPU event given to the innermost op around its launch call; and how many GPU events were given."""
    thread_of, call_ts = _launches(contents, events.corr)
    keys = {key: n for n, key in enumerate(contents.runtime.thread(t) for t in range(_thread_count(contents)))}
    sums = np.zeros((4, len(spans.names)), dtype=np.float64)  # own, total, true total (self = own), held
    linked = 0
    for key, n in keys.items():
        mine = np.flatnonzero(thread_of == n)
        if key in spans.threads and len(mine):
            linked += _thread_sums(
                sums,
                spans,
                spans.threads[key],
                (call_ts[mine], events.dur[mine], None if times is None else times[mine]),
            )
    return sums, linked


def _thread_sums(sums: Floats, spans: _Spans, parts: list[Part], launches: tuple[Floats, Floats, Floats | None]) -> int:
    """One thread's tree added to ``sums`` (own, total, true total, held; by name), its launches (call times
    ``at``, their GPU events' durations and claim counts) given to their innermost spans; how many were held. A
    function of its own so that a thread's tree and lists are gone before the next thread's are made."""
    at, dur, times = launches
    (start, end, ids), *more = parts
    tree = _thread_tree(start, end, ids, at, more)
    owner = _innermost(tree, at)
    parent, span = tree.parent, tree.name
    del tree  # its starts and ends (16 bytes a span) are read no more
    held = owner >= 0
    size = len(span)
    own = np.bincount(owner[held], weights=dur[held], minlength=size)
    claims = dur[held] * 0.0 if times is None else (dur * times)[held]  # no claims: 0 each (an inf duration's NaN)
    claimed = np.bincount(owner[held], weights=claims, minlength=size)
    del claims
    claimed += own  # own + claimed, as before, in claimed's place: no temporaries of a double per span
    with_claims = _doubles(claimed)
    del claimed
    total, true_total = _up_the_tree(parent, with_claims, _doubles(own))
    name = spans.name_of[span]
    sums[0] += np.bincount(name, weights=own, minlength=len(spans.names))
    sums[1] += np.bincount(name, weights=total, minlength=len(spans.names))
    sums[2] += np.bincount(name, weights=true_total, minlength=len(spans.names))
    sums[3] += np.bincount(name, minlength=len(spans.names))
    return int(held.sum())


def _claimed_by_name(events: _Events, overheads: Overheads, claims: dict[int, int]) -> tuple[dict[str, float], int]:
    """Per overhead name, the GPU time its records claim (a row of its own in PyTorch's table); and how many
    overhead records claim a GPU event that is in the trace."""
    by_corr: dict[int, float] = {}
    if claims:
        hit = np.isin(events.corr, np.array(sorted(claims), dtype=np.int64))
        for corr, dur in zip(events.corr[hit].tolist(), events.dur[hit].tolist(), strict=True):
            by_corr[corr] = by_corr.get(corr, 0.0) + dur
    claimed_by_name: dict[str, float] = defaultdict(float)
    claiming = 0
    for _, _, name, corr in overheads:
        if corr is not None and corr in by_corr:
            claiming += 1
            claimed_by_name[name] += by_corr[corr]
    return claimed_by_name, claiming


def _thread_count(contents: TraceContents) -> int:
    threads = _as_stored(contents.runtime.threads)  # a view: the max of a copy was a temporary per call
    return int(threads.max()) + 1 if len(threads) else 0


def _device_rows(events: _Events, contents: TraceContents) -> list[SummaryRow]:
    """The GPU events' own rows (self = total = duration), and the GPU annotations' (no device work of their own)."""
    calls = np.bincount(events.name, minlength=len(events.names)).tolist()
    times = np.bincount(events.name, weights=events.dur, minlength=len(events.names)).tolist()
    rows = [
        SummaryRow(name, "gpu", calls[n], times[n], times[n], times[n], times[n])
        for n, name in enumerate(events.names)
        if calls[n]
    ]
    annotations: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for start, end, name in contents.timeline.gpu_annotations:
        annotations[name][0] += 1
        annotations[name][1] += end - start
    return rows + [
        SummaryRow(name, "gpu_annotation", int(a[0]), a[1], a[1], 0.0, 0.0) for name, a in annotations.items()
    ]


def _union(starts: Floats, ends: Floats, *, durations: bool = False) -> float:
    """The length of the union of intervals (``ends`` the durations where ``durations``): in start order, a chunk
    at a time with the reach so far carried (each piece the same as over the whole array; their sum one numpy sum,
    as before), so the kernels' columns are read without a sorted or summed copy each."""
    if not len(starts):
        return 0.0
    order = None
    if not bool((starts[1:] >= starts[:-1]).all()):  # a stable sort of what is in order is the same order
        order = np.argsort(starts, kind="stable")  # read a chunk at a time: no sorted copy of the columns
    pieces = np.empty(len(starts), dtype=np.float64)
    count, reach = 0, -np.inf
    for lo in range(0, len(starts), _CHUNK):
        at = slice(lo, lo + _CHUNK) if order is None else order[lo : lo + _CHUNK]
        s = starts[at]
        e = s + ends[at] if durations else ends[at]
        ahead = np.maximum.accumulate(e)
        np.maximum(ahead, reach, out=ahead)
        before = np.concatenate(([reach], ahead[:-1]))
        piece = np.maximum(e - np.maximum(s, before), 0.0)[e > before]
        pieces[count : count + len(piece)] = piece
        count, reach = count + len(piece), float(ahead[-1])
    return float(pieces[:count].sum())


SM_ACTIVE = "sm__cycles_active"  # PM sampling's share of cycles with work on an SM (a percent series)


def sm_active(contents: TraceContents) -> list[dict[str, Any]]:
    """Per device with a PM-sampling ``sm__cycles_active`` percent series (PyTorch 2.15+ traces; the samples the
    read kept, ``contents.counters``): over the span its samples cover, the share of time a kernel ran
    (kernel-busy %) beside the mean measured SM-active %."""
    if not contents.counter_events:
        return []
    import statistics

    from wizard.trace.read.counters import counter_series

    ts, dur, _, shape, shapes = contents.kernels.columns()
    starts, durs = _floats(ts), np.maximum(_floats(dur), 0.0)
    device_of = np.array([s[3] if isinstance(s[3], int) else -1 for s in shapes] or [-1], dtype=np.int64)
    devices = device_of[_ints(shape)] if len(starts) else np.zeros(0, dtype=np.int64)
    out = []
    for (device, name), series in sorted(counter_series(contents).items()):
        if not name.startswith(SM_ACTIVE) or "pct" not in name or len(series.ts) < 2:
            continue
        first, last = series.ts[0], series.ts[-1]
        mine = devices == device
        begin = np.clip(starts[mine], first, last)
        end = np.clip(starts[mine] + durs[mine], first, last)
        busy = _union(begin, end) / (last - first) if last > first else 0.0
        out.append(
            {
                "device": device,
                "counter": name,
                "samples": len(series.values),
                "span_us": last - first,
                "kernel_busy_pct": 100.0 * busy,
                "sm_active_pct": statistics.fmean(series.values),
            }
        )
    return out


# -- judging -----------------------------------------------------------------------------------------


def off_by_margin(reported: float, true: float) -> bool:
    """A reported time more than MARGIN above the true one (and by MIN_US): what would mislead a reader."""
    return reported - true > max(MIN_US, MARGIN * true)


def misleads(kind: str, reported_self_us: float, reported_total_us: float, true_total_us: float) -> bool:
    """A row the check holds against the table (the one rule, which the reports mark by): an op whose device total
    is more than the margin above its GPU events counted once, or a profiler-overhead row claiming GPU time. A GPU
    annotation's row is not one: its time is said beside the total, which leaves it out."""
    return (kind == "op" and off_by_margin(reported_total_us, true_total_us)) or (
        kind == "overhead" and reported_self_us > 0
    )


def inflated_rows(table: SummaryTable) -> list[SummaryRow]:
    """Op rows whose device total exceeds their GPU events counted once, and overhead rows claiming GPU time."""
    return [r for r in table.rows if misleads(r.kind, r.reported_self_us, r.reported_total_us, r.true_total_us)]


def over_wall_clock(table: SummaryTable) -> bool:
    """The table's Self CUDA total above the wall-clock time the GPU events covered, beyond the margin."""
    return off_by_margin(table.table_self_us, table.busy_us)


# -- wording -----------------------------------------------------------------------------------------


def _us(value: float) -> str:
    return f"{value:,.1f} µs"


def summary_table_check(contents: TraceContents, check: CheckSpec) -> HealthCheck:
    """The ``summary-table`` check: where ``key_averages()`` would mislead its reader, and by how much."""
    table = summary_table(contents)
    details = _table_details(table, sm_active(contents))
    if not table.gpu_events:
        return check.not_applicable("no GPU events: key_averages() reports no device time for this trace", **details)
    inflated = inflated_rows(table)
    over = over_wall_clock(table)
    details["inflated_ops"] = sum(1 for r in inflated if r.kind == "op")
    details["over_wall_clock"] = over
    annotations = _annotation_notes(table, details["sm_active"])
    if not inflated and not over:
        return check.verdict(0, "ok",
            f"key_averages()' device times match the GPU events counted once (Self CUDA total "
            f"{_us(table.table_self_us)}, GPU busy {_us(table.busy_us)}){annotations}",
            "", details=details,
        )  # fmt: skip
    count = len(inflated) + (1 if over else 0)
    return check.verdict(
        count,
        "warning" if inflated else "info",  # a total past the wall clock is the sum it says it is: a reading
        "; ".join(_misleading_parts(table, inflated, over)) + annotations,
        f"prof.key_averages().table() would mislead here by more than {MARGIN:.0%}: profiler OVERHEAD records "
        "that carry a launch's correlation id make the op around them count its kernels twice (pytorch#193392); "
        "kernels on concurrent streams add up past the wall clock, so Self CUDA % is a share of summed kernel "
        "time, not of GPU time. Read the corrected table (the report's summary-table section) instead",
        details=details,
    )


def _table_details(table: SummaryTable, sm: list[dict[str, Any]]) -> dict[str, Any]:
    """The check's details before judging (inflated_ops and over_wall_clock filled in once judged)."""
    return {
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
        "sm_active": sm,
    }


def _annotation_notes(table: SummaryTable, sm: list[dict[str, Any]]) -> str:
    """What the summary adds whatever the verdict: annotation time in the rows, and kernel-busy against SM-active."""
    return (
        (
            f"; {_us(table.annotation_us)} of GPU annotations shown as Self CUDA rows, left out of the total"
            if table.annotation_us
            else ""
        )
        + "".join(
            f"; device {d['device']}: a kernel ran {d['kernel_busy_pct']:.1f}% of the sampled time, the SMs were "
            f"active {d['sm_active_pct']:.1f}% ({d['counter']})"
            for d in sm
        )
        + ("; kernel-busy is time with any kernel running, SM-active the share of SM cycles with work" if sm else "")
    )


def _misleading_parts(table: SummaryTable, inflated: list[SummaryRow], over: bool) -> list[str]:
    """The summary's clauses, one per way the table misleads: ops counted twice, a total past the wall clock."""
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
    return parts


def step_drift(steps: list[tuple[float, float, str]]) -> dict[str, Any]:
    """The active ProfilerStep#N spans' durations and how they drift: the last third's mean against the first
    third's (None below three steps)."""
    ordered = sorted(steps)
    durations = [end - start for start, end, _ in ordered]
    if not durations:  # and no import of statistics (with fractions, random) on a trace without steps
        return {"steps": 0, "step_us": [], "median_step_us": None, "drift": None}
    import statistics

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


def _overhead_time(
    overheads: list[tuple[float, float, str, int | None]], span: tuple[float, float] | None
) -> tuple[dict[str, float], float]:
    """µs per overhead kind inside the window (the kinds of records that touch it), and the records' µs outside it
    (an Nsight Systems export keeps them apart from the window: nsys's own initialisation runs long before the
    first call)."""
    by_name: dict[str, float] = defaultdict(float)
    outside = 0.0
    for start, end, name, _ in overheads:
        whole = max(end - start, 0.0)
        inside = whole if span is None else max(min(end, span[1]) - max(start, span[0]), 0.0)
        if span is None or (start <= span[1] and end >= span[0]):  # a kind is named where it touches the window
            by_name[name] += inside
        outside += whole - inside
    return by_name, outside


def profiler_overhead(contents: TraceContents, span: tuple[float, float] | None, check: CheckSpec) -> HealthCheck:
    """The ``profiler-overhead`` check: CUPTI's overhead records (buffer requests, lazy function loading, ...)
    as a share of the window, and the steps' drift."""
    overheads = contents.timeline.overheads
    by_name, outside = _overhead_time(overheads, span)
    overhead_us = sum(by_name.values())
    window_us = (span[1] - span[0]) if span is not None else 0.0
    share = overhead_us / window_us if window_us > 0 else 0.0
    details: dict[str, Any] = {
        "overhead_us": overhead_us,
        "outside_us": outside,
        "window_us": window_us,
        "share": share,
        "threshold": OVERHEAD_SHARE,
        "kinds": dict(sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))[:KINDS_KEPT]),
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
            return check.not_applicable("no GPU activity: CUPTI writes the overhead records", **details)
        return check.verdict(0, "ok", f"no profiler-overhead records in the trace{steps}", "", details=details)
    n = len(overheads)
    status = "warning" if share > OVERHEAD_SHARE else "info"
    return check.verdict(
        n,
        status,
        f"{plural(n, 'profiler-overhead record')} ({', '.join(cut(k, 60) for k in sorted(by_name)[:KINDS_SHOWN])}"
        f"{', ...' if len(by_name) > KINDS_SHOWN else ''}) took {_us(overhead_us)}, "
        f"{share:.1%} of the window" + (f" (and {_us(outside)} outside it)" if outside > 0 else "") + steps,
        "the profiler spent this time on its own work (CUPTI activity buffer requests, lazy function loading) "
        f"inside the profiled window; above {OVERHEAD_SHARE:.0%} the measured step is inflated: time an "
        "unprofiled run with the profiler.overhead probe",
        details=details,
    )


# -- the table the user printed (the profiler hook) ------------------------------------------------------


class PrintedRow(msgspec.Struct, frozen=True, eq=False):
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
