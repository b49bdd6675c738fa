"""Trace events as the reader decodes them, and the values inside them.

msgspec decodes runs of events straight into these structs, skipping every field the
analysis does not read; the structs are untracked by the cyclic GC because a gigabyte
trace creates millions of them. Bare ``inf``/``nan`` tokens (invalid JSON that real
traces contain) are quoted with a marker before decoding, so a value remembers how the
profiler spelled it.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from wizard.trace.kineto_math import f32
from wizard.trace.read.records import ProfilerOccupancy, ReportedValue

BARE_MARK = "__warpwizard_bare__"

KERNEL_CATEGORIES = frozenset({"kernel", "Kernel"})
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "Runtime", "cuda_driver"})
OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
PYTHON_CATEGORIES = frozenset({"python_function"})
GPU_OP_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"})

# A bare non-finite token in value position (after `:`, `[` or `,`).
BARE_TOKEN = re.compile(r"(?<=[:\[,])(\s*)(-?(?:inf|nan|Infinity|NaN))(?=\s*[,}\]])")
BARE_TOKEN_BYTES = re.compile(rb"(?<=[:\[,])(\s*)(-?(?:inf|nan|Infinity|NaN))(?=\s*[,}\]])")


_EMPTY_RAW = msgspec.Raw(b"")  # one shared default: a factory call per event costs 15% of decoding


class EventArgs(msgspec.Struct, gc=False):
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
    profiler_occupancy: Any = msgspec.field(default=None, name="occupancy")
    original_stream: Any = None  # Cuspy: the CUDA stream of an op it moved to a logical lane (``stream``)


class Event(msgspec.Struct, gc=False):
    """The typed fields are what the collector uses as keys and numbers: an event that does not fit
    them (a list as a category, an object as a pid) fails the fast decoder, and the exact path's
    ``event_from_dict`` makes it fit, so nothing downstream sees an unhashable key."""

    cat: str | None = None
    name: str | int | float | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    # Floats: msgspec makes Kineto's integer microseconds doubles as it decodes (correctly rounded, as ``float()``
    # is; past a double's range it refuses the block, and the exact path's ``_number`` reads None as before), so the
    # collector's hot loop takes every time as it is instead of calling ``_number`` on a million integers (issue 48).
    # Other readers build Events with integers or floats; the collector takes both.
    ts: float | str | None = None
    dur: float | str | None = None
    args: EventArgs | None = None


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
RAW_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_ARG_ENCODED = {f.encode_name: f.name for f in msgspec.structs.fields(EventArgs)}
_RAW_FIELDS = frozenset({"input_dims", "input_dims_old", "input_type"})


def event_from_dict(obj: Any) -> Event | None:
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
        args = EventArgs(**values)
    cat = obj.get("cat")
    return Event(
        cat=cat if isinstance(cat, str) else None,
        name=_scalar(obj.get("name")),
        pid=_key(obj.get("pid")),
        tid=_key(obj.get("tid")),
        ts=_number_or_text(obj.get("ts")),
        dur=_number_or_text(obj.get("dur")),
        args=args,
    )


def event_from_parts(  # noqa: PLR0917 - an event's fields, in the JSON's order
    cat: str | None, name: str, pid: Any, tid: Any, ts: float, dur: float, args: dict[str, Any]
) -> Event:
    """An event another format's reader decoded (its args by the JSON's names), shaped like the fast path's
    struct: only the args the struct has are kept, looked up by each arg rather than each field."""
    values: dict[str, Any] = {}
    for encoded, value in args.items():
        attr = _ARG_ENCODED.get(encoded)
        if attr is not None:
            values[attr] = msgspec.Raw(msgspec.json.encode(value)) if attr in _RAW_FIELDS else value
    return Event(cat=cat, name=name, pid=_key(pid), tid=_key(tid), ts=ts, dur=dur, args=EventArgs(**values))


def _scalar(value: Any) -> str | int | float | None:
    if value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool)):
        return value
    return str(value)


def _key(value: Any) -> int | str | None:
    """A pid or tid: an integer or a string, whatever the trace wrote (it becomes a dict key)."""
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return str(value)


def _number_or_text(value: Any) -> int | float | str | None:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    return None


def quote_bare(match: re.Match[str]) -> str:
    return f'{match.group(1)}"{BARE_MARK}{match.group(2)}"'


def quote_bare_bytes(match: re.Match[bytes]) -> bytes:
    return match.group(1) + b'"' + BARE_MARK.encode() + match.group(2) + b'"'


_DECIMAL = re.compile(r"-?[0-9]+")  # ASCII digits: str.isdigit() takes '²', which int() refuses
INT_LIMIT = 1 << 63  # ids, counts and dimensions beyond int64 are damage, not data
# A step's duration or a counter's sample past 2^53 (285 years in µs; a double no longer holds every integer there)
# is no measurement: kept, a few of them summed overflow to inf and ``statistics.fmean`` raises (issue 47, item 3).
MEASURABLE = float(1 << 53)


def as_int(value: Any) -> int | None:
    """An integer the trace meant, or None (bools, fractions, 5,000-digit numbers, words)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -INT_LIMIT < value < INT_LIMIT else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < INT_LIMIT else None
    if isinstance(value, str) and len(value) < 24 and _DECIMAL.fullmatch(value.strip()):
        return as_int(int(value))
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str) and len(value) < 64:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def dim3(value: Any) -> tuple[int, int, int] | None:
    if type(value) is list and len(value) == 3:
        x, y, z = value
        if type(x) is int and type(y) is int and type(z) is int:
            return (x, y, z)
        a, b, c = as_int(x), as_int(y), as_int(z)
        if a is not None and b is not None and c is not None:
            return (a, b, c)
    return None


def reported(value: Any) -> ReportedValue:
    """How the profiler wrote a metric: number, bare token (invalid JSON) or quoted string."""
    if value is None:
        return ReportedValue(None, "missing")
    if isinstance(value, bool):
        return ReportedValue(None, "other")
    if isinstance(value, (int, float)):
        number = as_float(value)  # None for an integer too large for a float
        if number is None:
            return ReportedValue(None, "other")
        return ReportedValue(number, "number" if math.isfinite(number) else "bare")
    if isinstance(value, str):
        spelling = "quoted"
        text = value
        if text.startswith(BARE_MARK):
            spelling, text = "bare", text[len(BARE_MARK) :]
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
        number = as_float(text)
        return ReportedValue(number, "quoted" if number is not None else "other")
    return ReportedValue(None, "other")


_OCCUPANCY_FIELDS = (
    "activeBlocksPerMultiprocessor",
    "blockLimitRegs",
    "blockLimitSharedMem",
    "blockLimitWarps",
    "blockLimitBlocks",
    "allocatedSharedMemPerBlock",
)


def profiler_occupancy(value: Any) -> ProfilerOccupancy | None:
    """Kineto's ``occupancy`` object as a record, or None when it is absent or not an object."""
    if not isinstance(value, dict):
        return None
    numbers = [as_int(value.get(name)) for name in _OCCUPANCY_FIELDS]
    factors = value.get("limitingFactors")
    text = factors[:64] if isinstance(factors, str) else ""
    return ProfilerOccupancy(numbers[0], text, *numbers[1:])


def written_precision(value: float) -> int:
    """How a float metric (a C ``float`` in Kineto) was written: 1 at full precision, as PyTorch 2.14's typed
    metadata writes it (``135.51515197753906``: exactly a float32, more digits than the 9 significant ones
    earlier profilers printed); -1 rounded, as earlier profilers printed it (``31.030303``, ``6060.605957``:
    a fraction no float32 has); 0 when the value cannot tell (whole, non-finite, or a short float32 like 0.5).
    One value never decides: a six-decimal print of 1000 or more has ten significant digits too."""
    if not math.isfinite(value) or value.is_integer():
        return 0
    if f32(value) != value:
        return -1
    return 1 if float(f"{value:.9g}") != value else 0


def decode_block(decoder: msgspec.json.Decoder[list[Any]], piece: bytes | memoryview) -> list[Any] | None:
    """A run of whole events as one array; retried with bare inf/nan quoted; None if neither decodes. The brackets
    are joined to the piece in one copy (``b"[" + piece + b"]"`` made two, and a block's copies are the read's peak)."""
    try:
        return decoder.decode(b"".join((b"[", piece, b"]")))
    except msgspec.DecodeError:
        try:
            return decoder.decode(b"".join((b"[", BARE_TOKEN_BYTES.sub(quote_bare_bytes, piece), b"]")))
        except msgspec.DecodeError:
            return None


def unmark_bare(raw: bytes) -> bytes:
    """Undo the reader's quoting of bare inf/nan tokens in an event's bytes."""
    return _MARKED.sub(rb"\1", raw) if BARE_MARK.encode() in raw else raw


_MARKED = re.compile(rb'"' + re.escape(BARE_MARK.encode()) + rb'(-?(?:inf|nan|Infinity|NaN))"')
