"""The JSON reader's per-event shortcuts (issue 48 item 1) read what the slow spellings read: integer times decoded
as doubles by msgspec, the first 4 KB window for top-level values, the flagship's fixed-launch count and its
column-wise classification. Each answer is computed here a second way, from the file's own JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, needs_shared, write_trace
from wizard.inspect_options import DEFAULT_OPTIONS
from wizard.trace.metrics.classify import Classifier, analyse
from wizard.trace.metrics.devices import device_table
from wizard.trace.read.events import EVENTS_DECODER, decode_block
from wizard.trace.read.reader import ReaderConfig, read_trace
from wizard.trace.read.records import NO_CORRELATION, KernelTable

ONE_PROCESS = ReaderConfig(workers=0)


@pytest.mark.parametrize("value", [1740461679481602, 2**53 + 1, 2**64 + 1, 10**30, 0])
def test_an_integer_time_is_the_double_python_makes_of_it(value: int) -> None:
    events = decode_block(EVENTS_DECODER, f'{{"cat": "cpu_op", "ts": {value}, "dur": {value}}}'.encode())
    assert events is not None
    assert type(events[0].ts) is float and events[0].ts == float(value)
    assert type(events[0].dur) is float and events[0].dur == float(value)


def _op(ts: Any, name: str = "aten::mm") -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 2, "ts": ts, "dur": 3}


def test_a_time_past_a_double_drops_its_op_as_before(tmp_path: Path) -> None:
    """msgspec refuses a time no double holds; the exact path then reads the block, and the op without a usable
    start is dropped, as the integer path dropped it."""
    huge = "HUGE_TIME"
    doc = {"traceEvents": [_op(10), _op(huge), _op(20), {"ph": "X", "cat": "user_annotation", "name": "a",
                                                           "pid": 1, "tid": 2, "ts": 5, "dur": 30}]}  # fmt: skip
    path = write_trace(doc, tmp_path / "t.json", bare={huge: "1" + "0" * 400})
    contents = read_trace(path, config=ONE_PROCESS)
    usable = [e for e in json.loads(path.read_text())["traceEvents"] if e["cat"] == "cpu_op" and e["ts"] < 1e308]
    assert contents.ops.count == len(usable) == 2
    assert contents.events == 4


def test_a_top_level_value_longer_than_the_first_window_is_read_whole(tmp_path: Path) -> None:
    digits = "7" * 4200  # past the 4 KB first window; a number may stop anywhere, so the cut one must not be taken
    listed = [{"id": n, "name": "x" * 300} for n in range(40)]  # a 12 KB list
    doc = {"schemaVersion": 1, "traceEvents": [_op(1)], "listed": listed, "big": "BIG_NUMBER"}
    path = write_trace(doc, tmp_path / "t.json", bare={"BIG_NUMBER": digits})
    contents = read_trace(path, config=ONE_PROCESS)
    assert contents.metadata["listed"] == listed
    assert contents.metadata["big"] == digits  # 4,200 digits: kept as text (the reader's bound on integers)
    assert contents.ops.count == 1


def _kernel(ts: float, grid: int, fixed: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {"device": 0, "stream": 7, "correlation": int(ts), "grid": [grid, 1, 1],
                            "block": [128, 1, 1], "registers per thread": 32, "shared memory": 0,
                            "blocks per SM": grid / 132, "warps per SM": grid * 4 / 132,
                            "est. achieved occupancy %": 100}  # fmt: skip
    if fixed is not None:
        args["warpwizard mechanism"] = fixed
    return {"ph": "X", "cat": "kernel", "name": f"k{grid}", "pid": 0, "tid": 7, "ts": ts, "dur": 2, "args": args}


def test_the_already_fixed_note_counts_every_fixed_launch(tmp_path: Path) -> None:
    kernels = [_kernel(10.0 + n, 264 + (n % 3), "A" if n % 4 == 0 else None) for n in range(30)]
    props = [{"id": 0, "name": "NVIDIA H100", "numSms": 132, "computeMajor": 9, "computeMinor": 0,
              "maxThreadsPerMultiprocessor": 2048, "regsPerMultiprocessor": 65536,
              "sharedMemPerMultiprocessor": 233472, "maxThreadsPerBlock": 1024, "warpSize": 32,
              "sharedMemPerBlock": 49152, "regsPerBlock": 65536}]  # fmt: skip
    path = write_trace({"deviceProperties": props, "traceEvents": kernels}, tmp_path / "t.json")
    metrics = analyse(read_trace(path, config=ONE_PROCESS))
    fixed = sum(1 for e in json.loads(path.read_text())["traceEvents"] if "warpwizard mechanism" in e["args"])
    assert fixed == 8
    assert any(note.startswith(f"{fixed} kernels were already corrected") for note in metrics.notes), metrics.notes


@needs_shared
@pytest.mark.parametrize("name", ["h800-deepseek-train-rank0.json.gz", "a100-alexnet.json.gz", "b200-eager.json.gz"])
def test_classifying_from_the_columns_finds_what_a_record_per_launch_finds(name: str) -> None:
    """The plots option keeps the record-per-launch loop (the picture needs every record): both loops must give the
    same groups, examples, counts and totals."""
    contents = read_trace(TRACES / name, config=ONE_PROCESS)
    columns = analyse(contents, DEFAULT_OPTIONS)
    records = analyse(contents, dataclasses.replace(DEFAULT_OPTIONS, plots=True))
    assert columns.groups, "a trace with findings"
    for field in ("kernels_checked", "mechanisms", "wrong_launches", "max_true_warps_per_sm", "computed_launches"):
        assert getattr(columns, field) == getattr(records, field), field
    assert [g.to_dict() for g in columns.groups] == [g.to_dict() for g in records.groups]


@needs_shared
def test_classifying_block_by_block_matches_one_launch_at_a_time() -> None:
    """While workers decode, the classifier is fed block by block: counting per shape within each block must keep
    every total and every counter's order (the report lists mechanisms in the order first seen) as the
    record-per-launch loop over the whole table gives them."""
    contents = read_trace(TRACES / "h800-deepseek-train-rank0.json.gz", config=ONE_PROCESS)
    devices = device_table(contents.device_properties, contents.kernels, None)
    whole = Classifier(devices, contents.is_rocm, contents, plots=True)
    whole.feed(contents.kernels)
    growing = KernelTable()
    blocks = Classifier(devices, contents.is_rocm, contents)
    ts, dur, corr, shape_of, shapes = contents.kernels.columns()
    for i in range(len(ts)):
        correlation = None if corr[i] == NO_CORRELATION else corr[i]
        growing.add(ts[i], dur[i], correlation, shapes[shape_of[i]])
        if i % 97 == 0 or i == len(ts) - 1:
            blocks.feed(growing)
    assert blocks.fed == whole.fed == len(contents.kernels) > 97
    assert list(blocks.mechanisms.items()) == list(whole.mechanisms.items())
    assert list(blocks.tool_notes.items()) == list(whole.tool_notes.items())
    for field in ("checked", "wrong_launches", "computed", "max_true_wps", "max_computed_wps"):
        assert getattr(blocks, field) == getattr(whole, field), field
    assert list(blocks.groups) == list(whole.groups)
    assert [g.to_dict() for g in blocks.groups.values()] == [g.to_dict() for g in whole.groups.values()]
    assert [g.launch_refs for g in blocks.groups.values()] == [g.launch_refs for g in whole.groups.values()]


_TAIL_IMPORTS = """
import sys
from wizard.inspect_options import DEFAULT_OPTIONS
from wizard.trace.inspection.run import load_health_modules
from wizard.trace.metrics.classify import analyse
from wizard.trace.read.reader import ReaderConfig, read_trace
contents = read_trace(sys.argv[1], config=ReaderConfig(workers=0))
metrics = analyse(contents)
load_health_modules()
before = set(sys.modules)
from wizard.trace.health.checks import check_trace
check_trace(contents, metrics, DEFAULT_OPTIONS)
print(sorted(set(sys.modules) - before))
"""


@needs_shared
def test_the_health_checks_import_nothing_after_the_last_block() -> None:
    """What the checks import is loaded while a big file's workers decode (``load_health_modules``): once it ran,
    the checks after the last block import nothing (numpy.ma, which np.unique's first call imports, was 21 ms of
    that serial tail)."""
    import subprocess
    import sys

    trace = str(TRACES / "h800-deepseek-train-rank0.json.gz")
    done = subprocess.run([sys.executable, "-c", _TAIL_IMPORTS, trace], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_innermost_op_is_the_latest_starting_one_that_holds_the_time() -> None:
    """``IntervalIndex.innermost`` (its own loop for one answer) against a scan of every interval written here:
    in the (start, -end) order, the last interval with start <= t <= end."""
    import random

    from wizard.trace.read.records import IntervalIndex

    rng = random.Random(48)
    index = IntervalIndex()
    spans = []
    for n in range(400):
        start = rng.uniform(0, 1000)
        end = start + rng.choice([0.0, rng.uniform(0, 5), rng.uniform(0, 200), float("nan")])
        tid = rng.choice([1, 2])
        spans.append((tid, start, end, n))
        index.add(7, tid, start, end, index.ref(f"op{n}"))
    for _ in range(600):
        tid, t = rng.choice([1, 2, 3]), rng.uniform(-10, 1100)
        mine = sorted(((s, -e, n) for th, s, e, n in spans if th == tid), key=lambda x: (x[0], x[1]))
        holding = [n for s, neg_end, n in mine if s <= t and -neg_end >= t]
        expected = f"op{holding[-1]}" if holding else None
        assert index.innermost(7, tid, t) == expected, (tid, t)
