"""A dry run: the path a run would take as far as the answers alone decide it, and nothing run.

It walks the playbook like the engine, with the answers given (a file, ``--set``, ``--workload``,
and the defaults with ``--defaults``), and stops where only a person or a probe's result could
choose: a question nobody answered, a probe whose outcome picks the branch, a decision that reads
probe facts. Every probe on the way is listed with its parameters and every program it would
start, and whether that program may run (the same trust rule as a real run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from wizard.engine.answers import ORIGIN_DEFAULT, Answer
from wizard.engine.chain import continuation_problem
from wizard.engine.engine import MAX_VISITS, RunState, program_params, render, render_params
from wizard.errors import PlaybookError
from wizard.playbook.model import AnswerInvalid, ConclusionNode, DecisionNode, Playbook, ProbeNode, QuestionNode
from wizard.probes.base import ProbeInfo, with_defaults
from wizard.schemas import PLAN


@dataclass(slots=True)
class Program:
    parameter: str
    value: Any
    runs: bool  # False: refused unless --allow-commands (or confirmed at the prompt)
    why: str | None = None


@dataclass(slots=True)
class PlanStep:
    node: str
    kind: str
    step: str | None
    answer: Any = None
    origin: str | None = None
    probe: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    programs: list[Program] = field(default_factory=list)
    decided_by: str | None = None
    next: str | None = None
    playbook: str | None = None  # set when the plan continues into another playbook


@dataclass(slots=True)
class Plan:
    playbook: str
    steps: list[PlanStep]
    stops: str  # why the plan ends here, in words
    diagnosis: str | None = None

    @property
    def probes(self) -> list[str]:
        return [s.probe for s in self.steps if s.probe]

    @property
    def programs(self) -> list[Program]:
        return [p for s in self.steps for p in s.programs]

    def to_dict(self) -> dict[str, Any]:
        from wizard.serialize import clean

        return {
            "schema": PLAN,
            "playbook": self.playbook,
            "steps": [clean(asdict(s)) for s in self.steps],
            "stops": self.stops,
            "diagnosis": self.diagnosis,
        }


def _programs(
    node: ProbeNode, info: ProbeInfo, params: Mapping[str, Any], state: RunState, allow: bool
) -> list[Program]:
    return [
        Program(name, value, allow or why is None, None if allow else why)
        for name, value, why in program_params(node, info.params, params, state.origins)
    ]


def _question(node: QuestionNode, given: Mapping[str, Answer], defaults: bool) -> Any:
    """(value, origin), or None when nobody answered it."""
    if node.id in given:
        return node.coerce(given[node.id].value), given[node.id].origin
    if defaults and node.default is not None:
        return node.coerce(node.default), ORIGIN_DEFAULT
    return None


@dataclass
class _Walk:
    """One dry run's state; each ``_NODE`` method returns where to go next, or why the plan stops."""

    pb: Playbook
    given: Mapping[str, Answer]
    probes: Mapping[str, ProbeInfo]
    defaults: bool
    allow_commands: bool
    state: RunState = field(default_factory=RunState)

    def question(self, node: QuestionNode, step: PlanStep) -> tuple[str | None, str | None]:
        try:
            given = _question(node, self.given, self.defaults)
        except AnswerInvalid as exc:
            return None, f"the answer to {node.id} is not valid: {exc}"
        if given is None:
            return None, f"would ask {node.id}: {render(node.prompt, self.state)}"
        step.answer, step.origin = given
        self.state.answers[node.id], self.state.origins[node.id] = given
        step.next = node.target(step.answer)
        return step.next, None

    def probe(self, node: ProbeNode, step: PlanStep) -> tuple[str | None, str | None]:
        info = self.probes.get(node.probe)
        params = render_params(node, self.state)
        if info is not None:
            params = with_defaults(info.params, params)
            step.programs = _programs(node, info, params, self.state, self.allow_commands)
        step.probe, step.params = node.probe, params
        if node.on:
            choices = ", ".join(f"{outcome} -> {target}" for outcome, target in node.on.items())
            rest = f", otherwise -> {node.next}" if node.next else ""
            return None, f"the next step depends on what {node.probe} finds: {choices}{rest}"
        step.next = node.next
        return step.next, None

    def decision(self, node: DecisionNode, step: PlanStep) -> tuple[str | None, str | None]:
        scope = self.state.scope()
        for branch in node.branches:
            if any(r.root != "answers" for r in branch.when.references):
                targets = ", ".join(dict.fromkeys([*(b.goto for b in node.branches), str(node.default)]))
                return None, f"{node.id} is decided by probe results ({branch.when.source}): {targets}"
            if branch.when.truth(scope):
                step.next, step.decided_by = branch.goto, branch.when.source
                return step.next, None
        step.next, step.decided_by = node.default, "no branch matched: default"
        return step.next, None


def plan_run(
    pb: Playbook,
    given: Mapping[str, Answer],
    probes: Mapping[str, ProbeInfo],
    *,
    defaults: bool = False,
    allow_commands: bool = False,
    load: Callable[[str], Playbook] | None = None,
) -> Plan:
    """The path the ``given`` answers take through ``pb`` (and the playbooks it continues into, loaded by id with
    ``load``), stopping where they no longer decide it."""
    first = pb
    walk = _Walk(pb, given, probes, defaults, allow_commands)
    steps: list[PlanStep] = []
    node_id: str | None = pb.start
    walked = [pb.id]
    for _ in range(MAX_VISITS):
        if node_id is None:
            return Plan(first.id, steps, "the playbook ends without a conclusion")
        node = pb.nodes[node_id]
        step = PlanStep(node.id, node.kind, node.step, playbook=pb.id if len(walked) > 1 else None)
        steps.append(step)
        if isinstance(node, ConclusionNode) and node.continues is not None and load is not None:
            template = node.continues.playbook
            target = template.render(walk.state.scope())
            by_facts = any(r.root != "answers" for r in template.references)
            if by_facts and target not in node.continues.choices:  # what a probe finds picks it: not known yet
                ids = ", ".join(node.continues.choices)
                return Plan(first.id, steps, f"{node.id} continues into the playbook its facts name, one of: {ids}")
            problem = continuation_problem(pb, node, target, walked)
            if problem is not None:  # the run would stop here: the plan stops with its line and exit status
                raise PlaybookError([problem])
            if len(walked) == 1:
                for earlier in steps:
                    earlier.playbook = pb.id
            step.next = f"playbook {target}"
            pb = walk.pb = load(target)
            walked.append(pb.id)
            node_id = pb.start
            continue
        if isinstance(node, ConclusionNode):
            return Plan(first.id, steps, f"diagnosis {node.diagnosis} ({node.severity})", node.diagnosis)
        if isinstance(node, QuestionNode):
            node_id, stop = walk.question(node, step)
        elif isinstance(node, ProbeNode):
            node_id, stop = walk.probe(node, step)
        else:
            assert isinstance(node, DecisionNode)
            node_id, stop = walk.decision(node, step)
        if stop is not None:
            return Plan(first.id, steps, stop)
    return Plan(first.id, steps, f"stopped after {MAX_VISITS} nodes: the answers keep the run in a loop")
