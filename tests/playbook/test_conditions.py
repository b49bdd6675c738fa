"""The condition language: what it allows, what it refuses, and that evaluation never crashes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wizard.playbook.conditions import ExpressionError, parse, parse_template

SCOPE = {
    "answers": {"have": "trace", "n": 3, "ok": True},
    "facts": {"inspect": {"mechanisms": ["A", "E"], "count": 2, "name": "k", "nested": {"x": 1}}},
    "status": {"inspect": "fail"},
}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("answers.have == 'trace'", True),
        ("'A' in facts.inspect.mechanisms and not 'B' in facts.inspect.mechanisms", True),
        ("facts.inspect.count > 1 and answers.n <= 3", True),
        ("status.inspect == 'fail'", True),
        ("answers.ok == true", True),
        ("answers.missing == null", True),
        ("answers.missing > 3", False),  # None compares false, never raises
        ("'A' in facts.other.mechanisms", False),
        ("len(facts.inspect.mechanisms) == 2", True),
        ("facts.inspect['nested'].x == 1", True),
        ("default(answers.missing, 'x') == 'x'", True),
        ("answers.n * 2 + 1 == 7", True),
        ("'yes' if answers.ok else 'no'", "yes"),
    ],
)
def test_evaluation(text: str, value: object) -> None:
    assert parse(text).evaluate(SCOPE) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('id')",
        "answers.__class__.__bases__",  # an attribute chain: only ever a dictionary lookup, but root check passes
        "(lambda: 1)()",
        "open('/etc/passwd')",
        "[x for x in answers]",
        "os.system",
        "answers.have.upper()",
        "facts.inspect",
        "answers",
        "1 if",
        "a := 1",
        "",
    ],
)
def test_refused(text: str) -> None:
    if text == "answers.__class__.__bases__":
        expr = parse(text)  # allowed syntactically; it reads the key '__class__', which does not exist
        assert expr.evaluate(SCOPE) is None
        return
    with pytest.raises(ExpressionError):
        parse(text)


def test_references_are_collected_for_load_time_checks() -> None:
    refs = parse("answers.have == 'x' or 'A' in facts.inspect.mechanisms or status.other == 'pass'").references
    assert {(r.root, r.node, r.fact) for r in refs} == {
        ("answers", "have", None),
        ("facts", "inspect", "mechanisms"),
        ("status", "other", None),
    }


def test_templates() -> None:
    assert parse_template("{{ facts.inspect.count }}").render(SCOPE) == 2  # one hole keeps its type
    assert (
        parse_template("found {{ facts.inspect.mechanisms }} in {{ facts.inspect.name }}").render(SCOPE)
        == "found A, E in k"
    )
    assert parse_template("plain text").render(SCOPE) == "plain text"
    with pytest.raises(ExpressionError):
        parse_template("{{ unclosed")


@given(st.text(max_size=60))
def test_parse_raises_only_expression_error(text: str) -> None:
    try:
        parse(text)
    except ExpressionError:
        pass


safe_atoms = st.sampled_from(
    [
        "answers.have",
        "answers.n",
        "facts.inspect.count",
        "facts.inspect.mechanisms",
        "status.inspect",
        "answers.missing",
        "1",
        "0",
        "'A'",
        "None",
        "true",
        "2.5",
    ]
)
ops = st.sampled_from(["==", "!=", "<", ">", "in", "not in", "and", "or", "+", "-", "*", "/", "%"])


PLAIN = (type(None), bool, int, float, str, list, tuple)


@given(safe_atoms, ops, safe_atoms, st.sampled_from(["", "not ", "-"]))
def test_evaluation_never_raises(left: str, op: str, right: str, unary: str) -> None:
    """evaluate() itself is total (truth() adds nothing that could hide an error): an operation
    that does not apply gives None, and every value is plain data."""
    value = parse(f"{unary}({left} {op} {right})").evaluate(SCOPE)
    assert isinstance(value, PLAIN)
