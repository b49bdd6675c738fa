"""``RunRequest``: what a run is asked, declared once (issue 46). ``warpwizard run``'s flags are its fields' (and
``Options``'), derived here from the declaration rather than listed; a bad value for a bounded field is one line on
the command line and from Python; today's keyword form still runs, with a DeprecationWarning; the answers a run is
given travel as one record each (value and origin)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import EXAMPLES, RunCli
from wizard.engine.answers import Answer
from wizard.options import Options
from wizard.run_request import RunRequest

GRID = str(EXAMPLES / "traces" / "grid-overflow.json")
FLAGSHIP = "negative-warps-per-sm"


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def _expected_flags() -> set[str]:
    """Every flag ``run`` should take, read off the two declarations: a field's own ``flag`` or its name with dashes,
    the one shared ``--report``, then the progress pair and help every long command has."""
    flags = {"-h", "--help", "--quiet", "--progress"}
    for spec in dataclasses.fields(RunRequest):
        if spec.metadata.get("shared") == "report":
            flags.add("--report")
        elif spec.metadata:
            flags.add(spec.metadata["flag"] or _dashed(spec.name))
    for spec in dataclasses.fields(Options):
        flags.add(spec.metadata.get("flag") or _dashed(spec.name))
    return flags


def _run_parser() -> argparse.ArgumentParser:
    from wizard.cli.parser import build_parser

    top = build_parser(only="run")
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["run"]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def test_the_run_commands_flags_are_the_requests_fields() -> None:
    """The parser has exactly the flags the fields declare (none more, none fewer), each stored under the field's
    name, and one positional: the playbook."""
    parser = _run_parser()
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert flags == _expected_flags()
    fields = {spec.name for spec in dataclasses.fields(RunRequest) if spec.metadata}
    fields |= {spec.name for spec in dataclasses.fields(Options)}
    dests = {a.dest for a in parser._actions if a.option_strings and a.dest not in ("help", "quiet", "progress")}
    assert dests == fields
    assert [a.dest for a in parser._actions if not a.option_strings] == ["playbook"]


def test_a_parsed_command_line_is_the_request_it_says() -> None:
    args = _run_parser().parse_args(
        ["pb", "--answers", "a.json", "--set", "x=1", "--set", "y=2", "--from-step", "3", "--fail-on", "error"]
    )
    options = Options(workload="python t.py")
    request = RunRequest.parsed(args, options=options, playbook_dirs=["dir"])
    assert request == RunRequest(
        answers="a.json", sets=("x=1", "y=2"), from_step=3, fail_on="error", options=options, playbook_dirs=("dir",)
    )


def _bounded() -> list[tuple[str, str]]:
    """(flag, a value outside its declaration) for each field declared with choices or a type."""
    out = []
    for spec in dataclasses.fields(RunRequest):
        flag = spec.metadata.get("flag") or _dashed(spec.name)
        if spec.metadata.get("choices"):
            out.append((flag, "not-" + "-".join(spec.metadata["choices"])))
        elif spec.metadata.get("kind") is int:
            out.append((flag, "three"))
    assert out, "RunRequest declares no field with choices or a whole number: the test below would test nothing"
    return out


@pytest.mark.parametrize(("flag", "bad"), _bounded())
def test_a_bad_value_for_a_bounded_field_is_one_line(flag: str, bad: str, run_cli: RunCli) -> None:
    result = run_cli("run", FLAGSHIP, flag, bad)
    assert result.status == 2
    assert len(result.stderr.splitlines()) == 1
    assert f"argument {flag}" in result.stderr and repr(bad) in result.stderr


def test_a_bounded_field_from_python_is_one_line_naming_the_field() -> None:
    with pytest.raises(wizard.UsageError) as choice:
        wizard.run_playbook(FLAGSHIP, RunRequest(fail_on="sometimes"))
    assert str(choice.value) == "fail_on= must be one of warning, error, not 'sometimes'"
    with pytest.raises(wizard.UsageError) as number:
        wizard.run_playbook(FLAGSHIP, RunRequest(from_step="2"))  # type: ignore[arg-type]
    assert str(number.value) == "from_step= must be a whole number, not str '2'"
    with pytest.raises(wizard.UsageError) as other:  # not a request: the answers alone, which are a mapping or a file
        wizard.plan_playbook(FLAGSHIP, 3)  # type: ignore[arg-type]
    assert str(other.value) == "answers must be a name or path (str or os.PathLike), not int 3"


def test_the_keyword_form_still_runs_for_one_release_with_a_warning(tmp_path: Path) -> None:
    """``run_playbook(pb, answers, options=..., defaults=True)`` is the request of those fields, and says so."""
    answers = {"have": "trace", "trace_path": GRID}
    options = Options(report_dir=str(tmp_path / "r"))
    with pytest.warns(DeprecationWarning, match=r"keywords \(defaults, options\) are deprecated") as caught:
        old = wizard.run_playbook(FLAGSHIP, answers, options=options, defaults=True)
    assert caught[0].filename == __file__  # said at the caller's line
    new = wizard.run_playbook(FLAGSHIP, RunRequest(answers=answers, options=options, defaults=True))
    assert (old.diagnosis, old.answers) == (new.diagnosis, new.answers) == ("profiler-bug-grid-overflow", answers)
    with pytest.warns(DeprecationWarning):  # dry_run=True: the Plan, as this form returned (typed as the run's)
        plan: object = wizard.run_playbook(FLAGSHIP, {"have": "trace"}, dry_run=True)
    assert plan == wizard.plan_playbook(FLAGSHIP, {"have": "trace"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'answer'"):
        wizard.run_playbook(FLAGSHIP, answer={})


def test_a_dry_run_request_is_planned_by_plan_playbook_not_run() -> None:
    with pytest.raises(wizard.UsageError, match=r"^dry_run= runs nothing: wizard\.plan_playbook"):
        wizard.run_playbook(FLAGSHIP, RunRequest(answers={"have": "trace"}, dry_run=True))


def test_each_given_answer_is_one_record_of_value_and_origin(tmp_path: Path) -> None:
    """The file's answers (a relative path taken from the file's folder), ``--workload``'s and ``--set``'s (which
    win), each with where it came from."""
    from wizard.runs import given_answers, load_playbook

    folder = tmp_path / "answers"
    folder.mkdir()
    path = folder / "a.yaml"
    path.write_text("have: trace\ntrace_path: t.json\n")
    pb = load_playbook(FLAGSHIP)
    given = given_answers(pb, answers_file=str(path), sets=["have=workload"], workload="python train.py")
    assert given["have"] == Answer("workload", "command line")
    assert given["trace_path"] == Answer(os.path.join(str(folder), "t.json"), "file")
    assert given["workload_cmd"] == Answer("python train.py", "command line")
    assert set(given) == {"have", "trace_path", "workload_cmd"}


def test_answer_source_gets_the_records(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def source(pb: Any, given: dict[str, Answer]) -> Any:
        from wizard.runs import scripted_answers

        seen.update(given)
        return scripted_answers(given, defaults=False)

    request = RunRequest(answers={"have": "trace"}, sets=[f"trace_path={GRID}"], options=Options(report_dir=tmp_path))
    transcript = wizard.run_playbook(FLAGSHIP, request, answer_source=source)
    assert seen == {"trace_path": Answer(GRID, "command line"), "have": Answer("trace", "file")}
    origins = {e.node: e.answer_origin for e in transcript.entries if e.kind == "question"}
    assert origins == {"have": "file", "trace_path": "command line"}


def test_the_runs_room_keeps_its_sizes() -> None:
    """Issue 46: no module of wizard/runs/ (nor cli/run.py) over 400 lines, no function there over 60."""
    import ast

    from tests.conftest import REPO

    files = [*sorted((REPO / "wizard" / "runs").glob("*.py")), REPO / "wizard" / "cli" / "run.py"]
    assert len(files) > 5  # the package and the command, not an empty glob
    too_long = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 400:
            too_long.append(f"{path.name}: {len(text.splitlines())} lines")
        functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in functions:
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > 60:
                too_long.append(f"{path.name}: {node.name} {length} lines")
    assert too_long == []
