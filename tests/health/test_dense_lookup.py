"""``tables.member`` and ``tables.find`` (issue 48, 5 million kernels): correlation ids whose span is dense are
looked up in a table of the span, others by binary search; ``tables.distinct`` skips its sort where the values
already are sorted. Each path must give the answer of numpy's own ``isin``/``unique`` and of a Python dict, on ids
of both widths, -2**63 (no correlation) among the values, values outside the span, and ids too sparse for a table."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from wizard.trace.health import tables
from wizard.trace.health.tables import distinct, find, member

NONE = -(2**63)


def _cases(dtype: type) -> list[tuple[npt.NDArray[Any], npt.NDArray[Any]]]:
    """(values, sorted distinct ids): dense spans (a table), sparse ones (the search), both widths."""
    rng = np.random.default_rng(11)
    wide = dtype is np.int64
    cases: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]] = []
    for n in (1, 2, 7, 300, 5000):
        for spread in (1, 3, 10, 10_000 if wide else 1000):
            ids: npt.NDArray[Any] = np.unique(rng.integers(0, n * spread, n) + (2**40 if wide else 5)).astype(dtype)
            low, high = int(ids[0]), int(ids[-1])
            picks = rng.integers(low - 20, high + 20, 3 * n)
            values = np.concatenate((picks, ids[rng.integers(0, len(ids), n)])).astype(np.int64)
            if wide:
                values[rng.integers(0, len(values), 1 + n // 50)] = NONE
            cases.append((values.astype(dtype), ids))
    return cases


@pytest.mark.parametrize("chunk", [7, 1000, tables.CHUNK])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_member_and_find_are_isin_and_a_dict(monkeypatch: pytest.MonkeyPatch, dtype: type, chunk: int) -> None:
    """Chunks of 7 and 1000 values (ids and values split unevenly), and the read's own."""
    monkeypatch.setattr(tables, "CHUNK", chunk)
    dense = sparse = 0
    for values, ids in _cases(dtype):
        uses_table = tables._span(ids) is not None
        dense, sparse = dense + uses_table, sparse + (not uses_table)
        position = {int(v): n for n, v in enumerate(ids.tolist())}
        want = [int(v) in position for v in values.tolist()]
        assert member(values, ids).tolist() == want == np.isin(values, ids).tolist()
        where, found = find(values, ids)
        assert found.tolist() == want
        assert where[found].tolist() == [position[int(v)] for v in values[found].tolist()]
        assert where[found].tolist() == np.searchsorted(ids, values[found]).tolist()
    assert dense and sparse  # both paths taken


def test_member_counts_ids_held_twice_once() -> None:
    ids = np.array([3, 3, 4, 9, 9, 9], dtype=np.int64)
    values = np.array([9, 2, 3, 5, 4, NONE, 10], dtype=np.int64)
    assert tables._span(ids) is not None
    assert member(values, ids).tolist() == [True, False, True, False, True, False, False]


def test_nothing_to_look_up() -> None:
    empty = np.zeros(0, dtype=np.int64)
    some = np.array([1, 2], dtype=np.int64)
    for values, ids in ((empty, some), (some, empty), (empty, empty)):
        assert member(values, ids).tolist() == [False] * len(values)
        where, found = find(values, ids)
        assert len(where) == len(values) and found.tolist() == [False] * len(values)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_distinct_of_sorted_and_unsorted_values(dtype: type) -> None:
    """Sorted (the sort skipped), sorted with repeats, one out of place, reversed: numpy's unique each time, and
    never the values' own array (callers may write to it)."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 5, 1000):
        ascending: npt.NDArray[Any] = np.sort(rng.integers(-50, 50, n)).astype(dtype)
        shapes = [ascending, ascending[::-1], np.arange(n, dtype=dtype)]
        if n > 2:
            swapped = ascending.copy()
            swapped[[0, -1]] = swapped[[-1, 0]]
            shapes.append(swapped)
        for values in shapes:
            got = distinct(values)
            assert got.tolist() == np.unique(values).tolist() == sorted(set(values.tolist()))
            assert not np.shares_memory(got, values)


def test_kernel_order_is_the_stable_sort() -> None:
    """``Kernels.order``: None where the starts are in order already (ties, -0.0 beside 0.0), the stable argsort
    otherwise (one out of place, a NaN, which sorts last)."""
    rng = np.random.default_rng(5)
    nan = float("nan")
    many = rng.integers(0, 50, 400).astype(float)
    starts = [[], [1.0], [1.0, 1.0, 2.0], [0.0, -0.0, 0.0, 3.5], [2.0, 1.0], [1.0, nan, 2.0], [nan, nan],
              np.sort(many).tolist(), many.tolist()]  # fmt: skip
    for ts in starts:
        values = np.array(ts, dtype=np.float64)
        n = len(values)
        zeros = np.zeros(n, dtype=np.int64)
        kernels = tables.Kernels(values, values, zeros, zeros, [])
        got = kernels.order()
        order = list(range(n)) if got is None else got.tolist()
        assert got is None or got.dtype == np.int64
        assert order == np.argsort(values, kind="stable").tolist()
        key = [(bool(np.isnan(v)), 0.0 if np.isnan(v) else float(v), i) for i, v in enumerate(values.tolist())]
        assert order == [i for *_, i in sorted(key)]
        assert (got is None) == bool(n < 2 or (values[1:] >= values[:-1]).all())  # None: in order, no NaN
