"""warpwizard as a library, for playbooks and probes: load, validate and run a playbook; run one probe.

The command line's ``run``, ``probe`` and ``validate`` are built on these functions. Nothing here
prints or exits; every error is one of ``wizard.errors``' types (docs/api.md). torch is never
imported: probes run it in the interpreter you name.

Trust (docs/security.md): the keyword arguments your code passes are yours, like a command line
(``workload=``, ``python=``, a probe's ``params``); answers are answers, as if from a file, so a
program an answer names runs only with ``allow_commands=True``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from wizard.api import PathLike, path_text
from wizard.engine.answers import ORIGIN_FILE, AnswerSource, MappingAnswers, check_answers, load_answers_file
from wizard.engine.engine import Engine, EngineObserver
from wizard.engine.engine import run_probe as _run_probe
from wizard.engine.reuse import Reuse
from wizard.engine.transcript import Transcript, TranscriptEntry
from wizard.environment import Environment, RunInspections, Workload
from wizard.errors import (
    AnswersError,
    Interrupted,
    OutputFileError,
    PlaybookError,
    PlaybookNotFound,
    Terminated,
    TerminateSignal,
    UsageError,
)
from wizard.formatting import plural, verb
from wizard.options import Options
from wizard.playbook.model import Playbook, yes_no
from wizard.probes.base import PARAM_TYPES, ParamSpec, ProbeInfo, ProbeResult, with_defaults
from wizard.probes.registry import catalog, registered_probes
from wizard.system import System

if TYPE_CHECKING:
    from wizard.engine.chain import Chain
    from wizard.engine.plan import Plan
    from wizard.playbook.trust import ProgramUse

# -- playbooks ------------------------------------------------------------------------------------


def load_playbook(
    name_or_path: PathLike, *, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> Playbook:
    """A playbook by name (the packaged ones, ``playbook_dirs``, ``WARPWIZARD_PLAYBOOK_PATH``) or path,
    checked in full. Raises PlaybookNotFound, or PlaybookError with every problem in ``.problems``."""
    from wizard.playbook.discovery import load

    return load(_path_text(name_or_path, "playbook"), catalog(), list(playbook_dirs), environ)


def validate_playbook(path: PathLike) -> list[str]:
    """Every problem of one playbook file, one ``file:line:column: message`` each; empty when valid."""
    from wizard.playbook.loader import load_playbook as _load

    try:
        _load(os.fspath(path), catalog())
    except PlaybookError as exc:
        return list(exc.problems)
    return []


def run_inputs(options: Options | None, values: Iterable[Any] = ()) -> list[str]:
    """Every file a run reads, which no output may replace even with ``--force``: the reports to
    compare, the interpreters, the workload's script, and each given value (an answer, a probe
    parameter, items of a list) that names a file or directory that exists."""
    options = options or Options()
    named: list[str] = [*options.compare_reports, *options.compare_pythons]
    if options.python:
        named.append(options.python)
    if options.workload:
        try:
            script = Workload.parse(options.workload, options.python or sys.executable).script
        except ValueError:
            script = None
        if script:
            named.append(script)
    for value in values:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and 0 < len(item) < 4096 and "\0" not in item and os.path.lexists(item):
                named.append(item)
    return named


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
    pb = (
        playbook
        if isinstance(playbook, Playbook)
        else load_playbook(_path_text(playbook, "playbook"), playbook_dirs=playbook_dirs, environ=system.environ)
    )
    env = Environment(system, (options or Options()).settings(system))
    engine = Engine(pb, source, registered_probes(), env, observer=observer, reuse=reuse, spell=spell)
    return Chain(engine, playbook_loader(playbook_dirs, system.environ))


def playbook_loader(playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> Any:
    """Loads a playbook by id from the search path (never a path): where a conclusion continues."""
    from wizard.playbook.discovery import load_named

    return lambda name: load_named(name, catalog(), list(playbook_dirs), environ)


def chain_of(pb: Playbook, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> Playbook:
    """``pb`` with every node of the playbooks it may continue into (the first's where ids repeat): what
    its answers may answer, and the questions ``warpwizard answers`` lists. Never walked."""
    from wizard.engine.chain import chain_view, reachable_playbooks

    if not pb.continuations():
        return pb
    return chain_view(reachable_playbooks(pb, playbook_loader(playbook_dirs, environ)))


def _named_by_id(playbook: object) -> bool:
    """Whether the caller named the playbook by id (found on the search path), not by a path."""
    return isinstance(playbook, str) and Path(playbook).suffix not in (".yaml", ".yml") and os.sep not in playbook


def _continued_ids(pb: Playbook, playbook_dirs: Sequence[str], environ: Mapping[str, str] | None) -> list[str]:
    """The ids of the playbooks a run of ``pb`` may continue into, directly or further (loaded by id)."""
    from wizard.engine.chain import reachable_playbooks

    if not pb.continuations():
        return []
    return [p.id for p in reachable_playbooks(pb, playbook_loader(playbook_dirs, environ))[1:]]


def _library_continue(playbook_id: str) -> str:
    return f"continue with: wizard.run_playbook({playbook_id!r}, resume=True)"


@overload
def run_playbook(
    playbook: Playbook | PathLike,
    answers: Mapping[str, Any] | PathLike | None = ...,
    *,
    dry_run: Literal[False] = ...,
    defaults: bool = ...,
    options: Options | None = ...,
    system: System | None = ...,
    sets: Sequence[str] = ...,
    resume: bool = ...,
    record: PathLike | None = ...,
    report: PathLike | None = ...,
    force: bool = ...,
    from_node: str | None = ...,
    from_step: int | None = ...,
    playbook_dirs: Sequence[str] = ...,
    answer_source: Callable[[Playbook, dict[str, Any], dict[str, str]], AnswerSource] | None = ...,
    observer: EngineObserver | None = ...,
    notify: Callable[[str, str], None] = ...,
    spell: Callable[[str], str] = ...,
    continue_with: Callable[[str], str] = ...,
) -> Transcript: ...


@overload
def run_playbook(
    playbook: Playbook | PathLike,
    answers: Mapping[str, Any] | PathLike | None = ...,
    *,
    dry_run: Literal[True],
    defaults: bool = ...,
    options: Options | None = ...,
    system: System | None = ...,
    sets: Sequence[str] = ...,
    resume: bool = ...,
    record: PathLike | None = ...,
    report: PathLike | None = ...,
    force: bool = ...,
    from_node: str | None = ...,
    from_step: int | None = ...,
    playbook_dirs: Sequence[str] = ...,
    answer_source: Callable[[Playbook, dict[str, Any], dict[str, str]], AnswerSource] | None = ...,
    observer: EngineObserver | None = ...,
    notify: Callable[[str, str], None] = ...,
    spell: Callable[[str], str] = ...,
    continue_with: Callable[[str], str] = ...,
) -> Plan: ...


def run_playbook(
    playbook: Playbook | PathLike,
    answers: Mapping[str, Any] | PathLike | None = None,
    *,
    dry_run: bool = False,
    defaults: bool = False,
    options: Options | None = None,
    system: System | None = None,
    sets: Sequence[str] = (),
    resume: bool = False,
    record: PathLike | None = None,
    report: PathLike | None = None,
    force: bool = False,
    from_node: str | None = None,
    from_step: int | None = None,
    playbook_dirs: Sequence[str] = (),
    answer_source: Callable[[Playbook, dict[str, Any], dict[str, str]], AnswerSource] | None = None,
    observer: EngineObserver | None = None,
    notify: Callable[[str, str], None] = lambda kind, text: None,
    spell: Callable[[str], str] = lambda name: f"{name}=",
    continue_with: Callable[[str], str] = _library_continue,
) -> Transcript | Plan:
    """Walk a playbook to its diagnosis: the one run, which ``warpwizard run`` calls too.

    ``answers`` (a mapping of question id to value, or a YAML/JSON answers file, its relative paths taken
    from where it is) and ``sets`` (``"ID=VALUE"``, which win) answer the questions; ``defaults`` fills the
    rest from the playbook; ``answer_source(playbook, values, origins)`` may put a person in for the rest (the CLI's
    prompts). ``resume``: the answers of this playbook's last interrupted session. ``from_node`` /
    ``from_step``: rerun from there, reusing the earlier probes' results in ``answers`` (a transcript).
    ``record`` / ``report``: write the answers given / a report (``.md``, ``.html``, ``.json``), checked
    before any probe runs and never over what the run read (``force`` replaces another file). On Ctrl-C or
    SIGTERM the answers so far are saved and Interrupted / Terminated say where. ``dry_run``: the Plan
    (nothing runs, nothing is written). ``transcript.diagnosis`` and ``transcript.evidence`` hold the outcome.

    ``spell`` names an option as the caller knows it (``sets=`` here, ``--set`` on a command line),
    ``notify(kind, text)`` hears what the run decided (``resumed``, ``rerun``) and where probes wrote
    (``workspace``), ``continue_with`` says how to resume.
    Raises AnswersError, PlaybookError / PlaybookNotFound, UsageError for bad options."""
    system = system or System()
    options = options or Options()
    pb = (
        playbook
        if isinstance(playbook, Playbook)
        else load_playbook(_path_text(playbook, "playbook"), playbook_dirs=playbook_dirs, environ=system.environ)
    )
    given = dict(answers) if isinstance(answers, Mapping) else {}
    answers_file = None if answers is None or isinstance(answers, Mapping) else _path_text(answers, "answers")
    if resume:
        answers_file = _resumed(pb, answers_file, system, notify, spell)
    whole = chain_of(pb, playbook_dirs, system.environ)  # the questions of every playbook it may continue into
    walked_by_id = [pb.id] if _named_by_id(playbook) else []
    walked_by_id += _continued_ids(pb, playbook_dirs, system.environ)
    for line in shadowed_notes(walked_by_id, playbook_dirs, system.environ) + shadowed_fragment_notes(whole):
        notify("shadowed", line)
    values, origins = given_answers(
        whole,
        answers_file=answers_file,
        sets=sets,
        workload=options.workload,
        stdin=system.stdin,
        nofollow=resume,  # a session file is opened only if it is the user's own regular file
        spell=spell,
    )
    values.update(given)
    origins.update(dict.fromkeys(given, ORIGIN_FILE))
    check_given(whole, values)
    if dry_run:
        return _plan(
            pb,
            values,
            origins,
            defaults=defaults,
            allow_commands=options.allow_commands,
            playbook_dirs=playbook_dirs,
            environ=system.environ,
        )
    outputs = RunOutputs(record, report, force, [p for p in (answers_file, pb.path) if p and p != "-"])
    outputs.check(options, values, spell)
    reuse = _reuse(pb, answers_file, node=from_node, step=from_step, notify=notify, spell=spell)
    source = (
        answer_source(pb, values, origins)
        if answer_source
        else scripted_answers(values, origins, defaults=defaults, spell=spell)
    )
    engine = prepare_run(
        pb, source, options, system=system, observer=observer, reuse=reuse, spell=spell, playbook_dirs=playbook_dirs
    )
    inspections = engine.env.inspections  # one inspection per trace file, shared by the probes and the report
    inspections.plots = outputs.draws_trace()  # the page's pictures gathered in that one read
    hint = f"answer them with {spell('answers')} or {spell('sets')}"
    try:
        transcript = walk(engine, values, hint, f"use {spell('defaults')}")
    except KeyboardInterrupt as exc:
        answered = engine.state.answers
        saved, note = save_interrupted(pb, answered, system, record=record, inputs=outputs.inputs(options, answered))
        resume_hint = continue_with(pb.id) if saved and not record else None
        if isinstance(exc, TerminateSignal):
            raise Terminated(saved, note, resume_hint, exc.signum) from None
        raise Interrupted(saved, note, resume_hint) from None
    if resume and answers_file and transcript.conclusion is not None:
        end_session(answers_file, system.environ)  # done: --resume must not find it again and replay its probes
    from wizard.probes.inspections import CONTENTS

    inspections.release(CONTENTS)  # the walk is over: no probe reads a trace's raw contents now
    outputs.write(transcript, options, inspections)
    workspace = engine.env.settings.report_dir
    if workspace.is_dir():  # probes wrote there: say where (never in the current directory unasked)
        notify("workspace", f"this run's files: {workspace}")
    return transcript


@dataclass
class RunOutputs:
    """``record`` and ``report``: checked before anything runs, written at the end, never over an input."""

    record: PathLike | None
    report: PathLike | None
    force: bool
    read: list[str]  # the answers file and the playbook

    def inputs(self, options: Options, answers: Mapping[str, Any]) -> list[str]:
        """What the run reads, which no output replaces (answers typed at the prompt included)."""
        return self.read + run_inputs(options, answers.values())

    def check(self, options: Options, values: Mapping[str, Any], spell: Callable[[str], str]) -> None:
        """Refused before any probe runs: an unknown report format, an output onto an input or over a
        file (without ``force``), two outputs naming one file."""
        from wizard.outputs import check_outputs
        from wizard.rendering import renderer

        if self.report:
            renderer("format")(os.fspath(self.report))  # an unknown suffix, the html extra missing: said now
        named = [(os.fspath(p), what) for p, what in ((self.record, "answers record"), (self.report, "report")) if p]
        check_outputs(named, inputs=self.inputs(options, values), force=self.force)

    def draws_trace(self) -> bool:
        """Whether the report draws the trace the run read (an HTML page): known before any probe runs."""
        from wizard.rendering import renderer

        return self.report is not None and renderer("draws")(os.fspath(self.report)) == "trace"

    def write(self, transcript: Transcript, options: Options, inspections: RunInspections | None = None) -> None:
        from wizard.outputs import write_text

        inputs = self.inputs(options, transcript.answers)
        pb_id = transcript.playbook["id"]
        if self.record:
            text = answers_text(transcript.answers, pb_id)
            write_text(os.fspath(self.record), text, inputs=inputs, force=self.force, what="answers record")
        if self.report:
            text = transcript.render(Path(self.report).suffix, inspections)
            write_text(os.fspath(self.report), text, inputs=inputs, force=self.force, what="report")


def _resumed(
    pb: Playbook,
    answers_file: str | None,
    system: System,
    notify: Callable[[str, str], None],
    spell: Callable[[str], str],
) -> str:
    """``resume``: the last interrupted session of this playbook becomes the answers file."""
    if answers_file:
        raise UsageError(f"{spell('resume')} continues a saved session; give it or {spell('answers')}, not both")
    found = latest_session(pb.id, system.environ)
    if found is None:
        where = sessions_dir(system.environ)
        raise UsageError(f"no interrupted session of {pb.id} to resume (sessions are saved in {where})")
    notify("resumed", f"resuming from {found}")
    return str(found)


def _reuse(
    pb: Playbook,
    answers_file: str | None,
    *,
    node: str | None,
    step: int | None,
    notify: Callable[[str, str], None],
    spell: Callable[[str], str],
) -> Reuse | None:
    """``from_node`` / ``from_step``: the earlier probes' results from the answers' transcript."""
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


def save_interrupted(
    pb: Playbook, answers: dict[str, Any], system: System, *, record: PathLike | None = None, inputs: list[str]
) -> tuple[str | None, str]:
    """Where an interrupted run's answers went (never over an existing file), or why nowhere: ``record``'s
    name when given (beside a file already there), else a session in the state directory."""
    from wizard.outputs import write_text

    if not answers:
        return None, "; no question was answered yet, so nothing was saved"
    try:
        if record:  # an earlier run's file, or the user's own: the next free name beside it, taken atomically
            target = write_text(
                os.fspath(record), answers_text(answers, pb.id), inputs=inputs, what="answers", free=True
            )
            return str(target), ""
        saved = save_session(pb, answers, system.environ, system.clock.now())
    except OutputFileError as exc:
        return None, f"; the answers could not be saved ({exc})"
    return str(saved), ""


def check_given(pb: Playbook, values: Mapping[str, Any]) -> None:
    """Every given answer checked before anything runs: AnswersError naming each unknown id or bad value."""
    problems = check_answers(pb, values)
    if problems:
        raise AnswersError(problems)


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


def given_answers(
    pb: Playbook,
    *,
    answers_file: str | None = None,
    sets: Sequence[str] = (),
    workload: str | None = None,
    stdin: Any = None,
    nofollow: bool = False,
    spell: Callable[[str], str] = str,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The answers a command line gives and where each came from: the file (its relative paths taken
    from where the file is), ``--workload`` for the questions it answers, then ``--set`` (which wins)."""
    from wizard.engine.answers import ORIGIN_COMMAND_LINE, parse_set_options

    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    if answers_file:
        loaded = load_answers_file(answers_file, stdin, nofollow=nofollow)
        base = os.getcwd() if answers_file == "-" else os.path.dirname(os.path.abspath(answers_file))
        values.update(absolute_paths(pb, loaded, base))
        origins.update(dict.fromkeys(values, ORIGIN_FILE))
    for question in workload_questions(pb) if workload else ():
        values[question], origins[question] = workload, ORIGIN_COMMAND_LINE
    given_here = parse_set_options(list(sets), spell)
    values.update(given_here)
    origins.update(dict.fromkeys(given_here, ORIGIN_COMMAND_LINE))
    return values, origins


def scripted_answers(
    values: Mapping[str, Any], origins: Mapping[str, str], *, defaults: bool, spell: Callable[[str], str] = str
) -> AnswerSource:
    """Answers with nobody to ask: the given ones, then the defaults when ``defaults``."""
    return MappingAnswers(values, use_defaults=defaults, origins=origins, spell=spell)


def answers_text(answers: Mapping[str, Any], playbook_id: str) -> str:
    """An answers file that replays these answers (``--record``, saved sessions)."""
    from wizard.engine.answers import dump_answers

    return dump_answers(answers, playbook_id)


def _plan(
    pb: Playbook,
    values: Mapping[str, Any],
    origins: Mapping[str, str],
    *,
    defaults: bool,
    allow_commands: bool,
    playbook_dirs: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Plan:
    """The path the answers take as far as they decide it, every probe and program, across the playbooks
    it continues into (nothing runs)."""
    from wizard.engine.plan import plan_run

    return plan_run(
        pb,
        values,
        origins,
        catalog(),
        defaults=defaults,
        allow_commands=allow_commands,
        load=playbook_loader(playbook_dirs, environ),
    )


def _path_text(value: Any, what: str) -> str:
    return path_text(value, what, "a name or path (str or os.PathLike)")


# -- the catalogue: playbooks found, checked, drawn, explained ------------------------------------


@dataclass(frozen=True, slots=True)
class FoundPlaybook:
    """A playbook found on the search path, loaded (``title`` etc.) or not (``problem``)."""

    name: str
    origin: str
    title: str | None = None
    version: str = ""
    steps: int = 0
    problem: str | None = None
    shadowing: str | None = None  # the line saying it hides a shipped playbook of its id
    fragment_shadowing: tuple[str, ...] = ()  # a line for each fragment it uses that hides a shipped one


def found_playbooks(playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> list[FoundPlaybook]:
    """Every playbook on the search path (the package, ``playbook_dirs``, ``WARPWIZARD_PLAYBOOK_PATH``),
    each loaded; one that does not load is listed with its first problem."""
    from wizard.playbook.discovery import list_playbooks, search_places, shadowing
    from wizard.playbook.loader import load_playbook as _load

    probes, out = catalog(), []
    search = search_places(list(playbook_dirs), environ)
    for found in list_playbooks(list(playbook_dirs), environ):
        hides = shadowing(found)
        try:
            pb = _load(found.path, probes, search=search)
        except (PlaybookError, PlaybookNotFound) as exc:  # one bad file is a row, not the end of the listing
            out.append(FoundPlaybook(found.name, found.origin, problem=str(exc), shadowing=hides))
            continue
        out.append(
            FoundPlaybook(
                found.name,
                found.origin,
                pb.title,
                pb.version,
                len(pb.steps),
                shadowing=hides,
                fragment_shadowing=tuple(shadowed_fragment_notes(pb)),
            )
        )
    return out


def shadowed_fragment_notes(pb: Playbook) -> list[str]:
    """For each fragment ``pb`` (or a playbook it continues into) inserted from a file that hides the shipped
    fragment of its id, the line that says so: as silent as a shadowed playbook was before it got one."""
    from wizard.playbook.discovery import fragment_shadowing

    lines = (fragment_shadowing(path) for path in pb.fragments)
    return [line for line in lines if line is not None]


def shadowed_notes(
    ids: Sequence[str], playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """For each of ``ids`` a run walks by id (its start named by id, the playbooks it may continue into) that a
    playbook on the search path takes from the shipped one, the line that says so."""
    from wizard.playbook.discovery import list_playbooks, shadowing

    wanted = set(ids)
    lines = (shadowing(found) for found in list_playbooks(list(playbook_dirs), environ) if found.name in wanted)
    return [line for line in lines if line is not None]


@dataclass(frozen=True, slots=True)
class Checked:
    """One playbook checked by ``validate``: its problems, or what it is and which nodes run programs."""

    name: str
    problems: list[str]
    summary: str = ""
    program_uses: list[ProgramUse] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # it loads, but something reads other than meant


def check_playbooks(
    names: Sequence[str], playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> list[Checked]:
    """``warpwizard validate``: names, paths or directories (expanded to the playbooks in them)."""
    from wizard.playbook.discovery import search_places
    from wizard.playbook.loader import load_playbook as _load
    from wizard.playbook.loader import prose_warnings, unknown_continuations
    from wizard.playbook.trust import program_uses

    probes, out = catalog(), []
    search = search_places(list(playbook_dirs), environ)
    for name, path, problem in _targets(names, playbook_dirs, environ):
        if path is None:
            out.append(Checked(name, [problem or name]))
            continue
        try:
            pb = _load(path, probes, search=search)
        except PlaybookError as exc:
            out.append(Checked(name, list(exc.problems)))
            continue
        unknown = unknown_continuations(str(path), pb, playbook_names(playbook_dirs, environ))
        if unknown:
            out.append(Checked(name, unknown))
            continue
        summary = f"{pb.path}: ok ({plural(len(pb.nodes), 'node')}, {plural(len(pb.steps), 'step')})"
        fragments: dict[str, None] = {n.origin: None for n in pb.nodes.values() if n.origin}  # read as its own text
        warnings = [w for f in (str(path), *fragments) for w in prose_warnings(f)]
        out.append(Checked(name, [], summary, list(program_uses(pb, probes)), warnings))
    return out


def _targets(
    names: Sequence[str], playbook_dirs: Sequence[str], environ: Mapping[str, str] | None
) -> Iterable[tuple[str, Path | None, str | None]]:
    from wizard.playbook.discovery import playbook_files, resolve

    for name in names:
        candidate = Path(name)
        if candidate.is_dir():
            files = playbook_files(candidate)
            if not files:
                yield name, None, f"{name}: directory holds no .yaml or .yml playbook"
            yield from ((str(f), f, None) for f in files)
            continue
        try:
            yield name, resolve(name, list(playbook_dirs), environ), None
        except PlaybookNotFound as exc:
            yield name, None, str(exc)


def playbook_graph(pb: Playbook, form: str) -> str:
    """The decision tree as Mermaid (``form="mermaid"``) or Graphviz dot."""
    from wizard.playbook.graph import dot, mermaid

    return mermaid(pb) if form == "mermaid" else dot(pb)


def explain_playbook(pb: Playbook) -> str:
    """The whole tree in words (Markdown), for onboarding: each GPU word defined where it first appears.
    Playbook text is untrusted: its control characters are shown as escapes (as ``run --teach`` shows
    them), so no title or prompt can retitle the window, clear the screen or draw a hyperlink."""
    from wizard.playbook.glossary import with_definitions
    from wizard.playbook.graph import explain
    from wizard.untrusted import visible

    return visible(with_definitions(explain(pb)), newlines=True)


def playbook_schema() -> str:
    """The playbook JSON Schema, for editors."""
    from wizard.playbook.schema import SCHEMA_PATH

    return SCHEMA_PATH.read_text(encoding="utf-8")


def answers_file_template(
    pb: Playbook, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> str:
    """A commented answers file to fill in (``warpwizard answers``): every question of the playbook and of
    the playbooks it may continue into, once each."""
    from wizard.engine.answers import answers_template

    whole = chain_of(pb, playbook_dirs, environ)
    return answers_template(whole, frozenset(program_questions(whole)))


def machine_facts(system: System | None = None, python: str | None = None) -> ProbeResult:
    """The ``env`` probe's result for this machine (versions, GPUs via NVML, profilers): no workspace
    is left behind."""
    import tempfile

    from wizard.environment import ProbeSettings
    from wizard.probes.env import EnvProbe

    with tempfile.TemporaryDirectory() as tmp:
        settings = ProbeSettings(python=python or sys.executable, report_dir=Path(tmp))
        return EnvProbe().run(Environment(system or System(), settings), {})


# -- sessions: answers saved when a run stops early ------------------------------------------------


def sessions_dir(environ: Mapping[str, str]) -> Path:
    """Where interrupted runs leave their answers: the user's state directory, never where they stand."""
    from wizard.workspace import state_root

    return state_root(environ) / "sessions"


def absolute_paths(pb: Playbook, answers: Mapping[str, Any], base: str | os.PathLike[str]) -> dict[str, Any]:
    """``answers`` with each relative answer to a path question made absolute against ``base``: an
    answers file's paths are relative to the file, and a saved session keeps working when moved."""
    kinds = {q.id: q.type for q in pb.questions()}
    out = dict(answers)
    for key, value in answers.items():
        if kinds.get(key) == "path" and isinstance(value, str) and value and not os.path.isabs(value):
            out[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    return out


def save_session(pb: Playbook, answers: Mapping[str, Any], environ: Mapping[str, str], now: Any) -> Path:
    """The answers so far, in a private file of the sessions directory that ``--resume`` finds."""
    from wizard.outputs import write_text
    from wizard.workspace import private_dir

    folder = private_dir(sessions_dir(environ))
    target = folder / f"{pb.id}-{now.strftime('%Y%m%dT%H%M%S')}.yaml"  # runs stopped in one second: -2, -3, ...
    return write_text(target, answers_text(absolute_paths(pb, answers, os.getcwd()), pb.id), what="answers", free=True)


def latest_session(playbook_id: str, environ: Mapping[str, str]) -> Path | None:
    """The most recent interrupted session of this playbook (never of one whose id merely starts the
    same), or None. The sessions directory is judged as a workspace is (this user's, nobody else can
    change it) and a session that is a link or someone else's file is passed over: its answers name
    programs to run. Raises InputFileError for a directory that is not private."""
    import re
    import stat

    from wizard.errors import InputFileError
    from wizard.workspace import problem

    folder = sessions_dir(environ)
    try:
        real = folder.resolve(strict=True)
        reason = problem(real)
    except OSError:
        return None
    if reason is not None:
        raise InputFileError(f"{folder}: refusing to resume a session from it: {reason}")
    name = re.compile(re.escape(playbook_id) + r"-\d{8}T\d{6}(?:-\d+)?\.yaml")
    found: list[tuple[int, str]] = []
    me = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        with os.scandir(real) as entries:
            for entry in entries:
                if not name.fullmatch(entry.name):
                    continue
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and me in (None, info.st_uid):
                    found.append((info.st_mtime_ns, entry.name))
    except OSError:
        return None
    return real / max(found)[1] if found else None


def end_session(path: str | os.PathLike[str], environ: Mapping[str, str]) -> None:
    """A resumed session that reached its conclusion is done: ``--resume`` must not find it again
    (and replay its probes). Only a file in the sessions directory is ever removed."""
    target = Path(path)
    if target.parent.resolve() == sessions_dir(environ).resolve():
        try:
            target.unlink()
        except FileNotFoundError:
            pass


def program_questions(pb: Playbook, parameter: str | None = None) -> list[str]:
    """The questions whose answer is what a probe runs (its ``parameter``, or any program-naming one):
    ``--workload`` answers those of ``workload``; the answers template leaves them for the user."""
    from wizard.playbook.trust import program_uses

    found: dict[str, None] = {}  # in order, once each
    for use in program_uses(pb, catalog()):
        for name, questions in use.from_answers.items():
            if parameter in (None, name):
                found.update(dict.fromkeys(questions))
    return list(found)


def workload_questions(pb: Playbook) -> list[str]:
    """The questions whose answer is a probe's ``workload``: what ``--workload`` answers."""
    return program_questions(pb, "workload")


# -- one probe ------------------------------------------------------------------------------------


def list_probes() -> dict[str, ProbeInfo]:
    """Every registered probe's declaration: summary, parameters, facts, what it runs."""
    return catalog()


def probe_params(name: str, pairs: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` texts (a command line's ``--param``) as the typed parameters of probe ``name``;
    a key given twice builds a list where the parameter takes one. Raises UsageError naming the probe's
    parameters and the type expected."""
    spec = _probe_info(name)
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {pair!r}: expected KEY=VALUE")
        param = _param(spec, key)
        value = _coerce(param, text, name)
        if key in out and param.type in ("list[str]", "paths"):
            previous = out[key] if isinstance(out[key], list) else [out[key]]
            out[key] = [*previous, *(value if isinstance(value, list) else [value])]
        elif key in out:
            raise UsageError(f"--param {key}: given twice; probe {name} takes one {param.type}")
        else:
            out[key] = value
    return out


def run_probe(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    options: Options | None = None,
    timeout: float = 600.0,
    system: System | None = None,
) -> Transcript:
    """Run one registered probe, as a one-entry transcript that ``warpwizard compare`` merges with
    other machines' (the host's GPUs, as CUDA_VISIBLE_DEVICES narrows them, and driver from NVML).

    ``params`` are yours (like a command line): a probe's own opt-ins still apply (``command.run``
    needs ``allow_commands``). Raises UsageError for an unknown probe or parameter, or a value of the
    wrong type; a probe that ran and failed is the entry's status, not an exception."""
    from wizard.cluster import launcher_place
    from wizard.probes.env import visible_gpus

    spec = _probe_info(name)
    if params is not None and not isinstance(params, Mapping):
        raise UsageError(
            f"probe {name}: params must be a mapping of parameter name to value, not {type(params).__name__}"
        )
    given = dict(params or {})
    for key, value in given.items():
        param = _param(spec, key)
        if not PARAM_TYPES[param.type](value):
            raise UsageError(f"probe {name}: parameter {key} takes a {param.type}, not {type(value).__name__}")
    missing = [p.name for p in spec.params if p.required and p.name not in given]
    if missing:
        noun = verb(len(missing), "parameter", "parameters")
        raise UsageError(f"probe {name}: missing required {noun}: {', '.join(missing)}")
    full = with_defaults(spec.params, given)
    system = system or System()
    env = Environment(system, (options or Options()).settings(system))
    clock = env.system.clock
    transcript = Transcript.begin(
        {"id": f"probe:{name}", "title": f"warpwizard probe {name}", "version": "1"}, clock.now()
    )
    started = clock.monotonic()
    entry = TranscriptEntry(
        node=name, kind="probe", step=None, started=clock.now().isoformat(), duration_s=0.0, probe=name
    )
    result = _run_probe(registered_probes()[name], full, env, timeout)
    entry.inputs = full
    entry.record(result)
    entry.duration_s = round(clock.monotonic() - started, 6)
    transcript.entries.append(entry)
    gpus, driver = visible_gpus(env)
    transcript.host.update(gpus=gpus, driver=driver, **launcher_place(env.system.environ))
    transcript.finish(clock.now(), {})
    return transcript


def _probe_info(name: str) -> ProbeInfo:
    known = catalog()
    if name not in known:
        raise UsageError(f"unknown probe {name!r}; registered: {', '.join(sorted(known))}")
    return known[name]


def _param(spec: ProbeInfo, key: str) -> ParamSpec:
    param = spec.param(key)
    if param is None:
        names = ", ".join(p.name for p in spec.params) or "none"
        raise UsageError(f"probe {spec.name} has no parameter {key!r}; its parameters: {names}")
    return param


def _coerce(param: ParamSpec, text: str, probe: str) -> Any:
    """A command line's text as the parameter's type."""
    kind = param.type
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            flag = yes_no(text)
            if flag is None:
                raise ValueError(text)
            return flag
    except ValueError:
        raise UsageError(f"--param {param.name}={text!r}: probe {probe} expects a {kind}") from None
    if kind == "list[str]":
        return [text]
    return text


def playbook_names(playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names of the playbooks on the search path, none loaded (where a health check can continue)."""
    from wizard.playbook.discovery import list_playbooks

    return frozenset(found.name for found in list_playbooks(list(playbook_dirs), environ))


def completion_names(
    kind: str,
    playbook_dirs: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    playbook: str | None = None,
) -> list[str]:
    """What shell completion offers for ``kind`` (playbooks, probes, nodes, examples): this
    installation's names, the search path's playbooks included; nodes only of ``playbook`` (the one on
    the command line, by name or path) when given. Never raises on a playbook that does not load:
    completion runs while someone types."""
    if kind == "probes":
        return sorted(catalog())
    if kind == "examples":
        from wizard.examples import list_examples

        return [e.name for e in list_examples()]
    from wizard.playbook.discovery import list_playbooks
    from wizard.playbook.loader import load_playbook as _load

    found = list_playbooks(list(playbook_dirs), environ)
    if kind == "playbooks":
        return sorted({f.name for f in found})
    probes, ids = catalog(), set()
    if playbook:
        named = [f.path for f in found if f.name == playbook] or [Path(playbook)]
        found = [f for f in found if f.path in named]
        if not found and Path(playbook).is_file():
            try:
                return sorted(_load(Path(playbook), probes).nodes)
            except (PlaybookError, PlaybookNotFound, OSError):
                return []
    for f in found:
        try:
            ids |= set(_load(f.path, probes).nodes)
        except (PlaybookError, PlaybookNotFound, OSError):
            continue
    return sorted(ids)
