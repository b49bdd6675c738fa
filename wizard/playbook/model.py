"""The playbook as typed records. Built only by the loader, after validation."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wizard.playbook.conditions import Expression, Template
from wizard.probes.base import OUTCOMES

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

    def edges(self) -> list[Edge]:
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


@dataclass(slots=True)
class DecisionNode(Node):
    branches: tuple[Branch, ...] = ()
    default: str | None = None

    def edges(self) -> list[Edge]:
        out = [Edge(b.when.source[:50], b.goto, ("branches", i, "goto")) for i, b in enumerate(self.branches)]
        if self.default:
            out.append(Edge("otherwise", self.default, ("default",)))
        return out


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
        return [edge.target for edge in node.edges()]

    def reachable_from(self, node_id: str) -> set[str]:
        return reachable(node_id, lambda n: (t for t in self.successors(self.nodes[n]) if t in self.nodes))


def reachable(start: str, successors: Callable[[str], Iterable[str]]) -> set[str]:
    """Every node id reachable from ``start`` (itself included): one walk for the loader's
    unreachable-node check and for naming the questions that may follow a missing answer."""
    seen = {start}
    stack = [start]
    while stack:
        for target in successors(stack.pop()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen
