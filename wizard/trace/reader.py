"""Streaming reader for PyTorch profiler (Kineto) Chrome traces of any era and any size.

The trace is read in blocks; runs of whole events are cut at separators that contain a
newline (JSON strings cannot hold a raw newline, so such a cut is never inside a string)
and decoded by msgspec straight into small typed structs, skipping the fields nobody
needs. Anything the fast path cannot take (bare ``inf``/``nan`` tokens, a minified
file, a cut inside a nested array, the end of the array, a truncated file) falls back to
an exact, event-by-event decoder that reports the byte offset of any real error.
"""

from __future__ import annotations

import gc
import json
import math
import operator
import re
import time
import zlib
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec

from wizard.errors import InputFileError, TraceReadError
from wizard.trace.records import (
    IntervalIndex,
    KernelRecord,
    OpInfo,
    ReportedValue,
    RuntimeIndex,
)

BLOCK_SIZE = 8 << 20
_MAX_EVENT_BYTES = 256 << 20
_BARE_MARK = "__warpwizard_bare__"

KERNEL_CATEGORIES = frozenset({"kernel", "Kernel"})
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "Runtime", "cuda_driver"})
OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
PYTHON_CATEGORIES = frozenset({"python_function"})

# `}` ws `,` ws `{` where the whitespace holds a newline: always between two objects.
_BOUNDARY = re.compile(rb"\}[ \t\r]*(?:\n[ \t\r\n]*,|,[ \t\r]*\n)[ \t\r\n]*\{")
# A bare non-finite token in value position (after `:`, `[` or `,`).
_BARE_TOKEN = re.compile(r"(?<=[:\[,])(\s*)(-?(?:inf|nan|Infinity|NaN))(?=\s*[,}\]])")
_BARE_TOKEN_BYTES = re.compile(rb"(?<=[:\[,])(\s*)(-?(?:inf|nan|Infinity|NaN))(?=\s*[,}\]])")


_EMPTY_RAW = msgspec.Raw(b"")  # one shared default: a factory call per event costs 15% of decoding


class _Args(msgspec.Struct, gc=False):
    correlation: Any = None
    device: Any = None
    stream: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: Any = msgspec.field(default=None, name="warps per SM")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    theoretical: Any = msgspec.field(default=None, name="theoretical occupancy %")
    input_dims: msgspec.Raw = msgspec.field(default=_EMPTY_RAW, name="Input Dims")
    input_dims_old: msgspec.Raw = msgspec.field(default=_EMPTY_RAW, name="Input dims")
    input_type: msgspec.Raw = msgspec.field(default=_EMPTY_RAW, name="Input type")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    fixed: Any = msgspec.field(default=None, name="warpwizard mechanism")


class _Event(msgspec.Struct, gc=False):
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None


_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_RAW_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_ARG_FIELDS = {f: (msgspec.structs.fields(_Args)) for f in ("x",)}["x"]
_ARG_ENCODED = {f.encode_name: f.name for f in _ARG_FIELDS}
_RAW_FIELDS = frozenset({"input_dims", "input_dims_old", "input_type"})


def _event_from_dict(obj: Any) -> _Event | None:
    """The exact path's dict, shaped like the fast path's struct."""
    if not isinstance(obj, dict):
        return None
    raw_args = obj.get("args")
    args = None
    if isinstance(raw_args, dict):
        values: dict[str, Any] = {}
        for encoded, attr in _ARG_ENCODED.items():
            if encoded in raw_args:
                value = raw_args[encoded]
                values[attr] = msgspec.Raw(msgspec.json.encode(value)) if attr in _RAW_FIELDS else value
        args = _Args(**values)
    return _Event(
        cat=obj.get("cat"),
        name=obj.get("name"),
        pid=obj.get("pid"),
        tid=obj.get("tid"),
        ts=obj.get("ts"),
        dur=obj.get("dur"),
        args=args,
    )


def _quote_bare(match: re.Match[str]) -> str:
    return f'{match.group(1)}"{_BARE_MARK}{match.group(2)}"'


def _quote_bare_bytes(match: re.Match[bytes]) -> bytes:
    return match.group(1) + b'"' + _BARE_MARK.encode() + match.group(2) + b'"'


@dataclass(slots=True)
class Truncation:
    """Where a trace stopped early, and what that cost."""

    at_byte: int
    partial_event_bytes: int
    last_complete_ts: float | None
    detail: str


@dataclass
class TraceContents:
    """Everything the analysis needs from one trace file, compactly."""

    path: str
    bytes_read: int = 0
    compressed: bool = False
    layout: str = "object"  # object | array (PyTorch 1.8)
    metadata: dict[str, Any] = field(default_factory=dict)
    kernels: list[KernelRecord] = field(default_factory=list)
    runtime: RuntimeIndex = field(default_factory=RuntimeIndex)
    ops: IntervalIndex = field(default_factory=IntervalIndex)
    python: IntervalIndex = field(default_factory=IntervalIndex)
    non_finite: Counter[str] = field(default_factory=Counter)
    events: int = 0
    last_ts: float | None = None
    truncation: Truncation | None = None
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def device_properties(self) -> list[dict[str, Any]]:
        props = self.metadata.get("deviceProperties")
        if not isinstance(props, list):
            props = self.metadata.get("computeProperties")
        return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []

    @property
    def is_rocm(self) -> bool:
        if "roctracer_version" in self.metadata or "hip_runtime_version" in self.metadata:
            return True
        props = self.device_properties
        return any("maxSharedMemoryPerMultiProcessor" in p or "AMD" in str(p.get("name", "")) for p in props)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _dim3(value: Any) -> tuple[int, int, int] | None:
    if type(value) is list and len(value) == 3:
        x, y, z = value
        if type(x) is int and type(y) is int and type(z) is int:
            return (x, y, z)
        dims = [_as_int(v) for v in value]
        if all(d is not None for d in dims):
            return (dims[0], dims[1], dims[2])  # type: ignore[return-value]
    return None


def reported(value: Any) -> ReportedValue:
    """How the profiler wrote a metric: number, bare token (invalid JSON) or quoted string."""
    if value is None:
        return ReportedValue(None, "missing")
    if isinstance(value, bool):
        return ReportedValue(None, "other")
    if isinstance(value, (int, float)):
        return ReportedValue(float(value), "number" if math.isfinite(value) else "bare")
    if isinstance(value, str):
        spelling = "quoted"
        text = value
        if text.startswith(_BARE_MARK):
            spelling, text = "bare", text[len(_BARE_MARK) :]
        lowered = text.strip().lower()
        table = {
            "inf": math.inf,
            "+inf": math.inf,
            "infinity": math.inf,
            "-inf": -math.inf,
            "-infinity": -math.inf,
            "nan": math.nan,
            "-nan": math.nan,
        }
        if lowered in table:
            return ReportedValue(table[lowered], spelling)
        number = _as_float(text)
        return ReportedValue(number, "quoted" if number is not None else "other")
    return ReportedValue(None, "other")


class EventSink:
    """Where the parser delivers what it reads; the reader collects, the fixer rewrites."""

    wants_raw = False

    def add(self, events: list[_Event]) -> None:
        """Decoded events (when ``wants_raw`` is False)."""

    def add_raw(self, events: list[bytes]) -> None:
        """Each event's own bytes, in file order (when ``wants_raw`` is True)."""

    def meta(self, key: str, value: Any) -> None:
        """A top-level key other than traceEvents, in file order."""

    def events_start(self) -> None:
        """The traceEvents array (or the bare top-level array) begins."""

    def events_end(self) -> None:
        """The event array's closing bracket was read."""


_CAT_OF = operator.attrgetter("cat")
_NUMBER = (int, float)


def _number(value: Any) -> float | None:
    """A timestamp or duration: numbers as they are, numeric strings parsed, the rest None."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    return _as_float(value)


class _Collector(EventSink):
    """Turns decoded events into compact records; one per trace.

    This loop runs once per event of a gigabyte trace, so it avoids per-event objects:
    runtime calls go to flat arrays, ops to interval arrays with interned descriptors.
    """

    def __init__(self, contents: TraceContents) -> None:
        self.c = contents
        self._names: dict[str, str] = {}
        self._raws: dict[bytes, str] = {}
        self._op_refs: dict[tuple[Any, bytes, bytes, Any], int] = {}
        self._frame_refs: dict[Any, int] = {}
        self._reported: dict[Any, ReportedValue] = {}
        self._dim_tuples: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def _intern(self, text: str) -> str:
        return self._names.setdefault(text, text)

    def _raw_text(self, data: bytes) -> str | None:
        if not data:
            return None
        cached = self._raws.get(data)
        if cached is None:
            try:  # one compact spelling, whatever the writer's indentation
                cached = msgspec.json.encode(msgspec.json.decode(data)).decode()
            except msgspec.DecodeError:
                cached = data.decode("utf-8", "replace")
            self._raws[data] = cached
        return cached

    def _op_ref(self, ev: _Event) -> int:
        args = ev.args
        if args is None:
            key: tuple[Any, bytes, bytes, Any] = (ev.name, b"", b"", None)
        else:
            dims = args.input_dims
            stack = args.call_stack
            key = (
                ev.name,
                bytes(dims) if len(dims) else bytes(args.input_dims_old),
                bytes(args.input_type),
                stack if type(stack) is str else None,
            )
        ref = self._op_refs.get(key)
        if ref is None:
            info = OpInfo(
                self._intern(str(ev.name)),
                self._raw_text(key[1]),
                self._raw_text(key[2]),
                self._intern(key[3]) if key[3] is not None else None,
            )
            ref = self._op_refs[key] = self.c.ops.ref(info)
        return ref

    def _frame_ref(self, name: Any) -> int:
        ref = self._frame_refs.get(name)
        if ref is None:
            ref = self._frame_refs[name] = self.c.python.ref(self._intern(str(name)))
        return ref

    def add(self, events: list[_Event]) -> None:
        c = self.c
        c.events += len(events)
        for ev in reversed(events):
            if type(ev.ts) in _NUMBER:
                c.last_ts = float(ev.ts)
                break
        python, runtime = c.python, c.runtime
        add_op = c.ops.add
        op_ref = self._op_ref
        for ev in events:
            cat = ev.cat
            if cat in OP_CATEGORIES:
                ts, dur = ev.ts, ev.dur
                if type(ts) is not int and type(ts) is not float:
                    ts = _as_float(ts)
                    if ts is None:
                        continue
                if type(dur) is not int and type(dur) is not float:
                    dur = _as_float(dur) or 0.0
                add_op(ev.pid, ev.tid, ts, ts + dur, op_ref(ev))
            elif cat in RUNTIME_CATEGORIES:
                args = ev.args
                if args is not None:
                    corr, ts = args.correlation, ev.ts
                    if type(corr) is not int:
                        corr = _as_int(corr)
                    if type(ts) is not int and type(ts) is not float:
                        ts = _as_float(ts)
                    if corr is not None and ts is not None:
                        runtime.add(corr, ev.pid, ev.tid, ts, ev.name)
            elif cat in KERNEL_CATEGORIES:
                self._kernel(ev)
            elif cat in PYTHON_CATEGORIES:
                start = _number(ev.ts)
                if start is not None:
                    python.add(ev.pid, ev.tid, start, start + (_number(ev.dur) or 0.0), self._frame_ref(ev.name))

    def merge(self, part: _PieceResult) -> None:
        """A worker's block, in file order: kernels renumbered, indexes appended."""
        c = self.c
        offset = len(c.kernels)
        for k in part.kernels:
            k.index += offset
            k.name = self._intern(k.name)
        c.kernels.extend(part.kernels)
        c.runtime.merge(part.runtime)
        c.ops.merge(part.ops)
        c.python.merge(part.python)
        c.non_finite.update(part.non_finite)
        c.events += part.events
        if part.last_ts is not None:
            c.last_ts = part.last_ts

    def _dims(self, value: Any) -> tuple[int, int, int] | None:
        dims = _dim3(value)
        return None if dims is None else self._dim_tuples.setdefault(dims, dims)

    def _value(self, value: Any) -> ReportedValue:
        """``reported()``, memoised: a trace repeats the same few thousand values."""
        if value is None or type(value) not in (int, float, str):
            return reported(value)
        found = self._reported.get(value)
        if found is None:
            found = self._reported[value] = reported(value)
        return found

    def _kernel(self, ev: _Event) -> None:
        args = ev.args or _Args()
        occupancy_key = None
        occupancy_value = args.occupancy
        if occupancy_value is not None:
            occupancy_key = "est. achieved occupancy %"
        elif args.theoretical is not None:
            occupancy_key, occupancy_value = "theoretical occupancy %", args.theoretical
        record = KernelRecord(
            name=self._intern(str(ev.name)),
            ts=_number(ev.ts) or 0.0,
            dur=_number(ev.dur) or 0.0,
            pid=ev.pid,
            tid=ev.tid,
            device=args.device if type(args.device) is int else _as_int(args.device),
            stream=args.stream,
            correlation=args.correlation if type(args.correlation) is int else _as_int(args.correlation),
            grid=self._dims(args.grid),
            block=self._dims(args.block),
            registers=args.registers if type(args.registers) is int else _as_int(args.registers),
            shared_memory=args.shared_memory if type(args.shared_memory) is int else _as_int(args.shared_memory),
            blocks_per_sm=self._value(args.blocks_per_sm),
            warps_per_sm=self._value(args.warps_per_sm),
            occupancy=self._value(occupancy_value),
            occupancy_key=occupancy_key,
            index=len(self.c.kernels),
            fixed=args.fixed if isinstance(args.fixed, str) else None,
        )
        for value in (record.blocks_per_sm, record.warps_per_sm, record.occupancy):
            if value.spelling in ("bare", "quoted") and value.value is not None and not math.isfinite(value.value):
                self.c.non_finite[value.spelling] += 1
        self.c.kernels.append(record)


@dataclass
class _PieceResult:
    """What a worker process made of one block of events; merged in file order."""

    kernels: list[KernelRecord]
    runtime: RuntimeIndex
    ops: IntervalIndex
    python: IntervalIndex
    non_finite: Counter[str]
    events: int
    last_ts: float | None


_WORKER_FILES: dict[str, IO[bytes]] = {}


def _decode_range(path: str, start: int, end: int) -> _PieceResult | None:
    """Worker side for an uncompressed file: read the block by offset, then decode it."""
    fh = _WORKER_FILES.get(path)
    if fh is None:
        fh = _WORKER_FILES[path] = open(path, "rb")  # noqa: SIM115 - kept for the worker's life
    fh.seek(start)
    return _decode_piece(fh.read(end - start))


def _decode_block(decoder: msgspec.json.Decoder[list[Any]], piece: bytes) -> list[Any] | None:
    """A run of whole events as one array; retried with bare inf/nan quoted; None if neither decodes."""
    try:
        return decoder.decode(b"[" + piece + b"]")
    except msgspec.DecodeError:
        try:
            return decoder.decode(b"[" + _BARE_TOKEN_BYTES.sub(_quote_bare_bytes, piece) + b"]")
        except msgspec.DecodeError:
            return None


def _decode_piece(piece: bytes) -> _PieceResult | None:
    """Worker side of the parallel path: None when the fast decoder cannot take the block."""
    gc.disable()  # a worker only builds acyclic records
    events = _decode_block(_EVENTS_DECODER, piece)
    if events is None:
        return None
    part = TraceContents(path="")
    _Collector(part).add(events)
    return _PieceResult(part.kernels, part.runtime, part.ops, part.python, part.non_finite, part.events, part.last_ts)


class _ParallelFallback(Exception):
    """A block needs the exact decoder, which runs in order: read the file sequentially instead."""


class _Source:
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


class _Parser:
    """The top-level walk: object keys or a bare array, then the event stream."""

    def __init__(self, source: _Source, contents: TraceContents, collector: EventSink) -> None:
        self.src = source
        self.c = contents
        self.collect = collector
        self.buf = b""
        self.pos = 0
        self.base = 0  # absolute offset of buf[0]
        self.decoder = json.JSONDecoder()
        self.pool: Executor | None = None
        self.in_flight = 4
        self.pending: deque[Future[_PieceResult | None]] = deque()
        self.clock: dict[str, float] = {
            "read_decompress_s": 0.0,
            "scan_s": 0.0,
            "decode_s": 0.0,
            "collect_s": 0.0,
            "exact_path_s": 0.0,
        }

    # -- buffer -------------------------------------------------------------------------
    def _fill(self, minimum: int = BLOCK_SIZE) -> bool:
        if self.pos > 0:
            self.base += self.pos
            self.buf = self.buf[self.pos :]
            self.pos = 0
        started = time.perf_counter()
        data = self.src.read(max(minimum, BLOCK_SIZE))
        self.clock["read_decompress_s"] += time.perf_counter() - started
        if not data:
            return False
        self.buf += data
        self.c.bytes_read = self.base + len(self.buf)
        return True

    def _skip_ws(self) -> bool:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in b" \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self._fill():
                return False

    def _skip_separator(self) -> None:
        while self._skip_ws() and self.buf[self.pos] == ord(","):
            self.pos += 1

    def _peek(self) -> int | None:
        return self.buf[self.pos] if self._skip_ws() else None

    def _offset(self) -> int:
        return self.base + self.pos

    def _error(self, reason: str, offset: int | None = None) -> TraceReadError:
        return TraceReadError(str(self.c.path), self._offset() if offset is None else offset, reason)

    def _exact_value(self) -> Any:
        """One JSON value at pos, read whole (used for small top-level values)."""
        self._skip_ws()
        window = 1 << 16
        while True:
            text = self.buf[self.pos : self.pos + window].decode("utf-8", "surrogateescape")
            substituted = _BARE_TOKEN.sub(_quote_bare, text)
            try:
                value, end = self.decoder.raw_decode(substituted)
            except json.JSONDecodeError as exc:
                if self.pos + window < len(self.buf):
                    window *= 8
                    continue
                if self.src.eof or len(self.buf) - self.pos > _MAX_EVENT_BYTES:
                    if self.src.eof and exc.pos >= len(substituted) - 1:
                        raise self._error("the file ends inside a top-level value (truncated)") from None
                    raise self._error(f"invalid JSON ({exc.msg})", self._offset() + _byte_len(text, exc.pos)) from None
                self._fill()
                continue
            if substituted is not text:
                end = _unsubstituted_end(text, substituted, end)
            self.pos += _byte_len(text, end)
            return value

    # -- top level ----------------------------------------------------------------------
    def run(self) -> None:
        if not self._fill():
            raise InputFileError(f"{self.c.path}: the file is empty")
        if self.buf.startswith(b"\xef\xbb\xbf"):
            self.pos = 3
        first = self._peek()
        if first == ord("["):
            self.c.layout = "array"
            self.pos += 1
            self.collect.events_start()
            if self._events():
                self.collect.events_end()
            return
        if first != ord("{"):
            raise self._error("not a profiler trace: expected '{' or '[' at the start")
        self.pos += 1
        while True:
            ch = self._peek()
            if ch is None:
                self._truncated_top_level()
                return
            if ch == ord("}"):
                self.pos += 1
                return
            if ch == ord(","):
                self.pos += 1
                continue
            if ch != ord('"'):
                raise self._error(f"expected a key, found {chr(ch)!r}")
            key = self._exact_value()
            if self._peek() != ord(":"):
                if self.src.eof:
                    self._truncated_top_level()
                    return
                raise self._error(f"expected ':' after key {key!r}")
            self.pos += 1
            if key == "traceEvents":
                if self._peek() != ord("["):
                    raise self._error("'traceEvents' is not an array")
                self.pos += 1
                self.collect.events_start()
                if not self._events():
                    return
                self.collect.events_end()
            else:
                value = self._exact_value()
                self.c.metadata[str(key)] = value
                self.collect.meta(str(key), value)

    def _truncated_top_level(self) -> None:
        if self.c.truncation is None:
            self.c.truncation = Truncation(
                self._offset(),
                0,
                self.c.last_ts,
                "the file ends before the closing '}' of the trace object; every event was read",
            )

    # -- events -------------------------------------------------------------------------
    def _events(self) -> bool:
        """Read the event array; True when its closing ']' was found."""
        while True:
            if len(self.buf) - self.pos < BLOCK_SIZE and not self.src.eof:
                self._fill()
            window = self.buf
            started = time.perf_counter()
            limit = self.pos + PARALLEL_BLOCK if self.pool is not None else None
            cut = _last_boundary(window, self.pos, limit)
            if cut is None and limit is not None:
                cut = _last_boundary(window, self.pos)
            self.clock["scan_s"] += time.perf_counter() - started
            if cut is None:
                room = len(self.buf) - self.pos < _MAX_EVENT_BYTES
                if not self.src.eof and room and self._fill(len(self.buf) - self.pos + BLOCK_SIZE):
                    continue
                self._drain()
                return self._exact_events(until_end=True)
            piece = window[self.pos : cut + 1]
            if self.pool is not None:
                if self.src.compressed:
                    job = self.pool.submit(_decode_piece, piece)
                else:  # the worker reads its own bytes: nothing crosses a pipe but two offsets
                    start = self.base + self.pos
                    job = self.pool.submit(_decode_range, str(self.src.path), start, start + len(piece))
                self.pending.append(job)
                if len(self.pending) > self.in_flight:
                    self._merge_next()
                self.pos = _next_object(window, cut)
            elif self._fast(piece):
                self.pos = _next_object(window, cut)
            else:
                # Event by event; this may run past the cut when the cut was inside a nested array.
                self._exact_events(until_end=False, stop_at=self.base + cut + 1)
                self._skip_separator()

    def _merge_next(self) -> None:
        started = time.perf_counter()
        part = self.pending.popleft().result()
        self.clock["decode_s"] += time.perf_counter() - started  # waiting on workers
        if part is None:
            raise _ParallelFallback
        merged = time.perf_counter()
        assert isinstance(self.collect, _Collector)
        self.collect.merge(part)
        self.clock["collect_s"] += time.perf_counter() - merged

    def _drain(self) -> None:
        while self.pending:
            self._merge_next()

    def _fast(self, piece: bytes) -> bool:
        if self.collect.wants_raw:
            return self._fast_raw(piece)
        started = time.perf_counter()
        events = _decode_block(_EVENTS_DECODER, piece)
        if events is None:
            self.clock["decode_s"] += time.perf_counter() - started
            return False
        decoded = time.perf_counter()
        self.clock["decode_s"] += decoded - started
        self.collect.add(events)
        self.clock["collect_s"] += time.perf_counter() - decoded
        return True

    def _deliver(self, batch: list[_Event], raw_batch: list[bytes]) -> None:
        if self.collect.wants_raw:
            self.collect.add_raw(raw_batch)
        else:
            self.collect.add(batch)

    def _fast_raw(self, piece: bytes) -> bool:
        raws = _decode_block(_RAW_DECODER, piece)
        if raws is None:
            return False
        self.collect.add_raw([bytes(r) for r in raws])
        return True

    def _exact_events(self, *, until_end: bool, stop_at: int | None = None) -> bool:
        """Event by event from pos; stops at ']' (True), at ``stop_at``, or at a truncated end."""
        self._drain()
        started = time.perf_counter()
        try:
            return self._exact_events_timed(until_end=until_end, stop_at=stop_at)
        finally:
            self.clock["exact_path_s"] += time.perf_counter() - started

    def _exact_events_timed(self, *, until_end: bool, stop_at: int | None = None) -> bool:
        while True:
            text = self.buf[self.pos :].decode("utf-8", "surrogateescape")
            substituted = _BARE_TOKEN.sub(_quote_bare, text)
            i = 0
            n = len(substituted)
            stop_index = n + 1
            if stop_at is not None:
                stop_chars = len(self.buf[self.pos : stop_at - self.base].decode("utf-8", "surrogateescape"))
                stop_index = _substituted_index(text, substituted, stop_chars)
            batch: list[_Event] = []
            raw_batch: list[bytes] = []
            raw_mode = self.collect.wants_raw
            ended = False
            need_more = False
            while True:
                while i < n and substituted[i] in " \t\r\n,":
                    i += 1
                if i >= stop_index:
                    break
                if i >= n:
                    need_more = True
                    break
                if substituted[i] == "]":
                    i += 1
                    ended = True
                    break
                try:
                    obj, j = self.decoder.raw_decode(substituted, i)
                except json.JSONDecodeError as exc:
                    if not self.src.eof and n - i < _MAX_EVENT_BYTES:
                        need_more = True
                        break
                    start = self._offset() + _byte_len_sub(text, substituted, i)
                    if self.src.eof and _looks_truncated(substituted, i, exc):
                        self._deliver(batch, raw_batch)
                        partial = self.base + len(self.buf) - start
                        self.c.truncation = Truncation(
                            start,
                            partial,
                            self.c.last_ts,
                            f"the file ends inside an event at byte {start}: {partial} byte(s) of a partial "
                            "event were dropped, and the end of the event list (and any keys after it, "
                            "such as deviceProperties) is missing",
                        )
                        self.pos = len(self.buf)
                        return False
                    where = self._offset() + _byte_len_sub(text, substituted, exc.pos)
                    raise self._error(f"invalid JSON in traceEvents ({exc.msg})", where) from None
                if raw_mode:
                    raw_batch.append(substituted[i:j].encode("utf-8", "surrogateescape"))
                else:
                    event = _event_from_dict(obj)
                    if event is not None:
                        batch.append(event)
                i = j
            self._deliver(batch, raw_batch)
            self.pos += _byte_len_sub(text, substituted, i)
            if ended:
                return True
            if stop_at is not None and not need_more:
                return False
            if need_more:
                if not self._fill(len(self.buf) - self.pos + BLOCK_SIZE):
                    if self.pos >= len(self.buf):
                        self.c.truncation = Truncation(
                            self._offset(),
                            0,
                            self.c.last_ts,
                            "the file ends after a complete event but before the event list was closed; "
                            "no event was lost, but any keys after the list (such as deviceProperties) are missing",
                        )
                        return False
                    continue
                if not until_end and stop_at is None:
                    return False


def _looks_truncated(text: str, start: int, exc: json.JSONDecodeError) -> bool:
    """An error at the very end of the data, not in the middle of it."""
    return exc.pos >= len(text.rstrip()) - 1 or text.find("}", exc.pos) == -1


def _byte_len(text: str, chars: int) -> int:
    return len(text[:chars].encode("utf-8", "surrogateescape"))


def _byte_len_sub(original: str, substituted: str, index: int) -> int:
    """Bytes of ``original`` before ``index`` of its bare-token-quoted copy."""
    if original is substituted:
        return _byte_len(original, index)
    return _byte_len(original, _unsubstituted_end(original, substituted, index))


def _substituted_index(original: str, substituted: str, index: int) -> int:
    """Map an index in the original text forward into its bare-token-quoted copy."""
    if original is substituted:
        return index
    added = len(_BARE_MARK) + 2
    return index + added * sum(1 for m in _BARE_TOKEN.finditer(original, 0, index))


def _unsubstituted_end(original: str, substituted: str, index: int) -> int:
    """Map an index in the substituted text back to the original text."""
    extra = 0
    for match in _BARE_TOKEN.finditer(original):
        new_start = match.start() + extra
        if new_start >= index:
            break
        added = len(_BARE_MARK) + 2
        if index < new_start + len(match.group(0)) + added:
            return match.start()
        extra += added
    return index - extra


def _last_boundary(buf: bytes, start: int, limit: int | None = None) -> int | None:
    """Index of the '}' of the last event boundary in buf[start:limit], or None."""
    end = len(buf) if limit is None else min(limit, len(buf))
    span = 1 << 16
    while True:
        lo = max(start, end - span)
        last = None
        for match in _BOUNDARY.finditer(buf, lo, end):
            last = match
        if last is not None:
            return last.start()
        if lo == start:
            return None
        span *= 8


def _next_object(buf: bytes, cut: int) -> int:
    """Position of the '{' that follows the boundary at ``cut``."""
    match = _BOUNDARY.match(buf, cut)
    assert match is not None
    return match.end() - 1


def parse_into(path: str | Path, sink: EventSink) -> TraceContents:
    """Stream a trace into any sink (the fixer uses this with a raw sink)."""
    p = Path(path)
    contents = TraceContents(path=str(p))
    source = _Source(p)
    contents.compressed = source.compressed
    try:
        _Parser(source, contents, sink).run()
    finally:
        source.close()
    return contents


def unmark_bare(raw: bytes) -> bytes:
    """Undo the reader's quoting of bare inf/nan tokens in an event's bytes."""
    return _MARKED.sub(rb"\1", raw) if _BARE_MARK.encode() in raw else raw


_MARKED = re.compile(rb'"' + re.escape(_BARE_MARK.encode()) + rb'(-?(?:inf|nan|Infinity|NaN))"')


PARALLEL_MIN_BYTES = 96 << 20
PARALLEL_BLOCK = 4 << 20  # smaller blocks keep each worker's peak memory low


def _parallel_workers(path: Path) -> int:
    """Worker processes for one big file: the cores, unless nested, tiny, or told otherwise."""
    import multiprocessing
    import os

    wanted = os.environ.get("WARPWIZARD_JOBS")
    cores = int(wanted) if wanted and wanted.isdigit() else (os.cpu_count() or 1)
    if cores < 2 or multiprocessing.parent_process() is not None:
        return 0
    size = path.stat().st_size
    compressed = path.name.endswith(".gz")
    return cores if size * (8 if compressed else 1) >= PARALLEL_MIN_BYTES else 0


def _read(p: Path, workers: int) -> TraceContents:
    contents = TraceContents(path=str(p))
    try:
        source = _Source(p)
    except OSError as exc:
        raise InputFileError(f"{p}: cannot open ({exc.strerror})") from None
    contents.compressed = source.compressed
    parser = _Parser(source, contents, _Collector(contents))
    # Millions of short-lived records would trigger the cyclic GC over and over (it was two
    # thirds of decode time); nothing built here is cyclic, so pause it while reading.
    was_enabled = gc.isenabled()
    gc.disable()
    pool = None
    try:
        if workers:
            import multiprocessing

            pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
            parser.pool = pool
            parser.in_flight = workers + 1
        parser.run()
        parser._drain()
    except RecursionError:
        raise TraceReadError(str(p), contents.bytes_read, "nesting too deep to be a profiler trace") from None
    finally:
        source.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if was_enabled:
            gc.enable()
    contents.timing.update({k: round(v, 4) for k, v in parser.clock.items()})
    contents.timing["workers"] = workers
    if source.stream_truncated and contents.truncation is None:
        contents.truncation = Truncation(
            contents.bytes_read,
            0,
            contents.last_ts,
            "the gzip stream is cut off; everything up to the cut was read",
        )
    elif source.stream_truncated and contents.truncation is not None:
        contents.truncation.detail += " (the gzip stream itself is cut off)"
    return contents


def read_trace(path: str | Path) -> TraceContents:
    """Read one trace file (``.json`` or ``.json.gz``) into compact records.

    Big files are decoded by worker processes block by block and merged in file order;
    any block that needs the exact decoder sends the whole file down the sequential path,
    so both paths give the same result.
    """
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{p}: no such file")
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory (use read_traces for per-rank directories)")
    workers = _parallel_workers(p)
    if workers:
        try:
            return _read(p, workers)
        except _ParallelFallback:
            pass
    return _read(p, 0)


def iter_trace_files(paths: list[str]) -> Iterator[Path]:
    """Expand directories (as tensorboard_trace_handler writes them) into their trace files."""
    for name in paths:
        p = Path(name)
        if p.is_dir():
            found = sorted(
                f for f in p.iterdir() if f.is_file() and (f.name.endswith(".json") or f.name.endswith(".json.gz"))
            )
            if not found:
                raise InputFileError(f"{p}: directory holds no .json or .json.gz trace")
            yield from found
        else:
            yield p
