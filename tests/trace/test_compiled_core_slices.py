"""The compiled core's ``Slices`` (wizard/_core.c, section "pfcore") against its pure-Python twin
``perfetto.PureSlices``, issue 48 item 2: a .pftrace's TrackEvent slices opened, closed and made events, and the plain
TrackEvent packets of a run read in one call (``packets``). The same results, the same state after them (the open
stacks and their counts, the batch's events, what waits for render stages, the exact nanoseconds, the slice ends
remembered, the counts) or the same error in the same words, on operations at the bounds (MAX_OPEN, MAX_OPEN_BYTES,
MAX_PENDING, BATCH, BATCH_BYTES, END_BYTES, MEMO_ENTRIES), on times past int64, on packets of every kind and every
cut and one-byte change of them; then whole inspections of .pftrace files byte for byte with every twin swapped in.

Where a right answer is defined (an event's row, its microseconds, its table of exact times), it is written out here
from the wire format and Kineto's units, independently of both.
"""

from __future__ import annotations

import gc
import random
import struct
import sys
import weakref
from array import array
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
    kept,
    pftrace_conversions,
    tag,
    twin_swapper,
    vfield,
)
from tests.output_digests import output
from wizard.errors import InputFileError
from wizard.trace.read import collector as collector_module
from wizard.trace.read import events, perfetto, protobuf
from wizard.trace.read.collector import GPU_OPS, KERNELS, MAX_NAME, SLICES, Collector, ExactTimes, TraceContents
from wizard.trace.read.events import Event, EventArgs

core = pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
if not hasattr(core, "bind_slices"):
    pytest.skip("the compiled core here was built before Slices", allow_module_level=True)
# what protobuf.py and perfetto.py do at import, unless WARPWIZARD_PURE=1 (then the twin is compared all the same)
protobuf.bind_core(core)
perfetto.bind_core_events(core)
Compiled = perfetto.bind_core_slices(core)
BOUNDS = perfetto._bounds()
TRACKS = {5: perfetto._Track(7, 8, "thread"), 6: perfetto._Track("proc", "row", "merged")}


def made(kind: Any, bounds: tuple[int, ...] = BOUNDS) -> Any:
    """A Slices of ``kind`` (the core's or the twin) over its own tracks, times and ends."""
    return kind(dict(TRACKS), ExactTimes(), {}, bounds)


def plain(value: Any) -> Any:
    """A value in a form == compares fully: floats by their bits, structs and Raw by their fields and bytes."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, msgspec.Raw):
        return ("raw", bytes(value))
    if isinstance(value, msgspec.Struct):
        return (type(value).__name__, plain(msgspec.structs.astuple(value)))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(plain(k), plain(v)) for k, v in value.items()])
    if isinstance(value, perfetto._Sequence):
        return ("seq", plain(dict(value.memo)))  # a dict, or the core's Memo: its entries in their order
    return value


def state(s: Any) -> Any:
    """Everything a Slices holds that a read goes on with."""
    exact = s.exact
    times = [list(a) for a in (*exact.ts, *exact.dur)]
    held = (s.stacks, s.open_count, s.open_bytes, s.batch, s.batch_bytes, s.pending, s.base, s.track_events)
    return plain((*held, s.memo_entries, s.ends, times, exact.usable))


def outcome(s: Any, method: str, *args: Any) -> Any:
    kind, value = call_outcome(getattr(s, method), *args)
    return (kind, plain(value)) if kind == "value" else (kind, value)


def both(calls: list[tuple[str, tuple[Any, ...]]], bounds: tuple[int, ...] = BOUNDS) -> Any:
    """The calls on a compiled Slices and on its twin: each outcome and the state after it, the same on both."""
    compiled, twin = made(Compiled, bounds), made(perfetto.PureSlices, bounds)
    seen = []
    for method, args in calls:
        got = outcome(compiled, method, *args)
        assert got == outcome(twin, method, *args), (method, args)
        assert state(compiled) == state(twin), (method, args)
        seen.append(got)
    return seen


# -- the right answers -------------------------------------------------------------------------------------------


def test_a_slice_closed_is_the_event_kineto_units_give() -> None:
    """Begun at 1,000,500 ns and ended at 1,003,750 ns on track 5 (pid 7, tid 8): ts 1000.5 µs, dur 3.25 µs, its
    nanoseconds beside the kernels; on a track no descriptor named, pid None and the track as the row."""
    for kind in (Compiled, perfetto.PureSlices):
        s = made(kind)
        s.open(5, (1_000_500, "gemm", "kernel", {"correlation": 3}, (), 10))
        s.open(9, (2_000, "step", "user_annotation", {}, (), 4))
        assert (s.open_count, s.open_bytes) == (2, 14)
        assert s.close(5, 1_003_750) is False and s.close(9, 2_500) is False
        assert s.close(5, 9_999) is False  # none open: dropped
        first, second = s.take()
        assert (first.cat, first.name, first.pid, first.tid, first.ts, first.dur) == (
            "kernel",
            "gemm",
            7,
            8,
            1000.5,
            3.25,
        )
        assert first.args == EventArgs(correlation=3)
        assert (second.pid, second.tid, second.ts, second.dur, second.args) == (None, 9, 2.0, 0.5, EventArgs())
        assert [list(a) for a in s.exact.ts] == [[1_000_500], [], [2_000]]
        assert [list(a) for a in s.exact.dur] == [[3_250], [], [500]]
        assert (s.open_count, s.open_bytes, s.batch_bytes, s.batch) == (0, 0, 0, [])


def test_times_past_int64_keep_the_tables_in_step() -> None:
    """A time past int64 (a 70-bit varint) makes both its exact times 0 and the table unusable, as ExactTimes.add
    does; the microseconds are Python's division of the whole integer."""
    for kind in (Compiled, perfetto.PureSlices):
        s = made(kind)
        s.open(5, (2**65, "k", "kernel", {}, (), 0))
        s.close(5, 2**65 + 2_000)
        (ev,) = s.take()
        assert (ev.ts, ev.dur) == (2**65 / 1000.0, 2.0)
        assert (list(s.exact.ts[KERNELS]), list(s.exact.dur[KERNELS]), s.exact.usable) == ([0], [0], False)


def exact_rounds(kind: Any, exact: ExactTimes) -> Any:
    """Kernels, GPU ops and other slices closed over three takes, one time past int64: the exact times after each
    take, read from the ExactTimes itself (not through Slices.exact), and whether the table is usable."""
    s = kind(dict(TRACKS), exact, {}, BOUNDS)
    seen = []
    for round_ in range(3):
        for k, cat in enumerate(("kernel", "gpu_memcpy", "cpu_op", "kernel")):
            start = 2**65 if (round_, k) == (1, 3) else 1_000 * (10 * round_ + k)
            s.open(5, (start, "k", cat, {}, (), 0))
            s.close(5, start + 250 + k)
        s.take()
        seen.append(([list(a) for a in exact.ts], [list(a) for a in exact.dur], exact.usable))
    return seen


def test_exact_times_reach_the_arrays_at_each_take() -> None:
    """The core holds the exact times as int64s and adds them to ExactTimes' arrays at take(), with the events they go
    beside: read from the arrays themselves after each take, they are the twin's; arrays of another type code get
    each time appended as the twin appends it (a float array: the ints as floats)."""
    seen = exact_rounds(Compiled, ExactTimes())
    assert seen == exact_rounds(perfetto.PureSlices, ExactTimes())
    assert seen[0][0] == [[0, 3_000], [1_000], []]  # kernels, GPU ops (gpu_memcpy), slices: cpu_op is in none
    assert seen[2][2] is False and seen[2][0][0] == [0, 3_000, 10_000, 0, 20_000, 23_000]  # past int64: 0

    def floats() -> ExactTimes:
        ts: Any = (array("d"), array("d"), array("d"))  # not ExactTimes' type: what the core must also take
        dur: Any = (array("d"), array("d"), array("d"))
        return ExactTimes(ts=ts, dur=dur)

    got = exact_rounds(Compiled, floats())
    assert got == exact_rounds(perfetto.PureSlices, floats())
    assert got[0][0] == [[0.0, 3_000.0], [1_000.0], []]


# -- the two agree -----------------------------------------------------------------------------------------------

EDGES = (0, 1, -1, 999, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**70 - 1)
CATS = ("kernel", "gpu_memcpy", "cpu_op", "cuda_runtime", "python_function", "user_annotation", None, "Kernel")


def operations(rng: random.Random, count: int) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Random calls as the reader makes them: slices begun and ended on a few tracks, linked launches with and
    without their correlation, events of every category, times at int64's edges, bases, takes."""
    for _ in range(count):
        track = rng.choice((5, 6, 9, 2**64))
        ts = rng.choice(EDGES) if rng.random() < 0.2 else rng.randrange(10**6)
        links = rng.choice(((), [7, 8]))
        args = rng.choice(({}, {"correlation": 4}, {"grid": [1, 2, 3], "input_dims": msgspec.Raw(b"[1]")}))
        cat, size = rng.choice(CATS), rng.randrange(100)
        op = rng.random()
        if op < 0.35:
            yield "open", (track, (ts, "n", cat, dict(args), links, size))
        elif op < 0.7:
            yield "close", (track, ts)
        elif op < 0.8:
            yield "emit", (track, ts, rng.choice(EDGES), "n", cat, dict(args), links, size)
        elif op < 0.9:
            us = rng.choice((None, 1.5))
            yield "event", (cat, "n", 1, "t", ts, rng.choice(EDGES), dict(args), us)
        elif op < 0.95:
            yield "take", ()
        else:
            setattr_base = rng.choice((0, 7_889_238 * 10**9, 2**64))
            yield "set_base", (setattr_base,)


def run_both(calls: list[tuple[str, tuple[Any, ...]]], bounds: tuple[int, ...]) -> None:
    compiled, twin = made(Compiled, bounds), made(perfetto.PureSlices, bounds)
    for method, args in calls:
        if method == "set_base":
            compiled.base = twin.base = args[0]
            continue
        got = outcome(compiled, method, *args)
        assert got == outcome(twin, method, *args), (method, args)
        assert state(compiled) == state(twin), (method, args)


def test_slices_agree_on_random_operations_within_and_at_every_bound() -> None:
    """The bounds shrunk so that every one is met: slices open (3), their bytes (100), launches waiting (2), the
    batch's events (4) and bytes (150); each refusal in the same words."""
    rng = random.Random(48)
    small = (3, 100 << 0, 2, 4, 150, perfetto.END_BYTES, perfetto.MEMO_ENTRIES)
    for bounds in (BOUNDS, small, (3, 1 << 20, 2, 4, 150, 16, 10)):
        for _ in range(60):
            run_both(list(operations(rng, 60)), bounds)
    refusals = both([("open", (5, (1, "a", None, {}, (), 0)))] * 4, (3, 1 << 20, 2, 4, 150, 16, 10))
    assert refusals[-1] == ("Damaged", "more than 3 slices open at once")
    refusals = both([("open", (5, (1, "a", None, {}, (), 60)))] * 2, (9, 100 << 20, 2, 4, 150, 16, 10))
    assert refusals[-1] == ("value", None)
    refusals = both([("open", (5, (1, "a", None, {}, (), 3 << 20)))] * 2, (9, 4 << 20, 2, 4, 150, 16, 10))
    assert refusals[-1] == ("Damaged", "slices open at once holding more than 4 MiB")
    waiting = both([("emit", (5, 1, 2, "l", "cuda_runtime", {}, [3], 0))] * 3, (9, 1 << 20, 2, 4, 150, 16, 10))
    assert waiting[-1] == ("Damaged", "more than 2 launches linked to render stages not yet read")


# -- packets -----------------------------------------------------------------------------------------------------


def packet(ts: int | None, seq: int, body: bytes, *extra: bytes, kind: int = 11) -> bytes:
    head = (vfield(8, ts) if ts is not None else b"") + vfield(10, seq)
    return head + b"".join(extra) + dfield(kind, body)


def begin(track: int | None, name: bytes = b"op", cat: bytes = b"cpu_op", note: bytes = b"") -> bytes:
    body = vfield(9, 1) + (vfield(11, track) if track is not None else b"") + dfield(22, cat) + dfield(23, name)
    return body + (dfield(4, note) if note else b"")


def end(track: int | None) -> bytes:
    return vfield(9, 2) + (vfield(11, track) if track is not None else b"")


NOTE = dfield(10, b"correlation") + vfield(3, 12)


def runs() -> Iterator[list[bytes]]:
    """Runs of packets: plain begins and ends (ends again: the memo), the default track, kernels with args, and
    every kind of packet ``packets`` leaves to the reader (another sequence, a clear, interned data, defaults, a
    clock snapshot or id, no time, another body, gpu_correlation, a legacy event), and damage."""
    plain_run = [packet(1_000, 1, begin(5, note=NOTE)), packet(2_000, 1, begin(6, b"k", b"kernel", NOTE)),
                 packet(3_000, 1, end(6)), packet(4_000, 1, end(5)), packet(5_000, 1, begin(None)),
                 packet(6_000, 1, end(None)), packet(7_000, 1, begin(5)), packet(8_000, 1, end(5)),
                 packet(9_000, 1, vfield(9, 3) + vfield(11, 5))]  # fmt: skip
    yield plain_run
    others = [packet(1, 2, end(5)), packet(1, 1, end(5), vfield(13, 1)), packet(1, 1, end(5), vfield(41, 1)),
              packet(1, 1, end(5), dfield(12, b"")), packet(1, 1, end(5), dfield(59, b"")),
              packet(1, 1, end(5), dfield(6, b"")), packet(1, 1, end(5), vfield(58, 1)), packet(None, 1, end(5)),
              packet(1, 1, end(5), kind=60), packet(1, 1, begin(5) + dfield(3000, vfield(1, 9))),
              packet(1, 1, begin(5) + dfield(6, vfield(3, 5))), packet(1, 1, end(5), vfield(13, 2)),
              packet(1, 2**70 - 1, end(5)), packet(2**70, 1, end(5)), packet(1, 1, begin(2**64) + vfield(3, 1)),
              b"\x08", packet(1, 1, end(5)) + b"\x1b", packet(1, 1, vfield(9, 2**70 - 1))]  # fmt: skip
    for other in (*others, *named_and_categorised()):
        yield [*plain_run[:4], other, *plain_run[4:]]


def named_and_categorised() -> Iterator[bytes]:
    """Plain TrackEvents whose name and category ``packets`` reads itself: names by iid (known, not, past 64 bits)
    and past NAME_BYTES and MAX_NAME; categories as iids (one, packed, a packed run cut before and after the category
    is found, fixed wire types) in their order, and more annotations and categories than it reads itself."""
    kernel = dfield(4, NOTE)
    for name in (vfield(10, 1), vfield(10, 2), vfield(10, 2**64), dfield(23, b"a" * (perfetto.NAME_BYTES + 9)),
                 dfield(23, "∑".encode() * (MAX_NAME + 2)), dfield(23, b"x") + vfield(10, 1)):  # fmt: skip
        yield packet(1, 1, vfield(9, 1) + vfield(11, 5) + name + vfield(3, 1) + kernel)
    for cats in (vfield(3, 1), vfield(3, 9) + vfield(3, 1), dfield(3, encode_varint(9) + encode_varint(1)),
                 dfield(3, encode_varint(1)) + dfield(3, b"\x80"), dfield(3, b"\x80") + vfield(3, 1),
                 tag(3, 5) + bytes(4) + tag(3, 1) + bytes(8) + dfield(3, b"") + vfield(3, 1),
                 vfield(3, 9) * 8 + dfield(22, b"kernel"), vfield(3, 9) * 9 + dfield(22, b"kernel"),
                 dfield(22, b"c" * (perfetto.NAME_BYTES + 3)), dfield(22, b"kernel") + vfield(3, 1)):  # fmt: skip
        yield packet(1, 1, vfield(9, 1) + vfield(11, 6) + dfield(23, b"k") + cats + kernel)
    for count in (64, 65):
        yield packet(1, 1, begin(5, b"k", b"kernel") + kernel * count)


def sequence() -> perfetto._Sequence:
    seq = perfetto._Sequence()
    seq.default_track = 6
    seq.tables["categories"][1] = "kernel"
    seq.tables["names"].update({1: "matmul", 2**64: "far"})
    return seq


def packets_outcome(kind: Any, batch: list[bytes], last_id: int, bounds: tuple[int, ...] = BOUNDS) -> Any:
    """The reader's loop over a run: ``packets`` from each packet it left, the next one skipped (the reader's),
    every outcome and the state after all (an error: its words and the packet it names)."""
    s, seq = made(kind, bounds), sequence()
    seen, k = [], 0
    while k < len(batch):
        kind_, value = call_outcome(s.packets, batch, k, (last_id, seq))
        seen.append((kind_, value if kind_ == "value" else (value, s.at)))
        if kind_ != "value":
            break
        k = value[0] + (0 if value[1] else 1)
    return seen, state(s), plain(seq)


def as_run(batch: list[bytes]) -> Any:
    """The packets as the reader hands them over where the core is built: a Run lying in the bytes of a stream of them
    (split_run; 20 bytes after the last, as a buffer has them where more follows)."""
    run, _, _ = core.split_run(b"".join(dfield(1, packet) for packet in batch) + bytes(20), 0, len(batch), 1 << 20)
    assert [run[k] for k in range(len(run))] == batch
    return run


def packets_agree(batch: list[bytes], last_id: int = 1, bounds: tuple[int, ...] = BOUNDS) -> Any:
    """The core on the packets as a list and as a Run (read where they lie in one buffer: a packet cut or damaged is
    read only as far as its own end), and the twin on the list: the same outcomes and state."""
    got = packets_outcome(Compiled, batch, last_id, bounds)
    assert got == packets_outcome(perfetto.PureSlices, batch, last_id, bounds), batch
    if hasattr(core, "split_run"):
        assert packets_outcome(Compiled, as_run(batch), last_id, bounds) == got, batch
    return got


def test_packets_read_the_plain_ones_and_leave_the_rest() -> None:
    """The first run read whole (9 packets, one call); each packet of another kind stops the call on itself."""
    for batch in runs():
        seen, _, _ = packets_agree(batch)
        if len(batch) == 9:
            assert seen == [("value", (9, False))]
    s = made(Compiled)
    s.packets(next(runs()), 0, (1, sequence()))
    events = [(ev.cat, ev.name, ev.pid, ev.tid, ev.ts, ev.dur) for ev in s.take()]
    assert events == [("kernel", "k", "proc", "row", 2.0, 1.0), ("cpu_op", "op", 7, 8, 1.0, 3.0),
                      ("cpu_op", "op", "proc", "row", 5.0, 1.0), ("cpu_op", "op", 7, 8, 7.0, 1.0)]  # fmt: skip
    assert s.track_events == 9 and s.ends == {end(6): 6, end(5): 5, end(None): -1}


def test_packets_agree_on_every_change_of_a_run_and_at_the_bounds() -> None:
    rng = random.Random(2026)
    compared = 0
    base = next(runs())
    for at in range(len(base)):
        for changed in every_change(base[at]):
            packets_agree([*base[:at], changed, *base[at + 1 :]], rng.choice((1, 2)))
            compared += 1
    for event in named_and_categorised():
        for changed in every_change(event) if len(event) < 120 else ():
            packets_agree([changed, base[2]])
            compared += 1
    for bounds in ((1, 1 << 20, 2, 2, 150, 16, 1), (9, 1 << 20, 2, 50, 0, 0, 0), (2, 30, 2, 3, 8, 3, 2)):
        for batch in runs():
            packets_agree(batch, 1, bounds)
    for batch in runs():  # the sequence's id compared as Python compares it: past 64 bits, 2**64 - 1, negative
        for last_id in (2**70 - 1, 2**64 - 1, -1):
            packets_agree([packet(1, last_id, begin(5)) if last_id >= 0 else batch[0], *batch], last_id)
    assert compared > 1_000


def test_a_runs_nested_notes_are_read_only_to_their_packets_end() -> None:
    """A note holding an array (decoded by the twin's recursion, perfetto._decode_annotation) in a Run's packet gets
    that note only up to its packet's end (wizard/_core.c, annotation): a varint cut at the packet's end says what the
    packet as its own bytes says, not what the next packet's bytes make of it; every change of such a packet agrees."""
    cut = dfield(10, b"grid") + dfield(12, vfield(4, 300)[:-1])  # array_values whose last int_value is cut
    batch = [packet(1_000, 1, begin(5)), packet(2_000, 1, begin(5, b"k", b"kernel", cut)), packet(3_000, 1, end(5))]
    seen, _, _ = packets_agree(batch)
    assert seen == [("Damaged", ("a message cut off", 1))]
    whole = packet(2_000, 1, begin(5, b"k", b"kernel", dfield(10, b"grid") + dfield(12, vfield(4, 300))))
    seen, _, _ = packets_agree([batch[0], whole, batch[2]])
    assert seen == [("value", (3, False))]
    for changed in every_change(whole):
        packets_agree([batch[0], changed, batch[2]])


def test_an_exact_times_table_missing_an_array_is_named_not_a_system_error() -> None:
    """An ExactTimes without three arrays a side: the core says so when it is made (the twin reads them only when it
    adds a time), with the lookup's own error, never "returned NULL without setting an exception"."""
    short: Any = (array("q"),)
    with pytest.raises(IndexError, match="tuple index out of range"):
        Compiled(dict(TRACKS), ExactTimes(ts=short), {}, BOUNDS)
    with pytest.raises(AttributeError, match="append"):
        Compiled(dict(TRACKS), ExactTimes(dur=(array("q"), array("q"), object())), {}, BOUNDS)  # type: ignore[arg-type]


def memo_rounds(kind: Any, memo: Callable[[], Any]) -> Any:
    """A kernel with two annotations read five times by ``packets``, the sequence's memo changed between reads: given
    another answer for one annotation's bytes, cleared, full (its entries at MEMO_ENTRIES, so the annotation it no
    longer holds starts it again), then left alone. Each read's events' args, and the memo and count after it."""
    s, seq = made(kind), sequence()
    seq.memo = memo()
    stream = dfield(10, b"stream") + vfield(3, 7)
    run = [packet(1_000, 1, begin(5, b"k", b"kernel", NOTE) + dfield(4, stream)), packet(2_000, 1, end(5))]
    seen = []
    for change in ("none", "another answer", "cleared", "full", "none"):
        if change == "another answer":
            seq.memo[stream] = ("stream", 77)
        elif change == "cleared":
            seq.memo.clear()
        elif change == "full":  # the stream's note misses a full memo, which starts again with it alone
            s.memo_entries = perfetto.MEMO_ENTRIES
            del seq.memo[stream]
            seq.memo[b"\x00"] = ("device", 1)
        assert s.packets(run, 0, (1, seq)) == (2, False)
        seen.append(([plain(ev.args) for ev in s.take()], plain(dict(seq.memo)), s.memo_entries))
    return seen


@pytest.mark.parametrize("memo", [dict, perfetto._new_memo], ids=["dict", "the read's memo"])
def test_an_event_gets_what_the_memo_holds_on_both_paths(memo: Callable[[], Any]) -> None:
    """The core looks each note up in the sequence's memo: in its own ``Memo`` (the read's, where the core is bound)
    by the bytes where they lie, in any other mapping by its look-up (wizard/_core.c, one_note). Either way the
    memo's answer is the event's: another answer given for the bytes, a memo cleared or started again at
    MEMO_ENTRIES, and the events get what the twin's memo gives them, with the same memo and count after."""
    seen = memo_rounds(Compiled, memo)
    assert seen == memo_rounds(perfetto.PureSlices, memo)
    streams = [args[0][1][1][2] for args, _, _ in seen]  # EventArgs' third field, the stream, of each read's event
    assert streams == [7, 77, 7, 7, 7]
    full = perfetto.MEMO_ENTRIES
    assert [entries for _, _, entries in seen] == [2, 2, 4, full - 1, full]
    assert seen[3][1] == plain({dfield(10, b"stream") + vfield(3, 7): ("stream", 7)})  # started again


def test_names_as_text_are_decoded_whole_and_cut_as_the_bound_says() -> None:
    """The core keeps the text of each name and category it decodes, by their bytes (wizard/_core.c, cut_span): the
    same bytes give the same text, one object; bytes that are not UTF-8 are decoded with replacements every time; a
    smaller MAX_NAME given later cuts a name it kept whole. Both paths agree on each."""

    def names(kind: Any, name: bytes) -> list[Any]:
        s = made(kind)
        run = [packet(1_000, 1, begin(5, name, b"kernel")), packet(2_000, 1, end(5))] * 2
        s.packets(run, 0, (1, sequence()))
        return [(ev.name, ev.cat) for ev in s.take()]

    for name in (b"gemm", b"bad \xff\xfe name", "∑".encode() * 40, b"x" * 300):
        first, second = names(Compiled, name)
        assert first == second and (first[0] is second[0]) == (len(name) <= 256 and b"\xff" not in name)
        expected = [(name.decode("utf-8", "replace"), "kernel")] * 2
        assert names(Compiled, name) == names(perfetto.PureSlices, name) == expected

    def bind(max_name: int) -> None:
        core.bind_events(perfetto.pure_event_args, perfetto._decode_annotation, msgspec.json.decode,
                         perfetto._JSON_ERRORS, perfetto._raw, perfetto._ARG_FIELDS, perfetto._ARG_FIELDS_BYTES,
                         perfetto._RAW_ARGS, perfetto.MEMO_BYTES, perfetto.MEMO_ENTRIES, perfetto.pure_split_packets,
                         perfetto.pure_track_event, perfetto.NAME_BYTES, max_name)  # fmt: skip

    assert names(Compiled, b"a" * 40)[0][0] == "a" * 40  # kept whole
    bind(10)
    try:
        assert names(Compiled, b"a" * 40) == [("a" * 10, "kernel")] * 2
    finally:
        bind(MAX_NAME)


def test_a_track_of_another_type_is_read_by_its_attributes() -> None:
    """The core reads a _Track's row by index (a NamedTuple); any other object in the tracks by its pid and tid, as
    the twin does, and a plain tuple (no pid) fails in the twin's words."""

    class Row:
        pid, tid = "p", "t"

    for row in (Row(), (1, 2, "x")):
        seen = []
        for kind in (Compiled, perfetto.PureSlices):
            tracks: dict[int, Any] = {5: row}  # not _Tracks: what the twin reads of them, the core reads too
            s = kind(tracks, ExactTimes(), {}, BOUNDS)
            seen.append(outcome(s, "emit", 5, 1_000, 2_000, "op", "cpu_op", {}, (), 0))
            seen.append(plain([(ev.pid, ev.tid) for ev in s.take()]))
        assert seen[0:2] == seen[2:4]
    assert seen[0][0] == "AttributeError"


def test_packets_name_the_damaged_packet_of_the_run() -> None:
    """A plain packet whose TrackEvent is cut, third of a run: the error in protobuf's words, at packet 2."""
    batch = [packet(1, 1, begin(5)), packet(2, 1, end(5)), packet(3, 1, begin(5) + b"\x1a\x05ab"), packet(4, 1, end(5))]
    seen, _, _ = packets_agree(batch)
    assert seen == [("Damaged", ("a field runs past its message", 2))]


def test_slices_keep_reference_counts() -> None:
    """100,000 rounds of a run read, its events taken, and a refused packet leak nothing."""
    s, seq = made(Compiled), sequence()
    batch = next(runs())
    bad = [packet(3, 1, begin(5) + b"\x1a\x05ab")]
    last = (1, seq)
    s.packets(batch, 0, last)
    s.take()
    gc.collect()
    watched = (s, seq, last, batch, *batch, s.ends, s.tracks, s.exact)
    before = [sys.getrefcount(x) for x in watched]
    shared = (None, True, False, "op", "cpu_op")
    before_shared = [sys.getrefcount(x) for x in shared]
    for _ in range(100_000):
        s.packets(batch, 0, last)
        s.take()
        try:
            s.packets(bad, 0, last)
        except protobuf.Damaged:
            pass
    gc.collect()
    assert [sys.getrefcount(x) for x in watched] == before
    assert all(abs(sys.getrefcount(x) - n) < 1000 for x, n in zip(shared, before_shared, strict=True))


def test_slices_refuse_arguments_of_other_types_without_crashing() -> None:
    """What only the reader calls is checked all the same: a TypeError or ValueError, never a crash."""
    s = made(Compiled)
    for method, args in (("open", (5, (1, "a"))), ("open", (5, [1, "a", None, {}, (), 0])), ("close", (5, 1.5)),
                         ("emit", (5, 1, 2, "n", None, [], (), 0)), ("event", (None, "n", 1, 2, "x", 1, {})),
                         ("packets", ((), 0, None)), ("packets", ([b""], -1, None)), ("packets", ([b""], 0, (1,))),
                         ("slice", (b"", 0, 0, 1, sequence(), (1,), (), None)), ("slice", (b"", -1, 0, 1, None,
                         (), (), None))):  # fmt: skip
        kind, _ = call_outcome(getattr(s, method), *args)
        assert kind in ("TypeError", "ValueError"), (method, args)
    assert packets_agree([vfield(8, 1)], 1)[0] == [("value", (0, False))]  # no body: the reader's
    with pytest.raises(TypeError):
        s.base = "0"


# -- whole reads, byte for byte ------------------------------------------------------------------------------------


@pytest.fixture
def pure_decoder(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Swaps every compiled function and type the decoder holds for its twin (the names it is bound under)."""
    twins = {core.fields: protobuf.pure_fields, core.varint: protobuf.pure_varint,
             core.packed_varints: protobuf.pure_packed_varints, core.packet_head: protobuf.pure_packet_head,
             core.track_event_fields: protobuf.pure_track_event_fields, core.event_args: perfetto.pure_event_args,
             core.split_run: perfetto.pure_split_packets, core.track_event: perfetto.pure_track_event,
             Compiled: perfetto.PureSlices}  # fmt: skip
    swap: Callable[[], None] = twin_swapper(monkeypatch, (perfetto, protobuf), twins)
    return swap


@needs_shared
def test_inspections_are_byte_identical_with_every_twin(tmp_path: Path, pure_decoder: Callable[[], None]) -> None:
    files = pftrace_conversions(tmp_path, repeat=3)
    compiled = {p.name: output(["trace", "inspect", str(p), "--json"]) for p in files}
    assert perfetto._Slices is Compiled or not perfetto.COMPILED_EVENTS
    pure_decoder()
    assert perfetto.__dict__["_Slices"] is perfetto.PureSlices
    for path in files:
        assert output(["trace", "inspect", str(path), "--json"]) == compiled[path.name], path.name
    assert all('"format": "perfetto-proto"' in text for text in compiled.values())


def test_a_damaged_track_event_in_a_plain_run_is_named_by_its_offset_on_both_paths(
    tmp_path: Path, pure_decoder: Callable[[], None]
) -> None:
    """A packet ``packets`` reads, damaged, in the middle of a run: the error names where it starts (computed here
    from the sizes), on both paths."""
    head = packet(500, 1, begin(5))  # the first packet of a sequence: the reader's, then the run is plain
    good = [packet(1_000 + i, 1, begin(5) if i % 2 == 0 else end(5)) for i in range(40)]
    bad = packet(2_000, 1, begin(5) + b"\x1a\x05ab")
    bodies = [head, *good, bad, *good]
    path = tmp_path / "bad.pftrace"
    path.write_bytes(b"".join(dfield(1, body) for body in bodies))
    at = sum(len(dfield(1, body)) for body in bodies[:41])
    errors = []
    for pure in (False, True):
        if pure:
            pure_decoder()
        with pytest.raises(InputFileError) as caught:
            perfetto.read_perfetto(path)
        errors.append(str(caught.value))
    assert (
        errors[0] == errors[1] == f"{path}: not a readable Perfetto trace at byte {at}: a field runs past its message"
    )


def test_the_core_reads_plain_packets_itself() -> None:
    """Parity would hold trivially were the core to hand the work to perfetto's Python: bound to twins that refuse to
    run, it still reads a run of plain packets (names, categories, annotations without nested values) whole."""

    def refuse(*_: Any) -> Any:
        raise AssertionError("the twin ran")

    def bind(event_args: Any, decode: Any, split: Any, track_event: Any) -> None:
        core.bind_events(event_args, decode, msgspec.json.decode, perfetto._JSON_ERRORS, perfetto._raw,
                         perfetto._ARG_FIELDS, perfetto._ARG_FIELDS_BYTES, perfetto._RAW_ARGS, perfetto.MEMO_BYTES,
                         perfetto.MEMO_ENTRIES, split, track_event, perfetto.NAME_BYTES, MAX_NAME)  # fmt: skip

    bind(refuse, refuse, refuse, refuse)
    try:
        s = made(Compiled)
        assert s.packets(next(runs()), 0, (1, sequence())) == (9, False)
        assert [ev.args.correlation for ev in s.take()] == [12, 12, None, None]
    finally:
        bind(perfetto.pure_event_args, perfetto._decode_annotation, perfetto.pure_split_packets,
             perfetto.pure_track_event)  # fmt: skip


def test_a_legacy_json_list_decoded_again_is_a_list_of_its_own() -> None:
    """The core keeps the flat lists legacy JSON values decoded to (a kernel's grid, its block) and hands out copies:
    each event's list is still its own (changing one changes no other), equal to what decoding gives, and a value
    that is not a flat list (nested, not JSON) is decoded as before."""
    for raw, expected in ((b"[128, 1, 1]", [128, 1, 1]), (b'[1.5, "a", true, null]', [1.5, "a", True, None]),
                          (b"[[1], 2]", [[1], 2]), (b"[1, {]", "[1, {]")):  # fmt: skip
        note = dfield(10, b"grid") + dfield(9, raw)
        got = []
        for _ in range(3):
            args: dict[str, Any] = {}
            core.event_args(note, [(0, len(note))], sequence(), args, perfetto.MEMO_ENTRIES)
            got.append(args["grid"])
        assert got == [expected] * 3
        assert raw == b"[1, {]" or msgspec.json.decode(raw) == expected
        if isinstance(expected, list):
            got[0].append("changed")
            assert got[1] == expected and got[1] is not got[2]
        if raw == b"[[1], 2]":
            got[1][0].append(9)
            assert got[2] == [[1], 2]  # a nested list is decoded again, not shared


class _FailsOnce:
    """A track key whose hash raises on its ``fail_at``-th call: the close's delete of its emptied stack fails."""

    def __init__(self, fail_at: int) -> None:
        self.calls, self.fail_at = 0, fail_at

    def __hash__(self) -> int:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("hash failed once")
        return 1


@pytest.mark.parametrize("kind", [Compiled, perfetto.PureSlices], ids=["compiled", "twin"])
def test_a_close_after_a_failed_delete_ends_nothing_on_both_paths(kind: Any) -> None:
    """The review of 2026-12-02: a close whose dict delete raised left an empty stack behind, and the next close read
    item -1 of it (a NULL: the core crashed with SIGSEGV); the twin's ``if not stack`` answers False. Only a Python
    caller can make a track's hash raise (a file's tracks are ints), but both paths now answer alike."""
    s = made(kind)
    track = _FailsOnce(fail_at=4)  # open's lookup and store, close's lookup: the fourth is the delete
    s.open(track, (0, "a", None, {}, (), 1))
    with pytest.raises(RuntimeError, match="hash failed once"):
        s.close(track, 5)
    assert s.open_count == 0
    assert s.close(track, 6) is False


# -- the sink: each event handed to the collector as it is made ----------------------------------------------------


# the sink hands events to the collector's compiled dispatch, which collector.py binds at import unless
# WARPWIZARD_PURE=1 (CI's pure pass runs this module too: there the sink is off, and the twin is the read's)
needs_sink = pytest.mark.skipif(
    collector_module.compiled_collect_events() is None,
    reason="the collector's compiled dispatch is not bound (WARPWIZARD_PURE=1): the sink belongs to the compiled path",
)


class Keeping(Collector):
    """A collector whose complete-event handler (which the core calls in Python) keeps the events it is handed, and
    writes an arg into the first one named "first" (what it writes must not reach the next event)."""

    def __init__(self, contents: TraceContents) -> None:
        super().__init__(contents)
        self.seen: list[Any] = []

    def _complete(self, ev: Event) -> None:
        if ev.name == "first" and ev.args is not None and ev.args is not perfetto._NO_ARGS:  # that one is shared
            ev.args.stream = "written"
        elif ev.name == "kept":
            self.seen.append(ev)
        super()._complete(ev)


def hand_over(s: Any, collector: Collector) -> None:
    """The reader's flush: the batch taken and added (the sink's take flushes what it handed over; its batch is [])."""
    batch = s.take()
    if batch:
        collector.add(batch)


def sunk(kind: Any, calls: list[tuple[str, tuple[Any, ...]]], bounds: tuple[int, ...], sink: bool) -> Any:
    """The calls on a Slices whose events reach a Keeping collector the reader's way: the batch handed over when a
    call says it is due, when taken, and at the end. Each call's outcome, then the collector's whole state (tables,
    counts, memos, the events it kept) and the exact times after."""
    collector, s, seen = Keeping(TraceContents(path="")), made(kind, bounds), []
    assert s.sink(collector) is sink
    for method, args in calls:
        if method == "set_base":
            s.base = args[0]
        elif method == "take":
            hand_over(s, collector)
        else:
            got = outcome(s, method, *args)
            seen.append(got)
            if got == ("value", True):
                hand_over(s, collector)
    hand_over(s, collector)
    return seen, kept(collector), plain([list(a) for a in (*s.exact.ts, *s.exact.dur)])


@needs_sink
def test_the_sink_collects_what_the_batch_does() -> None:
    """The compiled Slices with a sink (wizard/_core.c, "The .pftrace events handed to the collector as they are
    made") against its twin, which keeps the batch for Collector.add: random calls as the reader makes them, within
    and at the bounds, a batch due every few events, events of every category with and without args, a handler that
    keeps events and one that writes an arg into the event it is handed; the same outcomes, the same collector
    (tables, category counts in their order, events, last start, memos, the kept events as they were) and exact
    times."""
    rng = random.Random(4848)
    names = ("n", "first", "kept")
    for bounds in (BOUNDS, (3, 1 << 20, 2, 4, 150, 16, 10), (9, 1 << 20, 2, 1, 1 << 20, 16, 10)):
        for _ in range(40):
            calls = [(m, tuple(rng.choice(names) if a == "n" else a for a in args)) for m, args in operations(rng, 60)]
            assert sunk(Compiled, calls, bounds, True) == sunk(perfetto.PureSlices, calls, bounds, False)
    calls = [("event", ("user_annotation", "first", 1, "t", 1_000, 5, {"correlation": 4}, None)),
             ("event", ("user_annotation", "kept", 1, "t", 2_000, 5, {"grid": [1, 2, 3]}, None)),
             ("event", ("cpu_op", "op", 1, "t", 3_000, 5, {}, None))]  # fmt: skip
    ours = sunk(Compiled, calls, BOUNDS, True)
    assert ours == sunk(perfetto.PureSlices, calls, BOUNDS, False)
    assert "written" not in repr(ours[1][1])  # the second event's args: none of what was written into the first's


def sunk_packets(kind: Any, batch: list[bytes], sink: bool) -> Any:
    """A run of packets read as the reader reads it (packets, each packet it leaves skipped), through a collector."""
    collector, s, seq, k = Keeping(TraceContents(path="")), made(kind), sequence(), 0
    assert s.sink(collector) is sink
    while k < len(batch):
        kind_, value = call_outcome(s.packets, batch, k, (1, seq))
        if kind_ != "value":
            break
        if value[1]:
            hand_over(s, collector)
        k = value[0] + (0 if value[1] else 1)
    hand_over(s, collector)
    return kept(collector), plain(seq)


@needs_sink
def test_packets_through_the_sink_collect_what_the_batch_does() -> None:
    for batch in runs():
        assert sunk_packets(Compiled, batch, True) == sunk_packets(perfetto.PureSlices, batch, False)


@needs_sink
def test_an_error_in_a_handler_leaves_what_was_handed_over_before_it() -> None:
    """A handler that raises stops the read where it raises: at once through the sink, at the batch's add in the
    twin. What the events before it gathered reaches the tables all the same (the sink's at the next take, the
    batch's add flushing it before the error goes on), with the same counts."""

    class Raising(Keeping):
        def _complete(self, ev: Event) -> None:
            if ev.name == "boom":
                raise ValueError("boom")
            super()._complete(ev)

    results = []
    for kind, sink in ((Compiled, True), (perfetto.PureSlices, False)):
        collector, s = Raising(TraceContents(path="")), made(kind)
        assert s.sink(collector) is sink
        s.event("cpu_op", "a", 1, "t", 1_000, 5, {})
        with pytest.raises(ValueError, match="boom"):
            s.event("user_annotation", "boom", 1, "t", 2_000, 5, {})
            hand_over(s, collector)  # the twin's batch meets the handler here
        hand_over(s, collector)
        assert collector.c.ops.count == 1 and collector.c.events == 2
        results.append(kept(collector))
    assert results[0] == results[1]


@needs_sink
def test_a_sink_is_set_only_where_the_collectors_dispatch_is_compiled() -> None:
    """None turns the sink off (the batch again, what was handed over flushed first); the twin has none."""
    collector, s = Collector(TraceContents(path="")), made(Compiled)
    assert s.sink(collector) is True
    s.event("cpu_op", "a", 1, "t", 1_000, 5, {})
    assert s.batch == [] and collector.c.events == 0
    assert s.sink(None) is False  # flushed
    assert collector.c.events == 1 and collector.c.ops.count == 1
    s.event("cpu_op", "b", 1, "t", 2_000, 5, {})
    assert [ev.name for ev in s.batch] == ["b"]
    assert perfetto.PureSlices.sink(made(perfetto.PureSlices), collector) is False


@needs_sink
def test_no_sink_for_structs_other_than_the_collectors() -> None:
    """The sink fills the Event and EventArgs whose slots json_bind found: a Slices bound to other structs keeps its
    batch (sink answers False)."""

    class Other(msgspec.Struct):
        cat: Any = None

    categories = tuple(
        getattr(events, f"{kind}_CATEGORIES") for kind in ("KERNEL", "GPU_OP", "OP", "RUNTIME", "PYTHON")
    )
    tables = (KERNELS, GPU_OPS, SLICES)
    core.bind_slices(Other, EventArgs, perfetto._NO_ARGS, categories, tables, perfetto.ARGS_READ, perfetto._Track)
    try:
        assert made(Compiled).sink(Collector(TraceContents(path=""))) is False
    finally:
        perfetto.bind_core_slices(core)
    assert made(Compiled).sink(Collector(TraceContents(path=""))) is True


@needs_sink
def test_a_handler_that_takes_or_sinks_again_is_refused_in_words() -> None:
    """A handler called while the sink hands an event over that calls take() or sink() on the same Slices (the
    review's reproducer: the run was freed under the event, a use after free) gets a RuntimeError; the read's
    events before it are not lost."""

    class Reentrant(Collector):
        slices: Any = None
        call = "take"

        def _complete(self, ev: Event) -> None:
            super()._complete(ev)
            self.slices.take() if self.call == "take" else self.slices.sink(None)

    for call in ("take", "sink"):
        collector, s = Reentrant(TraceContents(path="")), made(Compiled)
        collector.slices, collector.call = s, call
        assert s.sink(collector) is True
        s.event("cpu_op", "a", 1, "t", 1_000, 5, {})
        with pytest.raises(RuntimeError, match="while a handler ran"):
            s.event("user_annotation", "x", 1, "t", 2_000, 5, {})
        collector.call = "none"
        hand_over(s, collector)
        assert (collector.c.events, collector.c.ops.count) == (2, 1)


@needs_sink
def test_an_event_after_a_failed_one_starts_clean() -> None:
    """A handler raises on an event with a grid, the error kept (its traceback holds the event): the next event
    through the same Slices has no grid, as the twin's has none (the review: the reused args were left as the
    failed event had them)."""

    class Raising(Collector):
        def __init__(self, contents: TraceContents) -> None:
            super().__init__(contents)
            self.seen: list[Any] = []

        def _complete(self, ev: Event) -> None:
            if ev.name == "boom":
                raise ValueError("boom")
            self.seen.append((ev.name, ev.args.grid if ev.args else None, ev.args.correlation if ev.args else None))
            super()._complete(ev)

    seen, kept_errors = [], []
    for kind, sink in ((Compiled, True), (perfetto.PureSlices, False)):
        collector, s = Raising(TraceContents(path="")), made(kind)
        assert s.sink(collector) is sink
        try:
            s.event("user_annotation", "boom", 1, "t", 1_000, 5, {"grid": [1, 2, 3]})
            hand_over(s, collector)
        except ValueError as error:
            kept_errors.append(error)
        s.event("user_annotation", "next", 1, "t", 2_000, 5, {"correlation": 4})
        hand_over(s, collector)
        seen.append(collector.seen)
    assert seen[0] == seen[1] == [("next", None, 4)] and len(kept_errors) == 2


@needs_sink
def test_the_sink_keeps_the_order_of_events_around_a_batch() -> None:
    """A sink is refused while the batch holds events (they would reach the collector after later ones); the
    structs bound again while a run is open send the next events to the batch, after the run's."""
    collector, s = Collector(TraceContents(path="")), made(Compiled)
    s.event("cpu_op", "first", 1, "t", 1_000, 5, {})
    with pytest.raises(ValueError, match="the batch holds events"):
        s.sink(collector)
    hand_over(s, collector)
    assert s.sink(collector) is True
    s.event("cpu_op", "second", 1, "t", 2_000, 5, {})
    hand_over(s, collector)
    assert collector.c.events == 2 and collector.c.last_ts == 2.0


@needs_sink
def test_a_sink_must_be_a_collector() -> None:
    with pytest.raises(AttributeError):
        made(Compiled).sink(object())


@needs_sink
def test_the_last_start_is_the_collectors_for_an_int_start() -> None:
    """A pending launch's start given as an int (the reader's are floats): the last start as Collector.add reads
    it, a float of it, on both paths; one past a double's range is not a start."""
    for us, expected in ((7, 7.0), (10**400, 2.0)):
        got = []
        for kind, sink in ((Compiled, True), (perfetto.PureSlices, False)):
            collector, s = Collector(TraceContents(path="")), made(kind)
            assert s.sink(collector) is sink
            s.event("cpu_op", "a", 1, "t", 2_000, 5, {}, None)
            s.event("user_annotation", "b", 1, "t", 3_000, 5, {}, us)
            hand_over(s, collector)
            got.append(collector.c.last_ts)
        assert got == [expected, expected]


@needs_sink
def test_an_open_run_is_seen_by_the_cyclic_gc() -> None:
    """A collector that holds its Slices, a run open (the collector's bound methods held by it): the cycle is
    collected (the review: the run was not traversed)."""

    def cycle() -> Any:
        collector = Collector(TraceContents(path=""))
        s = made(Compiled)
        collector.slices = s  # type: ignore[attr-defined]
        assert s.sink(collector) is True
        s.event("cpu_op", "a", 1, "t", 1_000, 5, {})
        return weakref.ref(collector)

    ref = cycle()
    gc.collect()
    assert ref() is None


@needs_sink
def test_the_collectors_structs_bound_again_while_a_run_is_open() -> None:
    """json_bind run again (as a test's smaller bound does) while the sink holds a run: the next events go to the
    batch, after the run's at take() (the review: the run's Event was written at the slots of the binding before)."""
    collector, s = Collector(TraceContents(path="")), made(Compiled)
    assert s.sink(collector) is True
    s.event("cpu_op", "first", 1, "t", 1_000, 5, {})
    assert collector_module.compiled_collect_events() is not None  # json_bind again, the same structs
    s.event("cpu_op", "second", 1, "t", 2_000, 5, {})
    assert [ev.name for ev in s.batch] == ["second"]
    hand_over(s, collector)
    assert (collector.c.events, collector.c.last_ts, collector.c.ops.count) == (2, 2.0, 2)
    assert s.sink(collector) is True  # a new run, on the binding now
    s.event("cpu_op", "third", 1, "t", 3_000, 5, {})
    assert s.batch == []
