"""The one run: ``run_playbook`` walks a playbook to its diagnosis (``warpwizard run`` calls it with a terminal
around it). Gathering (``start.gather``) and checking the outputs come first; then the walk, the answers saved
if it is stopped, and the outputs written at the end."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wizard.api import PathLike
from wizard.engine.answers import Answer, AnswerSource, values_of
from wizard.engine.engine import Engine, EngineObserver
from wizard.engine.reuse import Reuse
from wizard.engine.transcript import Transcript
from wizard.environment import Environment
from wizard.errors import AnswersError, Interrupted, Terminated, TerminateSignal, UsageError
from wizard.options import Options
from wizard.playbook.model import Playbook
from wizard.probes.registry import registered_probes
from wizard.run_request import RunRequest
from wizard.runs.answers import scripted_answers
from wizard.runs.files import RunOutputs
from wizard.runs.playbooks import playbook_loader, the_playbook
from wizard.runs.sessions import end_session, save_interrupted
from wizard.runs.start import Notify, Spell, Start, as_request, gather, keyword, quiet
from wizard.system import System

if TYPE_CHECKING:
    from wizard.engine.chain import Chain

AnswerSourceFor = Callable[[Playbook, dict[str, Answer]], AnswerSource]  # answer_source(playbook, given)


def library_continue(playbook_id: str) -> str:
    """How a Python caller resumes an interrupted run: the library's ``continue_with``."""
    return f"continue with: wizard.run_playbook({playbook_id!r}, wizard.RunRequest(resume=True))"


def run_playbook(
    playbook: Playbook | PathLike,
    request: RunRequest | Mapping[str, Any] | PathLike | None = None,
    *,
    system: System | None = None,
    observer: EngineObserver | None = None,
    answer_source: AnswerSourceFor | None = None,
    notify: Notify = quiet,
    spell: Spell = keyword,
    continue_with: Callable[[str], str] = library_continue,
    **keywords: Any,
) -> Transcript:
    """Walk a playbook to its diagnosis: the one run, which ``warpwizard run`` calls too.

    ``request`` is what is asked (a ``RunRequest``: answers, ``sets``, ``defaults``, ``resume``, ``from_node`` /
    ``from_step``, ``record`` / ``report`` / ``force``, ``options``, ``playbook_dirs``), or the answers alone (a
    mapping of question id to value, or an answers file). ``answer_source(playbook, given)`` may put a person in for
    the rest (the CLI's prompts; ``given``: each answer as an ``Answer``, value and origin). On Ctrl-C or SIGTERM
    the answers so far are saved and Interrupted / Terminated say where. ``transcript.diagnosis`` and
    ``transcript.evidence`` hold the outcome; ``plan_playbook`` is the dry run.

    ``spell`` names a field as the caller knows it (``sets=`` here, ``--set`` on a command line), ``notify(kind,
    text)`` hears what the run decided (``resumed``, ``rerun``, ``shadowed``) and where probes wrote
    (``workspace``), ``continue_with`` says how to resume. ``keywords``: today's keyword form (``sets=``,
    ``resume=``, ...), deprecated: one release, with a DeprecationWarning.
    Raises AnswersError, PlaybookError / PlaybookNotFound, UsageError for bad options."""
    asked = as_request(request, keywords, spell)
    if asked.dry_run and keywords:  # the deprecated ``dry_run=True`` keyword: the Plan, as before (one release)
        from wizard.runs.plan import plan_playbook

        return plan_playbook(playbook, asked, system=system, notify=notify, spell=spell)  # type: ignore[return-value]
    if asked.dry_run:
        raise UsageError(f"{spell('dry_run')} runs nothing: wizard.plan_playbook(playbook, request) is the dry run")
    system = system or System()
    start = gather(playbook, asked, system, notify, spell)
    hooks = _Hooks(observer, answer_source, notify, spell, continue_with)
    return _Run(start, asked, system, hooks).run()


@dataclass(frozen=True, slots=True)
class _Hooks:
    """The caller's part in a run: who watches, who answers, who hears, how options and resuming are said."""

    observer: EngineObserver | None
    answer_source: AnswerSourceFor | None
    notify: Notify
    spell: Spell
    continue_with: Callable[[str], str]


@dataclass(frozen=True, slots=True)
class _Run:
    """One run of a gathered start: outputs checked, engine prepared, walked, stopped or finished."""

    start: Start
    request: RunRequest
    system: System
    hooks: _Hooks

    def run(self) -> Transcript:
        pb, request = self.start.playbook, self.request
        read = [p for p in (self.start.answers_file, pb.path) if p and p != "-"]
        outputs = RunOutputs(request.record, request.report, request.force, read)
        outputs.check(request.options, values_of(self.start.given), self.hooks.spell)
        engine = self._engine()
        inspections = engine.env.inspections  # one inspection per trace file, shared by the probes and the report
        inspections.plots = outputs.draws_trace()  # the page's pictures gathered in that one read
        transcript = self._walk(engine, outputs)
        if request.resume and self.start.answers_file and transcript.conclusion is not None:
            end_session(self.start.answers_file, self.system.environ)  # done: --resume must not replay its probes
        from wizard.probes.inspections import CONTENTS

        inspections.release(CONTENTS)  # the walk is over: no probe reads a trace's raw contents now
        outputs.write(transcript, request.options, inspections)
        workspace = engine.env.settings.report_dir
        if workspace.is_dir():  # probes wrote there: say where (never in the current directory unasked)
            self.hooks.notify("workspace", f"this run's files: {workspace}")
        return transcript

    def _engine(self) -> Chain:
        """The engine over the playbook and those it continues into, answering from the source the caller chose."""
        pb, request, hooks, given = self.start.playbook, self.request, self.hooks, self.start.given
        reuse = rerun_from(pb, self.start.answers_file, request, hooks.notify, hooks.spell)
        source = (
            hooks.answer_source(pb, dict(given))
            if hooks.answer_source
            else scripted_answers(given, defaults=request.defaults, spell=hooks.spell)
        )
        return prepare_run(
            pb,
            source,
            request.options,
            system=self.system,
            observer=hooks.observer,
            reuse=reuse,
            spell=hooks.spell,
            playbook_dirs=request.playbook_dirs,
        )

    def _walk(self, engine: Chain, outputs: RunOutputs) -> Transcript:
        """The walk; on Ctrl-C or a stop signal, the answers so far saved and Interrupted / Terminated raised."""
        spell = self.hooks.spell
        hint = f"answer them with {spell('answers')} or {spell('sets')}"
        try:
            return walk(engine, values_of(self.start.given), hint, f"use {spell('defaults')}")
        except KeyboardInterrupt as exc:
            raise self._stopped(engine, outputs, exc) from None

    def _stopped(self, engine: Chain, outputs: RunOutputs, exc: KeyboardInterrupt) -> Interrupted:
        pb, record = self.start.playbook, self.request.record
        answered = engine.state.answers
        inputs = outputs.inputs(self.request.options, answered)
        saved, note = save_interrupted(pb, answered, self.system, record=record, inputs=inputs)
        resume_hint = self.hooks.continue_with(pb.id) if saved and not record else None
        if isinstance(exc, TerminateSignal):
            return Terminated(saved, note, resume_hint, exc.signum)
        return Interrupted(saved, note, resume_hint)


def prepare_run(
    playbook: Playbook | PathLike,
    source: AnswerSource,
    options: Options | None = None,
    *,
    system: System | None = None,
    observer: EngineObserver | None = None,
    reuse: Reuse | None = None,
    spell: Callable[[str], str] = str,
    playbook_dirs: Sequence[str] = (),
) -> Chain:
    """An engine ready to walk ``playbook`` and the playbooks its conclusions continue into (found by id on
    the same search path); ``.run()`` returns the transcript and ``.state`` holds the answers so far (the
    CLI saves them on Ctrl-C)."""
    from wizard.engine.chain import Chain

    system = system or System()
    pb = the_playbook(playbook, playbook_dirs, system.environ)
    env = Environment(system, (options or Options()).settings(system))
    engine = Engine(pb, source, registered_probes(), env, observer=observer, reuse=reuse, spell=spell)
    return Chain(engine, playbook_loader(playbook_dirs, system.environ))


def walk(engine: Engine | Chain, given: Mapping[str, Any], hint: str, defaults_hint: str = "") -> Transcript:
    """Run a prepared engine; an unanswered question becomes an AnswersError naming it and the
    questions that may follow (``hint`` says, in the caller's words, how to answer them;
    ``defaults_hint`` how to take the defaults, offered only for a question that has one)."""
    from wizard.engine.answers import MissingAnswer, missing_answer_message

    try:
        return engine.run()
    except MissingAnswer as exc:
        answered = set(engine.state.answers) | set(given)
        message = missing_answer_message(engine.playbook, exc.question, answered, hint, defaults_hint)
        raise AnswersError([message]) from None


def rerun_from(
    pb: Playbook, answers_file: str | None, request: RunRequest, notify: Notify, spell: Spell
) -> Reuse | None:
    """``from_node`` / ``from_step``: the earlier probes' results from the answers' transcript."""
    node, step = request.from_node, request.from_step
    if node is None and step is None:
        return None
    if not answers_file or answers_file == "-":
        raise UsageError(
            f"{spell('from_node')} and {spell('from_step')} rerun a previous run: "
            f"give its JSON transcript as {spell('answers')}"
        )
    from wizard.engine.reuse import recorded

    reuse = recorded(pb, answers_file, node=node, step=step)
    names = ", ".join(reuse.results) or "none"
    notify(
        "rerun",
        f"rerunning from {reuse.start}; reusing the recorded results of: {names} (each only where its inputs and "
        "the files they name are unchanged; the transcript says why any ran again)",
    )
    return reuse
