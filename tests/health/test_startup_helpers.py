"""``tables.median`` and ``tables.distinct`` (issue 48's start-up): the checks and the profile call them instead of
``np.median`` and ``np.unique``, which import numpy.ma on their first call. Each must give numpy's own answer, bit
for bit (the output digests hold the reports; these hold the helpers on the values a trace can bring: NaN,
infinities, -0.0, huge and tiny numbers, even and odd lengths, ids of both widths)."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from wizard.trace.health.tables import distinct, median

POOL = (0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 3.0, 7.25, 1e-300, 5e-324)


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


@pytest.mark.parametrize("seed", range(4))
def test_median_is_numpys_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        n = int(rng.integers(1, 14))
        picks = [
            POOL[int(j)] if rng.random() < 0.5 else float(rng.normal() * 1e6) for j in rng.integers(0, len(POOL), n)
        ]
        values = np.array(picks, dtype=np.float64)
        with np.errstate(all="ignore"):  # inf - inf: as the checks run them (check_trace's errstate)
            expected = float(np.median(values))
            got = median(values)
        assert type(got) is float
        assert _bits(got) == _bits(expected) or (math.isnan(got) and math.isnan(expected)), (picks, got, expected)


def test_median_of_a_slice_and_of_nothing() -> None:
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 9.0])
    assert median(values[:3]) == 4.0 and median(values[-2:]) == 6.0  # views, as the checks pass them
    assert math.isnan(median(values[:0]))  # as np.median gives (with a warning) for nothing


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_distinct_is_numpys_unique(dtype: type) -> None:
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 3, 50, 1000):
        values: npt.NDArray[np.integer[Any]] = rng.integers(-5, 40, n).astype(dtype)
        got = distinct(values)
        assert got.tolist() == np.unique(values).tolist()
        assert got.tolist() == sorted(set(values.tolist()))  # and a second way, without numpy's
