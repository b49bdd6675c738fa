"""Safety on a shared machine (issue 15): other users, hangups, fork bombs, races in the writer, hostile sizes.

Each test here failed on the code before the change it names. Ownership is tested with a second
user where the process is root (a directory chowned to ``nobody``) and skipped with the reason
otherwise; signals are sent to a real process.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import (
    EXAMPLES,
    budget,
    cli_command,
    cli_env,
    needs_torch,
    run_inprocess,
    start_flagship_workload,
    strict_json,
)
from tests.helpers import inspect_json
from wizard.errors import AnswersError, OutputFileError, UsageError, WarpWizardWarning, WizardError
from wizard.testing.traces import KernelSpec, TraceBuilder

TRACES = EXAMPLES / "traces"
GRID = TRACES / "grid-overflow.json"
OTHER_USER = 65534  # nobody
as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root to hand a directory to a second user (chown); run the suite as root to cover it",
)


def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


# -- workspaces: private, in the user's state directory ------------------------------------------


@as_root
def test_a_workspace_another_user_owns_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """The attack: another user pre-creates the report directory in a shared place and swaps the
    repro between its write and its run. Now such a directory is refused, naming the owner."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    planted = shared / "warpwizard-report"
    (planted / "op-isolate").mkdir(parents=True)
    os.chown(planted, OTHER_USER, OTHER_USER)
    os.chown(planted / "op-isolate", OTHER_USER, OTHER_USER)
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--answers", str(EXAMPLES / "answers" / "grid-overflow.yaml"),
        "--report-dir", str(planted),
    )  # fmt: skip
    assert result.status == 7, result.stderr
    assert f"{planted}: refusing it as the workspace: {planted} belongs to another user (uid {OTHER_USER})" in (
        result.stderr
    )
    assert sorted(p.name for p in planted.rglob("*")) == ["op-isolate"]  # nothing written for them to swap


@as_root
def test_a_directory_above_the_workspace_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_USER, OTHER_USER)
    mine = theirs / "mine"
    mine.mkdir(mode=0o700)  # root made it, but its parent's owner can rename it away
    result = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--report-dir", str(mine))
    assert result.status == 7
    assert f"{theirs} belongs to another user (uid {OTHER_USER})" in result.stderr


def test_a_workspace_others_can_write_is_refused(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    result = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--report-dir", str(open_dir))
    assert result.status == 7
    assert f"{open_dir} can be written by other users (mode 777)" in result.stderr
    assert list(open_dir.iterdir()) == []


def test_a_writable_parent_without_the_sticky_bit_is_refused_and_with_it_accepted(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch.chmod(0o777)  # a cluster scratch space without the sticky bit
    result = run_inprocess(
        "probe", "trace.inspect", "--param", f"paths={GRID}", "--report-dir", str(scratch / "wr"), "--json"
    )
    assert result.status == 7
    assert "can be written by other users and is not sticky" in result.stderr
    scratch.chmod(0o1777)  # like /tmp: others cannot rename what is mine
    result = run_inprocess(
        "probe", "trace.inspect", "--param", f"paths={GRID}", "--report-dir", str(scratch / "wr"), "--json"
    )
    assert result.status == 1, result.stderr
    assert stat.S_IMODE((scratch / "wr").stat().st_mode) == 0o700


def test_a_group_writable_workspace_is_refused_unless_the_group_is_the_users_own(tmp_path: Path) -> None:
    from wizard.workspace import problem

    shared = tmp_path / "group"
    shared.mkdir()
    shared.chmod(0o770)
    os.chown(shared, -1, OTHER_USER)  # a group other people are in
    if os.stat(shared).st_gid != OTHER_USER:
        pytest.skip("cannot give a directory to another group here (not root)")
    assert problem(shared.resolve()) == f"{shared.resolve()} can be written by other users (mode 770)"


def test_runs_land_in_the_state_directory_not_where_the_user_stands(tmp_path: Path) -> None:
    """No --report-dir, no WARPWIZARD_REPORT_DIR: the workspace is the run's own, private, under
    XDG_STATE_HOME; the current directory stays empty."""
    here, state = tmp_path / "project", tmp_path / "state"
    here.mkdir()
    environ = cli_env(XDG_STATE_HOME=str(state))
    environ.pop("WARPWIZARD_REPORT_DIR", None)
    answers = EXAMPLES / "answers" / "grid-overflow.yaml"
    trace_answers = tmp_path / "answers.yaml"
    trace_answers.write_text(yaml.safe_dump({**yaml.safe_load(answers.read_text()), "trace_path": str(GRID)}))
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--answers", str(trace_answers), "--json",
        environ=environ, cwd=here, replace_environ=True,
    )  # fmt: skip
    assert result.status == 0, result.stderr
    assert list(here.iterdir()) == []
    (run_dir,) = (state / "warpwizard" / "runs").iterdir()
    assert re.fullmatch(r"\d{8}T\d{6}-[A-Za-z0-9._-]+-\d+", run_dir.name)
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert (run_dir / "trace-inspect.json").is_file()
    assert f"this run's files: {run_dir}" in " ".join(result.stderr.split())  # said where


def test_the_api_uses_a_private_workspace_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wizard.options import Options
    from wizard.system import System

    monkeypatch.delenv("WARPWIZARD_REPORT_DIR")
    settings = Options().settings(System(environ={"XDG_STATE_HOME": str(tmp_path)}))
    assert settings.report_dir.parent == tmp_path / "warpwizard" / "runs"
    assert not settings.report_dir.exists()  # created when a probe first writes there


# -- signals --------------------------------------------------------------------------------------


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "name"), [(signal.SIGHUP, 129, "SIGHUP"), (signal.SIGQUIT, 131, "SIGQUIT")])
def test_a_hangup_or_quit_stops_the_workload_and_saves_the_answers(
    tmp_path: Path, signum: int, code: int, name: str
) -> None:
    proc, workload = start_flagship_workload(tmp_path)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    (session,) = (Path(os.environ["XDG_STATE_HOME"]) / "warpwizard" / "sessions").iterdir()
    assert f"terminated ({name}); answers so far saved to {session} (continue with: warpwizard run" in stderr
    assert _gone(workload)
    saved = yaml.safe_load(session.read_text())
    assert saved["have"] == "workload"


@needs_torch
@pytest.mark.slow
def test_the_workload_dies_with_warpwizard_even_when_it_is_killed_outright(tmp_path: Path) -> None:
    proc, workload = start_flagship_workload(tmp_path)
    proc.kill()  # SIGKILL: no handler runs; the parent-death signal does the work
    proc.communicate(timeout=30)
    assert _gone(workload), "the workload outlived warpwizard"


def test_a_hangup_during_trace_fix_leaves_no_temporary_file(tmp_path: Path) -> None:
    builder = TraceBuilder()
    for i in range(3000):
        builder.add(KernelSpec(f"k{i}", (100000, 30000, 1), (256, 1, 1), repeat=4))
    trace = builder.write(tmp_path / "big.json")
    for attempt in range(3):  # the signal must land while the copy is being written
        out_dir = tmp_path / f"out{attempt}"
        out_dir.mkdir()
        proc = subprocess.Popen(
            [*cli_command(), "trace", "fix", str(trace), str(out_dir / "fixed.json.gz")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not any(out_dir.iterdir()) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        proc.send_signal(signal.SIGHUP)
        _, stderr = proc.communicate(timeout=30)
        if proc.returncode == 0:
            continue  # it finished first: this attempt proves nothing
        assert proc.returncode == 129, stderr
        assert stderr.strip() == "warpwizard: error: terminated (SIGHUP)"
        assert list(out_dir.iterdir()) == []
        return
    pytest.fail("trace fix finished before the signal three times; make the trace bigger")


def test_a_vanished_terminal_does_not_turn_the_exit_into_an_error() -> None:
    from wizard.cli.context import _Stream

    class Gone:
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

        def flush(self) -> None:
            raise OSError(5, "Input/output error")

    stream = _Stream(Gone())  # type: ignore[arg-type]
    assert stream.write("hello\n") == 6
    stream.flush()
    assert stream.broken


# -- jobs are bounded by the cores ----------------------------------------------------------------


def test_a_playbooks_jobs_cannot_fork_without_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import wizard.trace.read.parallel as parallel_module  # run.py imports worker_pool from it when a pool is made
    from wizard.trace.read.reader import usable_cores

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for i in range(3):
        _copy(GRID, ranks / f"rank{i}.json")
    asked: list[int] = []
    real = parallel_module.worker_pool

    def recording(workers: int) -> Any:
        asked.append(workers)
        return real(workers)

    monkeypatch.setattr(parallel_module, "worker_pool", recording)
    playbook = tmp_path / "bomb.yaml"
    playbook.write_text(
        "id: bomb\ntitle: t\nversion: '1'\nnodes:\n"
        f"  - {{id: look, kind: probe, probe: trace.inspect, params: {{paths: ['{ranks}'], jobs: 100000}}, "
        "next: end}\n"
        "  - {id: end, kind: conclusion, diagnosis: done, summary: done}\n"
    )
    assert run_inprocess("validate", str(playbook)).status == 0
    result = run_inprocess("run", str(playbook), "--json")
    assert result.status == 0, result.stderr
    assert asked == [min(3, usable_cores())]


def test_one_big_file_takes_no_more_workers_than_cores(tmp_path: Path) -> None:
    from wizard.trace.read.reader import ReaderConfig, _parallel_workers, usable_cores

    big = tmp_path / "t.json"
    big.write_bytes(b" " * 1024)
    assert _parallel_workers(big, ReaderConfig(workers=100000)) == usable_cores()


# -- the writer -----------------------------------------------------------------------------------


def test_writing_never_changes_the_umask_another_thread_sees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The umask is process-wide: setting it to 0 for a moment (to read it) made files another
    thread of a training process created in that window world-writable."""
    from wizard.outputs import write_text

    calls: list[int] = []
    real = os.umask

    def recording(mask: int) -> int:
        calls.append(mask)
        return real(mask)

    monkeypatch.setattr(os, "umask", recording)
    write_text(tmp_path / "report.md", "x")
    assert calls == []


def test_a_new_file_gets_the_umasks_mode_with_no_chmod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wizard.outputs import write_text

    def no_chmod(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("chmod by path: a link swapped in meanwhile would get the mode")

    monkeypatch.setattr(os, "chmod", no_chmod)
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "report.md", "hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o640


def test_a_name_taken_while_writing_is_not_replaced(tmp_path: Path) -> None:
    from wizard.outputs import atomic_file

    target = tmp_path / "report.json"
    with (
        pytest.raises(OutputFileError, match="appeared while the report was written"),
        atomic_file(target, what="report") as fh,
    ):
        fh.write(b"mine")
        target.write_text("theirs")  # a second process with the same --output got there first
    assert target.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_probe_json_is_printed_even_when_its_output_file_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wizard.runs

    target = tmp_path / "report.json"
    real = wizard.runs.run_probe

    def racing(*args: Any, **kwargs: Any) -> Any:
        target.write_text("the other process's report")
        return real(*args, **kwargs)

    monkeypatch.setattr(wizard.runs, "run_probe", racing)
    result = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--output", str(target), "--json")
    assert result.status == 7
    assert strict_json(result.stdout)["entries"][0]["facts"]["mechanisms"] == ["A", "E"]
    assert target.read_text() == "the other process's report"


@pytest.mark.parametrize(("kind", "what"), [("fifo", "a pipe"), ("link-to-null", "a device")])
def test_force_never_replaces_something_that_is_not_a_regular_file(tmp_path: Path, kind: str, what: str) -> None:
    """(Never /dev/null itself as the target: a regression would replace the machine's /dev/null.)"""
    target = tmp_path / "out.json"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    result = run_inprocess("trace", "fix", str(GRID), str(target), "--force")
    assert result.status == 7
    assert f"{target}: is {what}, not a regular file" in result.stderr
    assert Path("/dev/null").is_char_device()
    assert target.is_fifo() if kind == "fifo" else target.is_symlink()


def test_force_never_replaces_a_link_to_stdout(tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("/dev/stdout")
    result = subprocess.run(
        [*cli_command(), "trace", "fix", str(GRID), str(link), "--force"],
        capture_output=True, text=True, env=cli_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 7
    assert (
        result.stderr
        == f"warpwizard: error: {link}: is a pipe, not a regular file; name a file for the corrected trace\n"
    )
    assert link.is_symlink()


# -- --force never replaces an input of the run ---------------------------------------------------


def test_run_force_keeps_the_trace_named_in_the_answers(tmp_path: Path) -> None:
    trace = _copy(GRID, tmp_path / "trace.json")
    answers = tmp_path / "a.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\n")
    for flag in ("--report", "--record"):
        result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), flag, str(trace), "--force")
        assert result.status == 7, result.stderr
        assert f"{trace}: is an input of this run ({trace})" in result.stderr
    via_set = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=trace", "--set", f"trace_path={trace}",
        "--defaults", "--report", str(trace), "--force",
    )  # fmt: skip
    assert via_set.status == 7
    assert trace.read_bytes() == GRID.read_bytes()


def test_probe_output_never_lands_on_its_compare_report_or_workload(tmp_path: Path) -> None:
    report = tmp_path / "other.json"
    first = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--output", str(report))
    assert first.status == 1, first.stderr
    before = report.read_bytes()
    again = run_inprocess(
        "probe", "trace.inspect", "--param", f"paths={GRID}", "--compare", str(report), "--output", str(report),
        "--force",
    )  # fmt: skip
    assert again.status == 7 and f"is an input of this run ({report})" in again.stderr
    script = tmp_path / "train.py"
    script.write_text("print('train')\n")
    onto_script = run_inprocess(
        "probe", "trace.inspect", "--param", f"paths={GRID}", "--workload", f"python {script}",
        "--output", str(script), "--force",
    )  # fmt: skip
    assert onto_script.status == 7 and f"is an input of this run ({script})" in onto_script.stderr
    assert report.read_bytes() == before and script.read_text() == "print('train')\n"


def test_inspect_markdown_never_lands_on_a_trace_of_an_input_directory(tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    rank0 = _copy(GRID, ranks / "rank0.json")
    result = run_inprocess("trace", "inspect", str(ranks), "--markdown", str(rank0), "--force")
    assert result.status == 7
    assert f"{rank0}: is an input of this run ({ranks})" in result.stderr
    assert rank0.read_bytes() == GRID.read_bytes()
    beside = run_inprocess("trace", "inspect", str(ranks), "--markdown", str(ranks / "report.md"))
    assert beside.status == 1  # a new file beside the traces destroys nothing


# -- hostile sizes --------------------------------------------------------------------------------


def test_compare_of_a_huge_hostile_report_is_fast_and_bounded(tmp_path: Path) -> None:
    hostile = {
        "schema": "warpwizard.transcript/1",
        "host": {"hostname": "h" * 1_000_000, "gpus": ["G" * 1000] * 10_000},
        "entries": [{"facts": {"mechanisms": [f"M{i}" for i in range(100_000)], "impossible": True}}],
    }
    big = tmp_path / "big.json"
    big.write_text(json.dumps(hostile))
    honest = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--output", str(tmp_path / "a.json"))
    assert honest.status == 1
    started = time.monotonic()
    result = run_inprocess("compare", str(big), str(tmp_path / "a.json"))
    assert result.status == 0, result.stderr
    assert time.monotonic() - started < budget(5)
    assert len(result.stdout) < 20_000
    machines = strict_json(run_inprocess("compare", str(big), str(tmp_path / "a.json"), "--json").stdout)["machines"]
    assert len(machines[0]["host"]) == 160 and machines[0]["host"].endswith("…")
    assert len(machines[0]["gpus"]) == 64 and {len(g) for g in machines[0]["gpus"]} == {160}
    assert len(machines[0]["mechanisms"]) == 64


def test_compare_keeps_at_most_64_short_mechanism_ids(tmp_path: Path) -> None:
    from wizard.compare import load_report

    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "schema": "warpwizard.transcript/1",
                "entries": [
                    {"facts": {"mechanisms": ["A", "x" * 9, *[f"Z{i}" for i in range(500)]], "impossible": True}}
                ],
            }
        )
    )
    report = load_report(str(path))
    assert "A" in report.mechanisms and "x" * 9 not in report.mechanisms and len(report.mechanisms) == 64


def test_json_lists_at_most_a_thousand_groups_and_counts_the_rest(tmp_path: Path) -> None:
    builder = TraceBuilder()
    for i in range(1_200):
        builder.add(KernelSpec(f"kernel_{i}<float>", (100000, 30000, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "many.json")
    report = inspect_json(run_inprocess, trace, status=1)["reports"][0]
    assert len(report["groups"]) == 1000
    assert report["groups_omitted"] == 200
    assert report["mechanisms"] == {"A": 1200}


def test_the_kernel_table_keeps_four_numbers_a_launch(tmp_path: Path) -> None:
    """Memory under the file's size: 28 bytes a launch plus one record per distinct combination."""
    from wizard.trace.read.reader import ReaderConfig, read_trace

    path = tmp_path / "tiny.json"
    event = '{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1,"args":{"correlation":%d}}'
    path.write_text('{"traceEvents":[' + ",".join(event % (i, i) for i in range(20_000)) + "]}")
    table = read_trace(path, config=ReaderConfig(workers=0)).kernels
    assert len(table) == 20_000 and len(table._shapes) == 1
    per_launch = sum(a.itemsize for a in (table._ts, table._dur, table._corr, table._shape))
    assert per_launch == 28
    last = table[19_999]
    assert (last.ts, last.correlation, last.index, table[-1].name) == (19999.0, 19999, 19999, "k")
    assert [k.index for k in table[3:6]] == [3, 4, 5]


def test_out_of_memory_is_one_line_and_exit_8(monkeypatch: pytest.MonkeyPatch) -> None:
    import wizard.api

    def exhausted(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(wizard.api, "inspect_traces", exhausted)
    result = run_inprocess("trace", "inspect", str(GRID))
    assert result.status == 8
    assert result.stderr.startswith("warpwizard: error: out of memory (or a worker process was killed")
    assert result.stderr.count("\n") == 1


def test_a_failed_run_kills_its_workers_instead_of_waiting_for_them() -> None:
    from wizard.trace.read.parallel import worker_pool

    started = time.monotonic()
    with pytest.raises(MemoryError), worker_pool(2) as pool:
        pool.submit(time.sleep, 60)
        time.sleep(0.5)
        raise MemoryError
    assert time.monotonic() - started < budget(15)


# -- exit 70 and silent acceptance ----------------------------------------------------------------


@pytest.mark.parametrize("version", ["¹", "٣", "1" * 5000])
def test_a_schema_version_that_is_no_number_is_an_input_error(tmp_path: Path, version: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": f"warpwizard.transcript/{version}"}))
    result = run_inprocess("compare", str(path), str(path))
    assert result.status == 6, result.stderr
    assert "not a warpwizard JSON report (expected schema" in result.stderr


@pytest.mark.parametrize("probe", ["trace.inspect", "op.isolate", "metrics.sanity"])
@pytest.mark.parametrize(("path", "why"), [("a\0b.json", "it holds a NUL character"), ("a" * 5000, "longer than 4096")])
def test_an_impossible_path_is_the_probes_error_not_the_runs_end(probe: str, path: str, why: str) -> None:
    from wizard.runs import run_probe

    given: dict[str, dict[str, Any]] = {
        "trace.inspect": {"paths": [path]},
        "op.isolate": {"trace": [path]},
        "metrics.sanity": {"trace": path},
    }
    params = given[probe]
    entry = run_probe(probe, params).entries[0]
    assert entry.status == "error"
    assert why in (entry.summary or "")


def test_an_id_ending_in_a_newline_fails_validate(tmp_path: Path) -> None:
    playbook = tmp_path / "nl.yaml"
    playbook.write_text(
        'id: "pb\\n"\ntitle: t\nversion: "1"\nnodes:\n  - {id: "a\\n", kind: conclusion, diagnosis: d, summary: x}\n'
    )
    result = run_inprocess("validate", str(playbook))
    assert result.status == 3
    assert "playbook id 'pb\\n' must be lower-case" in result.stdout
    assert "node id 'a\\n' must be snake_case" in result.stdout


def test_a_host_named_dot_dot_stays_in_the_output_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    monkeypatch.setattr(platform, "node", lambda: "..")
    out = tmp_path / "reports"
    out.mkdir()
    result = run_inprocess("probe", "trace.inspect", "--param", f"paths={GRID}", "--output", str(out / "{host}"))
    assert result.status == 1, result.stderr
    assert [p.name for p in out.iterdir()] == ["host"]


# -- text shown raw -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "char",
    ["\u200b", "\u200d", "\u200e", "\u200f", "\u061c", "\ufeff", "\u2060", "\u2064", "\U000e0041", "\u3164",
     "\u115f", "\u1160", "\uffa0", "\u00ad", "\u180e"],
)  # fmt: skip
def test_invisible_characters_are_shown_as_escapes(char: str) -> None:
    from wizard.untrusted import html_text, markdown, visible

    escape = f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"
    if ord(char) <= 0xFF:
        escape = f"\\x{ord(char):02x}"
    assert visible(f"gemm{char}kernel") == f"gemm{escape}kernel"
    assert char not in markdown(f"gemm{char}kernel") and char not in html_text(f"gemm{char}kernel")


def test_two_kernels_that_differ_by_a_zero_width_space_look_different(tmp_path: Path) -> None:
    builder = TraceBuilder()
    builder.add(KernelSpec("gemm_kernel", (100000, 30000, 1), (256, 1, 1)))
    builder.add(KernelSpec("gemm\u200b_kernel", (100000, 30000, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "zw.json")
    result = run_inprocess("trace", "inspect", str(trace))
    assert "gemm\\u200b_kernel" in result.stdout and "\u200b" not in result.stdout


def test_the_notebook_view_escapes_and_cuts_every_cell(tmp_path: Path) -> None:
    import wizard

    builder = TraceBuilder()
    builder.add(KernelSpec("evil\x1b[31m\x9b\u202e<b>" + "x" * 10_000_000, (100000, 30000, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "evil.json")
    page = wizard.inspect_traces(trace, launches="none")._repr_html_()
    assert "\x1b" not in page and "\x9b" not in page and "\u202e" not in page and "<b>x" not in page
    assert "evil\\x1b[31m\\x9b\\u202e&lt;b&gt;" in page
    assert len(page) < 10_000


def test_a_playbooks_links_show_their_target_at_the_terminal() -> None:
    from rich.console import Console

    from wizard.ui.render import markdown_view

    console = Console(force_terminal=True, width=100, color_system="truecolor")
    with console.capture() as captured:
        console.print(markdown_view("Run [pip install torch](https://evil.example/payload) now"))
    text = captured.get()
    assert "\x1b]8;" not in text  # no hidden-target terminal hyperlink
    assert "https://evil.example/payload" in re.sub(r"\x1b\[[0-9;]*m", "", text)


# -- the profiler hook and the API ----------------------------------------------------------------


def test_warnings_as_errors_raise_the_finding_after_the_files_are_written(tmp_path: Path) -> None:
    from wizard.profiler import TraceChecker

    trace = _copy(GRID, tmp_path / "run.pt.trace.json")
    checker = TraceChecker(fix=True, report=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WarpWizardWarning)
        with pytest.raises(WarpWizardWarning, match=r"^warpwizard: mechanism A in 1 launch, "):
            checker.check(trace)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run.pt.trace.json",
        "run.warpwizard-fixed.pt.trace.json",
        "run.warpwizard.json",
    ]


def test_a_logging_handler_that_raises_does_not_reach_training(tmp_path: Path) -> None:
    from wizard.profiler import LOG, TraceChecker

    class Broken(logging.Handler):
        def handle(self, record: logging.LogRecord) -> bool:
            raise RuntimeError("the application's handler is broken")

    handler = Broken()
    LOG.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = TraceChecker().check(_copy(GRID, tmp_path / "t.json"))
    finally:
        LOG.removeHandler(handler)
    assert [str(w.message)[:26] for w in caught] == ["warpwizard: mechanism A in", "warpwizard: mechanism E in"]
    assert len(result.warnings) == 2


def test_the_reader_and_the_fixer_agree_on_nesting_deep_in_a_training_stack(tmp_path: Path) -> None:
    from wizard.profiler import TraceChecker

    doc = json.loads(GRID.read_text())
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    deep = dict(kernel, args=dict(kernel["args"], deep="@@"))
    doc["traceEvents"].append(deep)
    trace = tmp_path / "deep.pt.trace.json"
    trace.write_text(json.dumps(doc).replace('"@@"', "[" * 1500 + "]" * 1500))

    def at_depth(n: int) -> Any:
        return at_depth(n - 1) if n else TraceChecker(fix=True).check(trace)

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = at_depth(sys.getrecursionlimit() - 150)
    assert result.inspection is not None and result.fixed is not None
    assert not any("could not" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"sms": "80"}, UsageError, "sms must be a whole number, not str '80'"),
        ({"jobs": "2"}, UsageError, "jobs must be a whole number, not str '2'"),
        ({"max_launches": 1.5}, UsageError, "max_launches must be a whole number, not float 1.5"),
    ],
)
def test_api_arguments_of_the_wrong_type_are_documented_errors(
    kwargs: dict[str, Any], error: type, message: str
) -> None:
    import wizard

    with pytest.raises(error, match=re.escape(message)):
        wizard.inspect_traces(GRID, **kwargs)


def test_api_bytes_paths_none_limits_and_odd_answer_keys() -> None:
    import wizard

    assert wizard.inspect_traces(GRID, max_launches=None).mechanisms == {"A": 1, "E": 1, "F": 1}
    with pytest.raises(UsageError, match="paths must be a path or a list of paths"):
        wizard.inspect_traces(bytes(GRID))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"a path must be a str or os\.PathLike of str, not bytes"):
        wizard.inspect_traces([bytes(GRID)])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="playbook must be a name or path"):
        wizard.run_playbook(b"negative-warps-per-sm", {})  # type: ignore[arg-type]
    with pytest.raises(AnswersError, match="question id 1: expected text, not int"):
        wizard.run_playbook("negative-warps-per-sm", {1: "x"})  # type: ignore[dict-item]


# -- fuzzing the new surfaces ---------------------------------------------------------------------


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(host=st.text(max_size=300))
def test_fuzz_output_templates_stay_in_their_directory(host: str) -> None:
    from wizard.cluster import launcher_rank, output_name

    name = output_name("reports/{host}-{rank}.json", launcher_rank({}, hostname=host))
    resolved = Path("/base", name).resolve()
    assert resolved.parent == Path("/base/reports") and len(resolved.name) <= 80


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    host=_JSON,
    facts=_JSON,
    schema=st.sampled_from(["warpwizard.transcript/1", "warpwizard.trace-report/2", "warpwizard.transcript/¹", 3]),
)
def test_fuzz_compare_reports(tmp_path: Path, host: Any, facts: Any, schema: Any) -> None:
    from wizard.compare import compare, load_report

    path = tmp_path / "r.json"
    document = {"schema": schema, "host": host, "entries": [{"facts": facts}], "reports": facts, "mechanisms": facts}
    path.write_text(json.dumps(document))
    try:
        reports = [load_report(str(path)), load_report(str(path))]
    except WizardError:
        return
    result = compare(reports)
    assert len(result.verdict) < 5_000
    json.dumps(result.to_dict(), allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    paths=st.one_of(_JSON, st.binary(max_size=20)),
    sms=_JSON,
    jobs=_JSON,
    max_launches=_JSON,
)
def test_fuzz_api_arguments(paths: Any, sms: Any, jobs: Any, max_launches: Any) -> None:
    import wizard

    try:
        wizard.inspect_traces(paths, sms=sms, jobs=jobs, max_launches=max_launches, launches="none")
    except WizardError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400) | st.builds(lambda v: json.dumps({"traceEvents": v}).encode(), _JSON))
def test_fuzz_the_profiler_hook_never_raises(tmp_path: Path, data: bytes) -> None:
    from wizard.profiler import TraceChecker

    trace = tmp_path / "t.pt.trace.json"
    trace.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TraceChecker(fix=True, report=True).check(trace)
    for made in tmp_path.iterdir():
        if made.name != trace.name:
            if made.name.endswith(".warpwizard.json"):
                strict_json(made.read_text())
            made.unlink()
