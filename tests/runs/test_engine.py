"""The engine on its own: fake probes, mapping answers, a fixed clock; no terminal, no GPU."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest

from wizard.engine.answers import Answer, MappingAnswers, MissingAnswer
from wizard.engine.engine import Engine
from wizard.environment import Environment
from wizard.errors import AnswersError
from wizard.playbook.loader import load_playbook_text
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, info


class FixedClock:
    def now(self) -> dt.datetime:
        return dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)

    def monotonic(self) -> float:
        return 0.0


class FakeProbe:
    name = "fake.count"
    summary = "returns what it is told"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (ParamSpec("n", "int", "how many", required=True),)
    facts: tuple[FactSpec, ...] = (FactSpec("count", "int", "n back"), FactSpec("label", "str", "a label"))

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        self.calls.append(dict(params))
        n = params["n"]
        status = Status.FAIL if n > 2 else Status.PASS
        return ProbeResult(status, f"n={n}", facts={"count": n, "label": f"L{n}"}, evidence=[f"saw {n}"])


PLAYBOOK = """
id: demo
title: Demo
version: 1
steps:
  - {id: ask, title: Ask}
  - {id: measure, title: Measure}
nodes:
  - id: how_many
    kind: question
    step: ask
    type: number
    prompt: How many?
    validate: {min: 0, max: 10}
    default: 1
    next: measure
  - id: measure
    kind: probe
    step: measure
    probe: fake.count
    params: {n: "{{ answers.how_many }}"}
    on: {fail: many}
    next: route
  - id: route
    kind: decision
    branches:
      - when: facts.measure.count == 0
        goto: none
    default: few
  - id: none
    kind: conclusion
    diagnosis: none
    summary: zero
  - id: few
    kind: conclusion
    diagnosis: few
    summary: "few: {{ facts.measure.label }}"
    evidence: ["status {{ status.measure }}", "{{ '' }}"]
  - id: many
    kind: conclusion
    diagnosis: many
    severity: error
    summary: "many ({{ facts.measure.count }})"
"""


def run(answers: dict[str, Any], defaults: bool = False) -> tuple[Any, FakeProbe]:
    probe = FakeProbe()
    pb = load_playbook_text(PLAYBOOK, "demo.yaml", {probe.name: info(probe)})
    env = Environment.of(clock=FixedClock())
    engine = Engine(pb, MappingAnswers(answers, use_defaults=defaults), {probe.name: probe}, env)
    return engine.run(), probe


@pytest.mark.parametrize(
    ("n", "diagnosis", "summary"), [(0, "none", "zero"), (2, "few", "few: L2"), (5, "many", "many (5)")]
)
def test_routes_by_probe_status_and_facts(n: int, diagnosis: str, summary: str) -> None:
    transcript, probe = run({"how_many": n})
    assert transcript.conclusion.diagnosis == diagnosis
    assert transcript.conclusion.summary == summary
    assert probe.calls[0]["n"] == n  # a template that is one expression keeps the answer's type


def test_transcript_records_every_node() -> None:
    transcript, _ = run({"how_many": 2})
    kinds = [(e.node, e.kind, e.next) for e in transcript.entries]
    assert kinds == [
        ("how_many", "question", "measure"),
        ("measure", "probe", "route"),
        ("route", "decision", "few"),
        ("few", "conclusion", None),
    ]
    probe_entry = transcript.entries[1]
    assert probe_entry.status == "pass" and probe_entry.facts == {"count": 2, "label": "L2"}
    assert transcript.started == "2026-11-29T12:00:00+00:00"
    assert transcript.conclusion.evidence == ["status pass"]  # empty lines are dropped
    data = transcript.to_dict()
    assert data["schema"] == "warpwizard.transcript/1" and data["answers"] == {"how_many": 2}


def test_defaults_and_missing_answers() -> None:
    transcript, _ = run({}, defaults=True)
    assert transcript.answers == {"how_many": 1}
    with pytest.raises(MissingAnswer):
        run({})


def test_a_loop_that_never_ends_is_stopped() -> None:
    text = """
id: loop
title: Loop
version: 1
nodes:
  - id: again
    kind: question
    type: confirm
    prompt: Again?
    next: {true: again, false: done}
  - id: done
    kind: conclusion
    diagnosis: d
    summary: d
"""
    pb = load_playbook_text(text, "loop.yaml", {})
    engine = Engine(pb, MappingAnswers({"again": True}), {}, Environment.of(clock=FixedClock()))
    with pytest.raises(AnswersError, match="stopped after"):
        engine.run()


class FakeWorkloadProbe:
    """A probe that runs the user's workload (like cuda.launch_blocking): records what it was given."""

    name = "fake.workload"
    summary = "runs your workload once"
    runs_programs = "the workload"
    params: tuple[ParamSpec, ...] = (ParamSpec("workload", "str", "command", default=None, runs=True),)
    facts: tuple[FactSpec, ...] = ()

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        self.calls.append(dict(params))
        return ProbeResult(Status.PASS if params.get("workload") else Status.SKIP, "ran")


WORKLOAD_PLAYBOOK = """
id: twice
title: Twice
version: 1
nodes:
  - {id: cmd, kind: question, type: text, prompt: "Command, if any?", default: "", next: first}
  - {id: first, kind: probe, probe: fake.workload, params: {workload: "{{ answers.cmd }}"}, next: second}
  - {id: second, kind: probe, probe: fake.workload, next: done}
  - {id: done, kind: conclusion, diagnosis: done, summary: done}
"""


class AsksForWorkload(MappingAnswers):
    """Answers like a person at the terminal: types ``typed`` in turn until one is accepted."""

    def __init__(self, typed: list[str], cmd: str = "") -> None:
        super().__init__({"cmd": cmd}, origin="interactive")
        self.typed = typed
        self.asked: list[tuple[str, list[str | None]]] = []

    def workload(self, probe: str, summary: str, check: Any) -> str | None:
        problems = [check(text) for text in self.typed]
        self.asked.append((probe, problems))
        accepted = [text for text, problem in zip(self.typed, problems, strict=True) if problem is None]
        return accepted[0] if accepted else None


def _run_workload(answers: MappingAnswers, **settings: Any) -> FakeWorkloadProbe:
    probe = FakeWorkloadProbe()
    pb = load_playbook_text(WORKLOAD_PLAYBOOK, "twice.yaml", {probe.name: info(probe)})
    env = Environment.of(clock=FixedClock(), python="python3", **settings)
    Engine(pb, answers, {probe.name: probe}, env).run()
    return probe


def test_a_step_that_needs_the_workload_asks_for_it_once_and_every_later_step_uses_it() -> None:
    answers = AsksForWorkload(["train.sh", "python train.py --steps 3"])
    probe = _run_workload(answers)
    assert [call["workload"] for call in probe.calls] == ["python train.py --steps 3"] * 2
    assert len(answers.asked) == 1  # once a run, not once a step
    name, problems = answers.asked[0]
    assert name == "fake.workload"
    assert problems[0] is not None and "'train.sh' is not a Python program" in problems[0]
    assert problems[1] is None


def test_a_declined_workload_is_asked_once_and_the_steps_skip() -> None:
    answers = AsksForWorkload([])
    probe = _run_workload(answers)
    assert [call.get("workload") for call in probe.calls] == ["", None]
    assert len(answers.asked) == 1


def test_nobody_is_asked_for_a_workload_given_on_the_command_line_or_by_an_answer() -> None:
    from wizard.environment import Workload

    given = AsksForWorkload(["python other.py"])
    _run_workload(given, workload=Workload.parse("python train.py", "python3"))
    assert given.asked == []
    answered = AsksForWorkload(["python other.py"], cmd="python train.py")
    probe = _run_workload(answered)
    assert answered.asked == [("fake.workload", [None])]  # the second node has no answer to read
    assert [call["workload"] for call in probe.calls] == ["python train.py", "python other.py"]


def test_a_file_or_defaults_never_asks_for_a_workload() -> None:
    probe = _run_workload(MappingAnswers({}, use_defaults=True))
    assert [call.get("workload") for call in probe.calls] == ["", None]


def test_a_typed_workload_is_the_users_own_even_where_the_node_reads_a_files_answer() -> None:
    """The node's workload comes from an answers-file question left empty: what the person types at the
    prompt runs, with no refusal and no confirmation."""
    answers = AsksForWorkload(["python train.py"])
    answers.given["cmd"] = Answer("", "file")
    probe = _run_workload(answers)
    assert [call["workload"] for call in probe.calls] == ["python train.py", "python train.py"]
