"""summary-table's op tree (``key_averages._thread_tree``): each span's parent, the innermost earlier span holding
it whole (PyTorch's ``_populate_cpu_children``), as the stack sweep gives it, against a brute force written from
that definition alone: in the tree's order ((start, -end)), the latest earlier span j with
start_i < end_j and end_i <= end_j. Random spans: nested, crossing, equal, zero and negative lengths; the sweep's
rewrite with a root that is never popped (jsontail) must give the same parents and the same innermost op per launch."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from wizard.trace.health.key_averages import _holds_one, _innermost, _thread_tree


def _brute_parents(start: list[float], end: list[float]) -> list[int]:
    out = []
    for i in range(len(start)):
        holders = [j for j in range(i) if start[i] < end[j] and end[i] <= end[j]]
        out.append(holders[-1] if holders else -1)
    return out


def _brute_innermost(start: list[float], end: list[float], times: list[float]) -> list[int]:
    """Of the spans holding t (start <= t < end), the last in the tree's order, else -1."""
    out = []
    for t in times:
        holders = [i for i in range(len(start)) if start[i] <= t < end[i]]
        out.append(holders[-1] if holders else -1)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_parents_and_innermost_match_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(150):
        n = rng.choice([0, 1, 2, 5, 12, 40])
        starts = [rng.randrange(30) / 2 for _ in range(n)]
        ends = [s + rng.choice([0.0, 0.5, 1.0, 2.0, 7.0, 20.0, -1.0]) for s in starts]
        times = [rng.randrange(-2, 60) / 2 + rng.choice([0.0, 0.25]) for _ in range(rng.choice([1, 4, 30]))]
        queries = np.array(times, dtype=np.float64)
        # every span holds a launch (a time at its start where it has length), so the tree keeps all that do
        tree = _thread_tree(np.array(starts, dtype=np.float64), np.array(ends, dtype=np.float64), np.arange(n), queries)
        s, e = tree.start.tolist(), tree.end.tolist()
        assert sorted(zip(s, [-x for x in e], strict=True)) == list(zip(s, [-x for x in e], strict=True))
        assert tree.parent.tolist() == _brute_parents(s, e)
        assert _innermost(tree, queries).tolist() == _brute_innermost(s, e, times)


def test_a_deep_chain_and_siblings() -> None:
    """Op k spans [k, 100 - k): fifty nested; then ten siblings inside the innermost."""
    starts = [float(k) for k in range(50)] + [49.0 + 0.1 * k for k in range(10)]
    ends = [100.0 - k for k in range(50)] + [49.05 + 0.1 * k for k in range(10)]
    queries = np.array([*starts, 99.5], dtype=np.float64)
    tree = _thread_tree(np.array(starts), np.array(ends), np.arange(60), queries)
    assert tree.parent.tolist() == [-1, *range(49), *[49] * 10]
    assert tree.parent.tolist() == _brute_parents(tree.start.tolist(), tree.end.tolist())


def _below(times: list[float], x: float) -> int:
    """How many times sort before x, NaN last (numpy's order): all the numbers before a NaN."""
    if math.isnan(x):
        return sum(1 for t in times if not math.isnan(t))
    return sum(1 for t in times if t < x)


@pytest.mark.parametrize("seed", range(4))
def test_the_spans_kept_are_those_a_launch_falls_in(seed: int) -> None:
    """``_holds_one`` (one binary search per span) against counting the times before each edge: a time t with
    start <= t < end for spans with numbers at both edges, NaN and infinite edges and times included."""
    rng = random.Random(seed)
    edges = [math.nan, math.inf, -math.inf]
    for _ in range(2_000):
        starts = [rng.choice(edges) if rng.random() < 0.1 else rng.randrange(10) / 2 for _ in range(rng.randrange(8))]
        ends = [rng.choice(edges) if rng.random() < 0.1 else s + rng.choice([0.0, 0.5, 3.0, -1.0]) for s in starts]
        times = sorted(
            (rng.choice(edges) if rng.random() < 0.1 else rng.randrange(12) / 2 for _ in range(rng.randrange(6))),
            key=lambda t: (math.isnan(t), t),
        )
        got = _holds_one(np.array(times, dtype=np.float64), np.array(starts), np.array(ends))
        assert got.tolist() == [_below(times, e) > _below(times, s) for s, e in zip(starts, ends, strict=True)]
        finite = [
            any(s <= t < e for t in times)
            for s, e in zip(starts, ends, strict=True)
            if not (math.isnan(s) or math.isnan(e))
        ]
        assert [
            h for h, s, e in zip(got.tolist(), starts, ends, strict=True) if not (math.isnan(s) or math.isnan(e))
        ] == finite
