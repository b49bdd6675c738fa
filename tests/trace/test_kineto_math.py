"""Kineto's arithmetic: bit for bit against the oracle vectors and an independent C model."""

from __future__ import annotations

import ctypes
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ORACLES
from wizard.trace.kineto_math import (
    f32,
    kineto_blocks_per_sm,
    kineto_occupancy_percent,
    kineto_warps_per_sm,
    same_float32,
    wrap_int32,
)


def c_blocks(grid: tuple[int, int, int], sms: int) -> float:
    """What C computes: int32 product (wrapping), then float division (ctypes as the oracle)."""
    product = ctypes.c_int32(ctypes.c_int32(grid[0] * grid[1]).value * grid[2]).value
    return ctypes.c_float(ctypes.c_float(product).value / ctypes.c_float(sms).value).value


def c_warps(grid: tuple[int, int, int], block: tuple[int, int, int], sms: int) -> float:
    blocks = c_blocks(grid, sms)
    threads = block[0] * block[1] * block[2]
    step = ctypes.c_float(blocks * ctypes.c_float(threads).value).value
    return ctypes.c_float(step / 32.0).value


@pytest.mark.skipif(not ORACLES.exists(), reason="../shared/oracles is not beside this checkout")
def test_oracle_vectors_bit_for_bit() -> None:
    vectors = json.loads(ORACLES.read_text())
    assert len(vectors) >= 10
    for v in vectors:
        grid, block, sms = tuple(v["grid"]), tuple(v["block"]), v["num_sms"]
        assert kineto_blocks_per_sm(grid, sms) == f32(v["kineto_blocks_per_sm"]), v
        assert kineto_warps_per_sm(grid, block, sms) == f32(v["kineto_warps_per_sm"]), v


# A few of the oracle's rows, checked in ctypes so a fresh clone keeps them.
@pytest.mark.parametrize(
    ("grid", "block", "sms", "blocks", "warps"),
    [
        ((100000, 30000, 1), (256, 1, 1), 132, -9810358.0, -78482864.0),
        ((2147483647, 2, 1), (32, 1, 1), 132, -0.015151516, -0.015151516),
        ((65536, 65536, 1), (128, 1, 1), 132, 0.0, 0.0),
        ((65535, 1, 1), (512, 1, 1), 108, 606.805542, 9708.88867),
    ],
)
def test_known_wraps(
    grid: tuple[int, int, int], block: tuple[int, int, int], sms: int, blocks: float, warps: float
) -> None:
    assert same_float32(kineto_blocks_per_sm(grid, sms), blocks)
    assert same_float32(kineto_warps_per_sm(grid, block, sms), warps)


grids = st.tuples(st.integers(1, 2**31 - 1), st.integers(1, 65535), st.integers(1, 65535))
blocks = st.tuples(st.integers(1, 1024), st.integers(1, 4), st.integers(1, 2)).filter(
    lambda b: b[0] * b[1] * b[2] <= 1024
)


@given(grids, blocks, st.sampled_from([68, 80, 108, 114, 132, 148]))
def test_matches_c_arithmetic(grid: tuple[int, int, int], block: tuple[int, int, int], sms: int) -> None:
    assert kineto_blocks_per_sm(grid, sms) == c_blocks(grid, sms)
    assert kineto_warps_per_sm(grid, block, sms) == c_warps(grid, block, sms)


@given(st.integers(-(2**40), 2**40))
def test_wrap_is_two_complement(n: int) -> None:
    assert wrap_int32(n) == ctypes.c_int32(n).value


def test_division_by_zero_sm_count_gives_ieee_values() -> None:
    assert kineto_blocks_per_sm((99, 1, 1), 0) == float("inf")
    assert kineto_blocks_per_sm((65536, 65536, 1), 0) != kineto_blocks_per_sm((65536, 65536, 1), 0)  # nan
    assert kineto_blocks_per_sm((100000, 30000, 1), 0) == float("-inf")


def test_occupancy_rounding_eras() -> None:
    # B as PyTorch 1.8 printed it: grid [99,1,1], block [128,1,1], SM count -1, 1024 threads/SM.
    truncating, lround = kineto_occupancy_percent(16, kineto_blocks_per_sm((99, 1, 1), -1), 128, 1024)
    assert truncating == -1237
    assert lround == -1238
    assert kineto_occupancy_percent(None, 1.0, 128, 2048) == (-99, -100)  # calculator failed (D)
