"""What ``--from`` compares of a file's contents (wizard/engine/reuse.py): the SHA-256 of its first and last MiB.

Written once, for two opens of the file: the engine's own (a file no reader read: a script, an output) and the
trace reader's one open (``wizard/trace/read/reader.py`` hashes the file it reads from that very descriptor, so a
run fingerprints its trace without opening it again). The reader must not import the engine, so both take the
formula from here. The hash is read with ``pread``: the descriptor's offset, where its reader is, does not move.
"""

from __future__ import annotations

import os
import stat

from msgspec import Struct

from wizard.sha256 import sha256

HASHED_BYTES = 1 << 20  # a file's fingerprint hashes its first and its last MiB

# A file as this run read it: resolved path, st_dev, st_ino, size, mtime_ns (``RunInspections`` keys by it).
FileIdentity = tuple[str, int, int, int, int]


def identity(path: str | os.PathLike[str], info: os.stat_result) -> FileIdentity:
    """Which file ``path`` is, by its stat (taken by name or of an open descriptor)."""
    return (os.path.realpath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class OpenedEnds(Struct, frozen=True):
    """A regular file as one open of it found it: its identity, and the hash of the contents that identity
    describes (the file did not change while they were hashed)."""

    identity: FileIdentity
    sha256_ends: str


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes from ``offset``, fewer only at the end of the file (as ``read`` on a file gives),
    by ``pread``: the descriptor's offset does not move (the trace reader's parallel workers read so too)."""
    chunks, got = [], 0
    while got < size:
        chunk = os.pread(fd, size - got, offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def sha256_ends(fd: int, size: int) -> str:
    """The SHA-256 of the first HASHED_BYTES of the open file, then, when ``size`` (its stat's) is larger, of
    the HASHED_BYTES from max(HASHED_BYTES, size - HASHED_BYTES): the formula every recorded transcript used."""
    digest = sha256(read_at(fd, HASHED_BYTES, 0))  # CPython's own: no OpenSSL loaded (wizard/sha256.py)
    if size > HASHED_BYTES:
        digest.update(read_at(fd, HASHED_BYTES, max(HASHED_BYTES, size - HASHED_BYTES)))
    return digest.hexdigest()


def opened_ends(path: str | os.PathLike[str], fd: int) -> OpenedEnds | None:
    """The ends of the regular file open at ``fd`` (opened by ``path``), stat'ed before and after they are hashed;
    None for what is not a regular file (a pipe's bytes are read once, by its reader) or a file that changed while
    it was hashed (no hash of contents other than those its identity describes). Raises OSError where the file
    cannot be read: the engine records it as unreadable, with the error, not as changed."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    digest = sha256_ends(fd, info.st_size)
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (info.st_size, info.st_mtime_ns):
        return None
    return OpenedEnds(identity(path, info), digest)
