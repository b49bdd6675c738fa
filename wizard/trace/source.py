"""Decompressed bytes of a trace file, block by block."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import IO

from wizard.errors import TraceReadError


class TraceSource:
    """Decompressed bytes of a trace, block by block.

    gzip is inflated with zlib directly rather than GzipFile, because GzipFile.read drops
    everything it inflated in a call that hits a cut-off stream, and a crashed writer's
    trace is exactly the file that must be read up to the cut.
    """

    _COMPRESSED_CHUNK = 1 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stream_truncated = False
        self.eof = False
        self._raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.compressed = self._raw.read(2) == b"\x1f\x8b"
        self._raw.seek(0)
        self._inflate = zlib.decompressobj(wbits=31) if self.compressed else None
        self._pending = b""

    def _read_compressed(self, size: int) -> bytes:
        assert self._inflate is not None
        out = [self._pending]
        have = len(self._pending)
        self._pending = b""
        while have < size:
            chunk = self._raw.read(self._COMPRESSED_CHUNK)
            if not chunk:
                if not self._inflate.eof:
                    self.stream_truncated = True
                break
            try:
                data = self._inflate.decompress(chunk)
                while self._inflate.eof and self._inflate.unused_data:  # another gzip member follows
                    rest = self._inflate.unused_data
                    self._inflate = zlib.decompressobj(wbits=31)
                    data += self._inflate.decompress(rest)
            except zlib.error as exc:
                raise TraceReadError(str(self.path), self._raw.tell(), f"corrupt gzip data ({exc})") from None
            out.append(data)
            have += len(data)
        joined = b"".join(out)
        self._pending = joined[size:]
        return joined[:size]

    def read(self, size: int) -> bytes:
        if self.eof:
            return b""
        try:
            data = self._read_compressed(size) if self.compressed else self._raw.read(size)
        except OSError as exc:
            raise TraceReadError(str(self.path), self._raw.tell(), f"cannot read ({exc})") from None
        if not data:
            self.eof = True
        return data

    def close(self) -> None:
        self._raw.close()
