"""CUPTI PM-sampling counters (PyTorch 2.15+ with ``KINETO_ENABLE_CUPTI_PM_SAMPLING``): device-wide
values such as ``sm__warps_active`` sampled about every millisecond, written as Chrome counter events
(``"ph": "C"``) under a pid ``"GPU N Counters"``. The collector keeps their values in the one read
(``TraceContents.counters``): a block whose events include counter events is looked at again, in memory,
event by event for those alone, so other traces pay nothing.

Each event's numeric args are its series (``{"value": x}`` is named after the event). Samples are
bounded (``MAX_SAMPLES`` over every series of a trace, 16 bytes each: 16 MB at most): a long run samples
for hours.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec
from msgspec import Struct, field

from wizard.trace.read.events import MEASURABLE, RAW_DECODER, as_float, decode_block

MAX_SAMPLES = 1_000_000
_PID = re.compile(r"GPU (\d{1,4}) Counters")
MARK = b' Counters"'


class Series(Struct):
    """One counter on one device: sample times (µs) and values, in file order until ``in_time_order``."""

    ts: array[float] = field(default_factory=lambda: array("d"))
    values: array[float] = field(default_factory=lambda: array("d"))

    def in_time_order(self) -> None:
        """Sorted by sample time (files are, mostly): once, when the file has been read."""
        if any(b < a for a, b in zip(self.ts, self.ts[1:], strict=False)):
            order = sorted(range(len(self.ts)), key=self.ts.__getitem__)
            self.ts = array("d", (self.ts[i] for i in order))
            self.values = array("d", (self.values[i] for i in order))

    def during(self, start: float, end: float) -> list[float]:
        """The values sampled while a kernel ran (start <= ts <= end); the series is in time order."""
        lo = bisect.bisect_left(self.ts, start)
        hi = bisect.bisect_right(self.ts, end)
        return list(self.values[lo:hi])


class Counters(Struct):
    """The counter series of one trace (or of one worker's block), keyed by (device, counter name)."""

    series: dict[tuple[int, str], Series] = field(default_factory=dict)
    samples: int = 0
    _ordered: bool = False

    def add_block(self, piece: bytes) -> None:
        """The counter events of a block of whole events (as the fast decoder takes it), each decoded alone."""
        if MARK not in piece or self.samples >= MAX_SAMPLES:
            return
        for raw in decode_block(RAW_DECODER, piece) or []:
            data = bytes(raw)
            if MARK in data and self.samples < MAX_SAMPLES:
                try:
                    event = msgspec.json.decode(data)
                except msgspec.DecodeError:
                    continue
                self.add_event(event)

    def add_event(self, event: Any) -> None:
        """One decoded event: its numeric args as samples if it is a counter event under "GPU N Counters"."""
        if not isinstance(event, dict) or event.get("ph") != "C" or self.samples >= MAX_SAMPLES:
            return
        match = _PID.fullmatch(str(event.get("pid")))
        ts, args = event.get("ts"), event.get("args")
        start = as_float(ts) if isinstance(ts, (int, float)) else None  # None past a double's range (400 digits)
        if match is None or start is None or not isinstance(args, dict):
            return
        device, name = int(match.group(1)), str(event.get("name", ""))[:120]
        for key, value in list(args.items())[:32]:
            number = as_float(value) if isinstance(value, (int, float)) else None
            if number is not None and -MEASURABLE <= number <= MEASURABLE and self.samples < MAX_SAMPLES:
                series = name if key == "value" else str(key)[:120]
                found = self.series.setdefault((device, series), Series())
                found.ts.append(start)
                found.values.append(number)
                self.samples += 1

    def merge(self, other: Counters) -> None:
        """A later block's samples after these (bounded as one)."""
        for key, theirs in other.series.items():
            room = MAX_SAMPLES - self.samples
            if room <= 0:
                return
            mine = self.series.setdefault(key, Series())
            mine.ts.extend(theirs.ts[:room])
            mine.values.extend(theirs.values[:room])
            self.samples += min(room, len(theirs.ts))
        self._ordered = False

    def by_series(self) -> Mapping[tuple[int, str], Series]:
        """Every series, each in time order (sorted once, when first asked after the read)."""
        if not self._ordered:
            for one in self.series.values():
                one.in_time_order()
            self._ordered = True
        return self.series


class _Read(Protocol):
    counters: Counters


def counter_series(contents: _Read) -> Mapping[tuple[int, str], Series]:
    """The counter series the read kept from a trace (``TraceContents.counters``)."""
    return contents.counters.by_series()
