"""The compiled core's .pftrace event functions (wizard/_core.c, section "pfcore") against their pure-Python twins
in wizard/trace/read/perfetto.py, issue 48 item 2: ``event_args`` (a TrackEvent's debug annotations into its args
through the sequence's memo) and ``split_run`` (the whole packets a buffer holds, in one call). The same result,
the same side effects (args, memo, its count) or the same error in the same words, on valid inputs, every cut and
one-byte change of them, random bytes, values at the bounds (70-bit varints, int64's edges, MEMO_BYTES, MEMO_ENTRIES,
MAX_PACKET, MAX_FIELDS) and arguments of the wrong types; then whole inspections of .pftrace files byte for byte,
compiled against every twin (``WARPWIZARD_PURE=1``'s path).

The twins are the second computation; where a right answer is defined (a value's type and sign, where a packet
starts), it is also written out here from the wire format (tests.helpers.encode_varint), independently of both.
"""

from __future__ import annotations

import gc
import random
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import needs_shared
from tests.helpers import (
    call_outcome,
    dfield,
    encode_varint,
    every_change,
    pftrace_conversions,
    tag,
    twin_swapper,
    vfield,
)
from tests.output_digests import output
from wizard.errors import InputFileError
from wizard.trace.read import perfetto, protobuf
from wizard.trace.read.collector import MAX_NAME

core = pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
if not hasattr(core, "event_args"):
    pytest.skip("the compiled core here was built before its event functions", allow_module_level=True)
# what the two modules do at import, unless WARPWIZARD_PURE=1 (then the twins are compared with the core all the same)
protobuf.bind_core(core)


def bind_twins(
    event_args: Any = perfetto.pure_event_args,
    decode: Any = perfetto._decode_annotation,
    split: Any = perfetto.pure_split_packets,
    track_event: Any = perfetto.pure_track_event,
) -> None:
    """What perfetto.py binds at import (twins given here replace its own, to see that the core does not call them)."""
    perfetto.bind_core_events(core, event_args, decode, split, track_event)


bind_twins()


def fixed64(number: int, bits: int) -> bytes:
    return tag(number, 1) + bits.to_bytes(8, "little")


def plain(value: Any) -> Any:
    """A value in a form == compares fully: a float by its bits (NaN equals itself), Raw by its bytes."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, msgspec.Raw):
        return ("raw", bytes(value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(plain(k), plain(v)) for k, v in value.items()])
    return value


# -- event_args -----------------------------------------------------------------------------------------------


def sequence() -> perfetto._Sequence:
    """A writer sequence with interned annotation names (one past 64 bits) and interned string values."""
    seq = perfetto._Sequence()
    seq.tables["annotation_names"].update({1: "correlation", 2: "grid", 3: "Input Dims", 4: "queued", 2**64: "device"})
    seq.strings.update({5: "cuda:0", 2**65: "far"})
    return seq


NAMES = (dfield(10, b"correlation"), dfield(10, b"stream"), dfield(10, b"External id"), dfield(10, b"Input Dims"),
         dfield(10, b"grid"), dfield(10, b"\xff\xfe"), vfield(1, 1), vfield(1, 3), vfield(1, 4), vfield(1, 9),
         vfield(1, 2**64))  # fmt: skip
INT_VALUES = (0, 1, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70 - 1)


def values() -> Iterator[bytes]:
    """Every value field the decoder reads, at the values that change its meaning, and in wire types it does not."""
    for v in INT_VALUES:
        yield vfield(3, v)
        yield vfield(4, v)
    yield vfield(2, 0) + vfield(2, 5)
    for bits in (0, 0x3FF0000000000000, 0x7FF8000000000001, 0xFFF0000000000000, 2**64 - 1):
        yield fixed64(5, bits)
    yield dfield(6, "µs ∑".encode()) + dfield(6, b"\xc3")
    yield vfield(17, 5) + vfield(17, 2**65) + vfield(17, 6)
    yield dfield(9, b"[128, 1, 1]")
    yield dfield(9, b"[1, {]")  # not JSON: the text
    yield dfield(9, b"[" * 10_000 + b"]" * 10_000)  # deeper than msgspec decodes: the text
    yield dfield(12, vfield(3, 1)) + dfield(12, dfield(6, b"a"))  # an array
    yield dfield(11, dfield(10, b"k") + vfield(4, 2**64 - 1))  # a dict
    yield vfield(6, 1) + tag(3, 5) + bytes(4) + dfield(3, b"x") + vfield(9, 1) + vfield(12, 3)  # other wire types
    yield b""


def annotation_messages() -> Iterator[bytes]:
    """Debug annotations: every name with every value, the name written twice and after its value."""
    for name in NAMES:
        for value in values():
            yield name + value
    yield dfield(10, b"grid") + vfield(1, 1) + vfield(3, 7)  # the iid came last: correlation
    yield vfield(1, 1) + dfield(10, b"grid") + dfield(9, b"[1,2,3]")  # the text came last: grid
    yield vfield(3, 7) + dfield(10, b"correlation")


def shown(function: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """``call_outcome`` with the value in ``plain`` form."""
    kind, value = call_outcome(function, *args)
    return (kind, plain(value)) if kind == "value" else (kind, value)


def agree(compiled: Callable[..., Any], twin: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """The compiled function and its twin give the same on ``args``: that outcome."""
    got = shown(compiled, *args)
    assert got == shown(twin, *args), args
    return got


def event_outcome(function: Callable[..., Any], b: Any, notes: Any, entries: Any = 0, **given: Any) -> Any:
    """A call on a fresh sequence and args: its value or its error, and what it left in args and in the memo."""
    seq = given.get("seq") or sequence()
    args: Any = given.get("args", {})
    result = shown(function, b, notes, seq, args, entries)
    return result, plain(args), plain(dict(seq.memo)) if isinstance(seq, perfetto._Sequence) else None


def both_agree(b: Any, notes: Any, entries: Any = 0, **given: Any) -> Any:
    compiled = event_outcome(core.event_args, b, notes, entries, **given)
    assert compiled == event_outcome(perfetto.pure_event_args, b, notes, entries, **given), (b, notes, entries)
    return compiled


def test_event_args_say_what_the_wire_format_says() -> None:
    """The one right answer of each kind of value, written out here from the wire format: an int64's sign, an
    interned name and value, a JSON arg kept as JSON, a name no event keeps (its value never decoded)."""
    cases: list[tuple[bytes, dict[str, Any]]] = [
        (dfield(10, b"correlation") + vfield(4, 2**64 - 5), {"correlation": -5}),
        (vfield(1, 2**64) + vfield(17, 2**65), {"device": "far"}),
        (dfield(10, b"grid") + dfield(9, b"[108, 1, 1]"), {"grid": [108, 1, 1]}),
        (vfield(1, 3) + dfield(9, b'[[1, 2], ""]'), {"input_dims": msgspec.Raw(b'[[1,2],""]')}),
        (dfield(10, b"External id") + dfield(9, b"[not json"), {}),
        (dfield(10, b"stream") + fixed64(5, 0x4000000000000000), {"stream": 2.0}),
        (dfield(10, b"stream") + vfield(4, 2**70 - 1), {"stream": 2**70 - 1 - 2**64}),  # past 64 bits: as written
    ]
    for message, expected in cases:
        for function in (core.event_args, perfetto.pure_event_args):
            args: dict[str, Any] = {}
            kept = not any(isinstance(v, list) for v in expected.values())  # the memo keeps no list
            assert function(message, [(0, len(message))], sequence(), args, 0) == (len(message), int(kept))
            assert plain(args) == plain(expected), message


def test_event_args_agree_on_every_annotation_and_every_change_of_it() -> None:
    compared = 0
    for message in annotation_messages():
        both_agree(message, [(0, len(message))])
        for data in every_change(message) if len(message) < 40 else ():
            both_agree(data, [(0, len(data))])
            compared += 1
    assert compared > 20_000


def test_event_args_agree_over_several_notes_and_the_memo() -> None:
    """Notes in one buffer: the same bytes twice (the second a memo hit), an arg written by two notes (the last
    wins), a long annotation the memo does not keep, lists and dicts it does not keep, a note cut in the middle."""
    short = dfield(10, b"correlation") + vfield(3, 9)
    other = vfield(1, 1) + vfield(3, 11)
    long = dfield(10, b"stream") + dfield(6, b"s" * perfetto.MEMO_BYTES)
    grid = dfield(10, b"grid") + dfield(9, b"[1,2,3]")
    nested = dfield(10, b"grid") + dfield(12, vfield(3, 4))
    parts = [short, other, long, grid, nested, short, long[:-3]]
    data, notes, at = b"", [], 0
    for part in parts:
        data += part
        notes.append((at, at + len(part)))
        at += len(part)
    for count in range(len(notes) + 1):
        both_agree(data, notes[:count])
    result, args, memo = both_agree(data, notes[:-1])
    assert result == ("value", ("tuple", [sum(e - s for s, e in notes[:-1]), 2]))  # short and other: remembered
    assert len(memo[1]) == 2 and args[1][0] == (("correlation"), 9)
    seq = sequence()
    seq.memo[short] = ("stream", 77)  # what the memo holds is what an event gets: it is not decoded again
    assert both_agree(data, notes[:1], seq=seq)[1] == ("dict", [("stream", 77)])


def test_event_args_keep_the_memo_within_its_bound() -> None:
    data = dfield(10, b"correlation") + vfield(3, 9)
    for entries in (perfetto.MEMO_ENTRIES - 2, perfetto.MEMO_ENTRIES - 1, perfetto.MEMO_ENTRIES, 2**62):
        result, _, memo = both_agree(data, [(0, len(data))], entries)
        kept = entries < perfetto.MEMO_ENTRIES
        assert result == ("value", ("tuple", [len(data), entries + kept])) and len(memo[1]) == kept


def test_a_full_memo_starts_its_sequence_again() -> None:
    """Full (MEMO_ENTRIES over every sequence), a memo that holds entries of this sequence drops them and keeps the
    new one: the ids that filled it never come back, the shapes that follow would otherwise never be remembered."""
    data = dfield(10, b"correlation") + vfield(3, 9)
    held = dfield(10, b"stream") + vfield(3, 7)
    for function in (core.event_args, perfetto.pure_event_args):
        seq = sequence()
        seq.memo[held] = ("stream", 7)
        args: dict[str, Any] = {}
        full = perfetto.MEMO_ENTRIES
        assert function(data, [(0, len(data))], seq, args, full) == (len(data), full - 1 + 1)
        assert dict(seq.memo) == {data: ("correlation", 9)} and args == {"correlation": 9}
        # the memo it kept answers the next event of the sequence: the same bytes, not decoded again
        seq.memo[data] = ("correlation", 10)
        again: dict[str, Any] = {}
        assert function(data, [(0, len(data))], seq, again, full) == (len(data), full)
        assert again == {"correlation": 10}
        # where the other sequences hold the bound even without this one's, it is emptied and keeps nothing
        other = dfield(10, b"correlation") + vfield(3, 11)
        assert function(other, [(0, len(other))], seq, {}, full + 5) == (len(other), full + 4)
        assert dict(seq.memo) == {}


def test_event_args_agree_on_random_bytes() -> None:
    rng = random.Random(48)
    alphabet = bytes([0x00, 0x01, 0x02, 0x05, 0x08, 0x09, 0x0A, 0x11, 0x18, 0x1A, 0x20, 0x29, 0x32, 0x4A, 0x52, 0x5A,
                      0x62, 0x7F, 0x80, 0x88, 0xFF])  # fmt: skip
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        notes = []
        for _ in range(rng.randrange(4)):
            start = rng.randrange(len(data) + 1)
            notes.append((start, rng.randrange(start, len(data) + 1)))
        both_agree(data, notes, rng.choice((0, perfetto.MEMO_ENTRIES - 1, perfetto.MEMO_ENTRIES)))


def test_event_args_refuse_more_than_max_fields_in_the_same_words() -> None:
    data = dfield(10, b"correlation") + b"\x18\x00" * protobuf.MAX_FIELDS
    expected = ("Damaged", f"a message of more than {protobuf.MAX_FIELDS} fields")
    assert both_agree(data, [(0, len(data))])[0] == expected


def test_event_args_take_the_twin_for_inputs_of_other_types() -> None:
    """Other types mean what the twin says: it runs, raising or not, and the core's answer is its answer."""
    data = dfield(10, b"correlation") + vfield(3, 9)
    span = (0, len(data))
    cases: list[tuple[Any, Any, Any]] = [
        (memoryview(data), [span], 0), (bytearray(data), [span], 0), (data, (span,), 0), (data, [[0, len(data)]], 0),
        (data, [(0, len(data), 1)], 0), (data, [(-3, len(data))], 0), (data, [(0, len(data) + 5)], 0),
        (data, [(4, 2)], 0), (data, [(0.0, 3)], 0), (data, [(0, 2**70)], 0), (data, [span], 1.5),
        (data, [span], True), (data, [span], None), (data, None, 0), (None, [span], 0), (data, [span], 2**70),
    ]  # fmt: skip
    for b, notes, entries in cases:
        both_agree(b, notes, entries)
    both_agree(data, [span], 0, args=[])  # args not a dict
    both_agree(data, [span], 0, seq=object())  # no memo


def test_event_args_keep_reference_counts() -> None:
    """200,000 rounds of a call and a refused call leak nothing: the reference counts of what they are given and
    return are as before."""
    seq = sequence()
    parts = [vfield(1, 2) + dfield(9, b"[1,2]"), vfield(1, 1) + vfield(3, 2**70 - 1), dfield(10, b"External id") +
             vfield(3, 1), dfield(10, b"stream") + dfield(6, b"s0"), vfield(1, 3) + vfield(3, 4), b""]  # fmt: skip
    data = b"".join(parts)
    ends = [sum(len(p) for p in parts[: k + 1]) for k in range(len(parts))]
    notes = [(end - len(part), end) for part, end in zip(parts, ends, strict=True)]
    args: dict[str, Any] = {}
    core.event_args(data, notes, seq, args, 0)
    gc.collect()
    watched = (data, notes, seq, seq.memo, args, *seq.memo.values())
    shared = (None, True, "grid", "correlation")  # others hold these too: a leak of one a call is 200,000 or more
    before = [sys.getrefcount(x) for x in watched]
    before_shared = [sys.getrefcount(x) for x in shared]
    for _ in range(200_000):
        core.event_args(data, notes, seq, args, 0)
        try:
            core.event_args(data[:-1], notes[2:3], seq, args, 0)
        except protobuf.Damaged:
            pass
    gc.collect()
    assert [sys.getrefcount(x) for x in watched] == before
    assert all(abs(sys.getrefcount(x) - n) < 1000 for x, n in zip(shared, before_shared, strict=True))


# -- split_run -----------------------------------------------------------------------------------------------


def stream_of(bodies: list[bytes]) -> bytes:
    return b"".join(dfield(1, body) for body in bodies)


def split_run_list(*args: Any) -> Any:
    """split_run with its Run and its starts read out as lists: what pure_split_packets gives."""
    found, starts, pos = core.split_run(*args)
    return list(found), list(starts), pos


def split_agree(*args: Any) -> Any:
    """split_run (its packets read out of the Run) gives what the twin gives."""
    return agree(split_run_list, perfetto.pure_split_packets, *args)


def test_split_packets_finds_where_each_packet_starts() -> None:
    """Starts and bodies computed here from the sizes (1- and 2-byte lengths), and the stops: the last 20 bytes
    (a header may go past them), another field, a packet over the bound."""
    bodies = [b"", b"a", b"x" * 127, b"y" * 128, b"z" * 300, b"w" * 25]
    data = stream_of(bodies) + dfield(2, b"other") + b"\x00" * 20
    starts, at = [], 0
    for body in bodies:
        starts.append(at)
        at += 1 + len(encode_varint(len(body))) + len(body)
    for function in (split_run_list, perfetto.pure_split_packets):
        assert function(data, 0, 100, 1000) == (bodies, starts, at)
        assert function(data, 0, 2, 1000) == (bodies[:2], starts[:2], starts[2])
        assert function(data, 0, 100, 299) == (bodies[:4], starts[:4], starts[4])
        assert function(data[: starts[5] + 20], 0, 100, 1000) == (bodies[:5], starts[:5], starts[5])


def test_split_packets_agree_on_every_change_position_limit_and_bound() -> None:
    data = stream_of([b"", b"\x08\x01" * 10, b"q" * 130, b"\x0a" * 40]) + dfield(3, b"t" * 30) + stream_of([b"k" * 30])
    compared = 0
    for changed in (data, *every_change(data)):
        for pos in (0, 1, 2, 3, 24, len(changed) - 21, len(changed)):
            for limit in (0, 1, 3, 10**6):
                for bound in (0, 30, 130, perfetto.MAX_PACKET):
                    split_agree(changed, pos, limit, bound)
                    compared += 1
    assert compared > 100_000


def test_split_packets_agree_on_random_bytes_and_long_varints() -> None:
    rng = random.Random(11)
    alphabet = bytes([0x00, 0x01, 0x0A, 0x12, 0x14, 0x7F, 0x80, 0xFF])
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(80)))
        split_agree(data, rng.randrange(len(data) + 1), rng.randrange(6), rng.choice((0, 20, 2**63)))
    for size in (b"\xff" * 10 + b"\x01", b"\xff" * 9 + b"\x7f", encode_varint(2**70 - 1)):
        split_agree(b"\x0a" + size + bytes(40), 0, 5, perfetto.MAX_PACKET)


def test_split_packets_take_the_twin_for_inputs_of_other_types() -> None:
    data = stream_of([b"abc" * 10, b"d" * 30])
    for args in ((memoryview(data), 0, 5, 100), (bytearray(data), 0, 5, 100), (data, -40, 5, 100),
                 (data, 0.0, 5, 100), (data, 0, None, 100), (data, 0, 5, -1), (data, 2**70, 5, 100),
                 (data, 0, 5, 2**70), (data, 0, True, 100), (data, 0, 5), (None, 0, 5, 100)):  # fmt: skip
        split_agree(*args)


def test_a_run_is_a_sequence_of_its_packets() -> None:
    """A Run gives each packet's bytes by its index (from the end too), in order when iterated, and refuses an index
    past either end; it holds the buffer, not a copy of it, so the packets outlive the caller's name for it."""
    bodies = [b"a" * 30, b"", b"b" * 200]
    run, starts, pos = core.split_run(stream_of(bodies) + bytes(20), 0, 10, 1000)
    assert type(run).__name__ == "Run" and len(run) == 3
    assert (list(starts), starts[-1], pos) == ([0, 32, 34], 34, 34 + 3 + 200)  # tag, size varint (1 or 2), bytes
    assert (run[0], run[1], run[2], run[-1], run[-3]) == (*bodies, bodies[2], bodies[0])
    assert list(run) == bodies and [p for _, p in enumerate(run)] == bodies
    for k in (3, -4, 2**62):
        with pytest.raises(IndexError, match="a run's packet out of range"):
            run[k]
    buffer = stream_of(bodies) + bytes(20)
    run, _, _ = core.split_run(buffer, 0, 10, 1000)
    del buffer
    gc.collect()
    assert list(run) == bodies


# -- track_event ---------------------------------------------------------------------------------------------


def track_sequence() -> perfetto._Sequence:
    seq = perfetto._Sequence()
    seq.tables["names"].update({1: "matmul", 2**64: "far name"})
    seq.tables["categories"].update({2: "kernel", 300: "cpu_op", 2**65: "far"})
    return seq


def track_events() -> Iterator[bytes]:
    """TrackEvents: names as text (UTF-8 and not, past NAME_BYTES and MAX_NAME) and as iids (known, not, past 64
    bits) in both orders; categories as text and as iids (one, packed, a packed run cut, fixed), the first that
    names one; gpu_correlation and legacy events left in their order."""
    yield vfield(9, 1) + vfield(11, 5) + dfield(23, "é∑".encode() + b"\xff") + dfield(22, b"kernel")
    yield dfield(23, b"a" * (perfetto.NAME_BYTES + 10)) + vfield(10, 2**64)
    yield vfield(10, 2**64) + dfield(23, "∑".encode() * (MAX_NAME + 3))
    yield dfield(23, "∑".encode() * (perfetto.NAME_BYTES // 3 + 1))  # NAME_BYTES cuts a character in two
    yield vfield(10, 7) + vfield(3, 9) + vfield(3, 2) + dfield(22, b"later")
    yield dfield(3, encode_varint(300) + encode_varint(2)) + vfield(3, 2)
    yield dfield(3, encode_varint(2**65) + b"\x80") + vfield(3, 2)  # the packed run cut: refused
    yield vfield(3, 2) + dfield(3, b"\x80")  # a cut run after the category is found: never read
    yield tag(3, 5) + bytes(4) + tag(3, 1) + bytes(8) + dfield(3, b"") + vfield(3, 300)
    yield dfield(3000, vfield(1, 9)) + dfield(22, b"c") + dfield(6, vfield(3, 2)) + dfield(3000, b"\x08")
    yield dfield(4, b"xy") + vfield(9, 2) + vfield(11, 2**70 - 1)
    yield b""


def track_agree(*args: Any) -> Any:
    return agree(core.track_event, perfetto.pure_track_event, *args)


def test_track_event_reads_names_and_categories_as_written() -> None:
    """The right answers written out: the last of a name's text and iid, the first category that names one."""
    seq = track_sequence()
    for function in (core.track_event, perfetto.pure_track_event):
        event = vfield(10, 7) + vfield(3, 9) + vfield(3, 2) + dfield(22, b"later") + dfield(23, b"op")
        assert function(event, 0, len(event), seq) == (0, -1, "op", "kernel", [], None)
        event = dfield(23, b"x" * (MAX_NAME + 50))
        assert function(event, 0, len(event), seq)[2] == "x" * MAX_NAME
        event = vfield(10, 2**64) + dfield(3000, vfield(1, 9)) + vfield(6, 1) + dfield(6, b"")
        assert function(event, 0, len(event), seq) == (
            0,
            -1,
            "far name",
            None,
            [],
            [(3000, 2, (15, 17)), (6, 2, (21, 21))],  # after 11 bytes of iid, a 3-byte tag; 2 of field 6
        )


def test_track_event_agrees_on_every_event_and_every_change_of_it() -> None:
    rng = random.Random(23)
    compared = 0
    for message in track_events():
        for data in (message, *every_change(message)) if len(message) < 200 else (message,):
            track_agree(data, 0, len(data), track_sequence())
            start = rng.randrange(len(data) + 1)
            track_agree(data, start, rng.randrange(start, len(data) + 6), track_sequence())
            compared += 2
    assert compared > 1_000


def test_track_event_agrees_on_random_bytes() -> None:
    rng = random.Random(3000)
    alphabet = bytes([0x00, 0x01, 0x02, 0x18, 0x1A, 0x22, 0x32, 0x48, 0x50, 0x58, 0x7F, 0x80, 0xB2, 0xBA, 0x01, 0xFF])
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        start = rng.randrange(len(data) + 1)
        track_agree(data, start, rng.randrange(start, len(data) + 6), track_sequence())


def test_track_event_refuses_more_than_max_fields_in_the_same_words() -> None:
    data = b"\x48\x01" * (protobuf.MAX_FIELDS + 1)
    expected = ("Damaged", f"a message of more than {protobuf.MAX_FIELDS} fields")
    assert track_agree(data, 0, len(data), track_sequence()) == expected


def test_track_event_takes_the_twin_for_inputs_of_other_types() -> None:
    data = dfield(23, b"op") + vfield(3, 2)
    for args in ((memoryview(data), 0, len(data)), (bytearray(data), 0, len(data)), (data, -3, len(data)),
                 (data, 0, None), (data, 0.0, 4), (data, 0, 2**70), (data, 2**70, 4), (data, True, 4)):  # fmt: skip
        track_agree(*args, track_sequence())
    track_agree(data, 0, len(data), object())  # no tables
    track_agree(data, 0, len(data))  # three arguments


def test_the_core_does_the_work_itself_on_what_the_reader_gives_it() -> None:
    """Parity would hold trivially were the core to hand every call to its twin: bound to twins that refuse to run,
    it still answers for bytes, a list of field spans, a dict and an int (annotations without nested values)."""

    def refuse(*_: Any) -> Any:
        raise AssertionError("the twin ran")

    data = dfield(10, b"grid") + dfield(9, b"[1,2]") + vfield(1, 1) + vfield(4, 2**64 - 1)
    packets = stream_of([data] * 3) + bytes(20)
    bind_twins(refuse, refuse, refuse, refuse)
    try:
        args: dict[str, Any] = {}
        assert core.event_args(data, [(0, 13), (13, len(data))], sequence(), args, 0) == (len(data), 1)
        assert args == {"grid": [1, 2], "correlation": -1}
        assert list(core.split_run(packets, 0, 10, 100)[0]) == [data] * 3
        event = vfield(9, 1) + vfield(10, 1) + vfield(3, 2) + dfield(4, data)
        assert core.track_event(event, 0, len(event), track_sequence()) == (1, -1, "matmul", "kernel", [(8, 34)], None)
    finally:
        bind_twins()


# -- whole reads, byte for byte ---------------------------------------------------------------------------------


@pytest.fixture
def pure_decoder(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Swaps every compiled function the decoder holds for its twin (the names it is bound under)."""
    twins = {core.fields: protobuf.pure_fields, core.varint: protobuf.pure_varint,
             core.packed_varints: protobuf.pure_packed_varints, core.packet_head: protobuf.pure_packet_head,
             core.track_event_fields: protobuf.pure_track_event_fields, core.event_args: perfetto.pure_event_args,
             core.split_run: perfetto.pure_split_packets,
             core.track_event: perfetto.pure_track_event}  # fmt: skip

    swap: Callable[[], None] = twin_swapper(monkeypatch, (perfetto, protobuf), twins)
    return swap


def pftraces(directory: Path) -> list[Path]:
    """.pftrace conversions of shared Kineto traces (as transformer_nuggets converts), the builder's launches."""
    return pftrace_conversions(directory, repeat=3)


@needs_shared
def test_inspections_are_byte_identical_with_every_twin(tmp_path: Path, pure_decoder: Callable[[], None]) -> None:
    files = pftraces(tmp_path)
    compiled = {p.name: output(["trace", "inspect", str(p), "--json"]) for p in files}
    assert perfetto._event_args is core.event_args or not perfetto.COMPILED_EVENTS
    pure_decoder()
    assert perfetto.__dict__["_event_args"] is perfetto.pure_event_args
    assert perfetto.__dict__["_split_packets"] is perfetto.pure_split_packets
    assert perfetto.__dict__["_read_track_event"] is perfetto.pure_track_event
    for path in files:
        assert output(["trace", "inspect", str(path), "--json"]) == compiled[path.name], path.name
    assert all('"format": "perfetto-proto"' in text for text in compiled.values())


def test_a_damaged_packet_is_named_by_its_offset_on_both_paths(
    tmp_path: Path, pure_decoder: Callable[[], None]
) -> None:
    """A packet the reader refuses, in the middle of a run split in one call: the error names where that packet
    starts (computed here from the sizes), not where its run does."""
    good = vfield(8, 1_000) + vfield(10, 1)
    bad = vfield(10, 1) + tag(5, 3) + b"\x00"  # wire type 3: protobuf has none
    bodies = [good] * 50 + [bad] + [good] * 5
    path = tmp_path / "bad.pftrace"
    path.write_bytes(stream_of(bodies))
    at = 50 * (2 + len(good))
    errors = []
    for pure in (False, True):
        if pure:
            pure_decoder()
        with pytest.raises(InputFileError) as caught:
            perfetto.read_perfetto(path)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] == f"{path}: not a readable Perfetto trace at byte {at}: wire type 3"
