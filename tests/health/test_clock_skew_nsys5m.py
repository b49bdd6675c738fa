"""clock-skew's call order (issue 48, 5M-kernel exports): the lexsort it skips gives the order a sort would."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wizard.trace.health.checks.clock_skew import _by_id_then_start


def _sorted_by_hand(ids: list[int], ts: list[float]) -> list[int]:
    """By id, then start with NaN last, then file position: Python's sort, no numpy."""
    return sorted(range(len(ids)), key=lambda i: (ids[i], math.isnan(ts[i]), 0.0 if math.isnan(ts[i]) else ts[i], i))


def _order(ids: np.ndarray, ts: np.ndarray) -> list[int]:
    found = _by_id_then_start(ids, ts)
    return list(range(len(ids))) if found is None else [int(i) for i in found]


def _cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(48)
    n = 400
    rising = np.arange(n, dtype=np.int64) + 1
    cases = [
        ("sorted, one call an id", rising, np.arange(n) * 3.0),
        ("sorted ids, starts tied", np.repeat(rising[: n // 4], 4), np.repeat(np.arange(n // 2) * 1.0, 2)),
        ("sorted ids, starts fall within an id", np.repeat(rising[: n // 2], 2), np.arange(n)[::-1] * 1.0),
        ("ids rise, starts fall", rising, np.arange(n)[::-1] * 1.0),
        ("starts rise, ids shuffled", rng.permutation(rising), np.arange(n) * 1.0),
        ("starts rise, ids tied", rng.integers(0, 20, n), np.sort(rng.integers(0, 50, n)).astype(float)),
        ("both unsorted, tied", rng.integers(0, 20, n), rng.integers(0, 30, n).astype(float)),
        ("a NaN start", np.repeat(rising[: n // 2], 2), np.where(np.arange(n) == 7, np.nan, np.arange(n) * 1.0)),
        ("NaNs, unsorted", rng.integers(0, 10, n), np.where(rng.random(n) < 0.1, np.nan, rng.random(n))),
        ("one call", rising[:1], np.zeros(1)),
        ("none", rising[:0], np.zeros(0)),
    ]
    return [(name, ids.astype(np.int64), ts.astype(np.float64)) for name, ids, ts in cases]


@pytest.mark.parametrize(("name", "ids", "ts"), _cases(), ids=[c[0] for c in _cases()])
def test_order_is_the_sort_by_id_then_start(name: str, ids: np.ndarray, ts: np.ndarray) -> None:
    assert _order(ids, ts) == _sorted_by_hand(ids.tolist(), ts.tolist()), name


def test_sorted_calls_are_not_sorted_again() -> None:
    """An export's calls (start order, ids rising with it, ties included) skip the sort: None, file order."""
    ids = np.repeat(np.arange(1, 1001, dtype=np.int64), 3)
    ts = np.repeat(np.arange(1000) * 2.0, 3)
    assert _by_id_then_start(ids, ts) is None
    assert _by_id_then_start(ids, ts + np.tile([0.0, 0.5, 0.5], 1000)) is None
    assert _by_id_then_start(ids[::-1].copy(), ts) is not None  # starts rise, ids fall: sorted by id
    assert (
        _by_id_then_start(ids, np.arange(3000, dtype=np.float64)[::-1]) is not None
    )  # ids tied, starts fall within them
