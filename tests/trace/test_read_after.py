"""A block's fill from a plain file (``TraceSource.read_after``, wizard/trace/read/source.py): the unfinished event a
block ends with is read again from the file with the next block, in one ``pread``, instead of the new block being
copied in behind it. The bytes must be the ones the stream read would give: the kept bytes as they were kept (a file
rewritten under the read differs there), then the stream's next ones; the end of the input where ``read`` finds it;
each byte of the file counted once; a gzip file and a pipe read as before. And whole traces read the same either way.
"""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, needs_shared
from tests.helpers import deep_state
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.read import source
from wizard.trace.read.reader import ReaderConfig, read_trace
from wizard.trace.read.source import TraceSource

needs_pread = pytest.mark.skipif(source._PREAD is None, reason="os.pread is POSIX's: elsewhere every fill reads on")


def counted_preads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets read_after's preads were made at (the real pread, spied)."""
    offsets: list[int] = []
    real = source._PREAD
    assert real is not None

    def spy(fd: int, size: int, offset: int) -> bytes:
        offsets.append(offset)
        return real(fd, size, offset)

    monkeypatch.setattr(source, "_PREAD", spy)
    return offsets


def walk(src: TraceSource, rng: random.Random, block: int) -> tuple[bytes, bytes]:
    """Fill as the reader's Buffer does, consuming a random part each time: (every byte consumed, the leftover)."""
    buf, pos, consumed = b"", 0, bytearray()
    for _ in range(100_000):  # bounded: a source that never moves on fails here, not by hanging the suite
        joined = src.read_after(buf, pos, block)
        if joined is None:
            return bytes(consumed), buf[pos:]
        assert joined[: len(buf) - pos] == buf[pos:]  # the kept bytes first, as they were kept
        buf, pos = joined, rng.randrange(len(joined) + 1)
        consumed += buf[:pos]
    raise AssertionError("the source never reached the end of its input")


@needs_pread
@pytest.mark.parametrize("block", [1, 7, 4096])
def test_a_plain_file_is_read_whole_by_preads_and_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    data = bytes(random.Random(block).randrange(256) for _ in range(20_000))
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    offsets = counted_preads(monkeypatch)
    before = source.STATS.bytes_read[str(path)]
    src = TraceSource(path)
    try:
        consumed, left = walk(src, random.Random(1), block)
    finally:
        src.close()
    assert consumed + left == data
    assert src.eof and offsets and offsets[0] == 0  # the two bytes peeked at the open read again by the first
    assert source.STATS.bytes_read[str(path)] - before == len(data)


@needs_pread
def test_kept_bytes_rewritten_in_the_file_are_the_ones_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer changes the bytes the reader kept: the pread's copy differs, so the stream reads on from where it is
    (no byte read twice, none lost), as read() did before read_after."""
    path = tmp_path / "trace.json"
    path.write_bytes(b"A" * 100 + b"B" * 100)
    offsets = counted_preads(monkeypatch)
    src = TraceSource(path)
    try:
        first = src.read_after(b"", 0, 100)
        assert first == b"A" * 100 and offsets == [0]
        with path.open("r+b") as fh:  # the same file, rewritten where the kept bytes lie
            fh.write(b"a" * 100)
        assert src.read_after(first, 60, 100) == b"A" * 40 + b"B" * 100
        assert len(offsets) == 2  # the pread was made, and its copy refused
        assert src.read_after(b"", 0, 100) is None and src.eof
    finally:
        src.close()


@needs_pread
def test_a_file_cut_under_the_read_ends_where_read_ends(tmp_path: Path) -> None:
    """Past the open's buffered read (8 KiB), a file cut shorter than what was kept gives the pread less than the
    kept bytes: the stream reads on where it is, past the new end, and finds the end of the input there."""
    path = tmp_path / "trace.json"
    path.write_bytes(b"x" * 100_000)
    src = TraceSource(path)
    try:
        kept = src.read_after(b"", 0, 50_000)
        assert kept == b"x" * 50_000
        os.truncate(path, 20_000)
        assert src.read_after(kept, 40_000, 50_000) is None and src.eof
    finally:
        src.close()


def test_gzip_and_pipes_read_on_without_a_pread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"traceEvents":[' + b",".join(b'{"ph":"i","ts":%d}' % i for i in range(3000)) + b"]}"
    packed = tmp_path / "trace.json.gz"
    packed.write_bytes(gzip.compress(data, mtime=0))
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    calls: list[int] = []

    def refused(fd: int, size: int, offset: int) -> bytes:
        calls.append(offset)
        return b""

    monkeypatch.setattr(source, "_PREAD", refused)
    src = TraceSource(packed)
    try:
        consumed, left = walk(src, random.Random(2), 1000)
    finally:
        src.close()
    assert consumed + left == data
    writer = os.open(pipe, os.O_RDWR)  # held open: the reader's open finds a writer
    try:
        os.write(writer, data[:5000])
        src = TraceSource(pipe)
        try:
            got = src.read_after(b"", 0, 4000)
            assert got == data[:4000]
            assert src.read_after(got, 3000, 1000) == data[3000:5000]
        finally:
            src.close()
    finally:
        os.close(writer)
    assert calls == []


def read_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> tuple[Any, Any]:
    config = ReaderConfig(workers=0, block_size=block)
    preads = counted_preads(monkeypatch) if source._PREAD is not None else []
    joined = read_trace(path, config=config)
    assert preads or source._PREAD is None
    monkeypatch.setattr(source, "_PREAD", None)
    copied = read_trace(path, config=config)
    joined.timing.clear()
    copied.timing.clear()
    return deep_state(joined), deep_state(copied)


@pytest.mark.parametrize("block", [1 << 10, 64 << 10])
def test_a_built_trace_reads_the_same_filled_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    builder = TraceBuilder(nonfinite="quoted")
    for step in range(40):
        builder.add(KernelSpec(f"kernel_{step % 5}", (step + 1, 1, 1), (128, 1, 1)))
        builder.add_cpu_op(f"aten::op{step % 7}")
    path = builder.write(tmp_path / "trace.json")
    joined, copied = read_both_ways(path, monkeypatch, block)
    assert joined == copied


@needs_shared
@pytest.mark.parametrize(
    "name", ["dlrm-2ranks/worker0_step_12.1694128201545.pt.trace.json", "v100-old-keys-gpu-metrics.json"]
)
def test_shared_traces_read_the_same_filled_either_way(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real uncompressed traces (../shared) in 4 KiB blocks: hundreds of fills, each with an unfinished event."""
    joined, copied = read_both_ways(TRACES / name, monkeypatch, 4 << 10)
    assert joined == copied
