"""Every file warpwizard writes goes through here.

The rules: write to a temporary file in the target's directory, then publish it under the real
name, so a crash or a full disk never leaves half a file there; never write onto an input of the
run (compared with ``os.path.samefile``, which sees hard links and symlinks; a directory input
covers every file below it); never onto anything but a regular file; never replace a file that
already exists unless the user said ``--force`` (or the file is warpwizard's own, in its
workspace); check all of that before the work starts where the target is known in advance.

Shared directories and multi-threaded hosts (docs/security.md): the temporary file is created
with ``O_EXCL | O_NOFOLLOW`` and mode 0o666, so the kernel applies the umask (it is never read or
changed: another thread of a training process may be creating files at that moment); nothing is
changed by path after it is written; without ``--force`` the final name is created by a hard link,
which fails when anything appeared there meanwhile (two processes naming one ``--output``: one of
them is told, instead of both saying "written" while one report replaces the other).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from wizard.errors import OutputFileError

Writer = Callable[[IO[bytes]], None]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(target: Path, directory: Path) -> bool:
    try:
        return directory.is_dir() and target.resolve().is_relative_to(directory.resolve())
    except (OSError, ValueError, RuntimeError):
        return False


def _input_hit(target: Path, inputs: Iterable[str | Path]) -> str | None:
    """The input ``target`` would destroy: the same file, or a file that exists below an input
    directory (a per-rank trace directory is read whole; a new file beside its traces is fine)."""
    try:
        exists = target.exists()
    except (OSError, ValueError):
        return None
    for source in inputs:
        candidate = Path(source)
        if exists and (_same_file(target, candidate) or _inside(target, candidate)):
            return str(source)
    return None


def _not_regular(target: Path) -> str | None:
    """What ``target`` is when it is something other than a regular file (followed through links)."""
    try:
        mode = os.stat(target).st_mode
    except (OSError, ValueError):
        return None  # nothing there (or a dangling link, replaced like any name)
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_output(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Path:
    """Raise OutputFileError now if writing ``path`` later would fail or destroy something."""
    target = Path(path)
    try:
        exists = target.exists() or target.is_symlink()
        parent = target.parent if str(target.parent) else Path(".")
        kind = _not_regular(target)
        if kind == "a directory":
            raise OutputFileError(f"{target}: is a directory; name a file for the {what}")
        if kind is not None:
            raise OutputFileError(f"{target}: is {kind}, not a regular file; name a file for the {what}")
        if not parent.is_dir():
            raise OutputFileError(f"{target}: cannot write the {what}: no such directory {parent}")
    except OSError as exc:  # a name too long, a path through a file, ...
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    except ValueError:  # NUL in the name
        raise OutputFileError(f"{target!r}: cannot write the {what}: the name holds a NUL character") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputFileError(f"{target}: cannot write the {what}: directory {parent} is not writable")
    hit = _input_hit(target, inputs)
    if hit is not None:
        raise OutputFileError(f"{target}: is an input of this run ({hit}); name another file for the {what}")
    if exists and not force:
        raise OutputFileError(f"{target}: already exists; name another file, or pass --force to replace it")
    return target


def make_parent(path: str | Path, *, what: str = "output") -> None:
    """Create the directory an output goes in (``probe --output 'reports/{host}-{rank}.json'`` on every
    rank of a job, where nobody made ``reports/`` first)."""
    parent = Path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OutputFileError(f"{path}: cannot create the directory for the {what} ({reason})") from None


def _open_temporary(parent: Path, name: str) -> tuple[int, Path]:
    for _ in range(100):
        tmp = parent / f".{name[:100]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _CREATE, 0o666), tmp  # the kernel applies the umask
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent))


def _publish(tmp: Path, target: Path, *, force: bool, inputs: Iterable[str | Path], what: str) -> None:
    """Give the written file its real name: replacing only with ``force`` (and never an input or
    anything but a regular file, checked again now), else by a link that fails if the name is taken."""
    if force:
        hit, kind = _input_hit(target, inputs), _not_regular(target)
        if hit is not None:
            raise OutputFileError(f"{target}: is an input of this run ({hit}); name another file for the {what}")
        if kind is not None:
            raise OutputFileError(f"{target}: is {kind}, not a regular file; name a file for the {what}")
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputFileError(
            f"{target}: appeared while the {what} was written (another process?); nothing was replaced; "
            "name another file, or pass --force"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        _copy_exclusive(tmp, target)  # a file system without hard links: create the name exclusively
    tmp.unlink()


def _copy_exclusive(tmp: Path, target: Path) -> None:
    try:
        fd = os.open(target, _CREATE, 0o666)
    except FileExistsError:
        raise OutputFileError(f"{target}: appeared while it was written; nothing was replaced") from None
    with os.fdopen(fd, "wb") as out, open(tmp, "rb") as src:
        while block := src.read(1 << 20):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())


@contextlib.contextmanager
def atomic_file(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block ends cleanly."""
    inputs = list(inputs)
    target = check_output(path, inputs=inputs, force=force, what=what)
    parent = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = _open_temporary(parent, target.name)
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        _publish(tmp, target, force=force, inputs=inputs, what=what)
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
    """A file in warpwizard's own workspace (a private directory, created or checked here):
    replaced freely, still never half-written."""
    from wizard.workspace import private_dir

    target = Path(path)
    return write_text(private_dir(target.parent) / target.name, text, force=True)


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
