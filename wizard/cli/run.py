"""``warpwizard run``: the library's one run (``wizard.runs.run_playbook``) with a terminal around it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.exit_status import ExitStatus
from wizard.options import Options
from wizard.serialize import dumps
from wizard.system import System
from wizard.untrusted import rich_text

if TYPE_CHECKING:
    from wizard.engine.answers import AnswerSource
    from wizard.engine.plan import Plan
    from wizard.engine.transcript import Transcript
    from wizard.playbook.model import Playbook


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

# The library's names for what the command line calls by its flags (wizard.runs speaks its own terms).
FLAGS = {
    "answers": "--answers",
    "sets": "--set",
    "defaults": "--defaults",
    "resume": "--resume",
    "from_node": "--from",
    "from_step": "--from-step",
}


def _flag(name: str) -> str:
    return FLAGS.get(name, f"--{name.replace('_', '-')}")


def run_playbook(opts: RunOptions, system: System, ui: Any, out: Any, stdout: Any) -> ExitStatus:
    from wizard.runs import run_playbook as run
    from wizard.ui.render import TerminalObserver, conclusion_panel, playbook_heading

    observer = TerminalObserver(ui, teach=opts.teach)
    later: list[str] = []

    def notify(kind: str, text: str) -> None:
        if kind == "workspace":
            later.append(text)  # after the conclusion
        else:
            ui.print(rich_text(text, "dim"))

    def answer_source(pb: Playbook, values: dict[str, Any], origins: dict[str, str]) -> AnswerSource:
        """At a terminal, a person answers the rest (and confirms a saved program before it runs);
        --defaults, --json or answers from a file with no terminal: no prompts."""
        from wizard.runs import scripted_answers
        from wizard.ui.prompts import InteractiveAnswers

        source: AnswerSource
        if opts.defaults or opts.json_out or ((opts.answers_file or opts.resume) and not system.interactive):
            source = scripted_answers(values, origins, defaults=opts.defaults)
        else:
            source = InteractiveAnswers(values, origins=origins, console=ui, interactive=system.interactive)
        if opts.teach or getattr(source, "interactive", False):
            ui.print(playbook_heading(pb, teach=opts.teach))
        return source

    common: dict[str, Any] = {
        "defaults": opts.defaults,
        "options": opts.options,
        "system": system,
        "sets": opts.sets,
        "resume": opts.resume,
        "playbook_dirs": opts.playbook_dirs,
        "notify": notify,
        "spell": _flag,
    }
    if opts.dry_run:
        plan = run(opts.playbook, opts.answers_file, dry_run=True, **common)
        return _show_plan(plan, opts, out=out, stdout=stdout)
    try:
        transcript = run(
            opts.playbook,
            opts.answers_file,
            record=opts.record,
            report=opts.report,
            force=opts.force,
            from_node=opts.from_node,
            from_step=opts.from_step,
            answer_source=answer_source,
            observer=observer,
            continue_with=_continue_with,
            **common,
        )
    finally:
        observer.close()
    if opts.json_out:
        stdout.write(dumps(transcript.to_dict()) + "\n")
    elif transcript.conclusion is not None:
        out.print(conclusion_panel(transcript))
        if opts.report:
            out.print(rich_text(f"report written to {opts.report}", "dim"))
    for text in later:
        ui.print(rich_text(text, "dim"))
    return _gate(opts, transcript)


def _continue_with(playbook_id: str) -> str:
    return f"continue with: warpwizard run {playbook_id} --resume"


def _save_interrupted(
    opts: RunOptions, pb: Playbook, answers: dict[str, Any], system: System
) -> tuple[str | None, str, str | None]:
    """What a Ctrl-C leaves, as the command line says it: where the answers went (the library's rule),
    why nowhere, and the command that continues (none when they went to --record's file)."""
    from wizard.runs import run_inputs, save_interrupted

    inputs = [p for p in (opts.answers_file, pb.path) if p and p != "-"] + run_inputs(opts.options, answers.values())
    saved, note = save_interrupted(pb, answers, system, record=opts.record, inputs=inputs)
    return saved, note, _continue_with(pb.id) if saved and not opts.record else None


def _show_plan(plan: Plan, opts: RunOptions, *, out: Any, stdout: Any) -> ExitStatus:
    """--dry-run: the plan, printed or as JSON; no probe runs, no file is written."""
    if opts.json_out:
        stdout.write(dumps(plan.to_dict()) + "\n")
        return ExitStatus.OK
    from wizard.ui.render import plan_lines

    for line in plan_lines(plan):
        out.print(rich_text(line))
    return ExitStatus.OK


def _gate(opts: RunOptions, transcript: Transcript) -> ExitStatus:
    """--fail-on: exit 1 when the diagnosis is at least as severe as asked (for CI)."""
    severity = transcript.conclusion.severity if transcript.conclusion is not None else None
    if opts.fail_on and SEVERITY_RANK.get(severity or "", -1) >= SEVERITY_RANK[opts.fail_on]:
        return ExitStatus.FINDINGS
    return ExitStatus.OK
