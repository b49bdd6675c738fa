"""Compact records the reader keeps: kernels in a compact table, indexes for the ops that launched them.

Only what the analysis needs is kept, so a gigabyte trace costs tens of megabytes.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
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
NO_VALUE = _NO_CORRELATION  # what a launch column holds for None (wizard/trace/read/nsys.py reads into them)
# CUPTI numbers correlation ids per process (32-bit); a reader of a file holding several processes keeps them apart
# with the process's index above this bit (wizard/trace/read/nsys.py), so ids still rise in launch order within each
PROCESS_SHIFT = 40
_Shape = tuple[Any, ...]  # KernelRecord's fields but ts, dur, correlation and index


_LAUNCH_FIELDS = 8  # grid x, y, z, block x, y, z, registers, shared memory (KernelRecord's grid to shared_memory)
_INT32 = 1 << 31
_MATERIALISED = 1 << 16  # combinations made into a list up to this many; past it they are made as read


class _Column:
    """One integer field of every launch: one value while every launch has the same (most fields of a real
    export), 32-bit integers once two differ, 64-bit once one does not fit. ``NO_VALUE`` (``-2**31`` in 32-bit
    storage) is None, unless the table's overrides hold the launch's value (a value of -2**63 or past int64)."""

    __slots__ = ("count", "data", "value")

    def __init__(self) -> None:
        self.count = 0
        self.value = NO_VALUE
        self.data: array[int] | None = None

    def extend(self, values: Any) -> None:
        """Append these values (a numpy int64 array)."""
        import numpy as np

        n = len(values)
        if not n:
            return
        if self.data is None:
            if not self.count:
                self.value = int(values[0])
            if bool((values == self.value).all()):
                self.count += n
                return
            self.data = _filled(self.value, self.count)
        data = self.data
        if data.typecode == "i":
            none = values == NO_VALUE
            if bool((((values > -_INT32) & (values < _INT32)) | none).all()):
                data.frombytes(np.where(none, -_INT32, values).astype(np.int32).tobytes())
                self.count += n
                return
            self.data = data = _widened(data)
        data.frombytes(values.astype(np.int64).tobytes())
        self.count += n

    def __getitem__(self, i: int) -> int:
        data = self.data
        if data is None:
            return self.value
        value = data[i]
        return NO_VALUE if value == -_INT32 and data.typecode == "i" else value

    def take(self, positions: Any) -> Any:
        """The values at these positions (a numpy array of them, or a slice), as numpy int64."""
        import numpy as np

        data = self.data
        if data is None:
            return np.full(len(range(self.count)[positions]) if type(positions) is slice else len(positions),
                           self.value, dtype=np.int64)  # fmt: skip
        raw = _view(data)[positions].astype(np.int64)
        if data.typecode == "i":
            raw[raw == -_INT32] = NO_VALUE
        return raw


def _bytes_of(values: Any) -> memoryview:
    """A C-contiguous numpy array's own bytes, for ``array.frombytes`` (which copies them once)."""
    return memoryview(values).cast("B")


def _chunks(starts: Any, durations: Any) -> Iterator[tuple[Any, Any]]:
    for lo in range(0, len(starts), _CHUNK):
        yield starts[lo : lo + _CHUNK], durations[lo : lo + _CHUNK]


def _view(data: array[int]) -> Any:
    import numpy as np

    if not len(data):
        return np.zeros(0, dtype=np.int32 if data.typecode == "i" else np.int64)
    return np.frombuffer(data, dtype=np.int32 if data.typecode == "i" else np.int64)


def _filled(value: int, count: int) -> array[int]:
    import numpy as np

    if value == NO_VALUE or -_INT32 < value < _INT32:
        out = array("i")
        out.frombytes(np.full(count, -_INT32 if value == NO_VALUE else value, dtype=np.int32).tobytes())
    else:
        out = array("q")
        out.frombytes(np.full(count, value, dtype=np.int64).tobytes())
    return out


def _widened(data: array[int]) -> array[int]:
    import numpy as np

    values = _view(data).astype(np.int64)
    values[values == -_INT32] = NO_VALUE
    out = array("q")
    out.frombytes(values.tobytes())
    return out


def _launch_values(shape: _Shape) -> list[Any]:
    """A shape's grid, block, registers and shared memory as the eight launch fields (None for each of a
    missing grid's or block's three)."""
    grid, block = shape[5], shape[6]
    return [*(grid if grid is not None else (None,) * 3), *(block if block is not None else (None,) * 3),
            shape[7], shape[8]]  # fmt: skip


def _stored(value: Any) -> int | None:
    """What a launch column holds for a value: itself, NO_VALUE for None, or None where only an override can
    hold it (-2**63 itself, past int64, not an integer)."""
    if value is None:
        return NO_VALUE
    if type(value) is int and NO_VALUE < value < 2**63:
        return value
    return None


def _shared_record(s: _Shape) -> KernelRecord:
    """A record of a combination alone (``KernelTable.combinations``): start, duration and index 0."""
    return KernelRecord(
        s[0], 0.0, 0.0, s[1], s[2], s[3], s[4], None, s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], 0, s[13], s[14]
    )


class KernelTable(Sequence[KernelRecord]):
    """Every kernel launch of a trace, compactly. What launches share (name, pid, tid, device,
    stream, grid, block, registers, shared memory, the reported values) is kept once per distinct
    combination; each launch keeps four numbers in flat arrays (start, duration, correlation, which
    combination): about 28 bytes a launch where a KernelRecord object took about 270, so five
    million tiny kernel events need less memory than their file. Records are made when read
    (``table[i]``, slices, iteration), each with ``index`` = its position.

    An Nsight Systems export is read into columns (``add_launches``): there grid, block, registers and
    shared memory are integer columns of their own (one value while all launches share it), and the
    combination is the rest (name, pid, tid, device, stream): an export of ten million kernels with as many
    distinct grids is ten million rows of numbers, not ten million combinations. ``columns()`` gives the
    same combinations, in the same order, either way."""

    __slots__ = (
        "_combos", "_corr", "_dur", "_getters", "_launch", "_over", "_shape", "_shape_ids", "_shapes", "_ts",
    )  # fmt: skip

    def __init__(self) -> None:
        self._shapes: list[_Shape] = []
        self._shape_ids: dict[_Shape, int] = {}
        self._ts = array("d")
        self._dur = array("d")
        self._corr = array("q")
        self._shape = array("i")
        self._launch: list[_Column] | None = None  # the launch columns, once add_launches was used
        self._over: dict[tuple[int, int], Any] = {}  # (field, launch) -> a value no column can hold
        self._combos: tuple[array[int], Sequence[_Shape]] | None = None  # columns()'s, made once
        self._getters: list[tuple[array[int] | None, int]] | None = None  # _readers()'s, made once

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
        if self._launch is not None:
            self._add_split(ts, dur, correlation, shape)
            return
        self._ts.append(ts)
        self._dur.append(dur)
        fits = correlation is not None and _NO_CORRELATION < correlation < 2**63
        self._corr.append(correlation if fits else _NO_CORRELATION)  # type: ignore[arg-type]
        self._shape.append(self._shape_id(shape))

    def base_id(self, shape: _Shape) -> int:
        """The id ``add_launches`` takes for a combination of name, pid, tid, device, stream and the reported
        values (KernelRecord's order, grid to shared memory None)."""
        return self._shape_id(shape)

    def add_launches(
        self, ts: Any, dur: Any, corr: Any, base: Any, launch: Sequence[Any], *, overrides: dict[tuple[int, int], Any]
    ) -> None:
        """Launches as columns (numpy arrays): start and duration (float64), correlation (int64,
        ``NO_CORRELATION`` for none), ``base_id``'s ids (int32), and the eight launch fields (int64,
        ``NO_VALUE`` for None) with ``overrides`` {(field, position among these): value} for what no int64 holds."""
        import numpy as np

        self._to_columns()
        assert self._launch is not None
        first = len(self._ts)
        self._ts.frombytes(np.ascontiguousarray(ts, dtype=np.float64).tobytes())
        self._dur.frombytes(np.ascontiguousarray(dur, dtype=np.float64).tobytes())
        self._corr.frombytes(np.ascontiguousarray(corr, dtype=np.int64).tobytes())
        self._shape.frombytes(np.ascontiguousarray(base, dtype=np.int32).tobytes())
        for column, values in zip(self._launch, launch, strict=True):
            column.extend(np.asarray(values, dtype=np.int64))
        for (f, i), value in overrides.items():
            self._over[(f, first + i)] = value
        self._combos = self._getters = None

    def reorder(self, first: int, order: Any) -> None:
        """Put the launches from position ``first`` on in ``order`` (numpy positions relative to ``first``):
        a reader that takes rows as the file has them and sorts them by start once."""
        import numpy as np

        arrays = [getattr(self, name) for name in ("_ts", "_dur", "_corr", "_shape")]
        if self._launch is not None:
            arrays += [column.data for column in self._launch if column.data is not None]
        for data in arrays:  # each array permuted where it is: one gathered copy of one column at a time
            if len(data) > first:
                view = np.frombuffer(data, dtype=data.typecode)
                view[first:] = view[first:][order]
                del view
        if self._launch is not None and self._over:
            where = np.empty(len(order), dtype=np.int64)
            where[order] = np.arange(len(order))
            self._over = {(f, i if i < first else first + int(where[i - first])): v
                          for (f, i), v in self._over.items()}  # fmt: skip
        self._combos = self._getters = None

    def _to_columns(self) -> None:
        """From combinations to launch columns (once: a table that took launches as columns keeps them)."""
        import numpy as np

        if self._launch is not None:
            return
        shapes, self._shapes, self._shape_ids = self._shapes, [], {}
        self._launch = [_Column() for _ in range(_LAUNCH_FIELDS)]
        if not shapes:
            return
        bases = np.array([self._shape_id((*s[:5], None, None, None, None, *s[9:])) for s in shapes], dtype=np.int32)
        values = [_launch_values(s) for s in shapes]
        stored = np.array([[NO_VALUE if v is None else v for v in map(_stored, row)] for row in values],
                          dtype=np.int64)  # fmt: skip
        of = _view(self._shape).astype(np.int64)
        self._shape = array("i")
        self._shape.frombytes(bases[of].tobytes())
        for f, column in enumerate(self._launch):
            column.extend(stored[of, f])
        for s, row in enumerate(values):
            for f, value in enumerate(row):
                if _stored(value) is None:
                    for i in np.flatnonzero(of == s).tolist():
                        self._over[(f, i)] = value

    def _add_split(self, ts: float, dur: float, correlation: int | None, shape: _Shape) -> None:
        import numpy as np

        fits = correlation is not None and _NO_CORRELATION < correlation < 2**63
        values = _launch_values(shape)
        self.add_launches(
            np.array([ts]), np.array([dur]), np.array([correlation if fits else _NO_CORRELATION]),
            np.array([self.base_id((*shape[:5], None, None, None, None, *shape[9:]))]),
            [np.array([NO_VALUE if _stored(v) is None else _stored(v)]) for v in values],
            overrides={(f, 0): v for f, v in enumerate(values) if _stored(v) is None},
        )  # fmt: skip

    def extend(self, other: KernelTable) -> None:
        """Another table's launches after these (a worker's block, in file order)."""
        if self._launch is not None or other._launch is not None:
            self._extend_columns(other)
            return
        remap = array("i", (self._shape_id(shape) for shape in other._shapes))
        self._ts.extend(other._ts)
        self._dur.extend(other._dur)
        self._corr.extend(other._corr)
        self._shape.extend(remap[i] for i in other._shape)

    def _extend_columns(self, other: KernelTable) -> None:
        import numpy as np

        self._to_columns()
        other._to_columns()
        assert other._launch is not None
        remap = np.array([self._shape_id(shape) for shape in other._shapes] or [0], dtype=np.int32)
        whole = slice(0, len(other))
        self.add_launches(
            _view_d(other._ts), _view_d(other._dur), _view(other._corr), remap[_view(other._shape)],
            [column.take(whole) for column in other._launch], overrides=other._over,
        )  # fmt: skip

    def map_names(self, intern: Any) -> None:
        """Give each distinct combination's name through ``intern`` (one string per kernel name)."""
        self._shapes = [(intern(s[0]), *s[1:]) for s in self._shapes]
        self._shape_ids = {s: i for i, s in enumerate(self._shapes)}
        self._combos = None

    def _readers(self) -> list[tuple[array[int] | None, int]]:
        """Each launch column's array, or its one value (made once after a change: ``_full_shape`` runs per
        launch)."""
        if self._getters is None:
            assert self._launch is not None
            self._getters = [(column.data, column.value) for column in self._launch]
        return self._getters

    def _full_shape(self, i: int) -> _Shape:
        """Launch ``i``'s combination, whole (KernelRecord's fields but ts, dur, correlation and index)."""
        s = self._shapes[self._shape[i]]
        if self._launch is None:
            return s
        readers = self._getters or self._readers()
        v: list[Any] = [value if data is None else data[i] for data, value in readers]
        if NO_VALUE in v or -_INT32 in v:
            v = self._decoded(v, i, readers)
        grid = None if v[0] is None else (v[0], v[1], v[2])
        block = None if v[3] is None else (v[3], v[4], v[5])
        return (s[0], s[1], s[2], s[3], s[4], grid, block, v[6], v[7], *s[9:])

    def _decoded(self, values: list[Any], i: int, readers: list[tuple[array[int] | None, int]]) -> list[Any]:
        """Launch ``i``'s fields with None, and the overrides, where the columns hold ``NO_VALUE``."""
        out: list[Any] = []
        for f, (value, (data, _)) in enumerate(zip(values, readers, strict=True)):
            if data is not None and data.typecode == "i" and value == -_INT32:
                value = NO_VALUE
            out.append(self._over.get((f, i)) if value == NO_VALUE else value)
        return out

    def _record(self, i: int) -> KernelRecord:
        s = self._shapes[self._shape[i]] if self._launch is None else self._full_shape(i)
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
        if self._launch is not None:
            return self._since_columns(max(start, 0))
        record = self._record
        return (record(i) for i in range(max(start, 0), len(self._ts)))

    def _since_columns(self, start: int) -> Iterator[KernelRecord]:
        """``since`` of a columnar table: each column a chunk at a time as Python values, zipped."""
        shapes, chunk = self._shapes, _Combinations.CHUNK
        for lo in range(start, len(self._ts), chunk):
            hi = min(lo + chunk, len(self._ts))
            at = slice(lo, hi)
            values = [self._values(f, at, lo) for f in range(_LAUNCH_FIELDS)]
            own = zip(range(lo, hi), self._ts[at], self._dur[at], self._corr[at], self._shape[at], strict=True)
            for (i, ts, dur, corr, b), gx, gy, gz, bx, by, bz, regs, smem in zip(own, *values, strict=True):
                s = shapes[b]
                yield KernelRecord(
                    s[0], ts, dur, s[1], s[2], s[3], s[4], None if corr == _NO_CORRELATION else corr,
                    None if gx is None else (gx, gy, gz), None if bx is None else (bx, by, bz), regs, smem,
                    s[9], s[10], s[11], s[12], i, s[13], s[14],
                )  # fmt: skip

    def _values(self, field: int, at: Any, offset: int = 0) -> list[Any]:
        """A launch field at these positions (numpy positions, or a slice from ``offset``) as Python values:
        None, or the override, where the column holds ``NO_VALUE``."""
        import numpy as np

        assert self._launch is not None
        raw = self._launch[field].take(at)
        out: list[Any] = raw.tolist()
        for n in np.flatnonzero(raw == NO_VALUE).tolist():
            i = offset + n if type(at) is slice else int(at[n])
            out[n] = self._over.get((field, i))
        return out

    def __iter__(self) -> Iterator[KernelRecord]:
        return self.since(0)

    def combinations(self) -> tuple[array[int], list[KernelRecord]] | None:
        """Each launch's combination id, and a record of each combination (what its launches share; start,
        duration and index 0, no correlation), where a launch is wholly its combination's; None for a table read
        as columns (its launches differ in columns no combination holds). A pass that reads only what launches
        share reads each combination once and the ids at C speed, not a record made for each launch."""
        if self._launch is not None:
            return None
        return self._shape, [_shared_record(shape) for shape in self._shapes]

    def starts(self) -> array[float]:
        """Every launch's start, in order (without making ``columns()``'s combinations)."""
        return self._ts

    def columns(self) -> tuple[array[float], array[float], array[int], array[int], list[_Shape]]:
        """The flat arrays (start, duration, correlation or ``NO_CORRELATION``, combination id) and the
        combinations: passes over every launch read these at C speed instead of making records. A table
        read as columns makes its combinations here, once (past ``_MATERIALISED`` of them, each when read)."""
        if self._launch is None:
            return self._ts, self._dur, self._corr, self._shape, self._shapes
        if self._combos is None:
            self._combos = self._combinations()
        ids, shapes = self._combos
        return self._ts, self._dur, self._corr, ids, shapes  # type: ignore[return-value]

    def _combinations(self) -> tuple[array[int], Sequence[_Shape]]:
        """Each launch's distinct combination of every field but its own numbers, numbered in order of first
        appearance (what ``add`` numbers), with numpy: a sort of keys, no object per launch."""
        import numpy as np

        assert self._launch is not None
        numbers, firsts = self._first_appearance(_view(self._shape), len(self._shapes), range(_LAUNCH_FIELDS))
        ids = array("i")
        ids.frombytes(memoryview(np.ascontiguousarray(numbers, dtype=np.int32)).cast("B"))  # type: ignore[arg-type]
        del numbers
        if len(firsts) <= _MATERIALISED:
            return ids, [self._full_shape(i) for i in firsts.tolist()]
        return ids, _Combinations(self, firsts)

    def _first_appearance(self, key: Any, bound: int, fields: Sequence[int]) -> tuple[Any, Any]:
        """Launches numbered by their distinct (``key``, launch ``fields``), in order of first appearance (int32),
        and each number's first launch (numpy). ``key``: a number per launch below ``bound`` (an int64 array is
        consumed: it becomes the combined key). A column adds its values less its least where their span fits
        the key's bits (no sort of its own), else their ranks."""
        import numpy as np

        assert self._launch is not None
        key = np.asarray(key, dtype=np.int64)
        for f in fields:
            column = self._launch[f]
            if column.data is None:
                continue
            values = _view(column.data)
            low = int(values.min()) if len(values) else 0
            size = (int(values.max()) if len(values) else 0) - low + 1
            if bound * size >= 1 << 62:  # too wide to add as is: the values' ranks
                _, values = np.unique(values, return_inverse=True)
                values, low = values.reshape(-1), 0
                size = int(values.max()) + 1 if len(values) else 1
            if bound * size >= 1 << 62:
                _, key = np.unique(key, return_inverse=True)
                key = key.reshape(-1)
                bound = int(key.max()) + 1 if len(key) else 1
            key *= size
            if low:
                key -= low  # before adding: key * size - low + values is below bound * size, and so is each step
            key += values
            bound *= size
            del values
        bound += self._odd_keys(key, bound, fields)
        if bound << max(len(key), 1).bit_length() <= 1 << 63:
            return _numbered(key, bound)
        return _numbered_by_unique(key)

    def _odd_keys(self, key: Any, bound: int, fields: Sequence[int]) -> int:
        """Launches holding values no column holds (overrides), numbered apart from ``bound`` on, the same values
        together; how many such numbers were given."""
        odd = {(f, i): v for (f, i), v in self._over.items() if f in fields}
        if not odd:
            return 0
        held: dict[int, list[tuple[int, Any]]] = {}
        for (f, i), value in sorted(odd.items(), key=lambda item: item[0]):
            held.setdefault(i, []).append((f, value))
        numbers: dict[tuple[int, tuple[tuple[int, Any], ...]], int] = {}
        for i, values in held.items():
            key[i] = bound + numbers.setdefault((int(key[i]), tuple(values)), len(numbers))
        return len(numbers)

    def base_columns(self) -> tuple[array[int], Sequence[_Shape]]:
        """Each launch's number into combinations that hold at least its name, pid, tid, device and stream (read
        as columns: without grid, block, registers and shared memory; else the whole combination), without making
        ``columns()``'s: what a pass reading only those fields needs."""
        return self._shape, self._shapes

    def launch_groups(self, key: Callable[[str], Any]) -> tuple[Any, Any]:
        """Every launch numbered by its (``key`` of its name, grid, block), in order of first appearance, and
        each number's first launch (numpy int64 arrays): the profile's kernel groups, made from the columns
        without a tuple per combination."""
        import numpy as np

        if not len(self):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self._launch is None:
            keys: dict[Any, int] = {}
            of_shape = np.array([keys.setdefault((key(str(s[0])), s[5], s[6]), len(keys)) for s in self._shapes])
            groups = of_shape[_view(self._shape)]
            _, first = np.unique(groups, return_index=True)
            return groups, first
        names: dict[Any, int] = {}
        of_base = np.array([names.setdefault(key(str(s[0])), len(names)) for s in self._shapes], dtype=np.int64)
        return self._first_appearance(of_base[_view(self._shape)], len(names), range(6))

    def names_of(self, positions: Any) -> list[Any]:
        """The names of the launches at these positions (numpy)."""
        shapes = self._shapes
        return [shapes[b][0] for b in _view(self._shape)[positions].tolist()]

    def combination(self, i: int) -> _Shape:
        """Launch ``i``'s combination, whole (KernelRecord's fields but ts, dur, correlation and index)."""
        return self._full_shape(i)

    def device_ids(self) -> set[int]:
        """The devices the launches ran on, from the distinct combinations (a launch's device is in its own, and
        every combination is some launch's): no pass over the launches."""
        return {d for s in self._shapes if isinstance(d := s[3], int) and not isinstance(d, bool)}

    def carries_metrics(self) -> bool:
        """Whether any launch carries blocks or warps per SM (Cuspy's and Nsight Systems' never do)."""
        return any(s[9].spelling != "missing" or s[10].spelling != "missing" for s in self._shapes)

    def carries_profiler_occupancy(self) -> bool:
        """Whether any launch carries Kineto's own occupancy object (PyTorch 2.12 on)."""
        return any(s[14] is not None for s in self._shapes)

    def fingerprint(self) -> str:
        """What work the trace recorded, independent of the machine: a hash of its distinct kernel
        names with their grid and block (not the reported values, which depend on the GPU)."""
        # wizard.schemas.work_fingerprint(sorted({(name, grid, block)}, key=repr)), streamed: the list's repr is
        # its items' reprs joined, so an export of ten million distinct grids never holds it as one string
        texts = self._sorted_work() if self._launch is not None else None
        if texts is not None:
            digest = _work_digest(texts)
            if digest is not None:
                return digest
        found = _work_digest(iter(sorted({repr((s[0], s[5], s[6])) for s in self.columns()[4]})))
        assert found is not None  # a sorted set's texts rise
        return found

    def _sorted_work(self) -> Iterator[str] | None:
        """The distinct (name, grid, block) reprs in repr order, from the columns without a string per launch
        held (a set of ten million reprs was ~135 bytes a launch at the inspection's peak, issue 47 item 7): the
        combinations' first launches (``columns()``) sorted with numpy by keys that order integers as their decimal
        text does, the same triple once, made a chunk at a time. None where there are few combinations (the set is
        small), a value is not a plain integer, or a grid or block is partly None (the set's sort takes those)."""
        import numpy as np

        combinations = self.columns()[4]
        if not isinstance(combinations, _Combinations) or any(f < 6 for f, _ in self._over):
            return None
        if not all(type(s[0]) is str for s in self._shapes):
            return None
        firsts = combinations.firsts
        names = sorted({repr(s[0]) for s in self._shapes})
        rank_of = {text: n for n, text in enumerate(names)}
        of_base = np.array([rank_of[repr(s[0])] for s in self._shapes], dtype=np.int32)
        keys = [k for k in [of_base[_view(self._shape)[firsts]]] if len(k) and k.min() != k.max()]
        for lo in (0, 3):  # grid, block: None in all three fields or in none (else the set's sort takes them)
            columns = [self._launch_column(f) for f in range(lo, lo + 3)]
            values = [_view(c.data)[firsts] for c in columns if c.data is not None]  # a column of one value orders none
            none = [c.value == NO_VALUE for c in columns if c.data is None]
            none += [v == (-_INT32 if v.dtype == np.int32 else NO_VALUE) for v in values]
            if any(bool(np.any(n != none[0])) for n in none[1:]):
                return None
            del none
            for v in values:
                keys += [k for k in _text_keys(v) if k.min() != k.max()]  # a key all alike orders nothing
            del values
        keys = [k for k in keys if len(k) and k.min() != k.max()]
        if not keys:
            return self._work_texts(firsts[:1])
        order = np.lexsort(keys[::-1])
        repeated = np.ones(max(len(order) - 1, 0), dtype=bool)
        for key in keys:
            for lo in range(0, len(order) - 1, _CHUNK):  # a chunk at a time: no sorted copy of a key held whole
                ranked = key[order[lo : lo + _CHUNK + 1]]
                repeated[lo : lo + _CHUNK] &= ranked[1:] == ranked[:-1]
        del keys
        kept = order[np.concatenate(([True], ~repeated))[: len(order)]]
        del order, repeated
        return self._work_texts(firsts[kept])

    def _launch_column(self, f: int) -> _Column:
        assert self._launch is not None
        return self._launch[f]

    def _work_texts(self, positions: Any) -> Iterator[str]:
        """The (name, grid, block) reprs of the launches at these positions, a chunk at a time."""
        shapes = self._shapes
        for lo in range(0, len(positions), _Combinations.CHUNK):
            at = positions[lo : lo + _Combinations.CHUNK]
            v = [self._values(f, at) for f in range(6)]
            for b, gx, gy, gz, bx, by, bz in zip(_view(self._shape)[at].tolist(), *v, strict=True):
                grid = None if gx is None else (gx, gy, gz)
                yield repr((shapes[b][0], grid, None if bx is None else (bx, by, bz)))


_POWERS = [10**n for n in range(1, 19)]


def _text_keys(values: Any) -> list[Any]:
    """Keys that order integers as their decimal text followed by ``,`` or ``)`` does (as in a tuple's repr: ``-``
    before digits, a prefix before what extends it), None (the storage's ``-2**31`` in int32, ``NO_VALUE`` in int64)
    last: whether None, whether not negative, the magnitude's digits left-aligned in 19 places, and its digit count,
    for ``np.lexsort`` (first key first here). Each key equal only for the same value; made a chunk at a time."""
    import numpy as np

    none_value = -_INT32 if values.dtype == np.int32 else NO_VALUE
    none = values == none_value
    sign = values >= 0
    padded = np.empty(len(values), dtype=np.uint64)
    digits = np.empty(len(values), dtype=np.int8)
    powers = np.array(_POWERS, dtype=np.uint64)
    scale = np.array([10**n for n in range(19, -1, -1)], dtype=np.uint64)
    for lo in range(0, len(values), _CHUNK):
        v = values[lo : lo + _CHUNK].astype(np.int64)
        magnitude = np.abs(np.where(v == none_value, 0, v)).astype(np.uint64)
        count = np.searchsorted(powers, magnitude, side="right") + 1
        padded[lo : lo + _CHUNK] = magnitude * scale[count]
        digits[lo : lo + _CHUNK] = count
    return [none, sign, padded, digits]


_CHUNK = 1 << 18  # launches a numbering pass takes at once (its temporaries are this many, not one per launch)


def _numbered(key: Any, bound: int) -> tuple[Any, Any]:
    """``key`` (int64, each below ``bound``, consumed) numbered by first appearance (int32) and each number's first
    position: one in-place sort of key and position packed in one int64 (``bound`` times the positions' bits fits),
    then chunks, so the temporaries are ~13 bytes a launch where ``np.unique``'s were ~60 (issue 47 item 7)."""
    import numpy as np

    n = len(key)
    if not n:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    shift = n.bit_length()
    index = np.int32 if n < 1 << 31 else np.int64
    packed = key
    packed <<= shift
    for lo in range(0, n, _CHUNK):
        packed[lo : lo + _CHUNK] |= np.arange(lo, min(lo + _CHUNK, n), dtype=np.int64)
    packed.sort()  # by key, then position: a key's first launch comes first
    group = np.empty(n, dtype=index)  # each launch's key's number in key order
    parts: list[Any] = []
    last, groups = -1, 0
    for lo in range(0, n, _CHUNK):
        chunk = packed[lo : lo + _CHUNK]
        keys = chunk >> shift
        new = np.empty(len(keys), dtype=bool)
        new[0] = keys[0] != last
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        where = (chunk & ((1 << shift) - 1)).astype(index)
        numbers: Any = np.cumsum(new, dtype=index)
        numbers += groups - 1
        group[where] = numbers
        parts.append(where[new])
        last, groups = int(keys[-1]), int(numbers[-1]) + 1
        del keys, new, where, numbers, chunk
    del packed, key
    firsts = np.concatenate(parts)  # each key's first launch, in key order
    del parts
    first = np.zeros(n, dtype=bool)
    first[firsts] = True
    rank: Any = np.cumsum(first, dtype=index)
    rank -= 1
    rank = rank[firsts]  # a key's number in order of first appearance
    del firsts
    for lo in range(0, n, _CHUNK):
        group[lo : lo + _CHUNK] = rank[group[lo : lo + _CHUNK]]
    return group, np.flatnonzero(first).astype(index)  # held by columns(): 4 bytes a combination, not 8


def _numbered_by_unique(key: Any) -> tuple[Any, Any]:
    """``_numbered`` where key and position do not fit one int64: with ``np.unique``."""
    import numpy as np

    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[inverse.reshape(-1)], first[order]


def _work_digest(texts: Iterator[str]) -> str | None:
    """``work_fingerprint``'s hash of texts given in strictly rising order, or None where one does not rise (then
    the caller sorts a set instead: the order is checked, never assumed)."""
    from wizard.sha256 import sha256  # no OpenSSL loaded for a few kilobytes

    digest = sha256(b"[")
    last: str | None = None
    for text in texts:
        if last is not None and not last < text:
            return None
        digest.update(f"{', ' if last is not None else ''}{text}".encode("utf-8", "surrogateescape"))
        last = text
    digest.update(b"]")
    return digest.hexdigest()[:16]


def _view_d(data: array[float]) -> Any:
    import numpy as np

    return np.frombuffer(data, dtype=np.float64) if len(data) else np.zeros(0)


class _Combinations(Sequence[_Shape]):
    """A columnar table's combinations, each made when read (``columns()`` past ``_MATERIALISED`` of them):
    an export whose every launch has its own grid would otherwise hold a tuple per launch."""

    CHUNK = 1 << 14

    def __init__(self, table: KernelTable, firsts: Any) -> None:
        self.table = table
        self.firsts = firsts  # numpy: each combination's first launch

    def __len__(self) -> int:
        return len(self.firsts)

    @overload
    def __getitem__(self, j: int) -> _Shape: ...
    @overload
    def __getitem__(self, j: slice) -> list[_Shape]: ...
    def __getitem__(self, j: int | slice) -> _Shape | list[_Shape]:
        if isinstance(j, slice):
            return [self.table._full_shape(int(i)) for i in self.firsts[j]]
        return self.table._full_shape(int(self.firsts[j]))

    def __iter__(self) -> Iterator[_Shape]:
        t = self.table
        assert t._launch is not None
        for lo in range(0, len(self.firsts), self.CHUNK):
            at = self.firsts[lo : lo + self.CHUNK]
            bases = [t._shapes[b] for b in _view(t._shape)[at].tolist()]
            v = [t._values(f, at) for f in range(_LAUNCH_FIELDS)]
            for s, gx, gy, gz, bx, by, bz, regs, smem in zip(bases, *v, strict=True):
                grid = None if gx is None else (gx, gy, gz)
                block = None if bx is None else (bx, by, bz)
                yield (s[0], s[1], s[2], s[3], s[4], grid, block, regs, smem, *s[9:])


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


class RuntimeCall(msgspec.Struct, frozen=True, eq=False):
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
        # add_columns' numbering of a reader's thread keys and names: (the reader's list, the ids of its first keys)
        self._mapped: dict[str, tuple[Sequence[Any], array[int]]] = {}

    def __len__(self) -> int:
        return len(self.correlations)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without add_columns' numbering, which holds the reader's lists."""
        return {**self.__dict__, "_mapped": {}}

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

    def add_columns(
        self, correlations: Any, starts: Any, durations: Any, threads: Any, names: Any, *,
        thread_keys: Sequence[tuple[Any, Any]], name_list: Sequence[str],
    ) -> None:  # fmt: skip
        """Calls as numpy columns (an Nsight Systems export's): correlation (int64, ``NO_CORRELATION`` for none),
        start and duration (float64), thread and name as numbers into ``thread_keys`` (``(pid, tid)`` each)
        and ``name_list``), as ``add`` of each call in turn would keep them."""
        import numpy as np

        if not len(starts):
            return
        thread_ids = np.array(self._ids_of("threads", thread_keys, self._thread_id) or [0], dtype=np.int32)
        name_ids = np.array(self._ids_of("names", name_list, lambda n: self._name_id(str(n))) or [0], dtype=np.int32)
        # frombytes of the arrays' own buffers, not of tobytes() copies, and the last end a chunk at a time: each
        # temporary of five million calls was fresh memory, ~0.1 µs a call to fault in on this project's machines
        self.correlations.frombytes(_bytes_of(np.ascontiguousarray(correlations, dtype=np.int64)))
        self.threads.frombytes(_bytes_of(thread_ids[threads]))
        self.starts.frombytes(_bytes_of(np.ascontiguousarray(starts, dtype=np.float64)))
        ends = [np.where(d > 0, s + d, s).max() for s, d in _chunks(starts, durations)]
        self.last_end = max(self.last_end, float(np.max(ends)))  # a NaN end still leaves last_end as it was
        self.names.frombytes(_bytes_of(name_ids[names]))

    def _ids_of(self, which: str, keys: Sequence[Any], number: Callable[[Any], int]) -> array[int]:
        """The ids of a reader's ``keys`` (a list that only grows between add_columns' calls, as a reader's do): only
        the keys added since the last call with the same list are numbered (numbering every key each batch was
        batches times keys: minutes for an export whose every call has a name of its own)."""
        kept = self._mapped.get(which)
        ids = kept[1] if kept is not None and kept[0] is keys and len(kept[1]) <= len(keys) else array("i")
        ids.extend(number(key) for key in keys[len(ids) :])
        self._mapped[which] = (keys, ids)
        return ids

    def reorder(self, first: int, order: Any) -> None:
        """Put the calls from position ``first`` on in ``order`` (numpy positions relative to ``first``): a reader
        that adds calls as the file has them, a batch at a time, and sorts them by start once (``add_columns``'s
        batches in place, where one whole copy of each column was fresh memory: ~0.3 s at 5 million calls)."""
        import numpy as np

        for data in (self.correlations, self.threads, self.starts, self.names):
            view = np.frombuffer(data, dtype=data.typecode)
            view[first:] = view[first:][order]  # one gathered copy of one column at a time
            del view
        self._lookup = None
        self._lookup_size = 0

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
        hits = map(correlations.__contains__, self.correlations)  # C's loop over millions of calls, not Python's
        for i in itertools.compress(range(len(self.correlations)), hits):
            pid, tid = self._thread_keys[self.threads[i]]
            out[self.correlations[i]] = RuntimeCall(pid, tid, self.starts[i], self._name_list[self.names[i]])
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


class OpInfo(msgspec.Struct, frozen=True):
    name: str
    input_dims: str | None
    input_types: str | None
    call_stack: str | None


SCAN_BACK = 100_000  # ``containing`` looks at most this many intervals back from a time (by start order)
_FANOUT = 16  # children per block of ``_PagedMaxima``: a walk steps over at most this many blocks per level
_PAGE = _FANOUT**4  # intervals per page (65,536): the blocks over one page are built when a query first reaches it


def _max_of(values: Sequence[float]) -> float:
    """The largest value that is not NaN (NaN where all are): what ``v >= t`` can hold for."""
    top = max(values)
    if math.isnan(top):  # the first was NaN: max() compared nothing past it (every comparison with NaN is false)
        top = max((v for v in values if not math.isnan(v)), default=math.nan)
    return top


def _block_maxima(level: Sequence[float]) -> array[float]:
    """``_max_of`` each aligned block of ``_FANOUT`` (the last one may be short): ``max`` called on each block's
    values straight from the iterator (no slice, no Python loop), the rare NaN-first blocks done again."""
    out = array("d", map(max, *([iter(level)] * _FANOUT)))  # whole blocks only: a short last one is dropped
    if len(out) * _FANOUT < len(level):
        out.append(max(level[len(out) * _FANOUT :]))
    if any(map(math.isnan, out)):
        for k, top in enumerate(out):
            if math.isnan(top):
                out[k] = _max_of(level[k * _FANOUT : (k + 1) * _FANOUT])
    return out


def _last_in_page(levels: list[Sequence[float]], lo: int, hi: int, t: float) -> int:
    """The largest j in [lo, hi] with ``levels[0][j] >= t``, or -1: walking left over the largest aligned blocks
    that fit, down into the first block whose maximum holds (one of its children then does)."""
    j = hi
    while j >= lo:
        k, width = 0, 1
        while k + 1 < len(levels) and (j + 1) % (width * _FANOUT) == 0 and j + 1 - width * _FANOUT >= lo:
            k, width = k + 1, width * _FANOUT
        block = (j + 1) // width - 1
        if levels[k][block] >= t:
            while k:
                k -= 1
                below, first = levels[k], block * _FANOUT
                block = first + _FANOUT - 1
                while block > first and not below[block] >= t:
                    block -= 1
            return block
        j -= width
    return -1


class _Window(Sequence[float]):
    """A page of a thread's ends read in place: ``_PagedMaxima`` kept a copy of every page it built (8 bytes an
    interval of each thread queried, to the end of the inspection), where only its block maxima are its own."""

    __slots__ = ("first", "size", "values")

    def __init__(self, values: array[float], first: int, size: int) -> None:
        self.values, self.first, self.size = values, first, size

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[float]: ...
    def __getitem__(self, i: int | slice) -> float | Sequence[float]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        if not 0 <= i < self.size:
            raise IndexError(i)
        return self.values[self.first + i]


class _PagedMaxima:
    """Maxima of a thread's interval ends (in start order) over aligned blocks of 16, 256, 4,096 and 65,536:
    "the latest interval at or before index i that ends at or after t" in O(16 x levels) steps instead of a scan
    back over up to 100,000 intervals. Built a page of 65,536 at a time, as queries reach it, so one query on a
    thread of millions costs what its window costs."""

    __slots__ = ("ends", "pages", "size")

    def __init__(self, ends: array[float]) -> None:
        self.ends, self.size = ends, len(ends)
        self.pages: dict[int, list[Sequence[float]]] = {}

    def fits(self, ends: array[float]) -> bool:
        """Whether these maxima are still those of ``ends`` (sorting replaces the array; adding lengthens it)."""
        return self.ends is ends and self.size == len(ends)

    def _page(self, page: int) -> list[Sequence[float]]:
        levels = self.pages.get(page)
        if levels is None:
            level: Sequence[float] = self.ends[page * _PAGE : (page + 1) * _PAGE]
            levels = [_Window(self.ends, page * _PAGE, len(level))]  # the ends themselves: no copy kept per page
            while len(level) > 1:
                level = _block_maxima(level)
                levels.append(level)
            self.pages[page] = levels
        return levels

    def last_at_least(self, lo: int, hi: int, t: float) -> int:
        """The largest j in [lo, hi] with ``ends[j] >= t`` (a NaN end never is), or -1."""
        page = hi // _PAGE
        while hi >= lo:
            first = page * _PAGE
            j = _last_in_page(self._page(page), max(lo - first, 0), hi - first, t)
            if j >= 0:
                return first + j
            hi, page = first - 1, page - 1
        return -1


def _renumbered(ids: array[int], new_ids: list[int]) -> array[int]:
    """``new_ids[i]`` for each i of ``ids``: with numpy where this process loaded it (a big file's parent has, for the
    health checks: 40x faster on a merged block's ops), else a lookup per id."""
    np = sys.modules.get("numpy")
    if np is not None and len(ids) > 1_000:
        table = np.array(new_ids, dtype=np.intc)  # C's int: array("i")'s items
        return array("i", table[np.frombuffer(ids, dtype=np.intc)].tobytes())
    return array("i", map(new_ids.__getitem__, ids))


def _numpy_start_order(thread: _ThreadIntervals) -> bool:
    """``IntervalIndex._sorted``'s order (by start, the longer first, ties as added) by numpy's stable lexsort, where
    this process loaded numpy and the thread is big (a .pftrace's slices come as they close, the inner first: its
    20,000 launches' sort was 4% of an inspection's CPU in Python). Not with a NaN: Python's sort and numpy's place
    it differently (numpy's last), so those keep the Python sort. False where it did not sort."""
    np = sys.modules.get("numpy")
    if np is None or len(thread.starts) <= 1_000:
        return False
    starts = np.frombuffer(thread.starts, dtype=np.float64)
    ends = np.frombuffer(thread.ends, dtype=np.float64)
    if np.isnan(starts).any() or np.isnan(ends).any():
        return False
    order = np.lexsort((-ends, starts))  # the last key first: by start, then by end, the later first
    thread.starts = array("d", starts[order].tobytes())
    thread.ends = array("d", ends[order].tobytes())
    thread.refs = array("i", np.frombuffer(thread.refs, dtype=np.intc)[order].tobytes())
    return True


class _ThreadIntervals(msgspec.Struct, eq=False):
    starts: array[float] = msgspec.field(default_factory=lambda: array("d"))
    ends: array[float] = msgspec.field(default_factory=lambda: array("d"))
    refs: array[int] = msgspec.field(default_factory=lambda: array("i"))
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
        self._maxima: dict[tuple[Any, Any], _PagedMaxima] = {}  # per thread queried: built on its first query

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
        refs = [self.ref(d) for d in other._descriptors]
        for key, theirs in other._threads.items():
            mine = self._threads.get(key)
            if mine is None:
                mine = self._threads[key] = _ThreadIntervals()
            if mine.starts and theirs.starts and theirs.starts[0] < mine.starts[-1]:
                mine.sorted_ = False
            mine.sorted_ = mine.sorted_ and theirs.sorted_
            mine.starts.extend(theirs.starts)
            mine.ends.extend(theirs.ends)
            mine.refs.extend(_renumbered(theirs.refs, refs))
        self._last = None

    def _sorted(self, thread: _ThreadIntervals) -> _ThreadIntervals:
        if not thread.sorted_:
            if not _numpy_start_order(thread):
                order = sorted(range(len(thread.starts)), key=lambda i: (thread.starts[i], -thread.ends[i]))
                thread.starts = array("d", (thread.starts[i] for i in order))
                thread.ends = array("d", (thread.ends[i] for i in order))
                thread.refs = array("i", (thread.refs[i] for i in order))
            thread.sorted_ = True
        return thread

    def containing(self, pid: Any, tid: Any, t: float, limit: int = 64) -> list[Any]:
        """Descriptors of intervals containing t, outermost first (at most ``limit``): of the ``SCAN_BACK``
        intervals starting last at or before t, the ``limit`` latest-starting that end at or after t."""
        thread = self._threads.get((pid, tid))
        if thread is None or limit < 1:
            return []
        thread = self._sorted(thread)
        maxima = self._maxima.get((pid, tid))
        if maxima is None or not maxima.fits(thread.ends):
            maxima = self._maxima[(pid, tid)] = _PagedMaxima(thread.ends)
        i = bisect.bisect_right(thread.starts, t) - 1
        lo = max(i - SCAN_BACK + 1, 0)
        if limit == 1:  # innermost: no list to sort
            i = maxima.last_at_least(lo, i, t)
            return [self._descriptors[thread.refs[i]]] if i >= 0 else []
        found: list[tuple[float, float, int]] = []
        while len(found) < limit and (i := maxima.last_at_least(lo, i, t)) >= 0:
            found.append((thread.starts[i], -thread.ends[i], thread.refs[i]))
            i -= 1
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
