"""Multi-GPU traces whose lists come after the events, Jetson Thor's
resident blocks and every capability's row against cuda_occupancy.h, Kineto's occupancy object as a note, and
the words of the reports and the flagship where they said what the facts did not."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import wizard
from tests.conftest import TRACES, load_json_trace, needs_shared, run_inprocess, strict_json
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.read.reader import ReaderConfig, read_trace

# -- 1. lists of objects after the event list -----------------------------------------------------------

KEYS = ("schemaVersion", "deviceProperties", "traceEvents", "traceName")
ORDERS = list(itertools.permutations(KEYS))
LAYOUTS = ("one-line", "one-per-line", "indented")


def _multi_gpu(devices: int, repeat: int = 1) -> TraceBuilder:
    """The demo launches spread over ``devices`` H100s (kernels on every device the table lists)."""
    builder = TraceBuilder(gpu="H100", devices=devices)
    for i, spec in enumerate(demo_launches() * max(devices, 1) * repeat):
        spec.device = i % devices
        builder.add(spec)
    return builder


def _written(doc: dict[str, Any], order: tuple[str, ...], layout: str) -> str:
    """The trace's keys in ``order``, as one line (json.dump with no indent), one event per line (Kineto's
    layout; every other value on its key's line), or indented (json.dump(indent=2), one key per line)."""
    ordered = {key: doc[key] for key in order}
    if layout == "one-line":
        return json.dumps(ordered, separators=(",", ":"))
    if layout == "indented":
        return json.dumps(ordered, indent=2)
    lines = []
    for key, value in ordered.items():
        if key == "traceEvents":
            text = "[\n  " + ",\n  ".join(json.dumps(e) for e in value) + "\n  ]"
        else:
            text = json.dumps(value)
        lines.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _comparable(inspection: wizard.Inspection) -> dict[str, Any]:
    """An inspection's JSON without what differs between two files of the same trace (path, timing, size; the
    health check's trace-size counts the file's bytes)."""
    doc = inspection.to_dict()
    for report in doc["reports"]:
        for key in ("path", "timing", "bytes_read", "layout", "compressed"):
            report.pop(key)
        for check in report["health"]:
            if check["check"] == "trace-size":
                check.pop("bytes")
                check.pop("unpacked_bytes")  # the layout's own size: another order writes other whitespace
                check.pop("summary")
    doc["launches"] = [msgspec.structs.replace(launch, trace="") for launch in inspection.launches]
    return doc


@pytest.fixture(scope="module")
def canonical() -> dict[int, dict[str, Any]]:
    """For one and eight devices: the document and what inspecting it as the builder writes it gives."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for devices in (1, 8):
            builder = _multi_gpu(devices)
            path = builder.write(Path(tmp) / f"canonical{devices}.json")
            out[devices] = {"doc": builder.document(), "report": _comparable(wizard.inspect_traces(path))}
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("devices", [1, 8])
def test_every_key_order_reads_the_same_trace(
    tmp_path: Path, canonical: dict[int, dict[str, Any]], devices: int, layout: str
) -> None:
    """24 orders of the four top-level keys: the same events, devices and findings as the builder's own
    layout (deviceProperties before the events); 8 devices after the events was refused as invalid JSON."""
    doc, expected = canonical[devices]["doc"], canonical[devices]["report"]
    kernels = sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")
    assert kernels == 3 * devices and expected["mechanisms"] == {"E": devices, "F": devices}
    for n, order in enumerate(ORDERS):
        path = tmp_path / f"order{n}.json"
        path.write_text(_written(doc, order, layout))
        contents = read_trace(path)
        assert len(contents.kernels) == kernels, order
        assert contents.device_properties == doc["deviceProperties"], order
        assert contents.metadata["traceName"] == "warpwizard-builder" and contents.truncation is None, order
        assert _comparable(wizard.inspect_traces(path)) == expected, order
        if devices > 1:  # the parallel reader's routing of the block that holds the list's end
            assert _comparable(wizard.inspect_traces(path, jobs=2)) == expected, order


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_eight_devices_after_the_events_in_worker_processes(tmp_path: Path, layout: str, suffix: str) -> None:
    """Many blocks decoded by two workers (and a gzip stream fed to them): the last block's cut lies in the
    deviceProperties list; the reader stops at the event list's end instead of reading devices as events."""
    builder = _multi_gpu(8, repeat=20)
    doc = builder.document()
    text = _written(doc, ("schemaVersion", "traceEvents", "traceName", "deviceProperties"), layout)
    path = tmp_path / f"late{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix == ".json.gz" else text.encode())
    small: dict[str, Any] = {"block_size": 4096, "parallel_block": 2048, "parallel_min_bytes": 0}
    one = read_trace(path, config=ReaderConfig(**small, workers=0))
    two = read_trace(path, config=ReaderConfig(**small, workers=2))
    assert two.timing["workers"] == 2  # decoded by the workers, not sent back down the sequential path
    for contents in (one, two):
        assert len(contents.kernels) == 3 * 8 * 20 and contents.events == len(doc["traceEvents"])
        assert contents.device_properties == doc["deviceProperties"]
    assert [k.name for k in one.kernels] == [k.name for k in two.kernels]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("position", range(5))
def test_any_list_of_objects_after_the_events_is_metadata(tmp_path: Path, layout: str, position: int) -> None:
    """One device plus ``"extra": [{"a": 1}, {"b": 2}]`` anywhere among the keys, and an empty event list
    followed by such a list."""
    builder = _multi_gpu(1)
    doc = builder.document()
    doc["extra"] = [{"a": 1}, {"b": 2}]
    order = list(KEYS)
    order.insert(position, "extra")
    path = tmp_path / "extra.json"
    path.write_text(_written(doc, tuple(order), layout))
    contents = read_trace(path)
    assert len(contents.kernels) == 3 and contents.metadata["extra"] == [{"a": 1}, {"b": 2}]
    assert wizard.inspect_traces(path).mechanisms == {"E": 1, "F": 1}
    doc["traceEvents"] = []
    path.write_text(_written(doc, ("traceEvents", "extra", "deviceProperties"), layout))
    empty = read_trace(path)
    assert empty.events == 0 and empty.metadata["extra"] == [{"a": 1}, {"b": 2}] and len(empty.device_properties) == 1


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_cli_inspects_and_fixes_eight_devices_written_last(tmp_path: Path, layout: str, suffix: str) -> None:
    """``trace inspect`` and ``trace fix`` (the same files the flagship called unreadable, exit 6): the
    fixed copy keeps all eight devices and is strict JSON, with the planted A corrected."""
    builder = _multi_gpu(8)
    builder.add(KernelSpec("idx", (100_000, 30_000, 1), (128, 1, 1), device=5))  # A on device 5
    doc = builder.document()
    text = _written(doc, ("schemaVersion", "traceEvents", "deviceProperties", "traceName"), layout)
    path = tmp_path / f"late{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix == ".json.gz" else text.encode())
    report = inspect_json(run_inprocess, path, status=1)
    assert report["mechanisms"] == {"A": 1, "E": 8, "F": 8}
    assert [d["id"] for d in report["reports"][0]["devices"]] == list(range(8))
    out = tmp_path / f"fixed{suffix}"
    fixed = run_inprocess("trace", "fix", str(path), str(out))
    assert fixed.status == 0, fixed.stderr
    copy = strict_json(gzip.decompress(out.read_bytes()) if suffix == ".json.gz" else out.read_bytes())
    assert copy["deviceProperties"] == doc["deviceProperties"] and copy["traceName"] == "warpwizard-builder"
    (idx,) = [e for e in copy["traceEvents"] if e.get("name") == "idx"]
    assert idx["args"]["blocks per SM"] == 3_000_000_000 / 132 and idx["args"]["warpwizard mechanism"] == "A"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cut_traces_with_eight_devices(tmp_path: Path, layout: str) -> None:
    """Cut inside the events with the devices first: every whole event read, the devices known. Cut inside
    the devices written after the events: every event read, the cut named, the file still fixed."""
    builder = _multi_gpu(8)
    doc = builder.document()
    first = _written(doc, ("schemaVersion", "deviceProperties", "traceEvents", "traceName"), layout)
    at = first.index('"name": "sm90_xmma' if layout != "one-line" else '"name":"sm90_xmma', len(first) // 2)
    path = tmp_path / "cut-events.json"
    path.write_text(first[:at])
    contents = read_trace(path)
    assert len(contents.device_properties) == 8 and contents.truncation is not None
    assert 0 < len(contents.kernels) < 24
    last = _written(doc, ("schemaVersion", "traceEvents", "deviceProperties", "traceName"), layout)
    path = tmp_path / "cut-devices.json"
    path.write_text(last[: last.index('"id"', last.index('"deviceProperties"')) + 30])
    contents = read_trace(path)
    assert len(contents.kernels) == 24 and contents.truncation is not None
    assert contents.truncation.detail == (
        "the file ends inside the metadata after the event list; every event was read"
    )
    inspected = run_inprocess("trace", "inspect", str(path), "--json")
    assert strict_json(inspected.stdout)["reports"][0]["kernels"] == 24
    out = tmp_path / "fixed.json"
    assert run_inprocess("trace", "fix", str(path), str(out)).status == 0
    assert len([e for e in strict_json(out.read_text())["traceEvents"] if e.get("cat") == "kernel"]) == 24


def _devices_written_last(name: str) -> bool:
    path = TRACES / name
    text = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    return text.find(b'"traceEvents"') < text.find(b'"deviceProperties"')  # -1: an array, or no devices


@needs_shared
def test_shared_traces_with_device_properties_last_read_right_and_with_eight_devices(tmp_path: Path) -> None:
    """Every shared trace that writes deviceProperties after its events: the same devices and kernels as
    json.load; and the same file with its device written eight times (ids 0-7) reads the eight."""
    from tests.conftest import REAL_TRACES, kernels_of

    late = [name for name in REAL_TRACES if _devices_written_last(name)]
    assert late, "no shared trace writes deviceProperties after its events"
    for name in late:
        doc = load_json_trace(TRACES / name)
        contents = read_trace(TRACES / name)
        assert contents.device_properties == doc["deviceProperties"], name
        assert len(contents.kernels) == len(kernels_of(doc)) == REAL_TRACES[name], name
        doc["deviceProperties"] = [dict(doc["deviceProperties"][0], id=i) for i in range(8)]
        copy = tmp_path / "eight.json"
        copy.write_text(json.dumps(doc, indent=2))
        again = read_trace(copy)
        assert len(again.device_properties) == 8 and len(again.kernels) == REAL_TRACES[name], name


# -- 2. every capability's row against NVIDIA's cuda_occupancy.h (CUDA 13.0) ---------------------------

# Each column is what one function of cuda_occupancy.h (CUDA 13.0) returns for the capability:
HEADER_SOURCES = {
    "max_blocks_per_sm": "cudaOccMaxBlocksPerMultiprocessor: 16 on 3.x and 7.5, 32 on 5.x, 6.x, 7.0/7.2, 8.0, "
    "9.0, 10.0, 10.3; 16 on 8.6/8.7; 24 on 8.9, 10.1, 11.0 and 12.x",
    "carveout_kb": "cudaOccAlignUpShmemSizeVoltaPlus (cc >= 7; before it, cudaOccSMemPreference takes "
    "sharedMemPerMultiprocessor as it is, with the default CACHE_PREFER_NONE)",
    "sub_partitions": "cudaOccSubPartitionsPerMultiprocessor: computeMinor ? 4 : 2 on 6.x, else 4",
    "max_regs_per_thread": "cudaOccRegAllocationMaxPerThread: 255 on 3.x-6.x, 256 from 7.x",
    "smem_granularity": "cudaOccSMemAllocationGranularity: 256 on 3.x-7.x, 128 from 8.x",
    "reserved_smem": "cudaOccSMemPerBlock adds the device's reservedSharedMemPerBlock from cc 8.0 (1024 B on every "
    "GPU since Ampere: cudaDeviceProp.reservedSharedMemPerBlock); not counted before",
}
_NONE: tuple[int, ...] = ()
_VOLTA = (0, 8, 16, 32, 64, 96)
_AMPERE = (0, 8, 16, 32, 64, 100, 132, 164)
_HOPPER = (*_AMPERE, 196, 228)
_GA10X = (0, 8, 16, 32, 64, 100)
# capability: (max blocks, carveout KB, sub-partitions, max registers/thread, granularity B, reserved B)
HEADER: dict[tuple[int, int], tuple[int, tuple[int, ...], int, int, int, int]] = {
    (3, 0): (16, _NONE, 4, 255, 256, 0), (3, 2): (16, _NONE, 4, 255, 256, 0),
    (3, 5): (16, _NONE, 4, 255, 256, 0), (3, 7): (16, _NONE, 4, 255, 256, 0),
    (5, 0): (32, _NONE, 4, 255, 256, 0), (5, 2): (32, _NONE, 4, 255, 256, 0), (5, 3): (32, _NONE, 4, 255, 256, 0),
    (6, 0): (32, _NONE, 2, 255, 256, 0), (6, 1): (32, _NONE, 4, 255, 256, 0), (6, 2): (32, _NONE, 4, 255, 256, 0),
    (7, 0): (32, _VOLTA, 4, 256, 256, 0), (7, 2): (32, _VOLTA, 4, 256, 256, 0), (7, 5): (16, (32, 64), 4, 256, 256, 0),
    (8, 0): (32, _AMPERE, 4, 256, 128, 1024), (8, 6): (16, _GA10X, 4, 256, 128, 1024),
    (8, 7): (16, _AMPERE, 4, 256, 128, 1024), (8, 9): (24, _GA10X, 4, 256, 128, 1024),
    (9, 0): (32, _HOPPER, 4, 256, 128, 1024),
    (10, 0): (32, _HOPPER, 4, 256, 128, 1024), (10, 1): (24, _HOPPER, 4, 256, 128, 1024),
    (10, 3): (32, _HOPPER, 4, 256, 128, 1024), (11, 0): (24, _HOPPER, 4, 256, 128, 1024),
    (12, 0): (24, _GA10X, 4, 256, 128, 1024), (12, 1): (24, _GA10X, 4, 256, 128, 1024),
}  # fmt: skip


def test_every_capabilitys_row_is_the_headers() -> None:
    """Each figure of warpwizard's table against the header function named in HEADER_SOURCES (Jetson Thor,
    10.1 and 11.0, had 32 resident blocks where the header says 24)."""
    from wizard.trace.metrics.occupancy import ARCHITECTURES

    assert set(ARCHITECTURES) == set(HEADER)
    for cc, (blocks, carveout, partitions, registers, granularity, reserved) in HEADER.items():
        arch = ARCHITECTURES[cc]
        ours = (arch.max_blocks_per_sm, arch.carveout_kb, arch.sub_partitions, arch.max_regs_per_thread)
        theirs = (blocks, carveout, partitions, registers, granularity, reserved)
        assert (*ours, arch.smem_granularity, arch.reserved_smem) == theirs, (cc, HEADER_SOURCES)


def test_jetson_thor_holds_24_blocks_per_sm(tmp_path: Path) -> None:
    """32-thread blocks on a cc 11.0 (and 10.1) Thor of 1536 threads per SM: 24 blocks resident, 50%, as the
    profiler printed; with 32 blocks warpwizard called the printed 50 a '?' and the true value 66.7."""
    for cc in ((11, 0), (10, 1)):
        builder = TraceBuilder(gpu="H100")
        builder.add(KernelSpec("small", (20 * 132, 1, 1), (32, 1, 1), registers=16))
        doc = builder.document()
        doc["deviceProperties"][0].update(computeMajor=cc[0], computeMinor=cc[1], maxThreadsPerMultiprocessor=1536)
        (kernel,) = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        kernel["args"]["est. achieved occupancy %"] = 42  # min(24, 20 blocks per SM) * 32 / 1536 = 41.7%
        path = tmp_path / "thor.json"
        path.write_text(json.dumps(doc))
        assert wizard.inspect_traces(path).mechanisms == {}
        builder = TraceBuilder(gpu="H100")
        builder.add(KernelSpec("small", (40 * 132, 1, 1), (32, 1, 1), registers=16))
        doc = builder.document()
        doc["deviceProperties"][0].update(computeMajor=cc[0], computeMinor=cc[1], maxThreadsPerMultiprocessor=1536)
        (kernel,) = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        kernel["args"]["est. achieved occupancy %"] = 50  # min(24, 40) * 32 / 1536
        path.write_text(json.dumps(doc))
        inspection = wizard.inspect_traces(path)
        assert inspection.mechanisms == {}, inspection.reports[0].metrics.groups[0].worst.evidence
        (launch,) = inspection.launches
        assert launch.true_est_occupancy == pytest.approx(50.0)


_HARNESS = r"""
#include <cstdio>
#include "cuda_occupancy.h"
// Each input line: a device (cc, threads/SM, registers/SM and /block, shared memory per block, per SM, opt-in,
// reserved) and a launch (threads, registers, shared memory), called as libkineto calls the calculator.
int main() {
    int major, minor, threadsSm, regsSm, regsBlock, threads, regs;
    long smemBlock, smemSm, optin, reserved, smem;
    while (scanf("%d %d %d %d %d %ld %ld %ld %ld %d %d %ld", &major, &minor, &threadsSm, &regsSm, &regsBlock,
                 &smemBlock, &smemSm, &optin, &reserved, &threads, &regs, &smem) == 12) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major; prop.computeMinor = minor; prop.maxThreadsPerBlock = 1024;
        prop.maxThreadsPerMultiprocessor = threadsSm; prop.regsPerBlock = regsBlock;
        prop.regsPerMultiprocessor = regsSm; prop.warpSize = 32; prop.sharedMemPerBlock = smemBlock;
        prop.sharedMemPerMultiprocessor = smemSm; prop.numSms = 100; prop.sharedMemPerBlockOptin = optin;
        prop.reservedSharedMemPerBlock = reserved;
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 2147483647; attr.numRegs = regs; attr.sharedSizeBytes = 0;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF; attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
        attr.maxDynamicSharedSizeBytes = 0;
        cudaOccDeviceState state;
        cudaOccResult result;
        int limit = -1;
        cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, threads, smem);
        cudaOccMaxBlocksPerMultiprocessor(&limit, &prop);
        int active = status == CUDA_OCC_SUCCESS ? result.activeBlocksPerMultiprocessor : -1;
        printf("%d %d %d\n", (int)status, active, limit);
    }
    return 0;
}
"""


def _header() -> Path | None:
    import glob
    import shutil

    found = sorted(glob.glob("/usr/local/cuda*/include/cuda_occupancy.h"))
    return Path(found[-1]) if found and shutil.which("g++") else None


@pytest.mark.skipif(_header() is None, reason="no CUDA toolkit's cuda_occupancy.h (or no g++) on this machine")
def test_the_calculator_agrees_with_the_compiled_header_on_every_capability(tmp_path: Path) -> None:
    """The header itself, compiled and called as libkineto calls it, for every capability in the table and
    720 launch shapes each (threads, registers, shared memory up to and past 48 KB): the same active blocks
    per SM, and the same resident-block limit as HEADER says."""
    import subprocess

    from tests.helpers import GUIDE
    from wizard.trace.metrics.occupancy import DeviceLimits, active_blocks_per_sm

    header = _header()
    assert header is not None
    source = tmp_path / "occ.cpp"
    source.write_text(_HARNESS)
    binary = tmp_path / "occ"
    subprocess.run(["g++", "-O1", "-I", str(header.parent), str(source), "-o", str(binary)], check=True)
    cases = []
    for cc in sorted(HEADER):
        threads_sm, _, smem_kb = GUIDE[cc]
        regs_sm = 131072 if cc == (3, 7) else 65536
        reserved = 1024 if cc >= (8, 0) else 0
        optin = max(48, smem_kb - 1) * 1024
        for threads, regs, smem in itertools.product(
            (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024),
            (0, 16, 32, 40, 64, 128, 168, 255, 256),
            (0, 1, 4096, 20000, 40000, 49152, 49153, 100000),
        ):
            cases.append((cc, threads_sm, regs_sm, smem_kb * 1024, optin, reserved, threads, regs, smem))
    lines = "".join(
        f"{cc[0]} {cc[1]} {ts} {rs} 65536 49152 {sm} {oi} {rv} {t} {r} {s}\n"
        for cc, ts, rs, sm, oi, rv, t, r, s in cases
    )
    out = subprocess.run([str(binary)], input=lines, capture_output=True, text=True, check=True).stdout.split("\n")
    disagree = []
    for case, line in zip(cases, out, strict=False):
        status, active, limit = map(int, line.split())
        cc, threads_sm, regs_sm, smem_sm, optin, _, threads, regs, smem = case
        assert status == 0 and limit == HEADER[cc][0], (case, line)
        limits = DeviceLimits(
            cc[0], cc[1], 100, threads_sm, regs_sm, 65536, 49152, smem_sm, optin, max_threads_per_block=1024
        )
        ours = active_blocks_per_sm(limits, threads, regs, smem).active_blocks
        if ours != active:
            disagree.append((case, ours, active))
    assert len(out) - 1 == len(cases) == 24 * 720 and not disagree, disagree[:5]


# -- 3. Kineto's occupancy object against warpwizard's calculator: a note ------------------------------


def test_a_printed_occupancy_that_follows_kinetos_own_object_is_a_note_with_the_launch_count(tmp_path: Path) -> None:
    """The profiler's calculator said 5 blocks (and printed 63% from it) where warpwizard's says 6: which table
    is wrong is unknown, the launch is not; a note with the launch count, exit 0, no '?'."""
    builder = TraceBuilder(gpu="H100", kineto="2.12")
    builder.add(KernelSpec("ok", (1000, 1, 1), (256, 1, 1), 40, repeat=3))
    doc = builder.document()
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["args"]["occupancy"]["activeBlocksPerMultiprocessor"] = 5
            event["args"]["est. achieved occupancy %"] = 63  # lround(100 * min(5, 7.58) * 256 / 2048)
    path = tmp_path / "disagree.json"
    path.write_text(json.dumps(doc))
    report = inspect_json(run_inprocess, path, status=0)["reports"][0]
    assert report["mechanisms"] == {} and report["wrong_launches"] == 0
    (note,) = [n for n in report["notes"] if n.startswith("Kineto's own occupancy calculator")]
    assert note == (
        "Kineto's own occupancy calculator gives 5 blocks per SM, limited by REGS where warpwizard's gives 6 "
        "(registers) on compute capability 9.0 (256 threads, 40 registers, 0 B shared memory): one of the two "
        "calculators' tables is not this GPU's; the printed est. achieved occupancy % follows Kineto's, so it is "
        "not called wrong (3 launches)"
    )


# -- 4. the flagship's D conclusion follows its evidence ---------------------------------------------------


def _flagship(tmp_path: Path, trace: Path) -> dict[str, Any]:
    answers = tmp_path / f"{trace.stem}.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\n")
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--json")
    return strict_json(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("gpu", "cc", "header"), [("V100", "7.0", None), ("H100", "9.0", "11.8"), ("RTX2080Ti", "7.5", None)]
)
def test_the_flagships_d_conclusion_blames_a_header_only_where_one_is_to_blame(
    tmp_path: Path, gpu: str, cc: str, header: str | None
) -> None:
    """Every CUDA header knows cc 7.0 and 7.5: the conclusion said the header was too old and to install a
    newer PyTorch while its evidence said the opposite. On cc 9.0 a header older than CUDA 11.8 is the cause."""
    builder = TraceBuilder(gpu=gpu)
    builder.add(KernelSpec("gemm", (64, 8, 1), (256, 1, 1), plant="D"))
    transcript = _flagship(tmp_path, builder.write(tmp_path / f"{gpu}.json"))
    conclusion = transcript["conclusion"]
    assert conclusion["diagnosis"] == "profiler-bug-occupancy-calculator"
    (inspect,) = [e for e in transcript["entries"] if e["node"] == "inspect"]
    facts = inspect["facts"]
    assert (facts["d_capability"], facts["d_header"]) == (cc, header)
    words = " ".join([conclusion["summary"], *conclusion["fix"]])
    if header is None:
        assert facts["d_cause"] == "inputs"
        assert f"failed on compute capability {cc}: every CUDA header knows that architecture" in words
        assert "A newer PyTorch or CUDA will not change this" in words
        assert "older" not in words and "Install a PyTorch" not in words
    else:
        assert facts["d_cause"] == "header"
        assert "(PyTorch built with a CUDA header older than CUDA 11.8)" in words
        assert "Install a PyTorch built with CUDA 11.8 or newer, whose occupancy calculator knows your GPU." in words


# -- 5. by design: counted against, and named as, the GPU's own resident-warp limit -------------------------


def test_the_by_design_conclusion_names_the_gpus_own_resident_warp_limit(tmp_path: Path) -> None:
    """An RTX 2080 Ti (cc 7.5) holds at most 32 warps per SM: 40 warps per SM is already more than resident,
    and the conclusion counts and names that limit, not '64 (or 48)'."""
    builder = TraceBuilder(gpu="RTX2080Ti")
    builder.add(KernelSpec("forty", (340, 1, 1), (256, 1, 1), repeat=3))  # 5 blocks x 8 warps per SM of 68
    builder.add(KernelSpec("many", (4096, 1, 1), (256, 1, 1), repeat=2))
    builder.add(KernelSpec("few", (68, 1, 1), (256, 1, 1)))  # 8 warps per SM
    transcript = _flagship(tmp_path, builder.write(tmp_path / "turing.json"))
    conclusion = transcript["conclusion"]
    assert conclusion["diagnosis"] == "not-a-bug-large-by-design"
    (inspect,) = [e for e in transcript["entries"] if e["node"] == "inspect"]
    assert inspect["facts"]["resident_warps"] == [32] and inspect["facts"]["large_by_design"] == 5
    assert "not comparable to the at most 32 warps an SM of this GPU holds at once" in conclusion["summary"]
    assert "64" not in conclusion["summary"]
    assert (
        "5 kernel launches with more than 32 warps per SM (the most an SM of this GPU holds at once), all correct"
        in conclusion["evidence"]
    )


@needs_shared
def test_the_real_rtx_2080_ti_trace_counts_launches_above_32_warps(tmp_path: Path) -> None:
    """3,438 of its launches exceed 32 resident warps per SM, the limit of its cc 7.5 SMs, and 1,678 exceed 64
    (counted with json.load and grid * block / 32 / 68): the conclusion said '3438 ... more than 64'."""
    transcript = _flagship(tmp_path, TRACES / "rtx2080ti-linear.json.gz")
    conclusion = transcript["conclusion"]
    assert conclusion["diagnosis"] == "not-a-bug-large-by-design"
    assert (
        "3438 kernel launches with more than 32 warps per SM (the most an SM of this GPU holds at once), all correct"
        in conclusion["evidence"]
    )


# -- 7. a G trace says both SM counts and where each came from ----------------------------------------------


def test_a_g_trace_names_both_sm_counts_and_their_sources(tmp_path: Path) -> None:
    """Values computed on 144 SMs in a trace whose deviceProperties says 132: the device row said '144 SMs'
    with source deviceProperties, which says 132."""
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("ok", (4096, 1, 1), (256, 1, 1), plant="wrong-sms", repeat=4))
    path = builder.write(tmp_path / "merged.json")
    inspected = run_inprocess("trace", "inspect", str(path), "--json")
    report = strict_json(inspected.stdout)["reports"][0]
    (device,) = report["devices"]
    assert (device["num_sms"], device["source"]) == (144, "inferred")  # the kernels' count, not deviceProperties
    assert (
        "device 0 (NVIDIA H100 80GB HBM3): 144 SMs from its kernels' own values (their blocks and warps per SM fit "
        "144 SMs; the true values use it), 132 SMs from the trace's deviceProperties (mechanism G)"
    ) in report["notes"]
    text = run_inprocess("trace", "inspect", str(path)).stdout
    assert "NVIDIA H100 80GB HBM3 (144 SMs, inferred)" in text and "132 SMs from the trace's deviceProperties" in text
    healthy = TraceBuilder(gpu="H100")
    healthy.add(KernelSpec("ok", (4096, 1, 1), (256, 1, 1)))
    (plain,) = inspect_json(run_inprocess, healthy.write(tmp_path / "h.json"))["reports"][0]["devices"]
    assert (plain["num_sms"], plain["source"]) == (132, "deviceProperties")


# -- 6. typed metadata is decided from the whole trace ----------------------------------------------------


def _six_decimals(doc: dict[str, Any]) -> None:
    """Kineto 2.4 to 2.13 print every float32 metric with six decimals (``6060.605957``)."""
    from wizard.trace.kineto_math import f32

    for event in doc["traceEvents"]:
        args = event.get("args", {})
        for key in ("blocks per SM", "warps per SM"):
            if event.get("cat") == "kernel" and isinstance(args.get(key), float) and args[key] != float("inf"):
                args[key] = float(f"{f32(args[key]):.6f}")


def test_a_six_decimal_value_above_1000_does_not_make_a_classic_trace_typed(tmp_path: Path) -> None:
    """6060.605957 has ten significant digits, as 2.14's full precision does; the trace's values are no float32s
    (2.14 writes float32s exactly: 6060.60595703125), so it is Kineto's six-decimal print, and its quoted "inf"
    is C'."""
    builder = TraceBuilder(gpu="H100", nonfinite="quoted")
    builder.add(KernelSpec("big", (100_000, 1, 1), (256, 1, 1)))  # warps per SM 6060.605957
    builder.add(KernelSpec("ok", (4096, 1, 1), (256, 1, 1)))  # blocks per SM 31.030303
    builder.add(KernelSpec("c", (99, 1, 1), (128, 1, 1), plant="C"))
    doc = builder.document()
    _six_decimals(doc)
    path = tmp_path / "classic.json"
    path.write_text(json.dumps(doc).replace("Infinity", '"inf"'))
    assert '"warps per SM": 6060.605957' in path.read_text()
    contents = read_trace(path)
    assert not contents.typed
    workers = ReaderConfig(block_size=1024, parallel_block=512, parallel_min_bytes=0, workers=2)
    assert not read_trace(path, config=workers).typed  # blocks decoded apart decide together
    assert wizard.inspect_traces(path).mechanisms == {"C": 1, "C'": 1, "F": 2}
    typed = TraceBuilder(gpu="H100", kineto="2.14")  # the same launches as 2.14 writes them: no C'
    for spec in (
        KernelSpec("big", (100_000, 1, 1), (256, 1, 1)),
        KernelSpec("ok", (4096, 1, 1), (256, 1, 1)),
        KernelSpec("c", (99, 1, 1), (128, 1, 1), plant="C"),
    ):
        typed.add(spec)
    written = typed.write(tmp_path / "typed.json")
    assert read_trace(written).typed
    assert wizard.inspect_traces(written).mechanisms == {"C": 1, "F": 2}


# -- 8. ROCm: one story, and a true one ------------------------------------------------------------------


def _rocm_with_metrics(tmp_path: Path) -> Path:
    builder = TraceBuilder(gpu="MI300X")
    builder.add(KernelSpec("k", (4096, 1, 1), (256, 1, 1), repeat=2))
    doc = builder.document()
    doc["deviceProperties"][0].update(computeMajor=9, computeMinor=4)  # gfx942, as a real MI300X trace says
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["args"].update({"blocks per SM": 13.5, "warps per SM": 108.0})
    path = tmp_path / "rocm-metrics.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_rocm_trace_carrying_the_metrics_is_not_said_to_record_none(tmp_path: Path) -> None:
    """The flagship said 'records no blocks or warps per SM' of a ROCm trace whose kernels carry them, and every
    ROCm report beside 'nothing to check' said 'cc 9.4 ... blocks and warps per SM were checked'."""
    path = _rocm_with_metrics(tmp_path)
    report = inspect_json(run_inprocess, path)["reports"][0]
    assert report["rocm_metrics"] == 2 and report["kernels_checked"] == 0
    assert not [n for n in report["notes"] if "were checked" in n or "could not be verified" in n]
    transcript = _flagship(tmp_path, path)
    conclusion = transcript["conclusion"]
    assert conclusion["diagnosis"] == "rocm-no-such-metrics"
    assert conclusion["summary"] == (
        "This is a ROCm (AMD GPU) trace. Blocks or warps per SM are recorded on 2 kernels, but warpwizard does not "
        "check them: AMD GPUs count compute units and 64-thread wavefronts, and no occupancy calculator is known for "
        "them, so they are listed as they are."
    )
    (inspect,) = [e for e in transcript["entries"] if e["node"] == "inspect"]
    assert inspect["facts"]["resident_warps"] == []  # AMD's SMs hold 64-thread wavefronts: no NVIDIA limit
    assert inspect["summary"] == (
        "nothing checked: ROCm trace (2 kernels carry blocks/warps per SM; warpwizard does not check AMD values)"
    )


@needs_shared
@pytest.mark.parametrize("name", ["mi250-rocm-minitoy.json.gz", "mi300-bert-small.json.gz"])
def test_real_rocm_traces_say_nothing_was_checked_and_nothing_else(tmp_path: Path, name: str) -> None:
    """The real MI250 (cc 9.0 as HIP reports gfx90a) and MI300X (9.4) traces carry no such metrics: one note,
    'nothing to check', and no note that says something was checked."""
    report = inspect_json(run_inprocess, TRACES / name)["reports"][0]
    assert report["rocm"] and report["rocm_metrics"] == 0 and report["kernels_checked"] == 0
    assert report["notes"] == [
        "ROCm trace: the profiler records no blocks/warps per SM or occupancy on AMD GPUs, so there is nothing to "
        "check; launch dimensions are listed as they are"
    ]
    conclusion = _flagship(tmp_path, TRACES / name)["conclusion"]
    assert conclusion["summary"].startswith(
        "This is a ROCm (AMD GPU) trace. The profiler records no blocks or warps per SM nor occupancy"
    )


# -- 9. smaller points ------------------------------------------------------------------------------------


def test_sms_is_said_to_go_unused_when_the_trace_has_device_properties(tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("ok", (4096, 1, 1), (256, 1, 1)))
    path = builder.write(tmp_path / "h100.json")
    report = inspect_json(run_inprocess, path, "--sms", "80")["reports"][0]
    assert report["devices"][0]["num_sms"] == 132
    assert (
        "the SM count given with --sms (80) was not used: the trace has deviceProperties, and its devices' own SM "
        "counts were used (132)"
    ) in report["notes"]
    plain = inspect_json(run_inprocess, path)["reports"][0]
    assert not [n for n in plain["notes"] if "--sms" in n]


def test_resident_warps_of_a_grid_smaller_than_the_gpu_are_a_mean_not_a_maximum(tmp_path: Path) -> None:
    """80 one-warp blocks on 132 SMs: 0.6061 warps per SM on average, one at most; it said 'at most 0.6061'."""
    builder = TraceBuilder(gpu="H100", kineto="2.14")
    builder.add(KernelSpec("tiny", (80, 1, 1), (32, 1, 1), dur=50))
    builder.add(KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424, dur=2000))
    (tiny, gemm) = builder.kernel_spans
    for (start, _), value in ((tiny, 0.5), (gemm, 12.0)):
        builder.add_counter("sm__warps_active.avg.per_cycle_active", start + 10, value)
    path = builder.write(tmp_path / "pm.json")
    result = run_inprocess("probe", "metrics.sanity", "--param", f"trace={path}", "--json")
    facts = strict_json(result.stdout)["entries"][0]["facts"]
    assert facts["measured"] == [
        "gemm: sm__warps_active.avg.per_cycle_active measured 12 (mean of 1 sample while it ran), computed at "
        "most 12 resident warps per SM",
        "tiny: sm__warps_active.avg.per_cycle_active measured 0.5 (mean of 1 sample while it ran), computed "
        "0.6061 resident warps per SM on average (its 80 blocks over 132 SMs; at most 1 on one SM)",
    ]


def test_b_evidence_says_what_the_negative_values_are(tmp_path: Path) -> None:
    """'blocks per SM -99 = -99' said nothing: the value is the grid's blocks divided by an SM count of -1."""
    builder = TraceBuilder(gpu="RTX2080Ti")
    builder.add(KernelSpec("mm", (99, 1, 1), (128, 1, 1), plant="B"))
    (group,) = wizard.inspect_traces(builder.write(tmp_path / "b.json")).reports[0].metrics.groups
    assert group.worst.evidence.startswith(
        "blocks per SM -99 and warps per SM -396 are the grid's 99 blocks and 99*128/32 warps divided by -1: the "
        "profiler used an SM count of -1 instead of 68"
    )
    doc = builder.document()
    del doc["deviceProperties"]  # without an SM count B is still recognised
    path = tmp_path / "b-bare.json"
    path.write_text(json.dumps(doc))
    (group,) = wizard.inspect_traces(path).reports[0].metrics.groups
    assert group.worst.evidence.startswith(
        "blocks per SM -99 is the grid's 99 blocks divided by -1: the SM count was read as -1 (grid 99x1x1"
    )


def test_d_on_a_capability_no_cuda_knows_names_it_instead_of_a_newer_release(tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("k", (4096, 1, 1), (256, 1, 1), plant="D"))
    doc = builder.document()
    doc["deviceProperties"][0].update(computeMajor=13, computeMinor=0)
    path = tmp_path / "cc13.json"
    path.write_text(json.dumps(doc))
    inspection = wizard.inspect_traces(path)
    (group,) = [g for g in inspection.reports[0].metrics.groups if g.mechanism == "D"]
    assert "a newer release" not in group.worst.evidence
    assert group.worst.evidence.startswith(
        "est. achieved occupancy % = -99: compute capability 13.0 is unknown to the occupancy calculator (a PyTorch "
        "built with a CUDA header that predates compute capability 13.0, newer than every CUDA warpwizard knows)"
    )
