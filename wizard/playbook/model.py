"""The playbook as typed records. Built only by the loader, after validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.playbook.conditions import Expression, Template

QUESTION_TYPES = ("confirm", "select", "text", "number", "path")
SEVERITIES = ("info", "warning", "error")


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


@dataclass(slots=True)
class Node:
    id: str
    kind: str
    step: str | None
    explain: str
    line: int


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


@dataclass(slots=True)
class ProbeNode(Node):
    probe: str = ""
    params: dict[str, Template | Any] = field(default_factory=dict)
    timeout: float = 600.0
    on: dict[str, str] = field(default_factory=dict)
    next: str | None = None

    def target(self, outcome: str) -> str | None:
        return self.on.get(outcome, self.next)


@dataclass(frozen=True, slots=True)
class Branch:
    when: Expression
    goto: str


@dataclass(slots=True)
class DecisionNode(Node):
    branches: tuple[Branch, ...] = ()
    default: str | None = None


@dataclass(slots=True)
class ConclusionNode(Node):
    diagnosis: str = ""
    severity: str = "info"
    summary: Template | None = None
    evidence: tuple[Template, ...] = ()
    fix: tuple[Template, ...] = ()
    links: tuple[str, ...] = ()


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

    def step_index(self, step_id: str | None) -> int | None:
        for i, step in enumerate(self.steps):
            if step.id == step_id:
                return i
        return None

    def questions(self) -> list[QuestionNode]:
        return [n for n in self.nodes.values() if isinstance(n, QuestionNode)]

    def successors(self, node: Node) -> list[str]:
        if isinstance(node, QuestionNode):
            targets = list(node.next_by_value.values())
            if node.next:
                targets.append(node.next)
            return targets
        if isinstance(node, ProbeNode):
            targets = list(node.on.values())
            if node.next:
                targets.append(node.next)
            return targets
        if isinstance(node, DecisionNode):
            targets = [b.goto for b in node.branches]
            if node.default:
                targets.append(node.default)
            return targets
        return []
