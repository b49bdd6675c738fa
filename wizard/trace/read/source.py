"""Decompressed bytes of a trace, block by block, with the work per input byte bounded.

gzip is inflated by the one inflater every reader shares (``wizard.trace.read.inflate``): each call inflates at
most what was asked for, so a gzip bomb costs one block of memory, not gigabytes, and a cut-off stream gives
everything before the cut (a crashed writer's trace is exactly the file that must be read up to the cut).

Pipes are read as streams (``<(zcat trace.json.gz)`` works); a FIFO is opened without waiting for
a writer, so one that never gets one reads as empty instead of hanging.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from wizard.errors import InputFileError, TraceReadError
from wizard.trace.read.inflate import GZIP_MAGIC, GzipCut, GzipDamaged, GzipError, Inflater, damaged_words


@dataclass(eq=False, repr=False)
class ReadStats:
    """What this process's reader opened and read from the files themselves (a test proves one read with it):
    ``bytes_read`` counts each byte of a file the reader was given once (the unfinished event a block ends with, read
    again from the page cache with the next block, ``TraceSource.read_after``, is not counted again)."""

    opened: Counter[str] = field(default_factory=Counter)
    bytes_read: Counter[str] = field(default_factory=Counter)


STATS = ReadStats()
# POSIX's read at an offset, which leaves the file's position alone (os.pread is not on Windows)
_PREAD: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)


def open_input(path: Path, *, wait: bool = False) -> tuple[IO[bytes], bool]:
    """(binary file, is a regular file): every open of a trace file, by every format's reader, the format's
    recognition and the parallel workers, is this one (``STATS.opened`` counts them; a test counts a run's
    opens by wrapping it). A FIFO is opened without waiting for a writer, unless ``wait`` (the Perfetto reader,
    whose packets must not read as an empty trace). Raises InputFileError with the reason."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if wait else os.O_NONBLOCK))
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot open ({exc.strerror or type(exc).__name__})") from None
    except ValueError:  # a NUL in the name
        raise InputFileError(f"{path!r}: not a path: it holds a NUL character") from None
    STATS.opened[str(path)] += 1
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputFileError(f"{path}: is a directory")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)  # reads wait for data from here on
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), stat.S_ISREG(mode)


class TraceSource:
    """Decompressed bytes of a trace, block by block."""

    def __init__(self, path: Path, opened: tuple[IO[bytes], bool] | None = None) -> None:
        """``opened``: the file as ``open_input`` gave it, at its start (the caller closes it); else opened here."""
        self.path = path
        self.stream_truncated = False
        self.eof = False
        self._owned = opened is None
        self._raw, self.regular = opened if opened is not None else open_input(path)
        try:  # the first read fails as any other does (/proc/self/mem: EIO), one line naming the file
            head = self._raw.read(2)
        except OSError as exc:
            self.close()
            raise TraceReadError(str(path), 0, f"cannot read ({exc.strerror or exc})") from None
        self.compressed = head == GZIP_MAGIC
        self._head = head  # a pipe cannot seek back: keep what was peeked
        self._inflate = Inflater(self._read_raw) if self.compressed else None

    def _read_raw(self, size: int) -> bytes:
        if self._head:
            data, self._head = self._head + self._raw.read(max(size - len(self._head), 0)), b""
        else:
            data = self._raw.read(size)
        STATS.bytes_read[str(self.path)] += len(data)
        return data

    def _inflate_some(self, room: int) -> bytes:
        """Up to ``room`` inflated bytes; b'' at the end of the input (``stream_truncated`` if mid-member)."""
        assert self._inflate is not None
        try:
            return self._inflate.read(room)
        except GzipCut:
            self.stream_truncated = True
            return b""
        except GzipDamaged as exc:  # the byte zlib stopped at, not the read-ahead's end (the file's size)
            raise TraceReadError(str(self.path), *damaged_words(exc, self.consumed)) from None
        except GzipError as exc:
            raise TraceReadError(str(self.path), self.consumed, f"gzip stream refused ({exc})") from None

    @property
    def descriptor(self) -> tuple[int, int, int] | None:
        """(descriptor, st_dev, st_ino) of the open file: where forked workers read their ranges of it."""
        try:
            fd = self._raw.fileno()
            info = os.fstat(fd)
        except (OSError, ValueError):
            return None
        return fd, info.st_dev, info.st_ino

    @property
    def consumed(self) -> int:
        try:
            return self._raw.tell()
        except OSError:
            return 0

    def _read_compressed(self, size: int) -> bytes:
        out: list[bytes] = []
        have = 0
        while have < size:
            data = self._inflate_some(size - have)
            if not data:
                break
            out.append(data)
            have += len(data)
        return b"".join(out)

    def read(self, size: int) -> bytes:
        if self.eof:
            return b""
        try:
            data = self._read_compressed(size) if self.compressed else self._read_raw(size)
        except OSError as exc:
            raise TraceReadError(str(self.path), self.consumed, f"cannot read ({exc.strerror or exc})") from None
        if not data:
            self.eof = True
        return data

    def read_after(self, kept: bytes, start: int, size: int) -> bytes | None:
        """``kept[start:]`` (bytes this source gave, not yet used) and up to ``size`` more bytes of the stream, as one
        bytes object; None at the end of the input. From a regular file that is not compressed, one ``pread`` from
        where ``kept[start:]`` lies in the file reads both, so the new block is not copied again in behind the kept
        bytes (4% of a 100 MB read's CPU); the kept bytes read again must be the ones kept (a file written while it
        is read may differ), else the stream reads on from where it is, as ``read`` does: either way the bytes are
        ``kept[start:]`` and then the stream's next ones."""
        keep = len(kept) - start
        pread = _PREAD if self.regular and not self.compressed and not self.eof else None
        offset = self.consumed - len(self._head) - keep if pread is not None else -1  # where kept[start:] lies
        if pread is not None and offset >= 0:
            try:
                joined = pread(self._raw.fileno(), keep + size, offset)
            except OSError as exc:
                raise TraceReadError(str(self.path), self.consumed, f"cannot read ({exc.strerror or exc})") from None
            if len(joined) > keep and joined.startswith(memoryview(kept)[start:]):
                self._raw.seek(offset + len(joined))
                self._head = b""
                STATS.bytes_read[str(self.path)] += len(joined) - keep
                return joined
        data = self.read(size)
        if not data:
            return None
        return kept[start:] + data if start else kept + data

    def close(self) -> None:
        if self._owned:
            with contextlib.suppress(OSError):
                self._raw.close()
