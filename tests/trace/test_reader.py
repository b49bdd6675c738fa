"""The streaming reader: every real format, bad tokens, truncation, corruption, big-file paths."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REAL_TRACES, TRACES, kernels_of, load_json_trace, needs_shared
from wizard.errors import InputFileError, TraceReadError
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.read.reader import ReaderConfig, TraceContents, read_trace


@needs_shared
@pytest.mark.parametrize(("name", "kernels"), sorted(REAL_TRACES.items()))
def test_every_real_trace_reads_completely(name: str, kernels: int) -> None:
    contents = read_trace(TRACES / name)
    doc = load_json_trace(TRACES / name)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    assert contents.events == len(events)
    assert len(contents.kernels) == kernels == len(kernels_of(doc))
    assert contents.truncation is None
    for record, event in zip(contents.kernels, kernels_of(doc), strict=True):
        assert record.name == event["name"]
        assert record.grid == (tuple(event["args"]["grid"]) if "grid" in event["args"] else None)


@needs_shared
def test_formats_are_recognised() -> None:
    assert read_trace(TRACES / "v100-resnet50-pt18-array-format.pt.trace.json.gz").layout == "array"
    old = read_trace(TRACES / "v100-old-keys-gpu-metrics.json")
    assert old.device_properties and old.kernels[0].occupancy_key == "theoretical occupancy %"
    assert read_trace(TRACES / "mi300-bert-small.json.gz").is_rocm
    assert not read_trace(TRACES / "h100-bert-small.json.gz").is_rocm


def build(tmp_path: Path, name: str = "t.json", **kwargs: object) -> tuple[TraceBuilder, Path]:
    b = TraceBuilder(**kwargs)  # type: ignore[arg-type]
    for spec in demo_launches() * 20:
        b.add(spec)
    return b, tmp_path / name


def test_gzip_minified_and_plain_read_the_same(tmp_path: Path) -> None:
    b, path = build(tmp_path)
    plain = read_trace(b.write(path))
    zipped = read_trace(b.write(tmp_path / "t.json.gz"))
    minified = read_trace(b.write(tmp_path / "m.json", minified=True))
    assert zipped.compressed and not plain.compressed
    for other in (zipped, minified):
        assert other.events == plain.events
        assert [k.blocks_per_sm.value for k in other.kernels] == [k.blocks_per_sm.value for k in plain.kernels]


@pytest.mark.parametrize("style", ["bare", "quoted"])
def test_non_finite_values_and_their_spelling(tmp_path: Path, style: str) -> None:
    b = TraceBuilder(nonfinite=style)
    b.add(KernelSpec("k", (99, 1, 1), (128, 1, 1), plant="C"))
    b.add(KernelSpec("zero", (65536, 65536, 1), (128, 1, 1), plant="C"))  # 0/0 = nan
    path = b.write(tmp_path / "c.json")
    if style == "bare":
        with pytest.raises(json.JSONDecodeError):
            json.loads(path.read_text())  # what every other tool runs into
    kernels = read_trace(path).kernels
    assert kernels[0].blocks_per_sm.value == float("inf") and kernels[0].blocks_per_sm.spelling == style
    nan = kernels[1].blocks_per_sm.value
    assert nan is not None and math.isnan(nan)


def test_names_containing_inf_or_nan_are_not_mangled(tmp_path: Path) -> None:
    b = TraceBuilder(nonfinite="bare")
    b.add(KernelSpec("void nan_to_num_kernel<inf>", (99, 1, 1), (128, 1, 1), op="aten::nan_to_num", plant="C"))
    contents = read_trace(b.write(tmp_path / "n.json"))
    assert contents.kernels[0].name == "void nan_to_num_kernel<inf>"


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_truncated_trace_is_read_up_to_the_cut(tmp_path: Path, suffix: str) -> None:
    b, _ = build(tmp_path)
    b.add(KernelSpec("last_kernel", (100000, 30000, 1), (256, 1, 1)))
    full = b.text()
    cut = len(full) - 400
    path = tmp_path / f"cut{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(full.encode())[: len(gzip.compress(full[:cut].encode()))])
    else:
        path.write_text(full[:cut])
    contents = read_trace(path)
    assert contents.truncation is not None
    assert contents.events > 100
    assert "byte" in contents.truncation.detail or "cut off" in contents.truncation.detail


def test_truncation_between_events_says_nothing_was_lost(tmp_path: Path) -> None:
    b, path = build(tmp_path)
    text = b.text()
    path.write_text(text[: text.rindex("}") - 1].rstrip().rstrip("]").rstrip())
    contents = read_trace(path)
    assert contents.truncation is not None


def test_corruption_names_file_and_byte_offset(tmp_path: Path) -> None:
    b, path = build(tmp_path)
    text = b.text()
    at = text.index('"ph": "X"', 5000)
    path.write_text(text[:at] + '"ph": X' + text[at + 9 :])
    with pytest.raises(TraceReadError) as info:
        read_trace(path)
    assert info.value.offset == at + len('"ph": ')
    assert str(info.value).startswith(f"{path}: byte {at + 6}: invalid JSON")


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty"), (b"hello", "not a profiler trace"), (b'{"traceEvents": 3}', "not an array")],
)
def test_not_a_trace(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message):
        read_trace(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file"):
        read_trace(tmp_path / "nope.json")
    with pytest.raises(InputFileError, match="is a directory"):
        read_trace(tmp_path)


def test_boundary_inside_a_nested_array_falls_back_exactly(tmp_path: Path) -> None:
    """A separator inside args (an array of objects) must not split an event."""
    events = []
    for i in range(500):
        events.append(
            f'{{"ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": 1, "ts": {i * 10}, "dur": 5, '
            '"args": {"nested": [{"a": 1},\n {"b": 2}]}}'
        )
        events.append(
            f'{{"ph": "X", "cat": "kernel", "name": "k{i}", "pid": 0, "tid": 7, "ts": {i}, "dur": 5, '
            '"args": {"device": 0, "grid": [1,1,1], "block": [32,1,1], "warps per SM": 1.0}}'
        )
    path = tmp_path / "nested.json"
    path.write_text('{"traceEvents": [\n  ' + ",\n  ".join(events) + "\n]}")
    contents = read_trace(path, config=ReaderConfig(block_size=2048, workers=0))
    assert contents.events == 1000 and len(contents.kernels) == 500 and contents.ops.count == 500


def test_keys_after_the_event_list_are_read(tmp_path: Path) -> None:
    b, path = build(tmp_path)
    doc = json.loads(b.text())
    props = doc.pop("deviceProperties")
    doc["deviceProperties"] = props  # after traceEvents, as TraceLens writes it
    path.write_text(json.dumps(doc, indent=2))
    assert read_trace(path).device_properties[0]["numSms"] == 132


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 70000),
            st.integers(1, 70000),
            st.integers(1, 4),
            st.sampled_from([32, 128, 256, 1024]),
            st.integers(0, 120000),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_round_trip_of_built_traces(tmp_path: Path, launches: list[tuple[int, int, int, int, int]]) -> None:
    b = TraceBuilder(gpu="A100")
    for gx, gy, gz, threads, smem in launches:
        b.add(KernelSpec("k", (gx, gy, gz), (threads, 1, 1), 32, smem))
    contents = read_trace(b.write(tmp_path / "r.json"))
    assert [k.grid for k in contents.kernels] == [(gx, gy, gz) for gx, gy, gz, _, _ in launches]


def _summary(contents: TraceContents) -> tuple[object, ...]:
    return (
        contents.events,
        [(k.index, k.name, k.grid, k.blocks_per_sm.value) for k in contents.kernels],
        len(contents.runtime),
        contents.ops.count,
        contents.python.count,
        contents.truncation,
    )


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_parallel_read_equals_sequential(tmp_path: Path, suffix: str) -> None:
    b = TraceBuilder(nonfinite="quoted")
    for spec in demo_launches() * 400:
        b.add(spec)
    b.add(KernelSpec("wrapped", (100000, 30000, 1), (256, 1, 1)))
    b.add(KernelSpec("unknown", (99, 1, 1), (128, 1, 1), plant="C"))
    path = b.write(tmp_path / f"big{suffix}")
    sequential = read_trace(path, config=ReaderConfig(block_size=64 << 10, workers=0))
    assert sequential.timing["workers"] == 0
    parallel = read_trace(path, config=ReaderConfig(block_size=64 << 10, workers=2))
    assert parallel.timing["workers"] == 2
    assert _summary(parallel) == _summary(sequential)
    from wizard.trace.metrics.classify import link_op

    link = link_op(parallel, parallel.kernels[-300])  # launch 902 of 1,202 (902 % 3 == 2): the GEMM
    assert link is not None and link.op == "aten::mm" and link.input_dims == "[[1024,4096],[4096,2048]]"
    assert link.python_stack == ["train.py(41): step", "model.py(95): forward"]


def test_parallel_read_falls_back_to_the_exact_path(tmp_path: Path) -> None:
    """A block a worker cannot decode sends the whole file down the sequential path."""
    events = []
    for i in range(3000):
        events.append(
            f'{{"ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": 1, "ts": {i * 10}, "dur": 5, '
            '"args": {"nested": [{"a": 1},\n {"b": 2}]}}'
        )
    path = tmp_path / "nested.json"
    path.write_text('{"traceEvents": [\n  ' + ",\n  ".join(events) + "\n]}")
    contents = read_trace(path, config=ReaderConfig(block_size=16 << 10, workers=2))
    assert contents.events == 3000 and contents.ops.count == 3000
    assert contents.timing["workers"] == 0  # it fell back


def test_inspection_while_reading_equals_inspection_after(tmp_path: Path) -> None:
    from wizard.trace.inspection.results import Inspection
    from wizard.trace.inspection.run import inspect_trace

    b = TraceBuilder()
    for spec in demo_launches() * 300:
        b.add(spec)
    b.add(KernelSpec("wrapped", (100000, 30000, 1), (256, 1, 1)))
    path = b.write(tmp_path / "t.json")
    one = ReaderConfig(block_size=64 << 10, parallel_block=32 << 10, workers=0)
    after = Inspection([inspect_trace(path, config=one)]).to_dict()
    two = ReaderConfig(block_size=64 << 10, parallel_block=32 << 10, workers=2)
    during = Inspection([inspect_trace(path, config=two)]).to_dict()
    for doc in (after, during):
        doc["reports"][0].pop("timing")
    assert during == after and during["mechanisms"]["A"] == 1


# -- the cutter, against the exact decoder --------------------------------------------------------

_nasty_text = st.text(
    alphabet=st.sampled_from(["a", "}", "{", ",", '"', "\\", "\n", " ", "[", "]", ":", "é", "\u2028"]), max_size=12
)
_event = st.fixed_dictionaries(
    {"name": _nasty_text, "ts": st.integers(0, 10**6)},
    optional={"args": st.dictionaries(_nasty_text, st.one_of(_nasty_text, st.lists(st.integers(), max_size=3)))},
)


def _layout(events: list[dict[str, object]], layout: str) -> tuple[bytes, list[int], list[int]]:
    """The event list's bytes, and where each event starts and ends (found by the exact decoder)."""
    if layout == "minified":
        parts = [json.dumps(e, separators=(",", ":")) for e in events]
        sep = ","
    elif layout == "indented":
        parts = [json.dumps(e, indent=2) for e in events]
        sep = ",\n"
    else:
        parts = [json.dumps(e, ensure_ascii=False) for e in events]  # raw UTF-8 too
        sep = ",\n  "
    text = sep.join(parts)
    decoder, starts, ends, i = json.JSONDecoder(), [], [], 0
    while i < len(text):
        starts.append(len(text[:i].encode()))
        _, j = decoder.raw_decode(text, i)
        ends.append(len(text[:j].encode()) - 1)
        i = j
        while i < len(text) and text[i] in ", \n":
            i += 1
    return text.encode(), starts, ends


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event, min_size=1, max_size=12),
    layout=st.sampled_from(["minified", "lines", "indented"]),
    data=st.data(),
)
def test_the_cutter_cuts_only_between_events(events: list[dict[str, object]], layout: str, data: st.DataObject) -> None:
    """Names and keys full of },{ quotes, backslashes and escaped newlines: every cut is between two events."""
    from wizard.trace.read.scan import after_separator, find_cut

    buf, starts, ends = _layout(events, layout)
    end = data.draw(st.integers(1, len(buf)), label="window end")
    cut = find_cut(buf, 0, end)
    # The last event in the window whose separator (up to the next event's '{') is in the window too.
    whole = [ends[i] for i in range(len(events) - 1) if starts[i + 1] < end]
    assert cut == (whole[-1] if whole else None)
    if cut is not None:
        n = ends.index(cut) + 1
        assert json.loads(b"[" + buf[: cut + 1] + b"]") == events[:n]
        assert after_separator(buf, cut) == starts[n]


def test_a_directory_of_folders_says_its_folders(tmp_path: Path) -> None:
    """A newcomer gave a folder of pairs, each pair a folder: the error named the suffixes and not the folders, one
    level down, that hold the traces. Without folders the message is as it was."""
    from wizard.trace.read.reader import iter_trace_files

    for name in ("before-after", "a\x1b[2Jb", *(f"run{k}" for k in range(5))):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("not a trace")
    with pytest.raises(InputFileError) as raised:
        list(iter_trace_files([str(tmp_path)]))
    said = str(raised.value)
    assert said.endswith(
        "; it holds 7 folders (a\\x1b[2Jb, before-after, run0, run1, run2 and 2 more): name one, or its files"
    )
    empty = tmp_path / "run0"
    with pytest.raises(InputFileError) as raised:
        list(iter_trace_files([str(empty)]))
    assert str(raised.value).endswith(".perfetto-trace)")
