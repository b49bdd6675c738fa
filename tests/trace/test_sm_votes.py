"""The SM counts a device's launches prove (``proven_sm_counts``, wizard/trace/metrics/devices.py: mechanism G, on
the first 5,000 launches) and imply where a trace lists no device (``inferred_sm_counts``: the first 200 launches
of each device that imply a whole count). A table's launches are voted by their combinations
(``KernelTable.combinations``), each voted once: the counts, the order votes and devices first appear in and so the
results must be the per-launch loops', on tables of several devices, launches that vote nothing or a count that is
not whole, and more than 5,000 launches."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from wizard.trace.metrics import devices
from wizard.trace.read.records import KernelRecord, KernelTable, ReportedValue


def per_launch(kernels: list[KernelRecord]) -> dict[int, list[tuple[int, int]]]:
    """Every device's votes among the first 5,000 launches, in the order they first appear, a launch at a time
    (proven_sm_counts' loop before)."""
    votes: dict[int, Counter[int]] = {}
    for k in kernels[: devices._PROOF_SCAN]:
        vote = devices._sm_vote(k)
        if vote is not None and k.device is not None:
            votes.setdefault(k.device, Counter())[vote] += 1
    return {device: list(counted.items()) for device, counted in votes.items()}


def inferred_per_launch(kernels: list[KernelRecord]) -> dict[int, int | None]:
    """device_table's loop before: each device's records, then its first 200 votes' most common."""
    by_device: dict[int, list[KernelRecord]] = {}
    for k in kernels:
        if k.device is not None:
            by_device.setdefault(k.device, []).append(k)
    out: dict[int, int | None] = {}
    for device, records in by_device.items():
        votes: Counter[int] = Counter()
        for k in records:
            vote = devices._sm_vote(k)
            if vote is not None:
                votes[vote] += 1
                if sum(votes.values()) >= 200:
                    break
        out[device] = votes.most_common(1)[0][0] if votes else None
    return out


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
    grouped = list(devices._first_launches(table, devices._PROOF_SCAN))
    assert sum(n for _, n in grouped) == min(len(records), devices._PROOF_SCAN)
    counted: dict[int, Counter[int]] = {}
    for k, n in grouped:
        vote = devices._sm_vote(k)
        if vote is not None and k.device is not None:
            counted.setdefault(k.device, Counter())[vote] += n
    assert {device: list(c.items()) for device, c in counted.items()} == per_launch(records)
    assert devices.proven_sm_counts(table) == devices.proven_sm_counts(records)
    inferred = devices.inferred_sm_counts(table)
    assert list(inferred.items()) == list(inferred_per_launch(records).items())
    assert list(devices.inferred_sm_counts(records).items()) == list(inferred.items())


def test_a_device_past_200_votes_keeps_its_first_200() -> None:
    """1,000 launches voting 132, then 1,000 voting 114: the first 200 decide (132) however many come after."""
    a = shape(random.Random(3))
    first = (*a[:3], 0, a[4], (264, 1, 1), *a[6:9], ReportedValue(2.0, "number"), *a[10:])
    later = (*a[:3], 0, a[4], (228, 1, 1), *a[6:9], ReportedValue(2.0, "number"), *a[10:])
    table = KernelTable()
    for i, s in enumerate([first] * 1000 + [later] * 2000):
        table.add(float(i), 1.0, i, s)
    assert devices.inferred_sm_counts(table) == inferred_per_launch(list(table)) == {0: 132}


def test_many_devices_and_huge_counts_vote_as_launch_by_launch() -> None:
    """3,000 devices over 9,000 launches (a pass for each would be quadratic), and counts past int64 (a grid over a
    tiny blocks per SM): the same as the per-launch loop."""
    rng = random.Random(5)
    base = shape(rng)
    table = KernelTable()
    for i in range(9_000):
        device = rng.randrange(3_000)
        per_sm = rng.choice([1e-300, 2.0, 0.5, None])
        s = (*base[:3], device, base[4], (264, 1, 1), *base[6:9], ReportedValue(per_sm, "number"), *base[10:])
        table.add(float(i), 1.0, i, s)
    inferred = devices.inferred_sm_counts(table)
    assert list(inferred.items()) == list(inferred_per_launch(list(table)).items())
    assert len(inferred) > 2_000 and any(v is not None and v > 2**63 for v in inferred.values())
