"""`warpwizard run` through the real entry point: answers files, records, JSON, reports, exit codes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, run_inprocess, strict_json

EXAMPLE = "examples/playbooks/torch-sees-no-gpu.yaml"
FLAGSHIP = "negative-warps-per-sm"


def test_answers_record_and_replay_reach_the_same_conclusion(run_cli: RunCli, tmp_path: Path) -> None:
    record = tmp_path / "answers.yaml"
    first = run_cli("run", EXAMPLE, "--defaults", "--record", str(record), "--json")
    assert first.returncode == 0, first.stderr
    replay = run_cli("run", EXAMPLE, "--answers", str(record), "--json")
    assert replay.returncode == 0, replay.stderr
    a, b = strict_json(first.stdout), strict_json(replay.stdout)
    assert a["conclusion"]["diagnosis"] == b["conclusion"]["diagnosis"]
    assert [e["node"] for e in a["entries"]] == [e["node"] for e in b["entries"]]
    assert "symptom: not_available" in record.read_text()


def test_json_transcript_schema(run_cli: RunCli) -> None:
    result = run_cli("run", FLAGSHIP, "--answers", "examples/answers/grid-overflow.yaml", "--json")
    assert result.returncode == 0, result.stderr
    data = strict_json(result.stdout)
    assert data["schema"] == "warpwizard.transcript/1"
    assert data["playbook"]["id"] == FLAGSHIP
    assert data["conclusion"]["diagnosis"] == "profiler-bug-grid-overflow"
    probe = next(e for e in data["entries"] if e["node"] == "inspect")
    assert probe["status"] == "fail" and probe["facts"]["mechanisms"] == ["A", "E"]
    assert probe["facts"]["worst_op"] == "aten::index_select"
    assert {"node", "kind", "started", "duration_s", "next"} <= set(probe)


def test_markdown_report(run_cli: RunCli, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    result = run_cli(
        "run", FLAGSHIP, "--answers", "examples/answers/shared-memory-over-48k.yaml", "--report", str(report)
    )
    assert result.returncode == 0, result.stderr
    text = report.read_text()
    assert "## Diagnosis: `profiler-bug-shared-memory-limit`" in text
    assert "| 1 | `have` | question |" in text
    assert "```yaml" in text and "trace_path:" in text


def test_set_answers_on_the_command_line(run_cli: RunCli) -> None:
    result = run_cli("run", FLAGSHIP, "--set", "have=description", "--set", "symptom=minus_99", "--json")
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout)["conclusion"]["diagnosis"] == "likely-profiler-bug-occupancy-calculator"


BAD_ANSWERS = {
    "not-a-mapping.yaml": "answers must be a mapping of question id to value, not list",
    "syntax.yaml": "syntax.yaml:3:1: not valid YAML/JSON",
    "bad-choice.yaml": "answer for 'have' (What do you have to start from?): 'a-trace' is not one of the choices: "
    "'trace', 'workload', 'description'",
    "unknown-id.yaml": "unknown question id 'trace_pth' (did you mean 'trace_path'?)",
    "missing.yaml": "missing answer for question 'trace_path' (default: 'trace.json'); depending on the answers, "
    "these may follow: other_profile, custom_kernel, launch_math",
    "missing-file.yaml": "data/bad_answers/examples/traces/does-not-exist.json' does not exist",  # beside the file
    "bad-confirm.json": "answer for 'custom_kernel'",
}


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_bad_answers_catalogue(run_cli: RunCli, name: str) -> None:
    assert sorted(p.name for p in (REPO / "tests" / "data" / "bad_answers").iterdir()) == sorted(BAD_ANSWERS)
    result = run_cli("run", FLAGSHIP, "--answers", f"tests/data/bad_answers/{name}")
    assert result.returncode == 4
    assert BAD_ANSWERS[name] in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "trace.inspect" not in result.stderr + result.stdout  # nothing ran before the check


def test_answers_from_stdin(run_cli: RunCli) -> None:
    result = run_cli(
        "run",
        FLAGSHIP,
        "--answers",
        "-",
        "--json",
        stdin='{"have": "trace", "trace_path": "examples/traces/old-sm-count.json"}',
    )
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout)["conclusion"]["diagnosis"] == "profiler-bug-old-sm-count"


def test_prompt_without_a_terminal_says_how_to_run_without_prompts(run_cli: RunCli) -> None:
    result = run_cli("run", FLAGSHIP, stdin="")
    assert result.returncode == 4
    assert "stdin is not a terminal" in result.stderr and "--answers FILE" in result.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["run", "negative-warps"], 2, "no playbook named 'negative-warps' (did you mean 'negative-warps-per-sm'?)"),
        (["run", "tests/data/broken/cycle.yaml", "--defaults"], 3, "cycle with no way out"),
        (["trace", "inspect", "nope.json"], 6, "nope.json: no such file"),
        (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
        (["graph", FLAGSHIP, "--format", "png"], 2, "invalid choice: 'png'"),
        ([], 2, "no command given and stdin is not a terminal"),
    ],
)
def test_errors_are_one_line_with_stable_exit_codes(run_cli: RunCli, args: list[str], code: int, message: str) -> None:
    result = run_cli(*args, stdin="")
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_playbook_search_path(run_cli: RunCli, tmp_path: Path) -> None:
    from tests.conftest import cli_env

    listed = run_cli("list", env=cli_env(WARPWIZARD_PLAYBOOK_PATH=str(REPO / "examples" / "playbooks")))
    assert "torch-sees-no-gpu" in listed.stdout and "negative-warps-per-sm" in listed.stdout
    by_dir = run_cli("--playbook-dir", "examples/playbooks", "validate", "torch-sees-no-gpu")
    assert by_dir.returncode == 0 and ": ok (" in by_dir.stdout


def test_an_empty_playbook_dir_is_the_current_directory(run_cli: RunCli) -> None:
    """``--playbook-dir ''`` names the directory the command runs in, as an empty entry of a search path does
    (and as before the parser built only the command on the line, which once made it an error)."""
    here = REPO / "examples" / "playbooks"
    found = run_cli("--playbook-dir", "", "validate", "torch-sees-no-gpu", cwd=here)
    assert (found.returncode, found.stderr) == (0, "")
    assert ": ok (" in found.stdout
    elsewhere = run_cli("--playbook-dir", "", "validate", "torch-sees-no-gpu", cwd=REPO / "docs")
    assert elsewhere.returncode == 3  # validate's "not valid": that directory holds no such playbook
    assert elsewhere.stdout.startswith("no playbook named 'torch-sees-no-gpu'; available: cuda-graphs, ")


def test_command_probe_needs_opt_in(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "nvidia-smi"  # the same answer on every machine, GPU or not
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-0)'\n")
    fake.chmod(0o755)
    path = {"PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    refused = run_inprocess("run", EXAMPLE, "--defaults", "--json", environ=path).json
    smi = next(e for e in refused["entries"] if e["node"] == "smi")
    assert smi["status"] == "skip" and "--allow-commands" in smi["summary"]
    allowed = run_inprocess("run", EXAMPLE, "--defaults", "--json", "--allow-commands", environ=path).json
    smi = next(e for e in allowed["entries"] if e["node"] == "smi")
    assert smi["facts"]["allowed"] is True and smi["status"] == "pass"
    assert smi["facts"]["output_tail"] == "GPU 0: Fake GPU (UUID: GPU-0)"


def test_compare_reports_from_several_machines(run_cli: RunCli, tmp_path: Path) -> None:
    """Each node runs warpwizard with --json; `compare` merges the files."""
    paths = []
    for host, trace in (("node1", "grid-overflow.json"), ("node2", "healthy-small.json")):
        out = run_cli("trace", "inspect", "--json", f"examples/traces/{trace}")
        path = tmp_path / f"{host}.json"
        path.write_text(out.stdout)
        paths.append(str(path))
    text = run_cli("compare", *paths)  # two different traces: different work, not a hardware difference
    assert text.returncode == 0
    assert "not comparable as hardware: the reports ran different work" in " ".join(text.stdout.split())
    data = strict_json(run_cli("compare", "--json", *paths).stdout)
    assert (data["hardware_specific"], data["same_work"], len(data["machines"])) == (False, False, 2)
    same = []
    for host, gpu, plant in (("node3", "H100", "D"), ("node4", "A100", None)):  # the same kernels on two GPUs
        from wizard.testing.traces import KernelSpec, TraceBuilder

        builder = TraceBuilder(gpu=gpu)
        builder.add(KernelSpec("gemm_kernel", (64, 8, 1), (256, 1, 1), plant=plant))
        made = builder.write(tmp_path / f"{host}-trace.json")
        path = tmp_path / f"{host}.json"
        path.write_text(run_cli("trace", "inspect", "--json", str(made)).stdout)
        same.append(str(path))
    data = strict_json(run_cli("compare", "--json", *same).stdout)
    assert (data["hardware_specific"], data["same_work"]) == (True, True)
    assert data["verdict"].startswith("hardware or driver specific: D only on")
    bad = run_cli("compare", "examples/manifest.yaml")
    assert bad.returncode == 6 and "not a warpwizard JSON report" in bad.stderr


def test_compare_names_each_trace_and_keeps_harmless_values_apart(run_cli: RunCli, tmp_path: Path) -> None:
    """Issue 44 item 6: two trace reports were both labelled with the host that ran warpwizard ("vm"), E's
    harmless 0% read "impossible values", and a rank-skew line appeared for two unrelated traces (a file named
    h100-... read as rank 100). A trace report is named by its trace; E (verdict info) is shown as harmless; a
    report with no collective is no rank of a job."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    paths = []
    for name, gpu in (("h100-gemm", "H100"), ("a100-run", "A100")):  # E: above 48 KB of shared memory
        builder = TraceBuilder(gpu=gpu)
        builder.add(KernelSpec("gemm_kernel", (64, 8, 1), (256, 1, 1), shared_memory=98304))
        made = builder.write(tmp_path / f"{name}.json")
        out = tmp_path / f"{name}.report.json"
        out.write_text(run_cli("trace", "inspect", "--json", str(made)).stdout)
        paths.append(str(out))
    host = strict_json(Path(paths[0]).read_text())["host"]["hostname"]
    text = run_cli("compare", *paths)
    shown = " ".join(text.stdout.split())
    assert text.returncode == 0
    assert "h100-gemm.json (" in shown and "a100-run.json (" in shown
    assert f"{host} (" not in shown  # the machine that ran warpwizard is no label of a trace
    assert "impossible values: E" not in shown and "no impossible values (harmless: E)" in shown
    assert "rank skew" not in shown
    data = strict_json(run_cli("compare", "--json", *paths).stdout)
    assert [m["host"] for m in data["machines"]] == ["h100-gemm.json", "a100-run.json"]
    assert data["verdict"] == "no machine shows impossible values; E (harmless) on every machine"
    assert data["health"] == []


def test_no_command_without_a_terminal_is_the_usage_line_and_the_hint(run_cli: RunCli) -> None:
    """A newcomer's first try in a script or CI: the usage line and the one-line hint, as argparse shows a usage error,
    not the whole help (60 lines) with the hint last."""
    result = run_cli(stdin="")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("usage: warpwizard ")
    assert lines[-1] == (
        "warpwizard: no command given and stdin is not a terminal; try 'warpwizard run PLAYBOOK --answers FILE'"
    )
    assert len(lines) < 10, result.stderr


HEALTHY_ANSWERS = "examples/answers/healthy-small.yaml"


@pytest.mark.parametrize("typed", [["--answers", HEALTHY_ANSWERS], [f"--answers={HEALTHY_ANSWERS}"],
                                   ["--ans", HEALTHY_ANSWERS], ["--teach", "--answers", HEALTHY_ANSWERS]])  # fmt: skip
def test_runs_options_without_the_command_are_the_triages(run_cli: RunCli, typed: list[str]) -> None:
    """The README: "`run`'s options work without the command too". An option's value as its own word was taken
    for the command's name ("invalid choice"); with answers given, no terminal is needed (a newcomer's walk)."""
    bare = run_cli("--json", *typed, stdin="")
    named = run_cli("run", "triage", "--json", *typed, stdin="")
    assert (bare.returncode, named.returncode) == (0, 0), bare.stderr
    ours, theirs = strict_json(bare.stdout), strict_json(named.stdout)
    assert ours["playbook"]["id"] == "triage" and ours["conclusion"]["diagnosis"] == "trace-healthy"
    assert (ours["conclusion"], ours["answers"]) == (theirs["conclusion"], theirs["answers"])


def test_a_bare_answer_without_a_terminal_asks_for_the_next_by_name(run_cli: RunCli) -> None:
    result = run_cli("--set", "have=trace", stdin="")
    assert result.returncode == 4
    assert result.stderr.splitlines()[-1].startswith("warpwizard: error: question 'trace_path' (")
    defaults = run_cli("--defaults", stdin="")  # the defaults are answers too: the run takes them, and says
    assert defaults.returncode == 4  # the default trace path's file is not there
    assert defaults.stderr.splitlines()[-1].startswith("warpwizard: error: default for 'trace_path' (")


@pytest.mark.parametrize(
    ("line", "joined"),
    [
        (["--teach", "--answers", "a.yaml"], ["--teach", "--answers=a.yaml"]),
        (["--set", "have=trace", "--set", "x=1"], ["--set=have=trace", "--set=x=1"]),
        (["--playbook-dir", "d", "--answers", "a.yaml"], ["--playbook-dir", "d", "--answers=a.yaml"]),
        (["--answ", "a.yaml"], ["--answ=a.yaml"]),  # an abbreviation argparse takes for --answers
        (["--from", "n"], ["--from=n"]),  # --from is an option of its own beside --from-step
        (["trace", "inspect", "--answers", "x"], ["trace", "inspect", "--answers", "x"]),  # a command first
        (["--playbook-dir", "run", "--answers", "a"], ["--playbook-dir", "run", "--answers=a"]),  # a value, not `run`
        (["--answers", "--teach"], ["--answers", "--teach"]),  # argparse's own error: expected one argument
        (["--answers", "-"], ["--answers=-"]),  # answers on stdin: '-' is a value to argparse
        (["--from-step", "-1"], ["--from-step=-1"]),  # so is a negative number (run has no option like one)
        (["--rep", "x"], ["--rep=x"]),  # --report or --report-dir: run's grammar says it is ambiguous
        (["--tea", "x"], ["--tea", "x"]),  # --teach takes no value
        (["--answers", "a", "diff", "b", "c"], ["--answers", "a", "diff", "b", "c"]),  # a command later: as typed
        (["--", "--answers", "a"], ["--", "--answers", "a"]),
        (["--teach"], ["--teach"]),
    ],
)
def test_runs_values_are_joined_only_on_a_line_with_no_command(line: list[str], joined: list[str]) -> None:
    from wizard.cli.parser import run_values_joined

    assert run_values_joined(line) == joined


@pytest.mark.parametrize(
    ("line", "named"),
    [(["trace", "inspect", "x.json", "--bogus"], "warpwizard trace inspect"), (["diff", "a", "b", "--bogus"],
     "warpwizard diff"), (["list", "--bogus"], "warpwizard list")],
)  # fmt: skip
def test_an_unknown_option_is_named_with_its_command(run_cli: RunCli, line: list[str], named: str) -> None:
    """As every other usage error of the command is (a newcomer's walk found the top level's name alone)."""
    result = run_cli(*line)
    assert (result.returncode, result.stderr) == (2, f"{named}: unrecognized arguments: --bogus (see --help)\n")


def test_answers_on_stdin_without_the_command(run_cli: RunCli) -> None:
    """The README's '--answers -' (answers on stdin), with no command and no terminal."""
    text = (REPO / HEALTHY_ANSWERS).read_text().replace("../traces/", "examples/traces/")
    result = run_cli("--answers", "-", "--json", stdin=text)
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout)["conclusion"]["diagnosis"] == "trace-healthy"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (["--json", "trace", "inspect", "x.json"], "warpwizard: unrecognized arguments: --json (see --help)"),
        (["--teach", "--bogus"], "warpwizard run: unrecognized arguments: --bogus (see --help)"),
        (["--rep", "x"], "warpwizard run: ambiguous option: --rep=x could match --report, --report-dir (see --help)"),
    ],
)
def test_an_option_before_the_command_is_the_top_levels_error(run_cli: RunCli, line: list[str], said: str) -> None:
    """trace inspect takes --json, but not before its name: the top level refuses it, as it always did (a review
    found it blamed on trace inspect). With no command, run's grammar refuses what it does not know."""
    result = run_cli(*line, stdin="")
    assert (result.returncode, result.stderr.splitlines()[-1]) == (2, said)
