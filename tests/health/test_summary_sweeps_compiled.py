"""The summary table's two sweeps compiled (``wizard/_core.c``: ``parents``, ``innermost``) against their Python
twins (``key_averages.pure_parents``, ``pure_innermost``), on the same spans and times: random trees with nested,
crossing, equal, empty and negative spans, NaN and infinite edges and times, chunks of two spans so that every
resumption between chunks is crossed, and the refusals of what is not a sweep's input. The twins are held to a
brute force of the definition in test_summary_tree_parents.py."""

from __future__ import annotations

import math
import random
from array import array
from typing import Any

import numpy as np
import pytest

from wizard.compiled_core import compiled
from wizard.trace.health import key_averages
from wizard.trace.health.key_averages import (
    _doubles,
    _root,
    _thread_tree,
    compiled_innermost,
    compiled_parents,
    compiled_up_the_tree,
    pure_innermost,
    pure_parents,
    pure_up_the_tree,
)

core = compiled()
pytestmark = pytest.mark.skipif(core is None, reason="the compiled core is not built here (or WARPWIZARD_PURE=1)")

EDGES = (math.nan, math.inf, -math.inf)


def random_case(rng: random.Random) -> tuple[Any, Any, Any]:
    n = rng.choice([0, 1, 2, 3, 9, 40, 200])
    starts = [rng.randrange(40) / 2 for _ in range(n)]
    ends = [s + rng.choice([0.0, 0.5, 1.0, 3.0, 9.0, 30.0, -1.0]) for s in starts]
    for values in (starts, ends):
        for _ in range(rng.choice([0, 0, 1, 3])):
            if values:
                values[rng.randrange(len(values))] = rng.choice(EDGES)
    times = [rng.randrange(-2, 80) / 2 + rng.choice([0.0, 0.25]) for _ in range(rng.choice([0, 1, 5, 60]))]
    if times and rng.random() < 0.3:
        times[rng.randrange(len(times))] = rng.choice(EDGES)
    return np.array(starts, dtype=np.float64), np.array(ends, dtype=np.float64), np.array(times, dtype=np.float64)


def same(a: Any, b: Any) -> bool:
    return list(a) == list(b)


@pytest.mark.parametrize("chunk_bytes", [16, 24, 1 << 16])
@pytest.mark.parametrize("seed", range(6))
def test_compiled_sweeps_give_the_twins_answers(monkeypatch: pytest.MonkeyPatch, chunk_bytes: int, seed: int) -> None:
    monkeypatch.setattr(key_averages, "_CHUNK_BYTES", chunk_bytes)  # two or three spans and times at a time
    rng = random.Random(seed)
    for _ in range(120):
        start, end, times = random_case(rng)
        tree = _thread_tree(start, end, np.arange(len(start)), times)
        assert same(compiled_parents(core, tree.start, tree.end), pure_parents(tree.start, tree.end))
        assert same(compiled_innermost(core, tree, times), pure_innermost(tree, times))


def bits(values: Any) -> list[bytes]:
    """Each double by its bytes: NaN equal to NaN, -0.0 not to 0.0."""
    return [np.float64(v).tobytes() for v in values]


@pytest.mark.parametrize("chunk_bytes", [8, 24, 1 << 16])
@pytest.mark.parametrize("seed", range(6))
def test_compiled_up_the_tree_sums_as_the_twin(monkeypatch: pytest.MonkeyPatch, chunk_bytes: int, seed: int) -> None:
    """Each span's totals added up the tree (``up_the_tree``), a chunk of one, three or every span at a time: the
    twin's doubles, bit for bit (the same additions in the same order), on the sweep's own trees and on parents
    that point anywhere before or after the span, with NaN, infinite and signed-zero totals."""
    monkeypatch.setattr(key_averages, "_CHUNK_BYTES", chunk_bytes)
    rng = random.Random(seed)
    values = (0.0, -0.0, 1.5, 1e300, -1e300, math.inf, -math.inf, math.nan, 3.0, 1e-300)
    for _ in range(120):
        start, end, times = random_case(rng)
        parent = _thread_tree(start, end, np.arange(len(start)), times).parent if rng.random() < 0.5 else None
        n = len(parent) if parent is not None else rng.choice([0, 1, 7, 50])
        if parent is None:
            parent = array("q", [rng.randrange(-2, n) for _ in range(n)])
        own = np.array([rng.choice(values) for _ in range(n)], dtype=np.float64)
        claimed = np.array([rng.choice(values) for _ in range(n)], dtype=np.float64)
        ours = compiled_up_the_tree(core, parent, _doubles(claimed), _doubles(own))
        theirs = pure_up_the_tree(parent, _doubles(claimed), _doubles(own))
        assert [bits(a) for a in ours] == [bits(a) for a in theirs]


def test_up_the_tree_refuses_what_is_not_its_own_as_the_twin_does() -> None:
    """A parent past the spans: the twin's IndexError, in its words; arguments that are not a chunk of the
    totals: one line, nothing added."""
    assert core is not None
    parent, total = array("q", [-1, 5]), _doubles(np.array([1.0, 2.0]))
    for up_the_tree in (pure_up_the_tree, lambda *a: compiled_up_the_tree(core, *a)):
        with pytest.raises(IndexError, match="index out of bounds on dimension 1"):
            up_the_tree(parent, bytearray(total), bytearray(total))
    two = _doubles(np.array([1.0, 2.0]))
    cases: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((b"\0" * 7, 0, bytearray(two), bytearray(two)), TypeError, "up_the_tree's parents: bytes of 8-byte items"),
        ((b"", 0, bytes(two), bytearray(two)), TypeError, "the totals bytearrays"),
        ((array("q", [-1]).tobytes(), 2, bytearray(two), bytearray(two)), ValueError, "the parents' spans in them"),
        ((array("q", [-1]).tobytes(), -1, bytearray(two), bytearray(two)), ValueError, "the parents' spans in them"),
        ((b"", 0, bytearray(two), bytearray(two[:8])), ValueError, "totals of as many doubles"),
    ]
    for args, kind, words in cases:
        with pytest.raises(kind, match=words):
            core.up_the_tree(*args)
    lengths = array("q", [-1]), _doubles(np.array([1.0, 2.0])), _doubles(np.array([1.0, 2.0]))
    with pytest.raises(IndexError):  # three of other lengths: the twin's answer, its error
        compiled_up_the_tree(core, *lengths)
    for size, parents in ((7, 0), (17, 2)):  # totals that are no whole doubles: the twin's TypeError
        for up_the_tree in (pure_up_the_tree, lambda *a: compiled_up_the_tree(core, *a)):
            with pytest.raises(TypeError, match="memoryview: length is not a multiple of itemsize"):
                up_the_tree(array("q", [-1] * parents), bytearray(size), bytearray(size))


def test_a_deep_chain_swept_in_chunks_keeps_its_stack_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Op k spans [k, 100,000 - k): 20,000 nested, each launching just inside the next one in; chunks of 8 spans."""
    monkeypatch.setattr(key_averages, "_CHUNK_BYTES", 64)
    n = 20_000
    start = np.arange(n, dtype=np.float64)
    end = 100_000.0 - start
    times = start + 0.5
    tree = _thread_tree(start, end, np.arange(n), times)
    parents = compiled_parents(core, tree.start, tree.end)
    assert list(parents) == [-1, *range(n - 1)]  # the second computation: each op's parent is the one before
    assert compiled_innermost(core, tree, times).tolist() == list(range(n))  # each time's op is the one it is in
    assert same(parents, pure_parents(tree.start, tree.end))


def test_the_sweeps_refuse_what_is_not_theirs_in_one_line() -> None:
    assert core is not None
    stack, tops = _root()
    doubles = array("d", [1.0, 2.0]).tobytes()
    cases: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((doubles, doubles[:8], 0, stack, tops), ValueError, "parents: as many ends as starts"),
        ((doubles[:7], doubles, 0, stack, tops), TypeError, "parents' starts: bytes of 8-byte items"),
        ((doubles, doubles, 0, b"", tops), TypeError, "a sweep's stack and tops are two bytearrays"),
        ((doubles, doubles, 0, stack, stack), TypeError, "a sweep's stack and tops are two bytearrays"),
        ((doubles, doubles, 0, bytearray(), bytearray()), ValueError, "a sweep's stack and tops hold the same"),
    ]
    for args, kind, words in cases:
        with pytest.raises(kind, match=words):
            core.parents(*args)
    with pytest.raises(ValueError, match="innermost: the spans at hand start at or before the next to push"):
        core.innermost(doubles, doubles, 5, doubles, array("q", [0, 1]).tobytes(), stack, tops, 0)
    with pytest.raises(ValueError, match="innermost: the spans at hand start"):  # pushed - base cannot overflow
        core.innermost(doubles, doubles, -(2**63), doubles, array("q", [0, 1]).tobytes(), stack, tops, 2**63 - 1)
    with pytest.raises(ValueError, match="innermost: as many ends as starts, lasts as times"):
        core.innermost(doubles, doubles, 0, doubles, array("q", [0]).tobytes(), stack, tops, 0)
    assert (bytes(stack), bytes(tops)) == tuple(bytes(b) for b in _root())  # a refused call left them as they were


def test_summary_table_binds_the_compiled_sweeps_where_the_core_is_built() -> None:
    assert key_averages._parents.func is compiled_parents  # type: ignore[attr-defined]
    assert key_averages._innermost.func is compiled_innermost  # type: ignore[attr-defined]
    assert key_averages._up_the_tree.func is compiled_up_the_tree  # type: ignore[attr-defined]
