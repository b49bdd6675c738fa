"""How to install an optional extra from where warpwizard stands: ``pip install 'warpwizard[html]'`` asks the
package index, which fails in a clone (no such release there, or an older one); a clone's command names its
directory (``pip install '.[html]'``). Where warpwizard came from is read from pip's own record
(``direct_url.json``, PEP 610) or, when it is not installed at all (run with ``PYTHONPATH``), from the
``pyproject.toml`` beside the package; when neither says, the message gives both commands. The command is ``pip``
where the ``pip`` on PATH is this interpreter's (an activated environment), else this interpreter's ``-m pip``: a
``.venv/bin/warpwizard`` run without activating would otherwise install into another Python."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from wizard.plugins import installed_file

DISTRIBUTION = "warpwizard"
_NAME = re.compile(r'^name\s*=\s*"warpwizard"\s*$', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where this warpwizard was installed from: a directory (a clone; ``editable`` for ``pip install -e``),
    the package index (``directory`` None, ``known`` True), or unknown (``known`` False)."""

    directory: Path | None
    editable: bool
    known: bool


def _is_checkout(directory: Path) -> bool:
    try:
        return bool(_NAME.search((directory / "pyproject.toml").read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


def _recorded(text: str | None) -> Origin | None:
    """pip's record of a directory install (PEP 610's ``direct_url.json``), or None when it installed from the
    index (pip writes none)."""
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return Origin(None, editable=False, known=False)
    url = urlparse(str(record.get("url", "")) if isinstance(record, dict) else "")
    if url.scheme != "file":
        return Origin(None, editable=False, known=False)  # a VCS or archive URL: no directory to name
    dir_info = record.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    directory = Path(unquote(url.path))
    return Origin(directory if _is_checkout(directory) else None, editable=editable, known=_is_checkout(directory))


def origin(package_dir: Path | None = None) -> Origin:
    """Where warpwizard came from: the package's own folder beside a ``pyproject.toml`` first (a clone run from
    its source, installed or not), then pip's record of the installed distribution."""
    here = (package_dir or Path(__file__).resolve().parent).parent
    installed, record = installed_file(DISTRIBUTION, "direct_url.json")
    recorded = _recorded(record)
    if _is_checkout(here):
        editable = recorded is not None and recorded.editable and recorded.directory == here
        return Origin(here, editable=editable, known=True)
    if not installed:
        return Origin(None, editable=False, known=False)
    return recorded or Origin(None, editable=False, known=True)


def _spelled(directory: Path, cwd: Path) -> str:
    """The directory as the user types it from ``cwd``: ``.`` when they stand in it, else the shorter of the
    relative and the absolute path."""
    if directory == cwd:
        return "."
    try:
        relative = os.path.relpath(directory, cwd)
    except ValueError:  # another drive (Windows)
        return str(directory)
    return relative if len(relative) < len(str(directory)) else str(directory)


def pip_command(executable: str | None = None, which: Callable[[str], str | None] = shutil.which) -> str:
    """``pip`` where the ``pip`` on PATH is this interpreter's, else this interpreter's own ``-m pip``."""
    executable = executable or sys.executable
    found = which("pip")
    if found is not None and Path(found).resolve() == (Path(executable).parent / "pip").resolve():
        return "pip"
    return f"{shlex.quote(executable)} -m pip"


def install_command(extra: str, *, cwd: Path | None = None, where: Origin | None = None, pip: str | None = None) -> str:
    """The command that installs ``extra`` here: from the clone's directory, from the index, or, when the
    origin is unknown, both, each saying where it works; with ``pip`` (``pip_command()``'s by default)."""
    where = where or origin()
    pip = pip or pip_command()
    if where.directory is not None:
        spelled = _spelled(where.directory, (cwd or Path.cwd()).resolve())
        editable = "-e " if where.editable else ""
        return f"{pip} install {editable}'{spelled}[{extra}]' (from this clone)"
    if where.known:
        return f"{pip} install '{DISTRIBUTION}[{extra}]'"
    return f"{pip} install '{DISTRIBUTION}[{extra}]' (installed from PyPI) or {pip} install '.[{extra}]' (in a clone)"
