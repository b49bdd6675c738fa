"""What a new user tripped on in the first hour (issue 27): words, prompts and sessions."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, REPO, RunCli, cli_env, needs_torch, run_inprocess, strict_json

FLAGSHIP = REPO / "playbooks" / "negative-warps-per-sm.yaml"


def test_validate_warns_when_a_comment_cuts_a_text_short(run_cli: RunCli, tmp_path: Path) -> None:
    source = FLAGSHIP.read_text()
    quoted = '      - "Upgrade to PyTorch 1.10 or later (kineto issue #325, fixed 2021-05-26)."\n'
    assert quoted in source  # the shipped flagship quotes it, so the whole sentence is shown
    cut = tmp_path / "cut.yaml"
    cut.write_text(source.replace(quoted, quoted.replace('"', "")))
    line = source[: source.index(quoted)].count("\n") + 1
    result = run_cli("validate", str(cut))
    assert result.returncode == 0, result.stderr
    assert f"{cut}:{line}:56: warning: the 'fix' text ends here" in result.stdout
    assert "warning" not in run_cli("validate", str(FLAGSHIP)).stdout


def test_mechanism_b_fix_text_is_whole(run_cli: RunCli) -> None:
    answers = str(EXAMPLES / "answers" / "old-sm-count.yaml")
    result = run_cli("run", "negative-warps-per-sm", "--answers", answers, "--json")
    assert result.returncode == 0, result.stderr
    fix = result.json["conclusion"]["fix"]
    assert "Upgrade to PyTorch 1.10 or later (kineto issue #325, fixed 2021-05-26)." in fix


def test_evidence_and_counts_read_as_a_person_says_them(run_cli: RunCli) -> None:
    answers = str(EXAMPLES / "answers" / "old-sm-count.yaml")
    result = run_cli("run", "negative-warps-per-sm", "--answers", answers, "--json")
    evidence = result.json["conclusion"]["evidence"]
    assert "4 kernel launches with the SM count read as -1" in evidence
    assert not any("{'" in line or "(es)" in line or "(s)" in line for line in evidence), evidence


def test_templates_say_plurals_and_mappings_in_words() -> None:
    from wizard.formatting import plural
    from wizard.playbook.conditions import parse_template

    scope = {"facts": {"i": {"counts": {"B": 4, "E": 1}, "one": 1, "none": 0}}}
    assert parse_template("{{ facts.i.counts }} per mechanism").render(scope) == "B: 4, E: 1 per mechanism"
    rendered = parse_template("{{ plural(facts.i.one, 'launch') }}; {{ plural(facts.i.none, 'file') }}").render(scope)
    assert rendered == "1 launch; 0 files"
    assert parse_template("{{ plural(facts.i.missing, 'launch') }} here").render(scope).startswith("<unknown:")
    said = [plural(2, "kernel launch"), plural(3, "entry"), plural(1, "GPU")]
    assert said == ["2 kernel launches", "3 entries", "1 GPU"]


SMALL = """\
id: small
title: A confirm without a default
version: "1"
steps: [{id: s, title: S}]
nodes:
  - {id: sure, kind: question, step: s, type: confirm, prompt: "Sure?", next: {true: name, false: no_end}}
  - {id: name, kind: question, step: s, type: text, prompt: "Name?", next: yes_end}
  - {id: yes_end, kind: conclusion, diagnosis: said-yes, severity: info, summary: "yes"}
  - {id: no_end, kind: conclusion, diagnosis: said-no, severity: info, summary: "no"}
"""


def test_a_confirm_without_a_default_is_yes_at_the_prompt_and_with_defaults(run_cli: RunCli, tmp_path: Path) -> None:
    playbook = tmp_path / "small.yaml"
    playbook.write_text(SMALL)
    result = run_cli("run", str(playbook), "--defaults", "--set", "name=x", "--json")
    assert result.returncode == 0, result.stderr
    assert result.json["conclusion"]["diagnosis"] == "said-yes"
    template = run_cli("answers", str(playbook)).stdout
    assert "sure: true" in template


def test_a_question_without_a_default_is_not_offered_to_defaults(run_cli: RunCli, tmp_path: Path) -> None:
    playbook = tmp_path / "small.yaml"
    playbook.write_text(SMALL)
    result = run_cli("run", str(playbook), "--defaults", "--json")
    assert result.returncode != 0
    assert "missing answer for question 'name'; it has no default: answer them with --answers or --set" in result.stderr
    assert "--defaults" not in result.stderr


def test_the_answers_template_and_dry_run_show_no_raw_expressions_or_none(run_cli: RunCli) -> None:
    template = run_cli("answers", "negative-warps-per-sm").stdout
    assert "{{" not in template
    assert "# Is the flagged kernel, <the worst kernel>, your own code" in template
    dry = run_cli("run", "negative-warps-per-sm", "--dry-run").stdout
    assert "None" not in dry and "would ask have: What do you have to start from?" in dry


def test_a_finished_session_is_not_resumable_again(tmp_path: Path) -> None:
    sessions = tmp_path / "state" / "warpwizard" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    trace = EXAMPLES / "traces" / "old-sm-count.json"
    (sessions / "negative-warps-per-sm-20261130T070000.yaml").write_text(f"have: trace\ntrace_path: {trace}\n")
    first = run_inprocess("run", "negative-warps-per-sm", "--resume", "--json")
    assert first.status == 0, first.stderr
    assert list(sessions.iterdir()) == []  # done: --resume would replay its probes
    again = run_inprocess("run", "negative-warps-per-sm", "--resume", "--json")
    assert again.status == 2 and "no interrupted session of negative-warps-per-sm" in again.stderr


def test_an_interrupted_guided_run_resumes_guided(tmp_path: Path) -> None:
    from wizard.cli.run import _continue_with
    from wizard.runs import load_playbook, save_interrupted
    from wizard.system import System

    pb = load_playbook("negative-warps-per-sm")
    system = System(environ={"XDG_STATE_HOME": str(tmp_path / "state")})
    saved, note = save_interrupted(pb, {"have": "description"}, system, inputs=[])
    assert saved is not None and note == ""
    assert _continue_with(pb.id, teach=True) == "continue with: warpwizard run negative-warps-per-sm --resume --teach"


def test_compare_of_two_reports_that_both_skipped_says_why_it_cannot(run_cli: RunCli, tmp_path: Path) -> None:
    answers = str(EXAMPLES / "answers" / "description-old-pytorch.yaml")
    for name in ("one.json", "two.json"):  # a description only: nothing inspected, nothing ran on a GPU
        ran = run_cli("run", "negative-warps-per-sm", "--answers", answers, "--json")
        (tmp_path / name).write_text(ran.stdout)
    result = run_cli("compare", str(tmp_path / "one.json"), str(tmp_path / "two.json"))
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "cannot compare: 0 of 2 reports say whether impossible values showed; one.json, two.json" in said
    assert "not enough reports" not in said


# -- the terminal at 80 columns ------------------------------------------------------------------------


def _at_80(run_cli: RunCli, tmp_path: Path, *args: str) -> str:

    result = run_cli(*args, env=cli_env(COLUMNS="80", WARPWIZARD_REPORT_DIR=str(tmp_path / "report")))
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    return str(result.stdout)


def test_list_and_probes_at_80_columns_never_cut_a_name(run_cli: RunCli, tmp_path: Path) -> None:
    from wizard.probes.registry import catalog

    listed = _at_80(run_cli, tmp_path, "--playbook-dir", str(REPO / "examples" / "playbooks"), "list")
    assert "│ negative-warps-per-sm │" in listed and "│ torch-sees-no-gpu     │" in listed
    probes = _at_80(run_cli, tmp_path, "probes")
    cells = {cell.strip() for line in probes.splitlines() for cell in line.split("│")}
    # the description's words whole: with the facts beside it, 80 columns left it 9 wide ("blocks/wa rps",
    # "impossibl e"); the facts are one command away, and said whole there
    described = " ".join(line.split("│")[2].strip() for line in probes.splitlines() if line.count("│") == 4)
    assert "each probe's facts: warpwizard probes NAME" in probes
    for info in catalog().values():
        assert info.name in cells
        assert " ".join(info.summary.split()) in " ".join(described.split()), info.name
        one = run_cli("probes", info.name).stdout  # a line each, as long as it is (the terminal wraps it)
        assert all(f"  {f.name}" in one for f in info.facts), info.name  # each fact whole, none cut with "…"
    wide = run_cli("probes", env=cli_env(COLUMNS="200", WARPWIZARD_REPORT_DIR=str(tmp_path / "report"))).stdout
    wide_cells = {cell.strip() for line in wide.splitlines() for cell in line.split("│")}
    assert all({f.name for f in info.facts} <= wide_cells for info in catalog().values())


def test_the_findings_table_at_80_columns_gives_a_metric_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    shown = _at_80(run_cli, tmp_path, "trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json"))
    assert "blocks/SM -9.81036e+06 → 2.273e+07" in shown
    assert "warps/SM -7.848e+07 → 1.818e+08" in shown
    assert "1 kernel launch with large warps per SM is correct by design (F)" in " ".join(shown.split())


# -- the HTML report -----------------------------------------------------------------------------------


def test_the_html_report_says_the_verdict_in_words_and_no_none_device(run_cli: RunCli, tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    page = tmp_path / "old.html"
    result = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "old-sm-count.json"), "--report", str(page))
    assert result.returncode == 1, result.stderr
    html = page.read_text()
    assert "None SMs" not in html and "cc None" not in html
    assert "device 0 (no deviceProperties: SM count and compute capability unknown)" in html
    assert (
        "4 launches with wrong values: SM count read as -1 (PyTorch 1.8/1.9 on Turing and later) (B: 4 launches)"
        in html
    )


def test_the_hard_questions_say_how_to_find_the_answer(run_cli: RunCli) -> None:
    from wizard.runs import load_playbook

    pb = load_playbook("negative-warps-per-sm")
    for qid in ("custom_kernel", "launch_math", "torch_era"):
        question = pb.nodes[qid]
        assert getattr(question, "help", "").startswith("How to"), qid
    template = run_cli("answers", "negative-warps-per-sm").stdout
    assert "#   How to find out: open the launch" in template  # the answers file carries the help too


def test_no_conclusion_asks_to_attach_a_report_the_run_may_not_have_written() -> None:
    source = FLAGSHIP.read_text()
    assert "this report attached" not in source and "attach this report" not in source
    assert "rerun with --report report.html (or --json > report.json) to write one" in source


# "launch(es)", "kernel(s)": a word with its plural ending in brackets, which no person says.
HEDGED_PLURAL = re.compile(r"\b[A-Za-z]+\((?:s|es)\)")
# Code inside a string, not plurals: the repro script op.isolate writes takes math.prod and len of each shape.
NOT_PLURALS = {("wizard/probes/op_isolate.py", "prod(s)"), ("wizard/probes/op_isolate.py", "len(s)")}


def _docstrings(tree: ast.Module) -> set[int]:
    """Docstrings say why to a reader of the code; a user never sees them."""
    owners = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
    ]
    return {
        id(owner.body[0].value)
        for owner in owners
        if owner.body and isinstance(owner.body[0], ast.Expr) and isinstance(owner.body[0].value, ast.Constant)
    }


def _hedged_plurals() -> list[str]:
    found = []
    for path in sorted((REPO / "wizard").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                found += [
                    f"{rel}:{node.lineno}: {m}"
                    for m in HEDGED_PLURAL.findall(node.value)
                    if (rel, m) not in NOT_PLURALS
                ]
    for path in sorted((REPO / "playbooks").glob("*.yaml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"playbooks/{path.name}:{number}: {m}" for m in HEDGED_PLURAL.findall(line)]
    return found


def test_no_message_or_playbook_hedges_a_plural() -> None:
    assert _hedged_plurals() == []


def test_counts_in_messages_agree_with_their_number() -> None:
    from wizard.playbook.loader import load_playbook
    from wizard.playbook.model import ConclusionNode
    from wizard.probes.kineto_log import KinetoLog, judge
    from wizard.probes.registry import catalog
    from wizard.trace.read.records import ProfilerOccupancy

    assert ProfilerOccupancy(1, "SMEM", None, None, None, None, None).words() == "1 block per SM, limited by SMEM"
    assert ProfilerOccupancy(2, "REGS", None, None, None, None, None).words() == "2 blocks per SM, limited by REGS"
    # a count of zero is never said: buffer warnings alone, or no kernel at all, are said as what they are
    assert judge(KinetoLog(buffer_lines=["CUPTI buffer full"]), True, 4, 0)[1] == (
        "CUPTI ran short of activity buffers (1 warning in the log)"
    )
    assert judge(KinetoLog(), True, 0, 0)[1] == (
        "the fresh single-session trace holds no kernel at all, though CUDA was available"
    )
    said = [judge(KinetoLog(record_counts={"Out-of-range": n}), True, 4, 0)[1] for n in (1, 2)]
    assert said == [
        "Kineto dropped 1 record as out of the capture window",
        "Kineto dropped 2 records as out of the capture window",
    ]

    def summary(playbook: str, node: str, scope: dict[str, Any]) -> str:
        conclusion = load_playbook(REPO / "playbooks" / f"{playbook}.yaml", catalog()).nodes[node]
        assert isinstance(conclusion, ConclusionNode) and conclusion.summary is not None
        return str(conclusion.summary.render(scope))

    files = [["a.json"], ["a.json", "b.json"]]
    read = [summary("triage", "no_kernels", {"facts": {"inspect": {"files": f}}}) for f in files]
    assert "(1 file read)" in read[0] and "(2 files read)" in read[1]
    hidden = [
        summary("kernels-hidden", "pdl", {"facts": {"inspect": {"files": ["a.json"], "overlapping_kernels": n}}})
        for n in (1, 2, None)  # None: the count is missing, and the sentence still reads
    ]
    assert [s[s.index("Here ") :] for s in hidden] == [
        "Here 1 kernel cannot nest.",
        "Here 2 kernels cannot nest.",
        "Here some kernels cannot nest.",
    ]


def test_a_trace_whose_kernels_carry_no_metrics_is_not_said_to_agree(tmp_path: Path) -> None:
    """'all 0 kernels agree with the recomputation' for kernels with nothing to recompute."""
    from wizard.environment import Environment
    from wizard.probes.trace_inspect import TraceInspectProbe

    trace = tmp_path / "bare.json"
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0}}
    trace.write_text(json.dumps({"traceEvents": [kernel, {**kernel, "ts": 20}]}))
    result = TraceInspectProbe().run(Environment.of(), {"paths": [str(trace)]})
    assert (result.status.value, result.summary) == (
        "pass",
        "none of the 2 kernels carries blocks/warps per SM or occupancy: nothing to recompute",
    )


@needs_torch
def test_a_script_on_a_machine_with_no_gpu_says_so_first(run_cli: RunCli) -> None:
    """Issue 44 item 9: "A script I can run here" with no GPU ended in kernels-missing-cause-unknown after five
    questions it could answer itself and a KINETO_LOG_LEVEL=0 rerun it had just done. No GPU is the fact: said
    first, as the conclusion, with what can still be learned, and nothing run or asked after the profile."""
    result = run_cli("run", "triage", "--set", "have=workload", "--set",
                     "workload_cmd=python examples/workloads/tiny_matmul.py", "--json")  # fmt: skip
    data = strict_json(result.stdout)
    assert result.returncode == 0, result.stderr
    assert data["conclusion"]["diagnosis"] == "no-gpu-here"
    assert [e["node"] for e in data["entries"]] == ["have", "workload_cmd", "reprofile", "reprofiled", "no_gpu_here"]
    assert data["entries"][2]["facts"]["cuda_available"] is False
    assert data.get("chain") in (None, [])  # it continues into no playbook
