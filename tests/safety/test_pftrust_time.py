"""A .pftrace's time bound covers every byte the read spends time on (issue 47 item 5): top-level fields that are not
packets, which were skipped without a look at the clock (200 million took 80 s of CPU, ~190 s per MB of gzip), and
empty packets; fields that are not packets are bounded in number too (``MAX_SKIPPED``)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from tests.conftest import budget
from wizard.errors import InputFileError
from wizard.testing.pftrace import field, varint
from wizard.trace.read import perfetto
from wizard.trace.read.perfetto import PerfettoConfig, read_perfetto

SKIPPED = b"\x12\x00"  # field 2 of Trace, an empty message: not a packet
EMPTY = b"\x0a\x00"  # field 1, a packet of no bytes


def _key(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


# One kernel slice on track 1 of sequence 1, begun (TrackEvent type 1, category "kernel", name "k") and ended.
KERNEL = field(
    1, _key(8, 1) + _key(10, 1) + field(11, _key(9, 1) + _key(11, 1) + field(22, b"kernel") + field(23, b"k"))
)
KERNEL += field(1, _key(8, 5) + _key(10, 1) + field(11, _key(9, 2) + _key(11, 1)))


class _Clock:
    """A clock that moves a second each time it is read: the read's looks at it, counted."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


def test_the_kernel_packets_here_are_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "one.pftrace"
    path.write_bytes(KERNEL)
    contents = read_perfetto(path)
    assert (contents.events, len(contents.kernels)) == (1, 1)


@pytest.mark.parametrize(("entry", "suffix"), [(SKIPPED, ".pftrace"), (EMPTY, ".pftrace"), (SKIPPED, ".pftrace.gz")])
def test_entries_that_yield_nothing_still_look_at_the_clock(entry: bytes, suffix: str, tmp_path: Path) -> None:
    """300,000 entries: 73 looks at the clock at one per 4,096 entries (more with the chunk reads), so a bound of 50
    clock seconds ends the read; before, the fields that are not packets never reached the clock."""
    data = KERNEL + entry * 300_000
    path = tmp_path / f"many{suffix}"
    path.write_bytes(gzip.compress(data, 1) if suffix.endswith(".gz") else data)
    clock = _Clock()
    with pytest.raises(InputFileError, match=r"not a readable Perfetto trace at (inflated )?byte \d+: the read took "
                       r"longer than 50 s"):  # fmt: skip
        read_perfetto(path, config=PerfettoConfig(max_seconds=50, clock=clock))
    assert 50 < clock.reads <= 52


def test_the_clock_is_read_about_once_per_tick_of_entries(tmp_path: Path) -> None:
    """Under the bound: the looks at the clock are the entries over TICK plus one per chunk read (a second
    computation of how often, from the file's size)."""
    entries = 100_000
    data = KERNEL + EMPTY * entries
    path = tmp_path / "fine.pftrace"
    path.write_bytes(data)
    clock = _Clock()
    contents = read_perfetto(path, config=PerfettoConfig(max_seconds=10**6, clock=clock))
    assert contents.events == 1
    chunks = -(-len(data) // perfetto.CHUNK)
    assert clock.reads == 1 + (entries + 2) // perfetto.TICK + chunks  # the start, the ticks, the chunks


def test_fields_that_are_not_packets_are_bounded_in_number(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(perfetto, "MAX_SKIPPED", 1000)
    path = tmp_path / "skips.pftrace"
    path.write_bytes(KERNEL + SKIPPED * 1000)
    assert read_perfetto(path).events == 1
    path.write_bytes(KERNEL + SKIPPED * 1001)
    with pytest.raises(InputFileError, match="more than 1,000 top-level fields that are not packets"):
        read_perfetto(path)


def test_millions_of_empty_packets_obey_the_real_time_bound(tmp_path: Path) -> None:
    """5 million empty packets take seconds to walk; a bound of 0.2 s ends the read at about that, by the real
    clock."""
    path = tmp_path / "empty.pftrace"
    path.write_bytes(KERNEL + EMPTY * 5_000_000)
    started = time.monotonic()
    with pytest.raises(InputFileError, match="the read took longer than 0 s"):
        read_perfetto(path, config=PerfettoConfig(max_seconds=0.2))
    assert time.monotonic() - started < budget(2.0)
