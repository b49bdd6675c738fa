"""Loading playbooks: every problem at once, each as file:line:column with a useful message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REPO
from wizard.errors import PlaybookError
from wizard.playbook.loader import load_playbook, load_playbook_text
from wizard.probes.registry import catalog

BROKEN = REPO / "tests" / "data" / "broken"
PROBES = catalog()

# file -> the problems it must report (line:column: start of message); every one is required.
EXPECTED: dict[str, list[str]] = {
    "yaml-syntax.yaml": ["7:4: YAML syntax error: "],  # the wording is the YAML parser's (libyaml or PyYAML)
    "unknown-target.yaml": ["9:11: unknown node 'concluson' (did you mean 'conclusion'?)"],
    "duplicate-id.yaml": ["9:9: duplicate node id 'done' (first at line 5)"],
    "unreachable.yaml": ["9:5: node 'orphan' is unreachable from the start node 'done'"],
    "dead-end-probe.yaml": ["5:5: dead end: probe node 'inspect' handles no outcome pass, warn, skip, error"],
    "cycle.yaml": ["10:5: cycle with no way out: from 'second'", "15:5: cycle with no way out: from 'third'"],
    "unknown-probe.yaml": ["7:12: unknown probe 'trace.inspekt' (did you mean 'trace.inspect'?)"],
    "bad-param-type.yaml": ["8:35: parameter 'jobs' of probe 'trace.inspect' must be int, not str ('many')"],
    "unknown-param.yaml": [
        "8:14: probe 'trace.inspect' has no parameter 'path' (did you mean 'paths'?)",
        "5:5: probe 'trace.inspect' needs parameter 'paths'",
    ],
    "unknown-answer.yaml": ["13:15: 'answers.has_trac' names no question (did you mean 'has_trace'?)"],
    "unknown-fact.yaml": [
        "13:14: probe 'trace.inspect' (node 'inspect') has no fact 'mechanizms' (did you mean 'mechanisms'?)"
    ],
    "wrong-fact-type.yaml": [
        "13:15: facts.inspect.impossible is bool: comparing it with 'yes' always gives the same answer",
        "15:15: 'in' on facts.inspect.kernels, which is int, not a list, dict or string",
        "17:15: facts.inspect.kernels is int: comparing it with 'many' always gives the same answer",
        "17:15: facts.inspect.worst_grid is list[int] | None: comparing it with 3 always gives the same answer",
    ],
    "code-in-condition.yaml": [
        "8:15: bad condition \"__import__('os').system('echo pwned')\": only plain function calls"
    ],
    "lambda-in-template.yaml": ["8:16: bad template: only plain function calls"],
    "python-tag.yaml": ["4:8: YAML tag !!python/object/apply:os.system is not allowed"],
    "unknown-field.yaml": ["7:5: unknown field 'promt' in a question node (did you mean 'prompt'?)"],
    "bad-question.yaml": [
        "7:11: unknown question type 'slider'",
        "15:14: bad default: 'c' is not one of the choices: 'a', 'b'",
    ],
    "missing-nodes.yaml": [
        "1:1: the playbook needs 'nodes'",
        "1:1: the playbook needs 'title'",
        "1:5: playbook id 'Broken Playbook' must be lower-case",
    ],
    "duplicate-key.yaml": ["8:5: duplicate key 'diagnosis' in nodes/0"],
    "bad-node-id.yaml": ["5:9: node id 'check-trace' must be snake_case"],
    "select-dead-end.yaml": ["10:11: dead end: no 'next' for the answer 'b'; add it or a '*' fallback"],
    "many-problems.yaml": [
        "9:11: unknown step 'tow'",
        "12:11: unknown node 'nowhere'",
        "15:12: unknown probe 'nope'",
        "20:15: unknown severity 'fatal'; choose from info, warning, error",
    ],
}


def test_catalogue_is_complete() -> None:
    assert sorted(p.name for p in BROKEN.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_playbook_messages(name: str) -> None:
    path = BROKEN / name
    with pytest.raises(PlaybookError) as info:
        load_playbook(path, PROBES)
    problems = info.value.problems
    for expected in EXPECTED[name]:
        assert any(p.startswith(f"{path}:{expected}") for p in problems), (expected, problems)
    assert all(p.startswith(f"{path}:") and "\n" not in p for p in problems)


def test_a_well_typed_condition_is_not_refused() -> None:
    """wrong-fact-type.yaml's fourth branch compares each fact with a literal of its own type: no problem."""
    problems = load_problems(BROKEN / "wrong-fact-type.yaml")
    assert not any(":19:" in p for p in problems), problems
    assert len(problems) == 4, problems


def load_problems(path: Path) -> list[str]:
    with pytest.raises(PlaybookError) as info:
        load_playbook(path, PROBES)
    return info.value.problems


def test_shipped_and_example_playbooks_load() -> None:
    for path in [*(REPO / "playbooks").glob("*.yaml"), *(REPO / "examples" / "playbooks").glob("*.yaml")]:
        pb = load_playbook(path, PROBES)
        assert pb.nodes and pb.start in pb.nodes


def test_flagship_has_the_six_steps_in_order() -> None:
    pb = load_playbook(REPO / "playbooks" / "negative-warps-per-sm.yaml", PROBES)
    assert [s.title for s in pb.steps] == [
        "Verify the profiler's correctness",
        "Check the kernel code",
        "Simplify the model and isolate the op",
        "Inspect CUDA errors",
        "Run on different hardware",
        "Examine the other metrics",
    ]
    assert all(s.explain for s in pb.steps)
    assert all(q.default is not None for q in pb.questions()), "every question needs a default for --defaults"


def test_missing_file() -> None:
    with pytest.raises(PlaybookError, match="no such file"):
        load_playbook(REPO / "nope.yaml", PROBES)


@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes_the_loader(text: str) -> None:
    try:
        load_playbook_text(text, "fuzz.yaml", PROBES)
    except PlaybookError as exc:
        assert all(p.startswith("fuzz.yaml:") for p in exc.problems)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
        max_leaves=20,
    )
)
def test_arbitrary_structures_never_crash_the_loader(data: object) -> None:
    import yaml

    text = yaml.safe_dump({"id": "x", "title": "t", "version": 1, "nodes": [data]})
    try:
        load_playbook_text(text, "fuzz.yaml", PROBES)
    except PlaybookError:
        pass


def test_yaml_on_key_means_outcomes(tmp_path: Path) -> None:
    """YAML 1.1 reads a bare `on:` as true; playbooks mean the word."""
    text = """id: t
title: t
version: 1
nodes:
  - id: p
    kind: probe
    probe: trace.inspect
    params: {paths: x.json}
    on: {pass: a}
    next: a
  - id: a
    kind: conclusion
    diagnosis: a
    summary: a
"""
    pb = load_playbook_text(text, "t.yaml", PROBES)
    assert pb.nodes["p"].on == {"pass": "a"}  # type: ignore[attr-defined]
