"""Perfetto protobuf traces (issue 35): read packet by packet into the same contents as JSON, so the same events
give the same findings in both formats, apart from what a format cannot carry (named in each test).

Writers (wizard/testing/pftrace.py): Perfetto's own Python package writes every file here, ``convert`` as
drisspg/transformer_nuggets converts Kineto JSON to TrackEvent slices, ``cuspy`` as PyTorch 2.15's Cuspy encoder
writes (torch/csrc/profiler/cuspy/cuspy_pftrace.cpp). Counts are checked against a second reading by Perfetto's
generated bindings, sharing no code with warpwizard's decoder.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
proto_builder = pytest.importorskip("perfetto.trace_builder.proto_builder")

from tests import perfetto_rule  # noqa: E402
from tests.conftest import TRACES, inspected, needs_shared  # noqa: E402
from wizard.testing.pftrace import convert, cuspy, varint  # noqa: E402
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches  # noqa: E402
from wizard.trace.read.collector import TraceContents  # noqa: E402

GRID_OVERFLOW = KernelSpec(
    "void at::native::index_elementwise_kernel<128, 4>", (100000, 30000, 1), (256, 1, 1), op="aten::index_select"
)


# -- the second reading ----------------------------------------------------------------------------------------


def _second_reading(data: bytes) -> dict[str, int]:
    """Counts by the generated bindings: slices per category (begins), render stages per stage iid."""
    trace = pb.Trace.FromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    counts: dict[str, int] = {}
    categories: dict[int, str] = {}
    for packet in trace.packet:
        for c in packet.interned_data.event_categories:
            categories[c.iid] = c.name
        if packet.HasField("track_event") and packet.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            te = packet.track_event
            cat = te.categories[0] if te.categories else categories.get(te.category_iids[0], "")
            counts[cat] = counts.get(cat, 0) + 1
        if packet.HasField("gpu_render_stage_event"):
            key = f"stage {packet.gpu_render_stage_event.stage_iid}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def _checks(report: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {c["check"]: (c["status"], c["count"]) for c in report["health"]}


# -- tests -----------------------------------------------------------------------------------------------------


def _planted_json(tmp_path: Path) -> Path:
    """Healthy launches, a grid that overflows int32 (A), a GEMM above 48 KB (E), a dropped kernel, a kernel with
    no launch call, and one that starts before its launch."""
    b = TraceBuilder()
    for spec in demo_launches():
        b.add(spec)
    b.add(GRID_OVERFLOW)
    b.add(KernelSpec("void dropped_kernel", (64, 1, 1), (128, 1, 1), kernel=False))
    b.add(KernelSpec("void orphan_kernel", (64, 1, 1), (128, 1, 1), launch=None))
    b.add(KernelSpec("void early_kernel", (64, 1, 1), (128, 1, 1), kernel_delay=-3.0))
    return b.write(tmp_path / "planted.json")


def test_the_same_events_give_the_same_findings_in_json_and_pftrace(run_cli: Any, tmp_path: Path) -> None:
    """What the conversion cannot carry, and so is left out of the comparison: the top-level deviceProperties (the
    SM count is then inferred from the kernels' own numbers, as for a trace without them), the file's size
    (trace-size), and the flow arrows."""
    source = _planted_json(tmp_path)
    doc = json.loads(source.read_text())
    converted = tmp_path / "planted.pftrace"
    converted.write_bytes(convert(doc))
    as_json, as_proto = inspected(run_cli, source), inspected(run_cli, converted)
    assert (as_proto["format"], as_proto["writer"]) == (
        "perfetto-proto", "Kineto's events as TrackEvent slices (a JSON-to-Perfetto converter)"
    )  # fmt: skip
    same = ("kernels", "kernels_checked", "wrong_launches", "mechanisms", "impossible")
    assert {k: as_proto[k] for k in same} == {k: as_json[k] for k in same}
    json_checks, proto_checks = _checks(as_json), _checks(as_proto)
    json_checks.pop("trace-size"), proto_checks.pop("trace-size")
    assert proto_checks == json_checks
    assert json_checks["kernels-missing"][1] == 1 and json_checks["unlinked-kernels"][1] == 1
    assert json_checks["clock-skew"][1] == 1 and as_json["mechanisms"].get("A") == 1
    reading = _second_reading(converted.read_bytes())
    assert reading["kernel"] == as_proto["kernels"]


def test_a_converter_drops_zero_and_negative_durations(run_cli: Any, tmp_path: Path) -> None:
    """transformer_nuggets keeps only X events with a positive duration: a negative-duration kernel in the JSON is
    gone from its .pftrace, so `durations` there cannot see it; the JSON shows it."""
    b = TraceBuilder()
    b.add(KernelSpec("void good", (64, 1, 1), (128, 1, 1)))
    b.add(KernelSpec("void bad", (64, 1, 1), (128, 1, 1), dur=-5.0))
    source = b.write(tmp_path / "neg.json")
    converted = tmp_path / "neg.pftrace"
    converted.write_bytes(convert(json.loads(source.read_text())))
    assert _checks(inspected(run_cli, source))["durations"] == ("error", 1)
    proto = inspected(run_cli, converted)
    assert proto["kernels"] == 1 and _checks(proto)["durations"] == ("ok", 0)


def _cuspy_file(tmp_path: Path) -> Path:
    shape = {"name": "void gemm<128>", "grid": (108, 1, 1), "block": (256, 1, 1)}
    stages = [
        {**shape, "ts": 1_000, "dur": 400, "correlation": 101},
        {**shape, "ts": 2_000, "dur": 0, "correlation": 102},  # clamped to zero by the writer
    ]
    launches = [
        {"ts": 600, "correlation": 101, "links": [1]},
        {"ts": 1_600, "correlation": 102, "links": [2], "annotate": False},  # linked only through gpu_correlation
        {"ts": 2_600, "correlation": 103, "links": []},  # its kernel was dropped
    ]
    return cuspy(tmp_path / "cuspy.pftrace.gz", stages=stages, launches=launches)


def test_a_cuspy_pftrace(run_cli: Any, tmp_path: Path) -> None:
    path = _cuspy_file(tmp_path)
    report = inspected(run_cli, path)
    assert (report["format"], report["writer"], report["compressed"]) == (
        "perfetto-proto", "PyTorch profiler with the Cuspy collector (PyTorch 2.15; cupti_monitor in 2.13-2.14)", True
    )  # fmt: skip
    checks = _checks(report)
    assert report["kernels"] == 2 == _second_reading(path.read_bytes())["stage 1"]
    assert checks["kernels-missing"] == ("error", 1)  # launch 103
    assert checks["unlinked-kernels"] == ("ok", 0)  # 102's launch took its id from the render stage it links to
    assert checks["impossible-metrics"][0] == "not_applicable"
    assert checks["kernels-overlap"][0] == "not_applicable"  # Cuspy clamps overlaps away before writing
    durations = next(c for c in report["health"] if c["check"] == "durations")
    assert (durations["status"], durations["clamped_zero"], durations["at_zero"]) == ("info", 1, 0)
    overlap = next(c for c in report["health"] if c["check"] == "kernels-overlap")
    assert overlap["reason"].startswith("Cuspy clamps each GPU op's end to the next op's start on its lane")


def test_cuspy_kernels_link_to_their_op_with_grid_and_block(tmp_path: Path) -> None:
    from wizard.trace.metrics.classify import link_op
    from wizard.trace.read.reader import read_trace

    contents = read_trace(_cuspy_file(tmp_path))
    first = next(iter(contents.kernels))
    assert (first.name, first.grid, first.block, first.registers, first.stream) == (
        "void gemm<128>", (108, 1, 1), (256, 1, 1), 32, 7
    )  # fmt: skip
    assert first.ts == 1.0  # 1,000 ns after Cuspy's base time (its clock snapshot): relative, as Cuspy's JSON
    link = link_op(contents, first)
    assert link is not None and (link.op, link.runtime_call) == ("aten::mm", "cudaLaunchKernel")


# -- hostile files -----------------------------------------------------------------------------------------------


def _error(run_cli: Any, path: Path, pattern: str) -> None:
    result = run_cli("trace", "inspect", str(path))
    assert result.status == 6, (result.status, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), result.stderr


def test_a_cut_off_trace_keeps_what_came_before_and_names_the_byte(run_cli: Any, tmp_path: Path) -> None:
    data = convert(json.loads(_planted_json(tmp_path).read_text()))
    path = tmp_path / "cut.pftrace"
    path.write_bytes(data[: len(data) // 2])
    report = inspected(run_cli, path)
    detail = report["truncation"]["detail"]
    assert re.fullmatch(r"the file ends inside a packet at byte \d+(; \d+ slices? left open)?", detail), detail
    assert report["truncation"]["at_byte"] < len(data) // 2


def test_a_packet_too_large_is_refused_before_it_is_read(run_cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "big.pftrace"
    path.write_bytes(b"\x0a\x02\x08\x01" + b"\x0a" + varint(1 << 40))
    _error(run_cli, path, r"big\.pftrace: .* at byte 4: a packet of 1099511627776 bytes \(at most 67108864\)")


def test_deep_annotations_and_many_open_slices_are_bounded(tmp_path: Path) -> None:
    from wizard.errors import InputFileError
    from wizard.trace.read import perfetto
    from wizard.trace.read.reader import read_trace

    nested = pb.DebugAnnotation(name="deep")
    inner = nested
    for _ in range(60):  # past MAX_DEPTH (protobuf's own writer stops at 100): read to the bound, no further
        inner = inner.dict_entries.add(name="x")
    inner.int_value = 1
    packet = pb.TracePacket(timestamp=1000, trusted_packet_sequence_id=1)
    packet.track_event.type, packet.track_event.track_uuid, packet.track_event.name = 1, 5, "op"
    packet.track_event.categories.append("cpu_op")
    packet.track_event.debug_annotations.append(nested)
    end = pb.TracePacket(timestamp=2000, trusted_packet_sequence_id=1)
    end.track_event.type, end.track_event.track_uuid = 2, 5
    path = tmp_path / "deep.pftrace"
    path.write_bytes(pb.Trace(packet=[packet, end]).SerializeToString())
    assert read_trace(path).ops.count == 1
    reader = perfetto._Reader(TraceContents(path=str(path)))
    raw = packet.track_event.debug_annotations[0].SerializeToString()
    name, value = reader._annotations(raw, (0, len(raw)), perfetto._Sequence())
    depth = 0
    while isinstance(value, dict) and value:
        value, depth = value["x"], depth + 1
    assert (name, depth, value) == ("deep", perfetto.MAX_DEPTH, None)  # read to the bound, the rest dropped
    plain = pb.TracePacket(timestamp=1000, trusted_packet_sequence_id=1)
    plain.track_event.type, plain.track_event.track_uuid = 1, 5
    opens = pb.Trace(packet=[plain] * (perfetto.MAX_OPEN + 1))
    path.write_bytes(opens.SerializeToString())
    with pytest.raises(InputFileError, match=f"more than {perfetto.MAX_OPEN} slices open at once"):
        read_trace(path)


def test_packets_are_read_one_at_a_time(tmp_path: Path) -> None:
    """The stream is read in chunks of CHUNK bytes (or one packet where larger), never whole."""
    import io

    from wizard.trace.read import perfetto

    data = convert(json.loads(_planted_json(tmp_path).read_text())) * 1000
    asked: list[int] = []

    class Counting(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            asked.append(-1 if size is None else size)
            return super().read(size)

    packets = sum(1 for _ in perfetto._Packets(Counting(data), None))
    assert packets == len(pb.Trace.FromString(data).packet)
    assert max(asked) == perfetto.CHUNK and len(data) > 4 * perfetto.CHUNK


def _first_packet_of(size: int) -> bytes:
    """A trace whose first packet is a process track named with ``size`` characters (a long process name)."""
    trace = pb.Trace()
    p = trace.packet.add()
    p.track_descriptor.uuid, p.track_descriptor.process.pid = 1, 4242
    p.track_descriptor.process.process_name = "p" * size
    first: bytes = trace.SerializeToString()
    return first + convert(json.loads(_planted_json_text()))


def _planted_json_text() -> str:
    b = TraceBuilder()
    b.add(KernelSpec("void k", (64, 1, 1), (128, 1, 1)))
    return b.text()


@pytest.mark.parametrize("size", [107, 5000])
@pytest.mark.parametrize("packed", [False, True])
def test_a_long_first_packet_is_recognised(run_cli: Any, tmp_path: Path, size: int, packed: bool) -> None:
    """The first packet runs past the bytes looked at (a 107-character process name inflates past 64 bytes; 5,000
    past the 4,096 read): still a Perfetto trace, gzipped or not, named anything."""
    data = _first_packet_of(size)
    path = tmp_path / "trace.bin"
    path.write_bytes(gzip.compress(data) if packed else data)
    report = inspected(run_cli, path)
    assert (report["format"], report["kernels"]) == ("perfetto-proto", 1)


def test_a_json_trace_starting_with_a_newline_is_json(run_cli: Any, tmp_path: Path) -> None:
    """A newline is also protobuf's tag for field 1: a JSON file that starts with one is still JSON."""
    for name in ("a" * 60, "b" * 123, "trace"):
        b = TraceBuilder()
        b.set_metadata("traceName", name)
        b.add(KernelSpec("void k", (64, 1, 1), (128, 1, 1)))
        path = tmp_path / f"{len(name)}.json"
        path.write_text("\n" + b.text())
        assert inspected(run_cli, path)["format"] == "kineto-json"


@pytest.mark.parametrize("value", ["\u00b2", "--5", "9" * 40])
def test_an_extra_data_value_that_is_no_integer_stays_text(run_cli: Any, tmp_path: Path, value: str) -> None:
    path = cuspy(tmp_path / "odd.pftrace.gz", stages=[{"name": "void k", "ts": 1_000, "dur": 10, "correlation": value,
                 "grid": (1, 1, 1), "block": (32, 1, 1)}], launches=[])  # fmt: skip
    report = inspected(run_cli, path)
    assert report["kernels"] == 1


def test_a_cut_off_gzip_keeps_what_came_before(run_cli: Any, tmp_path: Path) -> None:
    """As a cut JSON trace: the packets before the cut are read, the report says where it stopped."""
    data = gzip.compress(convert(json.loads(_planted_json(tmp_path).read_text())))
    path = tmp_path / "cut.pftrace.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    report = inspected(run_cli, path)
    assert report["truncation"] is not None and report["truncation"]["detail"].startswith("the gzip stream ends")
    assert 0 < report["kernels"] < 8


def test_a_pipe_is_read_as_it_streams(tmp_path: Path) -> None:
    import os
    import threading

    from wizard.trace.read.reader import read_trace

    data = gzip.compress(convert(json.loads(_planted_json(tmp_path).read_text())))
    fifo = tmp_path / "stream.pftrace.gz"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        contents = read_trace(fifo)
    finally:
        writer.join()
    regular = tmp_path / "file.pftrace.gz"
    regular.write_bytes(data)
    assert contents.format == "perfetto-proto"
    assert len(contents.kernels) == len(read_trace(regular).kernels) == 6  # the six kernels planted


def test_packed_category_ids_and_links_are_read(tmp_path: Path) -> None:
    """proto3 writers pack repeated scalars: a packed category_iids and a packed gpu_correlation read as unpacked."""
    from wizard.trace.read import perfetto

    seq = perfetto._Sequence()
    seq.tables["categories"][5] = "cuda_runtime"
    reader = perfetto._Reader(TraceContents(path="x"))
    body = varint(3 << 3 | 2) + varint(2) + varint(5) + varint(6)  # category_iids [5, 6], packed
    body += varint(9 << 3) + varint(1) + varint(11 << 3) + varint(0)  # type BEGIN, track 0
    links = varint(1 << 3 | 2) + varint(2) + varint(7) + varint(8)
    body += varint(3000 << 3 | 2) + varint(len(links)) + links
    reader._track_event(body, (0, len(body)), 1000, seq)
    ((_ts, _name, cat, _args, linked, _size),) = reader.open[0]  # an open slice is a tuple (perfetto._Open)
    assert (cat, linked) == ("cuda_runtime", [7, 8])


def test_writer_sequences_are_bounded(tmp_path: Path) -> None:
    from wizard.errors import InputFileError
    from wizard.trace.read import perfetto
    from wizard.trace.read.reader import read_trace

    packets = [pb.TracePacket(timestamp=1, trusted_packet_sequence_id=n + 1) for n in range(perfetto.MAX_SEQUENCES + 1)]
    path = tmp_path / "many.pftrace"
    path.write_bytes(pb.Trace(packet=packets).SerializeToString())
    with pytest.raises(InputFileError, match=f"more than {perfetto.MAX_SEQUENCES} writer sequences"):
        read_trace(path)


def test_every_annotation_form_a_writer_may_use(tmp_path: Path) -> None:
    """Interned annotation names and string values, every scalar type, arrays (a grid written as array_values),
    dicts, and a complete event in the legacy form (phase X with a duration, no end packet): each read as the JSON
    args it stands for (perfetto's debug_annotation.proto, track_event.proto)."""
    from wizard.trace.read.reader import read_trace

    interned = pb.TracePacket(trusted_packet_sequence_id=1, sequence_flags=1)
    for iid, name in enumerate(["grid", "block", "correlation", "device", "stream", "queued", "note"], 1):
        interned.interned_data.debug_annotation_names.add(iid=iid, name=name)
    interned.interned_data.debug_annotation_string_values.add(iid=1, str=b"from an interned string")
    kernel = pb.TracePacket(timestamp=5_000, trusted_packet_sequence_id=1)
    te = kernel.track_event
    te.type, te.track_uuid, te.name = pb.TrackEvent.TYPE_SLICE_BEGIN, 9, "void k"
    te.categories.append("kernel")
    for iid, dims in ((1, (108, 2, 1)), (2, (256, 1, 1))):
        a = te.debug_annotations.add(name_iid=iid)
        for d in dims:
            a.array_values.add(uint_value=d)
    te.debug_annotations.add(name_iid=3, uint_value=77)
    te.debug_annotations.add(name_iid=4, int_value=0)
    te.debug_annotations.add(name_iid=5, string_value="7")
    te.debug_annotations.add(name_iid=6, bool_value=True)
    te.debug_annotations.add(name_iid=7, string_value_iid=1)
    end = pb.TracePacket(timestamp=6_500, trusted_packet_sequence_id=1)
    end.track_event.type, end.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, 9
    call = pb.TracePacket(timestamp=4_000, trusted_packet_sequence_id=1)
    call.track_event.track_uuid, call.track_event.name = 10, "cudaLaunchKernel"
    call.track_event.categories.append("cuda_runtime")
    call.track_event.legacy_event.phase, call.track_event.legacy_event.duration_us = ord("X"), 3
    call.track_event.debug_annotations.add(name="correlation", int_value=77)
    path = tmp_path / "forms.pftrace"
    path.write_bytes(pb.Trace(packet=[interned, kernel, end, call]).SerializeToString())
    contents = read_trace(path)
    k = next(iter(contents.kernels))
    assert (k.grid, k.block, k.correlation, k.device, k.stream, k.ts, k.dur) == (
        (108, 2, 1), (256, 1, 1), 77, 0, "7", 5.0, 1.5
    )  # fmt: skip
    (call_start,) = list(contents.runtime.starts)
    assert (call_start, list(contents.runtime.correlations)) == (4.0, [77])


# -- issue 45 item 10: a .pftrace's nanoseconds are read as they are ------------------------------------------


def _epoch_kernels() -> dict[str, Any]:
    """300 kernels back to back on one stream at microsecond-epoch times (whole µs from 1.7e15, as Kineto wrote them
    before it made times relative), each ending where the next starts, and 3 that truly start 4 µs before the kernel
    before them ends."""
    events, at = [], 1_700_000_000_000_000
    for i in range(300):
        dur = 14 if i in (40, 150, 260) else 10  # the next one starts 4 µs before this one ends
        events.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": at, "dur": dur,
                       "args": {"device": 0, "stream": 7, "correlation": 1000 + i}})  # fmt: skip
        at += 10
    return {"traceEvents": events}


def _rule_on_file_ns(data: bytes) -> tuple[int, int]:
    """The second reading: the kernels' nanoseconds as the generated bindings decode them (TrackEvent begin/end per
    track), Perfetto's rule over them (tests/perfetto_rule.py; whole numbers go through it exactly, times 1000, so
    order and overlaps are the file's), and the same rule over the nanoseconds as microsecond doubles and back, as
    warpwizard read them before: (kernels that cannot nest, the same by the microsecond round trip)."""
    trace = pb.Trace.FromString(data)
    rows: dict[int, str] = {}
    open_at: dict[int, list[int]] = {}
    spans: list[tuple[str, int, int]] = []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            rows[d.uuid] = d.sibling_merge_key or d.name or str(d.uuid)
        if packet.HasField("track_event"):
            te = packet.track_event
            if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                open_at.setdefault(te.track_uuid, []).append(packet.timestamp)
            elif te.type == pb.TrackEvent.TYPE_SLICE_END:
                start = open_at[te.track_uuid].pop()
                spans.append((rows[te.track_uuid], start, packet.timestamp))
    exact: list[dict[str, Any]] = [
        {"ph": "X", "cat": "kernel", "pid": 0, "tid": row, "ts": s, "dur": e - s} for row, s, e in spans
    ]
    micro = [{**k, "ts": s / 1000.0, "dur": (e - s) / 1000.0} for k, (_, s, e) in zip(exact, spans, strict=True)]
    return len(perfetto_rule.rule_of(exact).spilled_kernels()), len(perfetto_rule.rule_of(micro).spilled_kernels())


def test_a_pftrace_of_microsecond_epoch_events_gives_the_json_overlap_count(run_cli: Any, tmp_path: Path) -> None:
    """TrackEvent times are nanoseconds and Perfetto reads them as they are; turning them into microsecond doubles
    (a step of 0.25 µs near 1.7e15) and back with llround(us * 1000) invented overlaps between kernels that only
    touch. The JSON (Perfetto's JSON rule: tests/perfetto_rule.py), the .pftrace's own nanoseconds and warpwizard's
    reading of the .pftrace all count the 3 planted overlaps."""
    doc = _epoch_kernels()
    source = tmp_path / "epoch.json"
    source.write_text(json.dumps(doc))
    data = convert(doc)
    converted = tmp_path / "epoch.pftrace"
    converted.write_bytes(data)
    from_json = len(perfetto_rule.rule(source).spilled_kernels())
    from_file_ns, through_microseconds = _rule_on_file_ns(data)
    assert from_json == from_file_ns == 3
    assert through_microseconds > 3  # the round trip the reader made before: phantom overlaps (why this test)
    as_json, as_proto = inspected(run_cli, source), inspected(run_cli, converted)
    assert _checks(as_proto)["kernels-overlap"] == _checks(as_json)["kernels-overlap"] == ("info", 3)


@needs_shared
@pytest.mark.parametrize("name", ["v100-resnet50-2021.pt.trace.json.gz", "rtx2080ti-linear.json.gz"])
def test_real_microsecond_epoch_traces_as_pftrace_keep_their_overlap_count(
    run_cli: Any, tmp_path: Path, name: str
) -> None:
    """Two shared traces whose .pftrace (as transformer_nuggets converts them) showed 2 kernels that cannot nest
    where the JSON, by Perfetto's JSON rule (tests/perfetto_rule.py), has none: the microsecond round trip's."""
    source = TRACES / name
    doc = json.loads(gzip.decompress(source.read_bytes()))
    converted = tmp_path / "real.pftrace"
    converted.write_bytes(convert(doc if isinstance(doc, dict) else {"traceEvents": doc}))
    from_json = len(perfetto_rule.rule(source).spilled_kernels())
    assert from_json == 0
    assert _checks(inspected(run_cli, converted))["kernels-overlap"] == ("ok", from_json)
