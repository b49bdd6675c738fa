"""Freed heap pages handed back to the system between an inspection's passes (issue 48's peak memory).

glibc's malloc keeps the pages of freed blocks inside its heap: the read's blocks and each pass's temporaries leave
holes that stay resident, and what a later pass allocates lands partly beside them, so the holes count in every
later peak (at 206 MB, 4 MiB of the largest process: benchmarks/results-2026-12-02-round5-memory5.md).
``malloc_trim(0)`` returns every free page of the heap to the system, so a pass's peak is what is held, not what
was held before. A few milliseconds each (the pages are faulted in again when used), so only for a big trace; where
the C library has no ``malloc_trim`` (macOS, Windows) nothing is done.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

TRIM_FROM = 16 << 20  # a trace's bytes from which the holes are worth a trim (a small trace's are kilobytes)

_FOUND: list[Callable[[int], int] | None] = []  # glibc's malloc_trim, once looked for


def release(trace_bytes: int) -> None:
    """Give the heap's free pages back to the system, for a trace of ``trace_bytes`` of at least ``TRIM_FROM``."""
    if trace_bytes < TRIM_FROM:
        return
    if not _FOUND:
        _FOUND.append(_malloc_trim())
    trim = _FOUND[0]
    if trim is not None:
        trim(0)


def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc's; ctypes is loaded already where numpy is), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # not in every build of Python (one without libffi has no _ctypes)

        function = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):  # no ctypes, no C library to open, or one without malloc_trim
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    trim: Callable[[int], int] = function
    return trim
