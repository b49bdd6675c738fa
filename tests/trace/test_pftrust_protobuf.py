"""The protobuf wire format (wizard/trace/read/protobuf.py), apart from any message: varints, tags, spans and
every bound, checked against the protobuf runtime's own encoder (the ``perfetto`` package's generated bindings)
and against encodings written out by hand from the format's definition (protobuf.dev, "Encoding")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import encode_varint
from wizard.trace.read import protobuf
from wizard.trace.read.protobuf import Damaged

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


@pytest.mark.parametrize(
    ("encoded", "value"),
    [
        (b"\x00", 0),
        (b"\x01", 1),
        (b"\x7f", 127),
        (b"\x80\x01", 128),
        (b"\xac\x02", 300),
        (b"\x96\x01", 150),
        (b"\xff" * 9 + b"\x01", 2**64 - 1),
    ],
)
def test_varints_as_the_format_defines_them(encoded: bytes, value: int) -> None:
    assert protobuf.varint(encoded + b"\x2a", 0) == (value, len(encoded))


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_every_64_bit_varint_reads_back(value: int) -> None:
    data = b"\x05" + encode_varint(value)
    assert protobuf.varint(data, 1) == (value, len(data))


def test_a_varint_of_eleven_bytes_is_damage_and_a_cut_one_is_an_index_error() -> None:
    with pytest.raises(Damaged, match="longer than 10 bytes"):
        protobuf.varint(b"\xff" * 11 + b"\x01", 0)
    with pytest.raises(IndexError):
        protobuf.varint(b"\xff\xff", 0)


def test_fields_agree_with_the_protobuf_runtime() -> None:
    """A TracePacket the runtime wrote: every top-level field, its wire type, and the spans' bytes, as the runtime
    reads them back."""
    packet = pb.TracePacket(timestamp=2**40 + 7, trusted_packet_sequence_id=3)
    packet.track_event.name = "aten::mm"
    packet.track_event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
    packet.track_event.category_iids.extend([1, 300, 2**33])  # proto2: one field per value
    data = packet.SerializeToString()
    got = {number: (wire, value) for number, wire, value in protobuf.fields(data)}
    assert got[8] == (0, 2**40 + 7) and got[10] == (0, 3)
    wire, span = got[11]
    assert wire == 2
    event = pb.TrackEvent.FromString(data[span[0] : span[1]])
    assert event.name == "aten::mm"
    inner = protobuf.fields(data, *span)
    assert [protobuf.text(data, v) for n, w, v in inner if n == 23] == ["aten::mm"]
    iids = [x for n, w, v in inner if n == 3 for x in protobuf.packed_varints(data, w, v)]
    assert iids == list(event.category_iids) == [1, 300, 2**33]


def test_packed_and_fixed_fields() -> None:
    packed = bytes([3 << 3 | 2, 4]) + b"\x01\xac\x02\x05"  # field 3, packed: 1, 300, 5
    fixed = bytes([5 << 3 | 1]) + (2**63 + 1).to_bytes(8, "little") + bytes([6 << 3 | 5]) + (7).to_bytes(4, "little")
    got = protobuf.fields(packed + fixed)
    assert protobuf.packed_varints(packed + fixed, got[0][1], got[0][2]) == [1, 300, 5]
    assert got[1:] == [(5, 1, 2**63 + 1), (6, 5, 7)]
    assert protobuf.signed(got[1][2]) == -(2**63) + 1 and protobuf.signed(5) == 5


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (bytes([1 << 3 | 2, 5]) + b"abc", "runs past its message"),
        (bytes([1 << 3 | 3]), "wire type 3"),
        (bytes([1 << 3 | 4]), "wire type 4"),
        (bytes([1 << 3 | 0]), "cut off"),
        (bytes([1 << 3 | 1]) + b"\x00" * 7, "runs past its message"),
        (bytes([1 << 3 | 5]) + b"\x00\x00", "runs past its message"),
    ],
)
def test_damage_is_one_exception_never_an_index_error(data: bytes, why: str) -> None:
    with pytest.raises(Damaged, match=why):
        protobuf.fields(data)


def test_a_packed_field_cut_inside_a_varint_is_damage() -> None:
    """Before the move this was an IndexError out of the reader (exit 70), the one change of behaviour here."""
    data = bytes([3 << 3 | 2, 1]) + b"\x80"
    _, wire, value = protobuf.fields(data)[0]
    with pytest.raises(Damaged, match="cut off"):
        protobuf.packed_varints(data, wire, value)


@pytest.mark.parametrize("path", ["pure", "compiled"])
def test_the_field_count_bound(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """The bound on both paths: the Python twin reads MAX_FIELDS when called, the compiled core (wizard/_core.c) is
    handed it at import (bind), so it is handed 10 here, and the real bound again after."""
    real = protobuf.MAX_FIELDS
    monkeypatch.setattr(protobuf, "MAX_FIELDS", 10)
    fields = protobuf.pure_fields
    twins = (protobuf.pure_fields, protobuf.pure_varint, protobuf.pure_packed_varints)
    if path == "compiled":
        core = pytest.importorskip("wizard._core", reason="the compiled core is not built here")
        core.bind(Damaged, 10, *twins)
        fields = core.fields
    try:
        assert len(fields(b"\x08\x01" * 10)) == 10
        with pytest.raises(Damaged, match="more than 10 fields"):
            fields(b"\x08\x01" * 11)
    finally:
        if path == "compiled":
            core.bind(Damaged, real, *twins)


def test_a_prefix_keeps_its_whole_fields_and_names_the_cut_one() -> None:
    whole = bytes([8 << 3 | 0, 5]) + bytes([11 << 3 | 2, 2]) + b"\x08\x01"
    cut = whole + bytes([12 << 3 | 2, 100]) + b"\x01\x02"
    assert protobuf.fields_of_prefix(cut, 0) == [(8, 0, 5), (11, 2, (4, 6)), (12, 2, None)]
    assert protobuf.fields_of_prefix(whole + bytes([9 << 3 | 1]) + b"\x00", 0) == [(8, 0, 5), (11, 2, (4, 6))]


def test_text_prefix_decodes_at_most_its_limit() -> None:
    data = "é".encode() * 1000  # two bytes a character
    assert protobuf.text(data, (0, len(data))) == protobuf.text_prefix(data, (0, len(data)), 2000) == "é" * 1000
    assert protobuf.text_prefix(data, (0, len(data)), 10) == "é" * 5
    assert protobuf.text_prefix(data, (0, len(data)), 11) == "é" * 5 + "\ufffd"  # a character cut in two is replaced
