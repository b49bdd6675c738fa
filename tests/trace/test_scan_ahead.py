"""The scanner's thread (``ScanAhead`` in wizard/_core.c, the reader's ``ReaderConfig.ahead``): the first pass of
the next block runs there while the reader collects the block before. What it takes must be what scan_events would
have found itself, block by block: the same events kept, the same blocks declined, and a number that CPython's own
strtod reads (an exponent, 17 significant digits: Kineto's occupancy and "blocks per SM") read to the same double by
the C library's ``strtod_l``. Its bookkeeping (two blocks held, the older dropped, a block it was not handed,
close, a forked child) is checked through the object's own counts."""

from __future__ import annotations

import math
import os
import random
import signal
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import deep_state, kept
from wizard.compiled_core import compiled
from wizard.trace.read import collector as collector_module
from wizard.trace.read import reader as reader_module
from wizard.trace.read.collector import Collector, TraceContents
from wizard.trace.read.events import EVENTS_DECODER, decode_block
from wizard.trace.read.reader import ReaderConfig, read_trace

if TYPE_CHECKING:
    from wizard._core import ScanAhead

CORE = compiled()
if CORE is None or collector_module.scan_events is None:
    pytest.skip("the compiled core is not built or refused here (WARPWIZARD_PURE=1)", allow_module_level=True)
SCAN = collector_module.scan_events
THREADS = sys.platform.startswith("linux") or sys.platform == "darwin"  # _core.c: SCAN_AHEAD, strtod_l

KERNEL = (
    b'{"ph":"X","cat":"kernel","name":"gemm_%d","pid":0,"tid":7,"ts":%d,"dur":3,'
    b'"args":{"correlation":%d,"grid":[1,2,3],"block":[64,1,1],"blocks per SM":%s,'
    b'"est. achieved occupancy %%":%s,"warps per SM":%s}}'
)
LAUNCH = (
    b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":1,'
    b'"args":{"correlation":%d}}'
)


def ahead() -> ScanAhead:
    """The core's ScanAhead, as the reader makes it (with the properties the reader does not use: its counts)."""
    made = collector_module.new_scan_ahead()
    assert made is not None
    return made


def fresh() -> Collector:
    return Collector(TraceContents(path=""))


def python_float_text(rng: random.Random) -> bytes:
    """A double as Python writes it (repr: the shortest text that reads back to it, often 17 digits)."""
    value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
    while math.isnan(value) or math.isinf(value) or abs(value) < 2.3e-308:
        value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
    return repr(value).encode()


def events(count: int, seed: int = 0) -> list[bytes]:
    """Kernels and their launches, each kernel's metrics numbers CPython's strtod reads (not one division)."""
    rng = random.Random(seed)
    made = []
    for k in range(count):
        per_sm = repr(rng.randrange(1, 10**6) / 37).encode()  # 1/37ths: 16-17 significant digits
        made.append(KERNEL % (k, 10 * k + 5, k, per_sm, python_float_text(rng), b"%de-3" % rng.randrange(1, 999)))
        made.append(LAUNCH % (10 * k, k))
    return made


def both_ways(block: bytes) -> tuple[bool, Any, bool, Any, tuple[int, int]]:
    """scan_events of the block with its first pass on the thread, and without: (took, what the collector kept)
    each, and the thread's counts."""
    thread = ahead()
    try:
        on_thread = fresh()
        assert thread.start(block, 0, len(block)) is THREADS
        took_there = SCAN(on_thread, block, 0, len(block), thread)
        counts = thread.taken
    finally:
        thread.close()
    here = fresh()
    took_here = SCAN(here, block, 0, len(block), None)
    return took_there, kept(on_thread), took_here, kept(here), counts


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here: start() takes nothing, every block is scanned in line")
def test_numbers_cpython_reads_are_read_the_same_on_the_thread() -> None:
    """Blocks whose numbers the first pass cannot divide once (17 significant digits, exponents): the thread reads
    them with strtod_l and the block is taken from it (not scanned again), the same as scan_events alone."""
    for seed in range(20):
        block = b",".join(events(50, seed))
        took_there, there, took_here, here, counts = both_ways(block)
        assert took_there and took_here and there == here, seed
        assert counts == (1, 0)
    reference = fresh()
    decoded = decode_block(EVENTS_DECODER, b",".join(events(50, 7)))
    assert decoded is not None
    reference.add(decoded)
    _, there, _, _, _ = both_ways(b",".join(events(50, 7)))
    assert there == kept(reference)  # and msgspec's decoding keeps the same


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
@pytest.mark.parametrize(
    ("number", "taken"),
    [
        (b"1e400", False),  # past a double's range: declined on both paths (msgspec reads inf)
        (b"-1e400", False),
        (b"1e-310", False),  # subnormal: declined on both
        (b"2.2250738585072014e-308", True),  # the smallest normal double
        (b"1.7976931348623157e308", True),  # the largest
        (b"0.1e1", True),
        (b"12345678901234567890.5", True),  # 21 digits: no one-division path
        (b"-0.0e0", True),
        (b"4.9406564584124654e-324", False),
    ],
)
def test_the_edges_of_a_double_are_taken_or_declined_as_here(number: bytes, taken: bool) -> None:
    """The thread's strtod_l checks what PyOS_string_to_double checks here: finite, zero or normal; the block is
    declined by both or taken by both, with the same values, in a field the collector reads (an args metric) and
    in a key no field has (skipped, but checked)."""
    unknown = (b'"warps per SM":3,"unknown key":%s', b'"warps per SM":3,"unknown":[1,{"x":%s}]')
    for args in (b'"warps per SM":%s', *unknown):
        block = b",".join([LAUNCH % (1, 2), KERNEL.replace(b'"warps per SM":%s', args) % (1, 5, 2, b"1", b"2", number)])
        took_there, there, took_here, here, counts = both_ways(block)
        assert (took_there, took_here) == (taken, taken), (number, args)
        assert there == here
        assert counts == (1, 0)  # taken from the thread, or declined there: never scanned again here


def trace_of(path: Path, count: int) -> Path:
    path.write_bytes(b'{"traceEvents":[\n' + b",\n".join(events(count)) + b'\n],"traceName":"t"}\n')
    return path


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_read_hands_every_block_but_the_first_to_the_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace of small events read in 4 KiB blocks: every block after the first was handed over while the one
    before it was collected, and taken from the thread; what the read keeps is the read's without the thread, and
    without the scanner."""
    monkeypatch.setattr(reader_module, "usable_cores", lambda: 2)
    path = trace_of(tmp_path / "trace.json", 600)
    seen: list[tuple[bool, ScanAhead | None]] = []

    def spy(collector: Collector, buf: bytes, start: int, end: int, thread: ScanAhead | None = None) -> bool:
        took = SCAN(collector, buf, start, end, thread)
        seen.append((took, thread))
        return took

    monkeypatch.setattr(collector_module, "scan_events", spy)
    config = ReaderConfig(workers=0, block_size=4 << 10)
    threaded = read_trace(path, config=config)
    assert len(seen) > 40 and all(took for took, _ in seen)
    threads = {id(thread): thread for _, thread in seen if thread is not None}
    assert len(threads) == 1 and len(seen) == sum(1 for _, thread in seen if thread is not None)
    (thread,) = threads.values()
    assert thread.taken == (len(seen) - 1, 0) and not thread.threaded and thread.pending == []  # closed, joined
    seen.clear()
    alone = read_trace(path, config=ReaderConfig(workers=0, block_size=4 << 10, ahead=False))
    assert len(seen) > 40 and all(thread is None for _, thread in seen)
    monkeypatch.setattr(collector_module, "scan_events", None)
    decoded = read_trace(path, config=config)
    for contents in (threaded, alone, decoded):
        contents.timing.clear()
    assert deep_state(threaded) == deep_state(alone) == deep_state(decoded)


def test_one_core_starts_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On one core the thread would only take turns with the reader: none is made."""
    monkeypatch.setattr(reader_module, "usable_cores", lambda: 1)
    made: list[object] = []
    monkeypatch.setattr(collector_module, "new_scan_ahead", lambda: made.append(1))
    read_trace(trace_of(tmp_path / "trace.json", 100), config=ReaderConfig(workers=0, block_size=4 << 10))
    assert made == []


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_declined_block_on_the_thread_is_declined_without_a_second_scan() -> None:
    """A block the thread declines (an escape in a string: msgspec's to read) is declined by scan_events from
    what the thread found, and the collector is unchanged."""
    block = b",".join([LAUNCH % (1, 2), b'{"ph":"X","cat":"kernel","name":"a\\"b","ts":1,"dur":2}'])
    took_there, there, took_here, here, counts = both_ways(block)
    assert (took_there, took_here) == (False, False) and there == here == kept(fresh())
    assert counts == (1, 0)


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_two_blocks_are_held_and_the_older_goes_first() -> None:
    """start() holds two blocks; a third drops the oldest; scan_events of a block drops those handed before it (the
    reader went another way), and scans a block it was not handed itself."""
    a, b, c = (b",".join(events(5, seed)) for seed in (1, 2, 3))
    thread = ahead()
    try:
        assert thread.start(a, 0, len(a)) and thread.start(b, 0, len(b))
        assert thread.pending == [(a, 0, len(a)), (b, 0, len(b))] and thread.threaded
        assert thread.start(c, 0, len(c))
        assert thread.pending == [(b, 0, len(b)), (c, 0, len(c))]
        assert SCAN(fresh(), a, 0, len(a), thread)  # not handed (dropped): scanned here
        assert thread.taken == (0, 0) and len(thread.pending) == 2
        assert SCAN(fresh(), c, 0, len(c), thread)  # c taken, b (handed before it) dropped
        assert thread.taken == (1, 0) and thread.pending == []
        assert SCAN(fresh(), b, 0, len(b) - 1, thread) is False  # cut short: declined, here
    finally:
        thread.close()
    thread.close()  # twice: nothing left to stop
    assert not thread.threaded and thread.pending == []
    assert thread.start(a, 0, len(a)) and thread.threaded  # a closed ScanAhead starts a thread again
    del thread  # its end joins it


def test_start_checks_its_block() -> None:
    """Anything but bytes is not taken (as scan_events declines it); a range outside the bytes is refused with the
    words scan_events uses; scan_events refuses an ahead that is no ScanAhead."""
    thread = ahead()
    try:
        assert thread.start(bytearray(b"{}"), 0, 2) is False and thread.pending == []  # type: ignore[arg-type]
        for start, end in ((-1, 2), (2, 1), (0, 3)):
            with pytest.raises(ValueError, match=r"start: the block is not within the buffer \(0 <= start"):
                thread.start(b"{}", start, end)
        with pytest.raises(TypeError, match="start takes"):
            thread.start(b"{}", 0)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"scan_events takes \(collector, buf, start, end\[, ahead: ScanAhead"):
            SCAN(fresh(), b"{}", 0, 2, "ahead")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="ScanAhead\\(\\) takes no arguments"):
            CORE.ScanAhead(1)  # type: ignore[union-attr]
    finally:
        thread.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_forked_child_scans_every_block_itself() -> None:
    """A child forked while the parent's thread holds a block has a copy of the object but no thread: start()
    takes nothing there, the block it holds is forgotten (not waited for), and scan_events scans it in line."""
    block = b",".join(events(200))
    thread = ahead()
    assert thread.start(block, 0, len(block))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest from here, an exit status only
        try:
            os.close(read)
            ok = (
                not thread.threaded
                and thread.start(block, 0, len(block)) is False
                and SCAN(fresh(), block, 0, len(block), thread)
                and thread.taken == (0, 1)
            )
            thread.close()
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write)
    said = os.read(read, 16)
    os.close(read)
    os.waitpid(pid, 0)
    assert said == b"ok"
    assert SCAN(fresh(), block, 0, len(block), thread) and thread.taken == (1, 0)
    thread.close()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="no /proc here to read the threads' signal masks from")
def test_the_thread_blocks_every_signal_but_a_faults() -> None:
    """The kernel gives a process's signals to a thread that does not block them: the scanner's thread blocks them,
    so a Ctrl-C reaches the main thread, whose blocking read it must end (wizard/threads.py says the same of
    Python's threads), all but those a fault raises in the thread itself. Read from /proc: the thread started,
    and its mask."""
    before = {task.name for task in Path("/proc/self/task").iterdir()}
    thread = ahead()
    try:
        block = b",".join(events(5))
        assert thread.start(block, 0, len(block)) and thread.threaded
        # its block taken from it: it has run (glibc starts a thread with every signal blocked, then sets its mask)
        assert SCAN(fresh(), block, 0, len(block), thread) and thread.taken == (1, 0)
        # found by its name (another test's helper thread may end or start meanwhile)
        ((tid, status),) = [
            (task.name, found)
            for task in Path("/proc/self/task").iterdir()
            if task.name not in before and (found := _status(task)).get("Name", "").strip() == "warpwizard-scan"
        ]
        blocked = int(status["SigBlk"], 16)
        asked = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM)
        assert all(blocked & (1 << (signum - 1)) for signum in asked), hex(blocked)
        # a fault's own are not: blocked, a crash there would kill the process with no handler run (faulthandler)
        faults = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT)
        assert not any(blocked & (1 << (signum - 1)) for signum in faults), hex(blocked)
    finally:
        thread.close()
    assert not (Path("/proc/self/task") / tid).exists()  # joined


def _status(task: Path) -> dict[str, str]:
    """A thread's /proc status, as fields; empty where it ended meanwhile."""
    try:
        text = (task / "status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


@pytest.mark.parametrize(
    ("jobs", "engine", "threads"),
    [(None, None, True), (1, None, False), (None, "none", True), (None, "local", False), (1, "none", False)],
)
def test_jobs_1_and_a_process_a_core_start_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int | None, engine: str | None, threads: bool
) -> None:
    """``--jobs 1`` is one core: the reader makes no scanner's thread then; nor where ranks are read a process a
    core (``--engine local`` or ``dask``); it does for one file, and for ranks read one after another here."""
    from wizard.inspect_options import InspectOptions
    from wizard.jobs.step import summarize
    from wizard.trace.inspection.run import inspect_paths

    monkeypatch.setattr(reader_module, "usable_cores", lambda: 2)
    made: list[object] = []
    original = collector_module.new_scan_ahead

    def counted() -> object:
        made.append(original())
        return made[-1]

    monkeypatch.setattr(collector_module, "new_scan_ahead", counted)
    path = trace_of(tmp_path / "trace.json", 100)
    options = InspectOptions(jobs=jobs, engine=engine)  # type: ignore[arg-type]
    if engine is None:
        inspect_paths([str(path)], options)
    else:
        assert summarize(str(path), options).summary is not None
    assert len(made) == (1 if threads else 0)


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_second_thread_cannot_use_it_while_it_waits() -> None:
    """A call that waits for the thread (its block, or its end) releases the GIL; another Python thread's call on
    the same object meanwhile is refused (RuntimeError), not run into the blocks the first call is taking. Two
    threads use one object until one is refused; alone again, it reads as before."""
    import threading

    block = b",".join(events(3000))
    thread = ahead()
    refused: list[str] = []

    def use(times: int) -> None:
        for _ in range(times):
            if refused:
                return
            try:
                if thread.start(block, 0, len(block)):
                    SCAN(fresh(), block, 0, len(block), thread)
                thread.close()
            except RuntimeError as exc:
                refused.append(str(exc))

    try:
        runner = threading.Thread(target=use, args=(500,))
        runner.start()
        use(500)
        runner.join()
        assert refused and set(refused) == {"ScanAhead: used by another thread while it waits for its block"}
        collector = fresh()
        assert thread.start(block, 0, len(block)) and SCAN(collector, block, 0, len(block), thread)
        assert kept(collector) == both_ways(block)[3]
    finally:
        thread.close()


EVENT = b'{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":1,"ts":%d,"dur":1}'
NESTED = b'{"ph":"X","cat":"cpu_op","name":"n","pid":1,"tid":1,"ts":%d,"dur":1,"args":{"deep":[{"a":1},\n{"b":2}]}}'


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_declined_block_read_past_by_a_fill_is_read_again_from_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fill keeps only what follows a handed block (``_past``). When the block is then declined (a cut inside an
    event's nested array of objects, where a newline follows a ``},``: neither the scanner nor msgspec reads it),
    the buffer is rebuilt from the block's own bytes (``_rewind``) for the exact path: the reads are the reads
    without the thread and without the scanner, in small blocks where that happens (it did, and is counted)."""
    monkeypatch.setattr(reader_module, "usable_cores", lambda: 2)
    rebuilt: list[bool] = []
    rewind = reader_module.TraceWalker._rewind

    def counted(walker: reader_module.TraceWalker, handed: Any) -> None:
        rebuilt.append(walker.b.base + walker.b.pos != handed.start)
        rewind(walker, handed)

    monkeypatch.setattr(reader_module.TraceWalker, "_rewind", counted)
    path = tmp_path / "trace.json"
    # (events, every how many one is nested, block bytes): each of the first six made the reader rebuild its buffer
    # once; in the last a declined handed block had not been read past (the rebuild not needed)
    cases = ((10, 5, 512), (12, 3, 512), (18, 3, 256), (30, 5, 256), (15, 3, 1024), (35, 7, 512), (40, 4, 512))
    for count, every, block in cases:
        listed = [NESTED % k if k % every == every - 1 else EVENT % (k, k) for k in range(count)]
        path.write_bytes(b'{"traceEvents":[\n' + b",\n".join(listed) + b"\n]}")
        reads = []
        for ahead, scanner in ((True, SCAN), (False, SCAN), (False, None)):
            monkeypatch.setattr(collector_module, "scan_events", scanner)
            contents = read_trace(path, config=ReaderConfig(workers=0, block_size=block, ahead=ahead))
            contents.timing.clear()
            reads.append(deep_state(contents))
        assert reads[0] == reads[1] == reads[2], (count, every, block)
        assert read_trace(path, config=ReaderConfig(workers=0, ahead=False)).events == count
    assert rebuilt == [True] * 6 + [False]


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_block_scanned_before_the_collector_was_bound_again_is_scanned_again() -> None:
    """json_bind may move the fields the scanner reads: a block the thread scanned under the binding before is not
    taken (scanned again here: the counts say so), and the result is the in-line scan's."""
    block = b",".join(events(2000, 1))
    thread = ahead()
    try:
        assert thread.start(block, 0, len(block))
        assert collector_module.compiled_collect_events() is not None  # json_bind again, the block held
        collector = fresh()
        assert SCAN(collector, block, 0, len(block), thread)
        assert thread.taken == (0, 1)
    finally:
        thread.close()
    assert kept(collector) == both_ways(block)[3]


DEEPER = (
    b'{"ph":"X","cat":"cpu_op","name":"n","pid":1,"tid":1,"ts":%d,"dur":1,'
    b'"args":{"deep":[{"a":1},\n{"b":2},\n{"c":3},\n{"d":4}]}}'
)


@pytest.mark.skipif(not THREADS, reason="no POSIX threads here")
def test_a_handed_block_the_exact_path_read_past_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block cut inside an event's nested array of objects hands over a next block that starts inside that event
    too; the exact path then reads the whole event, past the handed block's start, and the handed block is not
    taken (``_handed_here``: it must start at the reader's place): the reads are the reads without the thread."""
    monkeypatch.setattr(reader_module, "usable_cores", lambda: 2)
    passed: list[int] = []
    here = reader_module.TraceWalker._handed_here

    def counted(walker: reader_module.TraceWalker) -> Any:
        handed = walker.handed
        found = here(walker)
        if handed is not None and found is None and handed.start != walker.b.base + walker.b.pos:
            passed.append(handed.start)
        return found

    monkeypatch.setattr(reader_module.TraceWalker, "_handed_here", counted)
    path = tmp_path / "trace.json"
    for count, block in ((13, 256), (17, 512)):
        listed = [DEEPER % k if k % 3 == 2 else EVENT % (k, k) for k in range(count)]
        path.write_bytes(b'{"traceEvents":[\n' + b",\n".join(listed) + b"\n]}")
        threaded = read_trace(path, config=ReaderConfig(workers=0, block_size=block))
        alone = read_trace(path, config=ReaderConfig(workers=0, block_size=block, ahead=False))
        threaded.timing.clear()
        alone.timing.clear()
        assert threaded.events == count and deep_state(threaded) == deep_state(alone)
    assert len(passed) == 6, passed
