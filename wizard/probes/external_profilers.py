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

from wizard.formatting import count


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


def read_nsys_sqlite(path: str | Path, name_filter: str | None = None, limit: int = 200) -> list[ExternalKernel]:
    """Kernels from ``nsys ... --export=sqlite``; tables are lazy, so a missing one is 'no data'."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            return []
        sms: dict[int, int] = {}
        if "TARGET_INFO_CUDA_DEVICE" in tables:
            for cuda_id, count in con.execute("SELECT cudaId, numMultiprocessors FROM TARGET_INFO_CUDA_DEVICE"):
                sms[int(cuda_id)] = int(count)
        elif "TARGET_INFO_GPU" in tables:
            for gpu_id, count in con.execute("SELECT id, smCount FROM TARGET_INFO_GPU"):
                sms[int(gpu_id)] = int(count)
        names: dict[int, str] = {}
        if "StringIds" in tables:
            names = {int(i): str(v) for i, v in con.execute("SELECT id, value FROM StringIds")}
        rows = con.execute(
            "SELECT deviceId, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
            "staticSharedMemory, dynamicSharedMemory, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"
        )
        pattern = re.compile(name_filter) if name_filter else None
        out: list[ExternalKernel] = []
        for dev, gx, gy, gz, bx, by, bz, regs, static, dynamic, name_id in rows:
            name = names.get(int(name_id), str(name_id)) if name_id is not None else "?"
            if pattern and not pattern.search(name):
                continue
            out.append(
                ExternalKernel(
                    name,
                    (int(gx), int(gy), int(gz)),
                    (int(bx), int(by), int(bz)),
                    int(regs) if regs is not None else None,
                    int(static or 0) + int(dynamic or 0),
                    sms.get(int(dev)),
                )
            )
            if len(out) >= limit:
                break
        return out
    finally:
        con.close()


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
