"""The heap's free pages handed back between an inspection's passes (wizard/heap.py, issue 48's peak memory): only
for a big trace, where the C library can, and before every pass, every per-trace check and the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import demo_trace
from wizard import heap
from wizard.trace.inspection.passes import passes_to_run
from wizard.trace.inspection.run import inspect_trace


def test_a_small_trace_is_not_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below TRIM_FROM nothing is looked up or called: a small trace's start-up is what it was."""
    calls: list[int] = []
    monkeypatch.setattr(heap, "_FOUND", [calls.append])
    heap.release(heap.TRIM_FROM - 1)
    assert calls == []
    heap.release(heap.TRIM_FROM)
    assert calls == [0]  # malloc_trim(0): every free page, none kept at the top


def test_no_trim_where_the_library_has_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_FOUND", [None])
    heap.release(1 << 40)  # nothing to call, nothing raised


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_leave_the_resident_set() -> None:
    """40 MB of freed blocks below a block still held stay resident until the trim (glibc keeps a heap's holes)."""
    code = (
        "from wizard import heap\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * 4096\n"
        "blocks = [bytearray(100_000) for _ in range(400)]\n"  # under the mmap threshold: in the heap, touched
        "pin = bytearray(100_000)\n"
        "del blocks\n"
        "before = rss()\n"
        "heap.release(heap.TRIM_FROM)\n"
        "print(before - rss())\n"
    )
    found = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    if heap._malloc_trim() is None:
        pytest.skip("no malloc_trim in this C library")
    assert int(found.stdout) > 30_000_000, found.stdout


def test_released_before_each_pass_check_and_the_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each pass's peak is what it holds: the heap is trimmed before every pass, every per-trace check and the
    report, each time for the trace's bytes."""
    from wizard.trace.health.checks import CHECKS

    sizes: list[int] = []
    monkeypatch.setattr(heap, "release", sizes.append)
    report = inspect_trace(demo_trace(tmp_path / "t.json"))
    per_trace = sum(1 for c in CHECKS if c.scope == "trace")
    assert len(sizes) == len(passes_to_run()) + per_trace + 1
    assert set(sizes) == {report.bytes_read}


def test_the_read_leaves_no_cycle_holding_its_contents(tmp_path: Path) -> None:
    """The walker held its exact decoder and the decoder a method of the walker: a cycle that kept the contents (every
    table: 16 MB of a 206 MB trace) alive until the cyclic collector ran, which the console script holds off past
    the report. Only the caller holds what the read returns, on both of the read's paths."""
    import gc

    from wizard.trace.read.reader import ReaderConfig, read_trace

    path = demo_trace(tmp_path / "t.json", repeat=3)
    for config in (ReaderConfig(workers=0), ReaderConfig(workers=2, parallel_min_bytes=0, parallel_block=4096)):
        gc.collect()
        gc.disable()
        try:
            contents = read_trace(path, config=config)
            assert contents.events
            assert sys.getrefcount(contents) == 2  # the name here and getrefcount's argument
        finally:
            gc.enable()
