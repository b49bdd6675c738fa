"""The compiled core (wizard/_core.c) against its pure-Python twins (wizard/trace/read/protobuf.py), issue 48 item 2:
the wire format's fields, varint and packed_varints, and the .pftrace decoder's two field loops (packet_head,
track_event_fields). The same result, or the same error with the same words, on every input: valid messages, every
cut and every one-byte change of them, random bytes in random windows, the hostile shapes (70-bit varints, 11-byte
varints, lengths past the message, wire types protobuf has not, more than MAX_FIELDS fields); then whole inspections
of .pftrace files, byte for byte, with the decoder's functions swapped for the twins.

The twins are the second computation: written first, in Python, and kept as the fallback (``WARPWIZARD_PURE=1``,
or no compiler where warpwizard was installed). CI runs the suite on the compiled core and these tests, the
output digests and the .pftrace tests again with ``WARPWIZARD_PURE=1`` (.ci/run).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import hatch_build
from tests.conftest import needs_shared
from tests.helpers import dfield, encode_varint, every_change, pftrace_conversions, tag, twin_swapper, vfield
from tests.output_digests import output
from wizard.testing.pftrace import cuspy
from wizard.trace.read import perfetto, protobuf

core = pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
# what protobuf.py does at import, unless WARPWIZARD_PURE=1 (then the twins are compared with the core all the same)
TWINS = (
    protobuf.pure_fields,
    protobuf.pure_varint,
    protobuf.pure_packed_varints,
    protobuf.pure_packet_head,
    protobuf.pure_track_event_fields,
)
core.bind(protobuf.Damaged, protobuf.MAX_FIELDS, *TWINS)

Outcome = tuple[str, Any]


def outcome(function: Callable[..., Any], *args: Any) -> Outcome:
    """What a call gives: its value, or its error's type and words (the reader's one-line error quotes them)."""
    try:
        return "value", function(*args)
    except (protobuf.Damaged, IndexError) as error:
        return type(error).__name__, str(error) if isinstance(error, protobuf.Damaged) else ""


VALUES = (0, 1, 127, 128, 300, 16_383, 16_384, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70 - 1)


def messages() -> Iterator[bytes]:
    """Valid messages: each wire type, each value size, field numbers up to 2^61, a nested message's span."""
    for value in VALUES:
        yield encode_varint(1 << 3) + encode_varint(value)  # field 1, varint
        yield encode_varint((2**61 - 1) << 3) + encode_varint(value)  # the largest field number
    yield encode_varint(2 << 3 | 2) + encode_varint(5) + b"hello" + encode_varint(3 << 3 | 1) + bytes(range(8))
    yield encode_varint(4 << 3 | 5) + b"\xff\xfe\xfd\xfc" + encode_varint(5 << 3 | 2) + encode_varint(0)
    inner = encode_varint(1 << 3) + encode_varint(150)
    yield encode_varint(6 << 3 | 2) + encode_varint(len(inner)) + inner + encode_varint(7 << 3) + b"\x01"


def hostile() -> Iterator[bytes]:
    """The shapes a reader must refuse in words: an 11-byte varint, every wire type protobuf does not have, a length
    past the message, a 70-bit length, a key cut in its middle."""
    yield b"\x08" + b"\xff" * 10 + b"\x01"
    for wire in (3, 4, 6, 7):
        yield encode_varint(1 << 3 | wire) + b"\x00"
    yield encode_varint(1 << 3 | 2) + encode_varint(10) + b"abc"
    yield encode_varint(1 << 3 | 2) + encode_varint(2**70 - 1) + b"abc"
    yield b"\x80"
    yield b"\x08\x80\x80"


def windows(data: bytes, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    """Argument tuples for fields(): the whole buffer, with and without a start, and windows ending before it,
    at it and past it."""
    yield (data,)
    yield (data, 0)
    yield (data, 0, None)
    for _ in range(3):
        start = rng.randrange(len(data) + 1)
        yield (data, start, rng.randrange(start, len(data) + 6))


def test_fields_agree_on_valid_damaged_and_hostile_messages() -> None:
    rng = random.Random(48)
    compared = 0
    for message in [*messages(), *hostile()]:
        for data in (message, *every_change(message)):
            for args in windows(data, rng):
                assert outcome(core.fields, *args) == outcome(protobuf.pure_fields, *args), args
                compared += 1
    assert compared > 5_000


def test_fields_agree_on_random_bytes() -> None:
    rng = random.Random(2026)
    alphabet = bytes([0x00, 0x01, 0x02, 0x05, 0x08, 0x0A, 0x0D, 0x10, 0x12, 0x7F, 0x80, 0x81, 0xFF])
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        for args in windows(data, rng):
            assert outcome(core.fields, *args) == outcome(protobuf.pure_fields, *args), args


def test_values_past_64_bits_are_python_ints() -> None:
    """A 10-byte varint holds 70 bits: the twin's ints are unbounded, so the core's are too."""
    data = encode_varint(1 << 3) + encode_varint(2**70 - 1)
    assert core.fields(data) == protobuf.pure_fields(data) == [(1, 0, 2**70 - 1)]


def test_every_varint_length_reads_as_the_twin_reads_it() -> None:
    """The core reads a varint's first nine bytes in 64 bits and the tenth's bits 63-69 after (wizard/_core.c,
    read_varint_on), and with nine bytes left reads up to nine from one 8-byte load, the bytes after the varint
    masked off: every length from 1 to 10 bytes at both of its ends, followed by bytes whose stop bit is clear and
    by bytes whose is set, each cut short at every byte, and an eleventh byte, read at every offset as the twin
    reads them."""
    values = [0, 2**70 - 1] + [2**k + d for k in range(7, 70, 7) for d in (-1, 0)] + [2**63 - 1, 2**63, 2**64 - 1]
    for value in values:
        whole = encode_varint(value)
        padded = (whole + b"\xff" * 9, b"\x80" * 3 + whole + bytes(9))  # nine bytes left: the one-load path
        for data in (whole, b"\x00" + whole + b"\x05", whole + b"\x80", b"\xff" * 10 + b"\x01", *padded):
            for cut in range(len(data) + 1):
                for at in range(cut + 2):
                    assert outcome(core.varint, data[:cut], at) == outcome(protobuf.pure_varint, data[:cut], at)
        assert core.varint(whole, 0) == protobuf.pure_varint(whole, 0) == (value, len(whole))


def test_the_inline_field_path_agrees_at_each_of_its_edges() -> None:
    """next_field reads inline a field whose key is one or two bytes and whose value is a varint, or whose length is
    one or two bytes and lies within the message (wizard/_core.c, next_field); anything else goes the whole path.
    Each edge on both sides: keys of one, two and three bytes, lengths of 127, 128, 16,383 and 16,384 bytes, a
    length ending exactly at the message's end and one byte past it, a window ending inside the key or the value,
    and a message of exactly MAX_FIELDS fields and one more."""
    keys = [tag(n, w) for n in (1, 15, 16, 2047, 2048) for w in (0, 2)]  # 1, 2 and 3 bytes
    for key in keys:
        for size in (0, 1, 127, 128, 16_383, 16_384):
            body = encode_varint(size) + bytes(size) if key[-1] & 7 == 2 else encode_varint(size)
            data = key + body + vfield(1, 1)
            field_end = len(key) + len(body)
            for end in {0, 1, len(key), len(key) + 1, field_end - 1, field_end, field_end + 1, len(data)}:
                for args in ((data, 0, end), (data[:end],), (b"\x00" + data, 1, end + 1)):
                    assert outcome(core.fields, *args) == outcome(protobuf.pure_fields, *args), (key, size, end)
    for count in (protobuf.MAX_FIELDS - 1, protobuf.MAX_FIELDS):
        data = (tag(1, 2) + b"\x00") * count + tag(2, 0) + b"\x01"
        assert outcome(core.fields, data) == outcome(protobuf.pure_fields, data)
    assert outcome(core.fields, (tag(1, 2) + b"\x00") * protobuf.MAX_FIELDS)[0] == "value"
    assert outcome(core.fields, (tag(1, 2) + b"\x00") * (protobuf.MAX_FIELDS + 1))[0] == "Damaged"


def test_a_position_near_the_largest_index_is_an_error_not_a_crash() -> None:
    """A start the caller passes near sys.maxsize: the nine-byte varint path asked ``j + 9 <= n``, which overflowed
    there and read far past the bytes (a crash; found by review). Each of the four loops answers as its twin."""
    far = sys.maxsize - 3
    assert outcome(core.varint, b"\x80", far) == outcome(protobuf.pure_varint, b"\x80", far) == ("IndexError", "")
    for data in (b"", b"\x08", b"\x80" * 12):
        assert outcome(core.fields, data, far, sys.maxsize) == outcome(protobuf.pure_fields, data, far, sys.maxsize)
        for wire in (0, 2):
            packed = (data, wire, (far, sys.maxsize))
            assert outcome(core.packed_varints, *packed) == outcome(protobuf.pure_packed_varints, *packed)
        event = (data, far, sys.maxsize)
        assert outcome(core.track_event_fields, *event) == outcome(protobuf.pure_track_event_fields, *event)


def test_more_than_max_fields_is_refused_in_the_same_words() -> None:
    data = b"\x08\x00" * (protobuf.MAX_FIELDS + 1)
    expected = ("Damaged", f"a message of more than {protobuf.MAX_FIELDS} fields")
    assert outcome(core.fields, data) == outcome(protobuf.pure_fields, data) == expected


def test_varint_and_packed_varints_agree() -> None:
    rng = random.Random(5)
    for message in [*messages(), *hostile()]:
        for data in (message, *every_change(message)):
            for at in range(len(data) + 2):
                assert outcome(core.varint, data, at) == outcome(protobuf.pure_varint, data, at), (data, at)
            for _ in range(3):
                start = rng.randrange(len(data) + 1)
                span = (start, rng.randrange(start, len(data) + 4))
                for wire in (0, 2, 5):
                    value = span if wire == 2 else 7
                    expected = outcome(protobuf.pure_packed_varints, data, wire, value)
                    assert outcome(core.packed_varints, data, wire, value) == expected, (data, wire, value)


def test_inputs_other_than_bytes_take_the_twin() -> None:
    """A memoryview, a bytearray or a negative start (Python's index from the end) mean what the twin says."""
    data = encode_varint(1 << 3) + encode_varint(150) + b"\x12\x01a"
    for args in ((memoryview(data),), (bytearray(data), 1), (data, -3), (memoryview(b"\x80"),)):
        assert outcome(core.fields, *args) == outcome(protobuf.pure_fields, *args), args
    assert outcome(core.varint, bytearray(b"\x96\x01"), 0) == ("value", (150, 2))


def test_the_core_is_built_where_a_compiler_is() -> None:
    """scripts/test installs the checkout with its build hook (hatch_build.py): where the compiler Python was built
    with is here, the readers run compiled, unless WARPWIZARD_PURE=1 asks for the twins."""
    command = hatch_build.compile_command(Path("wizard/_core.c"), Path("unused.so"))
    if command is None or shutil.which(command[0]) is None:
        pytest.skip("no C compiler here: the pure path is the one installed")
    assert protobuf.COMPILED is (os.environ.get("WARPWIZARD_PURE", "") in ("", "0"))


def test_a_call_the_limited_api_lacks_fails_the_build(tmp_path: Path) -> None:
    """A function the limited API does not declare fails the build (hatch_build.FLAGS): without the flag, a call of
    Py_XSETREF (CPython's full API) compiled to an undefined symbol, and the core built but did not import, so the
    readers ran in Python, at half the speed, with nothing said."""
    command = hatch_build.compile_command(Path("wizard/_core.c"), Path("unused.so"))
    if command is None or shutil.which(command[0]) is None:
        pytest.skip("no C compiler here: the pure path is the one installed")
    source = tmp_path / "wizard" / "_core.c"
    source.parent.mkdir()
    source.write_text(
        "#define Py_LIMITED_API 0x030A0000\n#include <Python.h>\n"
        "void drop(PyObject **slot) { Py_XSETREF(*slot, NULL); }\n"
    )
    why = hatch_build.build_core(tmp_path, tmp_path / "_core.abi3.so")
    assert why is not None and "Py_XSETREF" in why, why
    assert not (tmp_path / "_core.abi3.so").exists()


# -- whole inspections, byte for byte ------------------------------------------------------------------------


@pytest.fixture
def pure_decoder(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Swaps every compiled function the decoder holds for its twin (the names it imported them under)."""
    twins = {core.fields: protobuf.pure_fields, core.varint: protobuf.pure_varint,
             core.packed_varints: protobuf.pure_packed_varints, core.packet_head: protobuf.pure_packet_head,
             core.track_event_fields: protobuf.pure_track_event_fields}  # fmt: skip

    swap: Callable[[], None] = twin_swapper(monkeypatch, (perfetto, protobuf), twins)
    return swap


def pftraces(directory: Path) -> list[Path]:
    """.pftrace files Perfetto's own package writes: shared Kineto traces converted as transformer_nuggets does,
    and what PyTorch 2.15's Cuspy writes (wizard/testing/pftrace.py)."""
    made = pftrace_conversions(directory)
    shape = {"name": "void gemm<128>", "grid": (108, 1, 1), "block": (256, 1, 1)}
    stages = [{**shape, "ts": 1_000 * k, "dur": 400, "correlation": 100 + k} for k in range(1, 6)]
    launches = [{"ts": 1_000 * k - 400, "correlation": 100 + k, "links": [k]} for k in range(1, 7)]
    return [*made, cuspy(directory / "cuspy.pftrace.gz", stages=stages, launches=launches)]


@needs_shared
def test_inspections_are_byte_identical_on_both_paths(tmp_path: Path, pure_decoder: Callable[[], None]) -> None:
    files = pftraces(tmp_path)
    compiled = {p.name: output(["trace", "inspect", str(p), "--json"]) for p in files}
    pure_decoder()
    assert perfetto.__dict__.get("_fields") is not core.fields
    assert perfetto.__dict__.get("_packet_head") is protobuf.pure_packet_head
    assert perfetto.__dict__.get("_track_event_fields") is protobuf.pure_track_event_fields
    for path in files:
        assert output(["trace", "inspect", str(path), "--json"]) == compiled[path.name], path.name
    assert all('"format": "perfetto-proto"' in text for text in compiled.values())  # each read by the decoder


# -- the .pftrace decoder's two loops: packet_head and track_event_fields --------------------------------------


def packets() -> Iterator[bytes]:
    """TracePackets: each field the decoder reads, in each wire type it is or is not read in, written twice, and the
    order-dependent flags (SEQ_FLAGS 13 replaces them, incremental_state_cleared 41 sets their first bit)."""
    event = vfield(9, 1) + vfield(11, 5)
    yield vfield(8, 1_000) + dfield(11, event) + vfield(10, 3)
    yield vfield(8, 1) + vfield(8, 2**70 - 1) + vfield(10, 7) + vfield(10, 2**64)
    yield vfield(13, 2) + vfield(41, 1)  # cleared after the flags: 3
    yield vfield(41, 1) + vfield(13, 2)  # the flags after cleared: 2
    yield vfield(41, 0) + vfield(13, 0) + vfield(41, 5)
    yield dfield(11, event) + dfield(60, vfield(1, 9)) + dfield(53, vfield(1, 4))  # the last body wins
    yield dfield(53, b"") + dfield(11, b"") + vfield(11, 3) + vfield(60, 1)  # a body only length-delimited
    yield dfield(12, dfield(2, vfield(1, 1) + dfield(2, b"op"))) + dfield(12, b"") + dfield(59, dfield(11, b""))
    yield vfield(12, 1) + vfield(59, 1) + vfield(6, 1) + dfield(6, b"") + tag(58, 5) + b"\x01\x02\x03\x04"
    yield tag(8, 1) + bytes(8) + tag(10, 5) + bytes(4) + dfield(8, b"ab") + dfield(13, b"") + dfield(41, b"x")
    yield vfield(58, 0) + vfield(2**61 - 1, 3) + dfield(1, b"\xff")
    yield b""


def track_events() -> Iterator[bytes]:
    """TrackEvents: type, track, a name as text and as an iid in both orders, annotations, categories and
    category iids (one, packed, fixed), gpu_correlation, legacy events, values past 64 bits, wrong wire types."""
    note = dfield(10, b"correlation") + vfield(4, 7)
    yield vfield(9, 1) + vfield(11, 5) + dfield(23, b"kernel") + dfield(22, b"kernel") + dfield(4, note) * 3
    yield vfield(9, 2) + vfield(9, 1) + vfield(11, 2**70 - 1) + vfield(11, 4)
    yield dfield(23, b"a") + vfield(10, 3)  # the iid came last
    yield vfield(10, 3) + dfield(23, b"a")  # the text came last
    yield vfield(3, 2) + dfield(3, encode_varint(5) + encode_varint(300)) + tag(3, 5) + bytes(4) + tag(3, 1) + bytes(8)
    yield dfield(3, b"") + dfield(22, b"cat") + vfield(22, 1) + dfield(3000, vfield(1, 9)) + dfield(6, vfield(3, 2))
    yield vfield(4, 1) + tag(9, 2) + b"\x00" + vfield(23, 1) + vfield(3000, 1) + vfield(6, 1) + dfield(4, b"")
    yield dfield(4, note) + vfield(2**61 - 1, 1) + tag(11, 1) + bytes(8) + tag(10, 5) + bytes(4)
    yield b""


def test_packet_head_and_track_event_fields_read_what_the_decoder_reads() -> None:
    """The one right answer of each order-dependent case, written out here (not computed by either twin)."""
    head = protobuf.pure_packet_head
    assert head(vfield(13, 2) + vfield(41, 1))[2] == 3
    assert head(vfield(41, 1) + vfield(13, 2))[2] == 2
    assert head(vfield(8, 5) + vfield(8, 2**70 - 1))[0] == 2**70 - 1
    body = dfield(11, b"ab") + dfield(60, b"c")
    assert head(body) == (None, 0, 0, 60, (7, 8), None, None, False, False)  # tag 60: two bytes
    assert head(vfield(6, 1) + tag(58, 5) + bytes(4)) == (None, 0, 0, 0, (0, 0), None, None, False, True)
    event = dfield(23, b"a") + vfield(10, 3) + dfield(4, b"xy") + vfield(3, 2) + dfield(22, b"c")
    assert protobuf.pure_track_event_fields(event, 0, len(event)) == (
        0, -1, None, 3, [(8, 10)], [(3, 0, 2), (22, 2, (15, 16))]  # tags 23 and 22: two bytes
    )  # fmt: skip
    for message in [*packets(), *track_events()]:
        assert core.packet_head(message) == head(message)
        assert core.track_event_fields(message, 0, len(message)) == protobuf.pure_track_event_fields(
            message, 0, len(message)
        )


def test_packet_head_agrees_on_valid_damaged_and_hostile_packets() -> None:
    compared = 0
    for message in [*packets(), *track_events(), *messages(), *hostile()]:
        for data in (message, *every_change(message)):
            assert outcome(core.packet_head, data) == outcome(protobuf.pure_packet_head, data), data
            compared += 1
    assert compared > 4_000


def test_track_event_fields_agree_on_valid_damaged_and_hostile_events() -> None:
    rng = random.Random(3000)
    compared = 0
    for message in [*track_events(), *packets(), *messages(), *hostile()]:
        for data in (message, *every_change(message)):
            for args in windows(data, rng):
                if len(args) == 3:
                    expected = outcome(protobuf.pure_track_event_fields, *args)
                    assert outcome(core.track_event_fields, *args) == expected, args
                    compared += 1
            args = (data, 0, len(data))
            assert outcome(core.track_event_fields, *args) == outcome(protobuf.pure_track_event_fields, *args)
    assert compared > 5_000


def test_the_two_loops_agree_on_random_bytes() -> None:
    rng = random.Random(53)
    alphabet = bytes([0x00, 0x01, 0x02, 0x05, 0x08, 0x0A, 0x12, 0x1A, 0x22, 0x48, 0x5A, 0x68, 0x7F, 0x80, 0xFF])
    for _ in range(20_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        assert outcome(core.packet_head, data) == outcome(protobuf.pure_packet_head, data), data
        start = rng.randrange(len(data) + 1)
        args = (data, start, rng.randrange(start, len(data) + 6))
        assert outcome(core.track_event_fields, *args) == outcome(protobuf.pure_track_event_fields, *args), args


def test_the_two_loops_refuse_more_than_max_fields_in_the_same_words() -> None:
    data = b"\x08\x00" * (protobuf.MAX_FIELDS + 1)
    expected = ("Damaged", f"a message of more than {protobuf.MAX_FIELDS} fields")
    assert outcome(core.packet_head, data) == outcome(protobuf.pure_packet_head, data) == expected
    events = (core.track_event_fields, protobuf.pure_track_event_fields)
    assert outcome(events[0], data, 0, len(data)) == outcome(events[1], data, 0, len(data)) == expected


def test_the_two_loops_take_the_twin_for_inputs_other_than_bytes() -> None:
    data = vfield(8, 5) + dfield(11, vfield(9, 1) + dfield(23, b"n"))
    assert outcome(core.packet_head, memoryview(data)) == outcome(protobuf.pure_packet_head, memoryview(data))
    for args in ((bytearray(data), 0, len(data)), (data, -5, len(data)), (data, 2, None)):
        assert outcome(core.track_event_fields, *args) == outcome(protobuf.pure_track_event_fields, *args), args
