"""What a run (or a dry run) starts from, gathered before anything runs: the request (a ``RunRequest``, answers
alone, or the deprecated keywords), the playbook, the answers file read (a resumed session's too), and the
answers given, each with its origin, checked against every playbook the run may continue into."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wizard.api import PathLike
from wizard.engine.answers import ORIGIN_FILE, Answer, answers_of, values_of
from wizard.playbook.model import Playbook
from wizard.run_request import RunRequest, check_request
from wizard.runs.answers import check_given, given_answers
from wizard.runs.catalogue import shadowed_fragment_notes, shadowed_notes
from wizard.runs.playbooks import chain_of, continued_ids, named_by_id, named_path, the_playbook
from wizard.runs.sessions import resumed_file
from wizard.system import System

Notify = Callable[[str, str], None]  # notify(kind, text): what the run decided (resumed, rerun), where it wrote
Spell = Callable[[str], str]  # a RunRequest field's name as the caller knows it: ``sets=``, or ``--set``


def quiet(kind: str, text: str) -> None:
    """The library's ``notify``: nobody listens."""


def keyword(name: str) -> str:
    """The library's ``spell``: a field as a Python caller writes it."""
    return f"{name}="


def as_request(
    request: RunRequest | Mapping[str, Any] | PathLike | None, keywords: Mapping[str, Any], spell: Spell
) -> RunRequest:
    """The request a call makes: a RunRequest, or answers alone (a mapping or an answers file, the short form);
    ``keywords`` are today's keyword form (deprecated), folded in. Checked (``check_request``)."""
    asked = request if isinstance(request, RunRequest) else RunRequest(answers=request)
    if keywords:
        asked = _from_keywords(asked, keywords)
    return check_request(asked, spell)


def _from_keywords(request: RunRequest, keywords: Mapping[str, Any]) -> RunRequest:
    """``run_playbook(pb, answers, sets=..., resume=True)``, kept for one release: each keyword is the
    RunRequest field of its name (no second copy of the signature), with a DeprecationWarning at the caller."""
    names = {spec.name for spec in dataclasses.fields(RunRequest)}
    unknown = sorted(set(keywords) - names)
    if unknown:
        raise TypeError(f"run_playbook() got an unexpected keyword argument {unknown[0]!r}")
    given = {name: value for name, value in keywords.items() if not (name == "options" and value is None)}
    warnings.warn(
        f"run_playbook's keywords ({', '.join(sorted(keywords))}) are deprecated: "
        "pass wizard.RunRequest(...) with those fields as its second argument",
        DeprecationWarning,
        stacklevel=4,  # this function, as_request, run_playbook, then its caller
    )
    return dataclasses.replace(request, **given)


@dataclass(frozen=True, slots=True)
class Start:
    """The playbook a run walks, the answers file it reads (None: none, or a mapping), and the answers given."""

    playbook: Playbook
    answers_file: str | None
    given: dict[str, Answer]


def gather(playbook: Playbook | PathLike, request: RunRequest, system: System, notify: Notify, spell: Spell) -> Start:
    """Everything a run starts from, read and checked before any probe runs: the playbook, the answers (a file or
    a resumed session, ``workload``, ``sets``, then the caller's mapping), each with its origin."""
    pb = the_playbook(playbook, request.playbook_dirs, system.environ)
    answers = request.answers
    mapping = dict(answers) if isinstance(answers, Mapping) else {}
    answers_file = None if answers is None or isinstance(answers, Mapping) else named_path(answers, "answers")
    if request.resume:
        answers_file = resumed_file(pb, answers_file, system, notify, spell)
    whole = chain_of(pb, request.playbook_dirs, system.environ)  # every playbook it may continue into
    _note_shadowed(playbook, pb, whole, request=request, system=system, notify=notify)
    given = given_answers(
        whole,
        answers_file=answers_file,
        sets=request.sets,
        workload=request.options.workload,
        stdin=system.stdin,
        nofollow=request.resume,  # a session file is opened only if it is the user's own regular file
        spell=spell,
    )
    given.update(answers_of(mapping, ORIGIN_FILE))  # answers passed in Python are data, as if from a file
    check_given(whole, values_of(given))
    return Start(pb, answers_file, given)


def _note_shadowed(
    playbook: object, pb: Playbook, whole: Playbook, *, request: RunRequest, system: System, notify: Notify
) -> None:
    """Say which playbook (walked by id) or fragment a file on the search path takes from the shipped one."""
    dirs, environ = request.playbook_dirs, system.environ
    walked_by_id = [pb.id] if named_by_id(playbook) else []
    walked_by_id += continued_ids(pb, dirs, environ)
    for line in shadowed_notes(walked_by_id, dirs, environ) + shadowed_fragment_notes(whole):
        notify("shadowed", line)
