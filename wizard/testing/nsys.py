"""Nsight Systems SQLite exports built for tests, with the real export's table and column names (read off
`nsys export --type sqlite` 2026.2 files), so a planted problem reaches the reader as a real one would.

Only the tables and columns the reader reads are created; a real export has about 45 more tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
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
class Range:
    start_ns: int
    end_ns: int
    text: str  # PyTorch's emit_nvtx writes "aten::mm, seq = 3, op_id = 7, sizes = [[2, 2]]"
    pid: int = PID
    tid: int = TID


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
) -> Path:
    """An export holding these kernels, calls and NVTX ranges."""
    db = sqlite3.connect(path)
    with db:
        db.executescript(
            """
            CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
                streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
                mangledName INTEGER, launchType INTEGER, registersPerThread INTEGER, gridX INTEGER, gridY INTEGER,
                gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER,
                dynamicSharedMemory INTEGER, graphId INTEGER, graphNodeId INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
                globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
            CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER,
                color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
            CREATE TABLE DIAGNOSTIC_EVENT (timestamp INTEGER, timestampType INTEGER, source INTEGER, severity INTEGER,
                text TEXT, globalPid INTEGER);
            CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, smCount INTEGER, computeMajor INTEGER,
                computeMinor INTEGER, maxWarpsPerSm INTEGER, threadsPerWarp INTEGER, maxRegistersPerSm INTEGER,
                maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, maxShmemPerSm INTEGER,
                maxShmemPerBlockOptin INTEGER, totalMemory INTEGER, maxThreadsPerBlock INTEGER, maxBlocksPerSm INTEGER);
            """
        )
        strings: dict[str, int] = {}

        def sid(text: str) -> int:
            if text not in strings:
                strings[text] = len(strings) + 1
                db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
            return strings[text]

        db.executemany(
            "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
            [("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", version)],
        )
        for k in kernels:
            name = sid(k.name)
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,1,?,?,?,?,?,?,1,?,?,?,?,?,?,?,?,?,NULL,NULL)",
                (k.start_ns, k.end_ns, k.device, k.stream, k.correlation, global_tid(k.pid, 0), name, name, name,
                 k.registers, *k.grid, *k.block, k.static_smem, k.dynamic_smem),
            )  # fmt: skip
        for c in calls:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0,NULL)",
                (c.start_ns, c.end_ns, 1 if c.driver else 0, global_tid(c.pid, c.tid), c.correlation, sid(c.name)),
            )
        for r in ranges:
            db.execute(
                "INSERT INTO NVTX_EVENTS VALUES (?,?,59,NULL,NULL,NULL,?,?,NULL,NULL,0)",
                (r.start_ns, r.end_ns, r.text, global_tid(r.pid, r.tid)),
            )
        db.executemany("INSERT INTO DIAGNOSTIC_EVENT VALUES (0, 1, 1, ?, ?, 0)", list(diagnostics))
        if gpu is not None:
            db.execute(
                "INSERT INTO TARGET_INFO_GPU VALUES (0,0,?,?,9,0,64,32,65536,65536,49152,233472,232448,85520809984,"
                "1024,32)",
                (gpu, sm_count),
            )
    db.close()
    return path
