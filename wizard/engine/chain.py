"""One run through several playbooks: a conclusion with ``continue`` hands the run on to another playbook.

The next playbook is walked with the same answers, origins, facts and statuses: a question an earlier
playbook asked is not asked again, and a probe an earlier playbook ran with the same inputs is not run
again. The next playbook is loaded by id from the catalogue the run started from (the ``load`` callable),
never from a path in data; a run walks at most ``MAX_CHAIN`` playbooks, each once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wizard.engine.engine import Engine
from wizard.engine.transcript import ChainLink, Transcript
from wizard.environment import Environment
from wizard.errors import PlaybookError, PlaybookNotFound
from wizard.formatting import shown
from wizard.playbook.grammar import MAX_CHAIN
from wizard.playbook.model import ConclusionNode, Node, Playbook

Loader = Callable[[str], Playbook]


def about(pb: Playbook) -> dict[str, str]:
    return {"id": pb.id, "title": pb.title, "version": pb.version, "path": pb.path}


def continuation_problem(pb: Playbook, node: ConclusionNode, value: Any, walked: list[str]) -> str | None:
    """Why a run stops where ``node`` continues to ``value`` after ``walked`` (None: it goes on): the one
    rule the run and its ``--dry-run`` plan both keep."""
    assert node.continues is not None
    where = f"{pb.path}:{node.line}: conclusion {node.id!r}"
    if not isinstance(value, str) or value not in node.continues.choices:
        choices = ", ".join(node.continues.choices)
        return f"{where} continues to {shown(value)}, which is not one of its choices: {choices}"
    if value in walked:
        path = " -> ".join([*walked, value])
        return f"{where} continues to {value!r} again ({path}); a run walks each playbook once"
    if len(walked) >= MAX_CHAIN:
        return f"{where}: a run continues through at most {MAX_CHAIN} playbooks"
    return None


class Chain:
    """An engine that goes on where a conclusion continues; it reads like one Engine to its callers
    (``run()``, ``state``, ``playbook``, ``env``, ``transcript``)."""

    def __init__(self, engine: Engine, load: Loader) -> None:
        self.engine = engine
        self.load = load
        self.walked: list[str] = []

    @property
    def playbook(self) -> Playbook:
        return self.engine.playbook

    @property
    def state(self) -> Any:
        return self.engine.state

    @property
    def env(self) -> Environment:
        return self.engine.env

    @property
    def transcript(self) -> Transcript:
        return self.engine.transcript

    def run(self) -> Transcript:
        links: list[ChainLink] = []
        start = 0
        while True:
            engine = self.engine
            self.walked.append(engine.playbook.id)
            transcript = engine.run()
            conclusion = transcript.conclusion
            node = engine.playbook.nodes.get(conclusion.node) if conclusion else None
            link = ChainLink(about(engine.playbook), len(transcript.entries) - start, conclusion)
            links.append(link)
            for entry in transcript.entries[start:]:
                entry.playbook = engine.playbook.id
            start = len(transcript.entries)
            if not isinstance(node, ConclusionNode) or node.continues is None:
                break
            link.continued_to = self._target(engine.playbook, node)
            link.also = self._also(engine, node, link.continued_to)
            nxt = self._next(engine.playbook, node, link.continued_to)
            self._remember(engine)
            transcript.conclusion = None  # the run's diagnosis is the last playbook's
            engine.observer.continued(nxt)
            self.engine = Engine(
                nxt,
                engine.answers,
                engine.probes,
                engine.env,
                observer=engine.observer,
                spell=engine.spell,  # a refused program names the CLI's options in every playbook of the chain
                state=engine.state,
                transcript=transcript,
                earlier=engine.earlier,
            )
        if len(links) > 1:
            transcript.chain = links
        else:
            for entry in transcript.entries:
                entry.playbook = None
        return transcript

    def _target(self, pb: Playbook, node: ConclusionNode) -> str:
        """The playbook id the continuation renders to: one of its choices, not walked yet, within the bound."""
        assert node.continues is not None
        value = node.continues.playbook.render(self.engine.state.scope())
        problem = continuation_problem(pb, node, value, self.walked)
        if problem is not None:
            raise PlaybookError([problem])
        assert isinstance(value, str)
        return value

    def _also(self, engine: Engine, node: ConclusionNode, target: str) -> list[str]:
        """The other choices the conclusion names as worth running afterwards (not the one continued into)."""
        assert node.continues is not None
        if node.continues.also is None:
            return []
        value = node.continues.also.render(engine.state.scope())
        items: Iterable[Any] = value if isinstance(value, list) else []
        return [i for i in dict.fromkeys(items) if i in node.continues.choices and i != target and i not in self.walked]

    def _next(self, pb: Playbook, node: ConclusionNode, target: str) -> Playbook:
        try:
            nxt = self.load(target)
        except PlaybookNotFound as exc:
            raise PlaybookError(
                [f"{pb.path}:{node.line}: conclusion {node.id!r} continues to {target!r}: {exc}"]
            ) from None
        if nxt.id != target:
            raise PlaybookError([f"{nxt.path}: continued into {target!r}, but this file's playbook id is {nxt.id!r}"])
        return nxt

    def _remember(self, engine: Engine) -> None:
        """What this playbook asked and ran, for the next one to carry."""
        for question in engine.playbook.questions():
            if question.id in engine.state.answers:
                engine.earlier.answered_in.setdefault(question.id, engine.playbook.id)
        engine.earlier.results.extend(engine.ran)


def reachable_playbooks(pb: Playbook, load: Loader, limit: int = 64) -> list[Playbook]:
    """``pb`` and every playbook its conclusions may continue into, directly or further, each once: what
    an answers file for it may answer. A choice that does not load is left out (``validate`` names it;
    a run that reaches it stops with its problem)."""
    found = {pb.id: pb}
    queue = [pb]
    while queue and len(found) < limit:
        for name in queue.pop(0).continuations():
            if name in found:
                continue
            try:
                nxt = load(name)
            except (PlaybookError, PlaybookNotFound):
                continue
            found[name] = nxt
            queue.append(nxt)
    return list(found.values())


def chain_view(playbooks: list[Playbook]) -> Playbook:
    """One playbook holding every node of ``playbooks`` (the first's where ids repeat), for checking the
    answers a chained run may use and listing its questions: never walked."""
    first = playbooks[0]
    nodes: dict[str, Node] = {}
    for pb in playbooks:
        for node_id, node in pb.nodes.items():
            nodes.setdefault(node_id, node)
    fragments = tuple(dict.fromkeys(f for pb in playbooks for f in pb.fragments))
    return Playbook(
        first.id, first.title, first.description, first.version, first.steps, nodes, first.start, first.path, fragments
    )
