"""Every command's output on every shared trace and example is the reference's, byte for byte (after the
moving parts: times and dates): the promise of issue 46's rebuild, and of every refactoring after it.

A case that differs is either a regression or a named fix: see it with
``python -m tests.output_digests --diff CASE --base REV``; a named fix takes its new reference with
``python -m tests.output_digests --write`` in the same commit that says why the output changed.
"""

from __future__ import annotations

import pytest

from tests import output_digests
from tests.conftest import TRACES

CASES = output_digests.cases()
REFERENCE = output_digests.frozen()


@pytest.mark.parametrize("case", sorted(set(CASES) | set(REFERENCE)))
def test_output_is_the_reference(case: str) -> None:
    if case not in REFERENCE:
        pytest.skip(f"a new case with no reference yet: python -m tests.output_digests --write ({case})")
    if case not in CASES:
        assert not TRACES.is_dir() or "shared:" not in case, f"{case}: the reference has it, today's cases do not"
        pytest.skip("needs ../shared/traces beside this checkout (real traces are never committed)")
    text = output_digests.output(CASES[case])
    assert output_digests.digest(text) == REFERENCE[case], (
        f"{case}: the output changed; see it with python -m tests.output_digests --diff {case!r} --base <commit>\n"
        + text[:3000]
    )


def test_moving_parts_are_the_only_ones_written_over() -> None:
    """The placeholders take times and dates, and nothing a user reads as a fact (a count, a µs figure)."""
    text = (
        '"started": "2026-12-01T23:20:35.397901+00:00", "read_s": 0.65, "duration_s": 5.3e-05,\n'
        "trace.inspect FAIL  rank-skew  (2.0 s)\n3 collectives start up to 1000.0 µs apart; 12 s of 2 GB"
    )
    assert output_digests.steady(text) == (
        '"started": "<WHEN>", "read_s": <S>, "duration_s": <S>,\n'
        "trace.inspect FAIL rank-skew (<S> s)\n3 collectives start up to 1000.0 µs apart; 12 s of 2 GB"
    )
    assert output_digests.steady('"mtime_ns": 1796156534233337906, "size": 6397') == '"mtime_ns": <MTIME>, "size": 6397'
    assert output_digests.steady("│ <REPO>/x.json      │ 3 │\n────────────") == "│ <REPO>/x.json │ 3 │\n─"
