"""Kineto's own arithmetic, reproduced bit for bit.

libkineto multiplies CUPTI's int32 launch dimensions in int32 (so large grids wrap) and
divides in C ``float``. Python floats are doubles, so every step is rounded back to
float32 here; double precision is wide enough that one rounding per operation gives the
correctly rounded float32 result, which is what the oracle vectors were checked against.
"""

from __future__ import annotations

import math
import struct

INT32_MAX = 2**31 - 1
_F32 = struct.Struct("f")


def f32(value: float) -> float:
    """Round a double to the nearest float32 (what a C ``float`` would hold)."""
    if math.isinf(value) or math.isnan(value):
        return value
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def wrap_int32(value: int) -> int:
    """Two's-complement wrap, as C int32 multiplication does on every compiler Kineto uses."""
    return ((value + 2**31) % 2**32) - 2**31


def f32_div(numerator: float, denominator: float) -> float:
    """C float division including IEEE division by zero (inf, -inf, nan)."""
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)
    return f32(f32(numerator) / f32(denominator))


def product(dims: tuple[int, int, int]) -> int:
    return dims[0] * dims[1] * dims[2]


def kineto_blocks_per_sm(grid: tuple[int, int, int], num_sms: float) -> float:
    """``(gridX*gridY*gridZ) / (float)smCount`` with the int32 product (mechanism A)."""
    return f32_div(float(wrap_int32(product(grid))), float(num_sms))


def kineto_warps_per_sm(grid: tuple[int, int, int], block: tuple[int, int, int], num_sms: float) -> float:
    """``blocksPerSm * (blockX*blockY*blockZ) / 32`` in float, as libkineto computes it."""
    blocks = kineto_blocks_per_sm(grid, num_sms)
    if math.isinf(blocks) or math.isnan(blocks):
        return blocks * product(block) / 32 if product(block) else math.nan
    return f32(f32(blocks * f32(float(product(block)))) / 32.0)


def early_kineto_warps_per_sm(grid: tuple[int, int, int], block: tuple[int, int, int], num_sms: float) -> float:
    """Mechanism A': 2020-09 to 2021-05 multiplied grid and block together in int32."""
    threads = wrap_int32(product(grid) * product(block))
    return f32(f32_div(float(threads), float(num_sms)) / 32.0)


def true_blocks_per_sm(grid: tuple[int, int, int], num_sms: int) -> float:
    return product(grid) / num_sms


def true_warps_per_sm(grid: tuple[int, int, int], block: tuple[int, int, int], num_sms: int) -> float:
    return product(grid) * product(block) / 32 / num_sms


def kineto_occupancy_percent(
    active_blocks: int | None,
    blocks_per_sm: float,
    threads_per_block: int,
    max_threads_per_sm: int,
) -> tuple[int, int]:
    """The printed ``est. achieved occupancy %`` in both of Kineto's rounding eras.

    Returns ``(truncating, lround)``: ``(int)(0.5 + occ*100.0)`` used until 2026-02 and
    ``lround(occ*100)`` after. ``active_blocks`` None means the calculator failed (-1).
    """
    if active_blocks is None or max_threads_per_sm <= 0:
        occupancy = -1.0
    else:
        blocks = blocks_per_sm
        if float(active_blocks) < blocks or math.isnan(blocks):
            blocks = f32(float(active_blocks)) if not math.isnan(blocks) else blocks
        occupancy = f32(f32(blocks * f32(float(threads_per_block))) / f32(float(max_threads_per_sm)))
    if math.isnan(occupancy) or math.isinf(occupancy):
        return (-(2**31), -(2**31))
    scaled = occupancy * 100.0
    truncating = int(0.5 + scaled)
    rounded = math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)
    return (truncating, rounded)


def prints_truth(reported: float, truth: float) -> bool:
    """Whether a reported value is right: the float32 print of the true one (a non-finite value
    never is). What ``trace fix`` leaves alone and what the profiler hooks do not call wrong."""
    return math.isfinite(reported) and same_float32(reported, truth)


def same_float32(reported: float, expected: float) -> bool:
    """Whether a value printed in the trace is the float32 Kineto computed.

    Profilers print 6 to 9 significant digits or, since 2024, six decimals ("0.006757"),
    so allow a relative 1e-6 or half a unit in the sixth decimal, whichever is larger:
    still far narrower than any wrapped or mis-divided value.
    """
    if math.isnan(reported) or math.isnan(expected):
        return math.isnan(reported) and math.isnan(expected)
    if math.isinf(reported) or math.isinf(expected):
        return reported == expected
    if reported == expected:
        return True
    scale = max(abs(reported), abs(expected))
    return abs(reported - expected) <= max(1e-6 * scale, 5.01e-7)
