"""Compact records the reader keeps: kernels in a compact table, indexes for the ops that launched them.

Only what the analysis needs is kept, so a gigabyte trace costs tens of megabytes.
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import msgspec

from wizard.formatting import plural

Dim3 = tuple[int, int, int]


class ReportedValue(msgspec.Struct, gc=False, frozen=True):
    """A metric as the trace wrote it: the number, and how a non-finite one was spelled."""

    value: float | None
    spelling: str = "number"  # number | bare (invalid JSON) | quoted | missing | other


class ProfilerOccupancy(msgspec.Struct, gc=False, frozen=True):
    """Kineto's own ``occupancy`` object (PyTorch 2.12 on): CUDA's calculator as the profiler called it,
    with the default 48 KB shared-memory limit. None for a field the trace did not give as a whole number."""

    active_blocks: int | None
    limiting_factors: str  # "none" or names joined by "|": WARPS, REGS, SMEM, BLOCKS, BARRIERS
    limit_registers: int | None
    limit_shared_memory: int | None
    limit_warps: int | None
    limit_blocks: int | None
    allocated_shared_memory: int | None

    def words(self) -> str:
        """'0 blocks per SM, limited by SMEM': the object in the profiler's own words."""
        active = "? blocks" if self.active_blocks is None else plural(self.active_blocks, "block")
        return f"{active} per SM, limited by {self.limiting_factors or 'nothing named'}"


class KernelRecord(msgspec.Struct, gc=False):
    """One kernel launch as the trace recorded it (a C-level struct: a big trace has hundreds of thousands)."""

    name: str
    ts: float
    dur: float
    pid: Any
    tid: Any
    device: int | None
    stream: Any
    correlation: int | None
    grid: Dim3 | None
    block: Dim3 | None
    registers: int | None
    shared_memory: int | None
    blocks_per_sm: ReportedValue
    warps_per_sm: ReportedValue
    occupancy: ReportedValue
    occupancy_key: str | None
    index: int  # position among the trace's kernels, for the fixer
    fixed: str | None = None  # mechanism, when `warpwizard trace fix` already corrected it
    profiler_occupancy: ProfilerOccupancy | None = None  # Kineto's own calculation, where the trace has it


_NO_CORRELATION = -(2**63)
NO_CORRELATION = _NO_CORRELATION  # what a correlation column holds for an event without an id
# CUPTI numbers correlation ids per process (32-bit); a reader of a file holding several processes keeps them apart
# with the process's index above this bit (wizard/trace/read/nsys.py), so ids still rise in launch order within each
PROCESS_SHIFT = 40
_Shape = tuple[Any, ...]  # KernelRecord's fields but ts, dur, correlation and index


class KernelTable(Sequence[KernelRecord]):
    """Every kernel launch of a trace, compactly. What launches share (name, pid, tid, device,
    stream, grid, block, registers, shared memory, the reported values) is kept once per distinct
    combination; each launch keeps four numbers in flat arrays (start, duration, correlation, which
    combination): about 28 bytes a launch where a KernelRecord object took about 270, so five
    million tiny kernel events need less memory than their file. Records are made when read
    (``table[i]``, slices, iteration), each with ``index`` = its position."""

    __slots__ = ("_corr", "_dur", "_shape", "_shape_ids", "_shapes", "_ts")

    def __init__(self) -> None:
        self._shapes: list[_Shape] = []
        self._shape_ids: dict[_Shape, int] = {}
        self._ts = array("d")
        self._dur = array("d")
        self._corr = array("q")
        self._shape = array("i")

    def __len__(self) -> int:
        return len(self._ts)

    def _shape_id(self, shape: _Shape) -> int:
        found = self._shape_ids.get(shape)
        if found is None:
            found = self._shape_ids[shape] = len(self._shapes)
            self._shapes.append(shape)
        return found

    def add(self, ts: float, dur: float, correlation: int | None, shape: _Shape) -> None:
        """One launch: its own numbers, and the fields it shares with others (KernelRecord's order)."""
        self._ts.append(ts)
        self._dur.append(dur)
        fits = correlation is not None and _NO_CORRELATION < correlation < 2**63
        self._corr.append(correlation if fits else _NO_CORRELATION)  # type: ignore[arg-type]
        self._shape.append(self._shape_id(shape))

    def extend(self, other: KernelTable) -> None:
        """Another table's launches after these (a worker's block, in file order)."""
        remap = array("i", (self._shape_id(shape) for shape in other._shapes))
        self._ts.extend(other._ts)
        self._dur.extend(other._dur)
        self._corr.extend(other._corr)
        self._shape.extend(remap[i] for i in other._shape)

    def map_names(self, intern: Any) -> None:
        """Give each distinct combination's name through ``intern`` (one string per kernel name)."""
        self._shapes = [(intern(s[0]), *s[1:]) for s in self._shapes]
        self._shape_ids = {s: i for i, s in enumerate(self._shapes)}

    def _record(self, i: int) -> KernelRecord:
        s = self._shapes[self._shape[i]]
        corr = self._corr[i]
        return KernelRecord(
            s[0], self._ts[i], self._dur[i], s[1], s[2], s[3], s[4], None if corr == _NO_CORRELATION else corr,
            s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], i, s[13], s[14],
        )  # fmt: skip

    @overload
    def __getitem__(self, i: int) -> KernelRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[KernelRecord]: ...
    def __getitem__(self, i: int | slice) -> KernelRecord | list[KernelRecord]:
        if isinstance(i, slice):
            return [self._record(j) for j in range(*i.indices(len(self._ts)))]
        if i < 0:
            i += len(self._ts)
        if not 0 <= i < len(self._ts):
            raise IndexError("kernel index out of range")
        return self._record(i)

    def since(self, start: int) -> Iterator[KernelRecord]:
        """The launches from position ``start`` on, one record at a time (the classifier checks what
        arrived since it last looked)."""
        record = self._record
        return (record(i) for i in range(max(start, 0), len(self._ts)))

    def __iter__(self) -> Iterator[KernelRecord]:
        return self.since(0)

    def columns(self) -> tuple[array[float], array[float], array[int], array[int], list[_Shape]]:
        """The flat arrays (start, duration, correlation or ``NO_CORRELATION``, combination id) and the
        combinations: passes over every launch read these at C speed instead of making records."""
        return self._ts, self._dur, self._corr, self._shape, self._shapes

    def carries_metrics(self) -> bool:
        """Whether any launch carries blocks or warps per SM (Cuspy's and Nsight Systems' never do)."""
        return any(s[9].spelling != "missing" or s[10].spelling != "missing" for s in self._shapes)

    def carries_profiler_occupancy(self) -> bool:
        """Whether any launch carries Kineto's own occupancy object (PyTorch 2.12 on)."""
        return any(s[14] is not None for s in self._shapes)

    def fingerprint(self) -> str:
        """What work the trace recorded, independent of the machine: a hash of its distinct kernel
        names with their grid and block (not the reported values, which depend on the GPU)."""
        from wizard.schemas import work_fingerprint

        return work_fingerprint(sorted({(s[0], s[5], s[6]) for s in self._shapes}, key=repr))


class GpuOpTable:
    """GPU memory copies and sets (``gpu_memcpy``/``gpu_memset``, 2021's ``Memcpy``/``Memset``): start,
    duration and correlation in flat arrays, what they share (name, pid, tid, device, stream) once."""

    __slots__ = ("_ids", "corr", "dur", "shape", "shapes", "ts")

    def __init__(self) -> None:
        self.ts = array("d")
        self.dur = array("d")
        self.corr = array("q")
        self.shape = array("i")
        self.shapes: list[tuple[Any, Any, Any, Any, Any]] = []
        self._ids: dict[tuple[Any, Any, Any, Any, Any], int] = {}

    def __len__(self) -> int:
        return len(self.ts)

    def _id(self, shape: tuple[Any, Any, Any, Any, Any]) -> int:
        found = self._ids.get(shape)
        if found is None:
            found = self._ids[shape] = len(self.shapes)
            self.shapes.append(shape)
        return found

    def add(self, ts: float, dur: float, correlation: int | None, shape: tuple[Any, Any, Any, Any, Any]) -> None:
        """One event; ``shape`` is (name, pid, tid, device, stream)."""
        self.ts.append(ts)
        self.dur.append(dur)
        fits = correlation is not None and _NO_CORRELATION < correlation < 2**63
        self.corr.append(correlation if fits else _NO_CORRELATION)  # type: ignore[arg-type]
        self.shape.append(self._id(shape))

    def extend(self, other: GpuOpTable) -> None:
        remap = array("i", (self._id(shape) for shape in other.shapes))
        self.ts.extend(other.ts)
        self.dur.extend(other.dur)
        self.corr.extend(other.corr)
        self.shape.extend(remap[i] for i in other.shape)


class SliceTable:
    """The complete ("X") events no other table keeps (annotations, syncs, steps, ...): start, duration and
    which (pid, tid, cat) in flat arrays, each distinct (pid, tid, cat) once. The kernels-overlap check reads
    the ones on kernel rows (Perfetto nests every X event of a row together, docs/health.md)."""

    __slots__ = ("_ids", "dur", "row", "rows", "ts")

    def __init__(self) -> None:
        self.ts = array("d")
        self.dur = array("d")
        self.row = array("i")
        self.rows: list[tuple[Any, Any, Any]] = []
        self._ids: dict[tuple[Any, Any, Any], int] = {}

    def __len__(self) -> int:
        return len(self.ts)

    def _id(self, key: tuple[Any, Any, Any]) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.rows)
            self.rows.append(key)
        return found

    def add(self, ts: float, dur: float, key: tuple[Any, Any, Any]) -> None:
        """One event; ``key`` is (pid, tid, cat)."""
        self.ts.append(ts)
        self.dur.append(dur)
        self.row.append(self._id(key))

    def extend(self, other: SliceTable) -> None:
        remap = array("i", (self._id(key) for key in other.rows))
        self.ts.extend(other.ts)
        self.dur.extend(other.dur)
        self.row.extend(array("i", map(remap.__getitem__, other.row)))


@dataclass(frozen=True, slots=True)
class RuntimeCall:
    pid: Any
    tid: Any
    ts: float
    name: str


_UNSET = object()


class RuntimeIndex:
    """Runtime/driver calls by correlation id, as flat arrays (a gigabyte trace has millions).

    Looked up rarely (one call per kernel a report names), so a lookup may scan. A call without a
    correlation id is kept too, under ``NO_CORRELATION`` (the health check counts launches without one).
    """

    def __init__(self) -> None:
        self.correlations: array[int] = array("q")
        self.threads: array[int] = array("i")
        self.starts: array[float] = array("d")
        self.last_end = -math.inf  # the latest end of any call (the window's end needs no per-call duration)
        self.names: array[int] = array("i")
        self._thread_ids: dict[tuple[Any, Any], int] = {}
        self._thread_keys: list[tuple[Any, Any]] = []
        self._name_ids: dict[str, int] = {}
        self._name_list: list[str] = []
        self._lookup: dict[int, int] | None = None  # built by get(), for the few single lookups
        self._lookup_size = 0
        self._last_pid: Any = _UNSET  # a pid/tid of None is possible; the sentinel is not
        self._last_tid: Any = _UNSET
        self._last_thread = -1

    def __len__(self) -> int:
        return len(self.correlations)

    def add(self, correlation: int | None, pid: Any, tid: Any, ts: float, name: Any, *, dur: float = 0.0) -> None:
        if correlation is None or not _NO_CORRELATION < correlation < 2**63:
            correlation = _NO_CORRELATION
        if tid == self._last_tid and pid == self._last_pid:
            thread = self._last_thread
        else:
            thread = self._thread_id((pid, tid))
            self._last_pid, self._last_tid, self._last_thread = pid, tid, thread
        name_id = self._name_ids.get(name)
        if name_id is None:
            name_id = self._name_ids[name] = len(self._name_list)
            self._name_list.append(str(name))
        self.correlations.append(correlation)
        self.threads.append(thread)
        self.starts.append(ts)
        end = ts + dur if dur > 0 else ts
        if end > self.last_end:  # noqa: PLR1730 - not max(): a builtin call per runtime call of a gigabyte trace
            self.last_end = end
        self.names.append(name_id)

    def merge(self, other: RuntimeIndex) -> None:
        """Append another index's calls (a later part of the same trace)."""
        threads = array("i", (self._thread_id(key) for key in other._thread_keys))
        names = array("i", (self._name_id(name) for name in other._name_list))
        self.correlations.extend(other.correlations)
        self.threads.extend(array("i", map(threads.__getitem__, other.threads)))
        self.starts.extend(other.starts)
        self.last_end = max(self.last_end, other.last_end)
        self.names.extend(array("i", map(names.__getitem__, other.names)))

    def _thread_id(self, key: tuple[Any, Any]) -> int:
        thread = self._thread_ids.get(key)
        if thread is None:
            thread = self._thread_ids[key] = len(self._thread_keys)
            self._thread_keys.append(key)
        return thread

    def _name_id(self, name: str) -> int:
        name_id = self._name_ids.get(name)
        if name_id is None:
            name_id = self._name_ids[name] = len(self._name_list)
            self._name_list.append(name)
        return name_id

    @property
    def name_list(self) -> list[str]:
        """Call names by id (``names`` holds ids)."""
        return self._name_list

    def thread(self, thread_id: int) -> tuple[Any, Any]:
        """The (pid, tid) of a thread id (``threads`` holds ids)."""
        return self._thread_keys[thread_id]

    def find(self, correlations: set[int]) -> dict[int, RuntimeCall]:
        """The calls with these correlation ids (the last one wins, as in a dict)."""
        out: dict[int, RuntimeCall] = {}
        if not correlations:
            return out
        for i, corr in enumerate(self.correlations):
            if corr in correlations:
                pid, tid = self._thread_keys[self.threads[i]]
                out[corr] = RuntimeCall(pid, tid, self.starts[i], self._name_list[self.names[i]])
        return out

    def get(self, correlation: int) -> RuntimeCall | None:
        """One call; the first use builds a dict, so only for small traces or tests."""
        if self._lookup is None or self._lookup_size != len(self.correlations):  # calls were added since
            self._lookup = {corr: i for i, corr in enumerate(self.correlations)}
            self._lookup_size = len(self.correlations)
        i = self._lookup.get(correlation)
        if i is None:
            return None
        pid, tid = self._thread_keys[self.threads[i]]
        return RuntimeCall(pid, tid, self.starts[i], self._name_list[self.names[i]])


@dataclass(frozen=True, slots=True)
class OpInfo:
    name: str
    input_dims: str | None
    input_types: str | None
    call_stack: str | None


@dataclass(slots=True)
class _ThreadIntervals:
    starts: array[float] = field(default_factory=lambda: array("d"))
    ends: array[float] = field(default_factory=lambda: array("d"))
    refs: array[int] = field(default_factory=lambda: array("i"))
    sorted_: bool = True


class IntervalIndex:
    """Per-thread [ts, ts+dur] intervals, answering "which ones contain time t?".

    Stored as arrays of doubles plus an index into interned descriptors, because a large
    trace has millions of ops but only a few thousand distinct (name, shapes) pairs.
    """

    def __init__(self) -> None:
        self._threads: dict[tuple[Any, Any], _ThreadIntervals] = {}
        self._descriptors: list[Any] = []
        self._descriptor_ids: dict[Any, int] = {}
        self._last: _ThreadIntervals | None = None
        self._last_pid: Any = None
        self._last_tid: Any = None

    def ref(self, descriptor: Any) -> int:
        """The id of a descriptor (registered on first sight); add() takes ids, not objects."""
        ref = self._descriptor_ids.get(descriptor)
        if ref is None:
            ref = len(self._descriptors)
            self._descriptor_ids[descriptor] = ref
            self._descriptors.append(descriptor)
        return ref

    def add(self, pid: Any, tid: Any, start: float, end: float, ref: int) -> None:
        thread = self._last
        if tid != self._last_tid or pid != self._last_pid or thread is None:  # runs of one thread are common
            thread = self._threads.get((pid, tid))
            if thread is None:
                thread = self._threads[(pid, tid)] = _ThreadIntervals()
            self._last, self._last_pid, self._last_tid = thread, pid, tid
        starts = thread.starts
        if starts and start < starts[-1]:
            thread.sorted_ = False
        starts.append(start)
        thread.ends.append(end)
        thread.refs.append(ref)

    @property
    def count(self) -> int:
        return sum(len(t.starts) for t in self._threads.values())

    def arrays(self) -> Iterator[tuple[array[float], array[float]]]:
        """Per thread, the starts and the ends (the window over every event needs them, not their order)."""
        for t in self._threads.values():
            if t.starts:
                yield t.starts, t.ends

    def threads(self) -> Iterator[tuple[tuple[Any, Any], array[float], array[float], array[int]]]:
        """Per thread, its (pid, tid), the starts, the ends and each interval's descriptor id (``descriptor``):
        the summary table rebuilds PyTorch's op tree from them."""
        for key, t in self._threads.items():
            if t.starts:
                yield key, t.starts, t.ends, t.refs

    def descriptor(self, ref: int) -> Any:
        """The descriptor of an id ``threads`` gave."""
        return self._descriptors[ref]

    def merge(self, other: IntervalIndex) -> None:
        """Append another index's intervals (a later part of the same trace)."""
        refs = array("i", (self.ref(d) for d in other._descriptors))
        for key, theirs in other._threads.items():
            mine = self._threads.get(key)
            if mine is None:
                mine = self._threads[key] = _ThreadIntervals()
            if mine.starts and theirs.starts and theirs.starts[0] < mine.starts[-1]:
                mine.sorted_ = False
            mine.sorted_ = mine.sorted_ and theirs.sorted_
            mine.starts.extend(theirs.starts)
            mine.ends.extend(theirs.ends)
            mine.refs.extend(array("i", map(refs.__getitem__, theirs.refs)))
        self._last = None

    def _sorted(self, thread: _ThreadIntervals) -> _ThreadIntervals:
        if not thread.sorted_:
            order = sorted(range(len(thread.starts)), key=lambda i: (thread.starts[i], -thread.ends[i]))
            thread.starts = array("d", (thread.starts[i] for i in order))
            thread.ends = array("d", (thread.ends[i] for i in order))
            thread.refs = array("i", (thread.refs[i] for i in order))
            thread.sorted_ = True
        return thread

    def containing(self, pid: Any, tid: Any, t: float, limit: int = 64) -> list[Any]:
        """Descriptors of intervals containing t, outermost first (at most ``limit``)."""
        thread = self._threads.get((pid, tid))
        if thread is None:
            return []
        thread = self._sorted(thread)
        i = bisect.bisect_right(thread.starts, t) - 1
        if limit == 1:  # innermost: the latest-starting interval that holds t, the same 100,000 looked at, no list
            ends, stop = thread.ends, max(i - 100_000, -1)  # a launch outside every op scanned them all per group
            while i > stop and not ends[i] >= t:
                i -= 1
            return [self._descriptors[thread.refs[i]]] if i > stop else []
        found: list[tuple[float, float, int]] = []
        scanned = 0
        while i >= 0 and scanned < 100_000 and len(found) < limit:
            if thread.ends[i] >= t:
                found.append((thread.starts[i], -thread.ends[i], thread.refs[i]))
            i -= 1
            scanned += 1
        found.sort()
        return [self._descriptors[ref] for _, _, ref in found]

    def innermost_many(self, queries: list[tuple[Any, Any, float]]) -> list[Any | None]:
        """``innermost`` for many (pid, tid, t) at once: one sweep per thread with a stack of open
        intervals (ops on one thread nest), so a million kernels cost a sort, not a million scans."""
        out: list[Any | None] = [None] * len(queries)
        by_thread: dict[tuple[Any, Any], list[int]] = {}
        for n, (pid, tid, _) in enumerate(queries):
            by_thread.setdefault((pid, tid), []).append(n)
        for key, wanted in by_thread.items():
            thread = self._threads.get(key)
            if thread is None:
                continue
            thread = self._sorted(thread)
            starts, ends, refs = thread.starts, thread.ends, thread.refs
            wanted.sort(key=lambda n: queries[n][2])
            stack: list[int] = []
            j = 0
            for n in wanted:
                t = queries[n][2]
                while j < len(starts) and starts[j] <= t:
                    while stack and ends[stack[-1]] < starts[j]:
                        stack.pop()
                    stack.append(j)
                    j += 1
                while stack and ends[stack[-1]] < t:
                    stack.pop()
                if stack:
                    out[n] = self._descriptors[refs[stack[-1]]]
        return out

    def innermost(self, pid: Any, tid: Any, t: float) -> Any | None:
        # On one thread intervals nest, so the containing one that started last is innermost.
        hits = self.containing(pid, tid, t, limit=1)
        return hits[0] if hits else None
