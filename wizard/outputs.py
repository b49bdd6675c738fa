"""Every file warpwizard writes goes through here.

The rules: write to a temporary file in the target's directory, then rename it over the
target, so a crash or a full disk never leaves half a file under the real name; never write
onto an input (compared with ``os.path.samefile``, which sees hard links and symlinks); never
replace a file that already exists unless the user said ``--force`` (or the file is
warpwizard's own, in its report directory); check all of that before the work starts where the
target is known in advance.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from wizard.errors import OutputFileError

Writer = Callable[[IO[bytes]], None]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Path:
    """Raise OutputFileError now if writing ``path`` later would fail or destroy something."""
    target = Path(path)
    try:
        exists = target.exists() or target.is_symlink()
        parent = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            raise OutputFileError(f"{target}: is a directory; name a file for the {what}")
        if not parent.is_dir():
            raise OutputFileError(f"{target}: cannot write the {what}: no such directory {parent}")
    except OSError as exc:  # a name too long, a path through a file, ...
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputFileError(f"{target}: cannot write the {what}: directory {parent} is not writable")
    for source in inputs:
        if exists and _same_file(target, Path(source)):
            raise OutputFileError(f"{target}: is an input of this run ({source}); name another file for the {what}")
    if exists and not force:
        raise OutputFileError(f"{target}: already exists; name another file, or pass --force to replace it")
    return target


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_file(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block ends cleanly."""
    target = check_output(path, inputs=inputs, force=force, what=what)
    parent = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_bytes(
    path: str | Path, data: bytes, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Path:
    with atomic_file(path, inputs=inputs, force=force, what=what) as fh:
        fh.write(data)
    return Path(path)


def write_text(
    path: str | Path, text: str, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Path:
    return write_bytes(path, text.encode("utf-8", "surrogateescape"), inputs=inputs, force=force, what=what)


def write_own(path: str | Path, text: str) -> Path:
    """A file in warpwizard's own report directory: replaced freely, still never half-written."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFileError(f"{target.parent}: cannot create the report directory ({exc.strerror or exc})") from None
    return write_text(target, text, force=True)


def free_path(path: str | Path) -> Path:
    """``path`` if nothing is there, else the first free ``stem-2.suffix``, ``stem-3.suffix``, ...:
    where a file the user may have edited would otherwise be replaced, write beside it."""
    target = Path(path)
    if not target.exists() and not target.is_symlink():
        return target
    suffix = "".join(target.suffixes)
    stem = target.name[: len(target.name) - len(suffix)] if suffix else target.name
    n = 2
    while True:
        candidate = target.with_name(f"{stem}-{n}{suffix}")
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
        n += 1
