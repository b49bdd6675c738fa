"""CUPTI PM-sampling counters (PyTorch 2.15+ with ``KINETO_ENABLE_CUPTI_PM_SAMPLING``): device-wide
values such as ``sm__warps_active`` sampled about every millisecond, written as Chrome counter events
(``"ph": "C"``) under a pid ``"GPU N Counters"``. The reader only counts them; this reads their values
in a second pass over the file, only for a trace that has them, so other traces pay nothing.

Each event's numeric args are its series (``{"value": x}`` is named after the event). Samples are
bounded (``MAX_SAMPLES``): a long run samples for hours.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from wizard.trace.read.collector import EventSink
from wizard.trace.read.events import as_float
from wizard.trace.read.reader import parse_into

MAX_SAMPLES = 1_000_000
_PID = re.compile(r"GPU (\d{1,4}) Counters")
_MARK = b' Counters"'


@dataclass(slots=True)
class Series:
    """One counter on one device: sample times (µs) and values, in file order."""

    ts: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def in_time_order(self) -> None:
        """Sorted by sample time (files are, mostly): once, when the file has been read."""
        if any(b < a for a, b in zip(self.ts, self.ts[1:], strict=False)):
            order = sorted(range(len(self.ts)), key=self.ts.__getitem__)
            self.ts = [self.ts[i] for i in order]
            self.values = [self.values[i] for i in order]

    def during(self, start: float, end: float) -> list[float]:
        """The values sampled while a kernel ran (start <= ts <= end); the series is in time order."""
        lo = bisect.bisect_left(self.ts, start)
        hi = bisect.bisect_right(self.ts, end)
        return self.values[lo:hi]


class _CounterSink(EventSink):
    raw = True

    def __init__(self) -> None:
        self.series: dict[tuple[int, str], Series] = {}
        self.samples = 0

    def add_raw(self, events: list[bytes]) -> None:
        for raw in events:
            if _MARK in raw and self.samples < MAX_SAMPLES:
                self._event(raw)

    def _event(self, raw: bytes) -> None:
        try:
            event = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return
        if not isinstance(event, dict) or event.get("ph") != "C":
            return
        match = _PID.fullmatch(str(event.get("pid")))
        ts, args = event.get("ts"), event.get("args")
        start = as_float(ts) if isinstance(ts, (int, float)) else None  # None past a double's range (400 digits)
        if match is None or start is None or not isinstance(args, dict):
            return
        device, name = int(match.group(1)), str(event.get("name", ""))[:120]
        for key, value in list(args.items())[:32]:
            number = as_float(value) if isinstance(value, (int, float)) else None
            if number is not None and math.isfinite(number):
                series = name if key == "value" else str(key)[:120]
                found = self.series.setdefault((device, series), Series())
                found.ts.append(start)
                found.values.append(number)
                self.samples += 1


def read_counters(path: str | Path) -> dict[tuple[int, str], Series]:
    """Every counter series in the trace, keyed by (device, counter name)."""
    sink = _CounterSink()
    parse_into(path, sink)
    for series in sink.series.values():
        series.in_time_order()
    return sink.series
