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


@pytest.mark.parametrize("kernels_in_order", [True, False])
def test_linked_offsets_are_each_kernels_earliest_call_by_hand(kernels_in_order: bool) -> None:
    """Each kernel (in start order, file order for ties) linked to the earliest launch or graph call of its id, and
    its start minus that call's: kernels already in start order (no sort, no gathered copies) and shuffled ones,
    ids dense (a table) and sparse (the search), calls without an id and of other kinds, kernels without a call."""
    from types import SimpleNamespace

    from wizard.trace.health.checks.clock_skew import _linked_offsets
    from wizard.trace.health.tables import Calls, Kernels
    from wizard.trace.read.records import NO_CORRELATION

    rng = np.random.default_rng(7)
    for spread in (1, 10_000):
        n = 300
        call_ids = rng.integers(1, n, 2 * n) * spread
        call_ids[rng.random(2 * n) < 0.05] = NO_CORRELATION
        call_ts = rng.integers(0, 1000, 2 * n).astype(np.float64)
        kind = rng.integers(0, 3, 2 * n)  # 0 launch, 1 graph launch, 2 another call
        calls = Calls(
            call_ts, call_ids, np.zeros(2 * n, dtype=np.int32), kind == 0, kind == 1, [], np.zeros(0, dtype=np.int64)
        )
        kernel_ts = rng.integers(0, 2000, n).astype(np.float64)
        if kernels_in_order:
            kernel_ts.sort()
        kernel_ids = rng.integers(1, n + 20, n) * spread
        zeros = np.zeros(n, dtype=np.int64)
        tables = SimpleNamespace(calls=calls, kernels=Kernels(kernel_ts, kernel_ts, kernel_ids, zeros, []))
        got = _linked_offsets(tables)  # type: ignore[arg-type]  # the two tables it reads
        earliest: dict[int, float] = {}
        for i in sorted(range(2 * n), key=lambda i: (call_ts[i], i)):
            if kind[i] != 2 and call_ids[i] != NO_CORRELATION:
                earliest.setdefault(int(call_ids[i]), float(call_ts[i]))
        by_start = sorted(range(n), key=lambda i: (kernel_ts[i], i))
        linked = [i for i in by_start if int(kernel_ids[i]) in earliest]
        assert got is not None
        assert got[0].tolist() == linked
        assert got[1].tolist() == [kernel_ts[i] - earliest[int(kernel_ids[i])] for i in linked]
