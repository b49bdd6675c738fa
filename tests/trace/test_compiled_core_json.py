"""The compiled core's JSON event collection (wizard/_core.c, ``collect_events``) against its pure-Python twin
(wizard/trace/read/collector.py, ``pure_collect_events``), issue 48 item 2: the same tables, the same bounds
(MAX_NAME, INT_LIMIT), the same values kept and interned, from the same decoded events. Builder-made traces, random
events with every field of every type the decoder lets through (ints, floats, bools, text, None, ints past int64,
nan and inf, names past MAX_NAME, fields missing), and events other readers build (integer times); then whole
``trace inspect --json`` of shared traces, byte for byte, with the collector's function swapped for the twin.

The twin is the second computation: the Python loop that came first, kept as the fallback (``WARPWIZARD_PURE=1``,
or no compiler where warpwizard was installed). The counts are checked a third way, from the events' JSON here.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import TRACES, needs_shared
from tests.output_digests import output
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.read import collector as collector_module
from wizard.trace.read.collector import MAX_NAME, Collector, TraceContents, pure_collect_events
from wizard.trace.read.events import BARE_MARK, EVENTS_DECODER, Event, EventArgs, decode_block, event_from_dict
from wizard.trace.read.records import NO_CORRELATION

pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
# what collector.py binds at import, unless WARPWIZARD_PURE=1 (then the twin is compared with the core all the same)
bound = collector_module.compiled_collect_events()
if bound is None:
    pytest.skip("the compiled core here was built before collect_events", allow_module_level=True)
compiled_collect: Callable[[Collector, list[Event]], None] = bound


def snapshot(contents: TraceContents, collector: Collector) -> str:
    """Everything the read keeps, as text that tells 1 from 1.0 and True, nan from None, -0.0 from 0.0, and
    dictionaries' order (ids are handed out in it)."""
    runtime, timeline = contents.runtime, contents.timeline
    table = contents.kernels
    kept: dict[str, Any] = {
        "kernels": list(table),
        "kernel_arrays": (table._ts, table._dur, table._corr, table._shape, table._shapes, table._shape_ids),
        "runtime": (runtime.correlations, runtime.threads, runtime.starts, runtime.names, runtime.last_end,
                    runtime._thread_keys, runtime._thread_ids, runtime._name_list, runtime._name_ids),
        "ops": _intervals(contents.ops),
        "python": _intervals(contents.python),
        "gpu_ops": (timeline.gpu_ops.ts, timeline.gpu_ops.dur, timeline.gpu_ops.corr, timeline.gpu_ops.shape,
                    timeline.gpu_ops.shapes),
        "slices": (timeline.slices.ts, timeline.slices.dur, timeline.slices.row, timeline.slices.rows),
        "timeline": (timeline.categories, timeline.first_ts, timeline.last_end, timeline.steps,
                     timeline.profiler_ranges, timeline.unlinked_ranges, timeline.annotations,
                     timeline.gpu_annotations, timeline.overheads),
        "contents": (contents.non_finite, contents.events, contents.last_ts, contents.full_precision,
                     contents.rounded, contents.counter_events),
        "memo": (collector._names, collector._op_refs, collector._reported, collector._dim_tuples,
                 collector._frame_refs),
    }  # fmt: skip
    return repr(kept)


def _intervals(index: Any) -> Any:
    threads = {key: (t.starts, t.ends, t.refs, t.sorted_) for key, t in index._threads.items()}
    return threads, index._descriptors


def collect(
    function: Callable[[Collector, list[Event]], None], blocks: list[list[Event]]
) -> tuple[TraceContents, Collector, BaseException | None]:
    """The blocks collected with one of the two functions in the collector's place: what it kept, and the error
    that stopped it (then what was kept before it)."""
    contents = TraceContents(path="")
    collector = Collector(contents)
    saved = collector_module.collect_events
    collector_module.collect_events = function
    error = None
    try:
        for block in blocks:
            collector.add(block)
    except Exception as exc:  # noqa: BLE001 - compared between the two paths, type and words
        error = exc
    finally:
        collector_module.collect_events = saved
    return contents, collector, error


def assert_same(blocks: list[list[Event]], error: Exception | None = None) -> TraceContents:
    """Both paths keep the same from these blocks, and stop at the same error (``error``, or none)."""
    ours, our_collector, our_error = collect(compiled_collect, blocks)
    twin, twin_collector, twin_error = collect(pure_collect_events, blocks)
    assert repr(our_error) == repr(twin_error) == repr(error)
    assert snapshot(ours, our_collector) == snapshot(twin, twin_collector)
    for record in ours.kernels:  # interned: one string a distinct name, the collector's own
        assert record.name is our_collector._names[record.name]
    return ours


def decoded(events: list[dict[str, Any]], bare: bool = False) -> list[Event]:
    """Events as the reader decodes them: msgspec's fast path, else the exact path's dicts (as reader.py does)."""
    text = ",".join(json.dumps(e, allow_nan=True) for e in events)
    if bare:  # bare inf/nan, as 2022-2023 Kineto wrote them: the reader quotes them with a marker
        text = text.replace("Infinity", "inf").replace("NaN", "nan")
    block = decode_block(EVENTS_DECODER, text.encode())
    if block is not None:
        return block
    return [ev for ev in (event_from_dict(e) for e in events) if ev is not None]


# -- builder-made traces ---------------------------------------------------------------------------------------


def builder_events(**options: Any) -> list[dict[str, Any]]:
    builder = TraceBuilder(**options)
    for spec in demo_launches():
        builder.add(spec)
    builder.add(KernelSpec("k" * (MAX_NAME + 10), (1, 2, 3), (64, 1, 1), op="op" * MAX_NAME))
    builder.add_memcpy()
    builder.add_gpu_annotation("annotation", builder.clock, 5.0)
    builder.add_overhead("Overhead", 3.0, correlation=7)
    builder.add_counter("GPU 0 Counters", builder.clock, 1.5)
    builder.add_cpu_op("aten::mm")
    builder.span("ProfilerStep#1", [KernelSpec("gemm", (8, 1, 1), (128, 1, 1))])
    events: list[dict[str, Any]] = builder.document()["traceEvents"]
    return events


@pytest.mark.parametrize(
    "options",
    [{}, {"era": "2021"}, {"kineto": "2.12"}, {"kineto": "2.14"}, {"gpu": "MI300X"}, {"nonfinite": "quoted"}],
    ids=["2024", "2021", "kineto-2.12", "kineto-2.14", "rocm", "quoted-nonfinite"],
)
def test_builder_traces_collect_the_same(options: dict[str, Any]) -> None:
    events = builder_events(**options)
    kept = assert_same([decoded(events[:7]), decoded(events[7:])])
    # the counts a third way, from the events as written
    cats = [e.get("cat") for e in events]
    kernel_cats, op_cats = ({"Kernel", "kernel"}, {"Operator", "cpu_op"})
    assert len(kept.kernels) == sum(c in kernel_cats for c in cats) > 0
    assert kept.ops.count == sum(c in op_cats for c in cats) > 0
    assert len(kept.runtime) == sum(c in {"Runtime", "cuda_runtime", "cuda_driver"} for c in cats) > 0
    assert kept.counter_events == sum(str(e.get("pid", "")).endswith(" Counters") and "dur" not in e for e in events)
    longest = max(len(record.name) for record in kept.kernels)
    assert longest == MAX_NAME  # the long name cut where it was read


def test_bare_nonfinite_metrics_counted_the_same() -> None:
    events = builder_events(nonfinite="bare")
    for event in events:
        if event.get("cat") == "kernel":
            event["args"]["blocks per SM"] = math.inf
            event["args"]["est. achieved occupancy %"] = math.nan
    kept = assert_same([decoded(events, bare=True)])
    kernels = sum(e.get("cat") == "kernel" for e in events)
    assert kept.non_finite == {"bare": 2 * kernels}


# -- random events: every type in every field ------------------------------------------------------------------

HUGE = (2**63, -(2**63), 2**63 - 1, -(2**63) + 1, 2**70, -(2**70), 10**400)
SCALARS: tuple[Any, ...] = (
    None, 0, 1, -1, 7, 0.0, -0.0, 1.5, 12.0, math.inf, -math.inf, math.nan, True, False, "", "7", " 12 ", "1e3",
    "x", "inf", "-nan", f"{BARE_MARK}inf", f"{BARE_MARK}nan", "²", "9" * 30, *HUGE,
)  # fmt: skip
NAMES: tuple[Any, ...] = ("aten::mm", "cudaLaunchKernel", "n" * (MAX_NAME + 1), "é" * (MAX_NAME + 3), 5, 2.5, None, "")
CATS = ("cpu_op", "Operator", "cuda_runtime", "Runtime", "cuda_driver", "kernel", "Kernel", "python_function",
        "gpu_memcpy", "Memset", "user_annotation", "gpu_user_annotation", "overhead", "cuda_profiler_range",
        "ac2g", "Trace", None)  # fmt: skip
PIDS: tuple[Any, ...] = (0, 1, 4242, "GPU 0 Counters", "Spans", None, 2**70, "x Counters")


def dims(rng: random.Random) -> Any:
    return rng.choice([[1, 2, 3], [108, 1, 1], [1, 2], [1.0, 2, 3], ["1", "2", "3"], [True, 1, 1], [2**63, 1, 1],
                       [1, 2, 3, 4], "1,2,3", None, {"x": 1}, rng.choice(SCALARS)])  # fmt: skip


def random_args(rng: random.Random) -> dict[str, Any]:
    choices: dict[str, Callable[[], Any]] = {
        "correlation": lambda: rng.choice(SCALARS),
        "device": lambda: rng.choice(SCALARS),
        "stream": lambda: rng.choice([*SCALARS, [1, 2], {"s": 1}]),
        "grid": lambda: dims(rng),
        "block": lambda: dims(rng),
        "registers per thread": lambda: rng.choice(SCALARS),
        "shared memory": lambda: rng.choice(SCALARS),
        "blocks per SM": lambda: rng.choice(SCALARS),
        "warps per SM": lambda: rng.choice(SCALARS),
        "est. achieved occupancy %": lambda: rng.choice(SCALARS),
        "theoretical occupancy %": lambda: rng.choice(SCALARS),
        "Input Dims": lambda: rng.choice([[[2, 3]], [], [[1], [4, 5]], "x", None]),
        "Input dims": lambda: rng.choice([[[7]], []]),
        "Input type": lambda: rng.choice([["float"], [], ["int", ""]]),
        "Call stack": lambda: rng.choice(["a;b", 5, None]),
        "warpwizard mechanism": lambda: rng.choice(["A", 1, None]),
        "occupancy": lambda: rng.choice(
            [{"activeBlocksPerMultiprocessor": 4, "limitingFactors": "regs"}, {"blockLimitRegs": [1]}, [], None, "x"]
        ),
        "original_stream": lambda: rng.choice([None, None, 7, "s", [1]]),
    }
    return {key: make() for key, make in choices.items() if rng.random() < 0.6}


def random_event(rng: random.Random) -> dict[str, Any]:
    fields: dict[str, Callable[[], Any]] = {
        "cat": lambda: rng.choice(CATS),
        "name": lambda: rng.choice(NAMES) if rng.random() < 0.8 else rng.choice(SCALARS),
        "pid": lambda: rng.choice(PIDS),
        "tid": lambda: rng.choice(PIDS),
        "ts": lambda: rng.choice([rng.uniform(0, 1e6), rng.randrange(10**6), rng.choice(SCALARS)]),
        "dur": lambda: rng.choice([rng.uniform(0, 100), rng.randrange(100), rng.choice(SCALARS)]),
        "args": lambda: random_args(rng) if rng.random() < 0.9 else rng.choice([None, [], 3]),
        "ph": lambda: rng.choice(["X", "f", "s", "i"]),
    }
    event = {key: make() for key, make in fields.items() if rng.random() < 0.9}
    if event.get("name") == "aten::mm" and rng.random() < 0.3:
        event["name"] = f"ProfilerStep#{rng.randrange(5)}"
    return event


def random_blocks(seed: int) -> Iterator[list[dict[str, Any]]]:
    rng = random.Random(seed)
    for _ in range(rng.randrange(1, 6)):
        yield [random_event(rng) for _ in range(rng.randrange(0, 60))]


@pytest.mark.parametrize("seed", range(40))
def test_random_events_collect_the_same(seed: int) -> None:
    blocks = list(random_blocks(seed))
    assert_same([decoded(block) for block in blocks])  # the decoder's way: fast path or exact path
    exact = [[ev for ev in map(event_from_dict, block) if ev is not None] for block in blocks]
    assert_same(exact)


def built_event(rng: random.Random) -> Event:
    """An Event as another reader builds it (event_from_parts): integer times, no type checks."""
    args = EventArgs(correlation=rng.choice(SCALARS), device=rng.choice(SCALARS), grid=dims(rng),
                     blocks_per_sm=rng.choice(SCALARS), stream=rng.choice(SCALARS),
                     input_dims=msgspec.Raw(rng.choice([b"", b"[[1]]"])))  # fmt: skip
    return Event(cat=rng.choice(CATS), name=rng.choice(NAMES), pid=rng.choice(PIDS), tid=rng.choice(PIDS),
                 ts=rng.choice(SCALARS), dur=rng.choice(SCALARS), args=rng.choice([args, None]))  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_events_other_readers_build_collect_the_same(seed: int) -> None:
    rng = random.Random(1000 + seed)
    assert_same([[built_event(rng) for _ in range(rng.randrange(1, 80))] for _ in range(3)])


def test_integer_times_past_a_double_are_skipped_the_same() -> None:
    big = 10**400  # float() of it raises OverflowError: _number's None, the event skipped
    events = [Event(cat=cat, name="n", pid=1, tid=1, ts=ts, dur=dur, args=EventArgs(correlation=5))
              for cat in ("cpu_op", "cuda_runtime", "kernel") for ts in (big, 3, 2.5, -big, "4")
              for dur in (big, 0, -0.0, "-0", None)]  # fmt: skip
    kept = assert_same([events])
    assert kept.ops.count == len(kept.runtime) == 15  # three of the five starts are numbers, five durations each
    assert len(kept.kernels) == 25  # a kernel is kept with 0.0 where its time is none


def test_an_error_stops_both_paths_where_it_happens_with_what_came_before_kept() -> None:
    good = [Event(cat="cpu_op", name="a", pid=1, tid=1, ts=1.0, dur=1.0),
            Event(cat="cuda_runtime", name="b", pid=1, tid=1, ts=2.0, dur=1.0, args=EventArgs(correlation=3)),
            Event(cat="kernel", name="k", pid=0, tid=7, ts=3.0, dur=1.0, args=EventArgs(correlation=3))]  # fmt: skip
    unhashable = Event(cat="cpu_op", name="x", pid=[1], tid=1, ts=4.0, dur=1.0)  # type: ignore[arg-type]
    kept = assert_same([good, [*good, unhashable, *good]], error=TypeError("unhashable type: 'list'"))
    assert kept.ops.count == len(kept.runtime) == len(kept.kernels) == 2  # the first block, the second to the error
    assert kept.ops._descriptors[-1].name == "x"  # its descriptor made before its thread was looked up, both ways


class SubEvent(Event):
    """Not the decoder's struct: the core reads its fields by name, not at the slots it found in Event's."""


class SubArgs(EventArgs):
    pass


def test_structs_other_than_the_decoders_are_read_by_name_the_same() -> None:
    rng = random.Random(7)
    events: list[Event] = []
    for ev in (built_event(rng) for _ in range(300)):
        args = ev.args
        sub = None if args is None else SubArgs(**{f: getattr(args, f) for f in args.__struct_fields__})
        events.append(SubEvent(**{f: getattr(ev, f) for f in ev.__struct_fields__ if f != "args"}, args=sub))
    kept = assert_same([events])
    assert len(kept.kernels) + kept.ops.count + len(kept.runtime) > 0


def test_thousands_of_threads_in_one_block_collect_the_same() -> None:
    """A hostile spread of (pid, tid): one run of gathered intervals per thread, each handed to its own arrays."""
    events = []
    for i in range(6_000):
        for cat in ("cpu_op", "cuda_runtime"):
            args = EventArgs(correlation=i)
            events.append(Event(cat=cat, name=f"n{i % 7}", pid=i % 97, tid=i, ts=10_000.0 - i, dur=1.0, args=args))
    kept = assert_same([events[:5_000], events[5_000:]])
    threads = {(i % 97, i) for i in range(6_000)}  # counted here, from the events as made
    assert len(kept.ops._threads) == len(kept.runtime._thread_keys) == len(threads)
    assert kept.ops.count == len(kept.runtime) == 6_000


def test_one_thread_out_of_order_is_marked_unsorted_the_same() -> None:
    starts = [5.0, 6.0, 2.0, 7.0]  # the third start goes back: IntervalIndex.add's sorted_ goes False
    events = [Event(cat="cpu_op", name="a", pid=1, tid=1, ts=t, dur=1.0) for t in starts]
    kept = assert_same([events[:2], events[2:]])
    assert [t.sorted_ for t in kept.ops._threads.values()] == [False]
    kept = assert_same([events[:2], [events[3]]])
    assert [t.sorted_ for t in kept.ops._threads.values()] == [True]


def test_python_frames_and_ops_of_one_thread_gather_apart_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python frames (with_stack=True: often most of a trace's events) go to their own IntervalIndex, interleaved
    with the same thread's ops, a frame going back in time marking only its own index unsorted; the core asks the
    twin's _frame_ref only for a name it has not seen, and never calls _python."""
    events = []
    for i, t in enumerate([5.0, 6.0, 2.0, 7.0, 8.0]):
        events.append(Event(cat="python_function", name=f"f{i % 2}", pid=1, tid=1, ts=t, dur=0.0 if i else None))
        events.append(Event(cat="cpu_op", name="op", pid=1, tid=1, ts=10.0 + i, dur=1.0))
    kept = assert_same([events[:4], events[4:]])
    assert [t.sorted_ for t in kept.python._threads.values()] == [False]
    assert [t.sorted_ for t in kept.ops._threads.values()] == [True]
    frames = kept.python._threads[(1, 1)]
    assert list(frames.starts) == [5.0, 6.0, 2.0, 7.0, 8.0] and list(frames.ends) == list(frames.starts)
    assert list(frames.refs) == [0, 1, 0, 1, 0]
    calls: list[Any] = []
    original = Collector._frame_ref

    def counted(self: Collector, name: Any) -> int:
        calls.append(name)
        return original(self, name)

    monkeypatch.setattr(Collector, "_frame_ref", counted)
    monkeypatch.setattr(Collector, "_python", lambda self, ev: pytest.fail("the core called the twin's _python"))
    collect(compiled_collect, [events, events])
    assert calls == ["f0", "f1"]


class _Id(int):
    """A correlation id of an int subclass: the core hands such a launch to KernelTable.add itself."""


def _kernel(i: int, **given: Any) -> Event:
    args = EventArgs(correlation=given.pop("corr", i), grid=[i % 3 + 1, 1, 1], block=[128, 1, 1])
    return Event(cat="kernel", name=f"k{i % 4}", pid=given.pop("pid", 0), tid=7, ts=float(i), dur=1.0, args=args)


def test_kernel_launches_gathered_the_same_around_the_ones_add_takes_itself() -> None:
    """Launches are gathered in C and handed to the table's arrays at the block's end; a launch the core does not
    gather (a correlation of an int subclass, past int64, none) keeps its place among them."""
    odd: list[Any] = [_Id(5), 2**63, -(2**63), None, -(2**63) + 1, True]
    events = [_kernel(i, corr=odd[i // 7] if i % 7 == 3 and i // 7 < len(odd) else i) for i in range(60)]
    kept = assert_same([events[:25], events[25:]])
    assert list(kept.kernels._corr)[3::7][:6] == [5, NO_CORRELATION, NO_CORRELATION, NO_CORRELATION, -(2**63) + 1,
                                                  NO_CORRELATION]  # fmt: skip
    assert len(kept.kernels._shapes) == 12  # four names by three grids, made here


def test_a_table_of_launch_columns_takes_json_launches_through_add_the_same() -> None:
    """A kernel table that took launches as columns (an nsys export's) adds the next ones through add itself."""
    results = []
    for function in (compiled_collect, pure_collect_events):
        contents = TraceContents(path="")
        contents.kernels._to_columns()
        collector = Collector(contents)
        saved = collector_module.collect_events
        collector_module.collect_events = function
        try:
            collector.add([_kernel(i) for i in range(10)])
        finally:
            collector_module.collect_events = saved
        results.append(snapshot(contents, collector))
    assert results[0] == results[1]


def test_an_unhashable_launch_stops_the_block_with_its_times_appended_the_same() -> None:
    """The twin appends a launch's start, duration and correlation before it looks its shape up: a shape that
    cannot be hashed (a list as a pid, from a reader that builds Events) leaves them in the arrays on both paths."""
    events = [_kernel(0), _kernel(1), _kernel(2, pid=[1]), _kernel(3)]
    arrays = []
    for function in (compiled_collect, pure_collect_events):
        contents, _, error = collect(function, [events])
        assert repr(error) == repr(TypeError("unhashable type: 'list'"))
        table = contents.kernels
        arrays.append((list(table._ts), list(table._dur), list(table._corr), list(table._shape)))
    assert arrays[0] == arrays[1] == ([0.0, 1.0, 2.0], [1.0] * 3, [0, 1, 2], [0, 1])


def test_an_unhashable_category_stops_the_block_before_anything_of_it_is_kept() -> None:
    """Counter.update counts the categories before the first event is kept: the ones before it counted (None's too,
    which the pop after the update never reached), no table touched."""
    first = [Event(cat="cpu_op", name="a", pid=1, tid=1, ts=1.0, dur=1.0), Event(cat=None, name="b", pid=1, tid=1)]
    bad = Event(cat=["kernel"], name="x", pid=1, tid=1, ts=4.0, dur=1.0)  # type: ignore[arg-type]
    kept = assert_same([first, [*first, bad, *first]], error=TypeError("unhashable type: 'list'"))
    assert kept.ops.count == 1  # the first block's op only
    assert kept.timeline.categories == {"cpu_op": 2, None: 1}


def test_inputs_other_than_a_list_take_the_twin() -> None:
    events = tuple(decoded(builder_events()))
    ours, twin = TraceContents(path=""), TraceContents(path="")
    compiled_collect(Collector(ours), events)  # type: ignore[arg-type]
    pure_collect_events(Collector(twin), events)  # type: ignore[arg-type]
    assert repr(list(ours.kernels)) == repr(list(twin.kernels)) and len(ours.kernels) > 0


def test_the_collector_runs_compiled_where_the_core_is_built() -> None:
    """collector.py binds the core unless WARPWIZARD_PURE=1 asks for the twin."""
    assert collector_module.COMPILED is (os.environ.get("WARPWIZARD_PURE", "") in ("", "0"))


# -- whole inspections, byte for byte --------------------------------------------------------------------------


def _size(path: Path) -> int:
    return path.stat().st_size


@needs_shared
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_inspections_are_byte_identical_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    builder = TraceBuilder()
    for spec in demo_launches():
        builder.add(spec)
    shared = sorted((p for p in TRACES.iterdir() if p.name.endswith((".json", ".json.gz"))), key=_size)
    files = [builder.write(tmp_path / "demo.json"), *shared[:6]]
    argv = ["trace", "inspect", "--json", "--jobs", jobs]
    monkeypatch.setattr(collector_module, "collect_events", compiled_collect)
    compiled = {p.name: output([*argv, str(p)]) for p in files}
    monkeypatch.setattr(collector_module, "collect_events", pure_collect_events)
    for path in files:
        assert output([*argv, str(path)]) == compiled[path.name], path.name
    assert all('"kernels"' in text for text in compiled.values())


def _peak(function: Callable[[Collector, list[Event]], None], block: list[Event]) -> int:
    """tracemalloc's peak while ``function`` collects ``block`` (the core's buffers are PyMem's: traced too)."""
    import tracemalloc

    collector = Collector(TraceContents(path=""))
    tracemalloc.start()
    try:
        function(collector, block)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_block_of_many_threads_costs_the_core_what_it_costs_the_twin() -> None:
    """Ops gathered per thread start small: a 2 MB block whose ops each sit on a thread of their own took ~12 KiB a
    thread in the core's first buffers (65,000 threads: 802 MiB against the twin's 32), a hostile file's cheap shape.
    The bound: the core within 1.5x the twin's peak and 4 MiB (measured: about 1.1x)."""
    block = [Event(cat="cpu_op", name="aten::add", pid=1, tid=i, ts=float(i), dur=1.0) for i in range(30_000)]
    compiled, pure = _peak(compiled_collect, block), _peak(pure_collect_events, block)
    assert compiled < 1.5 * pure + 4 * 2**20, (compiled, pure)


def test_a_kernel_with_falsy_args_takes_the_default_args_the_same() -> None:
    """The twin's ``ev.args or _NO_ARGS``: an args object that is false (an empty dict from another reader's
    builder) is the defaults on both paths, not an error on one."""
    kernel = Event(cat="kernel", name="k", pid=0, tid=7, ts=1.0, dur=2.0, args={})  # type: ignore[arg-type]
    kept = assert_same([[kernel]])
    assert [(k.name, k.grid, k.block) for k in kept.kernels] == [("k", None, None)]
