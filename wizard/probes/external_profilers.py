"""Other profilers' views of the same kernels: Nsight Systems' SQLite export and Nsight
Compute's raw CSV. Both give raw launch dimensions and SM counts; products computed here
are Python integers, so they cannot overflow, which is the point of the comparison.
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.formatting import count

if TYPE_CHECKING:
    from wizard.trace.read.sqlite import Database


@dataclass(frozen=True, slots=True)
class ExternalKernel:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int | None
    shared_memory: int | None
    num_sms: int | None

    @property
    def blocks_per_sm(self) -> float | None:
        if not self.num_sms:
            return None
        return self.grid[0] * self.grid[1] * self.grid[2] / self.num_sms

    @property
    def warps_per_sm(self) -> float | None:
        bps = self.blocks_per_sm
        return None if bps is None else bps * self.block[0] * self.block[1] * self.block[2] / 32


_KERNEL_COLUMNS = (
    "deviceId", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
    "dynamicSharedMemory", "demangledName",
)  # fmt: skip


def read_nsys_sqlite(path: str | Path, name_filter: str | None = None, limit: int = 200) -> list[ExternalKernel]:
    """Kernels from ``nsys ... --export=sqlite``; tables are lazy, so a missing one (or an empty file) is 'no data'.
    The export is untrusted like any trace: opened, bounded and typed by ``wizard.trace.read.sqlite``, as the nsys
    reader opens it (only ordinary tables; a value of the wrong type skips its row). Raises InputFileError."""
    from wizard.trace.read.nsys import WHAT
    from wizard.trace.read.source import open_input
    from wizard.trace.read.sqlite import SqliteBounds, database_error, open_database

    p = Path(path)
    if p.is_file() and not p.stat().st_size:
        return []
    fh = open_input(p)[0]
    try:
        with fh, open_database(p, fh, SqliteBounds(max_seconds=120.0), WHAT) as found:
            found.schema.require_ordinary(
                p, ("CUPTI_ACTIVITY_KIND_KERNEL", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_GPU")
            )
            return _kernels(found, re.compile(name_filter) if name_filter else None, limit)
    except (sqlite3.DatabaseError, MemoryError) as exc:
        raise database_error(p, WHAT, exc) from None


def _kernels(found: Database, pattern: re.Pattern[str] | None, limit: int) -> list[ExternalKernel]:
    from wizard.trace.read.collector import MAX_NAME
    from wizard.trace.read.sqlite import columns, integer, text_column

    tables, db = found.schema.tables, found.db
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        return []
    sm_counts = _sm_counts(found)
    strings: dict[int, str] = {}
    if "StringIds" in tables and columns(db, "StringIds") >= {"id", "value"}:
        query = f'SELECT "id", {text_column("value", MAX_NAME)} FROM "StringIds"'  # cut by SQLite, as the reader's
        strings = {i: v for i, v in db.execute(query) if type(v) is str and type(i) is int}
    have = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    picked = ", ".join(f'"{c}"' if c in have else "NULL" for c in _KERNEL_COLUMNS)
    order = ' ORDER BY "start"' if "start" in have else ""
    out: list[ExternalKernel] = []
    for row in db.execute(f"SELECT {picked} FROM CUPTI_ACTIVITY_KIND_KERNEL{order}"):
        dev, gx, gy, gz, bx, by, bz, regs, static, dynamic = (integer(v) for v in row[:10])
        if None in (gx, gy, gz, bx, by, bz):
            continue
        name_id = integer(row[10])
        name = strings.get(name_id, str(name_id)) if name_id is not None else "?"
        if pattern and not pattern.search(name):
            continue
        shared = (static or 0) + (dynamic or 0)
        grid, block = (gx, gy, gz), (bx, by, bz)
        out.append(ExternalKernel(name, grid, block, regs, shared, sm_counts.get(dev) if dev is not None else None))  # type: ignore[arg-type]
        if len(out) >= limit:
            break
    return out


def _sm_counts(found: Database) -> dict[int, int]:
    """Each CUDA device's SM count: ``TARGET_INFO_CUDA_DEVICE`` (cudaId), else ``TARGET_INFO_GPU`` by its CUDA
    ordinal (``cuDevice``, what kernels' deviceId is; ``id`` is nsys's own, read only where cuDevice is missing)."""
    from wizard.trace.read.sqlite import columns, integer

    gpu = "TARGET_INFO_GPU" in found.schema.tables and "cuDevice" in columns(found.db, "TARGET_INFO_GPU")
    gpu_id = "cuDevice" if gpu else "id"
    for table, ident, sms in (
        ("TARGET_INFO_CUDA_DEVICE", "cudaId", "numMultiprocessors"),
        ("TARGET_INFO_GPU", gpu_id, "smCount"),
    ):
        if table in found.schema.tables and columns(found.db, table) >= {ident, sms}:
            rows = found.db.execute(f'SELECT "{ident}", "{sms}" FROM "{table}"')
            return {i: n for a, b in rows if (i := integer(a)) is not None and (n := integer(b)) is not None}
    return {}


NCU_METRICS = (
    "launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_static,"
    "launch__shared_mem_per_block_dynamic,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,"
    "launch__occupancy_limit_warps,launch__occupancy_limit_blocks,sm__maximum_warps_per_active_cycle_pct,"
    "sm__warps_active.avg.pct_of_peak_sustained_active,device__attribute_multiprocessor_count"
)


class NcuPermissionError(Exception):
    """ncu could not read the performance counters (ERR_NVGPUCTRPERM)."""


def _number(text: str) -> float | None:
    cleaned = text.replace(",", "").strip().strip('"')
    if not cleaned or cleaned.lower() == "n/a":
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> list[dict[str, float | str | None]]:
    """Rows of ``ncu --csv --page raw``: a header, a units row, then one row per kernel."""
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuPermissionError(
            "ncu cannot read the GPU performance counters (ERR_NVGPUCTRPERM): run as root / with CAP_SYS_ADMIN, "
            "or set the driver option NVreg_RestrictProfilingToAdminUsers=0"
        )
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if len(lines) < 2:
        return []
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    header, rows = reader[0], reader[2:]
    out: list[dict[str, float | str | None]] = []
    for row in rows:
        record: dict[str, float | str | None] = {}
        for key, value in zip(header, row, strict=False):
            record[key] = value if key in ("Kernel Name", "ID", "Process Name") else _number(value)
        out.append(record)
    return out


def ncu_evidence(row: dict[str, float | str | None]) -> str:
    """One line of Nsight Compute's view of the flagged kernel."""
    return (
        f"ncu: grid size {count(row.get('launch__grid_size'))}, block {count(row.get('launch__block_size'))}, "
        f"{count(row.get('device__attribute_multiprocessor_count'))} SMs, theoretical occupancy "
        f"{count(row.get('sm__maximum_warps_per_active_cycle_pct'))}%, achieved "
        f"{count(row.get('sm__warps_active.avg.pct_of_peak_sustained_active'))}%, shared-memory block limit "
        f"{count(row.get('launch__occupancy_limit_shared_mem'))}"
    )
