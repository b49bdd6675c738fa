"""A review of the compiled core's .pftrace event functions (wizard/_core.c, section "pfcore") and their twins in
wizard/trace/read/perfetto.py: what each finding was, shown on both paths (the compiled one and the pure one that
``WARPWIZARD_PURE=1`` takes), each test failing before its fix.

1. A TrackEvent's inline category (field 22) was decoded whole and not counted in what an open slice holds:
   100,000 open slices of a multi-MB category were bounded by nothing. It is now cut as a name is.
2. A legacy JSON annotation value nested ~1,000 deep decoded to a list on one path and text on the other (msgspec's
   limit is the Python stack left). Nesting is now counted in the bytes: deeper than JSON_DEPTH is text.
3. ``event_args`` kept the count of notes taken at its start while Python code it calls (a sequence's property)
   could change the list: it read past the list's end.
4. A decoder's result that is not a pair crashed the core instead of raising as the twin does.
5. Nits: a category iid of a fixed wire type names none without calling Python; calling the core before perfetto.py
   bound it is a RuntimeError (a programming error, not a damaged file).

Files and messages are built here byte by byte from the wire format (tests.helpers.encode_varint), independently of
the reader.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import call_outcome, dfield, tag, vfield
from wizard.trace.read import perfetto, protobuf
from wizard.trace.read.collector import MAX_NAME, TraceContents

core = pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
# what protobuf.py and perfetto.py bind at import, also under WARPWIZARD_PURE=1 (then the core is compared all the same)
protobuf.bind_core(core)


def bind_events(decode: Any = perfetto._decode_annotation) -> None:
    perfetto.bind_core_events(core, decode=decode)


bind_events()

BIG = 5 << 20  # a category of 5 MB


def begin(ts: int, category: bytes, name: bytes = b"op") -> bytes:
    """A TracePacket (timestamp 8, sequence 10) with a TrackEvent (11): SLICE_BEGIN (type 9 = 1) on track 5 (11),
    its category inline (22) and its name (23)."""
    event = vfield(9, 1) + vfield(11, 5) + dfield(22, category) + dfield(23, name)
    return vfield(8, ts) + vfield(10, 1) + dfield(11, event)


def end(ts: int) -> bytes:
    return vfield(8, ts) + vfield(10, 1) + dfield(11, vfield(9, 2) + vfield(11, 5))


def trace_of(packets: list[bytes]) -> bytes:
    return b"".join(dfield(1, p) for p in packets)  # Trace.packet is field 1


@pytest.fixture(params=["compiled", "pure"])
def path_taken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reader with the core's event functions, then with their twins (the names perfetto.py binds them to)."""
    if request.param == "compiled":
        monkeypatch.setattr(perfetto, "_read_track_event", core.track_event)
        monkeypatch.setattr(perfetto, "_event_args", core.event_args)
        monkeypatch.setattr(perfetto, "_split_packets", core.split_run)
    else:
        monkeypatch.setattr(perfetto, "_read_track_event", perfetto.pure_track_event)
        monkeypatch.setattr(perfetto, "_event_args", perfetto.pure_event_args)
        monkeypatch.setattr(perfetto, "_split_packets", perfetto.pure_split_packets)
    return str(request.param)


# -- 1. an inline category is cut as a name is -----------------------------------------------------------------


def test_an_inline_category_is_cut_as_a_name_is() -> None:
    seq = perfetto._Sequence()
    wide = "∑".encode()  # 3 bytes: NAME_BYTES (4 x MAX_NAME) of them hold more than MAX_NAME characters
    for category, kept in ((b"c" * BIG, "c" * MAX_NAME), (wide * (BIG // 3), "∑" * MAX_NAME), (b"kernel", "kernel")):
        event = dfield(22, category) + dfield(23, b"op")
        for function in (core.track_event, perfetto.pure_track_event):
            assert function(event, 0, len(event), seq)[3] == kept


def test_open_slices_keep_the_cut_category_and_count_it(path_taken: str) -> None:
    """What an open slice holds counts its category: the bound on open slices' bytes bounds it too."""
    reader = perfetto._Reader(TraceContents(path="x.pftrace"))
    for ts in range(1, 4):
        reader.packet(begin(ts * 1000, b"c" * BIG))
    stack = reader.open[5]
    assert [len(began[2] or "") for began in stack] == [MAX_NAME] * 3
    assert reader.open_bytes == 3 * (len("op") + MAX_NAME)


def test_reading_open_slices_of_megabyte_categories_stays_small(tmp_path: Path, path_taken: str) -> None:
    """16 slices of a 5 MB category open at once (80 MB kept before): the read's heap peak is what one packet and
    the read's chunks take, not what the categories would."""
    count = 16
    path = tmp_path / "categories.pftrace"
    packets = [begin(ts * 1000, b"c" * BIG) for ts in range(1, count + 1)]
    path.write_bytes(trace_of(packets + [end((count + ts) * 1000) for ts in range(count)]))
    del packets
    tracemalloc.start()
    try:
        contents = perfetto.read_perfetto(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert contents.truncation is None
    assert peak < 40 << 20, f"{peak >> 20} MiB"


# -- 2. deep legacy JSON values: the same rule on both paths -----------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = 1
    for k in range(depth):
        value = [value] if k % 2 else {"k": value}
    return value


def nested_text(depth: int) -> bytes:
    """``nested(depth)`` as json.dumps writes it, built without recursion (json.dumps stops near 1,000 deep)."""
    opening = [b"[" if k % 2 else b'{"k": ' for k in range(depth)]
    closing = [b"]" if k % 2 else b"}" for k in range(depth)]
    return b"".join(reversed(opening)) + b"1" + b"".join(closing)


def frames_now() -> int:
    frame, count = sys._getframe(), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1  # type: ignore[assignment]
    return count


def depth_of(value: Any) -> int:
    """How deeply a decoded value nests (the second computation: the value walked, not its bytes scanned)."""
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    return 0


def grid_of(function: Callable[..., Any], text: bytes) -> Any:
    note = dfield(10, b"grid") + dfield(9, text)  # a name whose value the event keeps as decoded
    args: dict[str, Any] = {}
    function(note, [(0, len(note))], perfetto._Sequence(), args, 0)
    assert perfetto._ARG_FIELDS["grid"] not in perfetto._RAW_ARGS
    return args[perfetto._ARG_FIELDS["grid"]]


def at_stack_depth(frames: int, call: Callable[[], Any]) -> Any:
    """``call`` run ``frames`` Python frames down: what is left of the stack must not change the answer."""
    if frames <= 0:
        return call()
    return at_stack_depth(frames - 1, call)


@pytest.mark.parametrize("depth", [1, 2, perfetto.JSON_DEPTH - 1, perfetto.JSON_DEPTH, perfetto.JSON_DEPTH + 1,
                                   500, 995, 996, 997, 10_000])  # fmt: skip
def test_deep_json_values_are_text_past_json_depth_on_both_paths(depth: int) -> None:
    """Objects in arrays and bare arrays (``[[[1]]]``, as the review found: 995 of them were a list compiled and text
    pure), from a shallow and a deep stack, under the default recursion limit and one that leaves 1,010 frames."""
    lists: Any = 1
    for _ in range(min(depth, perfetto.JSON_DEPTH + 1)):
        lists = [lists]
    cases = [(nested_text(depth), nested(min(depth, perfetto.JSON_DEPTH + 1))),
             (b"[" * depth + b"1" + b"]" * depth, lists)]  # fmt: skip
    if depth < 900:
        assert cases[0][0] == json.dumps(nested(depth)).encode()
    limit = sys.getrecursionlimit()
    try:
        for recursion in (limit, frames_now() + 1010):
            sys.setrecursionlimit(recursion)
            room = recursion - frames_now() - 2 * perfetto.JSON_DEPTH - 50
            for frames in (0, room // 2, room):
                for function in (core.event_args, perfetto.pure_event_args):
                    for text, expected in cases:
                        value = at_stack_depth(frames, functools.partial(grid_of, function, text))
                        if depth <= perfetto.JSON_DEPTH:
                            assert depth_of(value) == depth and value == expected, (function, frames, recursion)
                        else:
                            assert value == text.decode(), (function, frames, recursion)
    finally:
        sys.setrecursionlimit(limit)


def test_brackets_in_strings_and_escapes_do_not_count() -> None:
    deep_text = "[" * 1000 + '\\"{' * 100  # escaped backslashes before escaped quotes
    for value in ([deep_text], {"a\\": [deep_text, nested(perfetto.JSON_DEPTH - 2)]}):
        text = json.dumps(value).encode()
        assert depth_of(value) in (1, perfetto.JSON_DEPTH)
        for function in (core.event_args, perfetto.pure_event_args):
            assert grid_of(function, text) == value
    text = json.dumps({"a\\": ["]" * 100, nested(perfetto.JSON_DEPTH - 1)]}).encode()  # 65 deep
    for function in (core.event_args, perfetto.pure_event_args):
        assert grid_of(function, text) == text.decode()
    for text in (b'"[[[', b"[" * 70 + b'"\\', b"]]]" + b"[" * 70, b'"\\"' + b"[" * 70):  # not JSON: text either way
        for function in (core.event_args, perfetto.pure_event_args):
            assert grid_of(function, text) == text.decode()


# -- 3. Python code run by event_args cannot make it read past the notes ---------------------------------------


class Meddling(perfetto._Sequence):
    """A sequence whose tables property empties the notes list the event's annotations came in (then refills it
    with spans past the bytes): the reader must read the notes as they were given."""

    def __init__(self, notes: list[Any]) -> None:
        super().__init__()
        self._tables = {"annotation_names": {1: "correlation", 2: "stream"}}
        self.notes = notes

    @property
    def tables(self) -> dict[str, dict[int, str]]:
        self.notes.clear()
        self.notes.extend([(10**6, 10**7)] * 3)
        return self._tables

    @tables.setter
    def tables(self, value: Any) -> None:
        pass


def test_event_args_read_the_notes_as_given_when_python_code_changes_them() -> None:
    first = vfield(1, 1) + vfield(3, 7)  # correlation (an interned name: the sequence's tables are read) = 7
    second = vfield(1, 2) + vfield(3, 9)  # stream = 9
    b = first + second
    results = []
    for function in (core.event_args, perfetto.pure_event_args):
        for _ in range(50):
            notes: list[Any] = [(0, len(first)), (len(first), len(b))]
            args: dict[str, Any] = {}
            size, entries = function(b, notes, Meddling(notes), args, 0)
        results.append((size, entries, args))
    correlation, external = perfetto._ARG_FIELDS["correlation"], perfetto._ARG_FIELDS["stream"]
    assert results[0] == results[1] == (len(b), 2, {correlation: 7, external: 9})


# -- 4. a decoder's result that is not a pair raises as the twin's does ----------------------------------------


def decoded_by(decode: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An annotation with a nested entry (the core hands those to perfetto's decoder), on both paths."""
    note = dfield(10, b"correlation") + dfield(11, dfield(10, b"k") + vfield(3, 1))
    for function in (core.event_args, perfetto.pure_event_args):
        bind_events(decode)
        monkeypatch.setattr(perfetto, "_decode_annotation", decode)
        args: dict[str, Any] = {}
        try:
            yield "value", function(note, [(0, len(note))], perfetto._Sequence(), args, 0), args
        except Exception as error:  # noqa: BLE001 - the error's type is what is compared
            yield type(error).__name__, None, None
        finally:
            bind_events()
            monkeypatch.undo()


NOTE_SIZE = len(dfield(10, b"correlation")) + 2 + 5  # the nested entry: a tag, a length, 3 + 2 bytes


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (("correlation",), ("IndexError", None, None)),
        (None, ("TypeError", None, None)),
        (3, ("TypeError", None, None)),
        (["correlation", [1]], ("value", (NOTE_SIZE, 0), {"correlation": [1]})),  # a list is never memoised
        (("correlation", 5), ("value", (NOTE_SIZE, 1), {"correlation": 5})),
    ],
)
def test_a_decoder_result_that_is_not_a_pair_raises_as_the_twin(
    result: Any, expected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = list(decoded_by(lambda *_: result, monkeypatch))
    assert outcomes == [expected, expected]


# -- 5. nits ---------------------------------------------------------------------------------------------------


def test_a_fixed_category_iid_names_none_without_calling_python() -> None:
    """A category iid of wire type 1 or 5 is no iid (packed_varints gives none): the core says so itself."""

    def refuse(*_: Any) -> Any:
        raise AssertionError("the core called Python for a fixed field")

    seq = perfetto._Sequence()
    seq.tables["categories"].update({0: "zero", 2: "kernel"})
    event = tag(3, 5) + bytes(4) + tag(3, 1) + bytes(8) + vfield(3, 2) + dfield(23, b"op")
    assert perfetto.pure_track_event(event, 0, len(event), seq)[3] == "kernel"
    core.bind(protobuf.Damaged, protobuf.MAX_FIELDS, protobuf.pure_fields, protobuf.pure_varint, refuse)
    try:
        assert core.track_event(event, 0, len(event), seq)[3] == "kernel"
    finally:
        core.bind(protobuf.Damaged, protobuf.MAX_FIELDS, protobuf.pure_fields, protobuf.pure_varint,
                  protobuf.pure_packed_varints)  # fmt: skip


def test_numbers_past_63_bits_take_the_twin_or_raise() -> None:
    b = trace_of([end(1000)] * 3)
    event = vfield(9, 1) + dfield(23, b"op")
    for huge in (2**70, -(2**70)):
        for split in ((b, huge, 10, 1 << 20), (b, 0, huge, 1 << 20), (b, 0, 10, huge)):
            assert call_outcome(core.split_run, *split) == call_outcome(perfetto.pure_split_packets, *split), split
        for event_args in ((event, huge, len(event)), (event, 0, huge)):
            seq = perfetto._Sequence()
            compiled = call_outcome(core.track_event, *event_args, seq)
            assert compiled == call_outcome(perfetto.pure_track_event, *event_args, seq), event_args
    with pytest.raises(OverflowError):
        core.bind_events(*([None] * 3), (), None, {}, {}, frozenset(), 2**70, 1, None, None, 1, 1)


def test_calling_the_core_before_it_is_bound_is_a_runtime_error() -> None:
    """In a fresh interpreter that imports the core alone (perfetto.py, which binds it, not imported)."""
    script = (
        "from wizard import _core\n"
        "for call in (lambda: _core.event_args(b'', [], None, {}, 0), lambda: _core.split_run(b'', 0, 1, 1),\n"
        "             lambda: _core.track_event(b'', 0, 0, None)):\n"
        "    try:\n"
        "        call()\n"
        "    except Exception as error:\n"
        "        print(type(error).__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    line = "RuntimeError bind_events was not called (wizard.trace.read.perfetto calls it)"
    assert done.stdout.splitlines() == [line] * 3
