"""Which complete events Perfetto cannot nest on their row: kernels-overlap and ``trace fix --split-overlaps``.

Perfetto's JSON importer (docs/health.md, "kernels-overlap", cites the source) puts every complete ("X")
event of one (pid, tid) on one row, in the order (ts, the longer first, file order), with times in integer
nanoseconds (``llround(us * 1000)``); an event nests under the innermost open one when it ends at or
before that one's end, and one that starts inside it and ends after it cannot nest: Perfetto v51-v56 drop
it, v57 on draws it on an extra row, and either way its flow arrow binds to the row's top slice, another
event. Gathering (the rows' events as arrays), the rule (a stack per row) and the lanes of the fix are
separate functions here; the check's judging and wording stay in ``health_checks``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from typing import Any, overload

import msgspec
import numpy as np
import numpy.typing as npt

from wizard.trace.read.collector import GPU_OPS, KERNELS, SLICES, TraceContents

I64 = npt.NDArray[np.int64]
# Perfetto's kMaxDepth (trace processor, src/trace_processor/importers/common/slice_tracker.h 43, at ec5d16b1): a
# slice that would open at this depth on its row is dropped (slice_tracker.cc 136-141, StartSlice: depth >= kMaxDepth
# logs slice_max_depth_exceeded and inserts nothing), so no version draws it
MAX_DEPTH = 512
WINDOW = 1 << 16  # events whose times walk() holds as Python ints at once (issue 47 item 7: not all of them)
KERNEL, GPU_OP, OTHER = 0, 1, 2  # which table an event came from
_US_LIMIT = 9.2e15  # µs whose nanoseconds still fit an int64, as Perfetto stores them


def perfetto_row(pid: Any, tid: Any) -> tuple[Any, Any]:
    """The row Perfetto draws a (pid, tid) on: a string is its own id, a number an unsigned 32-bit one (0 when out
    of range), and a tid of 0 is the pid's when the pid is not 0."""

    def number(value: Any) -> Any:
        if isinstance(value, str):
            return ("string", value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return 0
        if isinstance(value, float) and abs(value) > 2**63:
            return 0
        n = int(value)
        return n if 0 <= n <= 2**32 - 1 else 0

    p, t = number(pid), number(tid)
    if t == 0 and p != 0 and not isinstance(tid, str):
        t = p
    return (p, t)


def to_ns(us: npt.NDArray[np.float64]) -> tuple[I64, npt.NDArray[np.bool_]]:
    """Microseconds as Perfetto's nanoseconds (a whole number times 1000, any other ``llround(us * 1000.0)``)
    and which ones Perfetto can read at all (finite, within an int64 of nanoseconds): a chunk at a time, so the
    temporaries are a chunk's (ten of them per event were ~80 bytes a kernel at the health check's peak)."""
    ns = np.empty(len(us), dtype=np.int64)
    valid = np.empty(len(us), dtype=bool)
    for lo in range(0, len(us), _CHUNK):
        ns[lo : lo + _CHUNK], valid[lo : lo + _CHUNK] = _to_ns(us[lo : lo + _CHUNK])
    return ns, valid


# events converted (and checked for order, and clustered) at once: each of to_ns' ten temporaries is a chunk's, so a
# chunk past a 200 MB trace's 70,000 kernels made them whole-table (5 MB of the health pass's peak at 1 << 18)
_CHUNK = 1 << 14


def _to_ns(us: npt.NDArray[np.float64]) -> tuple[I64, npt.NDArray[np.bool_]]:
    valid = np.isfinite(us) & (np.abs(us) < _US_LIMIT)
    safe = np.where(valid, us, 0.0)
    whole = safe == np.trunc(safe)
    product = safe * 1000.0
    truncated = np.trunc(product)
    rest = product - truncated  # exact: a double minus its integer part
    rounded = truncated + np.where(np.abs(rest) >= 0.5, np.sign(product), 0.0)
    ns = np.where(whole, safe.astype(np.int64) * 1000, rounded.astype(np.int64))
    return ns.astype(np.int64), valid


class _Same(Sequence[str]):
    """One category for every event (only kernels): no list of a string per event."""

    def __init__(self, text: str, count: int) -> None:
        self.text, self.size = text, count

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self.text] * len(range(self.size)[i])
        range(self.size)[i]  # an IndexError where a list would raise one
        return self.text


class _Named(Sequence[str]):
    """Each event's category by its id among ``names``: no list of a string per event (nor the Python int per event
    that made it: 3 MB of the kernels-overlap check's peak at 200 MB)."""

    def __init__(self, ids: I64, names: list[str]) -> None:
        self.ids, self.names = ids, names

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self.names[n] for n in self.ids[i].tolist()]
        return self.names[int(self.ids[range(len(self.ids))[i]])]  # an IndexError where a list would raise one


class RowEvents(msgspec.Struct, eq=False):
    """Every X event on a row that holds a kernel, as arrays in one order: (row, ts, the longer first, table,
    position in its table); times in Perfetto's nanoseconds. ``ref`` is the position in the event's own table
    (the kernel index for kernels)."""

    row: I64
    ts: I64
    dur: I64
    kind: npt.NDArray[np.int8]
    ref: I64
    rows: list[tuple[Any, Any]]  # row number -> its (pid, tid) as Perfetto keys it
    categories: Sequence[str]  # per event, for the non-kernels' count (kernels: "kernel")

    def __len__(self) -> int:
        return len(self.ts)


def _floats(values: Any) -> npt.NDArray[np.float64]:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0, dtype=np.float64)


def _ints(values: Any) -> I64:
    return np.frombuffer(values, dtype=np.int32).astype(np.int64) if len(values) else np.zeros(0, dtype=np.int64)


def _gpu_op_category(name: str) -> str:
    """A copy or set's category by its name as Kineto writes it ("Memcpy HtoD ...", "Memset (Device)")."""
    return "gpu_memset" if name.startswith("Memset") else "gpu_memcpy"


def _exact(contents: TraceContents, table: int, n: int) -> tuple[I64, I64] | None:
    """A table's times in the file's own nanoseconds (a .pftrace's), when the reader kept them for every event:
    Perfetto reads those as they are, never through microseconds (issue 45 item 10)."""
    exact = contents.exact_ns
    if exact is None or not exact.usable or len(exact.ts[table]) != n or len(exact.dur[table]) != n:
        return None
    return _ints64(exact.ts[table]), _ints64(exact.dur[table])


def _ints64(values: Any) -> I64:
    return np.frombuffer(values, dtype=np.int64).copy() if len(values) else np.zeros(0, dtype=np.int64)


def _times(us: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]], exact: tuple[I64, I64] | None) -> Any:
    """(ts, ts readable, dur, dur readable) in Perfetto's nanoseconds: the file's own, or its microseconds'."""
    if exact is not None:
        ok = np.ones(len(exact[0]), dtype=bool)
        return exact[0], ok, exact[1], ok
    ts, ts_ok = to_ns(us[0])
    dur, dur_ok = to_ns(us[1])
    return ts, ts_ok, dur, dur_ok


def gather(contents: TraceContents) -> RowEvents:
    """The kernels, GPU copies/sets and other complete events of the rows that hold kernels."""
    ts_k, dur_k, _, shape_k, shapes = contents.kernels.columns()
    row_ids: dict[tuple[Any, Any], int] = {}
    kernel_rows = np.array(
        [row_ids.setdefault(perfetto_row(s[1], s[2]), len(row_ids)) for s in shapes] or [0], dtype=np.int32
    )  # 32-bit rows and positions for the kernels: an export of ten million is 8 bytes a kernel less
    parts: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], Any, int, list[str] | None, Any]] = []
    tables: list[int] = []  # each part's table, as ExactTimes numbers them
    k_shape = np.frombuffer(shape_k, dtype=np.int32) if len(shape_k) else np.zeros(0, dtype=np.int32)
    if len(k_shape):
        parts.append((_floats(ts_k), _floats(dur_k), kernel_rows[k_shape], KERNEL, None, None))
        tables.append(KERNELS)
    del k_shape
    ops = contents.timeline.gpu_ops
    op_rows = np.array([row_ids.get(perfetto_row(s[1], s[2]), -1) for s in ops.shapes] or [-1])
    op_shape = _ints(ops.shape)
    if len(op_shape):
        labels = [_gpu_op_category(str(s[0])) for s in ops.shapes]
        parts.append((_floats(ops.ts), _floats(ops.dur), op_rows[op_shape], GPU_OP, labels, op_shape))
        tables.append(GPU_OPS)
    slices = contents.timeline.slices
    slice_rows = np.array([row_ids.get(perfetto_row(k[0], k[1]), -1) for k in slices.rows] or [-1])
    slice_row = _ints(slices.row)
    if len(slice_row):
        cats = [str(k[2]) for k in slices.rows]
        parts.append((_floats(slices.ts), _floats(slices.dur), slice_rows[slice_row], OTHER, cats, slice_row))
        tables.append(SLICES)
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return RowEvents(empty, empty, empty, np.zeros(0, dtype=np.int8), empty, list(row_ids), [])
    return _ordered(_kept(contents, parts, tables), list(row_ids))


def _kept(contents: TraceContents, parts: list[Any], tables: list[int]) -> tuple[list[Any], ...]:
    """Each part's readable events as (rows, ts, dur, kind, ref, category ids or None) lists of arrays, the
    category names last: no copy of a part whose every event is kept (an export of ten million kernels)."""
    rows: list[Any] = []
    tss: list[Any] = []
    durs: list[Any] = []
    kinds: list[Any] = []
    refs: list[Any] = []
    cat_ids: list[Any] = []
    cat_names = ["kernel"]
    for (ts_us, dur_us, row, table, names, shape), which in zip(parts, tables, strict=True):
        ts, ts_ok, dur, dur_ok = _times((ts_us, dur_us), _exact(contents, which, len(ts_us)))
        # Perfetto drops what it cannot read, a negative ts and a negative duration before any stack sees them.
        keep = (row >= 0) & ts_ok & dur_ok & (ts >= 0) & (dur >= 0)
        del ts_ok, dur_ok
        if bool(keep.all()):
            where = np.arange(len(keep), dtype=np.int32 if len(keep) < 1 << 31 else np.int64)
        else:
            where = np.flatnonzero(keep).astype(np.int64)
            row, ts, dur = row[where], ts[where], dur[where]
        rows.append(row)
        tss.append(ts)
        durs.append(dur)
        kinds.append(np.full(len(where), table, dtype=np.int8))
        refs.append(where)
        if names is None:
            cat_ids.append(None)
        else:
            offset = len(cat_names)
            cat_names.extend(names)
            cat_ids.append(shape[where] + offset)
        del ts, dur, row, keep, where
    return rows, tss, durs, kinds, refs, cat_ids, cat_names


def _joined(arrays: list[Any]) -> Any:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _joined_once(arrays: list[Any]) -> Any:
    """``_joined``, the parts let go as soon as they are joined (each column's parts and every joined column were
    held at once: 2 MB of the kernels-overlap check's peak at 200 MB)."""
    joined = _joined(arrays)
    del arrays[:]
    return joined


def _ordered(kept: tuple[list[Any], ...], row_keys: list[tuple[Any, Any]]) -> RowEvents:
    """The events in (row, ts, the longer first, table, position) order, each array reordered in turn (one copy
    of one array at a time, not of every one at once)."""
    rows, tss, durs, kinds, refs, cat_ids, cat_names = kept
    cat = None
    if len(cat_names) > 1:
        cat = _joined(
            [np.zeros(len(r), dtype=np.int64) if c is None else c for c, r in zip(cat_ids, refs, strict=True)]
        )
    del cat_ids[:]
    row, ts, dur, kind, ref = (_joined_once(parts) for parts in (rows, tss, durs, kinds, refs))
    if cat is None and _in_order(row, ts, dur, ref):  # one table's events already in order: no sort, no copies
        return RowEvents(row, ts, dur, kind, ref, row_keys, _Same("kernel", len(row)))
    order = np.lexsort((ref, kind, -dur, ts, row))
    names: Sequence[str] = _Same("kernel", len(order)) if cat is None else _Named(cat[order], cat_names)
    del cat
    row = row[order]
    ts = ts[order]
    dur = dur[order]
    kind = kind[order]
    ref = ref[order]
    return RowEvents(row, ts, dur, kind, ref, row_keys, names)


def _in_order(row: I64, ts: I64, dur: I64, ref: I64) -> bool:
    """Whether events of one table (one kind) are in (row, ts, the longer first, position) order, a chunk at a time:
    the order the stable sort would give them is then their own."""
    for lo in range(0, max(len(row) - 1, 0), _CHUNK):
        at, after = slice(lo, lo + _CHUNK), slice(lo + 1, lo + _CHUNK + 1)
        r0, r1, t0, t1 = row[at][: len(row[after])], row[after], ts[at][: len(ts[after])], ts[after]
        d0, d1, f0, f1 = dur[at][: len(dur[after])], dur[after], ref[at][: len(ref[after])], ref[after]
        same_row, same_ts = r1 == r0, t1 == t0
        tie = same_row & same_ts & (d1 == d0)
        rising = (r1 > r0) | (same_row & ((t1 > t0) | (same_ts & ((d1 < d0) | (tie & (f1 > f0))))))
        if not bool(rising.all()):
            return False
    return True


def _clusters(events: RowEvents) -> Iterator[tuple[int, int]]:
    """Runs of events whose first finds its row's stack empty (it starts after every earlier event of the row ended,
    or at that end with a duration), so each run is decided alone; runs of one event nest by themselves. A chunk of
    events at a time, the row and its reach carried (an export of distinct kernels is a run per event: the free
    positions of ten million events were ~50 bytes an event at the health check's peak)."""
    n = len(events)
    if n < 2:
        return
    row_before, reach_before, pending = None, _FIRST, -1
    for lo in range(0, n, _CHUNK):
        row, ts, dur = events.row[lo : lo + _CHUNK], events.ts[lo : lo + _CHUNK], events.dur[lo : lo + _CHUNK]
        reach, new_row, row_before, reach_before = _reach(row, ts + dur, row_before, reach_before)
        free = np.flatnonzero(new_row | (ts > reach) | ((ts == reach) & (dur > 0))) + lo
        del reach, new_row
        bounds = free if pending < 0 else np.concatenate(([pending], free))
        runs = np.flatnonzero(np.diff(bounds) > 1)
        yield from zip(bounds[runs].tolist(), bounds[runs + 1].tolist(), strict=True)
        pending = int(bounds[-1]) if len(bounds) else pending
    if n - pending > 1:
        yield pending, n


_FIRST = int(np.iinfo(np.int64).min)  # the reach of a row's first event: nothing before it


def _reach(row: Any, ends: I64, row_before: Any, reach_before: int) -> tuple[I64, Any, Any, int]:
    """For a chunk of events: the latest end of each one's row's earlier events (those of the chunks before
    included: ``row_before``'s reach was ``reach_before``), which start a row, and the last row and its reach."""
    new_row = np.empty(len(row), dtype=bool)
    new_row[0] = row_before is None or bool(row[0] != row_before)
    np.not_equal(row[1:], row[:-1], out=new_row[1:])
    reach = np.full(len(row), _FIRST, dtype=np.int64)
    starts = np.flatnonzero(new_row).tolist()
    edges = ([] if starts and starts[0] == 0 else [0]) + starts
    for s, e in zip(edges, [*edges[1:], len(row)], strict=True):
        before = _FIRST if new_row[s] else reach_before
        reach[s] = before
        if e - s > 1:
            reach[s + 1 : e] = np.maximum(np.maximum.accumulate(ends[s : e - 1]), before)
        last = max(before, int(ends[s:e].max()))
    return reach, new_row, row[-1], last


def cannot_nest(events: RowEvents) -> tuple[I64, I64]:
    """The positions (in ``events``) of the events Perfetto cannot nest, and for each the open event it overlaps."""
    hidden, against, _ = walk(events)
    return hidden, against


def walk(events: RowEvents) -> tuple[I64, I64, I64]:
    """Perfetto's stacks over every row: the events it cannot nest (slice_tracker.cc ``MaybeCloseStack``, a stack
    per row walked from the top) with the open event each overlaps, and the events that nest but would open at
    ``MAX_DEPTH`` or deeper, which it drops (``StartSlice``): neither is drawn where the trace puts it."""
    hidden: list[int] = []
    against: list[int] = []
    deep: list[int] = []
    lo, hi = 0, 0  # the positions whose times are Python ints now (a window: not two ints per event at once)
    ts_all: list[int] = []
    dur_all: list[int] = []
    for a, b in _clusters(events):
        if b > hi:
            lo, hi = a, max(b, a + WINDOW)
            ts_all, dur_all = events.ts[lo:hi].tolist(), events.dur[lo:hi].tolist()
        stack: list[int] = []
        for j in range(a - lo, b - lo):
            t, d = ts_all[j], dur_all[j]
            i = len(stack) - 1
            conflict = -1
            while i >= 0:
                top = stack[i]
                end = ts_all[top] + dur_all[top]
                if end < t or (end == t and not (dur_all[top] == 0 and d == 0)):
                    stack.pop()  # Perfetto pops the top, whichever slice it is looking at
                    i -= 1
                    continue
                if t < end < t + d:
                    conflict = top
                    break
                i -= 1
            if conflict >= 0:
                hidden.append(lo + j)
                against.append(lo + conflict)
            elif len(stack) < MAX_DEPTH:
                stack.append(j)
            else:
                deep.append(lo + j)
    return np.array(hidden, dtype=np.int64), np.array(against, dtype=np.int64), np.array(deep, dtype=np.int64)


class Moves(msgspec.Struct, eq=False):
    """``--split-overlaps``: each event that cannot nest, by (table, position), to its extra lane on its row
    (1, 2, ...; the lowest whose last event ended by its start)."""

    lanes: dict[tuple[int, int], int]
    categories: dict[tuple[int, int], str]
    scans: int  # heap operations made (the fixer's cost: O(n log n), issue 36)


def lanes(events: RowEvents, hidden: I64) -> Moves:
    """Extra lanes, per row, in Perfetto's order: the lowest lane free at an event's start from a heap of free
    lanes, and a heap of the busy ones by their end (equal ends and starts do not overlap: Perfetto pops a slice
    that ends where the next starts)."""
    out: dict[tuple[int, int], int] = {}
    cats: dict[tuple[int, int], str] = {}
    scans = 0
    by_row: dict[int, list[int]] = {}
    for j in hidden.tolist():  # already in (row, ts, longer first, file) order
        by_row.setdefault(int(events.row[j]), []).append(j)
    for positions in by_row.values():
        free: list[int] = []  # lanes free now, lowest first
        busy: list[tuple[int, int]] = []  # (end, lane)
        made = 0
        for j in positions:
            t, end = int(events.ts[j]), int(events.ts[j] + events.dur[j])
            while busy and busy[0][0] <= t:
                heapq.heappush(free, heapq.heappop(busy)[1])
                scans += 2
            if free:
                lane = heapq.heappop(free)
            else:
                made += 1
                lane = made
            scans += 1
            heapq.heappush(busy, (end, lane))
            key = (int(events.kind[j]), int(events.ref[j]))
            out[key] = lane
            cats[key] = events.categories[j]
    return Moves(out, cats, scans)
