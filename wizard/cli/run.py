"""``warpwizard run``: the library's one run (``wizard.runs.run_playbook``) with a terminal around it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from wizard.exit_status import ExitStatus
from wizard.options import Options
from wizard.schemas import TRANSCRIPT
from wizard.untrusted import rich_text

if TYPE_CHECKING:
    from wizard.engine.answers import AnswerSource
    from wizard.engine.plan import Plan
    from wizard.engine.transcript import Transcript
    from wizard.playbook.model import Playbook
    from wizard.system import System


def _arg(help: str, *, flag: str | None = None, metavar: str | None = None, **kind: Any) -> dict[str, Any]:
    """A field's command-line declaration: wizard/cli/parser.py builds ``run``'s arguments from these."""
    return {"help": help, "flag": flag, "metavar": metavar, "kind": kind}


@dataclass
class RunOptions:
    """``warpwizard run``'s options, declared once: each field's metadata is its argument (parser.py builds
    them), its name the library's (``wizard.run_playbook``'s keyword, which ``_flag`` spells as the flag)."""

    playbook: str = field(metadata={"help": "playbook name (see 'list') or path to a .yaml file", "positional": True})
    answers: str | None = field(
        default=None, metadata=_arg("answers (YAML/JSON, '-' for stdin): no prompts", metavar="FILE")
    )
    sets: list[str] = field(
        default_factory=list,
        metadata=_arg("answer one question", flag="--set", metavar="QUESTION=VALUE", action="append", default=[]),
    )
    defaults: bool = field(
        default=False,
        metadata=_arg("take each unanswered question's default (no prompts)", action="store_true"),
    )
    record: str | None = field(
        default=None, metadata=_arg("write the answers given, to replay with --answers", metavar="FILE")
    )
    json_out: bool = field(
        default=False,
        metadata=_arg(f"print the transcript as JSON (schema {TRANSCRIPT})", flag="--json", action="store_true"),
    )
    report: str | None = field(default=None, metadata={"shared": "report"})  # parser.py's one --report
    force: bool = field(
        default=False, metadata=_arg("replace --report and --record files that exist", action="store_true")
    )
    teach: bool = field(default=False, metadata=_arg("explain every step and node as you go", action="store_true"))
    resume: bool = field(
        default=False,
        metadata=_arg(
            "continue the last interrupted session of this playbook (saved on Ctrl-C, SIGTERM, SIGHUP)",
            action="store_true",
        ),
    )
    from_node: str | None = field(
        default=None,
        metadata=_arg(
            "rerun from NODE, reusing the earlier probes' results of the --json transcript given as --answers",
            flag="--from",
            metavar="NODE",
            group="start",
        ),
    )
    from_step: int | None = field(
        default=None,
        metadata=_arg("like --from, from the first node of step N", metavar="N", type=int, group="start"),
    )
    dry_run: bool = field(
        default=False,
        metadata=_arg(
            "print the path the answers take, every probe and program it would run; run nothing",
            action="store_true",
        ),
    )
    fail_on: str | None = field(  # warning | error: exit 1 when the diagnosis is at least that severe
        default=None,
        metadata=_arg(
            "exit 1 when the diagnosis is at least this severe: warning or error (for CI)",
            metavar="SEVERITY",
            choices=("warning", "error"),
        ),
    )
    options: Options = field(default_factory=Options)  # what probes may do, where they write (Options' own)
    playbook_dirs: list[str] = field(default_factory=list)  # the global --playbook-dir

    @classmethod
    def parsed(cls, args: Any, *, options: Options, playbook_dirs: list[str]) -> RunOptions:
        """The options a parsed ``run`` command line holds (its arguments are these fields)."""
        given = {f.name: getattr(args, f.name) for f in fields(cls) if f.name not in ("options", "playbook_dirs")}
        return cls(**given, options=options, playbook_dirs=playbook_dirs)


def flag_of(name: str) -> str:
    """The flag a field of RunOptions or Options declares: ``--set`` for ``sets``, ``--from`` for ``from_node``."""
    for spec in (*fields(RunOptions), *fields(Options)):
        if spec.name == name:
            return spec.metadata.get("flag") or "--" + name.replace("_", "-")
    return "--" + name.replace("_", "-")


_flag = flag_of  # what the library's ``spell=`` gets: its keyword names, as this command line spells them


def run_command(opts: RunOptions, system: System, ui: Any, out: Any, stdout: Any) -> ExitStatus:
    """``warpwizard run``: the library's run, with prompts, live progress, the conclusion's panel and --fail-on."""
    from wizard.runs import run_playbook as run
    from wizard.ui.render import TerminalObserver, conclusion_panel

    observer = TerminalObserver(ui, teach=opts.teach, progress=system.progress)
    later: list[str] = []

    def notify(kind: str, text: str) -> None:
        if kind == "workspace":
            later.append(text)  # after the conclusion
        else:
            ui.print(rich_text(f"note: {text}" if kind == "shadowed" else text, "dim"))

    def answer_source(pb: Playbook, values: dict[str, Any], origins: dict[str, str]) -> AnswerSource:
        """At a terminal, a person answers the rest (and confirms a saved program before it runs);
        --defaults, --json or answers from a file with no terminal: no prompts."""
        from wizard.runs import scripted_answers
        from wizard.ui.prompts import InteractiveAnswers

        source: AnswerSource
        if opts.defaults or opts.json_out or ((opts.answers or opts.resume) and not system.interactive):
            source = scripted_answers(values, origins, defaults=opts.defaults, spell=_flag)
        else:
            source = InteractiveAnswers(
                values, origins=origins, console=ui, interactive=system.interactive, ask_workload=not opts.answers
            )
        if opts.teach or getattr(source, "interactive", False):
            observer.heading(pb)
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
        plan = run(opts.playbook, opts.answers, dry_run=True, **common)
        return _show_plan(plan, opts, out=out, stdout=stdout)
    try:
        transcript = run(
            opts.playbook,
            opts.answers,
            record=opts.record,
            report=opts.report,
            force=opts.force,
            from_node=opts.from_node,
            from_step=opts.from_step,
            answer_source=answer_source,
            observer=observer,
            continue_with=lambda playbook_id: _continue_with(playbook_id, teach=opts.teach),
            **common,
        )
    finally:
        observer.close()
    if opts.json_out:
        from wizard.serialize import dumps

        stdout.write(dumps(transcript.to_dict()) + "\n")
    elif transcript.conclusion is not None:
        c = transcript.conclusion
        observer.define(c.summary, *c.evidence, *c.fix)  # --teach: the diagnosis's new words, before it
        out.print(conclusion_panel(transcript, observer.shown_evidence))
        if opts.report:
            out.print(rich_text(f"report written to {opts.report}", "dim"))
        for line in also_found(opts, transcript):
            out.print(rich_text(line))
    for text in later:
        ui.print(rich_text(text, "dim"))
    return _gate(opts, transcript)


def also_found(opts: RunOptions, transcript: Transcript) -> list[str]:
    """After a chained run, the other playbooks its conclusions named as worth running, with the command
    that runs each on the same answers."""
    import shlex

    given = opts.answers if isinstance(opts.answers, str) and opts.answers != "-" else None
    again = opts.record or given
    tail = f" --answers {shlex.quote(str(again))}" if again else ""
    dirs = "".join(f" --playbook-dir {shlex.quote(d)}" for d in opts.playbook_dirs)
    return [
        f"also found: {name} → warpwizard run {name}{tail}{dirs}" for link in transcript.chain for name in link.also
    ]


def _continue_with(playbook_id: str, *, teach: bool = False) -> str:
    """The command that resumes an interrupted run; a guided (--teach) run resumes guided."""
    return f"continue with: warpwizard run {playbook_id} --resume" + (" --teach" if teach else "")


def _show_plan(plan: Plan, opts: RunOptions, *, out: Any, stdout: Any) -> ExitStatus:
    """--dry-run: the plan, printed or as JSON; no probe runs, no file is written."""
    if opts.json_out:
        from wizard.serialize import dumps

        stdout.write(dumps(plan.to_dict()) + "\n")
        return ExitStatus.OK
    from wizard.ui.render import plan_lines

    for line in plan_lines(plan):
        out.print(rich_text(line))
    return ExitStatus.OK


def _gate(opts: RunOptions, transcript: Transcript) -> ExitStatus:
    """--fail-on: exit 1 when the diagnosis is at least as severe as asked (for CI)."""
    if opts.fail_on and transcript.at_least(opts.fail_on):
        return ExitStatus.FINDINGS
    return ExitStatus.OK
