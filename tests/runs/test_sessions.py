"""A session in scripts and CI: --workload answers its question, --fail-on gates on the diagnosis,
answers files carry their paths with them, -V. (The terminal flows, Ctrl-C then --resume and the
confirmed workload, are in test_terminal.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, needs_torch, run_inprocess
from wizard import __version__
from wizard.runner import CommandResult

GRID_ANSWERS = EXAMPLES / "answers" / "grid-overflow.yaml"


@needs_torch
@pytest.mark.slow
def test_workload_on_the_command_line_answers_the_workload_question(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('one step')\n")
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=workload", "--workload", f"python {script}", "--json",
        "--report-dir", str(tmp_path / "wr"),
    )  # fmt: skip
    assert result.status == 0, result.stderr
    transcript = result.json
    entries = {e["node"]: e for e in transcript["entries"]}
    assert entries["workload_cmd"]["answer"] == f"python {script}"
    assert entries["workload_cmd"]["answer_origin"] == "command line"
    assert entries["reprofile"]["facts"]["workload_failed"] is False
    assert transcript["conclusion"]["diagnosis"] == "no-gpu-kernels"


def test_workload_questions_are_found_from_the_playbook() -> None:
    from wizard.runs import load_playbook, workload_questions

    assert workload_questions(load_playbook("negative-warps-per-sm")) == ["workload_cmd"]


@pytest.mark.parametrize(
    ("answers", "fail_on", "status"),
    [
        ("grid-overflow.yaml", "warning", 1),  # profiler-bug-grid-overflow is a warning
        ("grid-overflow.yaml", "error", 0),
        ("corrupt.yaml", "error", 1),  # trace-unreadable is an error: CI can now gate on it
        ("healthy-small.yaml", "warning", 0),
    ],
)
def test_fail_on_gates_ci_on_the_diagnosis(answers: str, fail_on: str, status: int) -> None:
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--answers", str(EXAMPLES / "answers" / answers), "--fail-on", fail_on, "--json"
    )
    assert result.status == status, result.stderr
    severity = result.json["conclusion"]["severity"]
    assert severity == {"grid-overflow.yaml": "warning", "corrupt.yaml": "error", "healthy-small.yaml": "info"}[answers]


def test_fail_on_takes_only_warning_or_error() -> None:
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(GRID_ANSWERS), "--fail-on", "info")
    assert result.status == 2
    assert "argument --fail-on: invalid choice: 'info' (choose from 'warning', 'error')" in result.stderr


def test_an_answers_file_carries_its_paths_with_it(tmp_path: Path) -> None:
    """Moved with its trace, from any directory, the file still finds the trace beside it."""
    bundle = tmp_path / "bug-123"
    bundle.mkdir()
    shutil.copy(EXAMPLES / "traces" / "grid-overflow.json", bundle / "trace.json")
    (bundle / "answers.yaml").write_text("have: trace\ntrace_path: trace.json\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--answers", str(bundle / "answers.yaml"), "--json", cwd=elsewhere
    )
    assert result.status == 0, result.stderr
    assert result.json["answers"]["trace_path"] == str(bundle / "trace.json")
    assert result.json["conclusion"]["diagnosis"] == "profiler-bug-grid-overflow"


def test_a_path_given_with_set_stays_relative_to_where_warpwizard_runs(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "traces" / "grid-overflow.json", tmp_path / "t.json")
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=trace", "--set", "trace_path=t.json", "--json", cwd=tmp_path
    )
    assert result.status == 0, result.stderr
    assert result.json["answers"]["trace_path"] == "t.json"


def test_from_an_empty_directory_a_run_leaves_it_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WARPWIZARD_REPORT_DIR")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(GRID_ANSWERS), cwd=empty)
    assert result.status == 0, result.stderr
    assert list(empty.iterdir()) == []


def test_resume_without_a_session_says_where_sessions_are(tmp_path: Path) -> None:
    result = run_inprocess("run", "negative-warps-per-sm", "--resume")
    assert result.status == 2
    sessions = tmp_path / "state" / "warpwizard" / "sessions"
    assert result.stderr == (
        f"warpwizard: error: no interrupted session of negative-warps-per-sm to resume (sessions are saved in "
        f"{sessions})\n"
    )


def test_resume_without_a_terminal_reads_the_session_and_asks_nothing(tmp_path: Path) -> None:
    sessions = tmp_path / "state" / "warpwizard" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    trace = EXAMPLES / "traces" / "old-sm-count.json"
    (sessions / "negative-warps-per-sm-20261130T070000.yaml").write_text(f"have: trace\ntrace_path: {trace}\n")
    result = run_inprocess("run", "negative-warps-per-sm", "--resume", "--json")
    assert result.status == 0, result.stderr
    assert result.json["conclusion"]["diagnosis"] == "profiler-bug-old-sm-count"


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    result = run_inprocess(flag)
    assert (result.status, result.stdout) == (0, f"warpwizard {__version__}\n")


class _NoProcess:
    """A runner that fails the test if anything would start."""

    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> CommandResult:
        raise AssertionError(f"a dry run started {argv!r}")


def _dry(*args: str) -> tuple[int, str]:
    import io

    from tests.conftest import cli_env
    from wizard.cli.app import main
    from wizard.system import System

    out, err = io.StringIO(), io.StringIO()
    system = System(stdin=io.StringIO(""), stdout=out, stderr=err, environ=cli_env(), runner=_NoProcess(),
                    isatty=lambda stream: False)  # fmt: skip
    status = main(["run", "negative-warps-per-sm", "--dry-run", *args], system)
    assert err.getvalue() == ""
    return status, out.getvalue()


def test_dry_run_lists_probes_and_programs_and_runs_nothing(tmp_path: Path) -> None:
    from tests.conftest import strict_json

    before = sorted(tmp_path.rglob("*"))
    status, text = _dry("--set", "have=workload", "--workload", "python train.py --steps 3", "--json")
    assert status == 0
    plan = strict_json(text)
    assert plan["schema"] == "warpwizard.plan/1"
    assert [s["node"] for s in plan["steps"]] == ["have", "workload_cmd", "environment", "reprofile", "reprofiled"]
    assert [s["probe"] for s in plan["steps"] if s["probe"]] == ["env", "profiler.reprofile"]
    (program,) = [p for s in plan["steps"] for p in s["programs"]]
    assert program == {"parameter": "workload", "value": "python train.py --steps 3", "runs": True, "why": None}
    assert plan["stops"].startswith("reprofiled is decided by probe results (facts.reprofile.workload_error)")
    assert sorted(tmp_path.rglob("*")) == before  # no workspace, no session, no file


def test_dry_run_says_which_program_would_be_refused() -> None:
    answers = EXAMPLES / "answers" / "workload-cpu.yaml"
    status, text = _dry("--answers", str(answers))
    assert status == 0
    line = (
        "would NOT start (from the answers file; --allow-commands): workload 'python examples/workloads/tiny_matmul.py'"
    )
    assert line in " ".join(text.split())


def test_dry_run_follows_answers_to_a_conclusion() -> None:
    status, text = _dry("--set", "have=description", "--defaults")
    assert status == 0
    assert text.splitlines()[-1] == "  ■ diagnosis likely-profiler-bug-grid-overflow (warning)"


def test_the_answers_template_filled_in_runs(tmp_path: Path) -> None:
    result = run_inprocess("answers", "negative-warps-per-sm")
    assert result.status == 0
    template = result.stdout
    assert "# trace_path: trace.json   # the default" in template
    assert "#   names a program: it runs only with --allow-commands" in template
    # a template asks, it does not answer (issue 44 item 7): a default is there to uncomment, not an answer
    assert "# have: trace   # the default\n" in template and "# symptom: negative   # the default\n" in template
    assert yaml.safe_load(template) is None
    shutil.copy(EXAMPLES / "traces" / "grid-overflow.json", tmp_path / "mine.json")
    filled = tmp_path / "answers.yaml"
    filled.write_text(
        template.replace("# trace_path: trace.json   # the default", "trace_path: mine.json").replace(
            "# have: trace   # the default", "have: trace"
        )
    )
    run = run_inprocess("run", "negative-warps-per-sm", "--answers", str(filled), "--json")
    assert run.status == 0, run.stderr
    assert run.json["conclusion"]["diagnosis"] == "profiler-bug-grid-overflow"


def _transcript(tmp_path: Path, example: str) -> Path:
    result = run_inprocess(
        "run", "negative-warps-per-sm", "--answers", str(EXAMPLES / "answers" / f"{example}.yaml"), "--json"
    )
    assert result.status == 0, result.stderr
    path = tmp_path / f"{example}.json"
    path.write_text(result.stdout)
    return path


def _run_recording(*args: str) -> tuple[int, dict[str, Any], list[list[str]], str]:
    import io

    from tests.conftest import ScriptedRunner, cli_env, strict_json
    from wizard.cli.app import main
    from wizard.system import System

    runner = ScriptedRunner("")
    out, err = io.StringIO(), io.StringIO()
    system = System(stdin=io.StringIO(""), stdout=out, stderr=err, environ=cli_env(), runner=runner,
                    isatty=lambda stream: False)  # fmt: skip
    status = main(["run", "negative-warps-per-sm", *args, "--json"], system)
    return status, strict_json(out.getvalue()) if status == 0 else {}, runner.calls, err.getvalue()


def test_from_a_node_reuses_the_recorded_probes_and_starts_none_before_it(tmp_path: Path) -> None:
    previous = _transcript(tmp_path, "unexplained-aten-op")
    status, transcript, calls, stderr = _run_recording("--answers", str(previous), "--from", "launch_blocking")
    assert status == 0, stderr
    assert calls == []  # op.isolate's repro (a process) was not started again
    entries = {e["node"]: e for e in transcript["entries"]}
    reused = {"inspect", "compare_profiles", "reprofile_compare", "isolate"}  # compare_profiles: issue 50's step 1
    assert {n for n, e in entries.items() if "reused_from" in e} == reused
    assert entries["isolate"]["reused_from"] == str(previous)
    assert entries["isolate"]["status"] == strict_recorded(previous, "isolate")["status"]
    assert "reused_from" not in entries["metrics"]
    assert transcript["conclusion"]["diagnosis"] == "unresolved"
    assert (
        "rerunning from launch_blocking; reusing the recorded results of: inspect, compare_profiles, "
        "reprofile_compare, isolate" in stderr
    )


def strict_recorded(path: Path, node: str) -> dict[str, Any]:
    from tests.conftest import strict_json

    return next(e for e in strict_json(path.read_text())["entries"] if e["node"] == node)


def test_from_step_runs_that_step_again(tmp_path: Path) -> None:
    previous = _transcript(tmp_path, "unexplained-aten-op")
    status, transcript, calls, stderr = _run_recording("--answers", str(previous), "--from-step", "3")
    assert status == 0, stderr
    assert calls[0][1].endswith("repro.py")  # step 3's op.isolate ran again, and nothing before it
    entries = {e["node"]: e for e in transcript["entries"]}
    assert "reused_from" not in entries["isolate"] and entries["inspect"]["reused_from"] == str(previous)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "no_such_node"], "--from no_such_node: playbook negative-warps-per-sm has no such node"),
        (["--from", "early_overflow"], "--from early_overflow: the previous run did not reach it; it visited: have,"),
        (["--from-step", "9"], "--from-step 9: playbook negative-warps-per-sm has steps 1 to 6"),
    ],
)
def test_from_names_what_is_wrong(tmp_path: Path, args: list[str], message: str) -> None:
    previous = _transcript(tmp_path, "unexplained-aten-op")
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(previous), *args)
    assert result.status == 2
    assert result.stderr.startswith(f"warpwizard: error: {message}")


def test_from_needs_a_transcript() -> None:
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(GRID_ANSWERS), "--from", "inspect")
    assert result.status == 2
    assert "--from needs --answers to be a previous run's --json transcript" in result.stderr


# -- cut where it matters --------------------------------------------------------------------------

LONG_KERNEL = (
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4<float, 128, 4, true, false, 12345>>"
)


def _long_trace(tmp_path: Path) -> Path:
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder()
    builder.add(KernelSpec(LONG_KERNEL, (100000, 30000, 1), (256, 1, 1), op="aten::mm"))
    return builder.write(tmp_path / "long.json")


def test_evidence_is_wrapped_at_the_terminal_not_cut(tmp_path: Path) -> None:
    trace = _long_trace(tmp_path)
    args = ["run", "negative-warps-per-sm", "--set", "have=trace", "--set", f"trace_path={trace}"]
    evidence = run_inprocess(*args, "--json").json["entries"][2]["evidence"][0]
    assert len(evidence) > 300 and evidence.endswith("launched by aten::mm]")
    shown = run_inprocess(*args, "--defaults", environ={"COLUMNS": "100"})
    assert " ".join(evidence.split()) in " ".join(shown.stdout.split())


def test_files_keep_whole_kernel_names(tmp_path: Path) -> None:
    trace = _long_trace(tmp_path)
    markdown = run_inprocess("trace", "inspect", str(trace), "--markdown", "-").stdout
    assert f"`{LONG_KERNEL}`" in markdown
    report = tmp_path / "report.md"
    run = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=trace", "--set", f"trace_path={trace}", "--defaults",
        "--report", str(report),
    )  # fmt: skip
    assert run.status == 0, run.stderr
    assert LONG_KERNEL in report.read_text().replace("\\", "")


def test_probes_shows_one_probe_whole_and_all_as_json() -> None:
    from tests.conftest import strict_json

    one = run_inprocess("probes", "trace.inspect")
    assert one.status == 0
    assert "    max_true_warps_per_sm (float): " in one.stdout  # a fact name the table cut at 80 columns
    everything = strict_json(run_inprocess("probes", "--json").stdout)
    from wizard.runs import list_probes

    assert [p["name"] for p in everything] == list(list_probes())
    isolate = next(p for p in everything if p["name"] == "op.isolate")
    assert {f["name"] for f in isolate["facts"]} >= {"op", "workload", "repro_script", "reproduced"}
    unknown = run_inprocess("probes", "no.such")
    assert unknown.status == 2 and "unknown probe 'no.such'; registered: " in unknown.stderr


# -- habits of the ecosystem -----------------------------------------------------------------------


def test_bash_completion_is_generated_from_the_parser(tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "warpwizard.bash"
    result = run_inprocess("completion", "bash")
    assert result.status == 0
    script.write_text(result.stdout)
    probe = (
        f"source {script}; COMP_WORDS=(warpwizard run x --dry); COMP_CWORD=3; _shtab_warpwizard; "
        'echo "${COMPREPLY[@]}"; COMP_WORDS=(warpwizard exa); COMP_CWORD=1; _shtab_warpwizard; echo "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["--dry-run", "examples"]
    for shell in ("zsh", "fish"):
        other = run_inprocess("completion", shell)
        assert other.status == 0 and "--fail-on" in other.stdout


def test_an_empty_template_hole_is_visible() -> None:
    from wizard.playbook.conditions import parse_template

    template = parse_template("Is the flagged kernel, {{ facts.inspect.worst_kernel }}, your own code?")
    shown = template.render({"answers": {}, "facts": {}, "status": {}})
    assert shown == "Is the flagged kernel, <unknown: facts.inspect.worst_kernel>, your own code?"


def test_examples_are_listed_and_copied_out_without_replacing_anything(tmp_path: Path) -> None:
    listed = run_inprocess("examples")
    assert listed.status == 0
    header, first = listed.stdout.splitlines()[:2]  # a header names the columns (issue 44 item 10)
    assert header.split()[:2] == ["EXAMPLE", "DIAGNOSIS"]
    assert first.split() == ["grid-overflow", "profiler-bug-grid-overflow"]
    copied = run_inprocess("examples", "grid-overflow", "--to", str(tmp_path / "try"))
    assert copied.status == 0, copied.stderr
    assert sorted(p.name for p in (tmp_path / "try").iterdir()) == ["answers.yaml", "grid-overflow.json"]
    again = run_inprocess("examples", "grid-overflow", "--to", str(tmp_path / "try"))
    assert again.status == 7 and "already exists" in again.stderr
    unknown = run_inprocess("examples", "nope")
    assert unknown.status == 2 and "no example 'nope'; the examples: grid-overflow, " in unknown.stderr


def test_the_unedited_triage_template_answers_no_question(tmp_path: Path) -> None:
    """Issue 44 item 7: the triage's template filled about 20 answers (activities: true, sessions: one),
    which then answered questions nobody was asked. Unedited, it answers none, so a run asks the first."""
    result = run_inprocess("answers", "triage")
    assert result.status == 0, result.stderr
    assert yaml.safe_load(result.stdout) is None
    live = [line for line in result.stdout.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert live == []
    assert "# activities: true   # the default" in result.stdout  # the default is there to uncomment
    template = tmp_path / "triage.yaml"
    template.write_text(result.stdout)
    run = run_inprocess("run", "triage", "--answers", str(template), "--json")
    assert run.status == 4
    assert "missing answer for question 'have' (default: 'trace')" in run.stderr
