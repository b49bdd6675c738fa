"""Perfetto's own rule for complete ("X") events, written from Perfetto's source, for the tests (issue 33).

This module shares no code with warpwizard (only ``json``, ``gzip``, ``math`` and ``fractions``). It follows
google/perfetto at commit ec5d16b14b743ba6063d720956d6d6af6610fd72 (2026-08-22; v57.0 is 705d35f2d8e1,
PR #6284 is 9b3d72f4f1, the first tag holding it is v57.0), file and line as cited below:

- ``src/trace_processor/util/json_parser.h`` 372-432 (``StringToDouble``): a number with a fraction or an
  exponent is ``double(int_part) + double(fract_int) / double(divisor)``, then ``* pow(10, exp)``; 507-516:
  an integer-like number is an int64.
- ``src/trace_processor/importers/json/json_trace_tokenizer.cc`` 221-234 (``CoerceToTs``): ``ts`` and
  ``dur`` in ns: a double equal to its ``trunc`` is ``int64(v) * 1000``, any other ``llround(v * 1000.0)``,
  an int64 ``v * 1000``; 704-751: a string pid/tid is an interned string, a number is ``CoerceToUint32``
  (210-215: 0 when negative or above 2^32-1); 799-800: ``bp == "e"`` binds a flow end to its enclosing
  slice; 837-844: an event without a usable ``ts`` is dropped (but ``M``); 846-849: a tid of 0 becomes the
  pid when the pid is not 0.
- ``src/trace_processor/sorter/trace_sorter.h`` 190-216 (``SlowOperatorLess``, used once any ``X`` event is
  pushed, 378-381): events by ``(ts, key, file order)`` where the key is ``INT64_MIN`` for ``E``,
  ``INT64_MAX - dur`` for ``X`` (the longer first) and ``INT64_MAX`` for every other phase (flows after the
  slices of their ts); 370-374: a negative ``ts`` is dropped.
- ``src/trace_processor/importers/json/json_trace_parser.cc`` 138: one thread per (pid, tid)
  (``UpdateThread``); 228-268 (``X``): ``Scoped`` on the thread's track; when it reports an overlap the event
  is spilled onto an overflow track (``slice_spill_overlapping_complete_event``, v57.0 on; v51.0-v56.x drop
  it, ``slice_drop_overlapping_complete_event``), and either way ``MaybeAddFlow`` uses the overflow track
  only for v2 flows; 383-425: ``s``/``t``/``f`` bind on the thread's own (main) track.
- ``src/trace_processor/importers/common/slice_tracker.h`` 124-140 (``Scoped``): a negative duration is
  dropped before the stack is looked at; 43: ``kMaxDepth`` 512.
- ``src/trace_processor/importers/common/slice_tracker.cc`` 354-477 (``MaybeCloseStack``): from the top of
  the stack down, a slice that ends before the new one starts is popped, one that ends at its start too
  (unless both durations are 0); a new slice that starts inside a remaining slice and ends after it
  (``new_ts < end_ts && new_ts + new_dur > end_ts``) cannot nest; ``StackPop`` pops the top (479-489);
  136-151 (``StartSlice``): past ``kMaxDepth`` nothing is pushed; 342-352 (``GetTopmostSliceOnTrack``): the
  stack's top, whether or not it has ended.
- ``src/trace_processor/importers/common/flow_tracker.cc`` 47-63 (``Begin``): a flow start binds to the top
  slice of its track, a second start of one id is ignored (``flow_duplicate_id``); 90-121 (``End``): with
  ``bind_enclosing_slice`` the end binds to the top slice of its track, without it to the next slice that
  begins on that track (140-152, called from ``StackPush``, slice_tracker.cc 491-499); a v1 flow id is
  (id, cat, name) (127-138); ``close_flow`` is false for ``f`` (json_trace_parser.cc 419-420), so every end
  of one id binds from the same start.

``B``/``E`` events and v2 flows (``bind_id``, ``flow_in``/``flow_out``) are not modelled: ``rule()`` counts
them in ``unmodelled`` so a test can assert a trace holds none on the rows it reads.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

INT64_MAX = 2**63 - 1
MAX_DEPTH = 512
KERNEL_CATS = frozenset({"kernel", "Kernel"})


def _perfetto_double(text: str) -> float:
    """json_parser.h 372-432: integer part + fraction / divisor, then the exponent by pow(10, e)."""
    negative = text.startswith("-")
    body = text[1:] if negative else text
    mantissa, _, exponent = body.replace("E", "e").partition("e")
    whole, _, frac = mantissa.partition(".")
    out = float(int(whole or "0"))
    if frac:
        divisor = (10 ** len(frac)) % 2**64  # uint64_t divisor *= 10
        out = out + float(int(frac)) / float(divisor)
    if exponent:
        exp_neg = exponent.startswith("-")
        digits = int(exponent.lstrip("+-") or "0")
        out = out / 10.0**digits if exp_neg else (out * 10.0**digits if digits > 0 else out)
    return -out if negative else out


def _perfetto_int(text: str) -> int | float:
    value = int(text)
    return value if -(2**63) <= value <= INT64_MAX else _perfetto_double(text)


def _llround(value: float) -> int:
    """C's llround: the nearest integer, halves away from zero (computed exactly)."""
    exact = Fraction(value)
    floor = exact.numerator // exact.denominator
    rest = exact - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and exact > 0):
        return floor + 1
    return floor


def to_ns(value: Any) -> int | None:
    """json_trace_tokenizer.cc 221-234 (CoerceToTs); None where Perfetto cannot read a time."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) * 1000 if value == int(value) else _llround(value * 1000.0)
    if isinstance(value, str):
        try:
            parsed = json.loads(value, parse_float=_perfetto_double, parse_int=_perfetto_int)
        except ValueError:
            return None
        return to_ns(parsed) if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) else None
    return None


def _uint32(value: Any) -> Any:
    """json_trace_tokenizer.cc 704-751 and 210-219: a string stays a string, a number becomes uint32 or 0."""
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    n = int(value)
    return n if 0 <= n <= 2**32 - 1 else 0


@dataclass
class Slice:
    index: int  # the event's position in the file's event list
    ts: int
    dur: int


@dataclass
class Result:
    events: list[dict[str, Any]]
    rows: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # event index -> its (pid, tid) row
    spilled: list[int] = field(default_factory=list)  # X events that cannot nest on their row, in processing order
    conflicts: dict[int, int] = field(default_factory=dict)  # spilled event -> the open slice it overlaps
    flows: list[tuple[int, int | None, int | None]] = field(default_factory=list)  # (f event, start slice, end slice)
    unmodelled: int = 0  # B/E events and v2 flow fields

    def spilled_kernels(self) -> list[int]:
        return [i for i in self.spilled if self.events[i].get("cat") in KERNEL_CATS]

    def wrong_arrows(self) -> list[int]:
        """Flow ends bound to a slice that is not their own GPU event (same row, ts and correlation id), or to none."""
        return [f for f, _, end in self.flows if end is None or not self.owns(end, f)]

    def owns(self, slice_index: int, flow_index: int) -> bool:
        s, f = self.events[slice_index], self.events[flow_index]
        args = s["args"] if isinstance(s.get("args"), dict) else {}
        return (
            s.get("ph") == "X"
            and self.rows.get(slice_index) == self.rows.get(flow_index)
            and to_ns(s.get("ts")) == to_ns(f.get("ts"))
            and args.get("correlation") == f.get("id")
        )


def load_events(path: Path) -> list[dict[str, Any]]:
    """The event list, numbers parsed as Perfetto parses them."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=_perfetto_double, parse_int=_perfetto_int)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return [e if isinstance(e, dict) else {} for e in events]


def _row(event: dict[str, Any]) -> tuple[Any, Any]:
    pid = _uint32(event.get("pid", 0))
    tid = _uint32(event.get("tid", 0))
    pid = 0 if pid is None else pid
    tid = 0 if tid is None else tid
    if tid == 0 and pid != 0:  # json_trace_tokenizer.cc 846-849
        tid = pid
    return (pid, tid)


def _sort_key(index: int, event: dict[str, Any], ts: int) -> tuple[int, int, int]:
    phase = str(event.get("ph", ""))[:1]
    if phase == "E":
        key = -(2**63)
    elif phase == "X":
        dur = to_ns(event.get("dur"))
        key = INT64_MAX - (dur if dur is not None else INT64_MAX)
    else:
        key = INT64_MAX
    return (ts, key, index)


def _close_stack(stack: list[Slice], new_ts: int, new_dur: int) -> int | None:
    """slice_tracker.cc 354-477 for a complete slice: pops what has ended; the index of the open slice the new one
    overlaps, or None when it nests (or the stack is empty)."""
    i = len(stack) - 1
    while i >= 0:
        s = stack[i]
        end = s.ts + s.dur
        if end < new_ts or (end == new_ts and not (s.dur == 0 and new_dur == 0)):
            stack.pop()  # StackPop: the top, whichever i is
            i -= 1
            continue
        if new_ts < end and new_ts + new_dur > end:
            return s.index
        i -= 1
    return None


def rule(path: Path) -> Result:
    """Every X and instant event of the file through Perfetto's stacks, its numbers read as Perfetto reads them."""
    return rule_of(load_events(path))


def rule_of(events: list[dict[str, Any]]) -> Result:
    """Every X and instant event through Perfetto's stacks, one main track per (pid, tid); the flows bound."""
    result = Result(events)
    queue: list[tuple[tuple[int, int, int], int, int]] = []
    for n, e in enumerate(events):
        phase = str(e.get("ph", ""))[:1]
        if not phase or phase == "M":
            continue
        if phase in "BE" or "bind_id" in e or "flow_in" in e or "flow_out" in e:
            result.unmodelled += 1
        ts = to_ns(e.get("ts"))
        if ts is None or ts < 0:
            continue
        result.rows[n] = _row(e)
        queue.append((_sort_key(n, e, ts), n, ts))
    queue.sort()
    walk = _Walk(result)
    for _, n, ts in queue:
        phase = str(events[n].get("ph", ""))[:1]
        if phase == "X":
            walk.complete(n, ts)
        elif phase in "iIR" and events[n].get("s", "t") == "t":
            walk.instant(n, ts)
        elif phase in "sf":
            walk.flow(n, phase)
    return result


class _Walk:
    """The importer's state: a slice stack per main track, flow starts by v1 id, flow ends waiting for a slice."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.stacks: dict[tuple[Any, Any], list[Slice]] = {}
        self.starts: dict[tuple[Any, Any, Any], int] = {}
        self.pending: dict[tuple[Any, Any], list[tuple[int, tuple[Any, Any, Any]]]] = {}

    def _push(self, row: tuple[Any, Any], s: Slice) -> None:
        stack = self.stacks.setdefault(row, [])
        if len(stack) >= MAX_DEPTH:
            return
        stack.append(s)
        for f, key in self.pending.pop(row, []):  # flow_tracker.cc 140-152
            self.result.flows.append((f, self.starts.get(key), s.index))

    def complete(self, n: int, ts: int) -> None:
        row = self.result.rows[n]
        dur = to_ns(self.result.events[n].get("dur"))
        if dur is None or dur < 0:
            return
        conflict = _close_stack(self.stacks.setdefault(row, []), ts, dur)
        if conflict is not None:
            self.result.spilled.append(n)
            self.result.conflicts[n] = conflict
            return
        self._push(row, Slice(n, ts, dur))

    def instant(self, n: int, ts: int) -> None:
        row = self.result.rows[n]
        if _close_stack(self.stacks.setdefault(row, []), ts, 0) is None:
            self._push(row, Slice(n, ts, 0))

    def flow(self, n: int, phase: str) -> None:
        e = self.result.events[n]
        flow_id = e.get("id")
        if isinstance(flow_id, str):
            try:
                flow_id = int(flow_id, 16)
            except ValueError:
                return
        if not isinstance(flow_id, int) or isinstance(flow_id, bool):
            return
        key = (flow_id, e.get("cat"), e.get("name"))
        row = self.result.rows[n]
        stack = self.stacks.get(row) or []
        top = stack[-1].index if stack else None
        if phase == "s":
            if top is not None and key not in self.starts:
                self.starts[key] = top
        elif e.get("bp") != "e":
            self.pending.setdefault(row, []).append((n, key))
        elif key in self.starts:
            self.result.flows.append((n, self.starts[key], top))
