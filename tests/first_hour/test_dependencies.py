"""Installs from wheels on every supported Python, and playbook patterns stay bounded on both engines.

google-re2 publishes no wheel for Python 3.15, so pip fell back to a C++ build that needs
pybind11 and Abseil. The patterns module runs on RE2 where it is installed and on ``regex``
(with a timeout) elsewhere; both paths are tested here in one interpreter.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from tests.conftest import REPO, budget
from wizard.playbook import patterns

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]

try:
    import re2  # noqa: F401

    ENGINES = ["re2", "regex"]
except ImportError:  # a Python without re2's wheel: the fallback is all there is
    ENGINES = ["regex"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(patterns, "ENGINE", request.param)
    yield str(request.param)


def requirements_for(python: str) -> list[str]:
    """The project's dependencies that apply on ``python``, markers evaluated for it (pip would
    evaluate them for the interpreter running pip, not for --python-version)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    environment = {key: str(value) for key, value in default_environment().items()}
    environment |= {"python_version": python, "python_full_version": f"{python}.0"}
    chosen = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            requirement.marker = None
            chosen.append(str(requirement))
    return chosen


def test_re2_is_only_asked_for_where_it_has_wheels() -> None:
    names = {python: {Requirement(r).name for r in requirements_for(python)} for python in PYTHONS}
    assert "google-re2" not in names["3.15"]
    assert all("google-re2" in names[p] for p in PYTHONS[:-1])
    assert all("regex" in names[p] for p in PYTHONS)


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
    except OSError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("python", PYTHONS)
def test_every_dependency_installs_from_wheels(python: str, tmp_path: Path) -> None:
    """The whole dependency set resolves to wheels (``--only-binary :all:``) for this Python."""
    if not _pypi_reachable():
        pytest.skip("pypi.org is not reachable from here: cannot resolve the wheels")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", str(tmp_path)),
            *("--only-binary", ":all:", "--python-version", python, *requirements_for(python)),
        ],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    files = [p.name for p in tmp_path.iterdir()]
    assert files and all(name.endswith(".whl") for name in files)
    wanted = "regex" if python == "3.15" else "google_re2"
    assert any(name.startswith(wanted + "-") for name in files), files


# --- the two engines accept and refuse the same patterns ---------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1", "(?=a)a", "(?!a)b", "(?<=a)b", "(?>a)", "a*+", "(a)?(?(1)b|c)", "(?P<x>a)(?P=x)", "a{1001}", "("],
)
def test_patterns_that_need_backtracking_are_refused_on_both_engines(engine: str, pattern: str) -> None:
    with pytest.raises(patterns.PatternError, match="RE2 syntax"):
        patterns.check(pattern)


@pytest.mark.parametrize("pattern", [r"[0-9]+", r"(sm_)?[0-9]{2,3}", r"[A-Za-z_][A-Za-z0-9_]*::\w+", "a{0,1000}"])
def test_ordinary_patterns_match_alike_on_both_engines(engine: str, pattern: str) -> None:
    patterns.check(pattern)
    assert patterns.fullmatch(r"[0-9]+", "1234")
    assert not patterns.fullmatch(r"[0-9]+", "12a4")
    assert not patterns.fullmatch(r"[0-9]+", "1234\n")  # fullmatch: no trailing newline slips through


# Classic exponential-backtracking shapes. What an engine does with each is its own business and changes between
# releases: regex 2026.11.19 finishes (x+x+)+y on 5000 x in under a second, where earlier releases ran into the
# timeout. What matters, and what is asserted, is the bound: each ends within the timeout (with room for load), as
# no match or as the fallback's refusal, on both engines and on every release.
CATASTROPHIC = [(r"(x+x+)+y", "x" * 5000), (r"(a|aa)+b", "a" * 60), (r"(a|a?)+b", "a" * 60), (r"(\w|\d)+!", "1" * 5000)]


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_a_catastrophic_pattern_is_bounded_on_both_engines(engine: str, pattern: str, text: str) -> None:
    started = time.monotonic()
    try:
        matched = patterns.fullmatch(pattern, text)
    except patterns.PatternError as exc:  # the fallback gave up after its timeout
        assert engine == "regex"
        assert "took longer than" in str(exc)
    else:
        assert not matched  # the engine finished: none of these texts matches
    # Re's backtracking takes longer than the universe's age here; the bound is the timeout, with room for load.
    assert time.monotonic() - started < budget(15)


def test_the_fallbacks_timeout_is_one_clear_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeout path itself, whatever today's regex can finish: the engine is simulated at its edge (regex raises
    TimeoutError when ``timeout=`` runs out), and the call must become the playbook author's PatternError."""
    monkeypatch.setattr(patterns, "ENGINE", "regex")
    seen: list[float] = []

    class Backtracks:
        def fullmatch(self, text: str, timeout: float) -> None:
            seen.append(timeout)
            raise TimeoutError("regex timed out")

    monkeypatch.setattr(patterns, "_compiled", lambda pattern, engine: Backtracks())
    with pytest.raises(patterns.PatternError, match=r"took longer than 0\.5 s \(the pattern backtracks; RE2 syntax"):
        patterns.fullmatch("(a|aa)+b", "a" * 60)
    assert seen == [patterns.MATCH_SECONDS]


def test_regex_still_raises_timeouterror_when_its_timeout_runs_out() -> None:
    """The contract the fallback relies on, held against the installed regex: a timeout too short for any real work
    raises TimeoutError (regex documents ``timeout`` in seconds since 2021; the floor in pyproject.toml). Linear work
    over 10 MB, so no optimiser of a later release can finish it inside a nanosecond."""
    import regex

    compiled = regex.compile(r"(?:a|b)*c", flags=regex.VERSION0)
    with pytest.raises(TimeoutError):
        compiled.fullmatch("ab" * 5_000_000, timeout=1e-9)


def test_a_playbook_answer_is_checked_on_both_engines(engine: str) -> None:
    from wizard.playbook.model import AnswerInvalid, QuestionNode, Validation

    question = QuestionNode(
        id="arch", kind="question", step=None, explain="", line=1, validation=Validation(pattern=r"sm_[0-9]{2,3}")
    )
    assert question.coerce("sm_90") == "sm_90"
    with pytest.raises(AnswerInvalid, match="does not match"):
        question.coerce("sm_9")
