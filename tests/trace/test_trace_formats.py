"""Trace formats other than Kineto's JSON (issue 35): recognised by content, read into the same contents, every
pass run unchanged, what a format cannot show said as not applicable, and hostile files refused in one line.

Nsight Systems' SQLite export: the two real exports in ../shared/traces (GindaChen/nsys-ai's test fixtures,
written by nsys 2026.1 and 2026.2) and exports the project's builder writes (wizard/testing/nsys.py, with the
real tables' column names) with problems planted. Each count is checked against a second reading of the same
file with plain SQL here, which shares no code with the reader.
"""

from __future__ import annotations

import gzip
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, REPO, TRACES, CliResult, health_check, needs_shared, sql_rows, strict_json
from tests.helpers import inspect_json
from wizard.testing.nsys import Call, Kernel, Range, write_export

MOCK = TRACES / "nsys-mock.sqlite"
MFU = TRACES / "nsys-mfu_2gpu_before.sqlite"
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernelEx")  # the launch APIs these exports hold (docs/health.md's list)


def _independent(path: Path) -> dict[str, int]:
    """The counts, by SQL alone: kernels; runtime calls; kernels whose (process, correlation id) no launch
    call has (nsys names calls with a version suffix, `cudaLaunchKernel_v7000`; CUPTI's ids are per process)."""
    launch = " OR ".join(f"s.value = '{n}' OR s.value LIKE '{n}\\_v%' ESCAPE '\\'" for n in LAUNCHES)
    unlinked = sql_rows(
        path,
        f"""SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (
              SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
              WHERE r.correlationId = k.correlationId AND ({launch})
                AND ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215))""",
    )[0][0]
    return {
        "kernels": sql_rows(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0],
        "calls": sql_rows(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0],
        "unlinked": unlinked,
    }


def _report(result: CliResult) -> dict[str, Any]:
    doc = strict_json(result.stdout)
    (report,) = doc["reports"]
    assert isinstance(report, dict)
    return report


@needs_shared
@pytest.mark.parametrize(("path", "writer", "devices"), [
    (MOCK, "NVIDIA Nsight Systems 2026.1.1.204", ["NVIDIA GeForce RTX 3080"]),
    (MFU, "NVIDIA Nsight Systems 2026.2.1.210", []),  # cut from a capture without TARGET_INFO_GPU
])  # fmt: skip
def test_real_nsys_exports_read_with_every_check(run_cli: Any, path: Path, writer: str, devices: list[str]) -> None:
    truth = _independent(path)
    result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    assert result.status == 0, result.stderr
    report = _report(result)
    assert (report["format"], report["writer"], report["layout"]) == ("nsys-sqlite", writer, "sqlite")
    assert report["kernels"] == truth["kernels"]
    assert [d["name"] for d in report["devices"] if d.get("name")] == devices
    assert health_check(report, "unlinked-kernels")["count"] == truth["unlinked"]
    assert (
        health_check(report, "kernels-missing")["launches"]
        == sql_rows(
            path,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE s.value LIKE 'cudaLaunchKernel\\_v%' ESCAPE '\\' OR s.value = 'cuLaunchKernelEx'",
        )[0][0]
    )
    for check in ("impossible-metrics", "stacks-missing"):  # what nsys cannot show is never "ok"
        assert health_check(report, check)["status"] == "not_applicable"
    assert report["notes"][0].startswith(f"read as an Nsight Systems SQLite export, written by {writer}")


@needs_shared
def test_real_exports_show_what_they_hold(run_cli: Any) -> None:
    """What the two exports show, written down in docs/trace-formats.md: the mock's 2 kernels each link to their
    launch; the two-GPU capture, cut to a 300 ms window by nsys-ai's fixture script, has 4,010 kernels, 24 of which
    link to no launch call, all with ids below their process's first call (12 on each of the two processes): their
    calls fell before the cut; 20 launches at the end lost their kernels to it; and on device 0, stream 7, one
    reduce kernel starts 12.442 µs before the elementwise kernel before it ends."""
    assert _independent(MOCK) == {"kernels": 2, "calls": 9, "unlinked": 0}
    assert _independent(MFU) == {"kernels": 4010, "calls": 7466, "unlinked": 24}
    report = _report(run_cli("trace", "inspect", str(MFU), "--json", "--fail-on", "never"))
    unlinked, missing, overlap = (
        health_check(report, c) for c in ("unlinked-kernels", "kernels-missing", "kernels-overlap")
    )
    assert (unlinked["status"], unlinked["count"], unlinked["before_window"]) == ("info", 24, 24)
    assert unlinked["summary"].endswith("(correlation ids below the first call's of their process)")
    assert (missing["status"], missing["count"], missing["in_last_1pct"]) == ("info", 20, 20)
    # below a launch's latency, once in 4,010 kernels: info since issue 45 (tests/health/test_overlap_gate.py, by SQL)
    assert (overlap["status"], overlap["count"], overlap["max_overlap_us"]) == ("info", 1, 12.442)
    assert overlap["examples"][0]["name"].startswith("void at::native::reduce_kernel<")


def _planted(tmp_path: Path, **kw: Any) -> Path:
    """One process: three launches on stream 7, the first two with kernels, an op around each."""
    calls = [Call(1_000 * i, 1_000 * i + 300, 100 + i) for i in range(1, 4)]
    kernels = [Kernel(1_000 * i + 500, 1_000 * i + 900, 100 + i) for i in range(1, 3)]
    ranges = [Range(1_000 * i - 100, 1_000 * i + 400, f"aten::mm, seq = {i}, op_id = {7 + i}, sizes = [[2, 2]]")
              for i in range(1, 4)]  # fmt: skip
    return write_export(
        tmp_path / kw.pop("name", "planted.sqlite"),
        kw.pop("kernels", kernels),
        kw.pop("calls", calls),
        kw.pop("ranges", ranges),
        **kw,
    )


def test_a_launch_without_its_kernel_is_counted(run_cli: Any, tmp_path: Path) -> None:
    path = _planted(tmp_path)
    report = _report(run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never"))
    missing = health_check(report, "kernels-missing")
    assert (missing["count"], missing["launches"]) == (1, 3)
    assert missing["examples"][0]["name"] == "cudaLaunchKernel"  # nsys's version suffix gone
    assert missing["examples"][0]["correlation"] == 103
    assert health_check(report, "unlinked-kernels")["count"] == 0


def test_negative_duration_and_kernel_before_its_launch(run_cli: Any, tmp_path: Path) -> None:
    calls = [Call(1_000, 1_300, 101), Call(2_000, 2_300, 102)]
    kernels = [Kernel(1_500, 1_400, 101), Kernel(1_900, 2_400, 102)]  # ends before it starts; starts before its call
    report = _report(
        run_cli(
            "trace", "inspect", str(_planted(tmp_path, kernels=kernels, calls=calls)), "--json", "--fail-on", "never"
        )
    )
    durations = health_check(report, "durations")
    assert (durations["status"], durations["count"]) == ("error", 1)
    assert durations["examples"][0]["dur"] == pytest.approx(-0.1)  # ns to µs, as recorded, never repaired
    assert health_check(report, "clock-skew")["count"] == 1


def test_correlation_ids_of_two_processes_never_link_across(run_cli: Any, tmp_path: Path) -> None:
    """CUPTI numbers correlations per process: process B's kernel 101 is not process A's call 101."""
    calls = [Call(1_000, 1_300, 101, pid=10), Call(1_000, 1_300, 500, pid=20)]
    kernels = [Kernel(1_500, 1_900, 101, pid=10), Kernel(1_600, 1_900, 101, pid=20, device=1)]
    report = _report(
        run_cli("trace", "inspect", str(_planted(tmp_path, kernels=kernels, calls=calls, ranges=[])), "--json",
                "--fail-on", "never")
    )  # fmt: skip
    assert health_check(report, "unlinked-kernels")["count"] == 1
    assert health_check(report, "kernels-missing")["count"] == 1  # process B's call 500 has no kernel


def test_torch_nvtx_ranges_are_the_ops_that_launched(run_cli: Any, tmp_path: Path) -> None:
    """PyTorch's emit_nvtx names a range 'name, seq = N, op_id = M, sizes = [...]' (pytorch/pytorch
    torch/csrc/profiler/util.cpp, function getNvtxStr in its NVTX section, at commit 011bcd9acdf3): the op
    is the text before the first field, and a kernel's op is the innermost range around its launch call on the
    launching thread."""
    path = _planted(tmp_path, calls=[Call(1_000, 1_300, 101)], kernels=[Kernel(1_500, 1_900, 101)],
                    ranges=[Range(900, 1_400, "aten::linear, seq = 4, op_id = 9"),
                            Range(950, 1_350, "aten::mm, op_id = 10, sizes = [[2, 2], [2, 2]]"),
                            Range(0, 5_000, "my training step")])  # fmt: skip
    from wizard.trace.metrics.classify import link_op
    from wizard.trace.read.reader import read_trace

    contents = read_trace(path)
    assert contents.ops.count == 2
    assert contents.timeline.categories["user_annotation"] == 1
    link = link_op(contents, next(iter(contents.kernels)))
    assert link is not None
    assert (link.op, link.runtime_call) == ("aten::mm", "cudaLaunchKernel")


def test_device_properties_come_from_target_info_gpu(run_cli: Any, tmp_path: Path) -> None:
    report = _report(run_cli("trace", "inspect", str(_planted(tmp_path, sm_count=114)), "--json", "--fail-on", "never"))
    (device,) = report["devices"]
    assert (device["name"], device["num_sms"], device["compute_capability"]) == ("NVIDIA H100 80GB HBM3", 114, "9.0")


def test_nsys_warnings_are_notes(run_cli: Any, tmp_path: Path) -> None:
    path = _planted(tmp_path, diagnostics=[(1, "Profiling has started."), (2, "CUPTI dropped \x1b]0;x\x07 records")])
    report = _report(run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never"))
    assert [n for n in report["notes"] if n.startswith("Nsight Systems")] == [
        "Nsight Systems warning: CUPTI dropped \\x1b]0;x\\x07 records"  # escaped: text from the file
    ]


def test_content_decides_not_the_name(run_cli: Any, tmp_path: Path) -> None:
    """An export named .json is read as the export it is."""
    path = _planted(tmp_path, name="trace.json")
    report = _report(run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never"))
    assert report["format"] == "nsys-sqlite"


def test_a_directory_of_ranks_may_mix_formats(run_cli: Any, tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    _planted(ranks, name="rank0.sqlite")
    shutil.copy(EXAMPLES / "traces" / "grid-overflow.json", ranks / "rank1.json")
    doc = inspect_json(run_cli, ranks, "--fail-on", "never")
    assert [r["format"] for r in doc["reports"]] == ["nsys-sqlite", "kineto-json"]
    assert doc["reports"][1]["writer"] == "PyTorch profiler (Kineto)"


# -- hostile and wrong files ----------------------------------------------------------------------------------


def _one_line_error(result: CliResult, status: int, pattern: str) -> None:
    assert result.status == status, (result.status, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), result.stderr
    assert "Traceback" not in result.stderr


def test_a_sqlite_database_that_is_not_an_export(run_cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    _one_line_error(run_cli("trace", "inspect", str(path)), 6, r"other\.sqlite: a SQLite database, but not an Nsight")


def test_a_damaged_database(run_cli: Any, tmp_path: Path) -> None:
    path = _planted(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" * 4000 + data[4100:])
    _one_line_error(run_cli("trace", "inspect", str(path)), 6, r"planted\.sqlite: cannot read as an Nsight Systems")


def test_views_and_mistyped_values_are_not_trusted(run_cli: Any, tmp_path: Path) -> None:
    """A view named like a table is never read (it could run any query); a text where a number belongs is
    skipped, never turned into one."""
    path = _planted(tmp_path)
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO old_kernels")
        db.execute(
            "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
            "SELECT * FROM old_kernels, n"
        )
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, streamId, correlationId)")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES ('soon', 5, 0, 7, 1), (10, 20, 0, 7, 2)")
    db.close()
    report = _report(run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never"))
    assert report["kernels"] == 0
    assert health_check(report, "durations")["gpu_events"] == 1  # the memset with a numeric start


def test_the_read_is_bounded_in_time(tmp_path: Path) -> None:
    from wizard.errors import InputFileError
    from wizard.trace.read.nsys import NsysConfig, read_nsys

    ticks = iter(range(10**9))
    with pytest.raises(InputFileError, match="took too long to read"):
        read_nsys(_planted(tmp_path), NsysConfig(max_seconds=50.0, check_every=1, clock=lambda: float(next(ticks))))


def test_a_gzipped_database_is_read_as_the_database_itself(run_cli: Any, tmp_path: Path) -> None:
    """Issue 46: gzip is a container whose database is read (it was refused, "unpack it first"): the same kernels
    and health as the plain file, the format the tables say, the compressed bytes counted."""
    path = _planted(tmp_path)
    packed = tmp_path / "planted.sqlite.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    plain = _report(run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never"))
    inflated = _report(run_cli("trace", "inspect", str(packed), "--json", "--fail-on", "never"))
    assert (inflated["format"], inflated["kernels"]) == ("nsys-sqlite", plain["kernels"]) == ("nsys-sqlite", 2)
    assert [c["check"] for c in inflated["health"]] == [c["check"] for c in plain["health"]]
    assert [c.get("count") for c in inflated["health"]] == [c.get("count") for c in plain["health"]]


def test_bytes_of_no_known_format_are_read_as_json_and_refused(run_cli: Any, tmp_path: Path) -> None:
    """A newline, then bytes no protobuf message decodes from: not taken for a Perfetto trace (its tag 0x0a is a
    newline too); the JSON reader says what it found."""
    path = tmp_path / "x.trace"
    path.write_bytes(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
    _one_line_error(
        run_cli("trace", "inspect", str(path)), 6,
        r"x\.trace.*not a profiler trace: expected '\{' or '\[' at the start of a JSON trace \(a Perfetto \.pftrace "
        r"and an Nsight Systems \.sqlite export are recognised by their first bytes, whatever the name\)",
    )  # fmt: skip


def test_trace_fix_refuses_a_format_it_cannot_write(run_cli: Any, tmp_path: Path) -> None:
    path = _planted(tmp_path)
    out = tmp_path / "fixed.json"
    _one_line_error(
        run_cli("trace", "fix", str(path), str(out)),
        2,  # a usage error: the file reads (trace inspect takes it), the command does not take its format
        r"planted\.sqlite: an Nsight Systems SQLite export; `trace fix` writes corrected copies of Chrome trace JSON "
        r"only \(\.json, \.json\.gz; nothing was written; `trace inspect` reads this file\)$",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["planted.sqlite"]


def test_the_format_table_is_the_documented_one() -> None:
    """docs/trace-formats.md lists every format of the table, with whether trace fix rewrites it."""
    from wizard.trace.read.formats import FORMATS

    doc = (REPO / "docs" / "trace-formats.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \|.*\| (yes|no) \|$", doc, re.M))
    assert rows == {f.id: "yes" if f.rewritable else "no" for f in FORMATS}
    assert [f.id for f in FORMATS] == ["kineto-json", "nsys-sqlite", "rocpd-sqlite", "perfetto-proto"]


def test_the_triage_reads_an_export_and_continues_where_its_health_says(run_cli: Any, tmp_path: Path) -> None:
    """An export with two launches whose kernels were dropped mid-trace: the triage's health check finds them and
    continues into kernels-missing, which concludes from the answers; PyTorch's validator (Chrome JSON only) is
    said not to run, never fed the database."""
    import yaml

    calls = [Call(10_000 * i, 10_000 * i + 300, 100 + i) for i in range(1, 301)]
    kernels = [Kernel(10_000 * i + 500, 10_000 * i + 900, 100 + i) for i in range(1, 301) if i not in (100, 200)]
    path = write_export(tmp_path / "dropped.sqlite", kernels, calls)
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(path), "read_when": "early"}))
    result = run_cli("run", "triage", "--answers", str(answers), "--json")
    assert result.status == 0, result.stderr
    data = strict_json(result.stdout)
    assert [link["playbook"]["id"] for link in data["chain"]] == ["triage", "kernels-missing"]
    assert data["conclusion"]["diagnosis"] == "trace-read-before-flush"
    evidence = " ".join(line for e in data["entries"] for line in (e.get("evidence") or []))
    assert "PyTorch's trace validator not run on dropped.sqlite: it reads Chrome JSON; this is an Nsight Systems" in (
        evidence
    )


def test_true_values_are_computed_where_the_format_prints_none(run_cli: Any, tmp_path: Path) -> None:
    """nsys prints no per-SM metrics: a kernel's true values follow from its grid, block and the device's SM count
    (108 blocks on 132 SMs: 108/132 blocks and 108*256/32/132 warps per SM), said in a note and in the report."""
    report = _report(run_cli("trace", "inspect", str(_planted(tmp_path)), "--json", "--fail-on", "never"))
    assert (report["kernels_checked"], report["computed_launches"]) == (0, 2)
    assert report["max_true_warps_per_sm"] == pytest.approx(108 * 256 / 32 / 132)
    assert (
        "no kernel carries blocks/warps per SM or occupancy; the true values of 2 launches were computed from grid, "
        "block and the SM count (largest warps per SM 6.54545: the whole grid's warps per SM)"
    ) in report["notes"]


def test_before_the_window_is_per_process(run_cli: Any, tmp_path: Path) -> None:
    """CUPTI numbers correlation ids per process: a kernel of process B whose id is below B's first call was
    launched before the window, even where process A's calls have smaller ids; one above B's first is not."""
    calls = [Call(1_000, 1_300, 50, pid=10), Call(1_000, 1_300, 500, pid=20)]
    kernels = [
        Kernel(1_500, 1_900, 50, pid=10),
        Kernel(100, 400, 300, pid=20, device=1),  # below B's first call (500), above A's (50): before the window
        Kernel(1_600, 1_900, 700, pid=20, device=1),  # above B's first call, and no call: inside the window
    ]
    report = _report(
        run_cli("trace", "inspect", str(_planted(tmp_path, kernels=kernels, calls=calls, ranges=[])), "--json",
                "--fail-on", "never")
    )  # fmt: skip
    unlinked = health_check(report, "unlinked-kernels")
    assert (unlinked["count"], unlinked["before_window"], unlinked["status"]) == (2, 1, "warning")


def test_an_nsight_compute_report_is_named_with_the_command_that_reads_it(run_cli: Any, tmp_path: Path) -> None:
    """An .ncu-rep (Nsight Compute's report: its first bytes NVR\\0, wizard/ncu NCU_MAGIC) handed to trace inspect:
    said to be what it is, with the command that sets it beside a trace, not "not a profiler trace"."""
    path = tmp_path / "k.ncu-rep"
    path.write_bytes(b"NVR\x00\x02\x00\x00\x00" + bytes(range(64)))
    _one_line_error(
        run_cli("trace", "inspect", str(path)), 6,
        r"k\.ncu-rep: byte 0: an Nsight Compute report, not a trace: `warpwizard diff TRACE REPORT\.ncu-rep` sets "
        r"its measurements beside a trace's \(docs/comparing\.md\)",
    )  # fmt: skip
