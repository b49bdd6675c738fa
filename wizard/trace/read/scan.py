"""Where to cut a run of trace events, in any layout, without reading it as JSON.

Kineto writes one event per line, but traces from the wild are also minified (``json.dump``
with no indent: vLLM and SGLang profiles, files rewritten by analysis tools) or indented one key
per line. Every layout separates two events with ``}`` ``,`` ``{`` and optional whitespace. That
sequence can also occur inside a string (a kernel name ``...{lambda()#1}},{...``), so a candidate
counts only when it holds a newline (a string cannot), or when the number of unescaped quotes
before it, from a point known to be outside any string, is even. Quotes and backslashes are counted in one pass
eight bytes at a time by the compiled core (``quote_counts``; ``bytes.count``, a byte at a time and a pass each, was
7% of a minified read's CPU); escaped quotes are rare, and are looked for only when the block holds a backslash.

A cut this module returns is never inside a string. It can still fall inside a nested array of
objects within one event (no Kineto event has one, but a file could): then the block does not
decode as whole events and the reader takes the exact path for it, so the result is the same.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

from wizard.compiled_core import compiled

SEPARATOR = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_ESCAPED_QUOTE = re.compile(rb'(?<!\\)(?:\\\\)*\\"')
_WHITESPACE = re.compile(rb"[ \t\r\n]+")
_TAIL = 1 << 16
# The first window looked at for a block's last separator: the cut is nearly always in its last few events, and
# listing every separator of a 64 KB tail (about 300 events) was 3 ms a block in the parent of a --jobs 2 read.
_FIRST_SPAN = 1 << 12
_LIST_END = re.compile(rb"\}[ \t\r\n]*\]")


def pure_quote_counts(buf: bytes, start: int, end: int) -> tuple[int, int]:
    """The quotes and the backslashes in buf[start:end] (the compiled core's ``quote_counts``, one pass), the
    indices as ``bytes.count`` takes them; what is not an index or not bytes refused with the core's words."""
    start, end = operator.index(start), operator.index(end)
    if not isinstance(buf, bytes):
        raise TypeError("quote_counts: the buffer must be bytes")
    return buf.count(b'"', start, end), buf.count(b"\\", start, end)


_core = compiled()
quote_counts: Callable[[bytes, int, int], tuple[int, int]] = (
    _core.quote_counts if _core is not None else pure_quote_counts
)


def unescaped_quotes(buf: bytes, start: int, end: int) -> int:
    """Quotes in buf[start:end] that open or close a string."""
    quotes, backslashes = quote_counts(buf, start, end)
    if quotes and backslashes:
        quotes -= sum(1 for _ in _ESCAPED_QUOTE.finditer(buf, start, end))
    return quotes


def _candidates_backwards(buf: bytes, start: int, end: int) -> list[tuple[int, bool]]:
    """(position of the ``}``, whether the separator holds a newline) for the separators in
    buf[start:end], last first, from a growing tail window."""
    span = _FIRST_SPAN
    while True:
        lo = max(start, end - span)
        found = [(m.start(), b"\n" in m.group()) for m in SEPARATOR.finditer(buf, lo, end) if m.end() <= end]
        if found or lo == start:
            return found[::-1]
        span *= 8


def find_cut(buf: bytes, start: int, end: int) -> int | None:
    """The index of the ``}`` ending the last whole event in buf[start:end], or None.

    ``start`` must be outside any string (the start of an event, or of the event list).
    """
    while end > start:
        candidates = _candidates_backwards(buf, start, end)
        if not candidates:
            return None
        last, has_newline = candidates[0]
        if has_newline:
            return last  # a JSON string cannot hold a raw newline: no counting needed
        previous = last
        parity = unescaped_quotes(buf, start, previous) % 2
        for position, _ in candidates:
            parity = (parity - unescaped_quotes(buf, position, previous)) % 2
            previous = position
            if parity == 0:
                return position
        end = candidates[-1][0]  # every separator in the window was inside a string: look before it
    return None


def after_separator(buf: bytes, cut: int) -> int:
    """The index of the ``{`` that follows the separator whose ``}`` is at ``cut``."""
    match = SEPARATOR.match(buf, cut)
    assert match is not None
    return match.end() - 1


def whitespace_end(buf: bytes, pos: int) -> int:
    """The first index at or after ``pos`` that is not JSON whitespace (len(buf) if none)."""
    match = _WHITESPACE.match(buf, pos)
    return match.end() if match else pos


def list_end(buf: bytes, start: int, cut: int) -> int | None:
    """Where the event list may close before ``cut``: the first ``]`` right after an object's ``}`` in the
    64 KB before it (what follows the events is a few keys), or ``start`` for an empty list; None if
    there is none. Only a candidate: a nested array of objects inside an event, or a string, ends the
    same way. Looking at the tail only keeps it off the parent's time for every block (a whole 4 MB
    block took 7.6 ms)."""
    if buf[start : start + 1] == b"]":
        return start
    match = _LIST_END.search(buf, max(start, cut - _TAIL), cut)
    return match.end() - 1 if match else None
