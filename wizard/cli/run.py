"""``warpwizard run``: wire answers, probes, environment and terminal to the engine."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.engine.answers import (
    MappingAnswers,
    MissingAnswer,
    check_answers,
    dump_answers,
    load_answers_file,
    parse_set_options,
)
from wizard.engine.engine import Engine
from wizard.environment import Environment, Workload
from wizard.errors import AnswersError, Interrupted, UsageError
from wizard.exit_status import ExitStatus
from wizard.playbook.model import Playbook, QuestionNode


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
    workload: str | None = None
    python: str | None = None
    report_dir: str = "warpwizard-report"
    compare: list[str] = field(default_factory=list)
    compare_pythons: list[str] = field(default_factory=list)
    allow_commands: bool = False
    allow_sanitizer: bool = False
    playbook_dirs: list[str] = field(default_factory=list)


def _missing_message(pb: Playbook, missing: QuestionNode, answered: set[str]) -> str:
    """Name the missing question, and the unanswered ones that may follow it."""
    later: list[str] = []
    seen = {missing.id}
    stack = [missing.id]
    while stack:
        node = pb.nodes[stack.pop()]
        for target in pb.successors(node):
            if target in seen:
                continue
            seen.add(target)
            stack.append(target)
            t = pb.nodes[target]
            if isinstance(t, QuestionNode) and t.id not in answered:
                later.append(t.id)
    default = f" (default: {missing.default!r})" if missing.default is not None else ""
    text = f"missing answer for question {missing.id!r}{default}"
    if later:
        text += f"; depending on the answers, these may follow: {', '.join(later)}"
    return text + "; give them in the answers file, with --set ID=VALUE, or use --defaults"


def run_playbook(opts: RunOptions, ui: Any, out: Any) -> ExitStatus:
    from wizard.playbook.discovery import load
    from wizard.probes.registry import builtin_probes, catalog
    from wizard.ui.render import TerminalObserver, conclusion_panel

    probes = builtin_probes()
    pb = load(opts.playbook, catalog(probes), opts.playbook_dirs)
    values: dict[str, Any] = {}
    if opts.answers_file:
        values.update(load_answers_file(opts.answers_file))
    values.update(parse_set_options(opts.sets))
    problems = check_answers(pb, values)
    if problems:
        raise AnswersError(problems)
    scripted = bool(opts.answers_file) or opts.defaults or opts.json_out
    if scripted:
        source: Any = MappingAnswers(values, use_defaults=opts.defaults)
    else:
        from wizard.ui.prompts import InteractiveAnswers

        source = InteractiveAnswers(values)
    python = opts.python or sys.executable
    workload = None
    if opts.workload:
        try:
            workload = Workload.parse(opts.workload, python)
        except ValueError as exc:
            raise UsageError(f"--workload: {exc}") from None
    env = Environment(
        python=python,
        report_dir=Path(opts.report_dir),
        workload=workload,
        allow_commands=opts.allow_commands,
        allow_sanitizer=opts.allow_sanitizer,
        compare_reports=list(opts.compare),
        compare_pythons=list(opts.compare_pythons),
    )
    given: dict[str, Any] = {}
    observer = TerminalObserver(ui, teach=opts.teach)
    engine = Engine(pb, source, probes, env, observer=observer, on_answer=given.__setitem__)
    if opts.teach or not scripted:
        ui.print(f"[bold]{pb.title}[/]  [dim]({pb.id} v{pb.version})[/]")
        if opts.teach and pb.description:
            ui.print(pb.description.strip())
    try:
        transcript = engine.run()
    except KeyboardInterrupt:
        target: str | None = opts.record or f"warpwizard-answers-{pb.id}.yaml"
        try:
            Path(str(target)).write_text(dump_answers(given, pb.id), encoding="utf-8")
        except OSError:
            target = None  # could not save; say so rather than name a file that is not there
        raise Interrupted(target) from None
    except MissingAnswer as exc:
        raise AnswersError([_missing_message(pb, exc.question, set(given) | set(values))]) from None
    finally:
        observer.close()
    if opts.record:
        Path(opts.record).write_text(dump_answers(transcript.answers, pb.id), encoding="utf-8")
    if opts.report:
        from wizard.report.markdown import transcript_markdown

        Path(opts.report).write_text(transcript_markdown(transcript), encoding="utf-8")
    if opts.json_out:
        print(json.dumps(transcript.to_dict(), indent=1, default=str))
    elif transcript.conclusion is not None:
        out.print(conclusion_panel(transcript))
        if opts.report:
            out.print(f"[dim]report written to {opts.report}[/]")
    return ExitStatus.OK
