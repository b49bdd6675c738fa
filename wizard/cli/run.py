"""``warpwizard run``: wire answers, probes, environment and terminal to the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import Interrupted, OutputFileError, Terminated, TerminateSignal, UsageError
from wizard.exit_status import ExitStatus
from wizard.options import Options
from wizard.outputs import check_output, free_path, write_text
from wizard.runs import (
    answers_text,
    check_given,
    dry_run,
    end_session,
    given_answers,
    latest_session,
    load_playbook,
    prepare_run,
    reuse_from,
    run_inputs,
    save_session,
    scripted_answers,
    sessions_dir,
    walk,
)
from wizard.serialize import dumps
from wizard.system import System
from wizard.untrusted import rich_text

Playbook = Any  # wizard.playbook.model.Playbook: the CLI reaches playbooks only through wizard.runs


@dataclass
class RunOptions:
    playbook: str
    answers_file: str | None = None
    sets: list[str] = field(default_factory=list)
    defaults: bool = False
    record: str | None = None
    json_out: bool = False
    report: str | None = None
    teach: bool = False
    options: Options = field(default_factory=Options)  # what probes may do, where they write
    playbook_dirs: list[str] = field(default_factory=list)
    force: bool = False
    resume: bool = False
    fail_on: str | None = None  # warning | error: exit 1 when the diagnosis is at least that severe
    dry_run: bool = False
    from_node: str | None = None  # rerun from here, reusing the --answers transcript's earlier results
    from_step: int | None = None


SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def _resume(opts: RunOptions, pb: Playbook, system: System, ui: Any) -> None:
    """--resume: the last interrupted session of this playbook becomes the answers file."""
    if opts.answers_file:
        raise UsageError("--resume continues a saved session; give it or --answers, not both")
    found = latest_session(pb.id, system.environ)
    if found is None:
        where = sessions_dir(system.environ)
        raise UsageError(f"no interrupted session of {pb.id} to resume (sessions are saved in {where})")
    opts.answers_file = str(found)
    ui.print(rich_text(f"resuming from {found}", "dim"))


def _inputs(opts: RunOptions, pb: Playbook, answers: dict[str, Any]) -> list[str]:
    """What the run reads: answers file, playbook, and what the options and answers name (traces,
    reports, scripts): never replaced by --report or --record, even with --force."""
    files = [p for p in (opts.answers_file, pb.path) if p and p != "-"]
    return files + run_inputs(opts.options, answers.values())


def _preflight(opts: RunOptions, pb: Playbook, values: dict[str, Any]) -> None:
    """Refuse now, before any probe runs, an output that could not be written at the end."""
    if opts.report:
        from wizard.report.registry import format_for

        format_for(opts.report)  # an unknown suffix, or the html extra missing: said before anything runs
    for path, what in ((opts.record, "answers record"), (opts.report, "report")):
        if path:
            check_output(path, inputs=_inputs(opts, pb, values), force=opts.force, what=what)
    if opts.record and opts.report and Path(opts.record).resolve() == Path(opts.report).resolve():
        raise UsageError(f"--record and --report name the same file ({opts.report})")


def _save_interrupted(
    opts: RunOptions, pb: Playbook, answers: dict[str, Any], system: System
) -> tuple[str | None, str, str | None]:
    """Where the answers so far went (never over an existing file), why nowhere, and the command
    that continues: --record's name when given, else a session in the state directory."""
    if not answers:
        return None, "; no question was answered yet, so nothing was saved", None
    try:
        if opts.record:
            target = free_path(opts.record)  # an earlier run's file, or the user's own: write beside it
            write_text(target, answers_text(answers, pb.id), inputs=_inputs(opts, pb, answers), what="answers")
            return str(target), "", None
        saved = save_session(pb, answers, system.environ, system.clock.now())
    except OutputFileError as exc:
        return None, f"; the answers could not be saved ({exc})", None
    teach = " --teach" if opts.teach else ""  # a guided run resumes guided
    return str(saved), "", f"continue with: warpwizard run {pb.id} --resume{teach}"


def _write_outputs(opts: RunOptions, pb: Playbook, answers: dict[str, Any], transcript: Any) -> None:
    """--record and --report, never over what the run read (answers typed at the prompt included)."""
    inputs = _inputs(opts, pb, answers)
    if opts.record:
        text = answers_text(transcript.answers, pb.id)
        write_text(opts.record, text, inputs=inputs, force=opts.force, what="answers record")
    if opts.report:
        from wizard.report.registry import render_transcript

        text = render_transcript(transcript, Path(opts.report).suffix)
        write_text(opts.report, text, inputs=inputs, force=opts.force, what="report")


def _reuse(opts: RunOptions, pb: Playbook, ui: Any) -> Any:
    """--from NODE / --from-step N: the earlier probes' results from the --answers transcript."""
    if opts.from_node is None and opts.from_step is None:
        return None
    if not opts.answers_file or opts.answers_file == "-":
        raise UsageError("--from and --from-step rerun a previous run: give its --json transcript with --answers FILE")
    reuse = reuse_from(pb, opts.answers_file, node=opts.from_node, step=opts.from_step)
    names = ", ".join(reuse.results) or "none"
    ui.print(rich_text(f"rerunning from {reuse.start}; reusing the recorded results of: {names}", "dim"))
    return reuse


def _source(opts: RunOptions, system: System, ui: Any, values: dict[str, Any], origins: dict[str, str]) -> Any:
    """Answers from the file and the command line; at a terminal, a person answers the rest (and
    confirms a saved program before it runs). --defaults, --json or no terminal: no prompts."""
    if opts.defaults or opts.json_out or (opts.answers_file and not system.interactive):
        return scripted_answers(values, origins, defaults=opts.defaults)
    from wizard.ui.prompts import InteractiveAnswers

    return InteractiveAnswers(values, origins=origins, console=ui, interactive=system.interactive)


def run_playbook(opts: RunOptions, system: System, ui: Any, out: Any, stdout: Any) -> ExitStatus:
    from wizard.ui.render import TerminalObserver, conclusion_panel, playbook_heading

    pb = load_playbook(opts.playbook, playbook_dirs=opts.playbook_dirs, environ=system.environ)
    if opts.resume:
        _resume(opts, pb, system, ui)
    resumed = opts.answers_file if opts.resume else None
    values, origins = given_answers(
        pb, answers_file=opts.answers_file, sets=opts.sets, workload=opts.options.workload, stdin=system.stdin
    )
    check_given(pb, values)
    if opts.dry_run:
        return _dry_run(opts, pb, values, origins, out=out, stdout=stdout)
    _preflight(opts, pb, values)
    source = _source(opts, system, ui, values, origins)
    observer = TerminalObserver(ui, teach=opts.teach)
    reuse = _reuse(opts, pb, ui)
    engine = prepare_run(pb, source, opts.options, system=system, observer=observer, reuse=reuse)
    if opts.teach or getattr(source, "interactive", False):
        ui.print(playbook_heading(pb, teach=opts.teach))
    try:
        transcript = walk(engine, values, "give them in the answers file or with --set ID=VALUE", "use --defaults")
    except KeyboardInterrupt as exc:
        saved, note, resume = _save_interrupted(opts, pb, engine.state.answers, system)
        if isinstance(exc, TerminateSignal):
            raise Terminated(saved, note, resume, exc.signum) from None
        raise Interrupted(saved, note, resume) from None
    finally:
        observer.close()
    if resumed:
        end_session(resumed, system.environ)
    _write_outputs(opts, pb, transcript.answers, transcript)
    if opts.json_out:
        stdout.write(dumps(transcript.to_dict()) + "\n")
    elif transcript.conclusion is not None:
        out.print(conclusion_panel(transcript))
        if opts.report:
            out.print(rich_text(f"report written to {opts.report}", "dim"))
    workspace = engine.env.settings.report_dir
    if workspace.is_dir():  # probes wrote there: say where (never in the current directory unasked)
        ui.print(rich_text(f"this run's files: {workspace}", "dim"))
    return _gate(opts, transcript)


def _dry_run(
    opts: RunOptions, pb: Playbook, values: dict[str, Any], origins: dict[str, str], *, out: Any, stdout: Any
) -> ExitStatus:
    """--dry-run: the plan, printed or as JSON; no probe runs, no file is written."""
    plan = dry_run(pb, values, origins, defaults=opts.defaults, allow_commands=opts.options.allow_commands)
    if opts.json_out:
        stdout.write(dumps(plan.to_dict()) + "\n")
        return ExitStatus.OK
    from wizard.ui.render import plan_lines

    for line in plan_lines(plan):
        out.print(rich_text(line))
    return ExitStatus.OK


def _gate(opts: RunOptions, transcript: Any) -> ExitStatus:
    """--fail-on: exit 1 when the diagnosis is at least as severe as asked (for CI)."""
    severity = transcript.conclusion.severity if transcript.conclusion is not None else None
    if opts.fail_on and SEVERITY_RANK.get(severity or "", -1) >= SEVERITY_RANK[opts.fail_on]:
        return ExitStatus.FINDINGS
    return ExitStatus.OK
