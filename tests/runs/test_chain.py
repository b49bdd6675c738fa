"""Playbooks that continue into others: the triage front door, the engine's chain, the glossary."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, RunCli, strict_json
from wizard.exit_status import ExitStatus
from wizard.playbook.glossary import TERMS, Glossary, with_definitions
from wizard.runs import RunRequest, explain_playbook, load_playbook, run_playbook

CHAIN = REPO / "tests" / "data" / "chain"
BAD = REPO / "tests" / "data" / "chain-bad"
HEALTHY = EXAMPLES / "traces" / "healthy-small.json"
GRID = EXAMPLES / "traces" / "grid-overflow.json"


def _answers(tmp_path: Path, **values: object) -> Path:
    path = tmp_path / "answers.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in values.items()))
    return path


# -- the engine's chain, on small test playbooks ----------------------------------------------------


def test_a_run_continues_with_the_same_answers_and_results() -> None:
    answers = {"trace_path": str(HEALTHY), "where": "chain-b", "size": 3}
    t = run_playbook("chain-a", RunRequest(answers=answers, playbook_dirs=[str(CHAIN)]))
    assert t.diagnosis == "b-done"
    assert t.conclusion is not None and t.conclusion.summary == "B: 1 kernel checked, 3 expected."
    assert [(link.playbook["id"], link.continued_to) for link in t.chain] == [("chain-a", "chain-b"), ("chain-b", None)]
    assert t.chain[0].conclusion is not None and t.chain[0].conclusion.diagnosis == "a-continues"
    assert t.chain[0].also == ["chain-c"]  # the one continued into is not repeated
    by_node = [(e.playbook, e.node, e.carried_from) for e in t.entries]
    assert by_node == [
        ("chain-a", "trace_path", None),
        ("chain-a", "look", None),
        ("chain-a", "where", None),
        ("chain-a", "go", None),
        ("chain-b", "trace_path", "chain-a:trace_path"),  # asked once
        ("chain-b", "look", "chain-a:look"),  # the same probe with the same inputs: run once
        ("chain-b", "size", None),
        ("chain-b", "done", None),
    ]
    doc = t.to_dict()
    assert [link["entries"] for link in doc["chain"]] == [4, 4]
    assert doc["conclusion"]["diagnosis"] == "b-done"


def test_a_run_that_does_not_continue_keeps_its_shape() -> None:
    t = run_playbook("negative-warps-per-sm", {"have": "trace", "trace_path": str(HEALTHY)})
    doc = t.to_dict()
    assert "chain" not in doc
    assert all("playbook" not in e and "carried_from" not in e for e in doc["entries"])


def test_chain_through_the_cli_with_an_answers_file(tmp_path: Path, run_cli: RunCli) -> None:
    answers = _answers(tmp_path, trace_path=HEALTHY, where="chain-b", size=3)
    result = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", "--answers", str(answers), "--json")
    assert result.status == 0, result.stderr
    doc = strict_json(result.stdout)
    assert doc["conclusion"]["diagnosis"] == "b-done"
    assert [link["playbook"]["id"] for link in doc["chain"]] == ["chain-a", "chain-b"]
    assert doc["answers"] == {"trace_path": str(HEALTHY), "where": "chain-b", "size": 3}

    shown = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", "--answers", str(answers))
    assert shown.status == 0, shown.stderr
    assert "Continuing with chain-b: Chain B (the end)" in shown.stderr + shown.stdout
    assert (shown.stderr + shown.stdout).count("the result above, reused: not run again") == 1
    assert f"also found: chain-c → warpwizard run chain-c --answers {answers} --playbook-dir {CHAIN}" in shown.stdout


def test_an_answers_file_may_answer_the_playbooks_continued_into(tmp_path: Path, run_cli: RunCli) -> None:
    unknown = _answers(tmp_path, trace_path=HEALTHY, where="chain-b", colour="red")
    result = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", "--answers", str(unknown))
    assert result.status == ExitStatus.BAD_ANSWERS
    assert "unknown question id 'colour'" in result.stderr and "size" in result.stderr  # B's question is known

    missing = _answers(tmp_path, trace_path=HEALTHY, where="chain-b")
    result = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", "--answers", str(missing))
    assert result.status == ExitStatus.BAD_ANSWERS
    assert "missing answer for question 'size'" in result.stderr


def test_answers_template_lists_every_reachable_question_once(run_cli: RunCli) -> None:
    result = run_cli("--playbook-dir", str(CHAIN), "answers", "chain-a")
    assert result.status == 0, result.stderr
    ids = [line.lstrip("# ").split(":")[0] for line in result.stdout.splitlines() if line.lstrip("# ")[:1].isalpha()]
    asked = [i for i in ids if i in {"trace_path", "where", "size"}]
    assert sorted(asked) == ["size", "trace_path", "where"]


def test_the_triage_answers_file_lists_the_flagship_questions_too(run_cli: RunCli) -> None:
    text = run_cli("answers", "triage").stdout
    for question in ("have", "trace_path", "described", "symptom", "custom_kernel", "torch_era"):
        assert len(re.findall(rf"^#? ?{question}:", text, re.MULTILINE)) == 1, question
    explained = run_cli("explain", "triage").stdout
    assert "then continues into the playbook `{{ facts.inspect.health_next }}` names, one of:" in explained
    # a newcomer's walk: 20 of them said "asked in no step"; each says the playbook and its step that asks it
    assert "no step" not in text
    assert re.search(r"#   asked in the negative-warps-per-sm playbook, where the run may continue: its step 2 "
                     r"\(Check the kernel code\)\n#? ?custom_kernel:", text)  # fmt: skip


def test_dry_run_plans_across_the_chain(run_cli: RunCli) -> None:
    args = ["--set", f"trace_path={HEALTHY}", "--set", "where=chain-b", "--set", "size=3", "--dry-run"]
    result = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", *args)
    assert result.status == 0, result.stderr
    assert "go continues into playbook chain-b" in result.stdout
    assert "diagnosis b-done (warning)" in result.stdout
    plan = strict_json(run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", *args, "--json").stdout)
    assert [(s["playbook"], s["node"]) for s in plan["steps"]][-2:] == [("chain-b", "size"), ("chain-b", "done")]


# -- hostile chains: one clear line each ------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("nowhere", "continues to 'nowhere', which is not one of its choices: chain-b, chain-c"),
        ("chain-c", "continues to 'chain-a' again (chain-a -> chain-c -> chain-a); a run walks each playbook once"),
    ],
)
def test_a_chain_that_cannot_continue_is_refused(tmp_path: Path, run_cli: RunCli, where: str, said: str) -> None:
    answers = _answers(tmp_path, trace_path=HEALTHY, where=where)
    result = run_cli("--playbook-dir", str(CHAIN), "run", "chain-a", "--answers", str(answers))
    assert result.status == ExitStatus.INVALID_PLAYBOOK
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_path_is_never_a_playbook_to_continue_into(run_cli: RunCli) -> None:
    result = run_cli("validate", str(BAD / "pathlike.yaml"))
    assert result.status == ExitStatus.INVALID_PLAYBOOK
    assert f"{BAD / 'pathlike.yaml'}:11:17: '../chain/chain-b' is not a playbook id" in result.stdout + result.stderr


def test_validate_names_a_choice_with_no_playbook(run_cli: RunCli) -> None:
    result = run_cli("--playbook-dir", str(CHAIN), "validate", str(BAD / "missing.yaml"))
    assert result.status == ExitStatus.INVALID_PLAYBOOK
    assert f"{BAD / 'missing.yaml'}:11:17: no playbook named 'chain-nowhere'" in result.stdout + result.stderr
    ran = run_cli("--playbook-dir", str(BAD), "run", "missing")
    assert ran.status == ExitStatus.INVALID_PLAYBOOK
    assert "continues to 'chain-nowhere': no playbook named 'chain-nowhere'" in ran.stderr


def test_a_chain_is_bounded(tmp_path: Path, run_cli: RunCli) -> None:
    for i in range(10):
        (tmp_path / f"link-{i}.yaml").write_text(
            f'id: link-{i}\ntitle: link {i}\nversion: "1"\nnodes:\n  - id: go\n    kind: conclusion\n'
            f"    diagnosis: at-{i}\n    summary: link {i}\n"
            f"    continue: {{playbook: link-{i + 1}, choices: [link-{i + 1}]}}\n"
        )
    result = run_cli("--playbook-dir", str(tmp_path), "run", "link-0")
    assert result.status == ExitStatus.INVALID_PLAYBOOK
    assert "a run continues through at most 8 playbooks" in result.stderr
    assert "link-7.yaml" in result.stderr


# -- the real triage ------------------------------------------------------------------------------


def test_triage_continues_into_the_flagship_for_impossible_metrics(tmp_path: Path, run_cli: RunCli) -> None:
    answers = _answers(tmp_path, have="trace", trace_path=GRID)
    result = run_cli("run", "triage", "--answers", str(answers), "--json")
    assert result.status == 0, result.stderr
    doc = strict_json(result.stdout)
    assert doc["conclusion"]["diagnosis"] == "profiler-bug-grid-overflow"
    first = doc["chain"][0]
    assert (first["conclusion"]["diagnosis"], first["continued_to"]) == (
        "trace-health-problems",
        "negative-warps-per-sm",
    )
    assert "impossible-metrics: 2 launches" in first["conclusion"]["summary"]
    inspected = [e for e in doc["entries"] if e["node"] == "inspect"]
    assert [e.get("carried_from") for e in inspected] == [None, "triage:inspect"]  # the trace is read once


def test_triage_says_a_healthy_trace_is_healthy_and_what_it_checked(tmp_path: Path, run_cli: RunCli) -> None:
    answers = _answers(tmp_path, have="trace", trace_path=HEALTHY)
    doc = strict_json(run_cli("run", "triage", "--answers", str(answers), "--json").stdout)
    assert doc["conclusion"]["diagnosis"] == "trace-healthy"
    assert "chain" not in doc
    checked = doc["conclusion"]["evidence"][0]
    for check in ("impossible-metrics (ok)", "kernels-missing (ok)", "durations (ok)", "rank-skew (not_applicable)"):
        assert check in checked


def test_triage_hands_a_trace_without_metrics_to_the_flagship_first_step(tmp_path: Path, run_cli: RunCli) -> None:
    answers = _answers(tmp_path, have="trace", trace_path=EXAMPLES / "traces" / "rocm-mi300x.json")
    doc = strict_json(run_cli("run", "triage", "--answers", str(answers), "--json").stdout)
    assert [(link["playbook"]["id"], link["conclusion"]["diagnosis"]) for link in doc["chain"]] == [
        ("triage", "trace-has-no-metrics"),
        ("negative-warps-per-sm", "rocm-no-such-metrics"),
    ]


def test_one_answers_file_starts_the_triage_or_the_flagship(tmp_path: Path, run_cli: RunCli) -> None:
    answers = _answers(tmp_path, have="trace", trace_path=GRID)
    direct = strict_json(run_cli("run", "negative-warps-per-sm", "--answers", str(answers), "--json").stdout)
    triaged = strict_json(run_cli("run", "triage", "--answers", str(answers), "--json").stdout)
    assert direct["conclusion"] == triaged["conclusion"]


def test_triage_from_a_description_routes_by_what_was_seen(run_cli: RunCli) -> None:
    sets = ["--set", "have=description", "--set", "described=negative-warps-per-sm", "--set", "symptom=huge"]
    doc = strict_json(run_cli("run", "triage", *sets, "--json").stdout)
    assert doc["conclusion"]["diagnosis"] == "not-a-bug-large-by-design"
    assert [e["node"] for e in doc["entries"]] == [
        "have",
        "described",
        "described_route",
        "have",
        "symptom",
        "by_design_described",
    ]


# -- the glossary -------------------------------------------------------------------------------------


def test_each_word_is_defined_once_a_session() -> None:
    glossary = Glossary()
    # with the words their definitions use, in glossary order: a warp is "32 threads of a block that an SM runs"
    # and a block the shape of a launch (issue 37.3: "warp" was defined before "block" and "SM")
    assert [t.word for t in glossary.new_words("A kernel's warps run on an SM.")] == [
        "kernel", "launch", "SM", "grid / block", "warp",
    ]  # fmt: skip
    assert glossary.new_words("Warps again, and kernels, on SMs") == []
    assert [t.word for t in glossary.new_words("worst_kernel sm smith")] == []  # whole words, SM in capitals


def test_explain_defines_each_word_where_it_first_appears() -> None:
    text = explain_playbook(load_playbook("negative-warps-per-sm"))
    for term in TERMS:
        assert text.count(f"**{term.word}**: {term.definition}") <= 1
    for word in ("warp", "SM", "occupancy", "kernel", "Kineto"):
        assert text.count(f"> *new word* **{word}**") == 1, word
    assert with_definitions("nothing to define here") == "nothing to define here"
    fenced = with_definitions("```\nwarp\n\nkernel\n```\n\nafter")
    assert fenced.startswith("```\nwarp\n\nkernel\n```\n\n> *new word* **kernel**")  # never inside a code block


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")
def test_triage_at_a_terminal_with_teach_defines_each_word_once(tmp_path: Path) -> None:
    import io

    from tests.helpers import finish, spawn

    child = spawn(["run", "triage", "--teach"], tmp_path)
    child.logfile_read = io.StringIO()  # everything the terminal showed
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.send(f"{GRID}\r")
    child.expect("Continuing with negative-warps-per-sm")
    child.expect("Diagnosis: profiler-bug-grid-overflow")
    finish(child)
    assert child.exitstatus == 0
    shown = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.logfile_read.getvalue()).split())
    counts = {t.word: shown.count(f"new word {t.word}:") for t in TERMS}
    assert set(counts.values()) <= {0, 1}, counts  # never twice in a session
    defined = {word for word, n in counts.items() if n}
    # the triage's own text and the flagship's: the words a newcomer meets on this path
    assert {"kernel", "launch", "Kineto", "rank", "grid / block", "warp", "SM", "occupancy"} <= defined, counts
    for term in TERMS:
        if term.word in defined:
            assert " ".join(term.definition.split()[:6]) in shown
