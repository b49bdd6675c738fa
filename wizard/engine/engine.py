"""Walk a playbook from its start node to a conclusion.

Knows nothing about terminals or GPUs: questions go to an AnswerSource, probes to the
registry with an Environment, and everything that happened goes into a Transcript. An
observer (the terminal UI, or nothing) is told as nodes are entered and probes run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from wizard.engine.answers import ORIGIN_DEFAULT, ORIGIN_FILE, ORIGIN_INTERACTIVE, TRUSTED_ORIGINS, AnswerSource
from wizard.engine.reuse import Reuse, fingerprints, stat_inputs
from wizard.engine.transcript import Conclusion, Transcript, TranscriptEntry
from wizard.environment import Environment, Workload
from wizard.errors import AnswersError, ProbeInfrastructureError, WizardError
from wizard.playbook.conditions import Template
from wizard.playbook.model import AnswerInvalid, ConclusionNode, DecisionNode, Node, Playbook, ProbeNode, QuestionNode
from wizard.playbook.trust import answer_sources, chosen_by_facts, refusal
from wizard.probes.base import WORKLOAD, ParamSpec, Probe, ProbeResult, Status, fact_warnings, with_defaults

MAX_VISITS = 500


class EngineObserver(Protocol):
    def node_entered(self, playbook: Playbook, node: Node, step_number: int | None) -> None: ...
    def probe_started(self, node: ProbeNode, params: Mapping[str, Any]) -> None: ...
    def probe_finished(self, node: ProbeNode, result: ProbeResult) -> None: ...
    def decided(self, node: DecisionNode, target: str, reason: str) -> None: ...
    def continued(self, playbook: Playbook) -> None: ...


class _NullObserver:
    def node_entered(self, playbook: Playbook, node: Node, step_number: int | None) -> None:
        pass

    def probe_started(self, node: ProbeNode, params: Mapping[str, Any]) -> None:
        pass

    def probe_finished(self, node: ProbeNode, result: ProbeResult) -> None:
        pass

    def decided(self, node: DecisionNode, target: str, reason: str) -> None:
        pass

    def continued(self, playbook: Playbook) -> None:
        pass


@dataclass(slots=True)
class Earlier:
    """What the playbooks walked before this one in a chained run left: where each answer was given, and
    each probe's inputs and result, for the next playbook to carry instead of asking or running again."""

    answered_in: dict[str, str] = field(default_factory=dict)  # question id -> playbook id
    results: list[tuple[str, dict[str, Any], ProbeResult, str]] = field(default_factory=list)

    def result(self, probe: str, inputs: Mapping[str, Any]) -> tuple[ProbeResult, str] | None:
        """The earlier result of ``probe`` with exactly these inputs, and where it ran ("playbook:node")."""
        for name, given, result, where in self.results:
            if name == probe and given == dict(inputs):
                return result, where
        return None


@dataclass
class RunState:
    """What conditions and templates can read, and where each answer came from."""

    answers: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    # The workload typed at the prompt when a probe needed one (asked once a run; "" when declined).
    workload: str | None = None

    def scope(self) -> dict[str, Any]:
        return {"answers": self.answers, "facts": self.facts, "status": self.status}


ORIGIN_WORDS = {ORIGIN_FILE: "from the answers file", ORIGIN_DEFAULT: "the playbook's default answer"}


def render(template: Template | None, state: RunState) -> str:
    if template is None:
        return ""
    value = template.render(state.scope())
    return "" if value is None else str(value)


def program_params(
    node: ProbeNode, specs: Sequence[ParamSpec], params: Mapping[str, Any], origins: Mapping[str, str]
) -> list[tuple[str, Any, str | None]]:
    """Each parameter naming a program that has a value: (name, value, why it is not the user's own,
    or None). A value the probe's declaration supplies (not written in the node) is the code's own."""
    out = []
    for spec in specs:
        value = params.get(spec.name)
        if spec.runs and value not in (None, "", []):
            raw = node.params.get(spec.name)
            why = refusal(raw, origins, TRUSTED_ORIGINS, ORIGIN_WORDS) if spec.name in node.params else None
            out.append((spec.name, value, why))
    return out


def render_params(node: ProbeNode, state: RunState) -> dict[str, Any]:
    """A probe node's parameters with their templates filled from what the run knows so far."""
    scope = state.scope()
    out: dict[str, Any] = {}
    for name, value in node.params.items():
        if isinstance(value, Template):
            out[name] = value.render(scope)
        elif isinstance(value, list):
            out[name] = [item.render(scope) if isinstance(item, Template) else item for item in value]
        else:
            out[name] = value
    return out


class Engine:
    def __init__(
        self,
        playbook: Playbook,
        answers: AnswerSource,
        probes: Mapping[str, Probe],
        env: Environment,
        *,
        observer: EngineObserver | None = None,
        reuse: Reuse | None = None,
        spell: Callable[[str], str] = str,
        state: RunState | None = None,
        transcript: Transcript | None = None,
        earlier: Earlier | None = None,
    ) -> None:
        self.spell = spell  # names an option as the caller knows it: --workload on a command line
        self.playbook = playbook
        self.answers = answers
        self.probes = probes
        self.env = env
        self.reuse = reuse  # a previous run's results for the probes before --from's node
        self.observer: EngineObserver = observer or _NullObserver()
        # A chained run's next playbook shares the state and transcript of the ones before (wizard/engine/chain.py).
        self.state = state or RunState()
        self.transcript = transcript or Transcript.start(playbook, env.system.clock.now())
        self.earlier = earlier or Earlier()
        self.ran: list[tuple[str, dict[str, Any], ProbeResult, str]] = []  # this playbook's probes, as run
        self.shown: set[str] = set()  # the running node's programs chosen by probe results, confirmed at the prompt

    def run(self) -> Transcript:
        node_id: str | None = self.playbook.start
        visits = 0
        while node_id is not None:
            visits += 1
            if visits > MAX_VISITS:
                raise AnswersError(
                    [f"{self.playbook.path}: stopped after {MAX_VISITS} nodes; the answers keep the run in a loop"]
                )
            node = self.playbook.nodes[node_id]
            step_number = self.playbook.step_index(node.step)
            self.observer.node_entered(self.playbook, node, None if step_number is None else step_number + 1)
            node_id = self._visit(node)
        self.transcript.finish(self.env.system.clock.now(), self.state.answers)
        return self.transcript

    def _entry(self, node: Node) -> TranscriptEntry:
        return TranscriptEntry(
            node=node.id,
            kind=node.kind,
            step=node.step,
            started=self.env.system.clock.now().isoformat(),
            duration_s=0.0,
            probe=node.probe if isinstance(node, ProbeNode) else None,
        )

    def _visit(self, node: Node) -> str | None:
        started = self.env.system.clock.monotonic()
        entry = self._entry(node)
        self.transcript.entries.append(entry)
        nxt: str | None
        if isinstance(node, QuestionNode):
            prompt = render(node.prompt, self.state)
            entry.prompt = prompt
            value, origin = self._carried(node, entry) or self.answers.answer(node, prompt)
            self.state.answers[node.id] = value
            self.state.origins[node.id] = origin
            entry.answer, entry.answer_origin = value, origin
            nxt = node.target(value)
        elif isinstance(node, ProbeNode):
            params = self._params(node)
            entry.inputs = params
            result = self._reused(node, params, entry)
            if result is None:
                self._ask_workload(node, params)  # only for a probe that runs: a reused result asks nothing
                result = self._run_probe(node, params, entry)
                self.ran.append((node.probe, dict(params), result, f"{self.playbook.id}:{node.id}"))
            self.observer.probe_finished(node, result)
            self.state.facts[node.id] = result.facts
            self.state.status[node.id] = result.status.value
            entry.record(result)
            nxt = node.target(result.status.value)
        elif isinstance(node, DecisionNode):
            nxt, reason = node.default, "no branch matched: default"
            scope = self.state.scope()
            for branch in node.branches:
                if branch.when.truth(scope):
                    nxt, reason = branch.goto, f"{branch.when.source}"
                    break
            entry.summary = reason
            assert nxt is not None
            self.observer.decided(node, nxt, reason)
        elif isinstance(node, ConclusionNode):
            self.transcript.conclusion = Conclusion(
                node=node.id,
                diagnosis=node.diagnosis,
                severity=node.severity,
                summary=render(node.summary, self.state),
                evidence=[t for e in node.evidence if (t := render(e, self.state))],
                fix=[t for f in node.fix if (t := render(f, self.state))],
                links=list(node.links),
            )
            nxt = None
        else:  # pragma: no cover - the loader builds only the four kinds
            raise WizardError(f"unknown node kind {node.kind}")
        entry.next = nxt
        entry.duration_s = round(self.env.system.clock.monotonic() - started, 6)
        return nxt

    def _carried(self, node: QuestionNode, entry: TranscriptEntry) -> tuple[Any, str] | None:
        """A question an earlier playbook of this run asked: its answer and origin, not asked again."""
        where = self.earlier.answered_in.get(node.id)
        if where is None:
            return None
        try:
            value = node.coerce(self.state.answers[node.id], check_exists=False)
        except AnswerInvalid as exc:
            why = f"question {node.id!r} was answered in {where}; that answer does not fit here: {exc}"
            raise AnswersError([f"{self.playbook.path}: {why}"]) from None
        entry.carried_from = f"{where}:{node.id}"
        return value, self.state.origins[node.id]

    def _reused(self, node: ProbeNode, params: dict[str, Any], entry: TranscriptEntry) -> ProbeResult | None:
        """The previous run's result for this probe, once, when rerunning from a later node, and only for the
        same inputs and unchanged files (else the entry says why the probe runs again); or, in a chained run,
        an earlier playbook's result of the same probe with the same inputs."""
        probe = self.probes.get(node.probe)
        if probe is None:
            return None
        full = with_defaults(probe.params, params)
        if self.reuse is not None:
            result, why, compared = self.reuse.take(node.id, full, probe.params)
            if result is not None:
                params.update(full)  # in place: the transcript's inputs show them
                entry.reused_from, entry.input_files = self.reuse.source, compared
                return result
            entry.not_reused = why or None
        found = self.earlier.result(node.probe, full) if self.earlier.results else None
        if found is None:
            return None
        params.update(full)
        entry.carried_from = found[1]
        return found[0]

    def _params(self, node: ProbeNode) -> dict[str, Any]:
        return render_params(node, self.state)

    def _ask_workload(self, node: ProbeNode, params: dict[str, Any]) -> None:
        """A step that runs the workload, with none given (no --workload, no answer): ask once a run, where
        someone can answer; what they type is their own, and serves every later step."""
        probe = self.probes.get(node.probe)
        given = params.get(WORKLOAD.name)
        if (
            probe is None
            or not any(p.name == WORKLOAD.name and p.runs for p in probe.params)  # a plugin's, with its own help
            or self.env.settings.workload is not None
            or (isinstance(given, str) and given.strip())
        ):
            return
        ask = getattr(self.answers, "workload", None)  # optional: a source with nobody to ask has none
        if self.state.workload is None and ask is not None:
            self.state.workload = ask(node.probe, probe.summary, self._workload_problem) or ""
        if self.state.workload:
            params[WORKLOAD.name] = self.state.workload

    def _workload_problem(self, text: str) -> str | None:
        try:
            Workload.parse(text, self.env.settings.python)
        except ValueError as exc:
            return str(exc)
        return None

    def _refused_programs(self, node: ProbeNode, probe: Probe, params: Mapping[str, Any]) -> list[str]:
        """Parameters naming what to execute whose value the user did not give themselves."""
        return [
            f"{name} {value!r} ({why})"
            for name, value, why in program_params(node, probe.params, params, self.state.origins)
            if why is not None
            and not (name == WORKLOAD.name and value == self.state.workload)  # typed at the prompt this run
            and name not in self.shown
            and not self._confirmed(node.params[name], value, name)
        ]

    def _declined_programs(self, node: ProbeNode, probe: Probe, params: Mapping[str, Any]) -> list[str]:
        """Programs probe results chose (a forged trace or transcript can choose them): where a person is at the
        terminal, each is shown and runs only on their yes, with or without --allow-commands. Returns the ones
        declined; those confirmed are kept in ``shown`` (this node's, until the next probe). With nobody to ask,
        nothing is shown and the usual rule holds: such a program runs only with --allow-commands."""
        self.shown = set()
        ask = getattr(self.answers, "confirm_program", None)  # optional, as ``workload`` is
        declined = []
        for name, value, why in program_params(node, probe.params, params, self.state.origins):
            if why is None or ask is None or not chosen_by_facts(node.params.get(name)):
                continue
            said = ask(node.id, value, name, why)
            if said is True:
                self.shown.add(name)
            elif said is False:
                declined.append(f"{name} {value!r} ({why})")
        return declined

    def _confirmed(self, raw: Any, value: Any, what: str) -> bool:
        """A program from a file's answer runs when the person at the terminal says so: that yes
        makes the answer theirs (origin interactive) for the rest of the run."""
        questions = answer_sources(raw)
        if not questions or self.env.settings.allow_commands:
            return False
        untrusted = [q for q in questions if self.state.origins.get(q) not in TRUSTED_ORIGINS]
        nodes = [self.playbook.nodes[q] for q in untrusted if isinstance(self.playbook.nodes.get(q), QuestionNode)]
        if len(nodes) != len(untrusted):
            return False
        for question in nodes:
            assert isinstance(question, QuestionNode)
            if not self.answers.confirm(question, value, what):
                return False
            self.state.origins[question.id] = ORIGIN_INTERACTIVE
        return True

    def _run_probe(self, node: ProbeNode, params: dict[str, Any], entry: TranscriptEntry) -> ProbeResult:
        probe = self.probes.get(node.probe)
        if probe is None:
            raise ProbeInfrastructureError(f"probe {node.probe!r} is not registered")
        params.update(with_defaults(probe.params, params))  # in place: the transcript's inputs show them
        before = stat_inputs(probe.params, params)  # what it reads, as it was before it ran
        try:
            return self._start_probe(node, probe, params)
        finally:  # hashed after it ran, from its own read of each file where it read one (the file opened once)
            entry.input_files = fingerprints(before, self.env.inspections.ends) or None

    def _start_probe(self, node: ProbeNode, probe: Probe, params: dict[str, Any]) -> ProbeResult:
        declined = self._declined_programs(node, probe, params)
        if declined:  # the person at the terminal saw the program probe results chose, and said no
            return ProbeResult(
                Status.SKIP,
                f"not run: {'; '.join(declined)}; you declined it at the prompt",
                facts={"reason": "program declined", "refused": "; ".join(declined)},
            )
        refused = self._refused_programs(node, probe, params)
        if refused and not self.env.settings.allow_commands:
            yours = ", ".join(self.spell(name) for name in ("workload", "python", "sets"))
            return ProbeResult(
                Status.SKIP,
                f"not run: {'; '.join(refused)}; only you decide what runs on this machine: give it "
                f"yourself ({yours}) or at the prompt, or rerun with {self.spell('allow_commands')}",
                facts={"reason": "program not allowed", "refused": "; ".join(refused)},
            )
        # Started here, after every question this probe asks (the workload, a confirm): a live line drawn
        # while a question waits overwrote it, and its timer counted the person's thinking.
        self.observer.probe_started(node, params)
        return run_probe(probe, params, self.env, node.timeout)


def run_probe(probe: Probe, params: Mapping[str, Any], env: Environment, timeout: float) -> ProbeResult:
    """One probe, timed: a domain error inside it is its ERROR result; an OS error means it could not run.
    Facts that break the probe's declaration (a plugin's, or ours) become warnings on its result."""
    started = env.system.clock.monotonic()
    try:
        result = probe.run(env, params, timeout=timeout)
    except WizardError as exc:
        result = ProbeResult(Status.ERROR, str(exc))
    except OSError as exc:
        raise ProbeInfrastructureError(f"probe {probe.name!r} could not run: {exc}") from exc
    result.duration_s = round(env.system.clock.monotonic() - started, 3)
    result.warnings = [*result.warnings, *fact_warnings(probe.name, probe.facts, result.status.value, result.facts)]
    return result
