"""Perfetto protobuf traces for tests and benchmarks, written by Perfetto's own Python package (``perfetto``:
``TraceProtoBuilder`` and its generated ``perfetto_trace_pb2`` messages; the ``test`` extra installs it).

``convert`` turns a Kineto JSON document into TrackEvent slices the way drisspg/transformer_nuggets'
``utils/track_event.py`` does: one track per (pid, tid) named after it, string names and categories, args as debug
annotations with lists as ``legacy_json_value``, only ``X`` events with a positive duration, crossing slices on
sibling tracks merged by ``sibling_merge_key``, flows and metadata events dropped. ``cuspy`` writes what PyTorch
2.15's Cuspy encoder writes (torch/csrc/profiler/cuspy/cuspy_pftrace.cpp: TrackEvent CPU slices with a
``gpu_correlation`` at raw field 3000, one ``GpuRenderStageEvent`` per GPU op, ``InternedComputeKernel`` at raw
field 1000 of InternedData), gzipped as Cuspy writes it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def _pb() -> Any:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


Row = tuple[Any, Any]


def convert(doc: dict[str, Any]) -> bytes:
    """A Kineto JSON document as TrackEvent slices, converted as transformer_nuggets converts it."""
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    builder = TraceProtoBuilder()
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X" and float(e.get("dur") or 0) > 0]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}  # fmt: skip
    lane_of, lanes = _nesting_lanes(slices)
    uuids = _tracks(builder, lanes, names)
    markers = []
    for n, e in enumerate(slices):
        uuid = uuids[(e["pid"], e["tid"], lane_of[n])]
        markers.append((round(e["ts"] * 1000), 1, -e["dur"], uuid, n, True, e))
        markers.append((round((e["ts"] + e["dur"]) * 1000), 0, e["dur"], uuid, n, False, e))
    pb = _pb()
    for ts, _rank, _d, uuid, _n, begin, e in sorted(markers, key=lambda m: m[:5]):  # ends first on a tie
        packet = builder.add_packet()
        packet.timestamp, packet.trusted_packet_sequence_id = ts, 1001
        te = packet.track_event
        te.track_uuid = uuid
        te.type = pb.TrackEvent.TYPE_SLICE_BEGIN if begin else pb.TrackEvent.TYPE_SLICE_END
        if begin:
            te.name = str(e["name"])
            te.categories.append(str(e["cat"]))
            for key, value in (e.get("args") or {}).items():
                _annotate(te.debug_annotations.add(), key, value)
    data: bytes = builder.serialize()
    return data


def _nesting_lanes(slices: list[dict[str, Any]]) -> tuple[dict[int, int], dict[Row, int]]:
    """Each slice's lane on its row, the first where it nests or starts after everything open (crossing slices
    cannot share a TrackEvent track), and each row's lane count."""
    stacks: dict[Row, list[list[float]]] = {}
    lane_of: dict[int, int] = {}
    for n, e in sorted(enumerate(slices), key=lambda p: (p[1]["ts"], -(p[1]["ts"] + p[1]["dur"]), p[0])):
        row = stacks.setdefault((e["pid"], e["tid"]), [])
        end = e["ts"] + e["dur"]
        for k, stack in enumerate(row):
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                lane_of[n] = k
                break
        else:
            lane_of[n] = len(row)
            row.append([end])
    return lane_of, {row: len(lanes) for row, lanes in stacks.items()}


def _tracks(builder: Any, lanes: dict[Row, int], names: dict[Row, str]) -> dict[tuple[Any, Any, int], int]:
    """A process track per pid (a string pid by its name) and a track per lane of each row under it, lanes of one
    row merged by ``sibling_merge_key``."""
    uuids: dict[tuple[Any, Any, int], int] = {}
    processes: dict[Any, int] = {}
    for pid, tid in sorted(lanes, key=str):
        if pid not in processes:
            processes[pid] = len(uuids) + len(processes) + 1
            desc = builder.add_packet().track_descriptor
            desc.uuid = processes[pid]
            if isinstance(pid, int) and pid >= 0:
                desc.process.pid = pid
            else:
                desc.name = str(pid)
        for lane in range(lanes[(pid, tid)]):
            uuids[(pid, tid, lane)] = 1000 + len(uuids)
            desc = builder.add_packet().track_descriptor
            desc.uuid, desc.parent_uuid = uuids[(pid, tid, lane)], processes[pid]
            desc.name = str(names.get((pid, tid), f"track {tid}")).rstrip()
            if lanes[(pid, tid)] > 1:
                desc.sibling_merge_key = f"{pid}:{tid}:{desc.name}"
    return uuids


def _annotate(a: Any, key: str, value: Any) -> None:
    a.name = key
    if isinstance(value, bool):
        a.bool_value = value
    elif isinstance(value, int):
        a.int_value = value
    elif isinstance(value, float):
        a.double_value = value
    elif isinstance(value, str):
        a.string_value = value
    else:
        a.legacy_json_value = json.dumps(value)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


BASE_NS = 224 * 7_889_238 * 10**9  # Cuspy's base time: Kineto's baseTimeNanoseconds, a multiple of three months


def _clock_snapshot(packet: Any) -> None:
    """Cuspy's first packet: the clock snapshot at its base time (BOOTTIME and REALTIME both at the base)."""
    packet.timestamp, packet.trusted_packet_sequence_id = BASE_NS, 1
    packet.clock_snapshot.clocks.add(clock_id=6, timestamp=BASE_NS)  # BUILTIN_CLOCK_BOOTTIME
    packet.clock_snapshot.clocks.add(clock_id=1, timestamp=BASE_NS)  # BUILTIN_CLOCK_REALTIME


def _process_and_thread(trace: Any) -> None:
    p = trace.packet.add()
    p.track_descriptor.uuid, p.track_descriptor.process.pid = 1, 4242
    p.track_descriptor.process.process_name = "python"
    p = trace.packet.add()
    p.track_descriptor.uuid, p.track_descriptor.parent_uuid = 2, 1
    p.track_descriptor.thread.pid, p.track_descriptor.thread.tid = 4242, 4243
    p.track_descriptor.thread.thread_name = "thread 4243"


def cuspy(path: Path, *, stages: list[dict[str, Any]], launches: list[dict[str, Any]]) -> Path:
    """What Cuspy's encoder writes for these GPU ops and launches: a process and thread track, the interned names,
    categories, stage and lane specifications and compute kernels, CPU slices (an op around each launch), then one
    render stage per op; gzipped."""
    pb = _pb()
    trace = pb.Trace()
    _clock_snapshot(trace.packet.add())
    _process_and_thread(trace)
    names = ["aten::mm", "cudaLaunchKernel", *sorted({s["name"] for s in stages})]
    _cuspy_interned(pb, trace.packet.add(), names)
    raw = [trace.SerializeToString(), _cuspy_compute_kernels(pb, stages)]
    for launch in launches:
        raw.extend(_cuspy_cpu_slices(pb, launch))
    raw.extend(_cuspy_render_stages(pb, stages, names))
    path.write_bytes(gzip.compress(b"".join(raw)))
    return path


def _cuspy_interned(pb: Any, interned: Any, names: list[str]) -> None:
    """The names, categories and GPU specifications every later packet refers to by iid."""
    interned.trusted_packet_sequence_id = 1
    interned.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    for iid, name in enumerate(names, 1):
        interned.interned_data.event_names.add(iid=iid, name=name)
    for iid, name in enumerate(["cpu_op", "cuda_runtime"], 1):
        interned.interned_data.event_categories.add(iid=iid, name=name)
    for iid, name in enumerate(["Kernel", "Memcpy", "Memset", "Annotation"], 1):
        interned.interned_data.gpu_specifications.add(iid=iid, name=name, category=2 if iid == 1 else 0)
    interned.interned_data.gpu_specifications.add(iid=100, name="[7] stream 7")


def _cuspy_compute_kernels(pb: Any, stages: list[dict[str, Any]]) -> bytes:
    """Cuspy's InternedComputeKernel entries, at the raw field 1000 of InternedData that Cuspy writes."""
    compute = b"".join(
        field(1000, varint(1 << 3) + varint(n) + field(3, name.encode()))  # InternedComputeKernel iid, demangled
        for n, name in enumerate(sorted({s["name"] for s in stages}), 1)
    )
    clear = pb.TracePacket(trusted_packet_sequence_id=1)
    return field(1, clear.SerializeToString() + field(12, compute))


def _cuspy_cpu_slices(pb: Any, launch: dict[str, Any]) -> list[bytes]:
    """An op around the launch, each begin followed by its end; the launch carries its correlation and flow links."""
    raw = []
    for name_iid, cat_iid, start, end, anno in (
        (1, 1, launch["ts"] - 500, launch["ts"] + 900, False), (2, 2, launch["ts"], launch["ts"] + 300, True)
    ):  # fmt: skip
        begin = pb.TracePacket(timestamp=BASE_NS + start, trusted_packet_sequence_id=1, sequence_flags=2)
        te = begin.track_event
        te.type, te.track_uuid, te.name_iid = pb.TrackEvent.TYPE_SLICE_BEGIN, 2, name_iid
        te.category_iids.append(cat_iid)
        extra = b""
        if anno:
            if launch.get("annotate", True):
                te.debug_annotations.add(name="correlation", int_value=launch["correlation"])
            extra = field(3000, b"".join(varint(1 << 3) + varint(e) for e in launch["links"]))
        body = te.SerializeToString() + extra
        packet = pb.TracePacket(timestamp=begin.timestamp, trusted_packet_sequence_id=1,
                                sequence_flags=2).SerializeToString() + field(11, body)  # fmt: skip
        raw.append(field(1, packet))
        end_packet = pb.TracePacket(timestamp=BASE_NS + end, trusted_packet_sequence_id=1)
        end_packet.track_event.type, end_packet.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, 2
        raw.append(field(1, end_packet.SerializeToString()))
    return raw


def _cuspy_render_stages(pb: Any, stages: list[dict[str, Any]], names: list[str]) -> list[bytes]:
    """One GPU render stage per op, with its launch geometry and the device, stream and correlation as extra data."""
    kernels = {name: n for n, name in enumerate(sorted({s["name"] for s in stages}), 1)}
    raw = []
    for event_id, s in enumerate(stages, 1):
        packet = pb.TracePacket(timestamp=BASE_NS + s["ts"], trusted_packet_sequence_id=1, sequence_flags=2)
        g = packet.gpu_render_stage_event
        g.event_id, g.duration, g.gpu_id, g.hw_queue_iid, g.stage_iid, g.context = (
            event_id, s["dur"], 0, 100, s.get("stage", 1), 1
        )  # fmt: skip
        g.name_iid = names.index(s["name"]) + 1
        g.kernel_iid = kernels[s["name"]]
        g.launch.grid_size.x, g.launch.grid_size.y, g.launch.grid_size.z = s["grid"]
        g.launch.workgroup_size.x, g.launch.workgroup_size.y, g.launch.workgroup_size.z = s["block"]
        g.launch.args.add(name_iid=1, uint_value=32)  # registers_per_thread
        for key, value in (("device id", 0), ("stream id", 7), ("correlation", s["correlation"])):
            g.extra_data.add(name=key, value=str(value))
        raw.append(field(1, packet.SerializeToString()))
    return raw
