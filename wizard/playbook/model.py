"""The playbook as typed records. Built only by the loader, after validation."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.formatting import shown
from wizard.playbook.conditions import Expression, Template
from wizard.playbook.patterns import PatternError, fullmatch
from wizard.probes.base import OUTCOMES

QUESTION_TYPES = ("confirm", "select", "text", "number", "path")
SEVERITIES = ("info", "warning", "error")  # mildest first: the one order of a conclusion's severity


def at_least(severity: str | None, floor: str) -> bool:
    """Whether a conclusion's severity is ``floor`` or worse (``--fail-on``); no severity is never."""
    return severity is not None and severity in SEVERITIES and SEVERITIES.index(severity) >= SEVERITIES.index(floor)


MAX_ANSWER_CHARS = 64 * 1024

# The one table of yes/no words: answers, and the keys of a yes/no question's `next`.
YES_WORDS = frozenset({"y", "yes", "true", "1", "on"})
NO_WORDS = frozenset({"n", "no", "false", "0", "off"})


def yes_no(value: Any) -> bool | None:
    """True or False for a yes/no word (or a bool), None for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in YES_WORDS else False if text in NO_WORDS else None


class AnswerInvalid(ValueError):
    """The value does not fit the question; the message names what is valid."""


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    title: str
    explain: str = ""


@dataclass(frozen=True, slots=True)
class Choice:
    value: Any
    label: str


@dataclass(frozen=True, slots=True)
class Validation:
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    must_exist: bool = False


@dataclass(frozen=True, slots=True)
class Edge:
    """One way out of a node: where it leads, its label in pictures, and where the YAML says so."""

    label: str
    target: str
    at: tuple[str | int, ...]  # path under the node, for file:line:column in problems


@dataclass(slots=True)
class Node:
    id: str
    kind: str
    step: str | None
    explain: str
    line: int
    origin: str | None = None  # the fragment file it was written in (``uses:``); None: the playbook's own

    def edges(self) -> list[Edge]:
        return []

    def expressions(self) -> list[tuple[tuple[str | int, ...], Template | Expression]]:
        """Every template and condition in the node, with where it is written (for reference checks)."""
        return []


@dataclass(slots=True)
class QuestionNode(Node):
    type: str = "text"
    prompt: Template | None = None
    help: str = ""
    default: Any = None
    choices: tuple[Choice, ...] = ()
    validation: Validation = field(default_factory=Validation)
    next: str | None = None
    next_by_value: dict[Any, str] = field(default_factory=dict)

    def edges(self) -> list[Edge]:
        out = [
            Edge(str(k).lower() if isinstance(k, bool) else str(k), t, ("next", k))
            for k, t in self.next_by_value.items()
            if k != "*"
        ]
        if self.next:
            at: tuple[str | int, ...] = ("next", "*") if "*" in self.next_by_value else ("next",)
            out.append(Edge("other" if self.next_by_value else "", self.next, at))
        return out

    def expressions(self) -> list[tuple[tuple[str | int, ...], Template | Expression]]:
        return [(("prompt",), self.prompt)] if self.prompt is not None else []

    def coerce(self, value: Any, *, check_exists: bool = True) -> Any:
        """The value as this question's type, or AnswerInvalid saying what is valid.

        The same rules for a value typed at the terminal, read from an answers file, given with
        --set or taken from a default, so a run replays identically.
        """
        if self.type == "confirm":
            answer = yes_no(value)
            if answer is None:
                raise AnswerInvalid(f"{shown(value)} is not yes/no (true/false)")
            return answer
        if self.type == "select":
            return self._choice(value)
        if self.type == "number":
            return self._number(value)
        text = self._text(value)
        if self.type == "path" and check_exists and self.validation.must_exist:
            _check_path(text)
        return text

    def _choice(self, value: Any) -> Any:
        for choice in self.choices:
            if choice.value == value or (isinstance(choice.value, str) and str(value).lower() == choice.value.lower()):
                return choice.value
        valid = ", ".join(repr(c.value) for c in self.choices)
        raise AnswerInvalid(f"{shown(value)} is not one of the choices: {valid}")

    def _number(self, value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise AnswerInvalid(f"{shown(value)} is not a number")
        try:
            number = float(value) if isinstance(value, str) else value
        except ValueError:
            raise AnswerInvalid(f"{shown(value)} is not a number") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise AnswerInvalid(f"{shown(value)} is not a finite number")
        if isinstance(number, float) and number.is_integer() and not isinstance(value, float):
            number = int(number)
        v = self.validation
        if v.minimum is not None and number < v.minimum:
            raise AnswerInvalid(f"{shown(number)} is below the minimum {v.minimum:g}")
        if v.maximum is not None and number > v.maximum:
            raise AnswerInvalid(f"{shown(number)} is above the maximum {v.maximum:g}")
        return number

    def _text(self, value: Any) -> str:
        if value is None or isinstance(value, (dict, list)):
            raise AnswerInvalid(f"{shown(value)} is not text")
        text = str(value)
        if len(text) > MAX_ANSWER_CHARS:
            raise AnswerInvalid(f"an answer of {len(text)} characters is too long (at most {MAX_ANSWER_CHARS})")
        if self.validation.pattern:
            try:
                matched = fullmatch(self.validation.pattern, text)
            except PatternError as exc:
                raise AnswerInvalid(f"the playbook's pattern cannot be used ({exc})") from None
            if not matched:
                raise AnswerInvalid(f"{shown(text)} does not match the pattern {self.validation.pattern!r}")
        return text

    def target(self, value: Any) -> str | None:
        if self.next_by_value:
            key = _key(value)
            for k, target in self.next_by_value.items():
                if _key(k) == key:
                    return target
            return self.next_by_value.get("*", self.next)
        return self.next


def _key(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _check_path(text: str) -> None:
    if not text.strip():
        raise AnswerInvalid("a path is required")
    try:
        found = Path(text).expanduser().exists()
    except (OSError, ValueError) as exc:  # too long, an embedded NUL, ...
        raise AnswerInvalid(
            f"{shown(text)} cannot be used as a path ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    if not found:
        raise AnswerInvalid(f"{shown(text)} does not exist")


@dataclass(slots=True)
class ProbeNode(Node):
    probe: str = ""
    params: dict[str, Template | Any] = field(default_factory=dict)
    timeout: float = 600.0
    on: dict[str, str] = field(default_factory=dict)
    next: str | None = None

    def target(self, outcome: str) -> str | None:
        return self.on.get(outcome, self.next)

    def expressions(self) -> list[tuple[tuple[str | int, ...], Template | Expression]]:
        out: list[tuple[tuple[str | int, ...], Template | Expression]] = []
        for name, value in self.params.items():
            if isinstance(value, Template):
                out.append((("params", name), value))
            elif isinstance(value, list):
                out += [(("params", name, i), item) for i, item in enumerate(value) if isinstance(item, Template)]
        return out

    def edges(self) -> list[Edge]:
        out = [Edge(k, t, ("on", k)) for k, t in self.on.items()]
        if self.next:
            rest = "/".join(o for o in OUTCOMES if o not in self.on)
            out.append(Edge(rest if self.on else "", self.next, ("next",)))
        return out


@dataclass(frozen=True, slots=True)
class Branch:
    when: Expression
    goto: str
    because: str = ""  # the condition in words (--teach says it instead of the expression)


@dataclass(slots=True)
class DecisionNode(Node):
    branches: tuple[Branch, ...] = ()
    default: str | None = None
    default_because: str = ""  # in words, why the default is taken

    def reason_in_words(self, target: str, reason: str) -> str:
        """Why the walk went to ``target``, as the playbook words it: the branch's ``because`` (``reason`` is the
        engine's record, the branch's condition), the default's ``default_because``; else ``reason`` itself."""
        taken = next((b for b in self.branches if b.goto == target and b.when.source == reason), None)
        if taken is not None:
            return taken.because or reason
        if target == self.default and self.default_because:
            return self.default_because
        return reason

    def expressions(self) -> list[tuple[tuple[str | int, ...], Template | Expression]]:
        return [(("branches", i, "when"), b.when) for i, b in enumerate(self.branches)]

    def edges(self) -> list[Edge]:
        out = [Edge(b.when.source[:50], b.goto, ("branches", i, "goto")) for i, b in enumerate(self.branches)]
        if self.default:
            out.append(Edge("otherwise", self.default, ("default",)))
        return out


@dataclass(frozen=True, slots=True)
class Continuation:
    """Where a conclusion continues: a template that must render to one of ``choices`` (playbook ids the
    loader checked), and optionally the other choices worth running afterwards."""

    playbook: Template
    choices: tuple[str, ...]
    also: Template | None = None


@dataclass(slots=True)
class ConclusionNode(Node):
    diagnosis: str = ""
    severity: str = "info"
    summary: Template | None = None
    evidence: tuple[Template, ...] = ()
    fix: tuple[Template, ...] = ()
    links: tuple[str, ...] = ()
    continues: Continuation | None = None

    def expressions(self) -> list[tuple[tuple[str | int, ...], Template | Expression]]:
        out: list[tuple[tuple[str | int, ...], Template | Expression]] = []
        if self.summary is not None:
            out.append((("summary",), self.summary))
        out += [(("evidence", i), t) for i, t in enumerate(self.evidence)]
        out += [(("fix", i), t) for i, t in enumerate(self.fix)]
        if self.continues is not None:
            out.append((("continue", "playbook"), self.continues.playbook))
            if self.continues.also is not None:
                out.append((("continue", "also"), self.continues.also))
        return out


@dataclass(slots=True)
class Playbook:
    id: str
    title: str
    description: str
    version: str
    steps: tuple[Step, ...]
    nodes: dict[str, Node]
    start: str
    path: str
    fragments: tuple[str, ...] = ()  # the fragment files its ``uses:`` read, in order (where each came from)

    def step_index(self, step_id: str | None) -> int | None:
        for i, step in enumerate(self.steps):
            if step.id == step_id:
                return i
        return None

    def questions(self) -> list[QuestionNode]:
        return [n for n in self.nodes.values() if isinstance(n, QuestionNode)]

    def continuations(self) -> list[str]:
        """Every playbook id a conclusion of this one may continue into, in the order written, once each."""
        found: dict[str, None] = {}
        for node in self.nodes.values():
            if isinstance(node, ConclusionNode) and node.continues is not None:
                found.update(dict.fromkeys(node.continues.choices))
        return list(found)

    def successors(self, node: Node) -> list[str]:
        return [edge.target for edge in node.edges()]

    def reachable_from(self, node_id: str) -> set[str]:
        return reachable([node_id], lambda n: (t for t in self.successors(self.nodes[n]) if t in self.nodes))


def reachable(starts: Iterable[str], successors: Callable[[str], Iterable[str]]) -> set[str]:
    """Every node id reachable from any of ``starts`` (themselves included), in one walk: the loader's
    unreachable-node and no-way-out checks, and the questions that may follow a missing answer."""
    seen = set(starts)
    stack = list(seen)
    while stack:
        for target in successors(stack.pop()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen
