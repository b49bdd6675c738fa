"""A file that is no trace is refused (exit 6, one line naming it and what was expected), and a trace that holds not
one event fails the health gate: a CI gate given the wrong file, or an empty profile, must not pass (a newcomer's
walk found `{"foo": 1}`, `[1,2,3]`, `{"traceEvents": []}` and warpwizard's own report all "no problem found", exit
0). Also the words of the gzip and format errors that walk found untrue."""

from __future__ import annotations

import gzip
import json
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, CliResult, needs_shared, strict_json
from wizard.exit_status import ExitStatus

CPU_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5}


def _one_line(result: CliResult, status: int) -> str:
    assert result.status == status, (result.status, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def _check(result: CliResult) -> dict[str, Any]:
    """trace-incomplete's verdict in the one trace report of ``trace inspect --json``."""
    (report,) = result.json["reports"]
    return {c["check"]: c for c in report["health"]}["trace-incomplete"]  # type: ignore[no-any-return]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"foo": 1}', "not a profiler trace: a JSON object without a 'traceEvents' list"),
        ("[1, 2, 3]", "not a profiler trace: its event list holds 3 values and not one event object"),
        ('{"traceEvents": [1, "x"]}', "not a profiler trace: its event list holds 2 values and not one event object"),
        ('{"schema": "warpwizard.trace-report/2", "health": []}', "a warpwizard JSON document"),
    ],
    ids=["object", "array-of-numbers", "events-of-values", "report"],
)
def test_a_json_that_is_no_trace_is_refused(run_cli: Any, tmp_path: Path, text: str, words: str) -> None:
    path = _write(tmp_path, "x.json", text)
    line = _one_line(run_cli("trace", "inspect", str(path)), ExitStatus.INPUT_ERROR)
    assert line.startswith(f"warpwizard: error: {path}: {words}"), line
    fix = _one_line(run_cli("trace", "fix", str(path), str(tmp_path / "out.json")), ExitStatus.INPUT_ERROR)
    assert words in fix  # the fixer's walk is the same walk
    assert not (tmp_path / "out.json").exists()


@needs_shared
def test_warpwizards_own_report_is_refused_and_compare_named(run_cli: Any, tmp_path: Path) -> None:
    made = run_cli("trace", "inspect", str(TRACES / "h100-bert-small.json.gz"), "--json")
    report = _write(tmp_path, "r.json", made.stdout)
    line = _one_line(run_cli("trace", "inspect", str(report)), ExitStatus.INPUT_ERROR)
    assert line == (
        f"warpwizard: error: {report}: a warpwizard JSON document (warpwizard.trace-report/2), not a profiler "
        "trace: `warpwizard compare REPORT.json ...` reads reports"
    )


def test_a_cut_file_stays_a_cut_not_a_refusal(run_cli: Any, tmp_path: Path) -> None:
    """The line: a whole document with no event list is refused; one cut before its list is a truncation, which
    the health checks report (trace-incomplete, error) as before."""
    path = _write(tmp_path, "cut.json", '{"schemaVersion": 1, ')
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.status == ExitStatus.FINDINGS
    check = _check(result)
    assert check["status"] == "error"


@pytest.mark.parametrize("text", ['{"traceEvents": []}', "[]", '{"traceEvents": [], "deviceProperties": [{}]}'])
def test_a_trace_with_no_event_fails_the_gate(run_cli: Any, tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "empty.json", text)
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.status == ExitStatus.FINDINGS, result.stdout
    check = _check(result)
    assert check["status"] == "warning"
    assert check["summary"].startswith("the trace holds no timed events: its event list is empty")
    assert run_cli("trace", "inspect", "--fail-on", "error", str(path)).status == ExitStatus.OK  # a warning


def test_events_without_kernels_stay_a_healthy_cpu_profile(run_cli: Any, tmp_path: Path) -> None:
    """Where the line is: a CPU-only profile (ProfilerActivity.CPU) is legitimate; its note says no kernels."""
    path = _write(tmp_path, "cpu.json", json.dumps({"traceEvents": [CPU_OP]}))
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.status == ExitStatus.OK, result.stdout
    assert _check(result)["status"] == "ok"


def test_a_pftrace_with_no_event_fails_the_gate_too(run_cli: Any, tmp_path: Path) -> None:
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    trace = pb.Trace()
    packet = trace.packet.add()
    packet.trusted_packet_sequence_id, packet.timestamp = 1, 5
    path = tmp_path / "none.pftrace"
    path.write_bytes(trace.SerializeToString())
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.status == ExitStatus.FINDINGS, result.stdout
    check = _check(result)
    assert (check["status"], check["summary"][:47]) == ("warning", "the trace holds no timed events: not one was re")


@needs_shared
def test_an_nsys_export_with_no_kernel_or_call_tables_fails_the_gate_too(run_cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "none.sqlite"
    path.write_bytes((TRACES / "nsys-mock.sqlite").read_bytes())
    db = sqlite3.connect(path)
    for table in ("KERNEL", "RUNTIME", "MEMCPY", "SYNCHRONIZATION"):
        db.execute(f"DROP TABLE CUPTI_ACTIVITY_KIND_{table}")
    db.commit()
    db.close()
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.status == ExitStatus.FINDINGS, result.stdout
    check = _check(result)
    assert check["status"] == "warning" and check["summary"].startswith("the trace holds no timed events")


# -- gzip: the words true ----------------------------------------------------------------------------------------


def test_a_gzip_header_and_garbage_is_not_called_empty(run_cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")  # what the newcomer made: 11 bytes
    line = _one_line(run_cli("trace", "inspect", str(path)), ExitStatus.INPUT_ERROR)
    assert line == (
        f"warpwizard: error: {path}: the gzip stream ends before its first byte of data (11 bytes in all: cut off "
        "in its header or first block, not a whole .gz file)"
    )
    empty = tmp_path / "nothing.json.gz"
    empty.write_bytes(gzip.compress(b"", mtime=0))
    said = _one_line(run_cli("trace", "inspect", str(empty)), ExitStatus.INPUT_ERROR)
    assert said.endswith(": the gzip stream inflates to nothing (an empty file, compressed)")


@pytest.mark.parametrize("at", [30, 1000])
def test_damaged_gzip_names_where_zlib_found_it_not_the_files_size(run_cli: Any, tmp_path: Path, at: int) -> None:
    events = [{**CPU_OP, "ts": 10 * i, "name": f"aten::op{i % 97}"} for i in range(3000)]
    data = bytearray(gzip.compress(json.dumps({"traceEvents": events}).encode(), mtime=0))
    data[at : at + 10] = bytes(10)
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(data)
    line = _one_line(run_cli("trace", "inspect", str(path)), ExitStatus.INPUT_ERROR)
    found = int(line.split(": byte ")[1].split(":")[0])
    # where zlib found it: near the damage, or at the trailer's CRC where the damaged block still decoded
    assert at <= found < at + 100 or found == len(data) - 8 + 4, (found, len(data), line)
    assert found < len(data), line  # it said the file's size before, whatever the damage
    assert "corrupt gzip data, found at this byte of the compressed file (zlib: " in line


def test_a_damaged_gzip_says_the_same_from_the_perfetto_reader(run_cli: Any, tmp_path: Path) -> None:
    data = gzip.compress(b"x" * 100, mtime=0)[:10] + b"\xff" * 40  # a reserved block type right after the header
    said = []
    for name in ("t.json.gz", "t.pftrace.gz"):
        (tmp_path / name).write_bytes(data)
        line = _one_line(run_cli("trace", "inspect", str(tmp_path / name)), ExitStatus.INPUT_ERROR)
        said.append(line.replace(str(tmp_path / name), "F"))
    assert (
        said[0]
        == said[1]
        == (
            "warpwizard: error: F: byte 11: corrupt gzip data, found at this byte of the compressed file (zlib: "
            "Error -3 while decompressing data: invalid block type)"
        )
    )


# -- compare given a trace; trace fix given a format it cannot write ------------------------------------------------


def _report(run_cli: Any, tmp_path: Path) -> Path:
    trace = _write(tmp_path, "cpu.json", json.dumps({"traceEvents": [CPU_OP]}))
    return _write(tmp_path, "report.json", run_cli("trace", "inspect", "--json", str(trace)).stdout)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("t.json.gz", "a gzipped profiler trace (Chrome trace JSON)"),
        ("t.json", "a profiler trace (Chrome trace JSON)"),
        ("t18.json", "a profiler trace (Chrome trace JSON)"),
        ("my trace.json", "a profiler trace (Chrome trace JSON)"),  # the command quoted for a shell (the review)
    ],
)
def test_compare_names_a_trace_and_the_command_that_writes_its_report(
    run_cli: Any, tmp_path: Path, name: str, words: str
) -> None:
    doc = [CPU_OP] if name.startswith("t18") else {"deviceProperties": [{"id": 0}] * 200, "traceEvents": [CPU_OP]}
    text = json.dumps(doc).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(text, mtime=0) if name.endswith(".gz") else text)
    line = _one_line(run_cli("compare", str(path), str(_report(run_cli, tmp_path))), ExitStatus.INPUT_ERROR)
    assert line == (
        f"warpwizard: error: {path}: {words}, not a warpwizard JSON report: `warpwizard trace inspect "
        f"{shlex.quote(str(path))} --json > REPORT.json` writes its report, which compare reads"
    )


def test_compare_names_a_gzipped_report_as_gzip(run_cli: Any, tmp_path: Path) -> None:
    report = _report(run_cli, tmp_path)
    packed = tmp_path / "report.json.gz"
    packed.write_bytes(gzip.compress(report.read_bytes(), mtime=0))
    line = _one_line(run_cli("compare", str(packed), str(report)), ExitStatus.INPUT_ERROR)
    assert line.endswith(": a gzip file, not a warpwizard JSON report (compare reads a report as `--json` writes it: "
                         "gunzip it first)")  # fmt: skip


@needs_shared
def test_compare_names_the_shared_traces(run_cli: Any, tmp_path: Path) -> None:
    report = _report(run_cli, tmp_path)
    for name, words in (
        ("h100-bert-small.json.gz", "a gzipped profiler trace (Chrome trace JSON)"),
        ("nsys-mock.sqlite", "a SQLite database (a profiler export)"),
    ):
        line = _one_line(run_cli("compare", str(TRACES / name), str(report)), ExitStatus.INPUT_ERROR)
        assert f"{name}: {words}, not a warpwizard JSON report: `warpwizard trace inspect " in line


@needs_shared
def test_trace_fix_on_a_shared_nsys_export_is_a_usage_error(run_cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "fixed.json"
    line = _one_line(run_cli("trace", "fix", str(TRACES / "nsys-mfu_2gpu_before.sqlite"), str(out)), ExitStatus.USAGE)
    said = "an Nsight Systems SQLite export; `trace fix` writes corrected copies of Chrome trace JSON only (.json, "
    assert said in line
    assert not out.exists()


def test_a_stray_value_beside_events_is_no_refusal(run_cli: Any, tmp_path: Path) -> None:
    """The refusal is of a list with not one event object: a trace with events and a stray value reads, in the
    reader and in the fixer's raw walk alike (which once refused it: its fast path counted no events)."""
    path = _write(tmp_path, "mixed.json", json.dumps({"traceEvents": [CPU_OP, 1]}))
    assert run_cli("trace", "inspect", str(path)).status == ExitStatus.OK
    fixed = run_cli("trace", "fix", str(path), str(tmp_path / "out.json"))
    assert fixed.status == ExitStatus.OK, fixed.stderr


def test_a_trace_of_metadata_alone_fails_the_gate(run_cli: Any, tmp_path: Path) -> None:
    """The review: Kineto writes its process and thread names ("M") whether or not an activity was recorded, and a
    trace of those alone passed the gate as "no problem found" (only an empty list warned). A CPU op is enough."""
    meta = {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({"traceEvents": [meta, {**meta, "name": "thread_name"}]}))
    result = run_cli("trace", "inspect", str(path), "--json")
    check = next(c for c in strict_json(result.stdout)["reports"][0]["health"] if c["check"] == "trace-incomplete")
    assert result.returncode == 1 and check["status"] == "warning"
    assert check["summary"].startswith("the trace holds no timed events: its 2 events are metadata, flows or marks")
    path.write_text(json.dumps({"traceEvents": [meta, CPU_OP]}))
    result = run_cli("trace", "inspect", str(path), "--json")
    check = next(c for c in strict_json(result.stdout)["reports"][0]["health"] if c["check"] == "trace-incomplete")
    assert check["status"] == "ok"
