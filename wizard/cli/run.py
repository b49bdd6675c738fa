"""``warpwizard run``: the library's one run (``wizard.runs.run_playbook``) with a terminal around it. Its options
are ``wizard.run_request.RunRequest``'s fields (declared there, built into the grammar by parser.py); this module
gathers what the terminal adds (prompts, live progress, the run's notes), then says the outcome and judges
``--fail-on``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wizard.exit_status import ExitStatus
from wizard.run_request import RunRequest, flag_of
from wizard.untrusted import rich_text

if TYPE_CHECKING:
    from wizard.engine.answers import Answer, AnswerSource
    from wizard.engine.plan import Plan
    from wizard.engine.transcript import Transcript
    from wizard.playbook.model import Playbook
    from wizard.system import System


def run_command(playbook: str, request: RunRequest, system: System, *, ui: Any, out: Any, stdout: Any) -> ExitStatus:
    """``warpwizard run``: the library's run (or dry run), with prompts, live progress, the conclusion's panel and
    ``--fail-on``."""
    terminal = _Terminal(request, system, ui)
    if request.dry_run:
        from wizard.runs import plan_playbook

        plan = plan_playbook(playbook, request, system=system, notify=terminal.notify, spell=flag_of)
        return _show_plan(plan, request, out=out, stdout=stdout)
    from wizard.runs import run_playbook

    try:
        transcript = run_playbook(
            playbook,
            request,
            system=system,
            observer=terminal.observer,
            answer_source=terminal.answer_source,
            notify=terminal.notify,
            spell=flag_of,
            continue_with=lambda playbook_id: _continue_with(playbook_id, teach=request.teach),
        )
    finally:
        terminal.observer.close()
    _show_transcript(transcript, request, terminal, out=out, stdout=stdout)
    for text in terminal.later:
        ui.print(rich_text(text, "dim"))
    return _gate(request, transcript)


class _Terminal:
    """The terminal around one run: the live observer, the prompts (or none), and the notes the run sends."""

    def __init__(self, request: RunRequest, system: System, ui: Any) -> None:
        from wizard.ui.render import TerminalObserver

        self.request, self.system, self.ui = request, system, ui
        self.observer = TerminalObserver(ui, teach=request.teach, progress=system.progress)
        self.later: list[str] = []  # where probes wrote: said after the conclusion

    def notify(self, kind: str, text: str) -> None:
        if kind == "workspace":
            self.later.append(text)
        else:
            self.ui.print(rich_text(f"note: {text}" if kind == "shadowed" else text, "dim"))

    def answer_source(self, pb: Playbook, given: dict[str, Answer]) -> AnswerSource:
        """At a terminal, a person answers the rest (and confirms a saved program before it runs);
        --defaults, --json or answers from a file with no terminal: no prompts."""
        from wizard.runs import scripted_answers
        from wizard.ui.prompts import InteractiveAnswers

        request, system = self.request, self.system
        source: AnswerSource
        if _scripted(request, interactive=system.interactive):
            source = scripted_answers(given, defaults=request.defaults, spell=flag_of)
        else:
            source = InteractiveAnswers(
                given,
                console=self.ui,
                interactive=system.interactive,
                ask_workload=not request.answers,
                came_from=_came_from(request),
            )
        if request.teach or getattr(source, "interactive", False):
            self.observer.heading(pb)
        return source


def _scripted(request: RunRequest, *, interactive: bool) -> bool:
    """Whether nobody is asked: --defaults, --json, or answers (a file, a session) with no terminal."""
    return request.defaults or request.json_out or (bool(request.answers or request.resume) and not interactive)


def _show_transcript(
    transcript: Transcript, request: RunRequest, terminal: _Terminal, *, out: Any, stdout: Any
) -> None:
    """The outcome: the transcript as JSON, or the conclusion's panel, where the report went and what else the
    chained run found."""
    if request.json_out:
        from wizard.serialize import dumps

        stdout.write(dumps(transcript.to_dict()) + "\n")
        return
    if transcript.conclusion is None:
        return
    from wizard.ui.render import conclusion_panel

    c, observer = transcript.conclusion, terminal.observer
    observer.define(c.summary, *c.evidence, *c.fix)  # --teach: the diagnosis's new words, before it
    out.print(conclusion_panel(transcript, observer.shown_evidence))
    if request.report:
        out.print(rich_text(f"report written to {request.report}", "dim"))
    for line in also_found(request, transcript):
        out.print(rich_text(line))


def also_found(request: RunRequest, transcript: Transcript) -> list[str]:
    """After a chained run, the other playbooks its conclusions named as worth running, with the command
    that runs each on the same answers."""
    import shlex

    given = request.answers if isinstance(request.answers, str) and request.answers != "-" else None
    again = request.record or given
    tail = f" --answers {shlex.quote(str(again))}" if again else ""
    dirs = "".join(f" --playbook-dir {shlex.quote(d)}" for d in request.playbook_dirs)
    return [
        f"also found: {name} → warpwizard run {name}{tail}{dirs}" for link in transcript.chain for name in link.also
    ]


def _came_from(request: RunRequest) -> str:
    """Where the answers a run did not ask for came from, as the line that shows each one says it."""
    if request.resume:
        return "reused: answered before the interruption, kept in the saved session"
    if request.answers == "-":
        return "from the answers read on stdin"
    if isinstance(request.answers, str):
        return f"from the answers file {request.answers}"
    return "given in a file"


def _continue_with(playbook_id: str, *, teach: bool = False) -> str:
    """The command that resumes an interrupted run; a guided (--teach) run resumes guided."""
    return f"continue with: warpwizard run {playbook_id} --resume" + (" --teach" if teach else "")


def _show_plan(plan: Plan, request: RunRequest, *, out: Any, stdout: Any) -> ExitStatus:
    """--dry-run: the plan, printed or as JSON; no probe runs, no file is written."""
    if request.json_out:
        from wizard.serialize import dumps

        stdout.write(dumps(plan.to_dict()) + "\n")
        return ExitStatus.OK
    from wizard.ui.render import plan_lines

    for line in plan_lines(plan):
        out.print(rich_text(line))
    return ExitStatus.OK


def _gate(request: RunRequest, transcript: Transcript) -> ExitStatus:
    """--fail-on: exit 1 when the diagnosis is at least as severe as asked (for CI)."""
    if request.fail_on and transcript.at_least(request.fail_on):
        return ExitStatus.FINDINGS
    return ExitStatus.OK
