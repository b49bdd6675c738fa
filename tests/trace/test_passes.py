"""Passes typed and options declared once (issue 34): ``trace inspect``'s options are ``InspectOptions``' fields,
taken whole by the CLI, ``inspect_traces``, the run and every pass; a pass declares its name, result type, what
it reads of the passes before it, and how it is written, and breaking that contract is one clear line."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import RunCli
from tests.helpers import inspect_json
from wizard.cli.parser import build_parser
from wizard.errors import UsageError
from wizard.inspect_options import InspectOptions, command_line_fields, flag_of
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.checker import HEALTH_PASS
from wizard.trace.health.checks import CHECK_IDS
from wizard.trace.inspection.passes import register_pass, unregister_pass
from wizard.trace.inspection.run import check_options
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import Results, TracePass
from wizard.trace.read.collector import TraceContents


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    for i in range(3):
        b.add(KernelSpec(f"k{i}", (64, 1, 1), (128, 1, 1)))
    b.add(KernelSpec("grid_overflow", (100_000, 30_000, 1), (256, 1, 1)))
    return b.write(tmp_path / "t.json")


def _plain(document: dict[str, Any]) -> dict[str, Any]:
    document.pop("host")
    for report in document["reports"]:
        report.pop("timing")
    return document


def test_trace_inspects_options_are_the_declarations_fields() -> None:
    """Each field with help is one flag, parsed to the field's type; the library's own (launches, plots) none.
    Checked as a derivation (a new field is a new flag without editing this test), plus the flags users already
    type, which stay."""
    fields = command_line_fields()
    flags = {"--" + f.name.replace("_", "-") for f in fields}  # the spelling, written here apart from flag_of
    assert [flag_of(f.name) for f in fields] == ["--" + f.name.replace("_", "-") for f in fields]
    assert flags <= _inspect_flags() and len(flags) == len(fields)
    assert {"--sms", "--jobs", "--max-launches", "--checks", "--skip-checks", "--rank-skew-floor-us"} <= flags
    args = build_parser().parse_args(
        ["trace", "inspect", "--sms", "80", "--jobs", "2", "--max-launches", "5", "--checks", "a, b,",
         "--skip-checks", "c", "--rank-skew-floor-us", "25", "t.json"]
    )  # fmt: skip
    assert InspectOptions.parsed(args) == InspectOptions(
        sms=80, jobs=2, max_launches=5, checks=("a", "b"), skip_checks=("c",), rank_skew_floor_us=25.0
    )
    assert InspectOptions.parsed(build_parser().parse_args(["trace", "inspect", "t.json"])) == InspectOptions()
    library = {f.name for f in dataclasses.fields(InspectOptions)} - {f.name for f in command_line_fields()}
    assert library == {"launches", "plots"}


def _inspect_flags() -> set[str]:
    """Every option string of the parser's ``trace inspect``, read from argparse's own actions."""
    import argparse

    def sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        found: argparse.ArgumentParser = group.choices[name]
        return found

    inspect = sub(sub(build_parser(), "trace"), "inspect")
    return {flag for action in inspect._actions for flag in action.option_strings}


def test_the_options_whole_are_the_keywords(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    by_keywords = wizard.inspect_traces(path, max_launches=3, checks=["impossible-metrics"], jobs=1)
    whole = wizard.inspect_traces(
        path,
        wizard.InspectOptions(max_launches=3, checks=("impossible-metrics",), jobs=1, launches="all", plots=True),
    )
    assert _plain(whole.to_dict()) == _plain(by_keywords.to_dict())
    assert [c.check for c in whole.health] == ["impossible-metrics"]
    assert len(whole.launches) == len(by_keywords.launches) == 4


def test_options_and_keywords_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        wizard.inspect_traces(_trace(tmp_path), wizard.InspectOptions(), sms=80, plots=False)
    assert str(caught.value) == "give options or the keywords, not both (also given: sms, plots)"


@pytest.mark.parametrize(
    ("options", "library", "command_line"),
    [
        (InspectOptions(max_launches=-1), "max_launches must be 0 or more, not -1",
         "--max-launches must be 0 or more, not -1"),
        (InspectOptions(sms=0), "sms must be a positive number of SMs, not 0",
         "--sms must be a positive number of SMs, not 0"),
        (InspectOptions(jobs=True), "jobs must be a whole number, not bool True",
         "--jobs must be a whole number, not bool True"),
        (
            InspectOptions(rank_skew_floor_us=float("nan")),
            "rank_skew_floor_us must be a finite number of µs, 0 or more, not nan",
            "--rank-skew-floor-us must be a finite number of µs, 0 or more, not nan",
        ),
        (
            InspectOptions(launches="some"),  # type: ignore[arg-type]
            "launches must be one of none, wrong, all, not 'some'",
            "--launches must be one of none, wrong, all, not 'some'",
        ),
        (
            InspectOptions(skip_checks=CHECK_IDS),
            f"skip_checks leaves no health check to run; the checks are {', '.join(CHECK_IDS)}",
            f"--skip-checks leaves no health check to run; the checks are {', '.join(CHECK_IDS)}",
        ),
    ],
)  # fmt: skip
def test_the_options_are_checked_once_in_the_callers_words(
    options: InspectOptions, library: str, command_line: str
) -> None:
    with pytest.raises(UsageError) as caught:
        check_options(options)
    assert str(caught.value) == library
    with pytest.raises(UsageError) as spelt:
        check_options(options, spell=flag_of)
    assert str(spelt.value) == command_line


def test_the_cli_says_the_flag(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", "--max-launches", "-1", str(_trace(tmp_path)))
    assert result.status == 2
    assert result.stderr == "warpwizard: error: --max-launches must be 0 or more, not -1\n"


def test_checked_options_resolve_the_checks() -> None:
    checked = check_options(InspectOptions(skip_checks=("rank-skew", "trace-size")))
    assert checked.checks == tuple(c for c in CHECK_IDS if c not in ("rank-skew", "trace-size"))
    assert checked.skip_checks == ()
    assert check_options(checked) == checked  # checking again changes nothing
    assert check_options(InspectOptions()).checks is None  # all


class _Count:
    def __init__(self, options: InspectOptions) -> None:
        self.options = options

    def feed(self, contents: TraceContents) -> None:
        """Nothing while reading."""

    def finish(self, contents: TraceContents, before: Results) -> int:
        return before.get(METRICS_PASS).kernels_checked + self.options.max_launches


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        (TracePass("health", int, _Count, int), "is named 'health', which builtin already registers"),
        (
            TracePass("Two Words", int, _Count, int),
            "is named 'Two Words': a pass's name is lowercase letters, digits, '-', '_' or '.', at most 64",
        ),
        (
            TracePass("later", int, _Count, int, needs=(TracePass("unknown", int, _Count, int),)),
            "needs 'unknown', which is not a pass that runs before it",
        ),
        (TracePass("typeless", "int", _Count, int), "declares a result that is not a type ('int')"),  # type: ignore[arg-type]
    ],
)
def test_a_registered_pass_that_breaks_the_contract_is_refused(declared: TracePass[Any], problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        register_pass(declared)
    assert str(caught.value) == f"register_pass: the pass {problem}"


def test_a_pass_reads_only_what_it_declared_it_needs(tmp_path: Path) -> None:
    """``before.get`` of a pass not in ``needs`` is refused: what a pass reads is declared, and typed."""
    path = _trace(tmp_path)
    register_pass(TracePass("counting", int, _Count, int, needs=(METRICS_PASS,)))
    try:
        (report,) = wizard.inspect_traces(path, max_launches=10, jobs=1).reports
    finally:
        unregister_pass("counting")
    assert report.passes == {"counting": 14}  # 4 kernels checked + the options' max_launches, whole
    assert report.to_dict()["passes"] == {"counting": 14}
    register_pass(TracePass("undeclared", int, _Count, int, needs=(HEALTH_PASS,)))
    try:
        with pytest.raises(LookupError) as caught:
            wizard.inspect_traces(path, jobs=1)
    finally:
        unregister_pass("undeclared")
    assert str(caught.value) == (
        "trace pass 'undeclared' (registered) reads 'mechanisms''s result without naming it in its needs"
    )


def test_the_trace_record_holds_each_pass_by_name(tmp_path: Path, run_cli: RunCli) -> None:
    (report,) = wizard.inspect_traces(_trace(tmp_path), jobs=1).reports
    assert list(report.results) == ["mechanisms", "health", "profile"]
    assert report.result(METRICS_PASS) is report.metrics and report.result(HEALTH_PASS) is report.health_result
    assert report.passes == {} and "passes" not in report.to_dict()
    assert wizard.TraceReport is wizard.TraceInspection
    shown = inspect_json(run_cli, tmp_path / "t.json", "--fail-on", "never")
    assert shown["reports"][0]["mechanisms"] == {"A": 1}
