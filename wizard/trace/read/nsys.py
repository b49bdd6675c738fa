"""Reader for Nsight Systems' SQLite export (``nsys export --type sqlite``): the same compact contents the JSON
reader gives, so every pass reads it unchanged.

What is read, table by table (nsys's schema, as exported by 2026.1 and 2026.2; columns missing in other
versions are skipped, never guessed):

- ``CUPTI_ACTIVITY_KIND_KERNEL``: one kernel each; the row is (pid = device, tid = stream) as Kineto writes it;
  grid, block, registers, static + dynamic shared memory. nsys prints no blocks/warps per SM or occupancy.
- ``CUPTI_ACTIVITY_KIND_RUNTIME``: runtime (eventClass 0) and driver (1) calls, named through ``StringIds``
  without nsys's version suffix (``cudaLaunchKernel_v7000`` is ``cudaLaunchKernel``); pid and tid from
  ``globalTid`` (nsys: pid = bits 24-47, tid = bits 0-23). Rows of any other eventClass are not calls: the
  table also holds a CUDA-backtrace row (67, TRACE_PROCESS_EVENT_CUDABACKTRACE) beside each call whose stack was
  taken, with the call's interval and correlation id (NVIDIA's Nsight Systems Analysis Guide, "SQLite Schema
  Event Values": CUDA Event Class Values 0 runtime, 1 driver, 67 CUDA backtrace).
- ``CUPTI_ACTIVITY_KIND_MEMCPY`` / ``_MEMSET``: GPU copies and sets.
- ``NVTX_EVENTS``: ranges; PyTorch's ``emit_nvtx`` ranges (``aten::mm, seq = 3, op_id = 7, sizes = ...``) are
  its ops (``cpu_op``), named by the text before the first of those fields; other ranges are annotations.
- ``TARGET_INFO_GPU``: the devices, as ``deviceProperties``; ``META_DATA_EXPORT``: nsys's version;
  ``DIAGNOSTIC_EVENT`` (warnings and errors): what nsys says of its own collection.
- ``PROFILER_OVERHEAD`` (nsys's and CUPTI's own work: buffer flushes, instrumentation, initialisation) and
  ``CUPTI_ACTIVITY_KIND_OVERHEAD`` (CUPTI's overhead records: module and lazy function loading), named through
  ``StringIds``: the profiler-overhead records Kineto writes as ``overhead`` events. They are kept apart from
  the window (nsys's initialisation runs long before the first call), which the check clips them to.

Rows are read in ``start`` order (``ORDER BY``): nsys promises no order (the exporter creates no index, and issue
45 quotes the 2025.6 release notes: rows are not exported in timestamp order), so none is assumed. A table missing
a column is read without it (NULL), never dropped, as long as it has ``start``; the columns that were missing are
listed in the contents' ``nsys`` metadata and said in a note.

Kernels and calls are read a batch of whole columns at a time: SQLite writes each integer column of a range of
rowids (at most 40,000 rows) as one JSON array, which numpy reads in one call (``wizard.trace.read.sqlite_columns``: a
batch holding anything else is read again row by row, as every other table is): the whole inspection of 1M kernels
and 1M calls takes ~1.7 s of CPU, where Python's ``sqlite3`` took 3.3 s to make their rows' tuples alone (issue 48;
benchmarks/results-2026-12-02-nsysfast.md, -round4-final.md).

Correlation ids are per process in CUPTI; an export of several processes keeps them apart by putting the
process's index (in order of pid) above bit 40 (``PROCESS_SHIFT``), so ids still rise in launch order within
a process. The file is untrusted: opened by ``wizard.trace.read.sqlite`` (read-only and immutable, or inflated
into memory from a ``.sqlite.gz``; ``trusted_schema`` off; temporary storage in memory and SQLite's heap bounded;
the whole read bounded in time: ``NsysConfig``), only fixed queries over ordinary tables (never views, never
virtual tables or their shadows) whose columns were checked first, every value's type checked, text cut.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from wizard.errors import InputFileError
from wizard.trace.read.collector import ANNOTATION_CAP, MAX_NAME, Collector, TraceContents
from wizard.trace.read.events import Event, EventArgs
from wizard.trace.read.records import NO_VALUE, PROCESS_SHIFT, ReportedValue
from wizard.trace.read.sqlite import (
    Database,
    SqliteBounds,
    columns,
    database_contents,
    integer,
    read_database_file,
    text_column,
)
from wizard.trace.read.sqlite_columns import ColumnBatches, rowid_name
from wizard.untrusted import cut, visible

_VERSION_SUFFIX = re.compile(r"_v\d{4,}$")  # nsys names API calls with the version they entered CUDA in
# torch/csrc/profiler/util.cpp getNvtxStr: "name[, seq = N][, op_id = N][, sizes = [...]][, input_op_ids = ...]"
_TORCH_NVTX = re.compile(r"^(?P<name>[^,]+), (?:seq = -?\d+|op_id = \d+|sizes = \[)")
_RANGE_TYPES = frozenset({59, 60, 70, 71})  # NvtxPushPopRange, NvtxStartEndRange and their NVTXT forms
MAX_DIAGNOSTICS = 20  # nsys's own warnings and errors kept, as evidence
BATCH = 50_000  # rows handed to the collector at once
_SEVERITY = {2: "warning", 3: "error"}  # ENUM_DIAGNOSTIC_SEVERITY_LEVEL; info and verbose are not evidence
_RUNTIME_CLASS: dict[int | None, str] = {
    0: "cuda_runtime",
    1: "cuda_driver",
}  # ENUM_NSYS_EVENT_CLASS: the calls (67 is a backtrace)
_OVERHEAD_TABLES = ("PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD")
_KERNEL_COLUMNS = (
    "start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName", "shortName",
    "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
    "dynamicSharedMemory",
)  # fmt: skip
_RUNTIME_COLUMNS = ("start", "end", "eventClass", "globalTid", "correlationId", "nameId")
_MISSING = ReportedValue(None, "missing")  # nsys writes no blocks/warps per SM, no occupancy
EXACT = 1 << 53  # nanosecond starts a double holds exactly (104 days): sorted as the doubles they are read into


NsysConfig = SqliteBounds  # the bounds of one read (tests shrink them)
WHAT = "an Nsight Systems SQLite export"
# the tables read, by name: each must be an ordinary table where it exists (never a virtual table or a shadow)
TABLES = (
    "StringIds", "META_DATA_EXPORT", "DIAGNOSTIC_EVENT", "PROFILER_OVERHEAD", "TARGET_INFO_GPU",
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS", "ENUM_CUPTI_OVERHEAD_TYPE", "CUPTI_ACTIVITY_KIND_OVERHEAD",
)  # fmt: skip
MARKS = frozenset({"StringIds", "META_DATA_EXPORT"})  # an export has one of these (the second look at a database)


def is_export(tables: frozenset[str]) -> bool:
    """Whether a database's tables are an Nsight Systems export's."""
    return bool(MARKS & tables)


def read_nsys(
    path: Path,
    config: SqliteBounds | None = None,
    on_read: Callable[[int], None] | None = None,
    opened: IO[bytes] | None = None,
) -> TraceContents:
    """An Nsight Systems SQLite export (or a gzipped one) as the contents every pass reads. ``opened``: the file as
    ``open_input`` opened it (the reader recognised it by its first bytes); else opened here, the same way."""
    contents: TraceContents = read_database_file(
        path, lambda found: (WHAT, read_database), what=WHAT, config=config, on_read=on_read, opened=opened
    )
    return contents


def read_database(path: Path, found: Database) -> TraceContents:
    """The contents of an open export (``wizard.trace.read.sqlite.open_database``)."""
    contents = database_contents(path, found, "nsys-sqlite")
    if not found.compressed:
        contents.metadata.update(_write_ahead_log(path))
    _Export(found, contents).read()
    return contents


def _write_ahead_log(path: Path) -> dict[str, Any]:
    """SQLite's write-ahead log beside the export (``FILE-wal``), which the immutable read never sees: its
    size, so the report says that rows written there are not read (a copy taken while nsys was writing)."""
    wal = Path(f"{path}-wal")
    try:
        size = os.stat(wal).st_size
    except (OSError, ValueError):
        return {}
    return {"nsys_wal": {"path": str(wal), "bytes": size}} if size else {}


_int = integer


def _text(value: Any) -> str | None:
    return value[:MAX_NAME] if type(value) is str else None


class _Export:
    """One export's tables, read into the collector."""

    def __init__(self, found: Database, contents: TraceContents) -> None:
        self.db = found.db
        self.c = contents
        self.collector = Collector(contents)
        found.schema.require_ordinary(contents.path, TABLES)
        self.tables = found.schema.tables
        self.strings: dict[int, str] = {}
        self.processes: dict[int, int] = {}  # pid -> its index, for correlation ids
        self.missing: dict[str, list[str]] = {}  # table -> the columns read as NULL because the table lacks them
        self.kernel_names: list[str] = []  # the kernels' names, each once
        self.kernel_name_ids: dict[str, int] = {}  # a name -> its number in kernel_names
        self.name_numbers: dict[int, int] = {}  # a StringIds id -> its number in kernel_names (-1: no name)
        self.call_threads: list[tuple[int | None, int | None]] = []  # the calls' (pid, tid), each once
        self.call_thread_ids: dict[tuple[int | None, int | None], int] = {}
        self.call_names: list[str] = []  # the calls' names, each once
        self.call_name_ids: dict[str, int] = {}

    def read(self) -> None:
        if not is_export(self.tables):
            raise InputFileError(
                f"{self.c.path}: a SQLite database, but not an Nsight Systems export or a rocpd database "
                "(no StringIds or META_DATA_EXPORT table, no rocpd_kernel_dispatch)"
            )
        self._strings()
        self._metadata()
        self._processes()
        self._kernels()
        self._runtime()
        self._add(self._gpu_ops("CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy"))
        self._add(self._gpu_ops("CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset"))
        self._add(self._nvtx())
        self._overheads()
        if self.missing:
            self.c.metadata["nsys"]["missing_columns"] = self.missing

    # -- the tables -----------------------------------------------------------------------------------

    def _columns(self, table: str) -> set[str]:
        return columns(self.db, table) if table in self.tables else set()

    def _rows(
        self, table: str, wanted: Sequence[str], *, required: int | None = None, ordered: bool = False
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``table`` with the ``wanted`` columns (a missing optional one reads as NULL, and is noted);
        nothing when the table or one of the first ``required`` columns is missing. ``ordered``: by ``start``
        (nsys does not export rows in time order). Names are this module's, never the file's."""
        have = self._columns(table)
        need = wanted[: len(wanted) if required is None else required]
        if not have or any(name not in have for name in need):
            return
        absent = [name for name in wanted if name not in have]
        if absent:
            self.missing[table] = absent
        picked = ", ".join(f'"{name}"' if name in have else "NULL" for name in wanted)
        order = ' ORDER BY "start"' if ordered and "start" in have else ""
        cursor = self.db.execute(f'SELECT {picked} FROM "{table}"{order}')
        while batch := cursor.fetchmany(BATCH):
            yield from batch

    def _strings(self) -> None:
        """StringIds, each text cut to ``MAX_NAME`` characters by SQLite (``substr``), so a batch of rows never
        holds a megabyte's name whole (1,500 of them took 1.5 GB a batch); anything but text is no name."""
        if not {"id", "value"} <= self._columns("StringIds"):
            return
        query = f'SELECT "id", {text_column("value", MAX_NAME)} FROM "StringIds"'
        for batch in _batches(self.db.execute(query)):
            for sid, text in batch:
                if type(sid) is int and type(text) is str:
                    self.strings[sid] = text

    def _add(self, events: Iterator[Event]) -> None:
        batch: list[Event] = []
        for event in events:
            batch.append(event)
            if len(batch) >= BATCH:
                self.collector.add(batch)
                batch = []
        if batch:
            self.collector.add(batch)

    def _metadata(self) -> None:
        meta = {
            key: value
            for key, value in self._rows("META_DATA_EXPORT", ("name", "value"))
            if isinstance(key, str) and isinstance(value, str)
        }
        version = cut(meta.get("EXPORT_PRODUCT_VERSION", ""), 40)
        self.c.writer = f"NVIDIA Nsight Systems {version}".strip()
        self.c.metadata["nsys"] = {
            "version": version or None,
            "schema": cut(meta.get("EXPORT_SCHEMA_VERSION", ""), 40) or None,
            "diagnostics": self._diagnostics(),
            "overhead_ns": self._overhead(),
        }
        devices = self._devices()
        if devices:
            self.c.metadata["deviceProperties"] = devices

    def _diagnostics(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for severity, text in self._rows("DIAGNOSTIC_EVENT", ("severity", "text")):
            level = _SEVERITY.get(_int(severity) or 0)
            if level and isinstance(text, str) and len(found) < MAX_DIAGNOSTICS:
                found.append({"severity": level, "text": cut(visible(" ".join(text.split())), 300)})
        return found

    def _overhead(self) -> dict[str, int]:
        """nsys's own overhead, nanoseconds per kind (``PROFILER_OVERHEAD``, named through StringIds)."""
        spent: Counter[str] = Counter()
        for start, end, name_id in self._rows("PROFILER_OVERHEAD", ("start", "end", "nameId"), required=2):
            s, e = _int(start), _int(end)
            if s is not None and e is not None and e >= s:
                spent[cut(self._string(name_id) or "unknown", 80)] += e - s
        return dict(spent.most_common(20))

    def _devices(self) -> list[dict[str, Any]]:
        cols = (
            "id", "name", "computeMajor", "computeMinor", "smCount", "maxWarpsPerSm", "threadsPerWarp",
            "maxRegistersPerSm", "maxRegistersPerBlock", "maxShmemPerBlock", "maxShmemPerSm", "maxShmemPerBlockOptin",
            "totalMemory", "maxThreadsPerBlock", "cuDevice",
        )  # fmt: skip
        devices: list[dict[str, Any]] = []
        for row in self._rows("TARGET_INFO_GPU", cols, required=1):
            v = dict(zip(cols, row, strict=True))
            ident = _int(v["cuDevice"])  # the CUDA ordinal, which kernels' deviceId is; `id` is nsys's own
            if ident is None:
                ident = _int(v["id"])
            if ident is None:
                continue
            warps, warp = _int(v["maxWarpsPerSm"]), _int(v["threadsPerWarp"])
            props = {
                "id": ident,
                "name": _text(v["name"]) or "",
                "computeMajor": _int(v["computeMajor"]),
                "computeMinor": _int(v["computeMinor"]),
                "numSms": _int(v["smCount"]),
                "maxThreadsPerMultiprocessor": warps * warp if warps is not None and warp is not None else None,
                "regsPerMultiprocessor": _int(v["maxRegistersPerSm"]),
                "regsPerBlock": _int(v["maxRegistersPerBlock"]),
                "sharedMemPerBlock": _int(v["maxShmemPerBlock"]),
                "sharedMemPerMultiprocessor": _int(v["maxShmemPerSm"]),
                "sharedMemPerBlockOptin": _int(v["maxShmemPerBlockOptin"]),
                "totalGlobalMem": _int(v["totalMemory"]),
                "maxThreadsPerBlock": _int(v["maxThreadsPerBlock"]),
                "warpSize": warp,
            }
            devices.append({k: value for k, value in props.items() if value is not None})
        return devices

    def _processes(self) -> None:
        """Every process that launched or ran something, in pid order (their correlation ids are kept apart)."""
        pids: set[int] = set()
        for table, column in (
            ("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"),
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid"),
            ("CUPTI_ACTIVITY_KIND_MEMSET", "globalPid"),
        ):
            if column in self._columns(table):
                quoted = f'SELECT DISTINCT "{column}" FROM "{table}"'
                pids.update(_pid(g) for (g,) in self.db.execute(quoted) if _int(g) is not None)
        self.processes = {pid: n for n, pid in enumerate(sorted(pids))} if len(pids) > 1 else {}

    def _correlation(self, value: Any, global_id: Any) -> int | None:
        corr, g = _int(value), _int(global_id)
        if corr is None:
            return None
        if self.processes and g is not None:
            return (self.processes.get(_pid(g), 0) << PROCESS_SHIFT) | (corr & ((1 << PROCESS_SHIFT) - 1))
        return corr

    def _string(self, sid: Any) -> str | None:
        """A StringIds entry (id 0 is a string too: 'GpuMetrics' in both real exports)."""
        return self.strings.get(sid) if type(sid) is int else None

    def _name(self, *ids: Any) -> str:
        for sid in ids:
            text = self._string(sid)
            if text:
                return text
        return "unknown"

    def _kernels(self) -> None:
        """The kernels, straight into the kernel table's columns: rows fetched a batch at a time as the file
        holds them, typed and cut in SQL, made numpy columns, sorted by start once at the end (stable, so a tie
        keeps the file's order, as the ``ORDER BY`` of the other tables does); a row holding a value no int64
        column can hold (-2**63, a sum past int64) is read one at a time, as ``_kernel_row`` says."""
        table = "CUPTI_ACTIVITY_KIND_KERNEL"
        if "start" not in self._columns(table):
            return
        # a process's pid matters only to correlation ids of several processes (``_correlation``)
        source, present = self._select(table, _KERNEL_COLUMNS, "1", () if self.processes else ("globalPid",))
        import numpy as np

        kernels = self.c.kernels
        first = len(kernels)
        starts = _Starts()
        for rows in _typed_batches(source, present, len(_KERNEL_COLUMNS)):
            starts.add(self._kernel_batch(rows))
        if len(kernels) == first:
            return
        if not starts.ordered:
            ts = np.frombuffer(kernels.starts(), dtype=np.float64)[first:]
            again = lambda: self.db.execute(f'SELECT "start" {source.source}{source.order()}')  # noqa: E731
            kernels.reorder(first, starts.sorting(ts, again))
        self.c.events += len(kernels) - first
        self.c.timeline.categories["kernel"] += len(kernels) - first
        self.c.last_ts = kernels[len(kernels) - 1].ts

    def _kernel_batch(self, rows: Any) -> Any:
        """One batch of rows into the table; their starts (nanoseconds, numpy int64)."""
        import numpy as np

        start, end, device, stream, corr, gpid, demangled, short = rows[:, :8].T
        gx, gy, gz, bx, by, bz, regs, static, dynamic = rows[:, 8:17].T
        big = 1 << 62
        odd = rows[:, len(_KERNEL_COLUMNS)] != 0
        odd |= (np.abs(start) >= big) | ((end != NO_VALUE) & (np.abs(end) >= big))
        odd |= ((static != NO_VALUE) & (np.abs(static) >= big)) | ((dynamic != NO_VALUE) & (np.abs(dynamic) >= big))
        dur = np.where(end != NO_VALUE, (end - start) / 1000.0, 0.0)
        grid_none = (gx == NO_VALUE) | (gy == NO_VALUE) | (gz == NO_VALUE)
        block_none = (bx == NO_VALUE) | (by == NO_VALUE) | (bz == NO_VALUE)
        smem = np.where((static != NO_VALUE) & (dynamic != NO_VALUE), static + dynamic, NO_VALUE)
        launch = [np.where(grid_none, NO_VALUE, d) for d in (gx, gy, gz)]
        launch += [np.where(block_none, NO_VALUE, d) for d in (bx, by, bz)]
        launch += [regs, smem]
        names = self._kernel_names(demangled, short)
        base = self._kernel_bases(names, device, stream)
        overrides: dict[tuple[int, int], Any] = {}
        ts = start / 1000.0
        correlation = self._correlations(corr, gpid)
        for i in np.flatnonzero(odd).tolist():
            ts[i], dur[i], correlation[i], base[i] = self._kernel_row(rows[i].tolist(), launch, i, overrides)
        self.c.kernels.add_launches(ts, dur, correlation, base, launch, overrides=overrides)
        return start

    def _kernel_names(self, demangled: Any, short: Any) -> Any:
        """Each row's name, as a number in ``kernel_names``: the demangled name's, else the short name's, else
        "unknown" (nsys leaves one or the other empty)."""
        import numpy as np

        picked = np.full(len(demangled), self._kernel_name("unknown"), dtype=np.int64)
        for ids in (short, demangled):
            distinct, which = _distinct(ids)
            known = np.array([self._name_number(int(sid)) for sid in distinct], dtype=np.int64)[which.reshape(-1)]
            picked = np.where(known >= 0, known, picked)
        return picked

    def _name_number(self, sid: int) -> int:
        """A StringIds id's number among the kernel names (-1 where it names nothing, or an empty text)."""
        found = self.name_numbers.get(sid)
        if found is None:
            text = self.strings.get(sid) if sid != NO_VALUE else None
            found = self.name_numbers[sid] = self._kernel_name(text) if text else -1
        return found

    def _kernel_name(self, text: str) -> int:
        found = self.kernel_name_ids.get(text)
        if found is None:
            found = self.kernel_name_ids[text] = len(self.kernel_names)
            self.kernel_names.append(text)
        return found

    def _kernel_bases(self, names: Any, device: Any, stream: Any) -> Any:
        """Each row's combination of name, device and stream, as the kernel table numbers it."""
        import numpy as np

        triples, which = _distinct_rows(names, device, stream)
        base_id = self.c.kernels.base_id
        ids = [
            base_id(_kernel_shape(self.kernel_names[n], *((None if v == NO_VALUE else v) for v in (d, s, d))))
            for n, d, s in triples.tolist()
        ]
        return np.array(ids, dtype=np.int32)[which.reshape(-1)]

    def _correlations(self, corr: Any, gpid: Any) -> Any:
        """``_correlation`` of every row at once (NO_VALUE for none)."""
        import numpy as np

        if not self.processes:
            return corr.copy()
        pid = (gpid >> 24) & 0xFFFFFF
        distinct, which = _distinct(pid)
        index = np.array([self.processes.get(int(p), 0) for p in distinct], dtype=np.int64)[which.reshape(-1)]
        shifted = (index << PROCESS_SHIFT) | (corr & ((1 << PROCESS_SHIFT) - 1))
        fits = (corr != NO_VALUE) & (index < 1 << (63 - PROCESS_SHIFT))
        return np.where(gpid == NO_VALUE, corr, np.where(fits, shifted, NO_VALUE))

    def _kernel_row(
        self, row: tuple[Any, ...], launch: list[Any], i: int, overrides: dict[tuple[int, int], Any]
    ) -> tuple[float, float, int, int]:
        """A row holding -2**63 or a value near int64's ends, one value at a time as Python's integers take it
        (a hostile export's: no real one has them): its start, duration, correlation and combination, its
        launch fields written into ``launch`` (and ``overrides`` where no column holds them)."""
        mask = row[17]
        values = [v if v != NO_VALUE or mask >> n & 1 else None for n, v in enumerate(row[:17])]
        start, end, device, stream, corr, gpid, demangled, short, *dims = values
        gx, gy, gz, bx, by, bz, regs, static, dynamic = dims
        smem = static + dynamic if static is not None and dynamic is not None else None
        fields = [*((gx, gy, gz) if None not in (gx, gy, gz) else (None,) * 3),
                  *((bx, by, bz) if None not in (bx, by, bz) else (None,) * 3), regs, smem]  # fmt: skip
        for f, value in enumerate(fields):
            fits = value is None or NO_VALUE < value < 1 << 63
            launch[f][i] = value if fits and value is not None else NO_VALUE
            if not fits:
                overrides[(f, i)] = value
        ts, dur = _span(start, end)
        kept = device if device is None or device > NO_VALUE else None  # the collector's as_int: -2**63 is none
        shape = _kernel_shape(self._name(demangled, short), device, stream, kept)
        correlation = self._correlation(corr, gpid)
        fits = correlation is not None and NO_VALUE < correlation < 1 << 63
        return (
            ts or 0.0,
            dur,
            correlation if correlation is not None and fits else NO_VALUE,
            self.c.kernels.base_id(shape),
        )

    def _select(
        self, table: str, wanted: Sequence[str], where: str, skip: Sequence[str] = ()
    ) -> tuple[ColumnBatches, list[int]]:
        """The rows of ``table`` with an integer start (and ``where``, SQL), as batches of the ``wanted`` columns it
        has (a missing one is noted: it reads as none, as does one in ``skip``, not needed), and the positions in
        ``wanted`` of those selected. Names are this module's, never the file's."""
        have = self._columns(table)
        present = [n for n, name in enumerate(wanted) if name in have and name not in skip]
        absent = [name for name in wanted if name not in have]
        if absent:
            self.missing[table] = absent
        picked = [f'"{wanted[n]}"' for n in present]
        key = rowid_name(self.db, table, have)
        return ColumnBatches(self.db, table, picked, where, key, integer='"start"'), present

    def _runtime(self) -> None:
        """The runtime and driver calls, as columns (as ``_kernels``); rows of any other eventClass (a CUDA
        backtrace repeats its call) are not calls. Without an eventClass column (older exports), every row is
        a call."""
        import numpy as np

        table = "CUPTI_ACTIVITY_KIND_RUNTIME"
        have = self._columns(table)
        if "start" not in have:
            return
        classed = "eventClass" in have
        where = 'typeof("eventClass") = \'integer\' AND "eventClass" IN (0, 1)' if classed else "1"
        source, present = self._select(table, _RUNTIME_COLUMNS, where)
        runtime, first = self.c.runtime, len(self.c.runtime)
        drivers: list[Any] = []  # whether each call is a driver call, batch by batch
        starts = _Starts()
        for rows in _typed_batches(source, present, len(_RUNTIME_COLUMNS)):
            (ts, dur, corr, thread, name, driver), start = self._runtime_batch(rows, classed)
            if len(start):
                runtime.add_columns(corr, ts, dur, thread, name, thread_keys=self.call_threads,
                                    name_list=self.call_names)  # fmt: skip
                drivers.append(driver)
                starts.add(start)
        if not drivers:
            return
        driver = np.concatenate(drivers)
        if not starts.ordered:
            again = lambda: self.db.execute(f'SELECT "start" {source.source}{source.order()}')  # noqa: E731
            order = starts.sorting(np.frombuffer(runtime.starts, dtype=np.float64)[first:], again)
            runtime.reorder(first, order)
            driver = driver[order]
        self._call_categories(driver)
        self.c.last_ts = runtime.starts[-1]

    def _call_categories(self, driver: Any) -> None:
        """The calls' counts by category (driver or runtime), the earliest call's first (``driver``: whether each
        call, in start order, is a driver call)."""
        drivers = int(driver.sum())
        counts = {"cuda_runtime": len(driver) - drivers, "cuda_driver": drivers}
        for category in sorted(counts, key=lambda c: c != ("cuda_driver" if driver[0] else "cuda_runtime")):
            if counts[category]:
                self.c.timeline.categories[category] += counts[category]
        self.c.events += len(driver)

    def _runtime_batch(self, rows: Any, classed: bool) -> tuple[Any, ...]:
        """One batch of calls as columns: start (µs), duration, correlation, thread and name numbers, whether a
        driver call; and the starts in nanoseconds."""
        import numpy as np

        start, end, kind, gtid, corr, name_id = rows[:, :6].T
        odd = (
            (rows[:, len(_RUNTIME_COLUMNS)] != 0)
            | (np.abs(start) >= 1 << 62)
            | ((end != NO_VALUE) & (np.abs(end) >= 1 << 62))
        )
        ts = start / 1000.0
        dur = np.where(end != NO_VALUE, (end - start) / 1000.0, 0.0)
        correlation = self._correlations(corr, gtid)
        thread = self._threads(gtid)
        name = self._call_names(name_id)
        for i in np.flatnonzero(odd).tolist():
            ts[i], dur[i], correlation[i], thread[i], name[i] = self._runtime_row(rows[i].tolist())
        driver = (kind == 1) if classed else np.zeros(len(start), dtype=bool)
        return (ts, dur, correlation, thread, name, driver), start

    def _threads(self, gtid: Any) -> Any:
        """Each call's (pid, tid) from its globalTid, as a number into ``call_threads``."""
        import numpy as np

        distinct, which = _distinct(gtid)
        numbers = [self._thread_number(None if g == NO_VALUE else g) for g in distinct.tolist()]
        return np.array(numbers, dtype=np.int32)[which.reshape(-1)]

    def _thread_number(self, g: int | None) -> int:
        key = (_pid(g), g & 0xFFFFFF) if g is not None else (None, None)
        found = self.call_thread_ids.get(key)
        if found is None:
            found = self.call_thread_ids[key] = len(self.call_threads)
            self.call_threads.append(key)
        return found

    def _call_names(self, name_id: Any) -> Any:
        """Each call's name (nsys's, without its version suffix), as a number into ``call_names``."""
        import numpy as np

        distinct, which = _distinct(name_id)
        numbers = [self._call_name(None if n == NO_VALUE else n) for n in distinct.tolist()]
        return np.array(numbers, dtype=np.int32)[which.reshape(-1)]

    def _call_name(self, sid: int | None) -> int:
        text = _VERSION_SUFFIX.sub("", self._name(sid))
        found = self.call_name_ids.get(text)
        if found is None:
            found = self.call_name_ids[text] = len(self.call_names)
            self.call_names.append(text)
        return found

    def _runtime_row(self, row: tuple[Any, ...]) -> tuple[float, float, int, int, int]:
        """A call holding -2**63 or a value near int64's ends, as Python's integers take it (``_kernel_row``)."""
        mask = row[6]
        start, end, _, g, corr, name_id = (v if v != NO_VALUE or mask >> n & 1 else None for n, v in enumerate(row[:6]))
        ts, dur = _span(start, end)
        correlation = self._correlation(corr, g)
        fits = correlation is not None and NO_VALUE < correlation < 1 << 63
        kept = correlation if correlation is not None and fits else NO_VALUE
        return ts or 0.0, dur, kept, self._thread_number(g), self._call_name(name_id)

    def _gpu_ops(self, table: str, category: str) -> Iterator[Event]:
        cols = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes")
        label = "Memcpy" if category == "gpu_memcpy" else "Memset"
        for start, end, device, stream, corr, gpid, size in self._rows(table, cols, required=1, ordered=True):
            ts, dur = _span(start, end)
            if ts is None:
                continue
            nbytes = _int(size)
            yield Event(
                cat=category,
                name=f"{label} ({nbytes} bytes)" if nbytes is not None else label,
                pid=_int(device),
                tid=_int(stream),
                ts=ts,
                dur=dur,
                args=EventArgs(correlation=self._correlation(corr, gpid), device=_int(device), stream=_int(stream)),
            )

    def _nvtx(self) -> Iterator[Event]:
        cols = ("start", "end", "eventType", "text", "textId", "globalTid")
        for start, end, kind, text, text_id, gtid in self._rows("NVTX_EVENTS", cols, required=3, ordered=True):
            ts, dur = _span(start, end)
            g = _int(gtid)
            if ts is None or _int(kind) not in _RANGE_TYPES:
                continue
            label = _text(text) or self._name(text_id)
            op = _TORCH_NVTX.match(label)
            yield Event(
                cat="cpu_op" if op else "user_annotation",
                name=op.group("name") if op else label,
                pid=_pid(g) if g is not None else None,
                tid=g & 0xFFFFFF if g is not None else None,
                ts=ts,
                dur=dur,
            )

    def _overheads(self) -> None:
        """Both overhead tables' records, as (start, end, name, None) in µs, kept apart from the window. No
        correlation: it is what PyTorch's key_averages() links an overhead event to an op by, and no
        key_averages() table reads an nsys export (the summary-table check models one)."""
        kept = self.c.timeline.overheads
        labels: dict[int | None, str] = {
            ident: label
            for ident, label in self._rows("ENUM_CUPTI_OVERHEAD_TYPE", ("id", "label"))
            if type(ident) is int and isinstance(label, str)
        }
        for table in _OVERHEAD_TABLES:
            cols = ("start", "end", "nameId", "overheadType")
            for start, end, name_id, kind in self._rows(table, cols, required=2, ordered=True):
                ts, dur = _span(start, end)
                if ts is None or len(kept) >= ANNOTATION_CAP:
                    continue
                name = self._string(name_id) or labels.get(_int(kind), "") or "unknown"
                kept.append((ts, ts + max(dur, 0.0), cut(name, 80), None))


def _kernel_shape(name: str, device: int | None, stream: int | None, kept: int | None) -> tuple[Any, ...]:
    """A kernel's combination as the collector makes it from a kernel event (KernelRecord's order, grid to
    shared memory None: ``add_launches`` takes them as columns): pid the device, tid the stream, as Kineto
    writes them, and the device as the collector keeps it (``kept``)."""
    return (name, device, stream, kept, stream, None, None, None, None, _MISSING, _MISSING, _MISSING, None, None, None)


class _Starts:
    """The kernels' starts batch by batch: whether they came sorted, and otherwise the order that sorts them."""

    def __init__(self) -> None:
        self.ordered = True
        self.exact = True
        self.last: int | None = None

    def add(self, starts: Any) -> None:
        import numpy as np

        if not len(starts):
            return
        self.exact = self.exact and bool((np.abs(starts) <= EXACT).all())
        if self.ordered:
            inside = bool((starts[1:] >= starts[:-1]).all())
            self.ordered = inside and (self.last is None or int(starts[0]) >= self.last)
        self.last = int(starts[-1])

    def sorting(self, ts: Any, again: Callable[[], Iterable[tuple[Any, ...]]]) -> Any:
        """The stable order by start of rows not read in order: by their start in µs (``ts``, numpy) where
        those doubles hold every nanosecond start exactly, else by the starts read again (``again``)."""
        import numpy as np

        key = ts if self.exact else np.array([start for (start,) in again()], dtype=np.int64)
        return np.argsort(key, kind="stable")


def _typed(batch: list[tuple[Any, ...]], present: list[int], width: int) -> Any:
    """Rows as a numpy int64 matrix of ``width`` columns and a last one, a mask of the columns that hold
    -2**63 itself: a value that is not an integer (SQLite is dynamically typed), and a column not selected,
    are ``NO_VALUE``. An export's integers make one numpy conversion; a batch holding anything else is typed
    value by value."""
    import numpy as np

    rows = np.array(batch)
    out = np.full((len(batch), width + 1), NO_VALUE, dtype=np.int64)
    out[:, width] = 0
    if rows.dtype == np.int64 and rows.ndim == 2 and not bool((rows == NO_VALUE).any()):
        out[:, present] = rows
        return out
    typed = [[v if type(v) is int else NO_VALUE for v in row] for row in batch]
    out[:, present] = np.array(typed, dtype=np.int64).reshape(len(batch), len(present))
    masks = [sum(1 << present[n] for n, v in enumerate(row) if type(v) is int and v == NO_VALUE) for row in batch]
    out[:, width] = masks
    return out


def _distinct(values: Any) -> tuple[Any, Any]:
    """``np.unique(values, return_inverse=True)`` of an int64 column, without its sort where a batch's values
    are one (a device, a stream, a thread) or span little (names' StringIds ids): issue 48's profile had the
    sorts at 12% of an export's read."""
    import numpy as np

    if not len(values):
        return np.unique(values, return_inverse=True)
    first = values[0]
    if bool((values == first).all()):
        return values[:1].copy(), np.zeros(len(values), dtype=np.intp)
    low, high = int(values.min()), int(values.max())
    if high - low >= 4 * len(values) + 4096:
        return np.unique(values, return_inverse=True)
    offsets = values - low  # within [0, high - low]: no overflow
    seen = np.zeros(high - low + 1, dtype=bool)
    seen[offsets] = True
    rank = np.cumsum(seen, dtype=np.intp) - 1
    return np.flatnonzero(seen) + low, rank[offsets]


def _distinct_rows(*columns: Any) -> tuple[Any, Any]:
    """``np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)``: the distinct rows in the same
    (lexicographic) order, by one int64 key of each column's rank among its distinct values."""
    import numpy as np

    parts = [_distinct(column) for column in columns]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for distinct, which in parts:  # each rank < a batch's rows: the key < rows ** len(columns) fits int64
        key = key * len(distinct) + which
    keys, inverse = _distinct(key)
    picked = []
    for distinct, _ in reversed(parts):
        keys, rank = np.divmod(keys, len(distinct))
        picked.append(distinct[rank])
    return np.stack(picked[::-1], axis=1), inverse


def _typed_batches(columns: ColumnBatches, present: list[int], width: int) -> Iterator[Any]:
    """The batches of ``columns`` as ``_typed`` makes them (the same matrix where SQLite gave whole columns)."""
    return columns.batches(lambda batch: _typed(batch, present, width), lambda got: _placed(got, present, width), BATCH)


def _placed(columns: list[Any], present: list[int], width: int) -> Any:
    """Whole columns of integers (none -2**63) as ``_typed``'s matrix: the ``present`` ones, the rest none."""
    import numpy as np

    out = np.empty((len(columns[0]), width + 1), dtype=np.int64, order="F")  # a column's values side by side
    out[:, width] = 0
    for n in set(range(width)) - set(present):
        out[:, n] = NO_VALUE
    for n, column in zip(present, columns, strict=True):
        out[:, n] = column
    return out


def _batches(cursor: Any) -> Iterator[list[tuple[Any, ...]]]:
    while batch := cursor.fetchmany(BATCH):
        yield batch


def _pid(global_id: int) -> int:
    """nsys's globalTid/globalPid: the process id in bits 24-47."""
    return (global_id >> 24) & 0xFFFFFF


def _span(start: Any, end: Any) -> tuple[float | None, float]:
    """Nanosecond start and end as Kineto's microsecond ``ts`` and ``dur`` (an end before the start, or none,
    is a duration of its difference or 0: durations are reported as recorded, never repaired)."""
    s, e = _int(start), _int(end)
    if s is None:
        return None, 0.0
    return s / 1000.0, ((e - s) / 1000.0 if e is not None else 0.0)
