"""The profile's op groups (``summary._grouped``: calls, total, median and MAD of durations per (name, shapes), the
most time first) against a brute force written here with Python's statistics, on random ops: many calls of few
names, equal durations, zeros, one-call groups, ties on total. The grouping by a radix sort of group ids, each
group's durations sorted after (jsontail), must give what the lexsort by (duration, group) gave."""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from wizard.trace.profile.summary import MAX_OPS, _grouped


def _brute(
    durations: list[float], refs: list[int], keys: list[tuple[str, str | None] | None]
) -> list[tuple[str, str | None, int, float, float, float]]:
    by_key: dict[tuple[str, str | None], list[float]] = {}
    for d, r in zip(durations, refs, strict=True):
        key = keys[r]
        if key is not None:  # left out (a step)
            by_key.setdefault(key, []).append(d)
    rows: list[tuple[str, str | None, int, float, float, float]] = []
    for (name, shapes), values in by_key.items():
        median = statistics.median(values)
        rows.append(
            (
                name,
                shapes,
                len(values),
                float(sum(sorted(values))),
                median,
                statistics.median(abs(v - median) for v in values),
            )
        )
    rows.sort(key=lambda row: (-row[3], row[0], row[1] or ""))
    return rows[:MAX_OPS]


@pytest.mark.parametrize("seed", range(6))
def test_op_groups_match_a_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"aten::op{k}" for k in range(rng.choice([1, 5, 40, 400]))]
    keys: list[tuple[str, str | None] | None] = [
        (rng.choice(names), rng.choice([None, "[[2, 3]]", "[[4]]"])) for _ in range(rng.choice([1, 30, 600]))
    ]
    if len(keys) > 1:
        keys[rng.randrange(len(keys))] = None  # a step's descriptor: its ops are left out
    n = rng.choice([1, 50, 5_000])
    durations = [rng.choice([0.0, 1.0, 2.5, rng.uniform(0, 100), float(rng.randrange(5))]) for _ in range(n)]
    refs = [rng.randrange(len(keys)) for _ in range(n)]
    cuts = sorted(rng.randrange(n + 1) for _ in range(rng.choice([0, 1, 3])))  # threads, in the index's order
    parts = [
        (np.zeros(hi - lo), np.array(durations[lo:hi]), np.array(refs[lo:hi], dtype=np.int32))  # end - 0.0: as written
        for lo, hi in zip([0, *cuts], [*cuts, n], strict=True)
    ]
    got = _grouped(parts, keys)
    want = _brute(durations, refs, keys)
    assert [(g.name, g.shapes, g.calls) for g in got] == [row[:3] for row in want]
    for g, (_, _, _, total, median, mad) in zip(got, want, strict=True):
        assert g.total_us == pytest.approx(total, rel=1e-12, abs=1e-9)
        assert g.median_us == median
        assert g.mad_us == pytest.approx(mad, rel=1e-12, abs=1e-12)
