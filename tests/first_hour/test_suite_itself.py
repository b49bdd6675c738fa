"""The suite holds on a busy machine and has a quick inner loop (issue 27).

A loaded two-core runner made a pexpect wait of 60 s run out on a test that takes 12 s idle. Tests
wait on events; what bounds them is a hang guard, and a bound that a test asserts (a hostile input
is refused quickly) is scaled to the load with ``budget()``.
"""

from __future__ import annotations

import ast
import os
import subprocess

import pytest

from tests.conftest import HANG_GUARD_S, REPO, budget, load_factor

TESTS = REPO / "tests"


def _elapsed_bounds(tree: ast.AST) -> list[int]:
    """Lines of ``... - started < N`` (and ``elapsed < N``) with a bare number or constant for N."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
            left, right = node.left, node.comparators[0]
            timing = (isinstance(left, ast.BinOp) and "monotonic" in ast.unparse(left)) or (
                isinstance(left, ast.Name) and left.id == "elapsed"
            )
            if timing and not (isinstance(right, ast.Call) and ast.unparse(right.func) == "budget"):
                lines.append(node.lineno)
    return lines


def test_no_test_asserts_a_wall_clock_budget_that_load_can_break() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        offenders += [f"{path.relative_to(TESTS)}:{line}" for line in _elapsed_bounds(tree)]
        for node in ast.walk(tree):  # pexpect waits: the hang guard, never a shorter budget
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("expect", "pexpect.spawn")):
                for keyword in node.keywords:
                    if keyword.arg == "timeout" and ast.unparse(keyword.value) != "HANG_GUARD_S":
                        offenders.append(f"{path.relative_to(TESTS)}:{node.lineno} (pexpect timeout)")
    assert offenders == []


def test_a_budget_grows_with_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv("WARPWIZARD_TEST_SLOWDOWN", raising=False)
    assert load_factor() == 4.0
    assert budget(5) == 40.0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert budget(5) == 10.0  # idle: twice the bound, never less
    assert HANG_GUARD_S >= 600


def test_scripts_test_quick_runs_the_inner_loop_without_the_slow_tests() -> None:
    result = subprocess.run(
        [
            "bash",
            "scripts/test",
            "--quick",
            "-n",
            "0",
            "tests/first_hour/test_dependencies.py",
            "-k",
            "installs or re2_is_only",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "1 passed, " in result.stdout and "deselected" in result.stdout  # the slow resolution is left out
