"""Issue 47 item 7's last done-when line: ``trace inspect --json`` of an Nsight Systems export of 10,000,000 kernels,
each its own grid, peaks under the file's unpacked size plus 256 MiB (benchmarks/memory_formats.py measures the whole
process: benchmarks/results-2026-12-02-nsys10m.md). Here, the Python heap's peak (tracemalloc) of the passes over
such an export, per added kernel, on two sizes; and each rewritten piece against a second computation written here:
the numbering of combinations by one packed sort, the busy union and the kernel groups' sums a chunk at a time, the
kernels-overlap gathering's nanoseconds a chunk at a time and its events left in their order when they are in it.

The chunks (``_CHUNK``: a million events at once) are shrunk here, so that the sizes measured are past them, as ten
million kernels are past a million: what a pass holds a chunk at a time is a constant there.
"""

from __future__ import annotations

import math
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import passes_peak_bytes
from wizard.testing.nsys import Kernel, write_export, write_many
from wizard.trace.health import key_averages, nesting
from wizard.trace.profile import summary
from wizard.trace.read import records
from wizard.trace.read.nsys import read_nsys

# Bytes of Python heap per kernel added at the passes' peak (what the read keeps included: ~33 bytes a kernel), from
# 100k to 200k distinct-grid kernels. The bound is what the 10M export leaves per kernel: its unpacked size is ~60
# bytes a row (576 MB for 10M rows), and of the 256 MiB constant ~100 MB is the interpreter, numpy, warpwizard's
# modules, SQLite's cache, one batch of rows and the kernel checks' bounded memo, so ~16 bytes a kernel are left: 76.
# Before this change 143 (tests/trace/test_nsysmem.py; np.unique's copies in columns() and launch_groups, the
# summary table's five copies of the kernel columns, the profile's lexsort and a key per group, the gathering's
# nanoseconds as ten whole-array temporaries); after: 58 measured here.
BYTES_PER_KERNEL = 76
SMALL_CHUNK = 1 << 14


def _small_chunks(monkeypatch: pytest.MonkeyPatch, size: int = SMALL_CHUNK) -> None:
    for module in (records, key_averages, nesting, summary):
        monkeypatch.setattr(module, "_CHUNK", size, raising=False)


@pytest.mark.slow
def test_the_passes_over_distinct_launches_hold_less_than_an_export_row_per_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_chunks(monkeypatch)
    small, large = 100_000, 200_000  # past MEMO_CAP (16,384), the materialised combinations (65,536), the chunks
    paths = [write_many(tmp_path / f"rows-{n}.sqlite", n, grids=10**12, calls=False) for n in (small, large)]
    passes_peak_bytes(paths[0])  # the modules each pass imports, loaded before measuring
    peaks = [passes_peak_bytes(p) for p in paths]
    per_kernel = (peaks[1] - peaks[0]) / (large - small)
    assert per_kernel < BYTES_PER_KERNEL, f"{per_kernel:.0f} bytes a kernel at the passes' peak"


# -- each piece against a second computation --------------------------------------------------------------------------


def _first_seen(keys: list[Any]) -> tuple[list[int], list[int]]:
    """Each key's number in order of first appearance, and each number's first position."""
    seen: dict[Any, int] = {}
    firsts: list[int] = []
    numbers = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen[key] = len(seen)
            firsts.append(i)
        numbers.append(seen[key])
    return numbers, firsts


@pytest.mark.parametrize("chunk", [3, SMALL_CHUNK])
@pytest.mark.parametrize("bound", [1, 7, 5000, 2**40])
def test_numbering_by_one_packed_sort_is_the_order_of_first_appearance(
    bound: int, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_chunks(monkeypatch, chunk)
    rng = random.Random(bound * 31 + chunk)
    keys = [rng.randrange(bound) for _ in range(3000)]
    numbers, firsts = records._numbered(np.array(keys, dtype=np.int64), bound)
    want_numbers, want_firsts = _first_seen(keys)
    assert numbers.tolist() == want_numbers
    assert firsts.tolist() == want_firsts
    unique_numbers, unique_firsts = records._numbered_by_unique(np.array(keys, dtype=np.int64))
    assert (unique_numbers.tolist(), unique_firsts.tolist()) == (want_numbers, want_firsts)


@pytest.mark.parametrize(
    "values",
    [
        [0, 1, 2, 1, 0, 5],  # a narrow span: added as they are
        [-(2**62), 2**62, 3, 2**62, -(2**62), 3],  # too wide to add: ranked
        [records.NO_VALUE, 4, records.NO_VALUE, 2**40, 4, 2**40],  # None beside values
    ],
    ids=["narrow", "wide", "none"],
)
def test_combinations_of_columns_are_numbered_by_first_appearance(values: list[int]) -> None:
    """``columns()`` and ``launch_groups`` of launches given as columns, several columns varying at once (grid x wide,
    block x narrow, registers), against a dict of the whole tuples."""
    rng = random.Random(len(values))
    n = 4000
    table = records.KernelTable()
    names = ["k1", "k2", "k1 "]
    bases = [table.base_id((name, 0, 7, 0, 7, *(None,) * 4, *(records.ReportedValue(None, "missing"),) * 3,
                            None, None, None)) for name in names]  # fmt: skip
    base = [rng.randrange(3) for _ in range(n)]
    grid_x = [rng.choice(values) for _ in range(n)]
    block_x = [rng.choice([32, 64, 128]) for _ in range(n)]
    registers = [rng.choice([16, 2**33]) for _ in range(n)]
    ones = np.ones(n, dtype=np.int64)
    launch = [np.array(grid_x), ones, ones, np.array(block_x), ones, ones, np.array(registers), ones * 0]
    floats = np.arange(n, dtype=np.float64)
    table.add_launches(floats, floats, np.arange(n), np.array([bases[b] for b in base]), launch, overrides={})
    _, _, _, ids, _ = table.columns()
    none = records.NO_VALUE
    want, _ = _first_seen(
        [(base[i], None if grid_x[i] == none else grid_x[i], block_x[i], registers[i]) for i in range(n)]
    )
    assert list(ids) == want
    groups, firsts = table.launch_groups(lambda name: name.strip())  # "k1" and "k1 " are one key
    by_key, by_firsts = _first_seen(
        [(names[base[i]].strip(), None if grid_x[i] == none else grid_x[i], block_x[i]) for i in range(n)]
    )
    assert groups.tolist() == by_key
    assert firsts.tolist() == by_firsts


@pytest.mark.parametrize("sort", [True, False], ids=["in-order", "shuffled"])
def test_the_busy_union_a_chunk_at_a_time_is_the_union(sort: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole microseconds (every sum exact in any order), intervals overlapping across the chunks' edges."""
    _small_chunks(monkeypatch, 5)
    rng = random.Random(3)
    spans = [(float(rng.randrange(0, 400)), float(rng.choice([0, 1, 3, 20, 90]))) for _ in range(300)]
    if sort:
        spans.sort(key=lambda s: s[0])
    starts = np.array([s for s, _ in spans])
    durations = np.array([d for _, d in spans])
    covered, reach = 0.0, -1.0
    for start, duration in sorted(spans):
        end = start + duration
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    assert key_averages._union(starts, durations, durations=True) == covered
    assert key_averages._union(starts, starts + durations) == covered


def test_the_kernel_groups_sums_a_chunk_of_groups_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups of 1 to 12 launches (whole microseconds: exact in any order), and every launch its own group (the
    distinct-grids export: no sort, the durations themselves)."""
    _small_chunks(monkeypatch, 4)
    rng = random.Random(5)
    groups = np.array([rng.randrange(40) for _ in range(300)], dtype=np.int32)
    durations = np.array([float(rng.randrange(100)) for _ in range(300)])
    ordered, starts, counts = summary._by_group(durations, groups, 40)
    totals = summary._group_sums(ordered, starts, counts)
    for g in range(40):
        mine = sorted(float(d) for d, of in zip(durations, groups, strict=True) if of == g)
        assert ordered[starts[g] : starts[g] + counts[g]].tolist() == mine
        assert totals[g] == sum(mine)
    alone = np.arange(300, dtype=np.int32)
    ordered, starts, counts = summary._by_group(durations, alone, 300)
    assert ordered is durations
    assert summary._group_sums(ordered, starts, counts).tolist() == durations.tolist()


def test_nanoseconds_a_chunk_at_a_time_are_perfettos(monkeypatch: pytest.MonkeyPatch) -> None:
    """``llround(us * 1000.0)`` (half away from zero), a whole number of microseconds times 1000, and what Perfetto
    cannot read (not finite, past an int64 of nanoseconds) marked."""
    _small_chunks(monkeypatch, 7)
    rng = random.Random(11)
    us = [rng.choice([0.0, 1.0, 2.5, -2.5, 0.0005, -0.0005, 1e15]) + rng.randrange(-5, 5) / 4096 for _ in range(200)]
    us += [float("nan"), float("inf"), 1e300, -1e300, 3.0]
    ns, valid = nesting.to_ns(np.array(us))
    for value, got, ok in zip(us, ns.tolist(), valid.tolist(), strict=True):
        readable = not math.isnan(value) and abs(value) < 9.2e15  # nesting._US_LIMIT: an int64 of ns
        assert ok == readable
        if not readable:
            continue
        if value == int(value):
            assert got == int(value) * 1000
        else:
            assert got == int(Decimal(value * 1000.0).to_integral_value(ROUND_HALF_UP))


def test_kernels_already_in_order_are_gathered_in_the_order_a_sort_gives(tmp_path: Path) -> None:
    """One table's events in (row, ts, the longer first, position) order are left as they are; shuffled, sorted:
    against numpy's lexsort of the kernels' own columns."""
    kernels = [
        Kernel(1000 * (i // 3), 1000 * (i // 3) + 100 * (3 - i % 3), i + 1, stream=7 + i // 30, grid=(i + 1, 1, 1))
        for i in range(60)
    ]
    for shuffled in (False, True):
        rows = list(kernels)
        if shuffled:
            random.Random(2).shuffle(rows)
        contents = read_nsys(write_export(tmp_path / f"export-{shuffled}.sqlite", rows, []))
        events = nesting.gather(contents)
        ts = np.array([round(k.ts * 1000) for k in contents.kernels], dtype=np.int64)
        dur = np.array([round(k.dur * 1000) for k in contents.kernels], dtype=np.int64)
        keys = {(k.pid, k.tid) for k in contents.kernels}
        row_of = {key: events.rows.index(nesting.perfetto_row(*key)) for key in keys}
        row = np.array([row_of[(k.pid, k.tid)] for k in contents.kernels], dtype=np.int64)
        order = np.lexsort((np.arange(len(ts)), -dur, ts, row))
        assert events.ref.tolist() == order.tolist()
        assert events.ts.tolist() == ts[order].tolist()
        assert list(events.categories) == ["kernel"] * len(ts)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
def test_the_runs_a_chunk_at_a_time_are_the_runs(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``nesting.walk`` over runs found a chunk of events at a time (rows and reaches across the chunks' edges)
    finds what it finds with every event in one chunk."""
    rng = random.Random(chunk)
    n = 1500
    row = np.sort(np.array([rng.randrange(4) for _ in range(n)], dtype=np.int64))
    ts = np.array([rng.randrange(0, 40_000) for _ in range(n)], dtype=np.int64)
    dur = np.array([rng.choice([0, 0, 1, 5, 40, 300]) for _ in range(n)], dtype=np.int64)
    order = np.lexsort((-dur, ts, row))
    events = nesting.RowEvents(
        row[order], ts[order], dur[order], np.zeros(n, dtype=np.int8), np.arange(n, dtype=np.int64), [], []
    )
    monkeypatch.setattr(nesting, "_CHUNK", 10**9)
    whole = (list(nesting._clusters(events)), nesting.walk(events))
    monkeypatch.setattr(nesting, "_CHUNK", chunk)
    chunked = (list(nesting._clusters(events)), nesting.walk(events))
    assert len(whole[0]) > 20  # events overlap: there are runs to find
    assert chunked[0] == whole[0]
    for a, b in zip(whole[1], chunked[1], strict=True):
        assert a.tolist() == b.tolist()


def test_the_rest_of_the_groups_summed_a_chunk_at_a_time_is_pythons_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """The groups past MAX_KERNELS: their time is Python's sum of their totals in rank order (left to right from
    0: fractions, so a different order would differ), their launches the sum of their counts."""
    _small_chunks(monkeypatch, 3)
    rng = random.Random(9)
    totals = np.array([rng.random() * 10 ** rng.randrange(-3, 6) for _ in range(50)] + [-0.0, 0.0])
    counts = np.array([rng.randrange(1, 9) for _ in range(len(totals))], dtype=np.int8)
    rest = np.array(rng.sample(range(len(totals)), 40), dtype=np.int64)
    found = summary._others(totals, counts, rest)
    want: float = 0  # left to right from 0, one addition at a time (Python 3.12's sum() compensates: not this)
    for g in rest.tolist():
        want += float(totals[g])
    assert found["total_us"] == want
    assert found["launches"] == sum(int(counts[g]) for g in rest.tolist())
    assert found["groups"] == 40
    assert summary._others(totals, counts, rest[:0]) == {"groups": 0.0, "launches": 0.0, "total_us": 0}
