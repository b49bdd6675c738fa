"""The workspace: the private directory where probes write files they later run or read back.

``op.isolate`` writes a repro script and runs it; the profilers write traces that later steps
read. Whoever can change a file there between the write and the run runs code as the user, so a
workspace is used only when this user owns it, nobody else can write to it, and nobody else can
move it away: every directory above it belongs to the user or to root, and any of them that others
can write to is sticky (``/tmp``). A directory that fails is refused with one line saying why,
never "fixed" (it may be someone else's).

By default each run gets its own workspace under the user's state directory
(``$XDG_STATE_HOME/warpwizard/runs/TIME-HOST-PID``, or platformdirs' per-platform choice), so
nothing lands where the user stands, and concurrent runs or the ranks of a job (a home directory
shared over NFS) never share a ``repro.py``. ``--report-dir`` and ``WARPWIZARD_REPORT_DIR`` win.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from wizard.errors import OutputFileError

ENV_VARIABLE = "WARPWIZARD_REPORT_DIR"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def state_root(environ: Mapping[str, str]) -> Path:
    """Where warpwizard keeps what outlives a run: ``$XDG_STATE_HOME/warpwizard`` when that is an
    absolute path (the XDG rule), else the platform's user state directory."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "warpwizard"
    import platformdirs

    return Path(platformdirs.user_state_dir("warpwizard", appauthor=False))


def safe_name(text: str, fallback: str = "host") -> str:
    """``text`` as one path component that stays where it is put: no separator, no ``..``."""
    return _UNSAFE.sub("_", text).lstrip(".")[:64] or fallback


def default_workspace(environ: Mapping[str, str], now: _dt.datetime, host: str, pid: int) -> Path:
    """This run's own workspace under the state directory (created when first used)."""
    stamp = now.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return state_root(environ) / "runs" / f"{stamp}-{safe_name(host)}-{pid}"


def choose(given: str | os.PathLike[str] | None, environ: Mapping[str, str], now: _dt.datetime) -> Path:
    """The workspace a run uses: the one given, else ``WARPWIZARD_REPORT_DIR``, else its own."""
    import platform

    if given is not None and os.fspath(given):
        return Path(given)
    if environ.get(ENV_VARIABLE):
        return Path(environ[ENV_VARIABLE])
    return default_workspace(environ, now, platform.node(), os.getpid())


def _private_group(gid: int, me: int) -> bool:
    """A user private group (Debian's USERGROUPS_ENAB, umask 002): named after the user, no other
    members, so its write bit gives nobody else anything."""
    try:
        import grp
        import pwd

        group, user = grp.getgrgid(gid), pwd.getpwuid(me)
    except (ImportError, KeyError):
        return False
    return group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def _owner_problem(path: Path, info: os.stat_result, me: int, *, final: bool) -> str | None:
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    if info.st_uid != me and (final or info.st_uid != 0):
        return f"{path} belongs to another user (uid {info.st_uid}), who could change the files warpwizard runs"
    others_write = info.st_mode & stat.S_IWOTH
    if info.st_mode & stat.S_IWGRP and not _private_group(info.st_gid, me):
        others_write = True
    if others_write and final:
        return f"{path} can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
    if others_write and not info.st_mode & stat.S_ISVTX:
        return f"{path} (above it) can be written by other users and is not sticky, so they could replace it"
    return None


def problem(path: Path, *, exists: bool = True) -> str | None:
    """Why ``path`` (a resolved directory; with ``exists`` False, the existing directory a workspace
    would be created in) is no private workspace, or None."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # no POSIX owners (Windows): the user's profile directory is private
        return None
    me = geteuid()
    final = exists
    for directory in (path, *path.parents):
        reason = _owner_problem(directory, os.stat(directory), me, final=final)
        if reason is not None:
            return reason
        final = False
    return None


def _refused(target: Path, reason: str) -> OutputFileError:
    return OutputFileError(
        f"{target}: refusing it as the workspace: {reason}; name a directory of your own with --report-dir "
        f"(or {ENV_VARIABLE}), or leave both out to use your state directory"
    )


def _make_private(target: Path) -> None:
    """``target`` and every missing directory above it, each created 0700: a run directory made as the
    parent of its first log file is as private as one made for itself."""
    missing = []
    step = target
    while not step.exists() and step.parent != step:
        missing.append(step)
        step = step.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)


def _checked(path: str | os.PathLike[str], *, create: bool) -> Path | None:
    """The workspace's resolved path once made (or found) private; with ``create`` False and nothing
    there yet, None after judging the existing directory it would be created in."""
    target = Path(os.path.abspath(path))
    real = None
    try:
        if create or target.exists():
            _make_private(target)
            real = target.resolve(strict=True)
            reason = problem(real)
        else:
            base = next((p for p in target.parents if p.exists()), None)
            reason = problem(base.resolve(), exists=False) if base is not None else None
    except ValueError:
        raise OutputFileError(f"{os.fspath(path)!r}: cannot use as the workspace: the name holds a NUL") from None
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot create the workspace ({exc.strerror or exc})") from None
    if reason is not None:
        raise _refused(target, reason)
    return real


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` created (mode 0700, missing parents too) or found, checked private; its resolved form,
    which callers use from then on so a link swapped later changes nothing. Raises OutputFileError."""
    real = _checked(path, create=True)
    assert real is not None
    return real


def check_early(path: Path) -> None:
    """Refuse now, before any probe runs, a workspace that is not private or could not be made so
    (created later, where a probe first writes): the directory itself when it exists, else the
    nearest existing directory it would be created in."""
    _checked(path, create=False)
