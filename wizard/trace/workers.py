"""The worker side of parallel reading: decode one block, return compact results.

Runs in worker processes (forked), so it keeps no state but an open file per path.
"""

from __future__ import annotations

import gc
from collections import Counter
from dataclasses import dataclass
from typing import IO

from wizard.trace.collector import Collector, TraceContents
from wizard.trace.events import EVENTS_DECODER, decode_block
from wizard.trace.records import IntervalIndex, KernelRecord, RuntimeIndex


@dataclass
class PieceResult:
    """What a worker process made of one block of events; merged in file order."""

    kernels: list[KernelRecord]
    runtime: RuntimeIndex
    ops: IntervalIndex
    python: IntervalIndex
    non_finite: Counter[str]
    events: int
    last_ts: float | None


_WORKER_FILES: dict[str, IO[bytes]] = {}


def decode_range(path: str, start: int, end: int) -> PieceResult | None:
    """Worker side for an uncompressed file: read the block by offset, then decode it."""
    fh = _WORKER_FILES.get(path)
    if fh is None:
        fh = _WORKER_FILES[path] = open(path, "rb")  # noqa: SIM115 - kept for the worker's life
    fh.seek(start)
    return decode_piece(fh.read(end - start))


def decode_piece(piece: bytes) -> PieceResult | None:
    """Worker side of the parallel path: None when the fast decoder cannot take the block."""
    gc.disable()  # a worker only builds acyclic records
    events = decode_block(EVENTS_DECODER, piece)
    if events is None:
        return None
    part = TraceContents(path="")
    Collector(part).add(events)
    return PieceResult(part.kernels, part.runtime, part.ops, part.python, part.non_finite, part.events, part.last_ts)
