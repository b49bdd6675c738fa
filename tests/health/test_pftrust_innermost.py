"""summary-table's attribution of each launch to the innermost op holding it (``key_averages._innermost``) is one
sweep (issue 47 item 9: it moved every unresolved launch one parent a pass, quadratic in nesting depth: 300k nested
ops took 108 s). Checked against a brute force written from the definition alone, and on the pathological shape."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import budget
from wizard.trace.health.key_averages import _innermost, _Thread, _thread_tree


def _brute(start: list[float], end: list[float], times: list[float]) -> list[int]:
    """The definition: of the spans holding t (start <= t < end), the last in the tree's order ((start, -end), so
    the innermost of nested ones and the later-starting of crossing ones), else -1."""
    out = []
    for t in times:
        holders = [i for i in range(len(start)) if start[i] <= t < end[i]]
        out.append(max(holders) if holders else -1)
    return out


def _tree(spans: list[tuple[int, int]], times: list[float]) -> tuple[_Thread, np.ndarray]:
    start = np.array([float(s) for s, _ in spans], dtype=np.float64)
    end = np.array([float(s + n) for s, n in spans], dtype=np.float64)
    queries = np.array(times, dtype=np.float64)
    return _thread_tree(start, end, np.zeros(len(spans), dtype=np.int64), queries), queries


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 30)), max_size=25),
    st.lists(st.integers(-2, 75).map(lambda x: x / 2), max_size=25),
)
def test_the_sweep_agrees_with_the_definition(spans: list[tuple[int, int]], times: list[float]) -> None:
    """Nested, disjoint, crossing, empty and equal spans; times on their edges (half-units hit neither)."""
    tree, queries = _tree(spans, times)
    got = _innermost(tree, queries).tolist()
    assert got == _brute(tree.start.tolist(), tree.end.tolist(), times)


def test_fifty_thousand_nested_ops_each_launching_past_the_one_inside() -> None:
    """Op i spans [i, 2N - i): N nested ops. A launch at N + k + 0.5 is held by ops 0 .. N-k-1, so the innermost is
    N-k-1, k parents above the latest-starting op: the old walk took N passes over the unresolved launches."""
    n = 50_000
    spans = [(i, 2 * n - 2 * i) for i in range(n)]
    times = [n + k + 0.5 for k in range(n)]
    tree, queries = _tree(spans, times)
    started = time.process_time()
    got = _innermost(tree, queries)
    assert time.process_time() - started < budget(1.0)
    assert got.tolist() == [n - k - 1 for k in range(n)]


def test_fifty_thousand_disjoint_ops_and_launches_between_them() -> None:
    n = 50_000
    spans = [(3 * i, 2) for i in range(n)]  # [3i, 3i + 2)
    times = [3 * i + (0.5 if i % 2 else 2.5) for i in range(n)]  # inside, or in the gap after
    tree, queries = _tree(spans, times)
    started = time.process_time()
    got = _innermost(tree, queries)
    assert time.process_time() - started < budget(1.0)
    assert got.tolist() == [i // 2 if i % 2 else -1 for i in range(n)]  # the tree keeps the spans holding a launch
