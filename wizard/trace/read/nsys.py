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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from wizard.errors import InputFileError
from wizard.trace.read.collector import ANNOTATION_CAP, Collector, TraceContents
from wizard.trace.read.events import Event, EventArgs
from wizard.trace.read.records import PROCESS_SHIFT
from wizard.trace.read.sqlite import (
    Database,
    SqliteBounds,
    columns,
    database_contents,
    integer,
    read_database_file,
)
from wizard.untrusted import cut, visible

_VERSION_SUFFIX = re.compile(r"_v\d{4,}$")  # nsys names API calls with the version they entered CUDA in
# torch/csrc/profiler/util.cpp getNvtxStr: "name[, seq = N][, op_id = N][, sizes = [...]][, input_op_ids = ...]"
_TORCH_NVTX = re.compile(r"^(?P<name>[^,]+), (?:seq = -?\d+|op_id = \d+|sizes = \[)")
_RANGE_TYPES = frozenset({59, 60, 70, 71})  # NvtxPushPopRange, NvtxStartEndRange and their NVTXT forms
MAX_TEXT = 4096  # characters kept of a name
MAX_DIAGNOSTICS = 20  # nsys's own warnings and errors kept, as evidence
BATCH = 50_000  # rows handed to the collector at once
_SEVERITY = {2: "warning", 3: "error"}  # ENUM_DIAGNOSTIC_SEVERITY_LEVEL; info and verbose are not evidence
_RUNTIME_CLASS: dict[int | None, str] = {
    0: "cuda_runtime",
    1: "cuda_driver",
}  # ENUM_NSYS_EVENT_CLASS: the calls (67 is a backtrace)
_OVERHEAD_TABLES = ("PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD")


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
    return value[:MAX_TEXT] if type(value) is str else None


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

    def read(self) -> None:
        if not is_export(self.tables):
            raise InputFileError(
                f"{self.c.path}: a SQLite database, but not an Nsight Systems export or a rocpd database "
                "(no StringIds or META_DATA_EXPORT table, no rocpd_kernel_dispatch)"
            )
        for sid, value in self._rows("StringIds", ("id", "value")):
            text = _text(value)
            if type(sid) is int and text is not None:
                self.strings[sid] = text
        self._metadata()
        self._processes()
        self._add(self._kernels())
        self._add(self._runtime())
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

    def _kernels(self) -> Iterator[Event]:
        cols = (
            "start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName", "shortName",
            "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
            "dynamicSharedMemory",
        )  # fmt: skip
        for row in self._rows("CUPTI_ACTIVITY_KIND_KERNEL", cols, required=1, ordered=True):
            start, end, device, stream, corr, gpid, demangled, short, *dims = row
            ts, dur = _span(start, end)
            if ts is None:
                continue
            gx, gy, gz, bx, by, bz, regs, static, dynamic = (_int(d) for d in dims)
            smem = static + dynamic if static is not None and dynamic is not None else None
            yield Event(
                cat="kernel",
                name=self._name(demangled, short),
                pid=_int(device),
                tid=_int(stream),
                ts=ts,
                dur=dur,
                args=EventArgs(
                    correlation=self._correlation(corr, gpid),
                    device=_int(device),
                    stream=_int(stream),
                    grid=[gx, gy, gz] if None not in (gx, gy, gz) else None,
                    block=[bx, by, bz] if None not in (bx, by, bz) else None,
                    registers=regs,
                    shared_memory=smem,
                ),
            )

    def _runtime(self) -> Iterator[Event]:
        """The runtime and driver calls; rows of any other eventClass (a CUDA backtrace repeats its call) are
        not calls. Without an eventClass column (older exports), every row is a call."""
        cols = ("start", "end", "eventClass", "globalTid", "correlationId", "nameId")
        table = "CUPTI_ACTIVITY_KIND_RUNTIME"
        classed = "eventClass" in self._columns(table)
        for start, end, kind, gtid, corr, name_id in self._rows(table, cols, required=1, ordered=True):
            category = _RUNTIME_CLASS.get(_int(kind)) if classed else "cuda_runtime"
            ts, dur = _span(start, end)
            if ts is None or category is None:
                continue
            g = _int(gtid)
            yield Event(
                cat=category,
                name=_VERSION_SUFFIX.sub("", self._name(name_id)),
                pid=_pid(g) if g is not None else None,
                tid=g & 0xFFFFFF if g is not None else None,
                ts=ts,
                dur=dur,
                args=EventArgs(correlation=self._correlation(corr, g)),
            )

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
