"""Peak memory of the steps that set `trace inspect --json`'s peak at 100-200 MB (issue 48; measured in
benchmarks/results-2026-12-02-memory2.md): the copies of a block before it is decoded, the block's size, the health
pass's first launch of each correlation id and its innermost-span sweep, the profile's op groups, and OpenSSL left
unloaded. Each bound sits between what the step took before its change and after it; each answer is checked
against a second computation written here."""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import tracemalloc
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from tests.conftest import REPO, cli_env
from tests.helpers import demo_trace
from wizard.file_ends import HASHED_BYTES, sha256_ends
from wizard.testing.traces import demo_launches
from wizard.trace.health import key_averages
from wizard.trace.profile import summary
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.events import decode_block
from wizard.trace.read.reader import ReaderConfig, read_trace
from wizard.trace.read.records import NO_CORRELATION, OpInfo


def peak_bytes(call: Callable[[], Any]) -> tuple[int, Any]:
    """tracemalloc's peak over ``call`` above what was held before it, and its answer."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        answer = call()
        return tracemalloc.get_traced_memory()[1] - base, answer
    finally:
        tracemalloc.stop()


def test_a_block_is_copied_once_to_be_decoded() -> None:
    """decode_block joins the brackets in one copy of the block (``b"[" + piece + b"]"`` held two at once), and
    takes the reader's view of its window without a copy of its own."""
    size = 4 << 20
    window = b' {"name": "' + b"x" * size + b'"} '
    piece = memoryview(window)[1:-1]
    decoder = msgspec.json.Decoder(list[msgspec.Raw])
    peak, raws = peak_bytes(lambda: decode_block(decoder, piece))
    assert [bytes(r) for r in raws] == [bytes(piece)]
    assert peak < 1.25 * size, peak  # 2x the block before (8.4 MB), 1x now (4.2 MB)


@pytest.mark.parametrize("ahead", [False, True], ids=["one-thread", "scanner-thread"])
def test_the_reads_working_set_is_a_small_block(tmp_path: Path, ahead: bool) -> None:
    """What a read holds at its peak beyond what it keeps: one block's decoded events and its copies. The default
    block is 512 KiB (``ReaderConfig.block_size``): 2 MiB blocks held 17 MB here, a 5 MB builder trace. With the
    scanner's thread (``ReaderConfig.ahead``) the buffer is read four blocks at a time: 1.6 MB without it, 4.8 MB
    with it (3.2 MB with two-block reads, slower: docs/performance.md). Not counted here: the compiled scanner's
    arrays of a block's fields, the C library's since the thread fills them without the GIL (0.78 MiB a block of
    the H800 trace; three at most with the thread, one without; test_scan_events.py checks they are freed)."""
    trace = demo_trace(tmp_path / "demo.json", repeat=1200)
    assert trace.stat().st_size > 4 << 20  # several blocks of either size
    tracemalloc.start()
    try:
        contents = read_trace(trace, config=ReaderConfig(ahead=ahead))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(contents.kernels) == 1200 * len(demo_launches())
    assert peak - kept < 8 << 20, (peak - kept) / 2**20  # 17.1 MB with 2 MiB blocks


def test_the_first_call_of_each_correlation_in_bounded_memory() -> None:
    """The health pass's launch of each GPU event (``_launches``): the runtime calls read a chunk at a time against
    the GPU events' ids (the masked, sorted and kept copies of three int64 columns held ~56 bytes a call at once;
    then one order of every call's id and start, 32)."""
    calls = 200_000
    contents = TraceContents(path="")
    rng = np.random.default_rng(48)
    ids = rng.integers(0, calls // 2, calls).tolist()  # ids repeat: the earliest call of each is the launch
    starts = rng.uniform(0, 1e6, calls).tolist()
    for n, (corr, ts) in enumerate(zip(ids, starts, strict=True)):
        contents.runtime.add(None if n % 97 == 0 else corr, 1, n % 7, ts, "cudaLaunchKernel")
    wanted = np.array([*range(0, calls // 2, 3), NO_CORRELATION, calls], dtype=np.int64)
    peak, (thread, at) = peak_bytes(lambda: key_averages._launches(contents, wanted))
    first: dict[int, tuple[float, int]] = {}  # the second computation: a plain walk in file order
    for n, (corr, ts) in enumerate(zip(ids, starts, strict=True)):
        if n % 97 and (corr not in first or ts < first[corr][0]):
            first[corr] = (ts, n % 7)
    expected = [first.get(c, (0.0, -1)) for c in wanted.tolist()]
    assert thread.tolist() == [t for _, t in expected]
    assert at.tolist() == [s for s, _ in expected]
    assert peak < 12 * calls, peak / calls  # 56 bytes a call, then 32 (a sort of every call), 8 now


def test_op_groups_in_bounded_memory() -> None:
    """The profile's op groups: the ops read where the index keeps them, a range of groups at a time (every op's
    duration and descriptor id were written into one array each, 12 bytes an op: memory5), the group of each op
    made 16-bit at once (not int64 then a copy), the ops ordered a range of groups at a time (``_group_ranges``:
    here 40 groups in five ranges)."""
    ops, threads, names = 300_000, 8, 40
    contents = TraceContents(path="")
    rng = np.random.default_rng(7)
    starts = rng.uniform(0, 1e6, ops).tolist()
    lengths = rng.exponential(10.0, ops).tolist()
    kinds = rng.integers(0, names, ops).tolist()
    refs = [contents.ops.ref(OpInfo(f"aten::op{k}", None, None, None)) for k in range(names)]
    for n in range(ops):
        contents.ops.add(1, n % threads, starts[n], starts[n] + lengths[n], refs[kinds[n]])
    peak, (by_shape, by_name) = peak_bytes(lambda: summary._op_groups(contents))
    assert by_shape == []  # no op carries Input Dims
    durations: dict[str, list[float]] = defaultdict(list)  # the second computation: by thread, as the index keeps them
    for t in range(threads):
        for n in range(t, ops, threads):
            durations[f"aten::op{kinds[n]}"].append((starts[n] + lengths[n]) - starts[n])
    got = {g.name: (g.calls, g.median_us) for g in by_name}
    assert got == {k: (len(v), statistics.median(v)) for k, v in durations.items()}
    totals = {g.name: g.total_us for g in by_name}
    assert all(abs(totals[k] - sum(v)) <= 1e-9 * sum(v) for k, v in durations.items())
    assert peak < 12 * ops, peak / ops  # 55 bytes an op, then 26, then 22 (every op's duration and id), 9 now


# The real entry point in its own process, then the modules it loaded.
LOADED = """
import sys, io, contextlib
from wizard.cli.app import entry
sys.argv = ["warpwizard", "trace", "inspect", "--json", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        entry()
    except SystemExit:
        pass
print(" ".join(sorted(sys.modules)))
"""


def test_an_inspection_does_not_load_openssl_to_fingerprint_its_trace(tmp_path: Path) -> None:
    """``--from``'s fingerprint (wizard/file_ends.py) is hashed by CPython's own SHA-256: hashlib's import loads
    OpenSSL's libcrypto, 3.4 MB of every inspection's resident set (a thirtieth of a 100 MB file)."""
    trace = demo_trace(tmp_path / "small.json")
    done = subprocess.run(
        [sys.executable, "-c", LOADED, str(trace)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=cli_env(PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(done.stdout.split())
    assert "wizard.file_ends" in loaded  # the fingerprint was taken in this process
    assert "_hashlib" not in loaded


def test_the_fingerprint_is_the_sha256_of_the_ends(tmp_path: Path) -> None:
    """The same digest as hashlib's (the formula every recorded transcript used), small and large files alike."""
    for size in (10, HASHED_BYTES, 3 * HASHED_BYTES + 7):
        data = os.urandom(size)
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        expected = hashlib.sha256(data[:HASHED_BYTES])
        if size > HASHED_BYTES:
            expected.update(data[max(HASHED_BYTES, size - HASHED_BYTES) :])
        fd = os.open(path, os.O_RDONLY)
        try:
            assert sha256_ends(fd, size) == expected.hexdigest()
        finally:
            os.close(fd)


def test_sha256_is_hashlibs_digest_below_and_past_its_own_bytes() -> None:
    """wizard.sha256: CPython's own below OWN_BYTES, hashlib's past it from the first byte; the same digest."""
    from wizard import sha256 as module

    for sizes in ((0,), (5, 7), (module.OWN_BYTES,), (module.OWN_BYTES, 1), (3, module.OWN_BYTES, 2 << 20)):
        parts = [os.urandom(n) for n in sizes]
        digest = module.sha256(parts[0])
        for part in parts[1:]:
            digest.update(part)
        assert digest.hexdigest() == hashlib.sha256(b"".join(parts)).hexdigest()


def test_sha256_looks_for_cpythons_own_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed import walks sys.path each time (``_sha2`` on 3.10 and 3.11): it was 25 µs of each kernel name's
    34 µs hash (summary.kernel_key), so the constructor found is kept."""
    from wizard import sha256 as module

    module._own()
    monkeypatch.setattr(module, "_find_own", lambda: pytest.fail("CPython's SHA-256 looked for again"))
    assert module.sha256(b"x").hexdigest() == hashlib.sha256(b"x").hexdigest()


def test_the_innermost_span_of_each_launch_a_chunk_at_a_time() -> None:
    """The summary table's sweep (``_innermost``) turns its times and spans into Python numbers 8,192 at a time:
    whole-thread lists of every start, end, time and answer were 166 bytes a launch at the sweep's peak."""
    spans = 200_000
    start = np.arange(spans, dtype=np.float64) * 10.0  # span i is [10 i, 10 i + 5): none holds another
    end = start + 5.0
    times = np.random.default_rng(11).uniform(0.0, 10.0 * spans, spans)
    tree = key_averages._thread_tree(start, end, np.zeros(spans, dtype=np.int64), times)
    peak, owner = peak_bytes(lambda: key_averages._innermost(tree, times))
    expected = [int(t // 10) if t % 10 < 5 else -1 for t in times.tolist()]  # the second computation: arithmetic
    assert [int(tree.start[o] // 10) if o >= 0 else -1 for o in owner.tolist()] == expected
    assert peak < 64 * spans, peak / spans  # 166 bytes a time before, 33 now


def test_a_threads_tree_in_bounded_memory() -> None:
    """The summary table's tree of one thread (``_thread_tree``): which spans hold a launch found 32k spans at a
    time, the parents' pass over chunks of Python floats (whole-thread positions, their times and two lists of
    every held span's start and end were 69 bytes a span at its peak), the parents 64-bit integers (not a list of
    Python ints), one part's held spans not joined again."""
    spans = 200_000
    start = np.arange(spans, dtype=np.float64) * 10.0  # span i is [10 i, 10 i + 5): none holds another
    end = start + 5.0
    times = start[::2] + 1.0  # a launch in every other span
    peak, tree = peak_bytes(lambda: key_averages._thread_tree(start, end, np.arange(spans), times))
    assert tree.start.tolist() == start[::2].tolist()  # the second computation: the spans the launches fall in
    assert tree.name.tolist() == list(range(0, spans, 2))
    assert tree.parent.tolist() == [-1] * (spans // 2)
    assert peak < 44 * spans, peak / spans  # 69 bytes a span before, 33 now (the tree itself is ~16)


def test_nanoseconds_are_made_a_small_chunk_at_a_time() -> None:
    """``nesting.to_ns``: its ten temporaries are a chunk's (a chunk of 262,144 held a 200 MB trace's 70,000 kernels
    whole: 5 MB of the kernels-overlap check's peak); the answer is the chunked one's either way."""
    from wizard.trace.health import nesting

    us = np.random.default_rng(3).uniform(0, 1e9, 300_000).round(3)
    us[::7] = np.nan
    peak, (ns, valid) = peak_bytes(lambda: nesting.to_ns(us))
    whole_ns, whole_valid = nesting._to_ns(us)
    assert np.array_equal(ns, whole_ns) and np.array_equal(valid, whole_valid)
    assert peak < 16 * len(us), peak / len(us)  # 67 bytes a value at 1 << 18, 13 now (9 of them the answer)


def test_row_categories_are_ids_not_a_string_per_event() -> None:
    """The kernels-overlap check's events name their category by id (``_Named``), as the list did."""
    from wizard.trace.health import nesting

    ids = np.array([2, 0, 1, 2], dtype=np.int64)
    names = ["kernel", "gpu_memcpy", "user_annotation"]
    named = nesting._Named(ids, names)
    listed = [names[i] for i in ids.tolist()]
    assert len(named) == len(listed)
    assert [named[i] for i in range(-4, 4)] == [listed[i] for i in range(-4, 4)]
    assert named[1:3] == listed[1:3] and named[::-1] == listed[::-1]
    for wrong in (4, -5):
        try:
            named[wrong]
        except IndexError:
            continue
        raise AssertionError(f"{wrong} read past the end")
