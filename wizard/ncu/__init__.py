"""Nsight Compute's measurements, read beside a trace: an ``.ncu-rep`` (through NVIDIA's ``ncu-report``, in a
process of its own) or the CSV of ``ncu --csv --page raw`` (which needs nothing).

Kineto's "est. achieved occupancy %" is an estimate; Nsight Compute measures the achieved occupancy and prints the
launch configuration and the occupancy calculator's limits with the opt-in shared memory. What is kept of each
kernel ncu profiled is ``NcuKernel``: its names, launch configuration, the four block limits, waves, the
theoretical and achieved occupancy, and the device's description (which a trace may lack).

An ``.ncu-rep`` comes from someone else and is parsed by NVIDIA's closed library, so it is read by
``python -m wizard.ncu.worker`` under a time bound (``READ_SECONDS``) and an address-space bound
(``READ_BYTES``, set by the worker before the library loads): a crash, a hang or a runaway allocation in that
library is one line and exit 6, never a traceback or a stuck run.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from wizard.errors import InputFileError, MissingDependency

READ_SECONDS = 120.0
READ_BYTES = 4 << 30  # the worker's address space: ncu-report maps a report, it does not need more
MAX_KERNELS = 100_000  # kernels kept from one report
MAX_TEXT = 2000  # characters of a kernel's demangled name (C++ templates run long)
MAX_CSV_BYTES = 256 << 20
NCU_MAGIC = b"NVR\x00"  # the first bytes of every .ncu-rep (Nsight Compute 2019.5 to 2026)

# The metrics kept, by ncu's names (docs.nvidia.com/nsight-compute, "Metrics Reference" and the Launch
# Statistics and Occupancy sections).
METRICS: dict[str, str] = {
    "grid_size": "launch__grid_size",
    "block_size": "launch__block_size",
    "grid_x": "launch__grid_dim_x",
    "grid_y": "launch__grid_dim_y",
    "grid_z": "launch__grid_dim_z",
    "block_x": "launch__block_dim_x",
    "block_y": "launch__block_dim_y",
    "block_z": "launch__block_dim_z",
    "registers": "launch__registers_per_thread",
    "smem_static": "launch__shared_mem_per_block_static",
    "smem_dynamic": "launch__shared_mem_per_block_dynamic",
    "limit_registers": "launch__occupancy_limit_registers",
    "limit_shared_mem": "launch__occupancy_limit_shared_mem",
    "limit_warps": "launch__occupancy_limit_warps",
    "limit_blocks": "launch__occupancy_limit_blocks",
    "waves": "launch__waves_per_multiprocessor",
    "theoretical_pct": "sm__maximum_warps_per_active_cycle_pct",
    "achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "duration_ns": "gpu__time_duration.sum",
    "sms": "device__attribute_multiprocessor_count",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
    "max_threads_per_sm": "device__attribute_max_threads_per_multiprocessor",
    "regs_per_sm": "device__attribute_max_registers_per_multiprocessor",
    "regs_per_block": "device__attribute_max_registers_per_block",
    "smem_per_sm": "device__attribute_max_shared_memory_per_multiprocessor",
    "smem_per_block": "device__attribute_max_shared_memory_per_block",
    "smem_optin": "device__attribute_max_shared_memory_per_block_optin",
    "max_threads_per_block": "device__attribute_max_threads_per_block",
}
TEXT_METRICS = {"device": "device__attribute_display_name"}
LAUNCH_METRICS = ("grid_size", "block_size", "limit_registers", "limit_shared_mem", "limit_warps", "limit_blocks")


@dataclass(slots=True)
class NcuKernel:
    """One kernel launch as Nsight Compute profiled it; None where the report holds no such metric."""

    index: int  # its place among the report's kernels
    name: str  # ncu's short name (a CUTLASS GEMM is just "Kernel")
    demangled: str  # the full name, as a trace writes it (cut at MAX_TEXT)
    key: str  # what it is matched on: wizard.trace.profile.summary.kernel_key of the whole name
    device: str | None
    values: dict[str, float | None]  # METRICS' keys -> the number

    def get(self, key: str) -> float | None:
        return self.values.get(key)

    def whole(self, key: str) -> int | None:
        value = self.values.get(key)
        return int(value) if value is not None and math.isfinite(value) and value == int(value) else None

    @property
    def has_launch_metrics(self) -> bool:
        """Whether ncu recorded the launch section (a kernel profiled with other sections only has none)."""
        return all(self.whole(k) is not None for k in LAUNCH_METRICS)

    @property
    def grid(self) -> tuple[int, int, int] | None:
        dims = tuple(self.whole(k) for k in ("grid_x", "grid_y", "grid_z"))
        return dims if all(d is not None for d in dims) else None  # type: ignore[return-value]

    @property
    def block(self) -> tuple[int, int, int] | None:
        dims = tuple(self.whole(k) for k in ("block_x", "block_y", "block_z"))
        return dims if all(d is not None for d in dims) else None  # type: ignore[return-value]

    @property
    def shared_memory(self) -> int | None:
        """Static plus dynamic shared memory per block: what a trace's ``shared memory`` is (no reservation)."""
        static, dynamic = self.whole("smem_static"), self.whole("smem_dynamic")
        return None if static is None or dynamic is None else static + dynamic

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Runner(Protocol):
    """wizard.runner.SubprocessRunner's face: what starts the worker (tests inject one)."""

    def run(self, argv: list[str], *, timeout: float) -> Any: ...


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def kernel_from(index: int, raw: dict[str, Any]) -> NcuKernel:
    """A worker's or a CSV row's kernel, every field typed and bounded (the worker is another process: its
    output is input like any other)."""
    values = raw.get("values") if isinstance(raw.get("values"), dict) else {}
    assert isinstance(values, dict)
    name, demangled, device = raw.get("name"), raw.get("demangled"), raw.get("device")
    key = raw.get("key")
    return NcuKernel(
        index,
        name[:MAX_TEXT] if isinstance(name, str) else "",
        demangled[:MAX_TEXT] if isinstance(demangled, str) else "",
        key[:MAX_TEXT] if isinstance(key, str) else "",
        device[:200] if isinstance(device, str) else None,
        {key: _number(values.get(key)) for key in METRICS},
    )


def read_report(path: str, runner: Runner | None = None) -> list[NcuKernel]:
    """An ``.ncu-rep``'s kernels, read by the bounded worker process."""
    from wizard.runner import SubprocessRunner

    chosen = runner or SubprocessRunner()
    with tempfile.TemporaryDirectory(prefix="warpwizard-ncu-") as tmp:
        out = Path(tmp) / "kernels.json"
        result = chosen.run([sys.executable, "-m", "wizard.ncu.worker", path, str(out)], timeout=READ_SECONDS)
        if result.timed_out:
            raise InputFileError(f"{path}: Nsight Compute's report reader did not finish in {READ_SECONDS:g} s")
        if result.returncode == 3:
            from wizard.extras import install_command

            raise MissingDependency(
                f"{path}: reading an .ncu-rep needs NVIDIA's ncu-report package ({install_command('ncu')}; "
                "or export the CSV with `ncu --csv --page raw -i REPORT`, which needs nothing)"
            )
        if result.returncode != 0 or not out.is_file():
            last = (result.output.strip().splitlines() or ["no message"])[-1][:300]
            raise InputFileError(f"{path}: Nsight Compute's report reader failed (exit {result.returncode}): {last}")
        data = json.loads(out.read_text())
    items = data.get("kernels") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InputFileError(f"{path}: Nsight Compute's report reader wrote no kernel list")
    if not items:
        raise InputFileError(
            f"{path}: no profiled kernel in this Nsight Compute report (damaged, or recorded with none)"
        )
    return [kernel_from(i, raw) for i, raw in enumerate(items[:MAX_KERNELS]) if isinstance(raw, dict)]


def read_csv(path: str, text: str) -> list[NcuKernel]:
    """The CSV of ``ncu --csv --page raw``: a header of metric names, a units row, one row per kernel."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    from wizard.trace.profile.summary import kernel_key

    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2 or "Kernel Name" not in rows[0]:
        raise InputFileError(f'{path}: not the CSV of `ncu --csv --page raw` (no "Kernel Name" column)')
    header, body = rows[0], rows[2:] if len(rows) > 2 and not _is_data(rows[1], rows[0]) else rows[1:]
    by_metric = {metric: key for key, metric in METRICS.items()}
    kernels = []
    for i, row in enumerate(body[:MAX_KERNELS]):
        cells = dict(zip(header, row, strict=False))
        values = {by_metric[m]: _csv_number(v) for m, v in cells.items() if m in by_metric}
        name = cells.get("Kernel Name", "")
        device = cells.get(TEXT_METRICS["device"]) or cells.get("Device Name")
        raw = {"name": name, "demangled": name, "key": kernel_key(name), "device": device, "values": values}
        kernels.append(kernel_from(i, raw))
    return kernels


def _is_data(row: list[str], header: list[str]) -> bool:
    """Whether a CSV's second row is a kernel (no units row), by its ID column being a number."""
    cells = dict(zip(header, row, strict=False))
    return cells.get("ID", "").strip().isdigit()


def _csv_number(text: str) -> float | None:
    try:
        return _number(float(text.replace(",", "")))
    except ValueError:
        return None


def is_ncu(path: Path) -> bool:
    """Whether a file is an Nsight Compute report (by its first bytes) or ncu's raw CSV (by its header)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith(NCU_MAGIC) or (head.startswith(b'"') and b'"Kernel Name"' in head)


def read_ncu(path: str, runner: Runner | None = None) -> list[NcuKernel]:
    """The kernels of an Nsight Compute report or CSV, by content."""
    with open(path, "rb") as fh:
        head = fh.read(len(NCU_MAGIC))
        if head == NCU_MAGIC:
            return read_report(path, runner)
        data = head + fh.read(MAX_CSV_BYTES + 1)
    if len(data) > MAX_CSV_BYTES:
        raise InputFileError(f"{path}: an ncu CSV over {MAX_CSV_BYTES} bytes")
    return read_csv(path, data.decode("utf-8", "replace"))
