"""The SM count a device's launches prove (``proven_sm_counts``, wizard/trace/metrics/devices.py: mechanism G) is
voted on the first 5,000 launches. A table's launches are counted by their distinct combinations
(``KernelTable.first_combinations``), each voted once with its count: the counts, the order votes first appear in
and so the result must be the per-launch loop's, on tables of several devices, launches that vote nothing or a
count that is not whole, and more than 5,000 launches."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from wizard.trace.metrics import devices
from wizard.trace.read.records import KernelRecord, KernelTable, ReportedValue


def per_launch(kernels: list[KernelRecord]) -> dict[int, list[tuple[int, int]]]:
    """Every device's votes, in the order they first appear, one launch at a time (the loop before)."""
    votes: dict[int, Counter[int]] = {}
    for k in kernels[: devices._PROOF_SCAN]:
        vote = devices._sm_vote(k)
        if vote is not None and k.device is not None:
            votes.setdefault(k.device, Counter())[vote] += 1
    return {device: list(counted.items()) for device, counted in votes.items()}


def shape(rng: random.Random) -> tuple[Any, ...]:
    sms = rng.choice([108, 132, 114])
    grid = rng.choice([(sms * rng.randint(1, 4), 1, 1), (7, 1, 1), (1, 1, 1), None])
    per_sm = None if grid is None else rng.choice([grid[0] / sms, grid[0] / sms * 1.37, None])  # whole, not, none
    bps = ReportedValue(per_sm, "number")
    return (
        f"k{rng.randint(0, 30)}", 0, 7, rng.choice([0, 1, 2, None]), 7, grid, (128, 1, 1), 32, 0,
        bps, ReportedValue(rng.choice([None, 4.0]), "number"), ReportedValue(None, "missing"), None, None, None,
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(8))
def test_votes_by_combination_are_the_per_launch_votes(seed: int) -> None:
    rng = random.Random(seed)
    shapes = [shape(rng) for _ in range(rng.randint(1, 60))]
    table = KernelTable()
    for i in range(rng.choice([10, 800, 6_500])):
        table.add(float(i), 1.0, i, rng.choice(shapes))
    records = list(table)
    grouped = table.first_combinations(devices._PROOF_SCAN)
    assert grouped is not None
    assert sum(n for _, n in grouped) == min(len(records), devices._PROOF_SCAN)
    counted: dict[int, Counter[int]] = {}
    for k, n in grouped:
        vote = devices._sm_vote(k)
        if vote is not None and k.device is not None:
            counted.setdefault(k.device, Counter())[vote] += n
    assert {device: list(c.items()) for device, c in counted.items()} == per_launch(records)
    assert devices.proven_sm_counts(table) == devices.proven_sm_counts(records)
