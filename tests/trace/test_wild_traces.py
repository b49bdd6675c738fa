"""Traces as they come from the wild, through the real CLI: layouts, damage, malformed device facts,
overlapping mechanisms, a wrong --sms, and `trace fix` on all of it (its output parsed strictly)."""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import budget, run_inprocess, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.kineto_math import kineto_blocks_per_sm

OVERFLOW = KernelSpec("overflow", (100000, 30000, 1), (256, 1, 1), op="aten::index_select")


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _group(result: Any, mechanism: str) -> dict[str, Any]:
    groups = result.json["reports"][0]["groups"]
    return next(g for g in groups if g["mechanism"] == mechanism)


@pytest.mark.parametrize("layout", ["lines", "minified", "indented"])
def test_every_layout_gives_the_same_report(tmp_path: Path, layout: str) -> None:
    b = TraceBuilder()
    for spec in demo_launches() * 50:
        b.add(spec)
    b.add(OVERFLOW)
    doc = json.loads(b.text())
    path = tmp_path / "t.json"
    if layout == "minified":
        path.write_text(json.dumps(doc, separators=(",", ":")))
    elif layout == "indented":
        path.write_text(json.dumps(doc, indent=4))
    else:
        path.write_text(b.text())
    result = run_inprocess("trace", "inspect", "--json", str(path))
    assert result.status == 1
    report = result.json["reports"][0]
    assert report["events"] == len(doc["traceEvents"]) and report["timing"]["exact_path_s"] < 0.05
    assert _group(result, "A")["worst"]["grid"] == [100000, 30000, 1]


def test_every_wrong_launch_is_listed_up_to_the_bound(tmp_path: Path) -> None:
    b = TraceBuilder()
    for grid in ((100000, 30000, 1), (90000, 30000, 1), (80000, 40000, 1)):
        b.add(KernelSpec("same_name", grid, (256, 1, 1)))
    b.add(KernelSpec("big_but_fine", (96800, 1, 1), (256, 1, 1)))  # F: never listed as wrong
    path = b.write(tmp_path / "t.json")
    result = run_inprocess("trace", "inspect", "--json", str(path))
    group = _group(result, "A")
    assert result.json["schema"] == "warpwizard.trace-report/2"
    grids = [[100000, 30000, 1], [90000, 30000, 1], [80000, 40000, 1]]
    assert [launch["grid"] for launch in group["launches"]] == grids
    assert [launch["correlation"] for launch in group["launches"]] == [100, 101, 102]
    assert group["launches"][1]["reported"]["blocks per SM"] == kineto_blocks_per_sm((90000, 30000, 1), 132)
    assert group["launches"][1]["true"]["blocks per SM"] == pytest.approx(90000 * 30000 / 132)
    assert group["launches_omitted"] == 0
    assert all(g["launches"] == [] for g in result.json["reports"][0]["groups"] if g["mechanism"] == "F")
    bounded = _group(run_inprocess("trace", "inspect", "--json", "--max-launches", "1", str(path)), "A")
    assert len(bounded["launches"]) == 1 and bounded["launches_omitted"] == 2


def test_run_json_is_strict_json() -> None:
    """The transcript of a trace with bare inf values: once 'Infinity' tokens, now strings."""
    answers = "examples/answers/unknown-device-bare-inf.yaml"
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", answers, "--json")
    assert result.status == 0
    facts = next(e for e in result.json["entries"] if e["node"] == "inspect")["facts"]
    assert facts["worst_reported"]["blocks per SM"] == "inf"


def test_malformed_sm_counts_are_findings_that_name_the_bad_fact(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    for value, why in (
        (0, "numSms is 0, which no GPU has"),
        ("132", "numSms is '132' (str), not a number"),
        (None, "numSms is None (NoneType), not a number"),
        (1.5, "numSms is 1.5, not a whole number"),
    ):
        doc = json.loads(b.text())
        doc["deviceProperties"][0]["numSms"] = value
        result = run_inprocess("trace", "inspect", "--json", str(_write(tmp_path / "t.json", doc)))
        assert result.status == 1, value
        group = _group(result, "?")
        assert why in group["worst"]["evidence"]
        assert "warps per SM -78482864" in group["worst"]["evidence"]


def test_grids_that_are_not_whole_numbers(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    doc = json.loads(b.text())
    kernel = next(e for e in doc["traceEvents"] if e["cat"] == "kernel")
    kernel["args"]["grid"] = [100000.5, 30000, 1]
    result = run_inprocess("trace", "inspect", "--json", str(_write(tmp_path / "t.json", doc)))
    assert result.status == 1
    assert "grid or block is missing or not three whole numbers" in _group(result, "?")["worst"]["evidence"]


def test_zero_threads_per_sm_and_huge_integers_are_not_crashes(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    doc = json.loads(b.text())
    doc["deviceProperties"][0]["maxThreadsPerMultiprocessor"] = 0
    result = run_inprocess("trace", "inspect", str(_write(tmp_path / "zero.json", doc)))
    assert result.status == 1, result.stderr
    text = b.text().replace('"registers per thread": 32', '"registers per thread": ' + "9" * 5000)
    (tmp_path / "huge.json").write_text(text)
    huge = run_inprocess("trace", "inspect", "--json", str(tmp_path / "huge.json"))
    assert huge.status == 1, huge.stderr
    assert huge.json["mechanisms"]["A"] == 1


def test_overlapping_unknown_device_and_shared_memory_gives_the_opt_in_occupancy(tmp_path: Path) -> None:
    b = TraceBuilder()
    gemm = KernelSpec("gemm_over_48k", (132, 1, 1), (384, 1, 1), registers=168, shared_memory=231424, op="aten::mm")
    b.add(gemm)
    b.add(KernelSpec(gemm.name, gemm.grid, gemm.block, gemm.registers, gemm.shared_memory, op="aten::mm", plant="C"))
    result = run_inprocess("trace", "inspect", "--json", str(b.write(tmp_path / "t.json")))
    elsewhere = _group(result, "E")["worst"]["true"]["est. achieved occupancy %"]
    assert elsewhere == pytest.approx(18.75)
    assert _group(result, "C")["worst"]["true"]["est. achieved occupancy %"] == elsewhere


def test_old_sm_count_without_device_properties_names_the_option(tmp_path: Path) -> None:
    b = TraceBuilder(gpu="RTX2080Ti", era="pt18", device_properties=False)
    b.add(KernelSpec("k", (99, 1, 1), (128, 1, 1), plant="B"))
    path = b.write(tmp_path / "t.json")
    without = run_inprocess("trace", "inspect", "--json", str(path))
    assert "pass the GPU's SM count with --sms N" in _group(without, "B")["worst"]["evidence"]
    given = run_inprocess("trace", "inspect", "--json", "--sms", "68", str(path))
    assert _group(given, "B")["worst"]["true"]["blocks per SM"] == pytest.approx(99 / 68)


def test_a_wrong_sms_says_which_count_fits(tmp_path: Path) -> None:
    b = TraceBuilder(gpu="V100", device_properties=False)
    for spec in demo_launches() * 5:
        b.add(spec)
    result = run_inprocess("trace", "inspect", "--json", "--sms", "68", str(b.write(tmp_path / "t.json")))
    report = result.json["reports"][0]
    assert report["notes"][0] == (
        "the SM count given with --sms (68) does not fit this trace: its kernels' blocks per SM fit 80 SMs exactly "
        "(a Tesla V100), so 80 was used"
    )
    assert "?" not in report["mechanisms"]  # the proven count wins: no '?' storm


def test_a_corrupt_rank_in_a_directory_names_the_file_on_every_path(tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(3):
        b = TraceBuilder()
        b.add(OVERFLOW)
        b.write(ranks / f"rank{rank}.json")
    (ranks / "rank1.json").write_text('{"traceEvents": [{"ph": "X", "cat": kernel}]}')
    messages = set()
    for jobs in ("1", "3"):
        result = run_inprocess("trace", "inspect", "--jobs", jobs, str(ranks))
        assert result.status == 6, result.stderr
        messages.add(result.stderr)
    assert len(messages) == 1 and "rank1.json: byte 36: invalid JSON in traceEvents (Expecting value)" in messages.pop()


def test_a_gzip_of_blanks_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "blanks.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(b'{"traceEvents": [')
        chunk = b" " * (1 << 20)
        for _ in range(100):
            fh.write(chunk)
        fh.write(b"]}")
    started = time.monotonic()
    result = run_inprocess("trace", "inspect", str(path))
    assert time.monotonic() - started < budget(10)
    assert result.status == 6 and "MB of whitespace in a row: refused" in result.stderr


def test_a_pipe_is_read_and_a_fifo_without_a_writer_does_not_hang(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    data = gzip.compress(b.text().encode())

    def write() -> None:
        with open(fifo, "wb") as fh:  # like <(zcat trace.json.gz): a writer on the other end
            fh.write(gzip.decompress(data))

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.2)
    piped = run_inprocess("trace", "inspect", "--json", str(fifo))
    writer.join(timeout=10)
    assert piped.status == 1 and piped.json["mechanisms"]["A"] == 1
    started = time.monotonic()
    lonely = run_inprocess("trace", "inspect", str(fifo))  # nobody writes: empty, not a hang
    assert time.monotonic() - started < budget(5)
    assert lonely.status == 6 and "the file is empty" in lonely.stderr


def test_fix_writes_valid_json_for_a_cut_off_trace(tmp_path: Path) -> None:
    b = TraceBuilder()
    for spec in demo_launches() * 5:
        b.add(spec)
    b.add(OVERFLOW)
    whole = b.text()
    cut = tmp_path / "cut.json"
    cut.write_text(whole[: whole.rindex('"traceName"') - 40])
    out = tmp_path / "fixed.json"
    result = run_inprocess("trace", "fix", str(cut), str(out))
    assert result.status == 0
    assert "is cut off" in result.stderr and "closes the event list after the last one" in result.stderr
    fixed = strict_json(out.read_text())
    assert len(fixed["traceEvents"]) == len(json.loads(whole)["traceEvents"]) - 1


def test_fix_never_rewrites_a_right_value_and_writes_occupancy_as_the_profiler_does(tmp_path: Path) -> None:
    b = TraceBuilder(nonfinite="bare")
    gemm = KernelSpec("gemm_over_48k", (264, 1, 1), (384, 1, 1), registers=168, shared_memory=231424, op="aten::mm")
    b.add(gemm)
    b.add(OVERFLOW)
    b.add(KernelSpec("unknown", (99, 1, 1), (128, 1, 1), plant="C"))
    source = b.write(tmp_path / "t.json")
    readable = b.text().replace(": inf", ': "inf"').replace(": nan", ': "nan"')
    original = {e["name"]: e for e in json.loads(readable)["traceEvents"]}
    out = tmp_path / "fixed.json"
    assert run_inprocess("trace", "fix", str(source), str(out)).status == 0
    fixed = {e["name"]: e for e in strict_json(out.read_text())["traceEvents"]}  # bare inf: gone everywhere
    e_args = fixed["gemm_over_48k"]["args"]
    assert e_args["blocks per SM"] == original["gemm_over_48k"]["args"]["blocks per SM"]  # right: untouched
    assert e_args["est. achieved occupancy %"] == 19 and isinstance(e_args["est. achieved occupancy %"], int)
    assert e_args["warpwizard original"] == {"est. achieved occupancy %": 0}
    a_args = fixed["overflow"]["args"]
    assert a_args["est. achieved occupancy %"] == 100
    assert set(a_args["warpwizard original"]) == {"blocks per SM", "warps per SM", "est. achieved occupancy %"}


def test_fix_turns_a_bare_inf_anywhere_into_valid_json(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    text = b.text().replace(
        '"traceEvents": [',
        '"traceEvents": [\n  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 1, "dur": 0, '
        '"args": {"memory bandwidth (GB/s)": inf}},',
    )
    source = tmp_path / "t.json"
    source.write_text(text)
    out = tmp_path / "fixed.json"
    assert run_inprocess("trace", "fix", str(source), str(out)).status == 0
    memcpy = strict_json(out.read_text())["traceEvents"][0]
    assert memcpy["args"]["memory bandwidth (GB/s)"] == "inf"


def test_kernels_lost_with_the_end_of_a_cut_off_trace(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(OVERFLOW)
    whole = b.text()
    cut = tmp_path / "cut.json"
    cut.write_text(whole[: whole.index('"cat": "kernel"') - 20])  # the CPU side only
    result = run_inprocess("trace", "inspect", "--json", str(cut))
    assert result.status == 1  # the cut lost the kernels: trace-incomplete's error (issue 45 item 1; it exited 0)
    (incomplete,) = [c for c in result.json["reports"][0]["health"] if c["check"] == "trace-incomplete"]
    assert (incomplete["status"], incomplete["events_lost"], incomplete["gpu_events"]) == ("error", True, 0)
    assert "the kernels may be in the part that was lost" in result.json["reports"][0]["notes"][0]
    run = run_inprocess("run", "negative-warps-per-sm", "--set", "have=trace", "--set", f"trace_path={cut}", "--json")
    assert run.json["conclusion"]["diagnosis"] == "trace-cut-off-before-kernels"
