"""The flagship's grouping of launches with findings (``Classifier._group_launches``), held to the launch-at-a-time
rule it replaces.

The classifier adds a batch's launches with findings to their (mechanism, kernel) groups group by group: the
first, the examples and the listed launches one by one, the rest counted with numpy. The reference is the
classifier's own launch-at-a-time path (``plots=True``: ``_launch``, then ``_grouped`` for every launch in launch
order), which every count, example, listed launch, first start and worst example must match, whatever the batches.
The two folds the grouped path does with numpy (``_first_min``, ``_first_max_above``) are held to Python's own
``min`` and ``if v > best`` over values with NaN, signed zeros and ties.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.metrics.classify import Classifier, _first_max_above, _first_min
from wizard.trace.metrics.devices import device_table
from wizard.trace.read.reader import ReaderConfig, read_trace
from wizard.trace.read.records import NO_CORRELATION, KernelTable

PLANTS = ("A'", "B", "C", "D", None)  # None: a correct launch, no finding


def _trace(tmp_path: Path, seed: int) -> Path:
    """Launches of four kernels, each with a few grids and a planted bug or none, in a random order, some at the
    same start (ties for the groups' first start)."""
    rng = random.Random(seed)
    b = TraceBuilder(gpu="A100")
    at = 0.0
    for _ in range(rng.randrange(150, 400)):
        name = rng.choice("pqrs")
        grid = (rng.choice((99, 200, 4096)), 1, 1)
        at += rng.choice((0.0, 5.0, 40.0))
        b.add(KernelSpec(name, grid, (128, 1, 1), plant=rng.choice(PLANTS), at=at))
    return b.write(tmp_path / f"t{seed}.json")


def _groups(classifier: Classifier) -> Any:
    """Everything a group holds, in the groups' order, and the worst badness of each."""
    return [
        (key, g.to_dict(), g.count, g.first_ts, g.examples, g.launch_refs, g.launches_omitted, g.worst)
        for key, g in classifier.groups.items()
    ], dict(classifier.worst_badness)


@pytest.mark.parametrize("seed", range(6))
def test_groups_are_what_adding_each_launch_gives(tmp_path: Path, seed: int) -> None:
    """Random traces of launches with findings, fed to the grouped path in random batches (as the workers hand
    blocks over) with a small ``max_launches`` (so launches are listed and omitted): the groups are the
    launch-at-a-time path's, key for key and field for field, in the same order."""
    contents = read_trace(_trace(tmp_path, seed), config=ReaderConfig(workers=0))
    devices = device_table(contents.device_properties, contents.kernels, None)
    rng = random.Random(seed)
    most = rng.choice((1, 3, 10))
    whole = Classifier(devices, contents.is_rocm, contents, most, plots=True)  # _launch: one launch at a time
    whole.feed(contents.kernels)
    grouped = Classifier(devices, contents.is_rocm, contents, most)
    growing = KernelTable()
    ts, dur, corr, shape_of, shapes = contents.kernels.columns()
    for i in range(len(ts)):
        growing.add(ts[i], dur[i], None if corr[i] == NO_CORRELATION else corr[i], shapes[shape_of[i]])
        if rng.random() < 0.02 or i == len(ts) - 1:
            grouped.feed(growing)
    assert len(whole.groups) >= 4 and any(g.launches_omitted for g in whole.groups.values())
    assert _groups(grouped) == _groups(whole)


def _python_min(current: float, values: list[float]) -> float:
    for v in values:
        current = min(current, v)
    return current


def _python_max_above(current: float, values: list[float]) -> int | None:
    where = None
    for i, v in enumerate(values):
        if v > current:
            current, where = v, i
    return where


SPECIAL = (math.nan, 0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, 2.5)


@pytest.mark.parametrize("seed", range(40))
def test_the_folds_are_pythons(seed: int) -> None:
    """Minimal: ``_first_min(5.0, [0.0, -0.0])`` is 0.0 and ``_first_min(5.0, [-0.0, 0.0])`` -0.0 (the first of
    the smallest); ``_first_min(nan, [1.0])`` is nan; ``_first_max_above(1.0, [2.0, nan, 2.0])`` is 0."""
    rng = random.Random(seed)
    for _ in range(200):
        values = [rng.choice(SPECIAL) for _ in range(rng.randrange(0, 8))]
        current = rng.choice(SPECIAL)
        got, want = _first_min(current, np.array(values, dtype=np.float64)), _python_min(current, values)
        assert (math.isnan(got) and math.isnan(want)) or (
            got == want and math.copysign(1, got) == math.copysign(1, want)
        )
        assert _first_max_above(current, np.array(values, dtype=np.float64)) == _python_max_above(current, values)
    assert math.copysign(1, _first_min(5.0, np.array([0.0, -0.0]))) == 1.0
    assert math.copysign(1, _first_min(5.0, np.array([-0.0, 0.0]))) == -1.0
    assert math.isnan(_first_min(math.nan, np.array([1.0])))
    assert _first_max_above(1.0, np.array([2.0, math.nan, 2.0])) == 0
