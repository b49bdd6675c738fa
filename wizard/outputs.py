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
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from wizard.errors import OutputFileError, UsageError

Writer = Callable[[IO[bytes]], None]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_CREATE_TEMPORARY = (_CREATE & ~os.O_WRONLY) | os.O_RDWR  # read back through its descriptor (_copy_exclusive)


class NameTaken(OutputFileError):
    """The final name was taken while the file was written (another process or thread): a caller
    that may write beside it (``free=True``) takes the next free name instead."""


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


STDOUT = "-"  # an output named '-' is stdout (``--markdown -``): the whole of it, nothing beside


def stdout_output(named: Iterable[tuple[str | bool | None, str]]) -> str | None:
    """Which of a command's outputs that may go to stdout does: ``named`` holds (value, flag) for each, the value
    ``STDOUT`` for a path given as '-' and True for a switch that writes stdout (``--json``). The flag that takes
    it, or None; two at once are refused before any work, since one stream cannot hold two documents a reader
    can split."""
    taken = [flag if value is True else f"{flag} {STDOUT}" for value, flag in named if value is True or value == STDOUT]
    if len(taken) > 1:
        raise UsageError(f"{' and '.join(taken)}: both would write to stdout; name a file for one of them")
    return taken[0].split()[0] if taken else None


def output_files(named: Iterable[tuple[str | None, str]]) -> list[tuple[str, str]]:
    """The (path, what) of the outputs given as files: neither absent nor '-' (stdout, see ``stdout_output``)."""
    return [(path, what) for path, what in named if path is not None and path != STDOUT]


def check_output(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Path:
    """Raise OutputFileError now if writing ``path`` later would fail or destroy something."""
    target = Path(path)
    if "\0" in str(target):  # pathlib says "not there" for such a name; the kernel refuses it
        raise OutputFileError(f"{str(target)!r}: cannot write the {what}: the name holds a NUL character")
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
        raise NameTaken(f"{target}: already exists; name another file, or pass --force to replace it")
    return target


def check_outputs(
    named: Iterable[tuple[str | Path, str]], *, inputs: Iterable[str | Path] = (), force: bool = False
) -> None:
    """``check_output`` for each (path, what) of one command, and no two of them one file (the second
    would replace the first, with ``--force`` silently): refused before any work."""
    inputs, seen = list(inputs), dict[str, str]()
    for path, what in named:
        target = check_output(path, inputs=inputs, force=force, what=what)
        key = os.path.realpath(target)
        if key in seen:
            raise OutputFileError(f"{target}: named for both the {seen[key]} and the {what}; name two files")
        seen[key] = what


def make_parent(path: str | Path, *, what: str = "output") -> None:
    """Create the directory an output goes in (``probe --output 'reports/{host}-{rank}.json'`` on every
    rank of a job, where nobody made ``reports/`` first)."""
    parent = Path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OutputFileError(f"{path}: cannot create the directory for the {what} ({reason})") from None


def _open_temporary(parent: Path, name: str, made: list[Path]) -> int:
    """A new temporary file beside the output. Its name is in ``made`` from before it is created, so a signal
    that lands between the kernel making the file and this function returning (a SIGHUP's handler raises there)
    still leaves the caller a name to remove: the file never outlives the run."""
    import secrets  # with random, hmac and base64: only where a file is written, not for --json on stdout

    for _ in range(100):
        tmp = parent / f".{name[:100]}.{secrets.token_hex(6)}.tmp"
        made.append(tmp)
        try:
            return os.open(tmp, _CREATE_TEMPORARY, 0o666)  # the kernel applies the umask
        except FileExistsError:
            made.pop()  # somebody else's: never removed
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent))


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _swapped(target: Path, what: str) -> OutputFileError:
    return OutputFileError(
        f"{target}: the {what} written was swapped for something else before it got its name (someone else "
        "can write to this directory); nothing of theirs was trusted; write it in a directory of your own"
    )


def _is_written(path: Path, written: tuple[int, int]) -> bool:
    """Whether ``path`` itself (not followed) is the file this process wrote."""
    try:
        return _identity(os.lstat(path)) == written
    except OSError:
        return False


def _link(tmp: Path, fd: int, target: Path) -> None:
    """Hard-link the open file itself (by its descriptor, through /proc where there is one), so what
    gets the name is what was written even if the temporary name was swapped meanwhile."""
    by_descriptor = f"/proc/self/fd/{fd}"
    if os.path.exists(by_descriptor):
        try:
            os.link(by_descriptor, target, follow_symlinks=True)
            return
        except FileExistsError:
            raise
        except OSError:
            pass  # /proc without linkat through it: link the name, checked before and after
    os.link(tmp, target, follow_symlinks=False)


def _publish(tmp: Path, fd: int, target: Path, *, force: bool, inputs: Iterable[str | Path], what: str) -> None:
    """Give the written file its real name: replacing only with ``force`` (and never an input or
    anything but a regular file, checked again now), else by a link that fails if the name is taken.
    The name is then checked to be the very file written (same device and inode, not followed): a
    swapped temporary file is an error, never "written"."""
    written = _identity(os.fstat(fd))
    if force:
        hit, kind = _input_hit(target, inputs), _not_regular(target)
        if hit is not None:
            raise OutputFileError(f"{target}: is an input of this run ({hit}); name another file for the {what}")
        if kind is not None:
            raise OutputFileError(f"{target}: is {kind}, not a regular file; name a file for the {what}")
        if not _is_written(tmp, written):
            raise _swapped(target, what)
        os.replace(tmp, target)
        if not _is_written(target, written):
            raise _swapped(target, what)
        return
    try:
        _link(tmp, fd, target)
    except FileExistsError:
        raise NameTaken(
            f"{target}: appeared while the {what} was written (another process?); nothing was replaced; "
            "name another file, or pass --force"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        _copy_exclusive(fd, target)  # a file system without hard links: create the name exclusively
        return
    if not _is_written(target, written):
        with contextlib.suppress(OSError):
            os.unlink(target)  # the name this call just made, for what was not ours
        raise _swapped(target, what)


def _copy_exclusive(fd: int, target: Path) -> None:
    """Copy the written file (read through its own descriptor, never its name) to a new ``target``."""
    try:
        out_fd = os.open(target, _CREATE, 0o666)
    except FileExistsError:
        raise NameTaken(f"{target}: appeared while it was written; nothing was replaced") from None
    with os.fdopen(out_fd, "wb") as out:
        offset = 0
        while block := os.pread(fd, 1 << 20, offset):
            out.write(block)
            offset += len(block)
        out.flush()
        os.fsync(out.fileno())


def _next_names(target: Path) -> Iterator[Path]:
    """``target``, then ``stem-2.suffix``, ``stem-3.suffix``, ...: the names ``free=True`` tries in turn."""
    yield target
    suffix = "".join(target.suffixes)
    stem = target.name[: len(target.name) - len(suffix)] if suffix else target.name
    n = 2
    while True:
        yield target.with_name(f"{stem}-{n}{suffix}")
        n += 1


MAX_FREE_TRIES = 1000


@contextlib.contextmanager
def _atomic(
    path: str | Path, *, inputs: Iterable[str | Path], force: bool, what: str, free: bool
) -> Iterator[tuple[IO[bytes], list[Path]]]:
    """The file handle, and a list that holds the name it got once the block ended cleanly."""
    inputs = list(inputs)
    target = Path(path) if free else check_output(path, inputs=inputs, force=force, what=what)
    parent = target.parent if str(target.parent) else Path(".")
    made: list[Path] = []  # the temporary file's name, from before it exists
    named: list[Path] = []
    try:
        try:
            fd = _open_temporary(parent, target.name, made)
        except ValueError:
            raise OutputFileError(f"{str(target)!r}: cannot write the {what}: the name holds a NUL character") from None
        tmp = made[-1]
        with os.fdopen(fd, "wb") as fh:
            yield fh, named
            fh.flush()
            os.fsync(fh.fileno())
            for _, name in zip(range(MAX_FREE_TRIES if free else 1), _next_names(target), strict=False):
                try:
                    if free:
                        check_output(name, inputs=inputs, what=what)
                    _publish(tmp, fh.fileno(), name, force=force, inputs=inputs, what=what)
                except NameTaken:
                    if free:
                        continue  # taken (before or while this was written): the next name
                    raise
                named.append(name)
                break
            else:
                raise NameTaken(f"{target}: no free name beside it for the {what}")
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot write the {what} ({exc.strerror or exc})") from None
    finally:
        for name in made:
            with contextlib.suppress(OSError):
                name.unlink()


@contextlib.contextmanager
def atomic_file(
    path: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False, what: str = "output"
) -> Iterator[IO[bytes]]:
    """A binary file handle whose content appears at ``path`` only when the block ends cleanly."""
    with _atomic(path, inputs=inputs, force=force, what=what, free=False) as (fh, _):
        yield fh


def write_bytes(
    path: str | Path,
    data: bytes,
    *,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    what: str = "output",
    free: bool = False,
) -> Path:
    """Write ``data`` at ``path``; with ``free``, at the first name of ``path``, ``stem-2.suffix``, ... that
    is free when the file is published (two threads naming one file both keep theirs). The name written."""
    with _atomic(path, inputs=inputs, force=force and not free, what=what, free=free) as (fh, named):
        fh.write(data)
    return named[0]


def write_text(
    path: str | Path,
    text: str,
    *,
    inputs: Iterable[str | Path] = (),
    force: bool = False,
    what: str = "output",
    free: bool = False,
) -> Path:
    data = text.encode("utf-8", "surrogateescape")
    return write_bytes(path, data, inputs=inputs, force=force, what=what, free=free)


def write_own(path: str | Path, text: str) -> Path:
    """A file in warpwizard's own workspace (a private directory, created or checked here):
    replaced freely, still never half-written."""
    from wizard.workspace import private_dir

    target = Path(path)
    return write_text(private_dir(target.parent) / target.name, text, force=True)


def free_path(path: str | Path) -> Path:
    """``path`` if nothing is there, else the first free ``stem-2.suffix``, ``stem-3.suffix``, ...: where a
    file the user may have edited would otherwise be replaced, write beside it. (Between threads or
    processes a name free now may be taken before it is written: ``write_text(..., free=True)``.)"""
    return next(name for name in _next_names(Path(path)) if not name.exists() and not name.is_symlink())
