"""The exact decoder: one JSON value at a time, with byte offsets for every message.

It is the reference the fast paths are checked against, and the fallback for anything they cannot
take: bare ``inf``/``nan`` tokens (quoted with a marker first, so a value remembers its spelling),
a block cut inside a nested array, the end of the event list, a file cut off mid-event.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from wizard.formatting import plural, verb
from wizard.trace.read.buffer import Buffer
from wizard.trace.read.collector import TraceContents, Truncation
from wizard.trace.read.events import BARE_MARK, BARE_TOKEN, Event, event_from_dict, quote_bare

_BETWEEN = re.compile(r"[ \t\r\n,]*")
_MAX_INT_DIGITS = 40


def _parse_int(text: str) -> int | str:
    """Integers as json would read them, except that a 5,000-digit one (Python refuses to convert it)
    stays text: damage the analysis then reports, not a crash."""
    return int(text) if len(text) <= _MAX_INT_DIGITS else text


def _byte_len(text: str, chars: int) -> int:
    return len(text[:chars].encode("utf-8", "surrogateescape"))


def _unsubstituted_end(original: str, substituted: str, index: int) -> int:
    """Map an index in the bare-token-quoted text back to the original text."""
    extra = 0
    for match in BARE_TOKEN.finditer(original):
        new_start = match.start() + extra
        if new_start >= index:
            break
        added = len(BARE_MARK) + 2
        if index < new_start + len(match.group(0)) + added:
            return match.start()
        extra += added
    return index - extra


def _byte_len_sub(original: str, substituted: str, index: int) -> int:
    """Bytes of ``original`` before ``index`` of its bare-token-quoted copy."""
    if original is substituted:
        return _byte_len(original, index)
    return _byte_len(original, _unsubstituted_end(original, substituted, index))


def _substituted_index(original: str, substituted: str, index: int) -> int:
    """Map an index in the original text forward into its bare-token-quoted copy."""
    if original is substituted:
        return index
    added = len(BARE_MARK) + 2
    return index + added * sum(1 for _ in BARE_TOKEN.finditer(original, 0, index))


def _looks_truncated(text: str, exc: json.JSONDecodeError) -> bool:
    """An error at the very end of the data, not in the middle of it."""
    return exc.pos >= len(text.rstrip()) - 1 or text.find("}", exc.pos) == -1


class ExactDecoder:
    """Reads values and events from a Buffer, delivering events (or their raw bytes) in order."""

    def __init__(
        self,
        buffer: Buffer,
        contents: TraceContents,
        deliver: Callable[[list[Event], list[bytes]], None],
        *,
        raw: bool,
        max_event_bytes: int,
        clock: dict[str, float],
    ) -> None:
        self.b = buffer
        self.contents = contents
        self.deliver = deliver
        self.raw = raw
        self.max_event_bytes = max_event_bytes
        self.clock = clock
        self.decoder = json.JSONDecoder(parse_int=_parse_int)
        self.objects = 0  # entries of the event list this decoder read that are objects (events, in raw mode too)
        self.non_objects = 0  # and those that are not (numbers, strings): no event

    def value(self) -> Any:
        """One JSON value at the position, read whole (used for small top-level values)."""
        b = self.b
        b.skip_ws()
        # A small first window: the quoting of bare tokens runs over all of it, and a 64 KB one per top-level key
        # was ~7 ms each (60 ms a trace). A value that reaches the window's end (a number may stop anywhere) is
        # read again from a larger one.
        window = 1 << 12
        while True:
            text = b.buf[b.pos : b.pos + window].decode("utf-8", "surrogateescape")
            substituted = BARE_TOKEN.sub(quote_bare, text)
            try:
                value, end = self.decoder.raw_decode(substituted)
                if end >= len(substituted) and b.pos + window < len(b.buf):
                    window *= 8
                    continue
            except json.JSONDecodeError as exc:
                if b.pos + window < len(b.buf):
                    window *= 8
                    continue
                if b.src.eof or b.remaining > self.max_event_bytes:
                    if b.src.eof and exc.pos >= len(substituted) - 1:
                        raise b.error("the file ends inside a top-level value (truncated)") from None
                    raise b.error(f"invalid JSON ({exc.msg})", b.offset + _byte_len(text, exc.pos)) from None
                b.fill()
                continue
            except RecursionError:
                raise b.error("nesting too deep to be a profiler trace") from None
            if substituted is not text:
                end = _unsubstituted_end(text, substituted, end)
            b.pos += _byte_len(text, end)
            return value

    def events(self, *, until_end: bool, stop_at: int | None = None) -> bool:
        """Event by event from the position; stops at ']' (True), at ``stop_at``, or at a truncated end."""
        started = time.perf_counter()
        try:
            return self._events(until_end=until_end, stop_at=stop_at)
        finally:
            self.clock["exact_path_s"] += time.perf_counter() - started

    def _truncated(self, start: int) -> None:
        b = self.b
        partial = b.base + len(b.buf) - start
        self.contents.truncation = Truncation(
            start,
            partial,
            self.contents.last_ts,
            f"the file ends inside an event at byte {start}: {plural(partial, 'byte')} of a partial event "
            f"{verb(partial, 'was', 'were')} dropped, "
            "and the end of the event list (and any keys after it, such as deviceProperties) is missing",
        )
        b.pos = len(b.buf)

    def _events(self, *, until_end: bool, stop_at: int | None) -> bool:
        b = self.b
        while True:
            text = b.buf[b.pos :].decode("utf-8", "surrogateescape")
            substituted = BARE_TOKEN.sub(quote_bare, text)
            stop_index = len(substituted) + 1
            if stop_at is not None:
                stop_chars = len(b.buf[b.pos : stop_at - b.base].decode("utf-8", "surrogateescape"))
                stop_index = _substituted_index(text, substituted, stop_chars)
            outcome, i = self._window(text, substituted, stop_index)
            if outcome == "truncated":
                return False
            b.pos += _byte_len_sub(text, substituted, i)
            if outcome == "ended":
                return True
            if outcome == "stop":
                return False
            if not b.fill(b.remaining + b.block_size):  # outcome "more": the window ended mid-list
                if b.pos >= len(b.buf):
                    self._unclosed()
                    return False
                continue
            if not until_end and stop_at is None:
                return False

    def _window(self, text: str, substituted: str, stop_index: int) -> tuple[str, int]:
        """Decode the events in one window: ('ended' | 'stop' | 'more' | 'truncated', where it stopped)."""
        b, n = self.b, len(substituted)
        batch: list[Event] = []
        raw_batch: list[bytes] = []
        i = 0
        outcome = "more"
        while True:
            i = _BETWEEN.match(substituted, i).end()  # type: ignore[union-attr]
            if i >= stop_index or i >= n:
                outcome = "stop" if i >= stop_index else "more"
                break
            if substituted[i] == "]":
                i += 1
                outcome = "ended"
                break
            try:
                obj, j = self.decoder.raw_decode(substituted, i)
            except json.JSONDecodeError as exc:
                if not b.src.eof and n - i < self.max_event_bytes:
                    break  # the event continues past the window: read more
                self.deliver(batch, raw_batch)
                self._bad_event(text, substituted, i, exc)
                return "truncated", i
            except RecursionError:
                raise b.error("nesting too deep to be a profiler trace") from None
            if isinstance(obj, dict):
                self.objects += 1
            else:
                self.non_objects += 1
            if self.raw:
                raw_batch.append(substituted[i:j].encode("utf-8", "surrogateescape"))
            elif (event := event_from_dict(obj)) is not None:
                batch.append(event)
                if type(event.pid) is str and event.pid.endswith(" Counters"):
                    self.contents.counters.add_event(obj)  # its values: the struct keeps no counter's args
            i = j
        self.deliver(batch, raw_batch)
        return outcome, i

    def _bad_event(self, text: str, substituted: str, i: int, exc: json.JSONDecodeError) -> None:
        """An event that does not decode at the end of the data is a cut; anywhere else, damage."""
        b = self.b
        start = b.offset + _byte_len_sub(text, substituted, i)
        if b.src.eof and _looks_truncated(substituted, exc):
            self._truncated(start)
            return
        where = b.offset + _byte_len_sub(text, substituted, exc.pos)
        raise b.error(f"invalid JSON in traceEvents ({exc.msg})", where) from None

    def _unclosed(self) -> None:
        self.contents.truncation = Truncation(
            self.b.offset,
            0,
            self.contents.last_ts,
            "the file ends after a complete event but before the event list was closed: no event was cut in "
            "half, but the events written after the cut are missing (Kineto closes the list with a 'Record Window "
            "End' event), and so are any keys after the list (such as deviceProperties)",
        )
