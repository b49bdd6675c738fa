"""The protobuf wire format, as untrusted bytes: varints, tags, length-delimited fields, each bounded.

Shared by the readers of protobuf files (``perfetto.py`` today). Nothing is copied: a length-delimited field is a
``(start, end)`` span into the buffer, so a message of a million fields costs its list, never its bytes again.
Every malformed shape (a varint over 10 bytes, a field running past its message, a wire type protobuf does not
have, a message cut off, more than ``MAX_FIELDS`` fields) raises ``Damaged``, which a reader turns into its one-line
error naming the offset.

Two loops of the ``.pftrace`` decoder live here too, as the per-packet work they are: ``packet_head`` and
``track_event_fields`` read a TracePacket's and a TrackEvent's fields and hand ``perfetto.py`` what its loops over
them kept (the last value of a field written twice, the flags a later ``incremental_state_cleared`` sets, spans for
the decoder to read further), so a packet costs one call and one tuple, not a tuple per field.

``fields``, ``varint``, ``packed_varints``, ``packet_head`` and ``track_event_fields`` run compiled where
warpwizard's core is built (``wizard/_core.c``, a C extension on the stable ABI: one binary for CPython 3.10 and
later), and as the Python below elsewhere
(``WARPWIZARD_PURE=1``, or no compiler where it was installed). The two agree on every input, damaged ones
included (tests/trace/test_compiled_core.py); ``COMPILED`` says which runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wizard.compiled_core import compiled as compiled_core

MAX_FIELDS = 1_000_000  # fields of one message: a 64 MB packet of one-byte fields would be a list of 64 million
VARINT, FIXED64, DELIMITED, FIXED32 = 0, 1, 2, 5  # the wire types read (3 and 4, groups, are refused)

Field = tuple[int, int, Any]  # (field number, wire type, an int or a (start, end) span)


class Damaged(Exception):
    """A message that does not decode: the reader stops with the offset."""


def pure_varint(b: bytes, i: int) -> tuple[int, int]:
    """The varint at ``b[i]`` and the position after it; ``IndexError`` when the bytes end inside it."""
    x = b[i]
    if x < 0x80:
        return x, i + 1
    y = b[i + 1]
    if y < 0x80:
        return (x & 0x7F) | (y << 7), i + 2
    result, shift = (x & 0x7F) | ((y & 0x7F) << 7), 14
    i += 1
    while True:
        i += 1
        x = b[i]
        result |= (x & 0x7F) << shift
        if x < 0x80:
            return result, i + 1
        shift += 7
        if shift > 63:
            raise Damaged("a varint longer than 10 bytes")


def pure_fields(b: bytes, start: int = 0, end: int | None = None) -> list[Field]:  # noqa: PLR0912
    """(field number, wire type, value) of one message: an int for varints and fixed fields, a ``(start, end)``
    pair into ``b`` for a length-delimited field (nothing is copied). One-byte varints, nearly every tag and
    most values, are read inline: this loop is most of a read's time."""
    out: list[Field] = []
    append = out.append
    i, end = start, len(b) if end is None else end
    try:
        while i < end:
            key = b[i]
            if key < 0x80:
                i += 1
            else:
                key, i = pure_varint(b, i)
            wire = key & 7
            if wire == 0:
                value = b[i]
                if value < 0x80:
                    i += 1
                else:
                    value, i = pure_varint(b, i)
                append((key >> 3, 0, value))
            elif wire == 2:
                size = b[i]
                if size < 0x80:
                    i += 1
                else:
                    size, i = pure_varint(b, i)
                if i + size > end:
                    raise Damaged("a field runs past its message")
                append((key >> 3, 2, (i, i + size)))
                i += size
            elif wire == 1:
                append((key >> 3, 1, int.from_bytes(b[i : i + 8], "little")))
                i += 8
            elif wire == 5:
                append((key >> 3, 5, int.from_bytes(b[i : i + 4], "little")))
                i += 4
            else:
                raise Damaged(f"wire type {wire}")
            if len(out) > MAX_FIELDS:
                raise Damaged(f"a message of more than {MAX_FIELDS} fields")
        if i > end:
            raise Damaged("a field runs past its message")
    except IndexError:
        raise Damaged("a message cut off") from None
    return out


def fields_of_prefix(b: bytes, start: int) -> list[Field]:
    """The whole fields at the start of a message the buffer cuts off (the last, cut field's number and type with
    the value None; a cut fixed or varint field left out): enough to recognise a format from a file's head."""
    out: list[Field] = []
    i, end = start, len(b)
    while i < end:
        value: Any
        try:
            key, j = varint(b, i)
            wire = key & 7
            if wire == 0:
                value, j = varint(b, j)
            elif wire == 2:
                size, j = varint(b, j)
                if j + size > end:  # the field the head cut: its number and type are known, its value is not
                    out.append((key >> 3, wire, None))
                    break
                value, j = (j, j + size), j + size
            elif wire in (1, 5):
                j += 8 if wire == 1 else 4
                if j > end:
                    break
                value = 0
            else:
                raise Damaged(f"wire type {wire}")
        except IndexError:
            break
        out.append((key >> 3, wire, value))
        i = j
    return out


def pure_packed_varints(b: bytes, wire: int, value: Any) -> list[int]:
    """A repeated varint field's values from one field: one value, or a packed run of them (proto3 writers pack
    repeated scalars; a reader must take both)."""
    if wire == 0:
        return [value]
    if wire != 2:
        return []
    out, i = [], value[0]
    try:
        while i < value[1]:
            v, i = pure_varint(b, i)
            out.append(v)
    except IndexError:
        raise Damaged("a packed field cut off") from None
    return out


# TracePacket fields (perfetto's protos/perfetto/trace/trace_packet.proto), as perfetto.py names them
_TIMESTAMP, _CLOCK_SNAPSHOT, _SEQ_ID, _TRACK_EVENT, _INTERNED, _SEQ_FLAGS, _CLEARED = 8, 6, 10, 11, 12, 13, 41
_RENDER_STAGE, _CLOCK_ID, _DEFAULTS, _TRACK_DESCRIPTOR = 53, 58, 59, 60
# TrackEvent fields (track_event.proto; 3000: Cuspy's gpu_correlation)
_TE_CATEGORY_IIDS, _TE_DEBUG, _TE_LEGACY, _TE_TYPE, _TE_NAME_IID, _TE_TRACK, _TE_CATEGORIES, _TE_NAME = (
    3, 4, 6, 9, 10, 11, 22, 23,
)  # fmt: skip
_TE_GPU_CORRELATION = 3000

Span = tuple[int, int]
# (ts or None, sequence id, flags, the body's field number (0: none), its span, InternedData's span or None,
#  TracePacketDefaults' span or None, a clock snapshot seen, a clock id seen)
PacketHead = tuple[int | None, int, int, int, Span, Span | None, Span | None, bool, bool]
# (type, track (-1: none written), the name's span or None, its iid or None (the last one written of the two),
#  debug annotations' spans, the fields read further in their order (categories, category iids, gpu_correlation,
#  legacy event) or None where there are none)
TrackEventFields = tuple[int, int, Span | None, int | None, list[Span], list[Field] | None]


def pure_packet_head(b: bytes) -> PacketHead:
    """A TracePacket's fields as the decoder reads them: the last of each written twice; ``SEQ_FLAGS`` replaces the
    flags, ``incremental_state_cleared`` (a later field) sets their first bit; the body is the last track event,
    track descriptor or render stage."""
    ts: int | None = None
    seq_id = flags = kind = 0
    body: Span = (0, 0)
    interned: Span | None = None
    defaults: Span | None = None
    snapshot = clocks = False
    for number, wire, value in pure_fields(b):
        if number == _TIMESTAMP and wire == 0:
            ts = value
        elif number in (_TRACK_EVENT, _TRACK_DESCRIPTOR, _RENDER_STAGE) and wire == 2:
            kind, body = number, value
        elif number == _SEQ_ID and wire == 0:
            seq_id = value
        elif number == _SEQ_FLAGS and wire == 0:
            flags = value
        elif number == _CLEARED and wire == 0 and value:
            flags |= 1  # SEQ_INCREMENTAL_STATE_CLEARED
        elif number == _INTERNED and wire == 2:
            interned = value
        elif number == _DEFAULTS and wire == 2:
            defaults = value
        elif number == _CLOCK_SNAPSHOT and wire == 2:
            snapshot = True
        elif number == _CLOCK_ID:
            clocks = True
    return ts, seq_id, flags, kind, body, interned, defaults, snapshot, clocks


def pure_track_event_fields(b: bytes, start: int, end: int | None) -> TrackEventFields:
    """A TrackEvent's fields as the decoder reads them: type, track and name (a span or an iid, whichever came
    last) as their last values; every debug annotation's span; the rarer fields whose meaning depends on their
    order or on the sequence's tables (categories, gpu_correlation, legacy events) as they are, in order."""
    kind, track = 0, -1
    name_span: Span | None = None
    name_iid: int | None = None
    notes: list[Span] = []
    rest: list[Field] | None = None
    for number, wire, value in pure_fields(b, start, end):
        if number == _TE_DEBUG and wire == 2:
            notes.append(value)
        elif number == _TE_TYPE and wire == 0:
            kind = value
        elif number == _TE_TRACK and wire == 0:
            track = value
        elif number == _TE_NAME and wire == 2:
            name_span, name_iid = value, None
        elif number == _TE_NAME_IID and wire == 0:
            name_span, name_iid = None, value
        elif (
            (number == _TE_CATEGORIES and wire == 2)
            or number == _TE_CATEGORY_IIDS
            or (number in (_TE_GPU_CORRELATION, _TE_LEGACY) and wire == 2)
        ):
            if rest is None:
                rest = []
            rest.append((number, wire, value))
    return kind, track, name_span, name_iid, notes, rest


varint: Callable[[bytes, int], tuple[int, int]] = pure_varint
fields: Callable[..., list[Field]] = pure_fields
packed_varints: Callable[[bytes, int, Any], list[int]] = pure_packed_varints
packet_head: Callable[[bytes], PacketHead] = pure_packet_head
track_event_fields: Callable[[bytes, int, int | None], TrackEventFields] = pure_track_event_fields
COMPILED = False  # whether the five above are the compiled core's


def bind_core(core: Any) -> None:
    """Hand the core what its functions raise, bound and fall back to (the tests bind it so too, with or without
    ``WARPWIZARD_PURE=1``)."""
    core.bind(Damaged, MAX_FIELDS, pure_fields, pure_varint, pure_packed_varints, pure_packet_head,
              pure_track_event_fields)  # fmt: skip


def _bind_compiled_core() -> bool:
    """Put the compiled twins in place where the core is built and not refused (``WARPWIZARD_PURE=1``)."""
    global varint, fields, packed_varints, packet_head, track_event_fields
    core = compiled_core()
    if core is None:
        return False
    bind_core(core)
    varint, fields, packed_varints = core.varint, core.fields, core.packed_varints
    packet_head, track_event_fields = core.packet_head, core.track_event_fields
    return True


COMPILED = _bind_compiled_core()


def text(b: bytes, span: tuple[int, int]) -> str:
    """A string field as text (invalid UTF-8 replaced)."""
    return b[span[0] : span[1]].decode("utf-8", "replace")


def text_prefix(b: bytes, span: tuple[int, int], limit: int) -> str:
    """At most the first ``limit`` bytes of a string field as text: a name of a megabyte costs what the limit
    allows, never a megabyte of text (a character the limit cuts in two is replaced)."""
    start, end = span
    if end - start > limit:
        end = start + limit
    return b[start:end].decode("utf-8", "replace")


def signed(value: int) -> int:
    """An int64 written as a varint (two's complement in 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value
