"""The answers a run is given, each one record (value and origin): from an answers file (its relative paths taken
from where it is), ``workload``, ``sets``, the caller's mapping; checked before anything runs; the source that
answers with them; the answers file a run writes and the template ``warpwizard answers`` prints."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wizard.engine.answers import (
    ORIGIN_COMMAND_LINE,
    ORIGIN_FILE,
    Answer,
    AnswerSource,
    MappingAnswers,
    answers_of,
    check_answers,
    load_answers_file,
)
from wizard.errors import AnswersError
from wizard.playbook.model import Playbook
from wizard.runs.playbooks import chain_of, playbook_loader, program_questions, workload_questions


def given_answers(
    pb: Playbook,
    *,
    answers_file: str | None = None,
    sets: Sequence[str] = (),
    workload: str | None = None,
    stdin: Any = None,
    nofollow: bool = False,
    spell: Callable[[str], str] = str,
) -> dict[str, Answer]:
    """The answers a command line gives, each with where it came from: the file (its relative paths taken
    from where the file is), ``--workload`` for the questions it answers, then ``--set`` (which wins)."""
    from wizard.engine.answers import parse_set_options

    given: dict[str, Answer] = {}
    if answers_file:
        loaded = load_answers_file(answers_file, stdin, nofollow=nofollow)
        base = os.getcwd() if answers_file == "-" else os.path.dirname(os.path.abspath(answers_file))
        given.update(answers_of(absolute_paths(pb, loaded, base), ORIGIN_FILE))
    for question in workload_questions(pb) if workload else ():
        given[question] = Answer(workload, ORIGIN_COMMAND_LINE)
    given.update(answers_of(parse_set_options(list(sets), spell), ORIGIN_COMMAND_LINE))
    return given


def check_given(pb: Playbook, values: Mapping[str, Any]) -> None:
    """Every given answer checked before anything runs: AnswersError naming each unknown id or bad value."""
    problems = check_answers(pb, values)
    if problems:
        raise AnswersError(problems)


def scripted_answers(given: Mapping[str, Answer], *, defaults: bool, spell: Callable[[str], str] = str) -> AnswerSource:
    """Answers with nobody to ask: the given ones, then the defaults when ``defaults``."""
    return MappingAnswers.of(given, use_defaults=defaults, spell=spell)


def absolute_paths(pb: Playbook, answers: Mapping[str, Any], base: str | os.PathLike[str]) -> dict[str, Any]:
    """``answers`` with each relative answer to a path question made absolute against ``base``: an
    answers file's paths are relative to the file, and a saved session keeps working when moved."""
    kinds = {q.id: q.type for q in pb.questions()}
    out = dict(answers)
    for key, value in answers.items():
        if kinds.get(key) == "path" and isinstance(value, str) and value and not os.path.isabs(value):
            out[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    return out


def answers_text(answers: Mapping[str, Any], playbook_id: str) -> str:
    """An answers file that replays these answers (``--record``, saved sessions)."""
    from wizard.engine.answers import dump_answers

    return dump_answers(answers, playbook_id)


def answers_file_template(
    pb: Playbook, playbook_dirs: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> str:
    """A commented answers file to fill in (``warpwizard answers``): every question of the playbook and of
    the playbooks it may continue into, once each."""
    from wizard.engine.answers import answers_template, continued_steps
    from wizard.engine.chain import reachable_playbooks

    whole = chain_of(pb, playbook_dirs, environ)
    later = reachable_playbooks(pb, playbook_loader(playbook_dirs, environ))[1:] if pb.continuations() else []
    return answers_template(whole, frozenset(program_questions(whole)), continued_steps(pb, later))
