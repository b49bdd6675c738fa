"""The .pftrace reader's shortcuts (issue 48) give what decoding every field gives: a slice's end remembered by its
bytes still ends the slice of its own sequence's default track, and a debug annotation is decoded only where its
name is one an event keeps. Files are written by Perfetto's own Python package (and raw fields by hand, to damage
them); expected values are written out here from the packets' own numbers."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

from wizard.errors import InputFileError  # noqa: E402
from wizard.testing.pftrace import field  # noqa: E402
from wizard.trace.read import perfetto  # noqa: E402
from wizard.trace.read.collector import TraceContents  # noqa: E402
from wizard.trace.read.events import EventArgs  # noqa: E402
from wizard.trace.read.perfetto import read_perfetto  # noqa: E402


def _read(packets: list[bytes]) -> perfetto._Reader:
    """The packets through the reader, its events left in the batch (far fewer than BATCH) to be looked at: the
    compiled Slices' sink, which hands each to the collector as it is made, is turned off."""
    reader = perfetto._Reader(TraceContents(path="x"))
    reader.slices.sink(None)
    for packet in packets:
        reader.packet(packet)
    return reader


def _sequence_with_default_track(seq: int, uuid: int) -> bytes:
    packet = pb.TracePacket(trusted_packet_sequence_id=seq, sequence_flags=pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED)
    packet.trace_packet_defaults.track_event_defaults.track_uuid = uuid
    data: bytes = packet.SerializeToString()
    return data


def _thread_track(uuid: int, pid: int, tid: int) -> bytes:
    packet = pb.TracePacket()
    packet.track_descriptor.uuid = uuid
    packet.track_descriptor.thread.pid, packet.track_descriptor.thread.tid = pid, tid
    data: bytes = packet.SerializeToString()
    return data


def _slice_mark(seq: int, ts: int, name: str | None) -> bytes:
    """A begin (with a name) or an end on the sequence's default track: no track_uuid written."""
    packet = pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=seq)
    if name is None:
        packet.track_event.type = pb.TrackEvent.TYPE_SLICE_END
    else:
        packet.track_event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
        packet.track_event.name = name
        packet.track_event.categories.append("cpu_op")
    data: bytes = packet.SerializeToString()
    return data


def test_a_remembered_end_closes_the_slice_of_its_own_sequences_default_track() -> None:
    """Two sequences default to two tracks; their ends are the same bytes (a type, no track). Each end closes the
    slice open on its own sequence's track, the first time (decoded) and the second (remembered)."""
    marks = [(1, 1000, "a"), (2, 1500, "b"), (1, 3000, None), (2, 4000, None),
             (1, 5000, "c"), (2, 5100, "d"), (2, 6000, None), (1, 7000, None)]  # fmt: skip
    packets = [_sequence_with_default_track(1, 10), _sequence_with_default_track(2, 20)]
    packets += [_thread_track(10, 1, 11), _thread_track(20, 2, 22)]
    packets += [_slice_mark(seq, ts, name) for seq, ts, name in marks]
    reader = _read(packets)
    got = sorted((ev.name, ev.pid, ev.tid, ev.ts, ev.dur) for ev in reader.batch)
    # name, pid, tid of the sequence's thread track, start and duration in µs from the marks above
    assert got == [("a", 1, 11, 1.0, 2.0), ("b", 2, 22, 1.5, 2.5), ("c", 1, 11, 5.0, 2.0), ("d", 2, 22, 5.1, 0.9)]
    end_bytes = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END).SerializeToString()
    assert reader.ends == {end_bytes: -1}  # remembered once, as "the sequence's default track"
    assert reader.track_events == len(marks)


def _begin_with_annotations(notes: list[bytes], cat: str = "cpu_op") -> bytes:
    te = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=5, name="aten::mm", categories=[cat])
    body = te.SerializeToString() + b"".join(field(4, note) for note in notes)
    head: bytes = pb.TracePacket(timestamp=1000, trusted_packet_sequence_id=1).SerializeToString()
    return head + field(11, body)


def _end() -> bytes:
    packet = pb.TracePacket(timestamp=3000, trusted_packet_sequence_id=1)
    packet.track_event.type, packet.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, 5
    data: bytes = packet.SerializeToString()
    return data


def _note(name: str, **value: object) -> bytes:
    data: bytes = pb.DebugAnnotation(name=name, **value).SerializeToString()
    return data


DAMAGED_DICT = field(11, b"\x08\xff")  # dict_entries: a message whose varint the message cuts off


def test_only_the_annotations_an_event_keeps_are_decoded() -> None:
    """An op's args: the names EventArgs has, with Input Dims kept as its JSON; External id and a name no event
    keeps are skipped by name, so a damaged value under such a name is never decoded."""
    notes = [
        _note("External id", int_value=5),
        _note("correlation", int_value=7),
        _note("Input Dims", legacy_json_value="[[1, 2], []]"),
        field(10, b"junk") + DAMAGED_DICT,
    ]
    reader = _read([_begin_with_annotations(notes), _end()])
    (ev,) = reader.batch
    assert ev.args == EventArgs(correlation=7, input_dims=msgspec.Raw(b"[[1,2],[]]"))


def test_a_damaged_value_under_a_kept_name_is_refused(tmp_path: Path) -> None:
    """The same damage under ``grid`` (an arg a kernel keeps) is decoded, and refused with one line."""
    path = tmp_path / "damaged.pftrace"
    packet = _begin_with_annotations([field(10, b"grid") + DAMAGED_DICT], cat="kernel")
    path.write_bytes(field(1, packet) + field(1, _end()))
    with pytest.raises(InputFileError, match=r"not a readable Perfetto trace at byte 0: a message cut off"):
        read_perfetto(path)


def test_packets_across_chunk_boundaries_and_among_other_fields_come_out_whole() -> None:
    """The packet stream's inline header: packets of every size class (one- and two-byte lengths) cut by chunk
    boundaries at every offset, a packet tagged in two bytes (0x8a 0x00, still field 1) and entries of another
    field between them: exactly the packets written, in order, and the other entries skipped."""
    import io

    bodies = [bytes([n % 251]) * (n % 300 + 1) for n in range(16_000)]
    parts: list[bytes] = []
    for n, body in enumerate(bodies):
        if n % 97 == 0:
            parts.append(field(2, b"other"))  # a top-level field that is not a packet
        if n % 89 == 0:
            parts.append(b"\x8a\x00" + bytes([len(body)]) if len(body) < 128 else b"\x8a\x00" + _len(len(body)))
            parts.append(body)
        else:
            parts.append(field(1, body))
    data = b"".join(parts)
    assert len(data) > 2 * perfetto.CHUNK  # the chunks cut headers and bodies alike
    packets = perfetto._Packets(io.BytesIO(data))
    assert [body for _, body in packets] == bodies
    assert packets.skipped == len(range(0, len(bodies), 97))


def _len(n: int) -> bytes:
    return bytes([n & 0x7F | 0x80, n >> 7])  # a length of 128-16,383 in two varint bytes


def test_an_end_with_a_name_is_remembered_by_its_own_bytes_not_its_names() -> None:
    """An end may carry a name (nothing forbids it). The memo's key is the whole event's bytes: were it the name's,
    a name spelling another end's bytes would send that end to this one's track. Here the first end (track 10) is
    named with the bytes of the second end's event (track 20); the second must still close track 20's slice."""
    second_end = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END, track_uuid=20).SerializeToString()
    first_end = pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_END, track_uuid=10).SerializeToString()
    first_end += field(23, second_end)  # TrackEvent.name (field 23) holding those bytes

    def packet(ts: int, event: bytes) -> bytes:
        head: bytes = pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=1).SerializeToString()
        return head + field(11, event)

    def begin(ts: int, uuid: int, name: str) -> bytes:
        return packet(ts, pb.TrackEvent(type=pb.TrackEvent.TYPE_SLICE_BEGIN, track_uuid=uuid, name=name,
                                        categories=["cpu_op"]).SerializeToString())  # fmt: skip

    packets = [_thread_track(10, 1, 11), _thread_track(20, 2, 22), begin(1000, 10, "a"), begin(1100, 20, "b")]
    packets += [begin(1200, 10, "c"), packet(2000, first_end), packet(3000, second_end), packet(4000, second_end)]
    reader = _read(packets)
    got = sorted((ev.name, ev.tid, ev.ts, ev.dur) for ev in reader.batch)
    # c (innermost on track 10) ends at 2 µs; b on track 20 at 3 µs; a second end on track 20 finds none open
    assert got == [("b", 22, 1.1, 1.9), ("c", 11, 1.2, 0.8)]
    assert reader.ends == {first_end: 10, second_end: 20}  # each end by its own bytes


@pytest.mark.parametrize("enabled", [True, False])
def test_the_gc_stays_paused_through_the_last_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    """The cyclic GC is paused for the packets and for ``finish`` (the last batch's flush into the collector: with
    it back on, that flush set off a collection over every event of the batch), and given back as it was."""
    import gc

    path = tmp_path / "two.pftrace"
    path.write_bytes(
        field(1, _sequence_with_default_track(1, 9))
        + field(1, _thread_track(9, 3, 4))
        + field(1, _slice_mark(1, 1_000, "op"))
        + field(1, _slice_mark(1, 2_000, None))
    )
    seen: list[tuple[str, bool]] = []
    run, finish = perfetto._Reader.run, perfetto._Reader.finish

    def spy_run(self: perfetto._Reader, batch: list[bytes]) -> None:
        seen.append(("run", gc.isenabled()))
        run(self, batch)

    def spy_finish(self: perfetto._Reader) -> None:
        seen.append(("finish", gc.isenabled()))
        finish(self)

    monkeypatch.setattr(perfetto._Reader, "run", spy_run)
    monkeypatch.setattr(perfetto._Reader, "finish", spy_finish)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        contents = read_perfetto(path)
        after = gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert after is enabled
    assert seen[0][0] == "run" and seen[-1] == ("finish", False)
    assert not any(on for _, on in seen)  # every run of packets and the last flush with the GC paused
    assert dict(contents.timeline.categories) == {"cpu_op": 1}  # the slice, read
