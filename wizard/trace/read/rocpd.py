"""A minimal reader for AMD's rocpd database (``rocprofv3 --output-format rocpd``, ROCm 7): the kernels, with their
grid, block, registers and LDS, the device they ran on and their timestamps, into the contents every pass reads.

The schema is rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql``: every table is named with
the run's ``{{uuid}}`` after it (``rocpd_kernel_dispatch<uuid>``), and ``rocpd_views.sql`` puts a view without the
suffix over each. Views are never read (``wizard.trace.read.sqlite``), so the tables are found by their name and
suffix; a merged database holds several suffixes, each read with its own symbols and agents. Read, per dispatch:

- ``rocpd_kernel_dispatch``: ``start``/``end`` (nanoseconds), ``agent_id``, ``kernel_id``, ``stream_id``,
  ``dispatch_id``, ``workgroup_size_x/y/z``, ``grid_size_x/y/z``, ``group_segment_size`` (the dispatch's LDS bytes).
  ``grid_size`` is the HSA dispatch packet's, in work-items (``hsa_kernel_dispatch_packet_t`` in ROCm's ``hsa.h``:
  "X dimension of grid, in work-items"): the grid in workgroups, as Kineto's ``grid`` counts blocks, is
  ``ceil(grid_size / workgroup_size)`` per dimension.
- ``rocpd_info_kernel_symbol``: the name (``display_name``, else ``kernel_name``) and the registers:
  ``arch_vgpr_count + accum_vgpr_count``, the vector registers of one work-item (CDNA's unified register file holds
  both), as CUDA's registers per thread are one thread's; scalar registers (``sgpr_count``) are per wavefront and
  are not added.
- ``rocpd_info_agent``: the device, by ``type_index`` (its index among GPUs, the HIP device id), named by
  ``product_name`` (else ``name``).

Not read: the HIP API calls (``rocpd_region``) and the correlation that links a launch to its kernel (through
``rocpd_event``; a kernel's correlation is left empty rather than filled with its ``dispatch_id``, which no call
carries), memory copies, counters. The checks that need those say so (the formats table's
``cannot_show``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from wizard.errors import InputFileError
from wizard.trace.read.collector import MAX_NAME, Collector, TraceContents
from wizard.trace.read.events import Event, EventArgs
from wizard.trace.read.sqlite import (
    Database,
    SqliteBounds,
    columns,
    database_contents,
    integer,
    read_database_file,
    text,
    text_column,
)

WHAT = "a rocpd database"
BATCH = 50_000
_SUFFIX = re.compile(r"[0-9A-Za-z_]*")
DISPATCH = "rocpd_kernel_dispatch"
SYMBOL = "rocpd_info_kernel_symbol"
AGENT = "rocpd_info_agent"
NAMES = frozenset({"display_name", "kernel_name", "product_name", "name"})  # cut in SQL (sqlite.text_column)
_DISPATCH_COLUMNS = (
    "start", "end", "agent_id", "kernel_id", "stream_id", "dispatch_id", "group_segment_size",
    "workgroup_size_x", "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z",
)  # fmt: skip


def suffixes(tables: frozenset[str], base: str) -> list[str]:
    """The run suffixes (``{{uuid}}``) of the tables named ``base`` followed by one."""
    return sorted(
        name[len(base) :] for name in tables if name.startswith(base) and _SUFFIX.fullmatch(name[len(base) :])
    )


def is_rocpd(tables: frozenset[str]) -> bool:
    """Whether a database's tables are rocpd's (the second look at a SQLite file): a kernel-dispatch table."""
    return bool(suffixes(tables, DISPATCH))


def read_rocpd(
    path: Path,
    config: SqliteBounds | None = None,
    on_read: Callable[[int], None] | None = None,
    opened: IO[bytes] | None = None,
) -> TraceContents:
    """A rocpd database (or a gzipped one) as the contents every pass reads; ``opened`` as ``read_nsys`` takes it."""
    contents: TraceContents = read_database_file(
        path, lambda found: (WHAT, read_database), what=WHAT, config=config, on_read=on_read, opened=opened
    )
    return contents


def read_database(path: Path, found: Database) -> TraceContents:
    """The kernels of an open rocpd database."""
    contents = database_contents(path, found, "rocpd-sqlite")
    tables = found.schema.tables
    runs = suffixes(found.schema.names, DISPATCH)
    found.schema.require_ordinary(path, [f"{base}{s}" for s in runs for base in (DISPATCH, SYMBOL, AGENT)])
    if not runs:
        raise InputFileError(f"{path}: a SQLite database, but not a rocpd database (no rocpd_kernel_dispatch table)")
    collector = Collector(contents)
    devices: dict[int, dict[str, Any]] = {}
    for suffix in runs:
        run = _Run(found.db, tables, suffix)
        devices.update(run.agents)
        batch: list[Event] = []
        for event in run.kernels():
            batch.append(event)
            if len(batch) >= BATCH:
                collector.add(batch)
                batch = []
        if batch:
            collector.add(batch)
    contents.writer = "AMD rocprofiler-sdk (rocpd)"
    contents.metadata["rocpd"] = {"runs": len(runs)}
    if devices:
        contents.metadata["deviceProperties"] = [devices[k] for k in sorted(devices)]
    return contents


class _Run:
    """One run's tables (one ``{{uuid}}`` suffix): its agents and symbols, then its dispatches."""

    def __init__(self, db: sqlite3.Connection, tables: frozenset[str], suffix: str) -> None:
        self.db, self.tables, self.suffix = db, tables, suffix
        self.agents: dict[int, dict[str, Any]] = {}  # device index -> deviceProperties
        self.agent_index: dict[int, int] = {}  # agent id -> device index
        agent_cols = ("id", "type", "type_index", "product_name", "name")
        for ident, kind, index, product, name in self._rows(AGENT, agent_cols, texts=NAMES):
            i, device = integer(ident), integer(index)
            if i is None or device is None or kind != "GPU":
                continue
            self.agent_index[i] = device
            self.agents[device] = {"id": device, "name": text(product, MAX_NAME) or text(name, MAX_NAME) or ""}
        self.symbols: dict[int, tuple[str, int | None]] = {}
        cols = ("id", "display_name", "kernel_name", "arch_vgpr_count", "accum_vgpr_count")
        for ident, display, mangled, arch, accum in self._rows(SYMBOL, cols, texts=NAMES):
            if (i := integer(ident)) is not None:
                a, b = integer(arch), integer(accum)
                self.symbols[i] = (
                    text(display, MAX_NAME) or text(mangled, MAX_NAME) or "unknown",
                    a + (b or 0) if a is not None else None,
                )

    def _rows(
        self, base: str, wanted: tuple[str, ...], order: str = "", texts: frozenset[str] = frozenset()
    ) -> Iterator[tuple[Any, ...]]:
        """The ``wanted`` columns of this run's ``base`` table (NULL where the table lacks one); none without it.
        ``texts``: names, cut by SQLite to the reader's length (``text_column``), never fetched whole."""
        table = f"{base}{self.suffix}"
        if table not in self.tables:
            return
        have = columns(self.db, table)
        order = order if "start" in have else ""
        picked = ", ".join(
            (text_column(c, MAX_NAME) if c in texts else f'"{c}"') if c in have else "NULL" for c in wanted
        )
        quoted = table.replace('"', '""')
        cursor = self.db.execute(f'SELECT {picked} FROM "{quoted}"{order}')
        while batch := cursor.fetchmany(BATCH):
            yield from batch

    def kernels(self) -> Iterator[Event]:
        for row in self._rows(DISPATCH, _DISPATCH_COLUMNS, ' ORDER BY "start"'):
            start, end, agent, kernel, stream, _dispatch, lds, *dims = row
            s, e = integer(start), integer(end)
            if s is None:
                continue
            workgroup = [integer(d) for d in dims[:3]]
            work_items = [integer(d) for d in dims[3:]]
            name, registers = self.symbols.get(integer(kernel) or -1, ("unknown", None))
            device = self.agent_index.get(integer(agent) or -1)
            yield Event(
                cat="kernel",
                name=name,
                pid=device,
                tid=integer(stream),
                ts=s / 1000.0,
                dur=(e - s) / 1000.0 if e is not None else 0.0,
                args=EventArgs(
                    device=device,
                    stream=integer(stream),
                    grid=_workgroups(work_items, workgroup),
                    block=workgroup if None not in workgroup else None,
                    registers=registers,
                    shared_memory=integer(lds),
                ),
            )


def _workgroups(work_items: list[int | None], workgroup: list[int | None]) -> list[int] | None:
    """The grid in workgroups: each dimension's work-items over its workgroup size, rounded up (a partial
    workgroup at the edge still runs)."""
    if None in work_items or None in workgroup or any(w is None or w <= 0 for w in workgroup):
        return None
    return [-(-int(g) // int(w)) for g, w in zip(work_items, workgroup, strict=True)]  # type: ignore[arg-type]
