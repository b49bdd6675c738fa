"""Sessions: the answers an interrupted run leaves (in the user's state directory, or beside ``record``), found
again by ``resume`` and removed once a resumed run reaches its conclusion."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wizard.api import PathLike
from wizard.errors import OutputFileError, UsageError
from wizard.playbook.model import Playbook
from wizard.runs.answers import absolute_paths, answers_text
from wizard.system import System


def resumed_file(
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


def sessions_dir(environ: Mapping[str, str]) -> Path:
    """Where interrupted runs leave their answers: the user's state directory, never where they stand."""
    from wizard.workspace import state_root

    return state_root(environ) / "sessions"


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
