"""SHA-256 without OpenSSL for what an inspection hashes, where that is little.

``import hashlib`` loads OpenSSL's libcrypto: 3.4 MB of the resident set of every ``trace inspect`` (a thirtieth of
a 100 MB trace; benchmarks/results-2026-12-02-memory2.md) for the two MiB of a file's ends (``--from``'s
fingerprint) and a workload's fingerprint of a few kilobytes. CPython's own SHA-256 (``_sha2`` from 3.12, ``_sha256``
before) gives the same digest, ~8x slower (176 MB/s against 1.5 GB/s here): it hashes up to ``OWN_BYTES``, and past
that the bytes go to hashlib's from their start (an Nsight export of ten million distinct launches fingerprints
hundreds of megabytes). hashlib's is used from the start where CPython was built without its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OWN_BYTES = 4 << 20  # hashed by CPython's own SHA-256: a file's two MiB ends take ~12 ms, OpenSSL's import ~4 ms


_FOUND: list[Callable[[bytes], Any] | None] = []  # _own's answer, once: a failed import searches sys.path each time


def _own() -> Callable[[bytes], Any] | None:
    """CPython's own SHA-256 constructor, or None where this Python was built without it (looked for once: on
    3.10 and 3.11 the ``_sha2`` import fails first, and a failed import walked sys.path on every hash, 25 µs of a
    kernel name's 34)."""
    if not _FOUND:
        _FOUND.append(_find_own())
    return _FOUND[0]


def _find_own() -> Callable[[bytes], Any] | None:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12 on (no stubs)
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.10 and 3.11
        except ImportError:
            return None
    own: Callable[[bytes], Any] = sha256
    return own


class Sha256:
    """``hashlib.sha256``'s ``update`` and ``hexdigest``: CPython's own hashes the bytes as they come, and keeps
    them until they pass ``OWN_BYTES``; then they go to hashlib's, in the same order, and so does the rest (the
    digest of the same bytes either way)."""

    __slots__ = ("_hash", "_own", "_parts", "_size")

    def __init__(self, data: bytes = b"") -> None:
        own = _own()
        self._own = own is not None
        self._parts: list[bytes] = []  # what CPython's own has hashed, for hashlib's should they pass OWN_BYTES
        self._size = 0
        if own is not None:
            self._hash: Any = own(b"")
        else:
            import hashlib

            self._hash = hashlib.sha256()
        self.update(data)

    def update(self, data: bytes) -> None:
        self._hash.update(data)
        if not self._own:
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size > OWN_BYTES:
            import hashlib

            self._hash, self._own = hashlib.sha256(), False
            for part in self._parts:
                self._hash.update(part)
            self._parts = []

    def hexdigest(self) -> str:
        text: str = self._hash.hexdigest()
        return text


def sha256(data: bytes = b"") -> Sha256:
    """A SHA-256 of ``data`` and whatever is added (``update``), as ``hashlib.sha256(data)``."""
    return Sha256(data)
