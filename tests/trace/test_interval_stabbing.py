"""``IntervalIndex.containing`` (and ``innermost``) against a brute force written here: the blocked maxima that
replaced the scan back over up to 100,000 intervals must give the one answer the scan gave, on random intervals
(nested, equal starts, zero and negative durations, NaN and infinite ends, ties), across the pages the maxima are
built in, and after intervals are added or merged once a thread was queried."""

from __future__ import annotations

import itertools
import math
import random
import sys
from typing import Any

import pytest

from wizard.trace.read.records import IntervalIndex

WINDOW = 100_000  # the intervals looked back at from a time, by start order (the reader's own bound)

Interval = tuple[float, float, str]  # start, end, descriptor


def _order(intervals: list[Interval]) -> list[int]:
    """The index's order: as added while starts never decrease, else by (start, -end), ties as added."""
    starts = [s for s, _, _ in intervals]
    if all(a <= b for a, b in itertools.pairwise(starts)):
        return list(range(len(intervals)))
    return sorted(range(len(intervals)), key=lambda n: (intervals[n][0], -intervals[n][1]))


class Brute:
    """Every interval of the WINDOW starting last at or before t, looked at one by one."""

    def __init__(self, intervals: list[Interval]) -> None:
        self.ordered = [intervals[n] for n in _order(intervals)]
        self.starts = [s for s, _, _ in self.ordered]
        self.first_seen: dict[str, int] = {}
        for _, _, d in intervals:
            self.first_seen.setdefault(d, len(self.first_seen))

    def containing(self, t: float, limit: int = 64) -> list[str]:
        """The ``limit`` latest (in the index's order) that end at or after t, sorted by (start, -end, first
        sight of the descriptor)."""
        if limit < 1:
            return []
        last = -1
        for p, s in enumerate(self.starts):
            if s <= t:
                last = p
        hits = [p for p in range(max(last - WINDOW + 1, 0), last + 1) if self.ordered[p][1] >= t]
        chosen = [self.ordered[p] for p in hits[-limit:]]
        chosen.sort(key=lambda iv: (iv[0], -iv[1], self.first_seen[iv[2]]))
        return [d for _, _, d in chosen]

    def innermost(self, t: float) -> str | None:
        found = self.containing(t, 1)
        return found[0] if found else None


def _index(intervals: list[Interval], tid: int = 1, into: IntervalIndex | None = None) -> IntervalIndex:
    index = IntervalIndex() if into is None else into
    for start, end, descriptor in intervals:
        index.add(7, tid, start, end, index.ref(descriptor))
    return index


def _random_intervals(rng: random.Random, n: int, grid: int) -> list[Interval]:
    out = []
    for k in range(n):
        start = rng.randrange(grid) / 2
        end = start + rng.choice([0.0, 0.0, 0.5, 1.0, rng.randrange(grid) / 2, -1.0])
        if rng.random() < 0.03:
            end = math.nan
        elif rng.random() < 0.01:
            end = math.inf
        out.append((start, end, f"op{k % 40}"))
    if rng.random() < 0.5:  # added in start order: the index keeps the order as added
        out.sort(key=lambda iv: iv[0])
    return out


def _times(rng: random.Random, grid: int, count: int) -> list[float]:
    times = [rng.randrange(-2, grid + 2) / 2 + rng.choice([0.0, 0.0, 0.25]) for _ in range(count)]
    return [*times, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("seed", range(12))
def test_containing_matches_brute_force_on_random_intervals(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        grid = rng.choice([3, 10, 400])
        intervals = _random_intervals(rng, rng.choice([0, 1, 4, 40, 300]), grid)
        index, brute = _index(intervals), Brute(intervals)
        for t in _times(rng, grid, 30):
            for limit in (0, 1, 2, 3, 64):
                assert index.containing(7, 1, t, limit) == brute.containing(t, limit), (t, limit)
            assert index.innermost(7, 1, t) == brute.innermost(t)
        assert index.containing(7, 2, 1.0) == []  # a thread with no intervals


def test_nested_stack_with_equal_starts_and_zero_durations() -> None:
    """A Python stack: frames nested, a child starting with its parent, zero-length calls at the query time."""
    intervals: list[Interval] = [
        (0.0, 100.0, "main"),
        (0.0, 50.0, "step"),  # starts with main
        (10.0, 40.0, "forward"),
        (10.0, 40.0, "forward-twin"),  # the same span twice: both hold t
        (20.0, 20.0, "zero-at-20"),
        (20.0, 30.0, "linear"),
        (30.0, 30.0, "zero-at-30"),
        (35.0, 36.0, "after"),
    ]
    index = _index(intervals)
    assert index.containing(7, 1, 20.0) == [
        "main",
        "step",
        "forward",
        "forward-twin",
        "linear",
        "zero-at-20",
    ]  # (start, -end)
    assert index.containing(7, 1, 20.0) == Brute(intervals).containing(20.0)
    assert index.innermost(7, 1, 20.0) == "linear"  # the latest-starting that holds 20 (zero-at-20 came before)
    assert index.containing(7, 1, 30.0, 2) == ["linear", "zero-at-30"]  # the two latest that hold 30 (ends count)
    assert index.innermost(7, 1, 60.0) == "main"
    assert index.innermost(7, 1, 100.5) is None


def test_window_of_100000_intervals_across_pages() -> None:
    """An outer span more than 100,000 intervals back holds t but is not looked at (the scan's bound, kept); the
    maxima are built per 65,536 intervals, so the window spans pages; and a query inside it still finds it."""
    rng = random.Random(48)
    intervals: list[Interval] = [(0.0, 1e12, "outer")]
    at = 0.0
    for k in range(230_000):
        at += rng.choice([0.0, 0.5, 1.0])
        intervals.append((at, at + rng.choice([0.0, 0.5, 2.0, 60.0, 40_000.0]), f"op{k % 97}"))
    index, brute = _index(intervals), Brute(intervals)
    times = [rng.uniform(-1.0, at + 5.0) for _ in range(12)] + [at + 1e6, 3.0, intervals[70_000][0]]
    for t in times:
        for limit in (1, 3, 64):
            assert index.containing(7, 1, t, limit) == brute.containing(t, limit), (t, limit)
    assert index.innermost(7, 1, at + 1e6) is None  # the 100,000 before it all ended: outer is out of reach
    assert index.innermost(7, 1, 3.0) is not None


def test_gap_queries_outside_every_op_on_a_long_thread() -> None:
    """Launches outside every op (what scanned 100,000 intervals back per group): none found, as before, and the
    one interval ending later than all the others is found across the window's pages."""
    intervals: list[Interval] = [(10.0 * k, 10.0 * k + 5.0, f"op{k % 13}") for k in range(150_000)]
    intervals[60_000] = (600_000.0, 1_000_000.0, "long")  # holds every time up to 1e6 from its start on
    index, brute = _index(intervals), Brute(intervals)
    for t in (17.0, 590_007.0, 600_007.0, 1_000_007.0, 1_499_997.0, 610_002.0):
        for limit in (1, 64):
            assert index.containing(7, 1, t, limit) == brute.containing(t, limit), (t, limit)
    assert index.innermost(7, 1, 590_007.0) is None
    assert index.innermost(7, 1, 1_000_007.0) is None
    assert index.innermost(7, 1, 600_007.0) == "long"
    assert index.containing(7, 1, 610_002.0) == ["long", f"op{61_000 % 13}"]  # the op at 610,000 inside "long"


def test_added_and_merged_after_a_query() -> None:
    """The maxima are of the intervals at the time of the query: more added, or another part merged, after a
    query on the thread are seen by the next one."""
    rng = random.Random(7)
    first = _random_intervals(rng, 200, 60)
    index = _index(first)
    probe = [rng.randrange(-2, 64) / 2 for _ in range(40)]
    for t in probe:
        assert index.containing(7, 1, t) == Brute(first).containing(t)
    # each later part starts before the last start so far: the index sorts the thread again, as Brute does
    more = [(0.0, 1.0, "early"), *((s + 10.0, e + 10.0, d) for s, e, d in _random_intervals(rng, 150, 60))]
    _index(more, into=index)
    brute = Brute(first + more)
    for t in probe:
        assert index.containing(7, 1, t) == brute.containing(t), t
    later = [(0.0, 2.0, "late-early"), *((s + 5.0, e + 5.0, f"late{d}") for s, e, d in _random_intervals(rng, 120, 60))]
    index.merge(_index(later))
    brute = Brute(first + more + later)
    for t in probe:
        assert index.containing(7, 1, t) == brute.containing(t), t
        assert index.innermost(7, 1, t) == brute.innermost(t)


@pytest.mark.parametrize("numpy_loaded", [True, False])
def test_merged_parts_keep_each_interval_with_its_descriptor(numpy_loaded: bool, monkeypatch: Any) -> None:
    """A worker's part renumbers its descriptors into the whole index's (with numpy where the process loaded
    it, else one by one): every interval keeps its own descriptor, checked per interval against the part."""
    import numpy  # noqa: F401 - loaded, or hidden below

    if not numpy_loaded:
        monkeypatch.delitem(sys.modules, "numpy")
    rng = random.Random(11)
    whole = _index([(0.0, 1.0, "a"), (1.0, 2.0, "b")])
    part: list[Interval] = [(2.0 + k, 2.5 + k, f"op{rng.randrange(300)}") for k in range(5_000)]
    whole.merge(_index(part))
    (_, starts, ends, refs), *others = list(whole.threads())
    assert not others
    got = [(starts[n], ends[n], whole.descriptor(refs[n])) for n in range(len(starts))]
    assert got == [(0.0, 1.0, "a"), (1.0, 2.0, "b"), *part]


@pytest.mark.parametrize(("numpy_loaded", "nan"), [(True, False), (True, True), (False, False)])
def test_big_thread_sorted_by_numpy_as_by_python(numpy_loaded: bool, nan: bool, monkeypatch: Any) -> None:
    """A thread of more than 1,000 intervals added out of order (a .pftrace's slices come as they close) is sorted
    by numpy's stable lexsort where the process loaded numpy: the order Python's sort gives, ties (equal starts,
    equal ends, -0.0 and 0.0, infinite ends) as added; with a NaN, or without numpy, by Python's sort."""
    import numpy  # noqa: F401 - loaded, or hidden below

    from wizard.trace.read import records

    if not numpy_loaded:
        monkeypatch.delitem(sys.modules, "numpy")
    used: list[bool] = []
    numpy_order = records._numpy_start_order

    def spy(thread: Any) -> bool:
        used.append(numpy_order(thread))
        return used[-1]

    monkeypatch.setattr(records, "_numpy_start_order", spy)
    rng = random.Random(4)
    intervals: list[Interval] = []
    for k in range(3_000):
        start = rng.choice([-0.0, 0.0, rng.randrange(40) / 2])
        end = start + rng.choice([0.0, -0.0, 0.5, 1.0, rng.randrange(40) / 2, math.inf])
        intervals.append((start, end, f"op{k}"))
    intervals.reverse()  # the later first, as slices close: out of start order
    if nan:
        intervals[1_500] = (3.0, math.nan, "nan")
    index, brute = _index(intervals), Brute(intervals)
    for t in (-1.0, 0.0, 0.25, 3.0, 7.5, 19.5, 25.0, math.inf):
        for limit in (1, 64):
            assert index.containing(7, 1, t, limit) == brute.containing(t, limit), (t, limit)
    assert used == [numpy_loaded and not nan]
    (_, starts, ends, refs), *_ = list(index.threads())
    got = [(starts[n], ends[n], index.descriptor(refs[n])) for n in range(len(starts))]
    assert [(repr(s), repr(e), d) for s, e, d in got] == [
        (repr(s), repr(e), d) for s, e, d in (intervals[n] for n in _order(intervals))
    ]  # repr: -0.0 where the Python sort keeps -0.0
