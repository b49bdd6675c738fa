"""One declaration per option, for every option set (issue 46): ``wizard.option_fields.option`` declares each field's
flag, help, kind and bounds; the command line's arguments, the check of a value (whole or real numbers, finite) and
the flag a message names are all read from it, for ``Options`` (probes) and ``InspectOptions`` (trace inspect)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import RunCli
from wizard.errors import UsageError
from wizard.inspect_options import InspectOptions
from wizard.option_fields import add_arguments, check_fields, option
from wizard.options import Options
from wizard.testing.traces import KernelSpec, TraceBuilder

# each option set and a command line whose --help lists it (the sets, not their fields: those are derived below)
SETS = [(InspectOptions, ("trace", "inspect")), (Options, ("probe",)), (Options, ("run",))]
USAGE = 2  # README.md's exit table: "usage error (bad command line, unknown playbook name, ...)"


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.add(KernelSpec("k", (64, 1, 1), (128, 1, 1)))
    return b.write(tmp_path / "t.json")


def _words(text: str) -> str:
    return " ".join(text.split())


def _is_option(spec: dataclasses.Field[Any]) -> bool:
    """A field the command line takes: one with help in its metadata (the library's own fields have none)."""
    return bool(spec.metadata.get("help"))


@pytest.mark.parametrize(("cls", "command"), SETS)
def test_every_option_of_every_set_has_a_flag_and_help(cls: type, command: tuple[str, ...], run_cli: RunCli) -> None:
    """From the dataclass's own fields, not a frozen list: each option is in the command's --help, its flag and its
    help; a field without a declaration is the library's alone and never a flag."""
    text = run_cli(*command, "--help")
    assert text.status == 0, text.stderr
    shown = _words(text.stdout)
    options = [spec for spec in dataclasses.fields(cls) if _is_option(spec)]
    assert options, cls
    for spec in options:
        flag = spec.metadata.get("flag") or "--" + spec.name.replace("_", "-")
        assert flag.startswith("--") and f" {flag}" in shown, (cls.__name__, spec.name)
        assert _words(spec.metadata["help"]) in shown, (cls.__name__, spec.name)
    for spec in dataclasses.fields(cls):
        if not _is_option(spec):
            assert f"--{spec.name.replace('_', '-')} " not in shown, spec.name
    if cls is Options:  # every field of the probes' options is one (probe_options builds Options from all of them)
        assert len(options) == len(dataclasses.fields(Options))


def _float_options() -> list[dataclasses.Field[Any]]:
    return [spec for spec in dataclasses.fields(InspectOptions) if _is_option(spec) and spec.metadata["kind"] is float]


def test_there_is_a_float_option_to_test() -> None:
    assert "rank_skew_floor_us" in [spec.name for spec in _float_options()]  # the test below covers each of them


@pytest.mark.parametrize("bad", ["nan", "inf", "-5"])
def test_a_float_option_refuses_nan_inf_and_below_its_least_on_the_command_line(
    bad: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """One line naming the flag and the range, exit 2; before the run's options were declared with bounds for real
    numbers, a new float option took ``nan`` and ``-5`` silently."""
    trace = str(_trace(tmp_path))
    for spec in _float_options():
        flag = "--" + spec.name.replace("_", "-")
        result = run_cli("trace", "inspect", flag, bad, trace)
        assert result.status == USAGE
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"warpwizard: error: {flag} must be "), result.stderr
        assert lines[0].endswith(f", not {float(bad)}"), result.stderr
        assert result.stdout == ""
    result = run_cli("trace", "inspect", "--rank-skew-floor-us", bad, trace)
    assert result.stderr == (
        f"warpwizard: error: --rank-skew-floor-us must be a finite number of µs, 0 or more, not {float(bad)}\n"
    )


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -5, -5.0])
def test_the_library_refuses_them_naming_the_keyword(bad: float, tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    expected = f"rank_skew_floor_us must be a finite number of µs, 0 or more, not {bad}"
    with pytest.raises(UsageError) as whole:
        wizard.inspect_traces(trace, options=InspectOptions(rank_skew_floor_us=bad))
    assert str(whole.value) == expected
    with pytest.raises(UsageError) as keyword:
        wizard.inspect_traces(trace, rank_skew_floor_us=bad)
    assert str(keyword.value) == expected
    with pytest.raises(UsageError) as odd:
        wizard.inspect_traces(trace, options=InspectOptions(rank_skew_floor_us="5"))  # type: ignore[arg-type]
    assert str(odd.value) == "rank_skew_floor_us must be a number of µs, not str '5'"


def test_a_whole_number_given_for_a_real_one_is_read_as_a_float(tmp_path: Path) -> None:
    """``25`` from Python is ``25.0``, as the command line's is: the check's floor in --json is the same number."""
    inspection = wizard.inspect_traces(_trace(tmp_path), options=InspectOptions(rank_skew_floor_us=25, jobs=1))
    floor = next(c for c in inspection.job_health if c.check == "rank-skew").details["floor_us"]
    assert (floor, type(floor)) == (25.0, float)


@dataclass(frozen=True)
class _Scratch:
    """An option set of this test's own, declared as the shipped ones are."""

    share: float | None = field(default=None, metadata=option("a share", metavar="X", kind=float, least=0, most=1))
    loose: float = field(default=0.0, metadata=option("any number", metavar="X", kind=float, finite=False))
    count: int = field(default=3, metadata=option("how many", metavar="N", kind=int, most=8))
    on: bool = field(default=False, metadata=option("a switch", kind=bool))
    names: list[str] = field(default_factory=list, metadata=option("again for each", metavar="NAME", kind=list))
    internal: str = "kept"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (_Scratch(share=1.5), "--share must be a finite number, from 0 to 1, not 1.5"),
        (_Scratch(share=math.nan), "--share must be a finite number, from 0 to 1, not nan"),
        (_Scratch(share=True), "--share must be a number, not bool True"),
        (_Scratch(count=9), "--count must be 8 or less, not 9"),
        (_Scratch(count=2.0), "--count must be a whole number, not float 2.0"),  # type: ignore[arg-type]
    ],
)
def test_any_set_declared_with_option_is_checked_by_its_bounds(given: _Scratch, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_fields(given, spell=_flag)
    assert str(caught.value) == message


def test_bounds_pass_what_they_allow_and_declare_only_on_numbers() -> None:
    assert check_fields(_Scratch(share=1, loose=math.inf, count=-4)) == _Scratch(share=1.0, loose=math.inf, count=-4)
    assert isinstance(check_fields(_Scratch(share=0)).share, float)
    with pytest.raises(TypeError, match="bounds declared for a str option"):
        option("a name", least=1)


def test_one_wiring_builds_any_sets_arguments() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, _Scratch)
    args = parser.parse_args(["--share", "0.5", "--count", "2", "--on", "--names", "a", "--names", "b"])
    assert vars(args) == {"share": 0.5, "loose": 0.0, "count": 2, "on": True, "names": ["a", "b"]}
    assert vars(parser.parse_args([])) == {"share": None, "loose": 0.0, "count": 3, "on": False, "names": []}
