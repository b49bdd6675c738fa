"""Decoding a big trace's blocks in worker processes, merged back in file order.

The reader cuts blocks and submits them; a worker reads its own byte range of an uncompressed
file (nothing crosses the pipe but two offsets) or gets the inflated bytes of a compressed one,
decodes them with msgspec and returns compact records. A block the fast decoder cannot take comes
back as None: the reader then reads the whole file again sequentially, so both paths always give
the same result.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from wizard.file_ends import read_at
from wizard.trace.read.collector import Collector, PieceResult, TraceContents, collect_piece
from wizard.trace.read.source import open_input

if TYPE_CHECKING:  # a pool's modules load in new_pool, before any fork: a small trace, read in one process, skips them
    from concurrent.futures import Future, ProcessPoolExecutor

_WORKER_FILES: dict[str, IO[bytes]] = {}


def decode_piece(piece: bytes) -> PieceResult | None:
    """Worker side: None when the fast decoder cannot take the block."""
    _orphaned()  # between blocks: a worker of a parent killed without Linux's parent-death signal stops here
    gc.disable()  # a worker only builds acyclic records
    return collect_piece(piece)


def decode_range(path: str, start: int, end: int, inherited: tuple[int, int, int] | None = None) -> PieceResult | None:
    """Worker side for an uncompressed file: read the block by offset, then decode it. ``inherited``: the read's
    one open (descriptor, st_dev, st_ino), which a worker forked after it holds: read there, so the file is opened
    once; a worker that holds no such descriptor (checked: the same file) opens the path itself."""
    data = _pread(inherited, start, end - start) if inherited is not None else None
    if data is None:
        fh = _WORKER_FILES.get(path)
        if fh is None:
            fh = _WORKER_FILES[path] = open_input(Path(path))[0]  # kept for the worker's life
        fh.seek(start)
        data = fh.read(end - start)
    return decode_piece(data)


def _pread(inherited: tuple[int, int, int], start: int, size: int) -> bytes | None:
    """``size`` bytes from ``start`` of the inherited descriptor, None unless it is the file the parent opened."""
    fd, device, inode = inherited
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (device, inode):
            return None
        return read_at(fd, size, start)
    except OSError:
        return None


def new_pool(workers: int) -> ProcessPoolExecutor:
    """Workers that die with this process, however it dies (see ``_worker_start``). libc's ``prctl`` is found
    here, before the fork: a worker imports nothing (another thread may have held the import lock at the fork).
    Linux sends the signal when the *thread* that forked ends: a fork pool starts its workers at the first submit,
    and every pool here is submitted to, drained and shut down within one call of one thread."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from wizard.runner import PR_SET_PDEATHSIG, linux_prctl

    prctl = linux_prctl()
    arm = None if prctl is None else functools.partial(prctl, PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_worker_start,
        initargs=(os.getpid(), arm),
    )


_PARENT: list[int] = []  # in a worker: the pid of the process that started it


def _worker_start(parent: int, arm: Callable[[], object] | None) -> None:
    """A worker's first call: SIGKILL when its parent dies (Linux's ``PR_SET_PDEATHSIG``; the pool's own workers
    outlived a SIGKILLed warpwizard, the OOM killer's way, under init, holding their memory), and an exit at once
    where the parent is already gone. Elsewhere, ``_orphaned`` between blocks is the check."""
    _PARENT[:] = [parent]
    if arm is not None:
        arm()
    _orphaned()


def _orphaned() -> None:
    """In a worker whose parent is gone (re-parented to init or a subreaper): exit, no result has a reader."""
    if _PARENT and os.getppid() != _PARENT[0]:
        os._exit(137)


def stop_pool(pool: ProcessPoolExecutor, *, failed: bool) -> None:
    """Shut a pool down; after a failure (out of memory, Ctrl-C, a worker killed) its workers are
    killed first: one blocked on sending a result nobody reads would keep shutdown, and Python's
    exit, waiting forever (CPython 3.11 joins them; the run hung after an out-of-memory error)."""
    if not failed:
        pool.shutdown(wait=True, cancel_futures=True)
        return
    workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() forgets them
    for process in workers:
        with contextlib.suppress(Exception):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        with contextlib.suppress(Exception):
            process.join(timeout=5)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool that never outlives an error in this process (see ``stop_pool``)."""
    pool = new_pool(workers)
    failed = True
    try:
        yield pool
        failed = False
    finally:
        stop_pool(pool, failed=failed)


class NeedsExactPath(Exception):
    """A block needs the exact decoder, which runs in order: read the file sequentially instead."""


class ParallelDecoder:
    """Keeps ``in_flight`` blocks decoding and merges them into the collector in file order."""

    def __init__(
        self,
        workers: int,
        collector: Collector,
        contents: TraceContents,
        clock: dict[str, float],
        on_progress: Callable[[TraceContents], None] | None = None,
    ) -> None:
        self.pool: ProcessPoolExecutor = new_pool(workers)
        self.in_flight = workers + 1
        self.collector = collector
        self.contents = contents
        self.clock = clock
        self.on_progress = on_progress
        self.pending: deque[Future[PieceResult | None]] = deque()

    def submit_bytes(self, piece: bytes) -> None:
        self._queue(self.pool.submit(decode_piece, piece))

    def submit_range(self, path: str, start: int, end: int, inherited: tuple[int, int, int] | None = None) -> None:
        self._queue(self.pool.submit(decode_range, path, start, end, inherited))

    def _queue(self, job: Future[PieceResult | None]) -> None:
        self.pending.append(job)
        if len(self.pending) > self.in_flight:
            self.merge_next()

    def merge_next(self) -> None:
        started = time.perf_counter()
        part = self.pending.popleft().result()
        self.clock["decode_s"] += time.perf_counter() - started  # waiting on workers
        if part is None:
            raise NeedsExactPath
        merged = time.perf_counter()
        self.collector.merge(part)
        self.clock["collect_s"] += time.perf_counter() - merged
        if self.on_progress is not None:
            self.on_progress(self.contents)

    def drain(self) -> None:
        while self.pending:
            self.merge_next()

    def close(self, *, failed: bool = False) -> None:
        stop_pool(self.pool, failed=failed)
