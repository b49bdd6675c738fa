"""The compiled core's ``scan_events`` (wizard/_core.c, section "Kineto JSON events scanned from their bytes")
against the reader's other way with a block of whole events: ``decode_block(EVENTS_DECODER, ...)`` then
``Collector.add``. The contract is that section's header comment: the scanner *declines* (False, nothing changed)
wherever msgspec might refuse the block or read a value otherwise, and on every block it takes, the collector keeps
exactly what the msgspec path keeps. So for every block, whatever the bytes, the reader's result is the same with
the scanner as without it (``collector.scan_events = None``).

Checked here four ways: whole builder-made traces inspected both ways; a table of odd and hostile blocks, each
with whether the scanner must take or decline it, a decline compared with a deep snapshot taken before; random
blocks with mutations (escapes, duplicate keys, 007, -0, 1e400, 25-digit integers, bare NaN, bytes that are not
UTF-8, nested args); and JSON numbers from a grammar (hypothesis) in every kind of field. Then the scanner's one
reused Event and EventArgs against handlers in Python (``_complete``, ``_gpu_op``) that keep, write or raise: what
a handler kept stays as it saw it, a field it wrote does not reach the next event, and its error (a signal's
KeyboardInterrupt among them) reaches the caller as raised (each found here, then fixed in the core).
"""

from __future__ import annotations

import gc
import gzip
import json
import math
import random
import re
import time
import tracemalloc
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REAL_TRACES, TRACES, budget, needs_shared
from tests.helpers import deep_state, kept
from wizard.errors import TerminateSignal
from wizard.inspect_options import InspectOptions
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.inspection.run import inspect_trace
from wizard.trace.read import collector as collector_module
from wizard.trace.read import reader as reader_module
from wizard.trace.read.collector import MAX_NAME, Collector, TraceContents
from wizard.trace.read.events import EVENTS_DECODER, Event, EventArgs, as_int, decode_block, reported
from wizard.trace.read.reader import ReaderConfig, read_trace

if TYPE_CHECKING:
    from wizard._core import ScanAhead

if collector_module.scan_events is None:
    pytest.skip(
        "the compiled core is not built or refused here (WARPWIZARD_PURE=1): no scan_events", allow_module_level=True
    )
SCAN: Callable[[Collector, bytes, int, int, ScanAhead | None], bool] = collector_module.scan_events


PRELOAD = (
    b'{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1.0,"dur":5,"args":{"Input Dims":[[2,3]]}},'
    b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":9}},'
    b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":3,"dur":1,"args":{"correlation":9,"grid":[1,2,3],'
    b'"block":[64,1,1],"blocks per SM":0.5,"warps per SM":2,"est. achieved occupancy %":12}}'
)


def fresh(preload: bool = False) -> Collector:
    """A collector over fresh contents; ``preload``: with a first block collected the msgspec way (memos and tables
    not empty, so that a later block's interning and ids are checked too)."""
    collector = Collector(TraceContents(path=""))
    if preload:
        events = decode_block(EVENTS_DECODER, PRELOAD)
        assert events is not None
        collector.add(events)
    return collector


def msgspec_way(collector: Collector, block: bytes) -> bool:
    """The reader's way without the scanner: decoded (bare inf/nan retried), then ``add``; False where msgspec
    refuses the block (the reader then reads it event by event)."""
    events = decode_block(EVENTS_DECODER, block)
    if events is None:
        return False
    collector.add(events)
    return True


def both_ways(block: bytes, preload: bool = False) -> tuple[bool, Any, Any]:
    """Whether the scanner took the block, what the reader's way keeps (the scanner, else msgspec after its
    decline) and what msgspec's way alone keeps; a decline is checked to have changed nothing."""
    scanned = fresh(preload)
    before = kept(scanned)
    took = scanned.add_bytes(block)
    assert type(took) is bool
    if not took:
        assert kept(scanned) == before, "a declined block changed the collector"
        msgspec_way(scanned, block)
    reference = fresh(preload)
    decoded = msgspec_way(reference, block)
    if took:  # taken: msgspec's first decode (without the bare-token retry) reads it too
        assert decoded, "the scanner took a block msgspec refuses"
        EVENTS_DECODER.decode(b"[" + block + b"]")
    return took, kept(scanned), kept(reference)


# -- 1. whole traces, inspected with and without the scanner ---------------------------------------------------


def extra_events(t0: float) -> list[str]:
    """Events the builder does not write, as the JSON text of each: every category the collector dispatches and
    the odd spellings of its fields."""
    occupancy = {"activeBlocksPerMultiprocessor": 4, "limitingFactors": "regs", "blockLimitRegs": 8,
                 "blockLimitSharedMem": 32, "blockLimitWarps": 16, "blockLimitBlocks": 32,
                 "allocatedSharedMemPerBlock": 0}  # fmt: skip

    def kernel(i: int, bps: Any, wps: Any, occ: Any, **more: Any) -> dict[str, Any]:
        args = {"device": 0, "stream": 7, "correlation": 900 + i, "registers per thread": 32, "shared memory": 0,
                "blocks per SM": bps, "warps per SM": wps, "grid": [4 + i, 1, 1], "block": [128, 1, 1],
                "est. achieved occupancy %": occ, **more}  # fmt: skip
        return {"ph": "X", "cat": "kernel", "name": f"extra_kernel_{i % 3}", "pid": 0, "tid": 7,
                "ts": t0 + 10 * i, "dur": 3.5, "args": args}  # fmt: skip

    events: list[Any] = [
        kernel(0, 1.5, 12, 25),
        kernel(1, 2, 8.0, 12.5),
        kernel(2, "3.25", "16", "50"),
        kernel(3, 0.123456789012345, 1234567.891234567, 0.30000000000000004, occupancy=occupancy),
        kernel(4, 1e-7, 1500.0, 100, **{"theoretical occupancy %": 75}),
        kernel(5, "inf", "-nan", 0, occupancy={}),
        kernel(6, math.inf, 4, math.nan),  # Infinity and NaN: written quoted or bare (trace_text)
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": t0,
            "dur": 2,
            "args": {"correlation": 900, "cbid": 211},
        },
        {
            "ph": "X",
            "cat": "cuda_driver",
            "name": "cuLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": t0 + 10,
            "dur": 2,
            "args": {"correlation": 901},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::conv2d",
            "pid": 1,
            "tid": 1,
            "ts": t0 - 5,
            "dur": 60,
            "args": {
                "Input Dims": [[8, 3, [224, 224]], [], [[1], [2, [3]]]],
                "Input type": ["float", ""],
                "Call stack": "model.py(10): forward;torch/nn/module.py(1501): _call_impl",
            },
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::relu",
            "pid": 1,
            "tid": 2,
            "ts": t0 + 1,
            "dur": 4,
            "args": {"Input dims": [[4, 4]], "Call stack": 5},
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": "model.py(10): forward",
            "pid": 1,
            "tid": 1,
            "ts": t0 - 6,
            "dur": 70,
            "args": {"Python id": 3, "Python parent id": 1},
        },
        {"ph": "X", "cat": "python_function", "name": "<built-in method>", "pid": 1, "tid": 1, "ts": t0 - 4},
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": t0 + 70,
            "dur": 1.25,
            "args": {"device": 0, "stream": 7, "correlation": 950, "bytes": 4096},
        },
        {
            "ph": "X",
            "cat": "gpu_memset",
            "name": "Memset (Device)",
            "pid": 0,
            "tid": 7,
            "ts": t0 + 75,
            "dur": 0.5,
            "args": {"device": "0", "stream": [7], "correlation": "951"},
        },
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": t0 - 8, "dur": 100},
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "my_region",
            "pid": 1,
            "tid": 1,
            "ts": t0 - 2,
            "dur": 50,
            "args": None,
        },
        {"ph": "X", "cat": "gpu_user_annotation", "name": "my_region", "pid": 0, "tid": 7, "ts": t0 + 1, "dur": 40},
        {
            "ph": "X",
            "cat": "overhead",
            "name": "Instrumentation",
            "pid": -1,
            "tid": 0,
            "ts": t0 + 3,
            "dur": 1,
            "args": {"correlation": 901},
        },
        {
            "ph": "X",
            "cat": "cuda_profiler_range",
            "name": "range",
            "pid": 0,
            "tid": 7,
            "ts": t0 + 5,
            "dur": 1,
            "args": {"correlation": 0},
        },
        {"ph": "s", "id": 900, "pid": 1, "tid": 1, "ts": t0, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 900, "pid": 0, "tid": 7, "ts": t0 + 5, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "s", "id": 17, "pid": 1, "tid": 1, "ts": t0 + 2, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "id": 17, "pid": 1, "tid": 2, "ts": t0 + 9, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
        {
            "ph": "C",
            "name": "gpu__time_active",
            "pid": "GPU 0 Counters",
            "tid": 0,
            "ts": t0 + 6,
            "args": {"gpu__time_active": 12.5},
        },
        {
            "ph": "C",
            "name": "sm__cycles",
            "pid": "GPU 0 Counters",
            "tid": 0,
            "ts": t0 + 16,
            "args": {"sm__cycles": 300},
        },
        {"ph": "i", "name": "no category", "pid": 1, "tid": 1, "ts": t0 + 7, "s": "t"},
        {"ph": "X", "name": "no category, complete", "pid": 1, "tid": 3, "ts": t0 + 8, "dur": 2, "args": None},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": t0 - 10,
            "dur": 200,
        },
        {"ph": "X", "cat": "cpu_op", "name": 42, "pid": 1, "tid": 4, "ts": "123.5", "dur": "4"},
        {"ph": "X", "cat": "cpu_op", "name": 4.5, "pid": 1, "tid": 4, "ts": t0 + 20, "dur": 1, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "日本語 é \u2028 😀", "pid": 1, "tid": 4, "ts": t0 + 21, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "n" * (MAX_NAME + 5), "pid": 1, "tid": 4, "ts": t0 + 22, "dur": 1},
        {},
    ]
    texts = [json.dumps(e, ensure_ascii=False) for e in events]
    # spellings json.dumps never writes: exponents, fractions to 17 digits, whitespace inside an event
    texts += [
        '{ "ph" : "X" ,\t"cat":"cpu_op", "name" : "spaced",\r\n"pid":1, "tid":5, "ts":%r , "dur" : 1.5E+3 }'
        % (t0 + 30),
        '{"ph":"X","cat":"kernel","name":"spelled","pid":0,"tid":7,"ts":%r,"dur":1e-7,"args":{"grid":[ 1 , 2 , 3 ],'
        '"block":[32,1,1],"blocks per SM":1.0000000000000002,"warps per SM":2.5e0,"est. achieved occupancy %%":1E2,'
        '"correlation":999999999999999999}}' % (t0 + 31),
        '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":-999999999999999999,"tid":1,"ts":%r,'
        '"dur":-0.0,"args":{"correlation":-5}}' % (t0 + 32),
    ]
    return texts


def trace_text(builder: TraceBuilder, minified: bool, nonfinite: str) -> str:
    """The builder's document with ``extra_events``, written one event a line or minified, non-finite metrics
    quoted or bare (as 2022-2023 Kineto wrote them: invalid JSON, so the scanner declines those blocks)."""
    doc = builder.document()
    events = [json.dumps(e, ensure_ascii=False) for e in doc["traceEvents"]]
    events += extra_events(builder.clock + 1000.0)
    head = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
    if minified:
        parts = [f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in head.items()]
        parts.append('"traceEvents":[' + ",".join(events) + "]")
        text = "{" + ",".join(parts) + ',"traceName":"scan"}'
    else:
        parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
        parts.append('  "traceEvents": [\n  ' + ",\n  ".join(events) + "\n  ]")
        text = "{\n" + ",\n".join(parts) + ',\n  "traceName": "scan"\n}\n'
    spelled = {"Infinity": "inf", "-Infinity": "-inf", "NaN": "nan"}
    if nonfinite == "quoted":
        return re.sub(r'(?<![\w"])(-?Infinity|NaN)(?![\w"])', lambda m: f'"{spelled[m.group(1)]}"', text)
    return re.sub(r'(?<![\w"])(-?Infinity|NaN)(?![\w"])', lambda m: spelled[m.group(1)], text)


def built(options: dict[str, Any]) -> TraceBuilder:
    builder = TraceBuilder(**options)
    for spec in demo_launches():
        builder.add(spec)
    builder.add(KernelSpec("k" * (MAX_NAME + 10), (1, 2, 3), (64, 1, 1), op="op", python_stack=("a.py(1): f",)))
    builder.add_memcpy()
    builder.add_gpu_annotation("annotation", builder.clock, 5.0)
    builder.add_overhead("Overhead", 3.0, correlation=7)
    builder.add_counter("GPU 0 Counters", builder.clock, 1.5)
    builder.add_cpu_op("aten::mm")
    builder.span("ProfilerStep#1", [KernelSpec("gemm", (8, 1, 1), (128, 1, 1))], cat="user_annotation")
    builder.add_graph([KernelSpec("graphed", (2, 1, 1), (32, 1, 1))], flows=True)
    return builder


def inspected(path: Path, config: ReaderConfig) -> tuple[dict[str, Any], Any]:
    """``to_dict()`` of the inspection (less its clock times) and a snapshot of what the read kept."""
    seen: list[TraceContents] = []
    options = InspectOptions(jobs=1, launches="all", plots=True)
    report = inspect_trace(path, options, config=config, on_contents=seen.append).to_dict()
    report.pop("timing")
    (contents,) = seen
    contents.timing.clear()
    return report, deep_state(contents)


def spied(monkeypatch: pytest.MonkeyPatch, threads: list[ScanAhead] | None = None) -> list[bool]:
    """The scanner swapped for itself with a spy: the list it returns says, block by block, whether it took it;
    ``threads`` gets the scanner's thread each block was scanned beside (ReaderConfig.ahead), once."""
    outcomes: list[bool] = []

    def counted(collector: Collector, buf: bytes, start: int, end: int, ahead: ScanAhead | None = None) -> bool:
        took = SCAN(collector, buf, start, end, ahead)
        outcomes.append(took)
        if threads is not None and ahead is not None and all(ahead is not seen for seen in threads):
            threads.append(ahead)
        return took

    monkeypatch.setattr(collector_module, "scan_events", counted)
    return outcomes


@pytest.mark.parametrize("layout", ["lines", "minified", "lines.gz"])
@pytest.mark.parametrize(
    ("options", "nonfinite"),
    [({}, "quoted"), ({"kineto": "2.12"}, "quoted"), ({"kineto": "2.14"}, "quoted"), ({"era": "2021"}, "quoted"),
     ({"gpu": "MI300X"}, "quoted"), ({}, "bare")],
    ids=["2024", "kineto-2.12", "kineto-2.14", "2021", "rocm", "bare-nonfinite"],
)  # fmt: skip
@pytest.mark.parametrize("block", [512 << 10, 2 << 10], ids=["one-block", "2KiB-blocks"])
@pytest.mark.parametrize("ahead", [True, False], ids=["thread", "no-thread"])
def test_whole_traces_inspect_the_same_with_and_without_the_scanner(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: dict[str, Any],
    nonfinite: str,
    layout: str,
    block: int,
    ahead: bool,
) -> None:
    """Built traces inspected with the scanner (its first pass on its thread, ReaderConfig.ahead, or not) and
    without it (msgspec's decoding): the same report."""
    monkeypatch.setattr(reader_module, "usable_cores", lambda: 2)  # the thread runs on two cores or more
    text = trace_text(built(options), layout == "minified", nonfinite).encode()
    path = tmp_path / ("trace.json.gz" if layout.endswith(".gz") else "trace.json")
    path.write_bytes(gzip.compress(text, mtime=0) if layout.endswith(".gz") else text)
    config = ReaderConfig(workers=0, block_size=block, ahead=ahead)
    threads: list[ScanAhead] = []
    outcomes = spied(monkeypatch, threads)
    scanned = inspected(path, config)
    monkeypatch.setattr(collector_module, "scan_events", None)
    assert inspected(path, config) == scanned
    if nonfinite == "quoted":  # every block taken: the comparison covered every event's way through the scanner
        assert outcomes and all(outcomes), outcomes
    else:  # the blocks with a bare inf/nan declined (invalid JSON), the others taken
        assert False in outcomes and (True in outcomes or block == 512 << 10), outcomes
    assert scanned[0]["events"] > 60 and scanned[0]["kernels"] > 10
    if ahead and block == 2 << 10:  # blocks scanned on the thread, none again here (its exact count: test_scan_ahead)
        ((taken, again),) = [thread.taken for thread in threads]
        assert 1 <= taken < len(outcomes) and again == 0, (taken, again, len(outcomes))
    elif ahead:  # one block: nothing to hand over, no thread started
        assert [thread.threaded for thread in threads] == [False]
    else:
        assert threads == []


@needs_shared
@pytest.mark.parametrize("name", sorted(name for name in REAL_TRACES if name.endswith((".json", ".json.gz"))))
def test_shared_traces_read_the_same_with_and_without_the_scanner(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real traces (../shared), read in 64 KiB blocks: every block taken, and what the read keeps the same."""
    config = ReaderConfig(workers=0, block_size=64 << 10)
    outcomes = spied(monkeypatch)
    scanned = read_trace(TRACES / name, config=config)
    monkeypatch.setattr(collector_module, "scan_events", None)
    decoded = read_trace(TRACES / name, config=config)
    scanned.timing.clear()
    decoded.timing.clear()
    assert outcomes and all(outcomes), outcomes
    assert deep_state(scanned) == deep_state(decoded)


def test_a_key_a_byte_off_a_fields_name_is_another_key() -> None:
    """scan_key (wizard/_core.c) matches a name by its first eight bytes, then by its last eight (9 to 16 bytes) or a
    memcmp of the rest (longer): a key that differs from an args field's name only in its ninth or its last byte is
    another key, which msgspec keeps nowhere, and the scanner takes the block (a key mistaken for the field would
    have been the field given twice, and declined)."""
    names = [field.encode_name for field in msgspec.structs.fields(EventArgs)]
    long_names = [name for name in names if len(name) > 8]
    assert {len(name) > 16 for name in long_names} == {True, False}  # both ways of matching the rest
    for name in long_names:
        for at in sorted({8, len(name) - 1}):
            other = name[:at] + chr(ord(name[at]) ^ 1) + name[at + 1 :]
            value = b'"v"' if name in ("Call stack", "original_stream") else b"[1,2,3]" if "put" in name else b"7"
            block = kernel_with(b'"%s":%s,"%s":%s' % (other.encode(), value, name.encode(), value))
            took, ours, reference = both_ways(block)
            assert took and ours == reference, (name, other)


# -- 2. a table of blocks: taken or declined ---------------------------------------------------------------------

OP = b'{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":%s,"dur":%s}'
KERNEL = b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":2,"args":{%s}}'
GOOD = (
    b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":5,"dur":1,"args":{"correlation":3}}'
)


def kernel_with(args: bytes) -> bytes:
    return KERNEL % args


def op_at(ts: bytes, dur: bytes = b"1") -> bytes:
    return OP % (ts, dur)


TAKEN: dict[str, bytes] = {
    "unicode-names": '{"cat":"cpu_op","name":"日本語 é \u2028 😀 \uffff \U0010ffff","pid":"ü","ts":1}'.encode(),
    "del-byte-in-a-string": b'{"cat":"cpu_op","name":"a\x7fb","pid":1,"tid":1,"ts":1,"dur":1}',
    "fraction": op_at(b"1.5", b"0.25"),
    "exponents": op_at(b"1.5E+3", b"1e-7"),
    "exponent-leading-zeros": op_at(b"1e05", b"2E-0003"),
    "lowercase-uppercase-e": op_at(b"2e2", b"3E2"),
    "negative": op_at(b"-5", b"-1.5"),
    "negative-zero-float": op_at(b"-0.0", b"-0e5"),
    "zero-with-huge-exponent": op_at(b"0e999999", b"0.0e-99999"),
    "underflow-to-zero": op_at(b"1e-400", b"2.4703282292062327e-324"),
    "largest-double-rounded-down": op_at(b"1.7976931348623158e308", b"1"),
    "smallest-normal": op_at(b"2.2250738585072014e-308", b"1"),
    "15-digits": op_at(b"0.123456789012345", b"123456789.012345"),
    "16-digits": op_at(b"0.1234567890123456", b"1234567.891234567"),
    "17-digits": op_at(b"0.30000000000000004", b"9007199254740993.0"),
    "long-fraction": op_at(b"0.1000000000000000055511151231257827", b"1"),
    "18-digit-ints": op_at(b"123456789012345678", b"-999999999999999999"),
    "int-ties-to-even": op_at(b"9007199254740993", b"18014398509481989"),
    "ts-as-string": op_at(b'"123.5"', b'"4"'),
    "ts-null": op_at(b"null", b"null"),
    "name-int": b'{"cat":"cpu_op","name":42,"pid":1,"tid":1,"ts":1,"dur":1}',
    "name-float": b'{"cat":"cpu_op","name":4.5e0,"pid":1,"tid":1,"ts":1,"dur":1}',
    "name-18-digits": b'{"cat":"cpu_op","name":123456789012345678,"pid":1,"tid":1,"ts":1,"dur":1}',
    "name-long": b'{"cat":"cpu_op","name":"' + b"n" * (MAX_NAME + 3) + b'","pid":1,"tid":1,"ts":1,"dur":1}',
    "name-long-wide": b'{"cat":"kernel","name":"' + "é".encode() * (MAX_NAME + 3) + b'","ts":1,"dur":1}',
    "args-true-false-null": kernel_with(b'"correlation":true,"device":false,"stream":null,"grid":null'),
    "args-empty": kernel_with(b""),
    "args-null": b'{"cat":"kernel","name":"k","ts":1,"dur":1,"args":null}',
    "args-missing": b'{"cat":"cuda_runtime","name":"r","ts":1,"dur":1}',
    "empty-object": b"{}",
    "only-unknown-keys": b'{"ph":"M","name":"thread_name","args":{"name":"python"},"s":"t","id":5}',
    "whitespace-variants": b' \n\t{ "cat" : "kernel" ,\r\n"name":"k" , "args" : { "grid" : [ 1 , 2 , 3 ] ,'
    b' "block" :[32,1,1] } } ,\n\t { } \r\n',
    "metrics-floats": kernel_with(b'"blocks per SM":0.5,"warps per SM":12.25,"est. achieved occupancy %":33.333332'),
    "metrics-ints": kernel_with(b'"blocks per SM":2,"warps per SM":64,"theoretical occupancy %":100'),
    "metrics-strings": kernel_with(b'"blocks per SM":"inf","warps per SM":"-nan","est. achieved occupancy %":"12"'),
    "metrics-marked": kernel_with(b'"blocks per SM":"__warpwizard_bare__inf"'),
    "metrics-full-precision": kernel_with(b'"blocks per SM":135.51515197753906,"warps per SM":31.030303'),
    "grid-shapes": kernel_with(b'"grid":[1.0,2,3],"block":["1","2","3"]'),
    "grid-empty-and-object": kernel_with(b'"grid":[],"block":{"x":1,"y":[]}'.replace(b',"y":[]', b"")),
    "stream-list-object": b'{"cat":"gpu_memcpy","name":"m","ts":1,"dur":1,"args":{"stream":[1,2],"device":"0"}}',
    "occupancy-object": kernel_with(
        b'"occupancy":{"activeBlocksPerMultiprocessor":4,"limitingFactors":"regs","blockLimitRegs":8}'
    ),
    "occupancy-duplicate-inner-key": kernel_with(b'"occupancy":{"blockLimitRegs":1,"blockLimitRegs":2}'),
    "occupancy-empty": kernel_with(b'"occupancy":{}'),
    "input-dims-nested": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"Input Dims":[[2, 3], [[1]], []],'
    b'"Input type":["float",""],"Call stack":"a.py(1): f;b.py(2): g"}}',
    "input-dims-64-deep": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"Input Dims":'
    + b"[" * 64
    + b"]" * 64
    + b"}}",
    "unknown-key-64-deep": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"x":' + b"[" * 64 + b"]" * 64 + b"}",
    "unknown-duplicate-key": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"id":1,"id":2,"args":{"x":1,"x":2}}',
    "unknown-values": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"x":[1,"a",{"b":[null,true,false]}],"y":-2.5e-3}',
    "counters": b'{"ph":"C","name":"c","pid":"GPU 0 Counters","tid":0,"ts":5,"args":{"c":1.5}}',
    "flow": b'{"ph":"f","id":9,"pid":0,"tid":7,"ts":5,"cat":"ac2g","name":"ac2g","bp":"e"}',
    "profiler-step": b'{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":1,"dur":9}',
    "python-function": b'{"ph":"X","cat":"python_function","name":"f","pid":1,"tid":1,"ts":1,"dur":9}',
    "overhead": b'{"ph":"X","cat":"overhead","name":"o","pid":-1,"tid":0,"ts":1,"dur":9,"args":{"correlation":4}}',
    "many-events": b",".join(
        [GOOD, op_at(b"7"), kernel_with(b'"correlation":3'), GOOD, op_at(b"8")] * 120
    ),  # past the first 256 spans
    "many-distinct-names": b",".join(  # past the 2,048 slots of the second pass's strings
        b'{"cat":"cpu_op","name":"n%d","pid":1,"tid":%d,"ts":%d,"dur":1}' % (i, i % 5, i) for i in range(3000)
    ),
    "many-categories": b",".join(b'{"cat":"c%d","name":"n","ts":%d,"dur":1}' % (i % 40, i) for i in range(120)),
}

# each declined row is also tried between good events: the first pass checks the whole block before anything lands
DECLINED: dict[str, bytes] = {
    "escape-in-name": b'{"cat":"cpu_op","name":"a\\nb","ts":1,"dur":1}',
    "unicode-escape": b'{"cat":"cpu_op","name":"\\u0041","ts":1,"dur":1}',
    "escape-in-unknown-value": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"x":"\\""}',
    "escape-in-key": b'{"cat":"cpu_op","na\\u006de":"a","ts":1,"dur":1}',
    "escape-in-args-key": kernel_with(b'"gr\\u0069d":[1,2,3]'),
    "tab-in-a-string": b'{"cat":"cpu_op","name":"a\tb","ts":1,"dur":1}',
    "nul-in-a-string": b'{"cat":"cpu_op","name":"a\x00b","ts":1,"dur":1}',
    "invalid-byte-ff": b'{"cat":"cpu_op","name":"a\xffb","ts":1,"dur":1}',
    "overlong-nul": b'{"cat":"cpu_op","name":"\xc0\x80","ts":1,"dur":1}',
    "surrogate": b'{"cat":"cpu_op","name":"\xed\xa0\x80","ts":1,"dur":1}',
    "past-u10ffff": b'{"cat":"cpu_op","name":"\xf4\x90\x80\x80","ts":1,"dur":1}',
    "cut-multibyte": b'{"cat":"cpu_op","name":"\xe6\x97","ts":1,"dur":1}',
    "invalid-utf8-in-unknown": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"x":"\xff"}',
    "leading-zero": op_at(b"007"),
    "negative-leading-zero": op_at(b"-007"),
    "double-zero": op_at(b"00"),
    "minus-zero-int": op_at(b"-0"),
    "minus-zero-int-in-args": kernel_with(b'"correlation":-0'),
    "19-digit-int": op_at(b"1234567890123456789"),
    "25-digit-int-in-args": kernel_with(b'"correlation":1234567890123456789012345'),
    "int64-min": kernel_with(b'"correlation":-9223372036854775808'),
    "overflow": op_at(b"1e400"),
    "negative-overflow": kernel_with(b'"blocks per SM":-1e400'),
    "just-past-max": op_at(b"1.7976931348623159e308"),
    "subnormal": op_at(b"1e-310"),
    "smallest-subnormal": op_at(b"2.4703282292062328e-324"),
    "number-over-40-chars": op_at(b"0." + b"1" * 40),
    "bare-nan": kernel_with(b'"blocks per SM":NaN'),
    "bare-inf": kernel_with(b'"warps per SM":inf'),
    "bare-minus-infinity": kernel_with(b'"est. achieved occupancy %":-Infinity'),
    "bare-nan-in-ts": op_at(b"nan"),
    "plus-sign": op_at(b"+1"),
    "dot-first": op_at(b".5"),
    "dot-last": op_at(b"1."),
    "bare-exponent": op_at(b"1e"),
    "hex": op_at(b"0x10"),
    "duplicate-ts": b'{"cat":"cpu_op","name":"a","ts":1,"ts":2,"dur":1}',
    "duplicate-cat": b'{"cat":"cpu_op","cat":"kernel","name":"a","ts":1,"dur":1}',
    "duplicate-args": b'{"cat":"kernel","name":"a","ts":1,"dur":1,"args":{},"args":null}',
    "duplicate-args-key": kernel_with(b'"correlation":1,"correlation":2'),
    "duplicate-raw-key": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"Input Dims":[],"Input Dims":[[1]]}}',
    "cat-int": b'{"cat":5,"name":"a","ts":1,"dur":1}',
    "cat-list": b'{"cat":["kernel"],"name":"a","ts":1,"dur":1}',
    "pid-float": b'{"cat":"cpu_op","name":"a","pid":1.5,"ts":1,"dur":1}',
    "pid-integral-float": b'{"cat":"cpu_op","name":"a","pid":1.0,"ts":1,"dur":1}',
    "tid-true": b'{"cat":"cpu_op","name":"a","tid":true,"ts":1,"dur":1}',
    "tid-object": b'{"cat":"cpu_op","name":"a","tid":{},"ts":1,"dur":1}',
    "ts-true": op_at(b"true"),
    "dur-list": op_at(b"1", b"[]"),
    "name-object": b'{"cat":"cpu_op","name":{},"ts":1,"dur":1}',
    "name-false": b'{"cat":"cpu_op","name":false,"ts":1,"dur":1}',
    "args-list": b'{"cat":"kernel","name":"a","ts":1,"dur":1,"args":[]}',
    "args-int": b'{"cat":"kernel","name":"a","ts":1,"dur":1,"args":5}',
    "args-string": b'{"cat":"kernel","name":"a","ts":1,"dur":1,"args":"x"}',
    "grid-nested-object": kernel_with(b'"grid":{"x":{"y":1}}'),
    "grid-nested-list": kernel_with(b'"grid":[[1],2,3]'),
    "stream-nested": b'{"cat":"gpu_memcpy","name":"m","ts":1,"dur":1,"args":{"stream":[[7]]}}',
    "occupancy-nested": kernel_with(b'"occupancy":{"blockLimitRegs":[1]}'),
    "unknown-65-deep": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"x":' + b"[" * 65 + b"]" * 65 + b"}",
    "input-dims-65-deep": b'{"cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"Input Dims":'
    + b"[" * 65
    + b"]" * 65
    + b"}}",
    "form-feed": b'{"cat":"cpu_op",\x0c"name":"a","ts":1,"dur":1}',
    "single-quotes": b"{'cat':'cpu_op'}",
    "literal-cut": b'{"cat":"cpu_op","name":nul,"ts":1,"dur":1}',
    "literal-run-on": b'{"cat":"cpu_op","name":nullx,"ts":1,"dur":1}',
    "trailing-comma-in-event": b'{"cat":"cpu_op","name":"a",}',
    "trailing-comma-in-list": kernel_with(b'"grid":[1,2,3,]'),
    "missing-colon": b'{"cat" "cpu_op"}',
    "unquoted-key": b"{cat:1}",
    "not-an-object": b"5",
    "a-list": b"[]",
    "no-comma-between-events": GOOD + GOOD,
    "trailing-comma-in-block": GOOD + b",",
    "leading-comma": b"," + GOOD,
    "closing-bracket": GOOD + b"]",
    "cut-event": b'{"cat":"cpu_op","name":"a"',
    "empty-block": b"",
    "whitespace-block": b" \n\t ",
}


@pytest.mark.parametrize("preload", [False, True], ids=["fresh", "preloaded"])
@pytest.mark.parametrize("name", TAKEN)
def test_blocks_the_scanner_takes_are_kept_as_msgspec_keeps_them(name: str, preload: bool) -> None:
    took, ours, reference = both_ways(TAKEN[name], preload)
    assert took, "declined"
    assert ours == reference


@pytest.mark.parametrize("name", DECLINED)
def test_blocks_the_scanner_declines_change_nothing(name: str) -> None:
    bad = DECLINED[name]
    for block in (bad, GOOD + b"," + bad, bad + b"," + GOOD, b",".join([GOOD, kernel_with(b""), bad, GOOD])):
        for preload in (False, True):
            took, ours, reference = both_ways(block, preload)
            assert not took, block
            assert ours == reference


class Keeping(Collector):
    """A collector whose complete-event and GPU-op handlers (which the core calls in Python) keep what they are
    handed: the event, or only its args."""

    def __init__(self, contents: TraceContents, only_args: bool = False) -> None:
        super().__init__(contents)
        self.only_args = only_args
        self.seen: list[Any] = []

    def _complete(self, ev: Event) -> None:
        self.seen.append(ev.args if self.only_args else ev)
        super()._complete(ev)

    def _gpu_op(self, ev: Event) -> None:
        self.seen.append(ev.args if self.only_args else ev)
        super()._gpu_op(ev)


KEPT_BLOCK = b",".join([
    b'{"cat":"user_annotation","name":"a","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":5,"grid":[1,2,3]}}',
    b'{"cat":"gpu_memcpy","name":"m","pid":0,"tid":7,"ts":3,"dur":1,"args":{"stream":[1],"Input Dims":[[1]]}}',
    b'{"cat":"Trace","name":"b","pid":"Spans","ts":4.5,"dur":1}',
    b'{"cat":"gpu_memset","name":"s","ts":6,"dur":1,"args":{}}',
    b'{"cat":"user_annotation","name":"c","ts":7,"dur":1,"args":null}',
])  # fmt: skip


@pytest.mark.parametrize("only_args", [False, True], ids=["events", "args"])
def test_a_collector_that_keeps_events_collects_the_same(only_args: bool) -> None:
    """The scanner reuses one Event and one EventArgs from event to event, and makes fresh ones where something
    kept a reference: the tables are the msgspec path's whatever a handler keeps."""
    ours, reference = Keeping(TraceContents(path=""), only_args), Keeping(TraceContents(path=""), only_args)
    assert ours.add_bytes(KEPT_BLOCK)
    assert msgspec_way(reference, KEPT_BLOCK)
    assert len(ours.seen) == len(reference.seen) == 5
    ours.seen, reference.seen = [], []  # what they kept: the test below
    assert kept(ours) == kept(reference)


@pytest.mark.parametrize("only_args", [False, True], ids=["events", "args"])
def test_what_a_handler_keeps_is_the_event_as_msgspec_decoded_it(only_args: bool) -> None:
    """Minimal: one user annotation (a complete event: the core calls ``_complete`` in Python). Kept whole, the
    scanner's Event reads ``Event(cat=None, name=None, ..., args=None)`` after the block; its args kept, all None."""
    block = b'{"cat":"user_annotation","name":"a","ts":1,"dur":2,"args":{"correlation":5}}'
    ours, reference = Keeping(TraceContents(path=""), only_args), Keeping(TraceContents(path=""), only_args)
    assert ours.add_bytes(block)
    assert msgspec_way(reference, block)
    assert deep_state(ours.seen) == deep_state(reference.seen)


class Marking(Collector):
    """A collector whose complete-event handler writes a field the event did not have."""

    def _complete(self, ev: Event) -> None:
        if ev.name == "first":
            ev.pid = "marked"
        super()._complete(ev)


def test_a_field_a_handler_writes_does_not_reach_the_next_event() -> None:
    """Minimal: two user annotations without a pid; the handler gives the first one a pid. The scanner's second
    annotation reads ``('marked', None, 3.0, 4.0, 'second')``, msgspec's ``(None, None, 3.0, 4.0, 'second')``."""
    block = b'{"cat":"user_annotation","name":"first","ts":1,"dur":2},{"cat":"user_annotation","name":"second",'
    block += b'"ts":3,"dur":1}'
    ours, reference = Marking(TraceContents(path="")), Marking(TraceContents(path=""))
    assert ours.add_bytes(block)
    assert msgspec_way(reference, block)
    assert reference.c.timeline.annotations[1][0] is None
    assert kept(ours) == kept(reference)


class RefMarking(Collector):
    """A collector whose op handler's Python part (``_op_ref``, which the core calls for an op it has not seen)
    writes a field the event did not have."""

    def _op_ref(self, ev: Event) -> int:
        if ev.name == "first":
            ev.tid = 99
        return super()._op_ref(ev)


def test_a_field_the_op_refs_python_writes_does_not_reach_the_next_event() -> None:
    """The scanner clears only the fields an event had, unless Python code saw the event (the Python handlers, and
    ``_op_ref`` from the compiled op handler). Minimal: two ops without a tid; ``_op_ref`` gives the first one a
    tid. Cleared as the scanner's fields only, the second op lands in thread (1, 99), not msgspec's (1, None)."""
    block = b'{"cat":"cpu_op","name":"first","pid":1,"ts":1,"dur":2},{"cat":"cpu_op","name":"second","pid":1,'
    block += b'"ts":3,"dur":1}'
    ours, reference = RefMarking(TraceContents(path="")), RefMarking(TraceContents(path=""))
    assert ours.add_bytes(block)
    assert msgspec_way(reference, block)
    assert list(reference.c.ops._threads) == [(1, 99), (1, None)]
    assert kept(ours) == kept(reference)


def op(ts: int, args: str | None = None, name: str = "mm") -> bytes:
    """A cpu_op's JSON, with these args' members (None: no args)."""
    more = "" if args is None else f',"args":{{{args}}}'
    return f'{{"cat":"cpu_op","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":1{more}}}'.encode()


OPS_BLOCK = b",".join([
    op(1, '"Input Dims":[[1,2]],"Input type":["float"]'),
    op(2, '"Input Dims":[[2,1]],"Input type":["float"]'),  # dims of the same length, other bytes
    op(3, '"Input Dims":[[1,2]],"Input type":["int32"]'),
    op(4, '"Input Dims":[[1,2]],"Input type":["float"],"Call stack":"a;b"'),
    op(5, '"Input Dims":[[1,2]],"Input type":["float"]'),  # the first again
    op(6),
    op(7, ""),  # the key of no args: (name, b"", b"", None)
    op(8, '"Input dims":[[1,2]],"Input type":["float"]'),  # the old spelling: the first's key
    op(9, '"Input Dims":[[2,1]],"Input type":["float"]'),
    op(10, '"Input Dims":[[1,2]],"Input type":["float"],"Call stack":["a"]'),  # a stack not a str: None
    op(11, name="x" * MAX_NAME), op(12, name="x" * MAX_NAME + "y"),  # cut to MAX_NAME: one key
])  # fmt: skip


def test_repeated_op_keys_get_the_ref_msgspecs_way_gives() -> None:
    """The core keeps the last op keys it looked up (op_key_ref) and answers a key with the same name and stack
    objects and the same bytes from there. Ops whose keys differ in one part each, and keys met again, get
    the refs the twin gives them: op 1 ``mm [[1,2]] float``, op 2 a new key, op 5 op 1's, op 7 op 6's,
    op 8 op 1's (the old spelling of the dims), op 9 op 2's, op 10 op 1's, op 12 op 11's."""
    ours, reference = Collector(TraceContents(path="")), Collector(TraceContents(path=""))
    assert ours.add_bytes(OPS_BLOCK)
    assert msgspec_way(reference, OPS_BLOCK)
    (refs,) = [list(t.refs) for t in reference.c.ops._threads.values()]
    assert refs == [0, 1, 2, 3, 0, 4, 4, 0, 1, 0, 5, 5]
    assert kept(ours) == kept(reference)


def launch(ts: int, name: str = "k", grid: str = "[4,1,1]", **metrics: str) -> bytes:
    """A kernel's JSON: its grid and metrics as written (the blocks per SM 1.5 unless given)."""
    values = {"bps": "1.5", "wps": "12", "occ": "25", **metrics}
    args = (f'"device":0,"stream":7,"correlation":{ts},"registers per thread":32,"shared memory":0,'
            f'"blocks per SM":{values["bps"]},"warps per SM":{values["wps"]},'
            f'"est. achieved occupancy %":{values["occ"]},"grid":{grid},"block":[128,1,1]')  # fmt: skip
    return f'{{"cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{ts},"dur":2,"args":{{{args}}}}}'.encode()


KERNELS_BLOCK = b",".join([
    launch(1), launch(2),  # the same raw values: the second from the core's slot
    launch(3, bps="2"), launch(4, bps="2.0"),  # an int, then the float equal to it: one shape, two raw values
    launch(5, bps="0.0"), launch(6, bps="-0.0"), launch(7, bps="0.0"),  # -0.0 is 0.0 to the tables, not to a slot
    launch(8, bps='"inf"'), launch(9, bps='"inf"'),  # not a plain number: counted at every launch, slot or not
    launch(10, grid="[4,1,2]"), launch(11), launch(12, grid="[4,1,2]"),
    launch(13, name="x" * MAX_NAME + "a"), launch(14, name="x" * MAX_NAME + "b"),  # cut: one shape
])  # fmt: skip


def test_kernels_met_again_get_the_shapes_the_twin_gives() -> None:
    """The core keeps the last kernels' raw values with the shape they made (kernel_slot) and gives a kernel with
    the same values that shape. Values that differ but make one shape (2 and 2.0, 0.0 and -0.0, names cut to
    MAX_NAME), a metric written as a string (counted at each launch), and grids met in turn: the tables and the
    non-finite counts are the twin's; 9 shapes for the 14 launches."""
    ours, reference = Collector(TraceContents(path="")), Collector(TraceContents(path=""))
    assert ours.add_bytes(KERNELS_BLOCK)
    assert msgspec_way(reference, KERNELS_BLOCK)
    assert list(reference.c.kernels._shape) == [0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 0, 4, 5, 5]
    assert reference.c.non_finite == Counter({"quoted": 2})
    assert kept(ours) == kept(reference)


def test_a_kernel_slot_serves_the_table_it_was_made_for() -> None:
    """Two collectors in turn (as two reads, or a rank's pieces): the slots the first filled do not answer the
    second. Minimal: the first meets kernels k then j (shapes 0 and 1), the second j alone, its shape 0."""
    first, second = Collector(TraceContents(path="")), Collector(TraceContents(path=""))
    assert first.add_bytes(launch(1) + b"," + launch(2, name="j"))
    assert second.add_bytes(launch(3, name="j"))
    assert list(first.c.kernels._shape) == [0, 1] and list(second.c.kernels._shape) == [0]
    reference = Collector(TraceContents(path=""))
    assert msgspec_way(reference, launch(3, name="j"))
    assert kept(second) == kept(reference)


def kernel_event(ts: int, name: str = "k", grid: list[int] | None = None) -> Event:
    """A kernel as the msgspec decoder makes it, for Collector.add."""
    args = EventArgs(correlation=ts, device=0, stream=7, grid=[4, 1, 1] if grid is None else grid,
                     block=[128, 1, 1], registers=32, shared_memory=0, blocks_per_sm=1.5, warps_per_sm=12,
                     occupancy=25)  # fmt: skip
    return Event(cat="kernel", name=name, pid=0, tid=7, ts=float(ts), dur=2.0, args=args)


def test_a_grid_changed_in_place_between_adds_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's one grid list, changed in place before each add: the slots keep a grid as the tuple of its ints,
    never the list (matched as the list itself, each value after the first that fell in a filled set got that
    set's old shape). The twin's 599 grids, in order."""

    def run() -> Collector:
        grid, collector = [1, 1, 1], Collector(TraceContents(path=""))
        for v in range(1, 600):
            grid[0] = v
            collector.add([kernel_event(v, grid=grid)])
        return collector

    ours = run()
    monkeypatch.setattr(collector_module, "collect_events", collector_module.pure_collect_events)
    theirs = run()
    assert [shape[5] for shape in theirs.c.kernels._shapes] == [(v, 1, 1) for v in range(1, 600)]
    assert kept(ours) == kept(theirs)


def test_a_second_collector_over_the_same_contents_fills_its_own_memos() -> None:
    """The slots serve one collector: another one, over the same contents (so the same kernel table), makes its
    shapes again, and its memos (names, reported values, grids) are filled as the twin's are."""

    def second(way: Callable[[Collector, bytes], bool]) -> Collector:
        contents = TraceContents(path="")
        for collector in (Collector(contents), Collector(contents)):
            assert way(collector, b",".join([launch(1), launch(2)]))
        return collector

    ours, theirs = second(lambda c, block: c.add_bytes(block)), second(msgspec_way)
    assert theirs._names == {"k": "k"} and len(theirs._reported) == 3
    assert kept(ours) == kept(theirs)


class Renaming(Collector):
    """A collector whose ``_value`` renames the first kernel while it is handled (once)."""

    target: Event | None = None

    def _value(self, value: Any) -> Any:
        if self.target is not None:
            self.target.name, self.target = "renamed", None
        return super()._value(value)


def test_a_subclass_is_asked_as_the_twin_asks_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The slots serve Collector itself: a subclass's methods are asked as the twin asks them. Minimal: the first
    of two kernels named k renamed by ``_value`` while it is handled: the shapes are renamed then k (a slot keyed
    on the fields read before the rename gave the second kernel the first's renamed shape)."""

    def run() -> Collector:
        events = [kernel_event(1), kernel_event(2)]
        collector = Renaming(TraceContents(path=""))
        collector.target = events[0]
        collector.add(events)
        return collector

    ours = run()
    monkeypatch.setattr(collector_module, "collect_events", collector_module.pure_collect_events)
    theirs = run()
    assert [theirs.c.kernels._shapes[i][0] for i in theirs.c.kernels._shape] == ["renamed", "k"]
    assert kept(ours) == kept(theirs)


@pytest.fixture
def rebound_as_int(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[Any], Any]], None]]:
    """Binds the core to a wrapper of ``as_int`` (the Python the kernel handler calls for a registers count that is
    no int, after the kernel's grid is read), and back to the module's own after the test."""

    def bind(hook: Callable[[Any], Any]) -> None:
        monkeypatch.setattr(collector_module, "as_int", hook)
        assert collector_module.compiled_collect_events() is not None  # json_bind again, with the hook

    yield bind
    monkeypatch.undo()
    assert collector_module.compiled_collect_events() is not None


def test_a_grid_changed_mid_kernel_keys_no_slot_on_its_new_value(
    rebound_as_int: Callable[[Callable[[Any], Any]], None],
) -> None:
    """Python code run while a kernel is handled (``as_int`` of a registers count written as text) changes its grid
    list in place after its shape read it: the slot is keyed on the grid the shape was made of, so a later kernel
    of the new grid gets its own shape. 3,000 new grids (a slot keyed on the list's value when kept gave those
    whose kernels fell in the old grid's set of slots the old grid's shape)."""
    state: dict[str, Any] = {"target": None, "x": 0}

    def change(value: Any) -> Any:
        if state["target"] is not None:
            state["target"][0], state["target"] = state["x"], None
        return as_int(value)

    rebound_as_int(change)

    def kernel_of(ts: int, grid: list[int] | None = None) -> tuple[Event, EventArgs]:
        made = kernel_event(ts, grid=grid)
        assert made.args is not None
        made.args = msgspec.structs.replace(made.args, registers="32")
        return made, made.args

    for x in range(5, 3005):
        collector, (first, args) = Collector(TraceContents(path="")), kernel_of(1)
        state.update(target=args.grid, x=x)
        collector.add([first])
        assert state["target"] is None and args.grid == [x, 1, 1]
        collector.add([kernel_of(2, grid=[x, 1, 1])[0]])
        table = collector.c.kernels
        assert [table._shapes[i][5] for i in table._shape] == [(4, 1, 1), (x, 1, 1)], x


def test_a_collector_read_inside_the_slots_change_of_hands_leaves_no_reference() -> None:
    """A GC callback that reads a kernel into another collector B at each of the first collections of collector A's
    kernel (so inside the slots' change of hands to A, among other places): once the slots are emptied no weak
    reference to B is left (one was overwritten, leaked, where B's read ran inside A's), and each collector's
    table holds its own kernel's shape."""
    state: dict[str, Any] = {"starts": 0, "at": 0, "other": None}

    def read_other(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and state["other"] is not None:
            state["starts"] += 1
            if state["starts"] == state["at"]:
                other, state["other"] = state["other"], None
                other.add([kernel_event(50, name="b")])

    gc.callbacks.append(read_other)
    threshold = gc.get_threshold()
    try:
        for at in range(1, 40):
            collector_module.release_scan_arrays()
            first, other = Collector(TraceContents(path="")), Collector(TraceContents(path=""))
            state.update(starts=0, at=at, other=other)
            gc.set_threshold(1)
            try:
                first.add([kernel_event(1)])
            finally:
                gc.set_threshold(*threshold)
                fired, state["other"] = state["other"] is None, None
            collector_module.release_scan_arrays()
            assert weakref.getweakrefcount(other) == 0, at
            assert [s[0] for s in first.c.kernels._shapes] == ["k"]
            assert [s[0] for s in other.c.kernels._shapes] == (["b"] if fired else [])
    finally:
        gc.callbacks.remove(read_other)


def test_an_instance_hook_is_asked_as_the_twin_asks_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Collector whose ``_value`` is set on the instance (its type still Collector): the slots do not serve it,
    so the hook is asked for every kernel, as the twin asks it. Minimal: four kernels of one shape, ``_value``
    counting its calls and reporting the count: 12 calls and 4 shapes, as the twin's."""

    def run() -> tuple[Collector, list[Any]]:
        collector, calls = Collector(TraceContents(path="")), []

        def value(v: Any) -> Any:
            calls.append(v)
            return reported(float(len(calls)))

        collector._value = value  # type: ignore[method-assign,assignment]
        collector.add([kernel_event(i) for i in range(1, 5)])
        return collector, calls

    (ours, our_calls) = run()
    monkeypatch.setattr(collector_module, "collect_events", collector_module.pure_collect_events)
    (theirs, their_calls) = run()
    assert len(their_calls) == 12 and len(theirs.c.kernels._shapes) == 4
    assert our_calls == their_calls
    assert (list(ours.c.kernels._shape), ours.c.kernels._shapes) == (
        list(theirs.c.kernels._shape),
        theirs.c.kernels._shapes,
    )


def test_the_kernel_slots_keep_no_read_alive() -> None:
    """The slots hold a weak reference to their collector and a few hundred shapes, not its table: a read of 4,000
    distinct shapes, dropped, leaves less than a tenth of what it allocated."""
    block = b",".join(launch(i, grid=f"[{i},1,1]") for i in range(1, 4001))
    tracemalloc.start()
    try:
        assert Collector(TraceContents(path="")).add_bytes(block)  # the scanner's arrays kept for the next block
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        collector = Collector(TraceContents(path=""))
        assert collector.add_bytes(block)
        held = tracemalloc.get_traced_memory()[0] - before
        del collector
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held > 1 << 20 and left < held / 10, (held, left)


class Rewriting(Collector):
    """A collector whose ``_op_ref`` gives op "a"'s key the new ref of op "b" when it registers "b"."""

    def _op_ref(self, ev: Event) -> int:
        ref = super()._op_ref(ev)
        if ev.name == "b":
            for key in [key for key in self._op_refs if key[0] == "a"]:
                self._op_refs[key] = ref
        return ref


def test_an_op_ref_a_subclass_rewrites_is_read_again() -> None:
    """The op slots serve Collector's own ``_op_ref`` (which never rewrites a key's ref): a subclass's may, and its
    ops are looked up in op_refs each time. Minimal: ops a, a, b, a: refs 0, 0, 1, 1 (a slot kept for a said 0)."""
    block = b",".join([op(1, name="a"), op(2, name="a"), op(3, name="b"), op(4, name="a")])
    ours, reference = Rewriting(TraceContents(path="")), Rewriting(TraceContents(path=""))
    assert ours.add_bytes(block)
    assert msgspec_way(reference, block)
    (refs,) = [list(t.refs) for t in reference.c.ops._threads.values()]
    assert refs == [0, 0, 1, 1]
    assert kept(ours) == kept(reference)


class Raising(Collector):
    """A collector whose complete-event handler raises at the event named "boom" (as a signal's handler raises
    KeyboardInterrupt, or wizard.errors.TerminateSignal, in whatever Python code runs when the signal comes: inside
    scan_events, that is these handlers)."""

    error: type[BaseException] = ValueError

    def _complete(self, ev: Event) -> None:
        super()._complete(ev)
        if ev.name == "boom":
            raise self.error("boom")


RAISING_BLOCK = b",".join([
    b'{"cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}',
    b'{"cat":"user_annotation","name":"boom","ts":3,"dur":1}',
    b'{"cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":4,"dur":1}',
])  # fmt: skip


def test_an_error_in_a_handler_stops_the_block_where_msgspecs_way_stops() -> None:
    """What was collected before the error lands on both ways (the core flushes what it gathered)."""
    ours, reference = Raising(TraceContents(path="")), Raising(TraceContents(path=""))
    with pytest.raises(Exception):  # noqa: B017 - its type: the test below
        ours.add_bytes(RAISING_BLOCK)
    with pytest.raises(ValueError, match="boom"):
        msgspec_way(reference, RAISING_BLOCK)
    assert kept(ours) == kept(reference)


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_error_in_a_handler_reaches_the_caller_as_raised(error: type[BaseException]) -> None:
    ours = Raising(TraceContents(path=""))
    ours.error = error
    with pytest.raises(error):
        ours.add_bytes(b'{"cat":"user_annotation","name":"boom","ts":3,"dur":1}')


def test_a_signal_during_a_read_stays_an_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader's own collector: SIGTERM's handler raises TerminateSignal (a KeyboardInterrupt, which the command
    line turns into its INTERRUPTED status) in the first Python code that runs, here the complete-event handler."""
    path = tmp_path / "trace.json"
    path.write_text(trace_text(built({}), minified=False, nonfinite="quoted"), encoding="utf-8")

    def interrupted(self: Collector, ev: Event) -> None:
        raise TerminateSignal(15)

    monkeypatch.setattr(Collector, "_complete", interrupted)
    with pytest.raises(TerminateSignal):
        read_trace(path, config=ReaderConfig(workers=0))
    monkeypatch.setattr(collector_module, "scan_events", None)  # the msgspec way: the interrupt as raised
    with pytest.raises(TerminateSignal):
        read_trace(path, config=ReaderConfig(workers=0))


def test_a_block_of_distinct_categories_is_counted_in_linear_time() -> None:
    """A hostile block whose every event has a category of its own: the scanner's count of the block's categories
    found each among the distinct ones one by one, 80,000 of them in 20 s (the review); then a table of its own on a
    hash of the bytes, which crafted names drove back into quadratic time (a second review: 100,000 in 5 s).
    Past a block's first 16 categories they are now looked up by their str in a dict, as msgspec's way counts them
    (CPython's seeded hash): 200,000 take a few hundredths of a second, the same counts in the same order."""
    block = b",".join(b'{"cat":"c%x","ts":%d}' % (i, i) for i in range(200_000))
    ours, reference = Collector(TraceContents(path="")), Collector(TraceContents(path=""))
    started = time.process_time()
    assert ours.add_bytes(block)
    assert time.process_time() - started < budget(2.0)
    assert msgspec_way(reference, block)
    assert ours.c.timeline.categories == reference.c.timeline.categories
    assert list(ours.c.timeline.categories)[:3] == ["c0", "c1", "c2"]  # in the order first seen, as Counter's


# -- 3. random blocks, with mutations -----------------------------------------------------------------------------


def number(rng: random.Random) -> bytes:
    """A JSON number, spelled as profilers and hostile files do, mostly ones msgspec and Python read alike."""
    kind = rng.randrange(12)
    if kind == 0:
        return str(rng.randrange(-(10**6), 10**6)).encode()
    if kind == 1:
        return str(rng.randrange(10**14, 10**18) * rng.choice([1, -1])).encode()
    if kind == 2:
        return repr(rng.uniform(-1e6, 1e6)).encode()
    if kind == 3:
        return (f"%.{rng.choice([15, 16, 17])}g" % rng.uniform(0, 1e7)).encode()
    if kind == 4:
        text = f"%.{rng.randrange(1, 18)}e" % rng.uniform(-1e3, 1e3)
        return text.replace("e+0", rng.choice(["e+0", "E", "e"])).encode()
    if kind == 5:
        return rng.choice([b"1e-400", b"0e999", b"-0.0", b"0", b"1.5E+3", b"1e-7", b"0.1", b"0.30000000000000004",
                           b"1.7976931348623158e308", b"2.2250738585072014e-308", b"1e05"])  # fmt: skip
    if kind == 6:
        return b"%d.%d" % (rng.randrange(10 ** rng.randrange(1, 9)), rng.randrange(10 ** rng.randrange(1, 12)))
    if kind == 7:
        return repr(rng.random() * 10 ** rng.randrange(-30, 30)).encode()
    if kind == 8:
        return str(rng.randrange(-100, 100)).encode()
    if kind == 9:
        return b"0.%0*d" % (rng.randrange(14, 20), rng.randrange(10 ** rng.randrange(1, 19)))
    if kind == 10:
        return b"%d%s" % (rng.randrange(1, 10**15), rng.choice([b"e-5", b"e3", b"E+10", b"e-20", b".0", b".50"]))
    return repr(float(rng.randrange(1, 2**53)) / 2 ** rng.randrange(0, 60)).encode()


CATEGORIES = [b'"cpu_op"', b'"Operator"', b'"cuda_runtime"', b'"cuda_driver"', b'"Runtime"', b'"kernel"',
              b'"Kernel"', b'"python_function"', b'"gpu_memcpy"', b'"gpu_memset"', b'"Memcpy"', b'"user_annotation"',
              b'"gpu_user_annotation"', b'"ac2g"', b'"fwdbwd"', b'"Trace"', b'"overhead"',
              b'"cuda_profiler_range"', b"null"]  # fmt: skip
NAMES = [b'"aten::mm"', b'"k"', b'"ProfilerStep#3"', '"日本 é"'.encode(), b'""', b"42", b"4.5", b"null",
         b'"cudaLaunchKernel"', b'"x\x7f"', '"😀"'.encode()]  # fmt: skip
PIDS = [b"0", b"1", b"4242", b'"GPU 0 Counters"', b'"Spans"', b"-3", b"123456789012345678", b"null", b'"x"']
HOSTILE_NUMBERS = [b"007", b"-0", b"1e400", b"-1e400", b"1234567890123456789012345", b"1234567890123456789",
                   b"-9223372036854775808", b"NaN", b"nan", b"inf", b"-Infinity", b"1e-310", b"00", b"-007", b"+1",
                   b".5", b"1.", b"0x10"]  # fmt: skip

METRIC_TEXTS = (b'"inf"', b'"-nan"', b'"12.5"', b"null", b"true", b'"x"', b'"__warpwizard_bare__inf"')
DIMS = (b"[1, 2, 3]", b"[108,1,1]", b"[]", b"[1,2]", b'["1","2","3"]', b"[true,1,1]", b"null", b'"1,2,3"',
        b'{"x":1}', b"[1.0,2,3]")  # fmt: skip
INPUT_DIMS = (b"[[2, 3], [], [1]]", b"[]", b"[[[1]]]", b'"x"', b"null")
OCCUPANCIES = (b'{"activeBlocksPerMultiprocessor": 4, "limitingFactors": "regs"}', b"{}", b"[]", b"null", b'"x"',
               b'{"a":1,"a":2}', b'{"blockLimitRegs": 1.0}')  # fmt: skip
Pairs = list[tuple[bytes, Any]]  # an object's members in order: (key, value bytes, or ("args", its Pairs))


def metric(rng: random.Random) -> bytes:
    return rng.choice([number(rng), number(rng), *METRIC_TEXTS])


def dims_value(rng: random.Random) -> bytes:
    return rng.choice([b"[%s,%s,%s]" % (number(rng), number(rng), number(rng)), *DIMS])


def random_args(rng: random.Random) -> Pairs:
    makers: dict[bytes, Callable[[], bytes]] = {
        b"correlation": lambda: rng.choice([number(rng), b"7", b"null", b'"5"', b"true"]),
        b"device": lambda: rng.choice([b"0", b"1", number(rng), b'"0"']),
        b"stream": lambda: rng.choice([b"7", b'"s"', b"[1,2]", b'{"s":1}', number(rng)]),
        b"grid": lambda: dims_value(rng),
        b"block": lambda: dims_value(rng),
        b"registers per thread": lambda: metric(rng),
        b"shared memory": lambda: metric(rng),
        b"blocks per SM": lambda: metric(rng),
        b"warps per SM": lambda: metric(rng),
        b"est. achieved occupancy %": lambda: metric(rng),
        b"theoretical occupancy %": lambda: metric(rng),
        b"Input Dims": lambda: rng.choice([*INPUT_DIMS, b"[[%s]]" % number(rng)]),
        b"Input dims": lambda: rng.choice([b"[[7]]", b"[ ]"]),
        b"Input type": lambda: rng.choice([b'["float", "int"]', b"[]", b'["", "c10::Half"]']),
        b"Call stack": lambda: rng.choice([b'"a.py(1): f;b.py(2): g"', b"5", b"null", '"é;ü"'.encode()]),
        b"warpwizard mechanism": lambda: rng.choice([b'"A"', b"1", b"null"]),
        b"occupancy": lambda: rng.choice(OCCUPANCIES),
        b"original_stream": lambda: rng.choice([b"7", b'"s"', b"null"]),
        b"External id": lambda: number(rng),
        b"extra": lambda: rng.choice([b'{"deep": [[[1, {"x": [null, true, false]}]]]}', b'[1, "a", {}]', b'"z"']),
    }
    keys = [k for k in makers if rng.random() < 0.4]
    rng.shuffle(keys)
    return [(k, makers[k]()) for k in keys]


def random_event(rng: random.Random) -> Pairs:
    makers: dict[bytes, Callable[[], Any]] = {
        b"ph": lambda: rng.choice([b'"X"', b'"f"', b'"s"', b'"i"', b'"C"']),
        b"cat": lambda: rng.choice(CATEGORIES),
        b"name": lambda: rng.choice([*NAMES, number(rng)]),
        b"pid": lambda: rng.choice(PIDS),
        b"tid": lambda: rng.choice(PIDS),
        b"ts": lambda: rng.choice([number(rng), number(rng), b'"123.5"', b'"x"', b"null"]),
        b"dur": lambda: rng.choice([number(rng), number(rng), b'"4"', b"null"]),
        b"args": lambda: rng.choice([b"null", b"{}"]) if rng.random() < 0.1 else ("args", random_args(rng)),
        b"id": lambda: number(rng),
        b"bp": lambda: b'"e"',
    }
    keys = [k for k in makers if rng.random() < 0.85]
    rng.shuffle(keys)
    return [(k, makers[k]()) for k in keys]


def mutate(rng: random.Random, event: Pairs) -> str:
    """One hostile change to an event's members or its args' (in place); which kind, for the tally."""
    target = event
    if not target:
        return "none"
    i = rng.randrange(len(target))
    key, value = target[i]
    if isinstance(value, tuple) and value[1] and rng.random() < 0.6:
        target = value[1]
        i = rng.randrange(len(target))
        key, value = target[i]
    if isinstance(value, tuple):
        return "none"
    kind = rng.choice(["escape", "duplicate", "number", "utf8", "nested", "type", "control", "key-escape"])
    replacement = {
        "escape": b'"a\\nb"',
        "number": rng.choice(HOSTILE_NUMBERS),
        "utf8": rng.choice([b'"a\xffb"', b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xe6\x97"']),
        "nested": rng.choice([b'{"x":{"y":1}}', b"[[1],2,3]", b"[[[1]]]"]),
        "type": rng.choice([b"true", b"[]", b"{}", b"1.5", b'"s"', b"5"]),
        "control": b'"a\tb"',
    }
    if kind == "duplicate":
        target.insert(rng.randrange(len(target) + 1), (key, value))
    elif kind == "key-escape":
        target[i] = (key[:1] + b"\\u0041" + key[1:], value)
    else:
        target[i] = (key, replacement[kind])
    return kind


def spaces(rng: random.Random) -> bytes:
    return rng.choice([b"", b"", b"", b" ", b"\n", b"\t", b"\r\n", b"  "])


def written(rng: random.Random, members: Pairs) -> bytes:
    out = [b"{"]
    for i, (key, value) in enumerate(members):
        text = written(rng, value[1]) if isinstance(value, tuple) else value
        out.append((spaces(rng) + b"," if i else b"") + spaces(rng) + b'"' + key + b'"' + spaces(rng) + b":")
        out.append(spaces(rng) + text)
    out.append(spaces(rng) + b"}")
    return b"".join(out)


def random_block(rng: random.Random, mutations: Counter[str]) -> bytes:
    events = []
    for _ in range(rng.randrange(1, 8)):
        event = random_event(rng)
        if rng.random() < 0.15:
            mutations[mutate(rng, event)] += 1
        events.append(written(rng, event))
    return (spaces(rng) + b",").join(events)


def random_blocks(seed: int, count: int) -> Iterator[tuple[bytes, Counter[str]]]:
    rng = random.Random(seed)
    for _ in range(count):
        mutations: Counter[str] = Counter()
        yield random_block(rng, mutations), mutations


@pytest.mark.parametrize("seed", range(6))
def test_random_blocks_are_kept_as_msgspec_keeps_them_or_declined(seed: int) -> None:
    outcomes: Counter[bool] = Counter()
    declined_by: Counter[str] = Counter()
    for block, mutations in random_blocks(seed, 250):
        took, ours, reference = both_ways(block, preload=seed % 2 == 1)
        assert ours == reference, block
        outcomes[took] += 1
        if not took:
            declined_by.update(mutations)
    # not vacuous: most blocks taken, many declined, and declined for the mutations
    assert outcomes[True] > 100 and outcomes[False] > 30, outcomes
    assert len(declined_by) >= 4, declined_by


# -- 4. numbers from the JSON grammar, in every kind of field ------------------------------------------------------

JSON_NUMBER = r"-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,22})?([eE][+-]?[0-9]{1,3})?"


def number_block(text: bytes) -> bytes:
    """The number where the scanner reads it as Event's float (ts, dur), int|str (pid), str|int|float (name) and Any
    (args), in a kernel and a GPU op, and skipped (an unknown key, a Raw field)."""
    return b",".join([
        b'{"cat":"kernel","name":%s,"ts":%s,"dur":%s,"args":{"correlation":%s,"blocks per SM":%s,"grid":[%s,1,1],'
        b'"occupancy":{"blockLimitRegs":%s}}}' % ((text,) * 7),
        b'{"cat":"gpu_memcpy","name":"m","ts":%s,"dur":1,"args":{"stream":%s,"device":%s}}' % ((text,) * 3),
        b'{"cat":"cpu_op","name":"a","pid":%s,"ts":1,"dur":1,"id":%s,"args":{"Input Dims":[[%s]]}}' % ((text,) * 3),
    ])  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.from_regex(JSON_NUMBER, fullmatch=True),
    st.floats(allow_nan=False, allow_infinity=False).flatmap(
        lambda x: st.sampled_from([repr(x), f"{x:.15g}", f"{x:.16g}", f"{x:.17g}", f"{x:.15e}"])),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
))  # fmt: skip
def test_numbers_are_read_as_msgspec_reads_them_or_declined(text: str) -> None:
    block = number_block(text.encode())
    took, ours, reference = both_ways(block)
    assert ours == reference
    if took:  # the scanner took it: msgspec and Python read the number alike
        assert msgspec.json.decode(text.encode()) == json.loads(text)


def digit_runs() -> Iterator[bytes]:
    """Numbers of 1 to 24 digits around the core's eight-digit steps (wizard/_core.c, eight_digits): each digit in
    each place, the bytes either side of the digits' (``/`` 0x2F, ``:`` 0x3A, ``?`` 0x3F) in each of the first 16
    places, and each run followed by the bytes that end or continue a number."""
    for length in range(1, 25):
        yield b"9" * length
        yield b"1" + b"0" * (length - 1)
        yield (b"1234567890" * 3)[:length]
        for place in range(1, min(length, 16)):
            for byte in b"/:?":
                yield b"1" * place + bytes([byte]) + b"1" * (length - place - 1)
        for after in (b".5", b"e3", b"E-2", b" "):
            yield b"8" * length + after


def test_digit_runs_are_read_as_msgspec_reads_them_or_declined() -> None:
    """Every run of digit_runs in each field kind, and as the last value before the block's end (the eight-digit
    steps read ahead only where 16 bytes are left: one byte short of that, exactly that, and more)."""
    taken = set()
    for text in digit_runs():
        took, ours, reference = both_ways(number_block(text))
        assert ours == reference, text
        if took:
            taken.add(text)
        for pad in (b"", b" ", b"  " * 8):
            block = b'{"cat":"kernel","name":"k","ts":1,"dur":%s%s}' % (text, pad)
            took, ours, reference = both_ways(block)
            assert ours == reference, (text, pad)
    # not vacuous: the scanner took each plain integer of up to 18 digits (a name, a pid and a ts alike), and only those
    assert taken == {t for t in digit_runs() if t.rstrip(b" ").isdigit() and len(t.rstrip(b" ")) <= 18}


# the one-division edges (clinger_exact): the digits as an integer at 2**53 and one past it, 19 digits and 20
# (2**64 + 1, which a 64-bit integer wraps to 1), a fraction of 16-19 digits, ties a double rounding would show, zeros;
# negative ones and ones below 1 (scan_number's path)
CLINGER_EDGES = [b"9007199254740.992", b"9007199254740.993", b"900719925474099.2", b"900719925474099.3",
                 b"9007199254740991.0", b"9007199254740993.0", b"1.234567890123456789", b"1.2345678901234567891",
                 b"0.1234567890123456789", b"1.0000000000000000001", b"9.999999999999999999", b"4503599627370495.5",
                 b"4503599627370496.5", b"1.7976931348623157", b"0.3", b"2.675", b"1365627862757.064", b"5e-1",
                 b"1844674407370955161.7", b"-1844674407370955161.7", b"-0.0", b"0.000", b"-9007199254740.993",
                 b"-1365627862757.064", b"0.1234567890123456", b"0.9007199254740993", b"-0.0000000000000000001",
                 b"-0.9007199254740992"]  # fmt: skip


def test_decimal_timestamps_are_divided_once_only_where_that_is_exact() -> None:
    """A number with a point whose digits, read as an integer, are at most 2**53 (and at most 19 digits) is that
    integer divided by 10**k, once (wizard/_core.c, clinger_exact: both are doubles exactly, so the quotient is
    correctly rounded); past either bound it is the full parse. Each edge either side, and 3,000 random timestamps
    of PyTorch 2's shape (13 digits, a point, three) and of 15-19 digits, read in every field kind as msgspec reads
    them, and as Python's float reads them."""
    rng = random.Random(53)
    texts = list(CLINGER_EDGES)
    texts += [b"%d.%03d" % (rng.randrange(10**12, 10**13), rng.randrange(1000)) for _ in range(1_000)]
    for digits in range(15, 20):
        for _ in range(400):
            whole = rng.randrange(1, digits)
            number = rng.randrange(10 ** (digits - 1), 10**digits)
            text = b"%d" % number
            texts.append(text[:whole] + b"." + text[whole:])
    for text in texts:
        assert msgspec.json.decode(text) == float(text), text
    for at in range(0, len(texts), 500):
        took, ours, reference = both_ways(b",".join(float_block(t) for t in texts[at : at + 500]))
        assert took and ours == reference
    took, ours, reference = both_ways(float_block(b"1."))  # no digit after the point: not JSON, declined
    assert not took and ours == reference


def float_block(text: bytes) -> bytes:
    """The number where the scanner reads it as a float: Event's ts and dur, a name (str|int|float), a kernel's
    blocks and warps per SM, and Any (an args key no field has)."""
    return (
        b'{"cat":"kernel","name":%s,"pid":1,"tid":7,"ts":%s,"dur":%s,"args":{"correlation":1,"blocks per SM":%s,'
        b'"warps per SM":%s,"extra":%s}}' % ((text,) * 6)
    )


def test_the_arrays_kept_for_the_next_block_are_freed_when_a_read_is_done(tmp_path: Path) -> None:
    """The core keeps a block's events and spans arrays for the next blocks (wizard/_core.c, block_take: up to
    three, a ScanAhead's two and the one collected), and frees them when the read's blocks are done
    (``release_scan_arrays``, from the reader's walk, which says the bytes it freed: the C library's allocator,
    which tracemalloc does not see, since the scanner's thread allocates them without the GIL). A block of 20,000
    kernels leaves at least their 20,000 entries of 8 bytes until then; a whole read, with and without the thread,
    leaves none."""
    if collector_module.scan_events is None:
        pytest.skip("the compiled core's scanner is not bound here (WARPWIZARD_PURE=1, or not built)")
    block = b",".join([kernel_with(b'"correlation":9,"grid":[1,2,3]')] * 20_000)
    collector_module.release_scan_arrays()
    ours = fresh()
    assert ours.add_bytes(block)
    assert collector_module.release_scan_arrays() >= 20_000 * 8  # an event's entry is 8 bytes, its spans more
    assert collector_module.release_scan_arrays() == 0
    path = tmp_path / "trace.json"
    path.write_bytes(b'{"traceEvents":[' + block + b"]}")
    for ahead in (True, False):
        read_trace(path, config=ReaderConfig(workers=0, block_size=64 << 10, ahead=ahead))
        assert collector_module.release_scan_arrays() == 0
