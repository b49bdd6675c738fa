"""Nsight Systems SQLite exports built for tests, with the real export's table and column names (read off
`nsys export --type sqlite` 2026.2 files), so a planted problem reaches the reader as a real one would.

Only the tables and columns the reader reads are created; a real export has about 45 more tables. Three ways a real
export differs from a tidy one can be planted: rows out of time order (``shuffle``: nsys promises no order; issue
45 quotes the 2025.6 release notes), a CUDA-backtrace row beside each call (``backtraces``: eventClass 67 with the
call's interval and correlation id), and a column the table lacks (``drop``: an older or newer schema).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PID = 4242  # the process's id
TID = 4243  # its launching thread


def global_tid(pid: int = PID, tid: int = TID) -> int:
    """nsys's globalTid: pid in bits 24-47, tid in bits 0-23 (and a VM id above, here 1)."""
    return (1 << 48) | (pid << 24) | tid


@dataclass(frozen=True, slots=True)
class Kernel:
    start_ns: int
    end_ns: int
    correlation: int
    name: str = "void gemm_kernel<128>(float*)"
    device: int = 0
    stream: int = 7
    grid: tuple[int, int, int] = (108, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    registers: int = 32
    static_smem: int = 0
    dynamic_smem: int = 0
    pid: int = PID


@dataclass(frozen=True, slots=True)
class Call:
    start_ns: int
    end_ns: int
    correlation: int
    name: str = "cudaLaunchKernel_v7000"  # as nsys names it, with the version suffix
    driver: bool = False
    pid: int = PID
    tid: int = TID


@dataclass(frozen=True, slots=True)
class Overhead:
    """A profiler-overhead row: ``PROFILER_OVERHEAD`` (nsys's and CUPTI's own work), or with ``cupti``,
    ``CUPTI_ACTIVITY_KIND_OVERHEAD`` (CUPTI's records: module loading, lazy function loading)."""

    start_ns: int
    end_ns: int
    name: str = "CUPTI Buffer flush"
    kind: int = 3  # ENUM_CUPTI_OVERHEAD_TYPE: 3 OVERHEAD_CUPTI_BUFFER_FLUSH, 6 runtime module loading, 7 lazy loading
    cupti: bool = False
    correlation: int | None = None
    pid: int = PID
    tid: int = TID


@dataclass(frozen=True, slots=True)
class Range:
    start_ns: int
    end_ns: int
    text: str  # PyTorch's emit_nvtx writes "aten::mm, seq = 3, op_id = 7, sizes = [[2, 2]]"
    pid: int = PID
    tid: int = TID


_SCHEMA: dict[str, tuple[str, ...]] = {  # the columns of a 2026.2 export, in its order
    "StringIds": ("id", "value"),
    "META_DATA_EXPORT": ("name", "value"),
    "CUPTI_ACTIVITY_KIND_KERNEL": (
        "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName",
        "shortName", "mangledName", "launchType", "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY",
        "blockZ", "staticSharedMemory", "dynamicSharedMemory", "graphId", "graphNodeId",
    ),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (
        "start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue", "callchainId",
    ),
    "NVTX_EVENTS": (
        "start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid", "endGlobalTid", "textId",
        "domainId",
    ),
    "DIAGNOSTIC_EVENT": ("timestamp", "timestampType", "source", "severity", "text", "globalPid"),
    "TARGET_INFO_GPU": (
        "vmId", "id", "name", "smCount", "computeMajor", "computeMinor", "maxWarpsPerSm", "threadsPerWarp",
        "maxRegistersPerSm", "maxRegistersPerBlock", "maxShmemPerBlock", "maxShmemPerSm", "maxShmemPerBlockOptin",
        "totalMemory", "maxThreadsPerBlock", "maxBlocksPerSm", "cuDevice",
    ),
    "PROFILER_OVERHEAD": ("start", "end", "globalTid", "nameId", "overheadType"),
    "CUPTI_ACTIVITY_KIND_OVERHEAD": (
        "start", "end", "eventClass", "globalTid", "correlationId", "nameId", "overheadType",
    ),
    "ENUM_CUPTI_OVERHEAD_TYPE": ("id", "name", "label"),
}  # fmt: skip
_TEXT = frozenset({"value", "name", "text", "label"})
# ENUM_CUPTI_OVERHEAD_TYPE as nsys 2026.2 writes it
OVERHEAD_TYPES = (
    (0, "OVERHEAD_UNDEFINED", "Undefined"), (1, "OVERHEAD_UNKNOWN", "Unknown"),
    (2, "OVERHEAD_DRIVER_COMPILER", "Driver JIT compiler (CUDA)"),
    (3, "OVERHEAD_CUPTI_BUFFER_FLUSH", "Buffer flush (Profiler)"),
    (4, "OVERHEAD_CUPTI_INSTRUMENTATION", "Instrumentation (Profiler)"),
    (5, "OVERHEAD_CUPTI_RESOURCE", "Resource creation/destruction (Profiler)"),
    (6, "OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING", "Runtime module loading (CUDA)"),
    (7, "OVERHEAD_LAZY_FUNCTION_LOADING", "Lazy function loading (CUDA)"),
    (8, "OVERHEAD_COMMAND_BUFFER_FULL", "Command buffer full (CUDA)"),
)  # fmt: skip
CUDA_BACKTRACE = 67  # ENUM_NSYS_EVENT_CLASS TRACE_PROCESS_EVENT_CUDABACKTRACE
CUDA_OVERHEAD = 103  # ENUM_NSYS_EVENT_CLASS TRACE_PROCESS_EVENT_CUDA_OVERHEAD (the class of CUPTI's overhead rows)


class _Tables:
    """The rows of each table, written at the end (in order, or shuffled), each without the dropped columns."""

    def __init__(self, drop: Mapping[str, Iterable[str]]) -> None:
        self.rows: dict[str, list[dict[str, object]]] = {table: [] for table in _SCHEMA}
        self.drop = {table: set(cols) for table, cols in drop.items()}
        self.strings: dict[str, int] = {}

    def sid(self, text: str) -> int:
        if text not in self.strings:  # from 0, as nsys numbers them
            self.strings[text] = len(self.strings)
            self.add("StringIds", id=self.strings[text], value=text)
        return self.strings[text]

    def add(self, table: str, **row: object) -> None:
        self.rows[table].append(row)

    def write(self, db: sqlite3.Connection, shuffle: int | None) -> None:
        for table, columns in _SCHEMA.items():
            kept = [c for c in columns if c not in self.drop.get(table, set())]
            typed = ", ".join(f'"{c}" {"TEXT" if c in _TEXT else "INTEGER"}' for c in kept)
            db.execute(f'CREATE TABLE "{table}" ({typed})')
            rows = list(self.rows[table])
            if shuffle is not None and table != "StringIds":
                random.Random(shuffle).shuffle(rows)
            marks = ", ".join("?" for _ in kept)
            db.executemany(f'INSERT INTO "{table}" VALUES ({marks})', [tuple(row.get(c) for c in kept) for row in rows])


def write_export(
    path: Path,
    kernels: Iterable[Kernel],
    calls: Iterable[Call],
    ranges: Iterable[Range] = (),
    *,
    gpu: str | None = "NVIDIA H100 80GB HBM3",
    sm_count: int = 132,
    diagnostics: Iterable[tuple[int, str]] = (),  # (severity: 1 info, 2 warning, 3 error, text)
    version: str = "2026.2.1.210",
    overheads: Iterable[Overhead] = (),
    backtraces: bool = False,  # a CUDA-backtrace row (eventClass 67) beside each call
    shuffle: int | None = None,  # a seed: every table's rows in a random order
    drop: Mapping[str, Iterable[str]] | None = None,  # table -> the columns it lacks
) -> Path:
    """An export holding these kernels, calls, NVTX ranges and overhead records."""
    t = _Tables(drop or {})
    t.add("META_DATA_EXPORT", name="EXPORT_PRODUCT_NAME", value="NVIDIA Nsight Systems")
    t.add("META_DATA_EXPORT", name="EXPORT_PRODUCT_VERSION", value=version)
    for k in kernels:
        name = t.sid(k.name)
        t.add(
            "CUPTI_ACTIVITY_KIND_KERNEL", start=k.start_ns, end=k.end_ns, deviceId=k.device, contextId=1,
            streamId=k.stream, correlationId=k.correlation, globalPid=global_tid(k.pid, 0), demangledName=name,
            shortName=name, mangledName=name, launchType=1, registersPerThread=k.registers, gridX=k.grid[0],
            gridY=k.grid[1], gridZ=k.grid[2], blockX=k.block[0], blockY=k.block[1], blockZ=k.block[2],
            staticSharedMemory=k.static_smem, dynamicSharedMemory=k.dynamic_smem,
        )  # fmt: skip
    for c in calls:
        row = {
            "start": c.start_ns, "end": c.end_ns, "eventClass": 1 if c.driver else 0,
            "globalTid": global_tid(c.pid, c.tid), "correlationId": c.correlation, "nameId": t.sid(c.name),
            "returnValue": 0,
        }  # fmt: skip
        t.add("CUPTI_ACTIVITY_KIND_RUNTIME", **row)
        if backtraces:
            t.add("CUPTI_ACTIVITY_KIND_RUNTIME", **{**row, "eventClass": CUDA_BACKTRACE, "callchainId": 1})
    for r in ranges:
        t.add(
            "NVTX_EVENTS", start=r.start_ns, end=r.end_ns, eventType=59, text=r.text,
            globalTid=global_tid(r.pid, r.tid), domainId=0,
        )  # fmt: skip
    _overheads(t, overheads)
    for severity, text in diagnostics:
        t.add("DIAGNOSTIC_EVENT", timestamp=0, timestampType=1, source=1, severity=severity, text=text, globalPid=0)
    if gpu is not None:
        _gpu(t, gpu, sm_count)
    db = sqlite3.connect(path)
    with db:
        t.write(db, shuffle)
    db.close()
    return path


def _gpu(t: _Tables, gpu: str, sm_count: int) -> None:
    limits = (64, 32, 65536, 65536, 49152, 233472, 232448, 85520809984, 1024, 32)
    t.add(  # nsys's own id 7, CUDA ordinal 0 (what kernels' deviceId is)
        "TARGET_INFO_GPU", vmId=0, id=7, name=gpu, smCount=sm_count, computeMajor=9, computeMinor=0,
        **dict(zip(_SCHEMA["TARGET_INFO_GPU"][6:16], limits, strict=True)), cuDevice=0,
    )  # fmt: skip


def _overheads(t: _Tables, overheads: Iterable[Overhead]) -> None:
    for ident, name, label in OVERHEAD_TYPES:
        t.add("ENUM_CUPTI_OVERHEAD_TYPE", id=ident, name=name, label=label)
    for o in overheads:
        row = {
            "start": o.start_ns, "end": o.end_ns, "globalTid": global_tid(o.pid, o.tid), "nameId": t.sid(o.name),
            "overheadType": o.kind,
        }  # fmt: skip
        if o.cupti:
            t.add("CUPTI_ACTIVITY_KIND_OVERHEAD", **row, eventClass=CUDA_OVERHEAD, correlationId=o.correlation)
        else:
            t.add("PROFILER_OVERHEAD", **row)


def write_many(
    path: Path,
    count: int,
    *,
    grids: int = 1,  # distinct grids, kernel i has grid (1 + i % grids, 1, 1)
    names: int = 1,  # distinct kernel names, kernel i is named "kernel_{i % names}"
    streams: int = 1,  # kernel i runs on stream 7 + i % streams
    calls: bool = True,  # a cudaLaunchKernel for each kernel
) -> Path:
    """An export of ``count`` kernels (and their launches), written row by row, never held: the 10M-kernel
    exports the benchmarks read take gigabytes as ``write_export``'s dataclasses. Kernel ``i`` starts at
    ``1000 + 3000 i`` ns, lasts 1 µs, correlation ``i + 1``; its launch starts 500 ns earlier."""
    t = _Tables({})
    for value in ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", "2026.2.1.210"):
        t.add("META_DATA_EXPORT", name=value[0], value=value[1])
    _gpu(t, "NVIDIA H100 80GB HBM3", 132)  # as a real export describes its GPU (TARGET_INFO_GPU)
    launch = t.sid("cudaLaunchKernel_v7000")
    first = len(t.strings)
    for n in range(names):
        t.sid(f"kernel_{n}")
    db = sqlite3.connect(path)
    with db:
        t.write(db, None)
        kernel_cols = _SCHEMA["CUPTI_ACTIVITY_KIND_KERNEL"]
        db.executemany(
            f'INSERT INTO "CUPTI_ACTIVITY_KIND_KERNEL" VALUES ({", ".join("?" for _ in kernel_cols)})',
            (
                (1000 + 3000 * i, 2000 + 3000 * i, 0, 1, 7 + i % streams, i + 1, global_tid(PID, 0),
                 first + i % names, first + i % names, first + i % names, 1, 32, 1 + i % grids, 1, 1, 256, 1, 1,
                 0, 0, None, None)
                for i in range(count)
            ),
        )  # fmt: skip
        if calls:
            db.executemany(
                'INSERT INTO "CUPTI_ACTIVITY_KIND_RUNTIME" VALUES (?, ?, 0, ?, ?, ?, 0, NULL)',
                ((500 + 3000 * i, 900 + 3000 * i, global_tid(), i + 1, launch) for i in range(count)),
            )
    db.close()
    return path
