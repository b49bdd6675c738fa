"""Hostile input, round 5 (issue 47): the local fixes (items 3, 4, 6, 8, 11-18).

Each test failed on the code before the change it covers, on inputs it generates, and asserts the one right
outcome through the real entry point: the exit code, the one line, the bound.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, RunCli, cli_command, cli_env, needs_torch, strict_json
from tests.helpers import inspect_json, survivors_of_a_killed_read
from wizard.testing.traces import KernelSpec, TraceBuilder

BIG = 2**70
KERNEL = KernelSpec("void k<float>", (4, 1, 1), (128, 1, 1), op="aten::mm")


def _one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def _report(run_cli: RunCli, path: Path) -> dict[str, Any]:
    result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    assert result.status == 0, result.stderr
    assert "internal error" not in result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    assert isinstance(report, dict)
    return report


def _health(report: dict[str, Any], check: str) -> dict[str, Any]:
    (found,) = [c for c in report["health"] if c["check"] == check]
    assert isinstance(found, dict)
    return found


# -- 3. numbers no int64 or sum of doubles holds ---------------------------------------------------------------


def _with_device(category: str, device: int) -> str:
    """Three kernels and a memcpy; the first event of ``category`` names ``device`` (written as JSON digits)."""
    builder = TraceBuilder(gpu="H100")
    for _ in range(3):
        builder.add(KERNEL)
    builder.add_memcpy()
    document = builder.document()
    chosen = next(e for e in document["traceEvents"] if e.get("cat") == category)
    chosen["args"]["device"] = "DEVICE-HERE"
    return json.dumps(document).replace('"DEVICE-HERE"', str(device))


@pytest.mark.parametrize("device", [BIG, -BIG], ids=["2^70", "-2^70"])
@pytest.mark.parametrize("category", ["kernel", "gpu_memcpy"])
def test_a_device_no_int64_holds_is_no_device(run_cli: RunCli, tmp_path: Path, category: str, device: int) -> None:
    path = tmp_path / "device.json"
    path.write_text(_with_device(category, device))
    report = _report(run_cli, path)
    assert report["kernels"] == 3
    table = _health(report, "summary-table")
    assert table["status"] != "error", table


def test_a_device_no_int64_holds_in_a_rank_directory(run_cli: RunCli, tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "rank0.json").write_text(_with_device("kernel", BIG))
    (ranks / "rank1.json").write_text(_with_device("gpu_memcpy", -BIG))
    reports = inspect_json(run_cli, ranks, "--fail-on", "never", "--jobs", "2", status=0)["reports"]
    assert [r["kernels"] for r in reports] == [3, 3]


def test_a_device_no_int64_holds_in_a_pftrace(run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Perfetto's DebugAnnotation.uint_value carries 2^64 - 1, which no int64 holds (perfetto's
    protos/perfetto/trace/track_event/debug_annotation.proto: ``uint64 uint_value = 3``)."""
    pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    from wizard.testing import pftrace

    plain = pftrace._annotate

    def annotate(a: Any, key: str, value: Any) -> None:
        if key == "device" and value == 7:
            a.name, a.uint_value = key, 2**64 - 1
        else:
            plain(a, key, value)

    monkeypatch.setattr(pftrace, "_annotate", annotate)
    path = tmp_path / "device.pftrace"
    path.write_bytes(pftrace.convert(json.loads(_with_device("kernel", 7))))
    report = _report(run_cli, path)
    assert report["kernels"] == 3


def _steps_trace(tmp_path: Path, step_us: list[float]) -> Path:
    builder = TraceBuilder(gpu="H100")
    for n, _ in enumerate(step_us):
        builder.span(f"ProfilerStep#{n}", [KERNEL], cat="user_annotation")
    document = builder.document()
    steps = [e for e in document["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    for event, dur in zip(steps, step_us, strict=True):
        event["dur"] = dur
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(document))
    return path


def test_steps_of_1e308_microseconds_are_no_measurement(run_cli: RunCli, tmp_path: Path) -> None:
    durations = [1.5e308, 1.5e308, 1.5e308, 1.5e308, 40.0, 50.0]
    report = _report(run_cli, _steps_trace(tmp_path, durations))
    details = _health(report, "profiler-overhead")
    measured = [d for d in durations if d < 2.0**53]  # a step past 2^53 µs is no measurement
    assert details["steps"] == len(measured) == 2
    assert details["step_us"] == measured


def test_sm_active_samples_of_1e308_are_no_measurement(run_cli: RunCli, tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100")
    for _ in range(3):
        builder.add(KERNEL)
    name = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
    samples = [(1.0, 1.5e308), (2.0, 1.5e308), (3.0, 1.5e308), (4.0, 30.0), (5.0, 50.0)]
    for ts, value in samples:
        builder.add_counter(name, ts, value)
    path = builder.write(tmp_path / "counters.json")
    report = _report(run_cli, path)
    (device,) = _health(report, "summary-table")["sm_active"]
    kept = [v for _, v in samples if v <= 2.0**53]
    assert (device["samples"], device["sm_active_pct"]) == (len(kept), sum(kept) / len(kept)) == (2, 40.0)


# -- 4. a file whose first read fails (EIO) --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["trace.json", "trace.pftrace", "trace.sqlite", "trace.json.gz"])
def test_a_link_to_proc_self_mem_is_an_input_error(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    """/proc/self/mem is a regular file whose read at offset 0 fails with EIO (nothing is mapped there)."""
    link = tmp_path / name
    link.symlink_to("/proc/self/mem")
    result = run_cli("trace", "inspect", str(link))
    assert result.status == 6, result.stderr
    assert _one_line_error(result.stderr) == f"warpwizard: error: {link}: byte 0: cannot read (Input/output error)"


def test_a_rank_file_linked_to_proc_self_mem_is_an_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "rank0.json").write_text(_with_device("kernel", 0))
    (ranks / "rank1.json").symlink_to("/proc/self/mem")
    result = run_cli("trace", "inspect", str(ranks), "--jobs", "2")
    assert result.status == 6, result.stderr
    line = _one_line_error(result.stderr)
    assert line == f"warpwizard: error: {ranks / 'rank1.json'}: byte 0: cannot read (Input/output error)"


# -- 6. a FIFO named .sqlite: SQLite would reopen it and block in C, deaf to SIGINT, SIGTERM and SIGHUP --------


def _cli_bounded(args: list[str], tmp_path: Path, seconds: float = 60.0) -> subprocess.CompletedProcess[str]:
    """The real console script in a subprocess: a hang fails the test (the process is killed) instead of the
    run, since a process blocked in SQLite's C code answers no signal but SIGKILL."""
    try:
        return subprocess.run(
            [*cli_command(), *args], capture_output=True, text=True, env=cli_env(), cwd=tmp_path, timeout=seconds
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args}: still running after {seconds} s")


def test_a_fifo_named_sqlite_is_refused_before_sqlite_opens_it(tmp_path: Path) -> None:
    fifo = tmp_path / "export.sqlite"
    os.mkfifo(fifo)
    result = _cli_bounded(["trace", "inspect", str(fifo)], tmp_path)
    assert result.returncode == 6, result.stderr
    assert _one_line_error(result.stderr) == (
        f"warpwizard: error: {fifo}: not a regular file; an Nsight Systems SQLite export is read in place, from a file"
    )


def test_a_fifo_named_sqlite_in_an_answers_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "export.sqlite"
    os.mkfifo(fifo)
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {fifo}\n")
    args = ["run", "negative-warps-per-sm", "--answers", str(answers), "--report-dir", str(tmp_path / "r"), "--json"]
    result = _cli_bounded(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{fifo}: not a regular file; an Nsight Systems SQLite export is read in place" in result.stdout


# -- 8. nothing to read is the same error in every format ----------------------------------------------------

_GZIP_HEADER = gzip.compress(b"x" * 100, mtime=0)[:10]  # the 10-byte member header, and nothing inflated after it


_NOTHING = [
    (name, data) for name in ("trace.pftrace", "trace.json", "trace.pftrace.gz") for data in (b"", _GZIP_HEADER)
]


@pytest.mark.parametrize(("name", "data"), [*_NOTHING, ("trace.sqlite", b"")])  # SQLite reads no gzip at all
def test_a_file_with_nothing_to_read_is_empty_in_every_format(
    run_cli: RunCli, tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    result = run_cli("trace", "inspect", str(path))
    assert result.status == 6, result.stdout
    said = (  # a gzip header and nothing after it is no empty file: the same words from every reader
        "the gzip stream ends before its first byte of data (10 bytes in all: cut off in its header or first block, "
        "not a whole .gz file)"
        if data
        else "the file is empty"
    )
    assert _one_line_error(result.stderr) == f"warpwizard: error: {path}: {said}"


# -- 18. packets whose bytes are all text are not JSON -------------------------------------------------------

# TracePacket fields as text bytes (perfetto's protos/perfetto/trace/trace_packet.proto): 'P' is the tag of
# trusted_packet_sequence_id (field 10, varint) and '1' its value; '@' the tag of timestamp (field 8, varint),
# 0xc1 'A' a two-byte varint (bytes past 0x7f are not controls: a text file holds them in UTF-8)
_PACKET = b"P1" * 44 + b"@\xc1A"
assert len(_PACKET) == ord("[")  # the length byte after the packet's tag (0x0a, a newline) is '['


@pytest.mark.parametrize("name", ["trace.pftrace", "trace.json", "trace.pftrace.gz"])
def test_packets_that_read_as_text_are_read_as_packets(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    data = (b"\x0a[" + _PACKET) * 3
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    report = _report(run_cli, path)
    assert (report["format"], report["layout"]) == ("perfetto-proto", "protobuf")


def test_json_that_starts_with_a_newline_is_still_json(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text("\n" + json.dumps(json.loads(_with_device("kernel", 0))["traceEvents"]))
    report = _report(run_cli, path)
    assert (report["format"], report["kernels"]) == ("kineto-json", 3)


# -- 11, 15. a fragment's id and file, bounded and said as they are -----------------------------------------

_HEAD = "id: uses-test\ntitle: Uses\nversion: '1'\nsteps:\n  - {id: verify_profiler, title: Verify}\nnodes:\n"
_TAIL = "  - {id: done, kind: conclusion, diagnosis: d, summary: d}\n"


def _validate(run_cli: RunCli, tmp_path: Path, uses: str) -> tuple[int, list[str]]:
    """``validate`` of a playbook whose first node is ``uses``, with ``tmp_path`` on the search path."""
    (tmp_path / "fragments").mkdir(exist_ok=True)
    path = tmp_path / "uses-test.yaml"
    path.write_text(_HEAD + f"  - uses: {uses}\n" + _TAIL)
    result = run_cli("--playbook-dir", str(tmp_path), "validate", str(path))
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result.status, [line for line in result.stdout.splitlines() if line.startswith(str(path))]


def test_a_fragment_id_of_3_million_characters_is_a_problem_at_its_line(run_cli: RunCli, tmp_path: Path) -> None:
    status, problems = _validate(run_cli, tmp_path, "a" * 3_000_000)
    assert status == 3
    assert problems == [
        f"{tmp_path}/uses-test.yaml:7:11: 'uses' names a fragment by its id, at most 200 characters (its file's "
        "name); this one has 3000000"
    ]


def test_uses_of_200000_strings_is_one_short_line(run_cli: RunCli, tmp_path: Path) -> None:
    status, problems = _validate(run_cli, tmp_path, "[" + ", ".join(f"s{i}" for i in range(200_000)) + "]")
    assert status == 3
    (line,) = problems
    shown = repr([f"s{i}" for i in range(200_000)])[:79] + "…"  # the value as Python shows it, cut at 80
    assert line == (
        f"{tmp_path}/uses-test.yaml:7:11: 'uses' names a fragment by its id (lower-case letters, digits, '-', '_'), "
        f"not {shown}"
    )


@pytest.mark.parametrize(("target", "what"), [("/dev/zero", "not a regular file"), ("missing", "a link to nothing")])
def test_a_fragment_that_is_no_regular_file_is_said_to_be_one(
    run_cli: RunCli, tmp_path: Path, target: str, what: str
) -> None:
    (tmp_path / "fragments").mkdir()
    link = tmp_path / "fragments" / "a.yaml"
    link.symlink_to(target if target.startswith("/") else tmp_path / target)
    status, problems = _validate(run_cli, tmp_path, "a")
    assert status == 3
    assert problems == [f"{tmp_path}/uses-test.yaml:7:11: fragment 'a' ({link}) cannot be read: {what}"]


# -- 14. a fragment that hides the shipped one says so, as a playbook that does ------------------------------

_SHADOW_NOTE = (
    "note: fragment 'trace-start' is {path}, which shadows the shipped fragment of that id (the search path's "
    "order: the directories given, then WARPWIZARD_PLAYBOOK_PATH, then the package's, then plugins)"
)


def _shadowing_fragment(tmp_path: Path) -> Path:
    shipped = REPO / "playbooks" / "fragments" / "trace-start.yaml"
    (tmp_path / "fragments").mkdir()
    mine = tmp_path / "fragments" / "trace-start.yaml"
    mine.write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    return mine


def test_list_notes_a_fragment_that_shadows_the_shipped_one_once(run_cli: RunCli, tmp_path: Path) -> None:
    mine = _shadowing_fragment(tmp_path)
    result = run_cli("--playbook-dir", str(tmp_path), "list")
    assert result.status == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("note: fragment")]
    assert notes == [_SHADOW_NOTE.format(path=mine)]
    plain = run_cli("list")
    assert "note: fragment" not in plain.stdout  # the shipped fragment itself hides nothing


def test_a_run_notes_a_fragment_that_shadows_the_shipped_one(run_cli: RunCli, tmp_path: Path) -> None:
    mine = _shadowing_fragment(tmp_path)
    args = ["--playbook-dir", str(tmp_path), "run", "rank-skew", "--defaults", "--report-dir", str(tmp_path / "r")]
    result = run_cli(*args)
    assert _SHADOW_NOTE.format(path=mine) in " ".join(result.stdout.split()), result.stdout


# -- 13. profiler.overhead: the workload shares the harness's output, and can print a result line ------------

_FORGER = """\
import atexit, os
atexit.register(lambda: print("WARPWIZARD_RESULT " + os.environ["FORGED"], flush=True))
"""
_TIMES = '"plain_s": [1.0], "profiled_s": [1.0]'


@needs_torch
@pytest.mark.parametrize(
    ("forged", "summary"),
    [
        ('{"ok": true, "exit_code": "x", ' + _TIMES + "}", "exit_code is not an exit code"),
        ('{"ok": true, "exit_code": ' + str(BIG) + ", " + _TIMES + "}", "exit_code is not an exit code"),
        ('{"ok": true, "exit_code": 0, "plain_s": [NaN], "profiled_s": [1.0]}', "plain_s is not a list of at most 50"),
        ('{"ok": true, "exit_code": ' + "9" * 5000 + ", " + _TIMES + "}", "the harness did not report (exit 0)"),
    ],
    ids=["string", "bigint", "nan", "5000-digits"],
)
def test_a_forged_overhead_result_line_is_an_error_of_the_probe(
    run_cli: RunCli, tmp_path: Path, forged: str, summary: str
) -> None:
    """The real harness (wizard/probes/harness.py, ``overhead`` mode) times the workload, which prints a result
    line of its own when the interpreter exits, after the harness's: the last line is the one parsed."""
    (tmp_path / "w.py").write_text(_FORGER)
    args = ["probe", "profiler.overhead", "--param", "runs=1", "--workload", "python w.py", "--json"]
    result = run_cli(*args, "--report-dir", str(tmp_path / "r"), cwd=tmp_path, env=cli_env(FORGED=forged))
    assert result.status == 5, result.stderr  # the probe ended in error, never exit 70 nor a PASS
    assert "internal error" not in result.stderr
    (entry,) = strict_json(result.stdout)["entries"]
    assert entry["status"] == "error" and summary in entry["summary"], entry["summary"]


# -- 16. an overhead record no double's microseconds measure -------------------------------------------------


def test_an_overhead_record_of_1e308_microseconds_is_no_time(run_cli: RunCli, tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100")
    for _ in range(3):
        builder.add(KERNEL)
    durations = [5.0, 1.7e308]
    for dur in durations:
        builder.add_overhead("Buffer Request", dur)
    report = _report(run_cli, builder.write(tmp_path / "overhead.json"))
    check = _health(report, "profiler-overhead")
    measured = sum(d for d in durations if d <= 2.0**53)  # a record past 2^53 µs counts, without its time
    assert (check["count"], check["overhead_us"], check["status"]) == (2, measured, "info")
    assert "took 5.0 µs" in check["summary"] and len(check["summary"]) < 200


# -- 17. SQLite's write-ahead log beside an export is said to be unread -------------------------------------


def test_a_write_ahead_log_beside_an_export_is_a_note(run_cli: RunCli, tmp_path: Path) -> None:
    """Three kernels checkpointed into the file, a fourth only in its -wal (a copy taken while the writer had the
    database open): the immutable read sees three, and the report says the log is there."""
    import shutil
    import sqlite3

    from wizard.testing.nsys import Call, Kernel, write_export

    made = write_export(
        tmp_path / "made.sqlite",
        [Kernel(1000 + 100 * n, 1050 + 100 * n, n) for n in range(3)],
        [Call(990 + 100 * n, 995 + 100 * n, n) for n in range(3)],
    )
    db = sqlite3.connect(made)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    with db:
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
    copy = tmp_path / "export.sqlite"
    shutil.copyfile(made, copy)  # the pair as a copy taken now finds it, the log not yet checkpointed
    shutil.copyfile(f"{made}-wal", f"{copy}-wal")
    db.close()
    wal_bytes = Path(f"{copy}-wal").stat().st_size
    in_file = sqlite3.connect(f"file:{copy}?immutable=1", uri=True)
    assert in_file.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone() == (3,)
    in_file.close()
    report = _report(run_cli, copy)
    assert report["kernels"] == 3
    assert (
        f"{copy}-wal beside this export holds {wal_bytes:,} bytes of SQLite's write-ahead log: rows written there "
        "are not read (the export is read as it is on disk); checkpoint it into the file first (sqlite3 FILE "
        "'PRAGMA wal_checkpoint') to read them"
    ) in report["notes"]


# -- 12. no worker outlives a killed warpwizard --------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_no_decoding_worker_outlives_a_sigkilled_parent(tmp_path: Path) -> None:
    """A rank directory read with two workers; the parent is stopped once both exist (so it cannot finish first),
    then SIGKILLed, as the OOM killer does: before, both workers finished their file and slept for ever under init,
    holding their memory; now each gets SIGKILL with its parent (PR_SET_PDEATHSIG)."""
    builder = TraceBuilder(gpu="H100")
    for _ in range(20_000):
        builder.add(KERNEL)
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    text = builder.text()
    for rank in range(2):
        (ranks / f"rank{rank}.json").write_text(text)
    assert survivors_of_a_killed_read(ranks) == []
