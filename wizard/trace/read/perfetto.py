"""Reader for Perfetto protobuf traces (``.pftrace``, ``.pftrace.gz``, ``.perfetto-trace``), packet by packet,
into the same contents the JSON reader gives.

Two writers matter to PyTorch users, and both are read by one small decoder of the few messages they use
(perfetto's ``protos/perfetto/trace``; field numbers as the ``perfetto`` package's generated bindings give them,
which the tests use to write and to read the same files a second time):

- **TrackEvent slices** (``TracePacket.track_event``, 11): ``TYPE_SLICE_BEGIN``/``END`` pairs per track, names
  and categories interned (``InternedData`` 12), args as debug annotations. Converters of Kineto JSON
  (drisspg/transformer_nuggets' ``track_event.py``) write every event this way, so kernels arrive as slices whose
  category is ``kernel``, with the JSON's args.
- **PyTorch 2.15's Cuspy** (``torch/csrc/profiler/cuspy/cuspy_pftrace.cpp``): CPU ops and runtime calls as
  TrackEvent slices (a launch's ``gpu_correlation``, raw field 3000, lists the render stages it launched), and
  one ``GpuRenderStageEvent`` (53) per GPU op: stage (Kernel, Memcpy, Memset, Annotation, ...) by
  ``stage_iid``, the lane by ``hw_queue_iid``, grid and block in ``launch``, the kernel's name through
  ``InternedComputeKernel`` (raw field 1000 of InternedData), correlation and stream in ``extra_data``. Cuspy
  clamps each GPU op's end to the next op's start on its lane before writing (``_build_render_stages`` in
  ``torch/profiler/_cuspy/trace.py``): overlaps cannot be seen in its files, so ``kernels-overlap`` is not
  applicable there; static shared memory is not written (only the dynamic part).

Timestamps are nanoseconds; they become Kineto's microseconds after subtracting Kineto's base (the start of the
three-month period the first timestamp falls in), so values match the JSON export of the same run. The kernels',
GPU ops' and other slices' nanoseconds are also kept as they are (``ExactTimes``): Perfetto reads TrackEvent times
as integers, and a microsecond double near 1.7e15 steps by 0.25 µs, so the nesting rule on microseconds rounded
back to nanoseconds saw kernels that only touch overlap (issue 45 item 10).

The file is untrusted: a packet is at most ``MAX_PACKET`` bytes, nesting is bounded, interned tables and open
slices are bounded, a truncated or damaged packet ends the read with a one-line error naming its offset.

The per-event work runs compiled where warpwizard's core is built (``wizard/_core.c``): ``split_run`` (the
packets a buffer holds, in one call, as a ``Run`` lying in the buffer), ``track_event`` (a TrackEvent's name and
category) and ``event_args`` (its annotations into the event's args, through the sequence's memo, the core's
``Memo``) and ``Slices`` (the slices open on each track, closed into events, and the plain TrackEvent packets of a
run read in one call, where they lie); their twins here, ``pure_*`` and ``PureSlices`` (with a dict for the memo
and a list of bytes for a run), run under ``WARPWIZARD_PURE=1`` or where no compiler built the core, with the same
results and errors (tests/trace/test_compiled_core_events.py, test_compiled_core_slices.py, test_core_memo.py).
"""

from __future__ import annotations

import contextlib
import gc
import io
import re
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

import msgspec

from wizard.compiled_core import compiled as compiled_core
from wizard.errors import InputFileError
from wizard.formatting import plural
from wizard.trace.read import cuspy, inflate
from wizard.trace.read import protobuf as _protobuf
from wizard.trace.read.collector import (
    GPU_OPS,
    KERNELS,
    MAX_NAME,
    SLICES,
    Collector,
    ExactTimes,
    TraceContents,
    Truncation,
)
from wizard.trace.read.events import (
    GPU_OP_CATEGORIES,
    KERNEL_CATEGORIES,
    OP_CATEGORIES,
    PYTHON_CATEGORIES,
    RUNTIME_CATEGORIES,
    Event,
    EventArgs,
)
from wizard.trace.read.protobuf import Damaged as _Damaged
from wizard.trace.read.protobuf import Field
from wizard.trace.read.protobuf import fields as _fields
from wizard.trace.read.protobuf import fields_of_prefix as _fields_of_prefix
from wizard.trace.read.protobuf import packed_varints as _varints
from wizard.trace.read.protobuf import packet_head as _packet_head
from wizard.trace.read.protobuf import signed as _signed
from wizard.trace.read.protobuf import text as _text
from wizard.trace.read.protobuf import track_event_fields as _track_event_fields
from wizard.trace.read.protobuf import varint as _varint
from wizard.trace.read.source import open_input
from wizard.untrusted import cut, visible

MAX_PACKET = 64 << 20  # one TracePacket; Perfetto's own writers stay far below (a chunk is 64 KB)
MAX_INTERNED = 4_000_000  # live entries of every interned table together (a clear frees its sequence's)
MAX_SEQUENCES = 10_000  # writer sequences (each has its own interned state)
MAX_PENDING = 1_000_000  # launches waiting for the render stage they link to
MAX_OPEN = 100_000  # slices open at once, over every track
# Bytes where counts are bounded (issue 47 item 1: 1,500 interned names of 1 MB took 1.55 GB). Every name is cut to
# MAX_NAME characters where it is read (NAME_BYTES of UTF-8 decoded at most); what the read keeps for the whole file
# is bounded in characters, at most 4 bytes each as Python holds text:
MAX_HELD_CHARS = 64 << 20  # live interned strings and track names together: 64 Mi characters (at most 256 MB)
# what the slices open at once keep: their names' and inline categories' characters, their annotations' bytes
MAX_OPEN_BYTES = 64 << 20
NAME_BYTES = 4 * MAX_NAME
MAX_DEPTH = 32  # nesting of debug annotations kept (deeper values are dropped, not followed)
# Nesting of a legacy JSON value decoded; deeper is kept as its text (the compiled core's JSON_DEPTH is the same).
# msgspec's own limit is the Python stack left (a RecursionError), so the same value decoded from a deeper caller
# (the compiled path calls from C, the pure one from several frames down) came out a list on one path and text on
# the other. Counted in the bytes, the answer is the same everywhere: 64 is far past what a writer nests (a grid
# or Input Dims is 1 or 2 deep) and, under MAX_DEPTH annotations of 2 frames each, far under Python's 1,000 frames.
JSON_DEPTH = 64
CHUNK = 1 << 20
TICK = 4096  # top-level entries between two looks at the clock (and one after every chunk read)
MAX_SKIPPED = 1_000_000  # top-level entries other than packets (Trace has no other field; writers write none)
MEMO_BYTES = 64  # debug annotations at most this long are remembered by their bytes
MEMO_ENTRIES = 16_384  # and at most this many over every sequence (a clear frees its sequence's; full, it starts again)
END_BYTES = 16  # a TrackEvent at most this long that ends a slice is remembered by its bytes (at most MEMO_ENTRIES)
BATCH = 10_000  # events handed to the collector at once (50,000 held 7 MB more, and the kernel zeroed its pages)
BATCH_BYTES = 16 << 20  # and at most about this much of their names and annotations (a batch of megabyte args)
TRIMONTH_S = 7_889_238  # Kineto's base-time period (torch/profiler/_cuspy/trace.py: _TRIMONTH_SECONDS)

# TracePacket
_TIMESTAMP, _TRACK_EVENT, _INTERNED, _SEQ_ID, _SEQ_FLAGS, _CLEARED, _TRACK_DESCRIPTOR, _RENDER_STAGE = (
    8, 11, 12, 10, 13, 41, 60, 53,
)  # fmt: skip
_SEQ_INCREMENTAL_STATE_CLEARED = 1
# TrackEvent
_TE_CATEGORY_IIDS, _TE_DEBUG, _TE_TYPE, _TE_NAME_IID, _TE_TRACK, _TE_CATEGORIES, _TE_NAME, _TE_LEGACY = (
    3, 4, 9, 10, 11, 22, 23, 6,
)  # fmt: skip
_TE_GPU_CORRELATION = 3000  # Cuspy's GpuTrackEvent.gpu_correlation (field 1: render-stage event ids)
_SLICE_BEGIN, _SLICE_END = 1, 2
_CLOCK_SNAPSHOT, _CLOCK_ID, _DEFAULTS = 6, 58, 59  # TracePacket fields
# InternedData: (field, table) for the name-like tables read
_INTERNED_TABLES = {1: "categories", 2: "names", 3: "annotation_names", 24: "gpu_specs", 1000: "kernels"}
_INTERNED_STRINGS = 29  # debug_annotation_string_values (InternedString: iid 1, str 2)
# Cuspy's render stages by name (its _RENDER_STAGES), as Kineto's categories
_STAGE_CATEGORIES = {
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "Annotation": "gpu_user_annotation",
    "EventRecord": "graph_event_node",
    "HostNode": "graph_host_node",
}
# The args an event keeps (``EventArgs``' fields, by the JSON's names): a debug annotation of another name (External
# id, cbid, queued, context, ...) is skipped by its name, its value never decoded. Names as bytes too: a name field is
# looked up before it is decoded (``replace`` decoding turns no other bytes into these ASCII names).
_ARG_FIELDS = {f.encode_name: f.name for f in msgspec.structs.fields(EventArgs)}
_ARG_FIELDS_BYTES = {encoded.encode(): attr for encoded, attr in _ARG_FIELDS.items()}
_RAW_ARGS = frozenset(f.name for f in msgspec.structs.fields(EventArgs) if f.type is msgspec.Raw)  # kept as JSON
# extra_data keys Cuspy writes that an event keeps (graph id, graph node id and bytes are not EventArgs fields)
_EXTRA_ARGS = {"correlation": "correlation", "stream id": "stream"}


# The categories whose args the collector reads (the rest: name, row and time only), so only their debug
# annotations are decoded: a with_stack trace's python_function slices are most of its events
ARGS_READ = KERNEL_CATEGORIES | RUNTIME_CATEGORIES | OP_CATEGORIES | GPU_OP_CATEGORIES


_DECIMAL = re.compile(r"-?[0-9]{1,20}")  # an integer extra_data value, ASCII digits only


class _Memo(Protocol):
    """A sequence's memo of annotations by their bytes, as the twin uses it: a dict, or the core's ``Memo`` where it
    is built (the note's look-up by the bytes where they lie, the same entries)."""

    def get(self, key: bytes, /) -> tuple[str | None, Any] | None: ...
    def __getitem__(self, key: bytes, /) -> tuple[str | None, Any]: ...
    def __setitem__(self, key: bytes, value: tuple[str | None, Any], /) -> None: ...
    def __delitem__(self, key: bytes, /) -> None: ...
    def __len__(self) -> int: ...
    def clear(self) -> None: ...
    def keys(self) -> Any: ...
    def values(self) -> Any: ...


def _new_memo() -> _Memo:
    """The memo a new sequence starts with: the core's where ``_event_args`` is the core's (``_MEMO``, below)."""
    return _MEMO()


@dataclass
class _Sequence:
    """One writer sequence's interned state (cleared by SEQ_INCREMENTAL_STATE_CLEARED)."""

    tables: dict[str, dict[int, str]] = field(default_factory=lambda: {t: {} for t in _INTERNED_TABLES.values()})
    strings: dict[int, str] = field(default_factory=dict)
    interned: int = 0  # entries held, for the bound over every sequence
    chars: int = 0  # characters they hold, for the bound over every sequence
    default_track: int = 0  # TracePacketDefaults.track_event_defaults.track_uuid
    memo: _Memo = field(default_factory=_new_memo)  # annotations by their bytes (_annotation)


class _Track(NamedTuple):
    """A track's row, as its descriptor gives it: a tuple, which the core reads by index (an attribute of a
    dataclass cost a generic look-up per slice), and never changed (a descriptor read again makes another)."""

    pid: Any
    tid: Any
    name: str


# A slice begun and not yet ended: (ts in ns, name, category, args by EventArgs field, gpu_correlation links, size:
# its name's characters and its annotations' bytes, for the bound on what open slices hold). A tuple, not an object:
# one is made per slice.
_Open = tuple[int, str, "str | None", dict[str, Any], "list[int] | tuple[()]", int]
# A launch waiting for the render stage it links to: (cat, name, pid, tid, ts in µs, ts and dur in ns, args, links)
_Pending = tuple["str | None", str, Any, Any, float, int, int, dict[str, Any], "list[int] | tuple[()]"]
_NO_LINKS: tuple[()] = ()
# A TrackEvent as track_event reads it: (type, track or -1, name, category, annotations' spans, other fields or None)
_TrackEventFields = tuple[int, int, str, "str | None", list[tuple[int, int]], "list[Field] | None"]
_NO_ARGS = EventArgs()  # one for every event without args (a Python function's): nothing changes an event's args


class _Reader:
    """The packets of one trace, into the collector."""

    def __init__(self, contents: TraceContents) -> None:
        self.c = contents
        self.collector = Collector(contents)
        self.sequences: dict[int, _Sequence] = {}
        self.last_sequence: tuple[int, _Sequence] | None = None  # the sequence of the packet before: nearly always
        self.interned = 0
        self.held = 0  # characters of live interned strings and track names (MAX_HELD_CHARS)
        self.ends: dict[bytes, int] = {}  # a slice end's bytes -> its track (-1: the sequence's default; MEMO_ENTRIES)
        self.tracks: dict[int, _Track] = {}
        self.base: int | None = None
        self.exact = contents.exact_ns = ExactTimes()
        # the TrackEvents' slices, open and closed into events (compiled where the core is built: _core.Slices),
        # each event handed to the collector as it is made where the compiled dispatch is bound (Slices.sink)
        self.slices = _Slices(self.tracks, self.exact, self.ends, _bounds())
        self.slices.sink(self.collector)
        self.at = 0  # the packet of the run being read (run), for the error's offset
        self.clocks = False  # packets named a clock or defaults this reader does not apply
        self.cuspy = False  # raw fields only Cuspy writes were seen
        self.event_correlation: dict[int, int] = {}  # render stage event_id -> correlation (launch links)

    # what tests look at: the slices open (by track), their count and bytes, the events not yet handed over
    @property
    def open(self) -> dict[int, list[_Open]]:
        return self.slices.stacks

    @property
    def open_count(self) -> int:
        return self.slices.open_count

    @property
    def open_bytes(self) -> int:
        return self.slices.open_bytes

    @property
    def batch(self) -> list[Event]:
        return self.slices.batch

    @property
    def track_events(self) -> int:
        return self.slices.track_events

    def run(self, batch: Sequence[bytes]) -> None:
        """A run of packets: the plain TrackEvents of the sequence of the packet before in one call
        (``Slices.packets``), any other packet by ``packet``. ``at``: the packet being read, for an error."""
        k, count, packets = 0, len(batch), self.slices.packets
        while k < count:
            try:
                k, due = packets(batch, k, self.last_sequence)
            except _Damaged:
                self.at = self.slices.at
                raise
            if due:
                self.flush()
            elif k < count:
                self.at = k
                self.packet(batch[k])
                k += 1

    # -- packets ------------------------------------------------------------------------------------------

    def packet(self, b: bytes) -> None:
        """One TracePacket: its fields read in one call (``protobuf.packet_head``, compiled where the core is
        built), the sequence of the packet before taken again without a look-up."""
        ts, seq_id, flags, kind, body, interned, defaults, snapshot, clocks = _packet_head(b)
        if clocks:
            self.clocks = True
        if snapshot and ts is not None and self.base is None:
            self._base_from(ts)
        last = self.last_sequence
        if last is None or last[0] != seq_id or flags & _SEQ_INCREMENTAL_STATE_CLEARED:
            last = self.last_sequence = (seq_id, self._sequence(seq_id, bool(flags & _SEQ_INCREMENTAL_STATE_CLEARED)))
        seq = last[1]
        if defaults is not None:
            self._defaults(b, defaults, seq)
        if interned is not None:
            self._interned(b, interned, seq)
        if kind == _TRACK_EVENT and ts is not None:
            ended = self.ends.get(b[body[0] : body[1]]) if body[1] - body[0] <= END_BYTES else None
            if ended is None:
                self._track_event(b, body, ts, seq)
            else:  # a slice's end seen before: its track, without decoding it
                self.slices.track_events += 1
                self._flush_if(self.slices.close(seq.default_track if ended < 0 else ended, ts))
        elif kind == _TRACK_DESCRIPTOR:
            self._track(b, body)
        elif kind == _RENDER_STAGE and ts is not None:
            self._render_stage(b, body, ts, seq)

    def _sequence(self, seq_id: int, cleared: bool) -> _Sequence:
        """The writer sequence's interned state, anew when the packet clears it."""
        seq = self.sequences.get(seq_id)
        if seq is not None and not cleared:
            return seq
        if seq is not None:
            self.interned -= seq.interned
            self.held -= seq.chars
            self.slices.memo_entries -= len(seq.memo)
        elif len(self.sequences) >= MAX_SEQUENCES:
            raise _Damaged(f"more than {MAX_SEQUENCES} writer sequences")
        seq = self.sequences[seq_id] = _Sequence()
        return seq

    def _base_from(self, ts: int) -> None:
        """Cuspy's first packet is a clock snapshot at its base time (Kineto's baseTimeNanoseconds, a multiple of
        three months): times are then said relative to it, as Cuspy's JSON says them. Any other writer's times
        stay absolute, as the JSON it was converted from."""
        period = TRIMONTH_S * 10**9
        self.base = ts if ts % period == 0 else 0
        self.slices.base = self.base

    def _defaults(self, b: bytes, span: tuple[int, int], seq: _Sequence) -> None:
        """TracePacketDefaults: the track a sequence's events default to (the Perfetto SDK's thread tracks);
        a default clock other than the trace's is not applied, and said."""
        for number, wire, value in _fields(b, *span):
            if number == 11 and wire == 2:  # track_event_defaults
                for n, w, v in _fields(b, *value):
                    if n == 11 and w == 0:
                        seq.default_track = v
            elif number == 58:
                self.clocks = True

    def _interned(self, b: bytes, span: tuple[int, int], seq: _Sequence) -> None:
        for number, wire, value in _fields(b, *span):
            if wire != 2:
                continue
            table = _INTERNED_TABLES.get(number)
            if table is None and number != _INTERNED_STRINGS:
                continue
            iid, text = 0, ""
            kernel_name = ""
            for n, w, v in _fields(b, *value):
                if n == 1 and w == 0:
                    iid = v
                elif n == 2 and w == 2:
                    text = _name(b, v)
                elif n == 3 and w == 2 and table == "kernels":
                    kernel_name = _name(b, v)  # demangled_name, which Cuspy writes (no mangled name)
            self.interned += 1
            seq.interned += 1
            if self.interned > MAX_INTERNED:
                raise _Damaged(f"more than {MAX_INTERNED} interned strings")
            chars = len(text) + len(kernel_name)
            seq.chars += chars
            self._hold(chars)
            if table is None:
                seq.strings[iid] = text
            else:
                if table == "kernels":
                    self.cuspy = True
                    text = kernel_name or text
                seq.tables[table][iid] = text

    def _track(self, b: bytes, span: tuple[int, int]) -> None:  # noqa: PLR0912
        """A track's row: a thread descriptor's (pid, tid); else its parent's pid and the row a viewer merges it
        into (``sibling_merge_key``: converters split crossing slices over tracks merged into one row), else its
        name. A process track without a pid (a converter's "Spans") is its name."""
        uuid, parent, name, merge_key = 0, 0, "", ""
        pid: Any = None
        tid: Any = None
        for number, wire, value in _fields(b, *span):
            if number == 1 and wire == 0:
                uuid = value
            elif number == 5 and wire == 0:
                parent = value
            elif number in (2, 10) and wire == 2:
                name = _name(b, value)
            elif number == 16 and wire == 2:
                merge_key = _name(b, value)
            elif number in (3, 4) and wire == 2:  # process / thread descriptor
                for n, w, v in _fields(b, *value):
                    if n == 1 and w == 0:
                        pid = _signed(v)
                    elif n == 2 and w == 0 and number == 4:
                        tid = _signed(v)
                    elif n in (5, 6) and w == 2 and not name:
                        name = _name(b, v)
        if pid is None and parent in self.tracks:
            pid = self.tracks[parent].pid
        if pid is None and not parent:
            pid = name or uuid
        if tid is None:
            tid = merge_key or name or uuid
        if len(self.tracks) < MAX_INTERNED:
            if uuid not in self.tracks:
                self._hold(len(name) + len(merge_key))
            self.tracks[uuid] = _Track(pid, tid, cut(name, 200))

    def _hold(self, chars: int) -> None:
        """Characters the read keeps for the whole file (interned strings, track names), bounded: past the bound
        the file is refused with one line, as for every other bound of the format (docs/security.md)."""
        self.held += chars
        if self.held > MAX_HELD_CHARS:
            raise _Damaged(f"more than {MAX_HELD_CHARS >> 20} Mi characters of interned strings and track names")

    @staticmethod
    def _annotations(b: bytes, span: tuple[int, int], seq: _Sequence, depth: int = 0) -> tuple[str, Any]:
        """One debug annotation: (name, value) with arrays and dicts as lists and dicts."""
        found = _fields(b, *span)
        name = ""
        for number, wire, v in found:
            if number == 1 and wire == 0:
                name = seq.tables["annotation_names"].get(v, "")
            elif number == 10 and wire == 2:
                name = _text(b, v)
        return name, _Reader._value(b, found, seq, depth)

    @staticmethod
    def _value(b: bytes, found: list[Field], seq: _Sequence, depth: int) -> Any:  # noqa: PLR0912
        """A debug annotation's value from its fields (the last one written, or its array or dict entries)."""
        value: Any = None
        items: list[Any] = []
        entries: dict[str, Any] = {}
        for number, wire, v in found:
            if number == 3 and wire == 0:
                value = v
            elif number == 4 and wire == 0:
                value = _signed(v)
            elif number == 2 and wire == 0:
                value = bool(v)
            elif number == 5 and wire == 1:
                value = _double(v)
            elif number == 6 and wire == 2:
                value = _text(b, v)
            elif number == 17 and wire == 0:
                value = seq.strings.get(v, "")
            elif number == 9 and wire == 2:
                value = _json(b, v)  # legacy_json_value: converters write lists (grid, Input Dims) this way
            elif number in (11, 12) and wire == 2 and depth < MAX_DEPTH:
                key, inner = _Reader._annotations(b, v, seq, depth + 1)
                if number == 12:
                    items.append(inner)
                else:
                    entries[key] = inner
        if items:
            return items
        if entries:
            return entries
        return value

    def _track_event(self, b: bytes, span: tuple[int, int], ts: int, seq: _Sequence) -> None:
        """A TrackEvent: a slice begun (held until its end), ended, or complete (legacy). Its fields read in one
        call (``track_event``, compiled where the core is built), its gpu_correlation links and legacy duration
        here, the rest by ``Slices.slice``."""
        start, end = span
        fields = _read_track_event(b, start, end, seq)
        links: list[int] | tuple[()] = _NO_LINKS
        legacy_dur: int | None = None
        if fields[5] is not None:
            links, legacy_dur = self._track_event_rest(b, fields[5])
        self._flush_if(self.slices.slice(b, start, end, ts, seq, fields, links, legacy_dur))

    def _track_event_rest(self, b: bytes, rest: list[Field]) -> tuple[list[int] | tuple[()], int | None]:
        """A TrackEvent's gpu_correlation links and its legacy duration, from those fields in their order."""
        links: list[int] | tuple[()] = _NO_LINKS
        legacy_dur: int | None = None
        for number, _, value in rest:
            if number == _TE_GPU_CORRELATION:
                self.cuspy = True
                links = _links(b, value, links)
            else:  # _TE_LEGACY
                legacy_dur = _legacy_duration(b, value, legacy_dur)
        return links, legacy_dur

    def _render_stage(self, b: bytes, span: tuple[int, int], ts: int, seq: _Sequence) -> None:
        event_id = duration = stage = lane = kernel = name_iid = 0
        gpu = 0
        name = ""
        args: dict[str, Any] = {}
        for number, wire, value in _fields(b, *span):
            if number == 1 and wire == 0:
                event_id = value
            elif number == 2 and wire == 0:
                duration = value
            elif number == 14 and wire == 0:
                stage = value
            elif number == 13 and wire == 0:
                lane = value
            elif number == 11 and wire == 0:
                gpu = _signed(value)
            elif number == 19 and wire == 0:
                kernel = value
            elif number == 20 and wire == 0:
                name_iid = value
            elif number == 17 and wire == 2:
                name = _name(b, value)
            elif number == 6 and wire == 2:
                self._extra(b, value, args)
            elif number == 21 and wire == 2:
                self._launch(b, value, seq, args)
        specs = seq.tables["gpu_specs"]
        stage_name = specs.get(stage, "")
        cat = _STAGE_CATEGORIES.get(stage_name, "gpu_render_stage")
        label = seq.tables["names"].get(name_iid) or seq.tables["kernels"].get(kernel) or name or stage_name
        args["device"] = gpu
        correlation = args.get("correlation")
        if isinstance(correlation, int) and event_id:
            self.event_correlation[event_id] = correlation
        self._flush_if(self.slices.event(cat, label, gpu, specs.get(lane) or lane, ts, duration, args))

    def _extra(self, b: bytes, span: tuple[int, int], args: dict[str, Any]) -> None:
        key = value = ""
        for n, w, v in _fields(b, *span):
            if n == 1 and w == 2:
                key = _text(b, v)
            elif n == 2 and w == 2:
                value = _text(b, v)
        arg = _EXTRA_ARGS.get(key)
        if arg is not None:
            args[arg] = int(value) if _DECIMAL.fullmatch(value) else value

    def _launch(self, b: bytes, span: tuple[int, int], seq: _Sequence, args: dict[str, Any]) -> None:
        for number, wire, value in _fields(b, *span):
            if number in (1, 2) and wire == 2:
                dims = {n: v for n, w, v in _fields(b, *value) if w == 0 and n in (1, 2, 3)}
                args["grid" if number == 1 else "block"] = [dims.get(1, 0), dims.get(2, 0), dims.get(3, 0)]
            elif number == 3 and wire == 2:
                arg_name, arg_value = 0, None
                for n, w, v in _fields(b, *value):
                    if n == 1 and w == 0:
                        arg_name = v
                    elif n in (3, 4) and w == 0:  # ExtraComputeArg: int_value 3, uint_value 4
                        arg_value = _signed(v) if n == 3 else v
                if arg_name == 1 and arg_value is not None:  # Cuspy's _COMPUTE_ARGS: 1 registers_per_thread
                    args["registers"] = arg_value

    # -- events ---------------------------------------------------------------------------------------------

    def _flush_if(self, due: bool) -> None:
        if due:
            self.flush()

    def flush(self) -> None:
        batch = self.slices.take()
        if batch:
            self.collector.add(batch)

    def finish(self) -> None:
        """Launches linked to their render stages by event id (Cuspy) take the stages' correlation; slices still
        open at the end are counted as the truncation they are."""
        pending = self.slices.pending
        for cat, name, pid, tid, us, ts, dur, args, links in list(pending):
            found = next((self.event_correlation[e] for e in links if e in self.event_correlation), None)
            if found is not None:
                args["correlation"] = found
            if self.slices.event(cat, name, pid, tid, ts, dur, args, us):
                self.flush()
        pending.clear()
        self.flush()


class PureSlices:
    """A read's TrackEvent slices (compiled where the core is built: ``_core.Slices``, the same results and
    errors). ``packets`` reads the plain TrackEvent packets of a run (the sequence of the packet before, no
    interned data, defaults or clocks, no gpu_correlation or legacy fields), ``slice`` a TrackEvent decoded: a
    slice begun waits on its track's stack, within ``max_open`` slices and ``max_open_bytes`` of what they keep
    (names, categories, annotations); an end pops the innermost slice of its track into an ``Event`` of the
    track's row, its nanoseconds beside the table the collector puts it in (``ExactTimes``). A slice's end is
    remembered by its bytes (``ends``, at most ``memo_limit``, of at most ``end_bytes``). The methods that make
    events say whether the batch is due to be handed over (``take``): ``batch`` events or ``batch_bytes`` of what
    their slices kept."""

    def __init__(self, tracks: dict[int, _Track], exact: ExactTimes, ends: dict[bytes, int], bounds: _Bounds) -> None:
        self.tracks, self.exact, self.ends = tracks, exact, ends
        self.max_open, self.max_open_bytes, self.max_pending = bounds[0], bounds[1], bounds[2]
        self.batch_limit, self.batch_bytes_limit, self.end_bytes, self.memo_limit = bounds[3:]
        self._open: dict[int, list[_Open]] = {}
        self.open_count = 0
        self.open_bytes = 0
        self._batch: list[Event] = []
        self.batch_bytes = 0  # names and annotations of the batch's slices
        self.pending: list[_Pending] = []  # launches whose correlation is a link
        self.base = 0  # Kineto's base time in ns (Cuspy's), else 0
        self.track_events = 0
        self.memo_entries = 0  # annotations remembered, over every sequence (MEMO_ENTRIES)
        self.at = 0  # the packet ``packets`` was reading when it raised

    def packets(self, batch: Sequence[bytes], k: int, last: tuple[int, _Sequence] | None) -> tuple[int, bool]:
        """From ``batch[k]`` on, the plain TrackEvent packets of ``last``'s sequence: (the first packet not read,
        whether the batch is due). A packet that is not plain is left unread, before any change, to the reader."""
        if last is None:
            return k, False
        seq_id, seq = last
        try:
            while k < len(batch):
                b = batch[k]
                ts, sid, flags, kind, body, interned, defaults, snapshot, clocks = _packet_head(b)
                if kind != _TRACK_EVENT or ts is None or sid != seq_id or flags & _SEQ_INCREMENTAL_STATE_CLEARED:
                    return k, False
                if interned is not None or defaults is not None or snapshot or clocks:
                    return k, False
                due = self._plain(b, body, ts, seq)
                if due is None:
                    return k, False
                k += 1
                if due:
                    return k, True
        except _Damaged:
            self.at = k
            raise
        return k, False

    def _plain(self, b: bytes, span: tuple[int, int], ts: int, seq: _Sequence) -> bool | None:
        """A TrackEvent without gpu_correlation or legacy fields (None, unread, where it has them)."""
        start, end = span
        ended = self.ends.get(b[start:end]) if end - start <= self.end_bytes else None
        if ended is not None:  # a slice's end seen before: its track, without decoding it
            self.track_events += 1
            return self.close(seq.default_track if ended < 0 else ended, ts)
        fields = _read_track_event(b, start, end, seq)
        if fields[5] is not None:
            return None
        return self.slice(b, start, end, ts, seq, fields, _NO_LINKS, None)

    def slice(  # noqa: PLR0917 - a TrackEvent decoded, where it lies, and what the reader read of its other fields
        self,
        b: bytes,
        start: int,
        end: int,
        ts: int,
        seq: _Sequence,
        fields: _TrackEventFields,
        links: list[int] | tuple[()],
        legacy_dur: int | None,
    ) -> bool:
        """A TrackEvent decoded (``track_event``'s fields): a slice begun, ended, or complete (legacy). Its
        annotations are decoded only for the categories whose args are read, and only those of the names an event
        keeps. A slice's end (half the packets: a type and a track) is remembered by its bytes."""
        kind, track, name, cat, notes, _ = fields
        self.track_events += 1
        if kind == _SLICE_END:
            if end - start <= self.end_bytes and len(self.ends) < self.memo_limit:
                self.ends[b[start:end]] = track  # the same bytes end a slice on the same track (or the default)
            return self.close(seq.default_track if track < 0 else track, ts)
        if track < 0:
            track = seq.default_track
        held = len(name)  # what an open slice keeps: its name and category (cut), the annotations decoded for it
        if cat is not None:
            held += len(cat)
        args: dict[str, Any] = {}
        if notes and (cat is None or cat in ARGS_READ):
            size, self.memo_entries = _event_args(b, notes, seq, args, self.memo_entries)
            held += size
        if kind == _SLICE_BEGIN:
            self.open(track, (ts, name, cat, args, links, held))
        elif legacy_dur is not None:  # a complete event in the legacy form (phase X with a duration)
            return self.emit(track, ts, legacy_dur * 1000, name, cat, args, links, held)
        return False

    @property
    def stacks(self) -> dict[int, list[_Open]]:
        """The slices open by track: a copy."""
        return {track: list(stack) for track, stack in self._open.items()}

    @property
    def batch(self) -> list[Event]:
        """The events not yet taken: a copy."""
        return list(self._batch)

    def open(self, track: int, began: _Open) -> None:
        """A slice begun, held until its end, bounded in count and in the bytes it came from."""
        if self.open_count >= self.max_open:
            raise _Damaged(f"more than {self.max_open} slices open at once")
        size = began[5]
        if self.open_bytes + size > self.max_open_bytes:
            raise _Damaged(f"slices open at once holding more than {self.max_open_bytes >> 20} MiB")
        stack = self._open.get(track)
        if stack is None:
            self._open[track] = [began]
        else:
            stack.append(began)
        self.open_count += 1
        self.open_bytes += size

    def close(self, track: int, ts: int) -> bool:
        """A slice's end: the innermost slice open on its track ends (an end with none open is dropped)."""
        stack = self._open.get(track)
        if not stack:
            return False
        began, name, cat, args, links, size = stack.pop()
        self.open_count -= 1
        self.open_bytes -= size
        if not stack:
            del self._open[track]
        return self.emit(track, began, ts - began, name, cat, args, links, size)

    def emit(  # noqa: PLR0917 - a slice's fields, in the order the packet gives them
        self,
        track: int,
        ts: int,
        dur: int,
        name: str,
        cat: str | None,
        args: dict[str, Any],
        links: list[int] | tuple[()],
        size: int,
    ) -> bool:
        """A slice as an event of its track's row (``size``: what it kept, counted in the batch); a launch linked
        to render stages without its correlation waits in ``pending`` for ``finish``."""
        self.batch_bytes += size
        where = self.tracks.get(track)
        pid, tid = (None, track) if where is None else (where.pid, where.tid)
        if links and "correlation" not in args:
            if len(self.pending) >= self.max_pending:
                raise _Damaged(f"more than {self.max_pending} launches linked to render stages not yet read")
            self.pending.append((cat, name, pid, tid, (ts - self.base) / 1000.0, ts, dur, args, links))
            return False
        return self.event(cat, name, pid, tid, ts, dur, args)

    def event(  # noqa: PLR0917 - an event's fields, as the JSON reader's events have them
        self,
        cat: str | None,
        name: str,
        pid: Any,
        tid: Any,
        ts: int,
        dur: int,
        args: dict[str, Any],
        us: float | None = None,
    ) -> bool:
        """An event to the batch, and its nanoseconds beside the table the collector puts it in (the dispatch of
        ``Collector.add``, in its order: an op or runtime call, a kernel, a Python function, a GPU op, else a
        slice). ``args`` are already by ``EventArgs`` field, ``pid`` and ``tid`` ints or text (dict keys as the
        JSON's are); ``us``: the start in microseconds where it was taken earlier (Kineto's, from the base)."""
        base = self.base
        kept = EventArgs(**args) if args else _NO_ARGS
        ev = Event(cat, name, pid, tid, (ts - base) / 1000.0 if us is None else us, dur / 1000.0, kept)
        if cat in KERNEL_CATEGORIES:
            self.exact.add(KERNELS, ts - base, dur)
        elif cat in GPU_OP_CATEGORIES:
            self.exact.add(GPU_OPS, ts - base, dur)
        elif not (cat in OP_CATEGORIES or cat in RUNTIME_CATEGORIES or cat in PYTHON_CATEGORIES):
            self.exact.add(SLICES, ts - base, dur)
        self._batch.append(ev)
        return len(self._batch) >= self.batch_limit or self.batch_bytes >= self.batch_bytes_limit

    def sink(self, collector: Collector | None) -> bool:
        """The compiled Slices hands each event to the collector's compiled dispatch as it is made, reusing one
        Event, and ``take`` flushes what it handed over; the twin keeps its batch, which the reader's flush hands
        to ``Collector.add``: the same events reach the collector in the same order, beside the same exact
        times. False: the batch, here always."""
        return False

    def take(self) -> list[Event]:
        """The batch for the collector; a new one begun."""
        batch, self._batch, self.batch_bytes = self._batch, [], 0
        return batch


# the read's bounds as Slices takes them: MAX_OPEN, MAX_OPEN_BYTES, MAX_PENDING, BATCH, BATCH_BYTES, END_BYTES, and
# MEMO_ENTRIES (the slice ends remembered)
_Bounds = tuple[int, int, int, int, int, int, int]


def _bounds() -> _Bounds:
    """The bounds as the module has them when a read starts (a test's smaller bound applies on both paths)."""
    return MAX_OPEN, MAX_OPEN_BYTES, MAX_PENDING, BATCH, BATCH_BYTES, END_BYTES, MEMO_ENTRIES


def _bind_slices() -> type[PureSlices]:
    """The compiled ``Slices`` where protobuf.py bound the core (not under ``WARPWIZARD_PURE=1``), else the twin."""
    core = compiled_core() if _protobuf.COMPILED else None
    return PureSlices if core is None else bind_core_slices(core)


def bind_core_slices(core: Any) -> type[PureSlices]:
    """The core's ``Slices``, handed the types, categories and bounds it builds events with (the tests' too)."""
    categories = (KERNEL_CATEGORIES, GPU_OP_CATEGORIES, OP_CATEGORIES, RUNTIME_CATEGORIES, PYTHON_CATEGORIES)
    compiled: type[PureSlices] = core.bind_slices(
        Event, EventArgs, _NO_ARGS, categories, (KERNELS, GPU_OPS, SLICES), ARGS_READ, _Track
    )
    return compiled


_Slices = _bind_slices()


def _decode_annotation(b: bytes, span: tuple[int, int], seq: _Sequence) -> tuple[str | None, Any]:
    """A debug annotation as an event keeps it: (its ``EventArgs`` field, its value, as JSON where the field keeps
    JSON), or (None, None) for a name no event keeps, whose value is then never decoded."""
    found = _fields(b, *span)
    attr: str | None = None
    for number, wire, v in found:
        if number == 10 and wire == 2:
            attr = _ARG_FIELDS_BYTES.get(b[v[0] : v[1]])
        elif number == 1 and wire == 0:
            attr = _ARG_FIELDS.get(seq.tables["annotation_names"].get(v, ""))
    value: Any = None
    if attr is not None:
        value = _Reader._value(b, found, seq, 0)
        if attr in _RAW_ARGS:
            value = _raw(value)
    return attr, value


def _raw(value: Any) -> msgspec.Raw:
    """An arg the event keeps as JSON (``EventArgs``' Raw fields)."""
    return msgspec.Raw(msgspec.json.encode(value))


def pure_event_args(
    b: bytes, notes: list[tuple[int, int]], seq: _Sequence, args: dict[str, Any], entries: int
) -> tuple[int, int]:
    """A TrackEvent's debug annotations into ``args`` (by EventArgs field): (their bytes, the memo's entries over
    every sequence after them). Each is looked up first in its sequence's memo by its bytes: a trace repeats the same
    few thousand (a device, a stream, a grid) on every kernel; interned names make the same bytes mean another thing
    in another sequence, so the memo is per sequence, and it keeps no list or dict (an event's args are its own)
    and at most ``MEMO_ENTRIES`` entries over every sequence. A full memo starts this sequence's again rather than
    keep what filled it: a correlation id or a byte count is written once or twice and never again, and a memo that
    stopped taking entries once they had filled it would miss every later shape for the rest of the trace.
    Compiled where the core is built (``event_args``)."""
    memo = seq.memo
    size = 0
    for start, end in tuple(notes):  # the notes as given: what a sequence's code does to the list changes nothing
        size += end - start
        short = end - start <= MEMO_BYTES
        found = memo.get(b[start:end]) if short else None
        if found is None:
            found = _decode_annotation(b, (start, end), seq)
            if short and not isinstance(found[1], (list, dict)):
                if entries >= MEMO_ENTRIES and (held := len(memo)):  # full: this sequence's memo starts again
                    entries -= held
                    memo.clear()
                if entries < MEMO_ENTRIES:
                    memo[b[start:end]] = found
                    entries += 1
        if found[0] is not None:
            args[found[0]] = found[1]
    return size, entries


def pure_track_event(b: bytes, start: int, end: int | None, seq: _Sequence) -> _TrackEventFields:
    """A TrackEvent as the decoder reads it: ``track_event_fields`` with its name as text (a span decoded, at most
    ``NAME_BYTES`` of it, then ``MAX_NAME`` characters; an iid looked up in the sequence's names) and its category
    (the first of its categories, cut as a name is, and category iids, in their order, that names one), the fields
    left for the decoder (gpu_correlation, legacy events) in their order, or None. Compiled where the core is built."""
    kind, track, name_span, name_iid, notes, rest = _track_event_fields(b, start, end)
    name = ""
    if name_span is not None:
        first, last = name_span
        name = b[first : min(last, first + NAME_BYTES)].decode("utf-8", "replace")
        if len(name) > MAX_NAME:
            name = name[:MAX_NAME]
    elif name_iid is not None:
        name = seq.tables["names"].get(name_iid, "")
    cat: str | None = None
    others: list[Field] | None = None
    for number, wire, value in rest or ():
        if number == _TE_CATEGORIES:  # track_event_fields keeps it only length-delimited
            if cat is None:
                cat = _name(b, value)  # cut as a name is: an open slice keeps it
        elif number == _TE_CATEGORY_IIDS:
            if cat is None:
                ids = _varints(b, wire, value)
                cat = seq.tables["categories"].get(ids[0]) if ids else None
        else:
            if others is None:
                others = []
            others.append((number, wire, value))
    return kind, track, name, cat, notes, others


_read_track_event: Callable[[bytes, int, int | None, _Sequence], _TrackEventFields] = pure_track_event
_event_args: Callable[[bytes, list[tuple[int, int]], _Sequence, dict[str, Any], int], tuple[int, int]] = pure_event_args


def bind_core_events(
    core: Any,
    event_args: Any = None,
    decode: Any = None,
    split: Any = None,
    track_event: Any = None,
) -> None:
    """Hand the core its event functions' twins, tables and bounds; a test may give other twins, to see that the
    core does not call them."""
    core.bind_events(event_args or pure_event_args, decode or _decode_annotation, msgspec.json.decode, _JSON_ERRORS,
                     _raw, _ARG_FIELDS, _ARG_FIELDS_BYTES, _RAW_ARGS, MEMO_BYTES, MEMO_ENTRIES,
                     split or pure_split_packets, track_event or pure_track_event, NAME_BYTES, MAX_NAME)  # fmt: skip


def _bind_compiled_events() -> bool:
    """The compiled twins of the functions above, where protobuf.py bound the core (not under ``WARPWIZARD_PURE=1``)."""
    global _event_args, _split_packets, _read_track_event
    core = compiled_core() if _protobuf.COMPILED else None
    if core is None:
        return False
    bind_core_events(core)
    _event_args, _split_packets, _read_track_event = core.event_args, core.split_run, core.track_event
    return True


def _name(b: bytes, span: tuple[int, int]) -> str:
    """A name field as kept: at most ``NAME_BYTES`` decoded, then ``MAX_NAME`` characters (a megabyte's name costs
    what a long real one does)."""
    start, end = span
    if end - start > NAME_BYTES:
        end = start + NAME_BYTES
    text = b[start:end].decode("utf-8", "replace")  # protobuf.text_prefix, inline: once per event
    return text if len(text) <= MAX_NAME else text[:MAX_NAME]


def _links(b: bytes, span: tuple[int, int], links: list[int] | tuple[()]) -> list[int]:
    """A launch's render stages (Cuspy's gpu_correlation, field 1 of raw field 3000), after those of an earlier
    such field of the same event."""
    linked = list(links)
    for n, w, v in _fields(b, *span):
        if n == 1:
            linked.extend(_varints(b, w, v))
    return linked


def _legacy_duration(b: bytes, span: tuple[int, int], before: int | None) -> int | None:
    """A legacy event's duration (LegacyEvent.duration_us, field 3), else what an earlier such field gave."""
    for n, w, v in _fields(b, *span):
        if n == 3 and w == 0:
            before = _signed(v)
    return before


_JSON_ERRORS = (msgspec.DecodeError, RecursionError)  # a legacy JSON value that is not JSON: kept as its text


# a JSON string (to its closing quote, or the end where it has none: its escapes skipped) or a bracket
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def json_too_deep(raw: bytes) -> bool:
    """Whether a JSON text nests arrays and objects deeper than ``JSON_DEPTH`` (brackets in strings do not count;
    in text that is not JSON the count means nothing, and the text is kept either way). The compiled core counts
    the same way (``json_too_deep`` in wizard/_core.c)."""
    if raw.count(b"[") + raw.count(b"{") <= JSON_DEPTH:
        return False
    depth = 0
    for token in _JSON_TOKENS.finditer(raw):
        c = raw[token.start()]
        if c in b"[{":
            depth += 1
            if depth > JSON_DEPTH:
                return True
        elif c in b"]}":
            depth -= 1
    return False


def _json(b: bytes, span: tuple[int, int]) -> Any:
    """A legacy JSON value, decoded (bounded by its packet's size) to ``JSON_DEPTH`` deep; the text itself where it
    is not JSON or nests deeper."""
    raw = b[span[0] : span[1]]
    if json_too_deep(raw):
        return raw.decode("utf-8", "replace")
    try:
        return msgspec.json.decode(raw)
    except _JSON_ERRORS:
        return raw.decode("utf-8", "replace")


def _double(bits: int) -> float:
    value: float = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    return value


# TracePacket fields a writer PyTorch users meet puts in the first packet (a packet of none of these is not taken
# for a trace: a JSON file's blanks and first bytes could decode as some message)
_FIRST_PACKET_FIELDS = frozenset({_TIMESTAMP, _TRACK_EVENT, _INTERNED, _SEQ_ID, _SEQ_FLAGS, _CLEARED,
                                  _TRACK_DESCRIPTOR, _RENDER_STAGE, 6, 58, 59, 87})  # fmt: skip


def looks_like_packets(head: bytes, *, cut: bool) -> bool:
    """Whether these first bytes are a protobuf ``Trace``: field 1 (a packet) holding only fields a TracePacket
    has, and then the next packet's tag. ``cut``: the file goes on past the head, so the first packet may too
    (then what the head holds of it must decode). Text (a JSON file, even one that starts with a newline, which is
    also the tag 0x0a) never passes: a packet's bytes are not all printable."""
    if head[:1] != b"\x0a":
        return False
    try:
        size, i = _varint(head, 1)
    except (_Damaged, IndexError):
        return False
    end = i + size
    if size == 0 or (end > len(head) and not cut):
        return False
    try:
        fields = _fields(head, i, min(end, len(head))) if end <= len(head) else _fields_of_prefix(head, i)
    except _Damaged:
        return False
    if not fields or any(number not in _FIRST_PACKET_FIELDS for number, _, _ in fields):
        return False
    return end >= len(head) or head[end : end + 1] == b"\x0a"


class _Cut(Exception):
    """The stream ends inside a packet: what came before it stands, as the JSON reader keeps a cut trace's events."""

    def __init__(self, at: int, partial: int, why: str) -> None:
        super().__init__(why)
        self.at, self.partial = at, partial


class _Packets:
    """The ``Trace`` message's packets (field 1), one at a time, from a stream: never the whole file. ``tick`` is
    called every ``TICK`` top-level entries, packets or not, empty or not, and after every chunk read, so the read's
    time bound holds however the file spends its bytes (issue 47 item 5: 200 million skipped fields were read
    without one look at the clock); entries other than packets are at most ``MAX_SKIPPED``."""

    def __init__(
        self, fh: Any, on_read: Callable[[], None] | None = None, tick: Callable[[], None] | None = None
    ) -> None:
        self.fh = fh
        self.buf = b""
        self.pos = 0
        self.offset = 0  # of buf[0] in the (inflated) stream
        self.on_read = on_read
        self.tick = tick
        self.start = 0  # where the packet being read starts, for a message
        self.skipped = 0  # top-level entries other than packets
        self.base = 0  # where the run of packets batches() yielded last starts: base + starts[k] is its k-th's
        self.starts: Sequence[int] = []

    def _fill(self, need: int) -> bool:
        """At least ``need`` bytes after pos, unless the stream ends first."""
        while len(self.buf) - self.pos < need:
            try:
                chunk = self.fh.read(max(CHUNK, need))
            except EOFError as exc:  # a gzip stream cut off or damaged
                at, partial = self.offset + len(self.buf), len(self.buf) - self.pos
                raise _Cut(at, partial, f"the gzip stream ends: {exc}") from None
            if not chunk:
                return False
            self.offset += self.pos
            self.buf = self.buf[self.pos :] + chunk
            self.pos = 0
            if self.on_read is not None:
                self.on_read()
            if self.tick is not None:
                self.tick()
        return True

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        """Each packet's offset and bytes."""
        for batch in self.batches():
            base, starts = self.base, self.starts
            for k, packet in enumerate(batch):
                self.start = base + starts[k]
                yield self.start, packet

    def feed(self, read: Callable[[Sequence[bytes]], None], at: Callable[[], int]) -> None:
        """Every run of packets to ``read``; where it raises ``Damaged``, ``start`` is the start of the packet
        ``at()`` names in the run (the error names it)."""
        for batch in self.batches():
            try:
                read(batch)
            except _Damaged:
                self.start = self.base + self.starts[at()]
                raise

    def batches(self) -> Iterator[Sequence[bytes]]:
        """The packets in runs: the whole ones the buffer holds split in one call (``split_packets``; compiled
        where the core is built, a ``Run`` of them lying in the buffer), the rest (a header the buffer may cut, a
        field other than a packet, anything damaged, the entry that looks at the clock) one at a time by
        ``_entry``. ``base + starts[k]`` is where the k-th packet of the run starts in the stream."""
        entries = 0
        tick = self.tick
        while self.pos < len(self.buf) or self._fill(1):
            room = TICK - 1 - entries % TICK  # the entry after these looks at the clock, in _entry's path
            if room and len(self.buf) - self.pos >= 20:
                found, starts, pos = _split_packets(self.buf, self.pos, room, MAX_PACKET)
                if found:
                    entries += len(found)
                    self.base, self.starts, self.pos = self.offset, starts, pos
                    self.start = self.offset + starts[-1]
                    yield found
                    continue
            entries += 1
            if not entries % TICK and tick is not None:
                tick()
            packet = self._entry()
            if packet is not None:
                self.base, self.starts = self.start, [0]
                yield [packet]

    def _entry(self) -> bytes | None:
        """One top-level entry: a packet's bytes, or None for a field that is not a packet (counted)."""
        self.start = start = self.offset + self.pos
        if len(self.buf) - self.pos < 20:
            self._fill(20)
        buf, pos = self.buf, self.pos
        try:
            key = buf[pos]
            if key == 0x0A:  # field 1 (a packet), length-delimited
                i = pos + 1
            else:
                key, i = _varint(buf, pos)
                if key & 7 != 2:
                    raise _Damaged(f"field {key >> 3} of the trace is not a message")
            size, i = _varint(buf, i)
        except IndexError:
            raise _Cut(start, len(buf) - pos, "the file ends inside a packet's header") from None
        if size > MAX_PACKET:
            raise _Damaged(f"a packet of {size} bytes (at most {MAX_PACKET})")
        if i + size > len(buf):
            self.pos = i
            if not self._fill(size):
                raise _Cut(start, len(self.buf) - self.pos, "the file ends inside a packet")
            buf, i = self.buf, self.pos
        self.pos = i + size
        if key == 0x0A or key >> 3 == 1:
            return buf[i : i + size]
        self.skipped += 1
        if self.skipped > MAX_SKIPPED:
            raise _Damaged(f"more than {MAX_SKIPPED:,} top-level fields that are not packets")
        return None


def pure_split_packets(buf: bytes, pos: int, limit: int, max_packet: int) -> tuple[list[bytes], list[int], int]:
    """The whole packets (field 1 of ``Trace``, tag 0x0a) at ``buf[pos:]``, at most ``limit``: their bytes, where
    each starts in ``buf``, and the position after the last. Stops, leaving the entry to ``_Packets._entry``, where
    fewer than 20 bytes are left (a header may go on past the buffer), at another tag, at a size over
    ``max_packet`` or past the buffer, and at a size varint that does not read (``_entry`` says why in words)."""
    found: list[bytes] = []
    starts: list[int] = []
    end = len(buf)
    while len(found) < limit and end - pos >= 20 and buf[pos] == 0x0A:
        try:
            size, i = _protobuf.pure_varint(buf, pos + 1)
        except _Damaged:
            break
        if size > max_packet or i + size > end:
            break
        found.append(buf[i : i + size])
        starts.append(pos)
        pos = i + size
    return found, starts, pos


# the packets of a buffer and their starts: the twin's lists, or the core's Run of them lying in the buffer and a
# memoryview of int64s (split_run)
_split_packets: Callable[[bytes, int, int, int], tuple[Sequence[bytes], Sequence[int], int]] = pure_split_packets


class _Inflating:
    """A gzip file's members inflated as they are read, by the shared inflater (``wizard.trace.read.inflate``):
    what came before a cut or a damaged block is returned first; the next read then says the stream ended."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.inflater = inflate.Inflater(raw.read, strict=False)  # bytes after the last member: padding, the end

    def read(self, size: int) -> bytes:
        try:
            return self.inflater.read(size)
        except inflate.GzipDamaged as exc:
            raise EOFError(f"damaged ({exc})") from None
        except inflate.GzipError as exc:
            raise EOFError(str(exc)) from None


def _nothing_read(stream: Any, compressed: bool, consumed: _Consumed) -> str:
    """A file with not one byte to read, in the JSON reader's words for the same bytes: a gzip stream damaged before
    its first byte names where, as the JSON reader's does."""
    ended = stream.inflater.ended if isinstance(stream, _Inflating) else None
    if isinstance(ended, inflate.GzipDamaged):
        at, reason = inflate.damaged_words(ended, consumed.total)
        return f"byte {at}: {reason}"
    size = stream.inflater.consumed if isinstance(stream, _Inflating) else consumed.total
    return inflate.nothing_read(compressed=compressed, cut=isinstance(ended, inflate.GzipCut), size=size)


@dataclass(frozen=True, slots=True)
class PerfettoConfig:
    """The bounds of one read (tests shrink them)."""

    max_seconds: float = 1800.0  # the whole read: a hostile file cannot make it run for ever
    clock: Callable[[], float] = time.monotonic


def read_perfetto(
    path: Path,
    on_read: Callable[[int], None] | None = None,
    config: PerfettoConfig | None = None,
    opened: IO[bytes] | None = None,
) -> TraceContents:
    """A Perfetto protobuf trace (gzip-compressed or not, a file or a pipe) as the contents every pass reads.
    ``on_read`` is told the bytes of the file consumed (compressed ones for .gz), as the JSON reader tells it.
    ``opened``: the file as ``open_input`` opened it, at its start (its caller closes it); else opened here."""
    with _gc_paused():
        return _read(path, on_read, config or PerfettoConfig(), opened)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic GC paused for the whole read, as the JSON reader pauses it (``reader._read``): a read makes a dict
    and a tuple per slice, none of them cyclic, and the collections they set off were 1.5% of a read's instructions
    (callgrind, the 17.5 MB file of benchmarks/speed_series.py). The last batch's flush (``_Reader.finish``) too:
    with the GC back on, its first allocations set off a collection over every object made while it was paused and
    still alive, the batch's events and their arguments (8 ms of the same file's read)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(
    path: Path, on_read: Callable[[int], None] | None, config: PerfettoConfig, opened: IO[bytes] | None
) -> TraceContents:
    """``read_perfetto``'s read, the GC paused by its caller."""
    contents = TraceContents(path=str(path))
    contents.layout = "protobuf"
    contents.format = "perfetto-proto"
    reader = _Reader(contents)
    packets: _Packets | None = None
    try:
        with contextlib.nullcontext(opened) if opened is not None else open_input(path, wait=True)[0] as raw:
            assert isinstance(raw, io.BufferedReader)  # what open_input gives: it can peek
            contents.compressed = raw.peek(2)[:2] == b"\x1f\x8b"  # a pipe cannot seek back
            stream: Any = _Inflating(raw) if contents.compressed else raw
            consumed = _Consumed(raw, on_read)
            packets = _Packets(stream, consumed, _Deadline(config))
            packets.feed(reader.run, lambda: reader.at)
            consumed()
    except _Cut as cut_off:
        contents.truncation = Truncation(cut_off.at, cut_off.partial, None, f"{cut_off} at byte {cut_off.at}")
    except _Damaged as exc:
        where = "inflated byte" if contents.compressed else "byte"
        at = packets.start if packets is not None else 0
        raise InputFileError(f"{path}: not a readable Perfetto trace at {where} {at}: {exc}") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({cut(visible(str(exc)), 200)})") from None
    if packets is not None and packets.offset + len(packets.buf) == 0:  # not one byte: as the JSON reader says
        raise InputFileError(f"{path}: {_nothing_read(stream, contents.compressed, consumed)}")
    reader.finish()
    contents.bytes_read = consumed.total
    if reader.open_count and contents.truncation is not None:
        contents.truncation.detail += f"; {plural(reader.open_count, 'slice')} left open"
    _writer(reader)
    return contents


class _Deadline:
    """The read's time bound, looked at by the packet stream (``_Packets.tick``)."""

    def __init__(self, config: PerfettoConfig) -> None:
        self.config = config
        self.deadline = config.clock() + config.max_seconds

    def __call__(self) -> None:
        if self.config.clock() > self.deadline:
            raise _Damaged(f"the read took longer than {self.config.max_seconds:.0f} s")


class _Consumed:
    """Tells ``on_read`` how many bytes of the file (not of the inflated stream) have been consumed."""

    def __init__(self, raw: io.BufferedReader, on_read: Callable[[int], None] | None) -> None:
        self.raw, self.on_read, self.total = raw, on_read, 0

    def __call__(self) -> None:
        try:
            self.total = self.raw.tell()
        except OSError:  # a pipe: no position
            return
        if self.on_read is not None:
            self.on_read(self.total)


def _writer(reader: _Reader) -> None:
    """Who wrote it: Cuspy (whose clamping is then counted, as for its JSON), a converter of Kineto's JSON, or
    nobody this reader knows."""
    c = reader.c
    if reader.cuspy:
        c.writer = cuspy.WRITER
        c.cannot_show.update(cuspy.CANNOT_SHOW)
        c.cannot_show["kernels-overlap"] = (
            "Cuspy clamps each GPU op's end to the next op's start on its lane before writing a .pftrace, so overlaps "
            "are removed from the file (the JSON export of the same run keeps them)"
        )
        c.metadata["cuspy"] = msgspec.structs.asdict(cuspy.clamped(c))
    elif reader.track_events and c.timeline.categories.keys() & {"kernel", "cpu_op", "cuda_runtime"}:
        c.writer = "Kineto's events as TrackEvent slices (a JSON-to-Perfetto converter)"
    if reader.clocks:
        c.metadata["perfetto_clocks"] = True


COMPILED_EVENTS = _bind_compiled_events()  # whether _event_args is the compiled core's


def _memo_type() -> Callable[[], _Memo]:
    """The core's ``Memo`` where ``_event_args`` is the core's (it looks a note up there by the bytes where they lie,
    and in any other mapping by its own look-up), else a dict."""
    core = compiled_core() if COMPILED_EVENTS else None
    return dict if core is None else core.Memo


_MEMO = _memo_type()
