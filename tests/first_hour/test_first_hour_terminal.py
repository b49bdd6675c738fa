"""What a new user tripped on at the triage (issue 37): at a real terminal (pexpect, pyte), in
Chromium and in the docs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.conftest import EXAMPLES, HANG_GUARD_S, REPO, RunCli
from tests.helpers import (
    defined_before_used,
    finish,
    joined,
    lines_of,
    screen_lines,
    screen_of,
    spawn,
    teach_screen,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")


def spawn_live(args: list[str], cwd: Path, columns: int) -> pexpect.spawn[str]:
    """Like ``spawn``, in colour: NO_COLOR turns the live progress line off, and it is what this tests."""
    return spawn(args, cwd, columns, colour=True)


def _to_kernels_missing_workload(child: pexpect.spawn[str]) -> str:
    """From the triage on the kernels-missing example to step 5's workload prompt; what was shown so far."""
    seen = []
    for expected, send in (
        ("What do you have to start from", "\r"),
        ("Path to the trace", f"{EXAMPLES / 'traces' / 'kernels-missing.json'}\r"),
        ("Where does your code read", "\r"),  # after the block: the default
        ("How many profiling sessions", "\r"),  # one: the default, which goes on to the profiler's log
    ):
        child.expect(expected)
        seen.append(str(child.before) + str(child.after))
        child.send(send)
    child.expect(r"need(?:\x1b\[[0-9;]*m|\s)+it\)")  # the prompt's end, wherever it wraps
    seen.append(str(child.before) + str(child.after))
    return "".join(seen)


@pytest.mark.parametrize("columns", [80, 120])
def test_no_live_line_draws_over_the_workload_prompt(tmp_path: Path, columns: int) -> None:
    """Issue 37.1: `profiler.kineto_log running 0:00:07` overwrote "Which command runs your workload?", its
    timer counting while the tool waited, and after Enter the prompt re-rendered as `? Whic? Which ...`."""
    screen, stream = screen_of(columns)
    child = spawn_live(["--teach"], tmp_path, columns)
    # the triage, guided (issue 37.3: `warpwizard --teach` was refused)
    shown = _to_kernels_missing_workload(child)
    time.sleep(1.5)  # three times the progress delay: a live line would be drawn by now
    try:
        shown += child.read_nonblocking(100_000, timeout=0.5)
    except pexpect.TIMEOUT:
        pass
    stream.feed(shown)  # type: ignore[attr-defined]
    waiting = lines_of(screen)
    prompt_at = max(i for i, line in enumerate(waiting) if "Which command runs your workload?" in line)
    assert waiting[prompt_at].startswith("? Which command runs your workload?")
    assert not any("profiler.kineto_log" in line and "running" in line for line in waiting), waiting
    assert all(line == "" for line in waiting[prompt_at + 2 :])  # nothing below the prompt
    child.send("\r")  # Enter: no workload, the step is skipped
    child.expect("What did the profiler print")  # the log's question, asked instead
    child.send("\r")
    stream.feed(shown[len(shown) :] + str(child.before) + str(child.after) + finish(child))  # type: ignore[attr-defined]
    after = lines_of(screen)
    assert child.exitstatus == 0
    assert sum("Which command runs your workload?" in line for line in after) == 1
    assert not any("? Whic?" in line for line in after)
    assert any(line.startswith("? Which command runs your workload?") for line in after)
    assert any("profiler.kineto_log" in line and "SKIP" in line for line in after)


@pytest.mark.parametrize("columns", [80, 120])
def test_the_triage_shows_the_health_summary_and_the_check_that_chose_before_it_continues(
    tmp_path: Path, columns: int
) -> None:
    """Issue 37.2: the triage printed `trace.inspect PASS all 6 kernels agree` and "Continuing with
    kernels-missing"; the finding that decided it showed only in the final diagnosis."""
    screen, stream = screen_of(columns)
    child = spawn([], tmp_path, columns)
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.send(f"{EXAMPLES / 'traces' / 'kernels-missing.json'}\r")
    child.expect("Where does your code read")
    stream.feed(str(child.before) + str(child.after))  # type: ignore[attr-defined]
    child.sendintr()
    finish(child)
    lines = lines_of(screen)
    said = joined(lines)
    summary = "Trace health: 1 problem found ✗ error kernels-missing 2 launches of 8 (25.0%) have no kernel event"
    chosen = "→ kernels-missing, chosen by the worst problem: kernels-missing (error): 2 launches of 8 (25.0%)"
    assert summary in said
    assert chosen in said
    assert said.index(summary) < said.index(chosen) < said.index("Continuing with kernels-missing")


@pytest.mark.parametrize("columns", [80, 120])
def test_a_rank_directory_says_the_f_paragraph_once_and_alike_checks_in_one_line(columns: int, tmp_path: Path) -> None:
    """Issue 37.4: the F paragraph once per rank, trace-size once per rank (16 info lines for 8 ranks). Three ranks
    whose GEMM opts in to 96 KB of shared memory (E: impossible-metrics is info, docs/health.md) and whose big grids
    give large warps per SM (F). (Their Python frames no longer make trace-size info: issue 44 item 12.)"""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    frames = tuple(f"train.py({n}): step" for n in range(8))
    for rank in range(3):
        b = TraceBuilder()
        b.set_metadata("distributedInfo", {"rank": rank})
        b.add(KernelSpec("void big_elementwise", (400_000, 1, 1), (256, 1, 1), python_stack=frames))
        b.add(KernelSpec("gemm_smem96k", (132, 1, 1), (128, 1, 1), shared_memory=96 * 1024))
        b.write(ranks / f"rank{rank}.json")
    lines = screen_lines(["trace", "inspect", str(ranks)], columns)
    said = joined(lines)
    assert said.count("large warps-per-SM values are by design (mechanism F)") == 1
    assert said.count("i info impossible-metrics") == 1
    assert "i info impossible-metrics [3 ranks]" in said
    info = [line.split()[2] for line in lines if line.startswith("  ") and line.split()[:1] == ["i"]]
    assert info == ["impossible-metrics"]


@pytest.mark.parametrize("columns", [80, 120])
def test_the_e_paragraph_is_said_once_not_once_a_kernel(columns: int) -> None:
    """Issue 37.4: the B200 trace's E paragraph was printed for each of its six kernels."""
    trace = REPO.parent / "shared" / "traces" / "b200-eager.json.gz"
    if not trace.exists():
        pytest.skip(f"{trace} is not here (the shared real traces)")
    said = joined(screen_lines(["trace", "inspect", str(trace)], columns))
    assert said.count("the default per-block limit Kineto passes to the occupancy calculator") == 1
    assert "E: the same for the 6 other kernels of the table (--json has each one's evidence)" in said


@pytest.mark.parametrize("columns", [80, 120])
def test_evidence_under_the_probe_is_not_said_again_in_the_diagnosis_box(columns: int) -> None:
    """Issue 37.4: the int32 paragraph under trace.inspect and again in the diagnosis box."""
    args = ["run", "negative-warps-per-sm", "--answers", "examples/answers/grid-overflow.yaml"]
    said = joined(screen_lines(args, columns))
    assert said.count("the int32 product wraps to -1294967296") == 1
    assert said.index("the int32 product wraps") < said.index("Diagnosis: profiler-bug-grid-overflow")
    assert "• and what trace.inspect showed above" in said


def _rocm_graph_answers(tmp_path: Path, goal: str) -> Path:
    """An MI300X trace of three hipGraphLaunch replays (the project's builder), and answers that walk
    cuda-graphs to ``goal``'s conclusion."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder(gpu="MI300X")
    for _ in range(3):
        builder.add_graph(
            [KernelSpec(f"node_{i}", grid=(64, 1, 1), block=(256, 1, 1)) for i in range(4)], call="hipGraphLaunch"
        )
    trace = builder.write(tmp_path / "rocm-graphs.json")
    answers = tmp_path / f"{goal}.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\ngoal: {goal}\ngraph_nodes: 0\n")
    return answers


@pytest.mark.parametrize("columns", [80, 120])
def test_cuda_graphs_names_the_call_the_trace_has_and_no_stray_space(tmp_path: Path, columns: int) -> None:
    """Issue 37.5: cuda-graphs said cudaGraphLaunch on a ROCm trace whose call is hipGraphLaunch, and
    "3 graph launches ;" when the node count was not given."""
    per_op = joined(
        screen_lines(["run", "cuda-graphs", "--answers", str(_rocm_graph_answers(tmp_path, "per_op"))], columns)
    )
    assert "every replayed kernel links to its hipGraphLaunch, not to the op that captured it" in per_op
    assert "cudaGraphLaunch," not in per_op
    idle = joined(
        screen_lines(["run", "cuda-graphs", "--answers", str(_rocm_graph_answers(tmp_path, "idle"))], columns)
    )
    assert "The trace records 12 kernels for 3 graph launches; an idle % from a graph trace" in idle


@pytest.mark.parametrize("columns", [80, 120])
def test_rank_skew_walks_its_steps_in_order_and_says_the_answers_it_reuses(columns: int) -> None:
    """Issue 37.6: Step 1, then Step 3 of 3, then Step 2 of 3; baseline_path had no explain; a step whose
    questions were all answered before showed its header and nothing under it."""
    lines = screen_lines(["run", "rank-skew", "--teach", "--answers", "examples/answers/rank-skew.yaml"], columns)
    headers = [" ".join(line.strip("─ ").split()) for line in lines if "Step " in line and " of 3: " in line]
    assert headers == [
        "Step 1 of 3: Verify the profiler's correctness",
        "Step 2 of 3: Compare the hosts",
        "Step 3 of 3: Isolate the waiting from the transfer",
    ]
    said = joined(lines)
    assert "question: baseline_path" in said and "The baseline's traces, one per rank" in said
    # issue 37.4: as an answers file's, not a resumed session's (both read "answered before, in a file")
    assert "✓ Did every rank run on the same host? yes (from the answers file examples/answers/rank-skew.yaml)" in said
    assert (
        "✓ Do you have traces of the same step profiled right after torch.distributed.barrier() on every rank? yes"
        in said
    )
    assert "Diagnosis: nccl-time-is-waiting" in said


# -- help and docs (issue 37.10) -------------------------------------------------------------------


def test_help_and_the_package_describe_the_health_check_not_only_negative_warps(run_cli: RunCli) -> None:
    import tomllib

    top = " ".join(run_cli("--help").stdout.split())
    assert "Checks the health of any PyTorch profiler trace" in top and "walks you through a playbook" in top
    inspect_help = " ".join(run_cli("trace", "inspect", "--help").stdout.split())
    assert "Checks a trace's health (every way a profiler trace is known to lie" in inspect_help
    description = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["description"]
    assert description.startswith("Checks the health of any PyTorch profiler trace")
    assert "playbook" in description


def test_the_api_doc_documents_the_health_api_and_the_f_groups_in_findings() -> None:
    from wizard.api import inspect_traces

    doc = (REPO / "docs" / "api.md").read_text()
    section = doc[doc.index("### Trace health") : doc.index("### Launch records")]
    for name in ("health", "health_status", "job_health", "problems"):
        assert f"- `{name}" in section, name
    assert "**including the\n  by-design F groups**" in doc
    inspection = inspect_traces(EXAMPLES / "traces" / "rank-skew")
    assert inspection.health_status in ("ok", "not_applicable", "info", "warning", "error")
    assert [c.check for c in inspection.job_health] == ["ranks-complete", "rank-skew"]
    assert {c.check for c in inspection.problems()} <= {c.check for c in inspection.health}
    # findings holds the F groups, which are not wrong: the doc's filter keeps only wrong values
    groups = inspection.findings
    assert any(g.mechanism == "F" and not g.wrong for g in groups)
    assert [g for g in groups if g.wrong] == []


def test_the_plugin_doc_names_the_probe_surface_a_plugin_builds_on_and_each_exists() -> None:
    import re

    from wizard.probes import base

    doc = (REPO / "docs" / "plugins.md").read_text()
    names = re.search(r"A plugin builds on `wizard\.probes\.base` \(([^)]*)\)", doc)
    assert names is not None
    listed = re.findall(r"`(\w+)`", names.group(1))
    assert listed == [
        "Probe",
        "ProbeResult",
        "Status",
        "ParamSpec",
        "FactSpec",
        "declared_facts",
        "fact_problems",
        "CommonFacts",
    ]
    assert all(hasattr(base, n) for n in listed)
    plugin = (EXAMPLES / "plugin" / "warpwizard_example_plugin").glob("*.py")
    imported = {m for path in plugin for m in re.findall(r"^from (wizard[\w.]*) import", path.read_text(), re.M)}
    assert imported <= {"wizard.probes.base", "wizard.environment", "wizard.outputs"}


# -- completion (issue 37.7) -----------------------------------------------------------------------


def _bash_with_completion(tmp_path: Path, run_cli: RunCli) -> pexpect.spawn[str]:
    import shutil
    import sys

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "warpwizard.bash"
    script.write_text(run_cli("completion", "bash").stdout)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path), TERM="dumb")
    env.pop("WARPWIZARD_PLAYBOOK_PATH", None)
    child = pexpect.spawn(
        "bash", ["--norc", "--noprofile", "-i"], cwd=str(REPO), env=env, encoding="utf-8", timeout=HANG_GUARD_S,
        dimensions=(200, 200),
    )  # fmt: skip
    child.sendline(f"PS1='$ '; bind 'set completion-query-items 1000'; source {script}; echo LOADED''OK")
    child.expect("LOADEDOK")
    return child


def _offered(child: pexpect.spawn[str], typed: str) -> set[str]:
    """What bash lists for Tab Tab after ``typed`` (then the line is dropped)."""
    child.send(typed + "\t\t")
    child.sendline("\x15echo DONE''LISTING")
    child.expect("DONELISTING")
    return set(str(child.before).split())


def test_from_completes_only_the_nodes_of_the_playbook_on_the_line(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 37.7: `--from` listed 131 nodes of every playbook."""
    from wizard.runs import load_playbook

    child = _bash_with_completion(tmp_path, run_cli)
    try:
        offered = _offered(child, "warpwizard run rank-skew --from ")
    finally:
        child.close(force=True)
    nodes = set(load_playbook("rank-skew").nodes)
    assert nodes <= offered
    assert "custom_kernel" not in offered and "kineto_log" not in offered  # the flagship's, kernels-missing's


def test_run_tab_lists_no_hidden_directory_unless_a_dot_is_typed(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 37.7: `run <Tab>` listed .git/ and .venv/."""
    child = _bash_with_completion(tmp_path, run_cli)
    try:
        offered = _offered(child, "warpwizard run ")
        dotted = _offered(child, "warpwizard run .")
    finally:
        child.close(force=True)
    assert {"triage", "rank-skew", "README.md"} <= offered and ({"playbooks", "playbooks/"} & offered)
    assert not any(name.startswith(".") for name in offered), offered
    # typed a dot: hidden names are what was asked for (.git is a directory in a clone, a file in a worktree)
    assert {".venv/", ".git/", ".git"} & dotted, dotted


# -- --teach (issue 37.3) --------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_teach_defines_each_word_before_it_is_used_in_the_triage(tmp_path: Path, columns: int) -> None:
    """Issue 37.3: "blocks per SM", "warps per SM", "occupancy", "shared memory" and "int32" appeared two
    screens before they were defined; "shared memory" and "registers" were never defined."""
    trace = EXAMPLES / "traces" / "kernels-missing.json"
    lines = teach_screen(["--teach"], [("start from", "\r"), ("Path to the trace", f"{trace}\r")], columns, tmp_path)
    assert defined_before_used(lines) == []
    said = joined(lines)
    assert "new word warps per SM:" in said
    # the probe's result, then what it means in one plain sentence: its status is the health verdict's (issue 45
    # item 4: it said PASS, "the kernels' own numbers are right", above a kernels-missing error)
    assert said.index("trace.inspect FAIL") < said.index("What this means: the check found the problem it looks for")
    # the description reflowed: no YAML line break left inside a sentence
    assert "or only what you saw); it checks the trace's health" in said
    assert not any(line.rstrip().endswith("or only what you") for line in lines)


@pytest.mark.parametrize("columns", [80, 120])
def test_teach_spreads_the_flagship_s_words_and_defines_them_before_use(tmp_path: Path, columns: int) -> None:
    """Issue 37.3: the flagship defined seven words at once before anything happened."""
    trace = EXAMPLES / "traces" / "grid-overflow.json"
    lines = teach_screen(
        ["run", "negative-warps-per-sm", "--teach"], [("start from", "\r"), ("Path to the trace", f"{trace}\r")],
        columns, tmp_path,
    )  # fmt: skip
    assert defined_before_used(lines) == []
    runs, run = [], 0
    for line in lines:
        if line.startswith("  new word "):
            run += 1
        elif not line.startswith("  ") or line.startswith("  ●") or "─" in line or "╭" in line:
            runs.append(run)
            run = 0
    assert max(runs) <= 5, runs
    for word in ("shared memory", "registers", "int32", "blocks per SM", "occupancy"):
        assert any(line.startswith(f"  new word {word}:") for line in lines), word


# -- words cut (issue 37.5) ------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_choices_and_answer_echoes_are_never_cut_inside_a_word(tmp_path: Path, columns: int) -> None:
    """Issue 37.5: a choice cut at 80 columns ("... from another thread or p") and answer echoes broken
    inside words ("healthy-sm" / "all.json")."""
    from wizard.runs import load_playbook

    screen, stream = screen_of(columns)
    child = spawn([], tmp_path, columns)
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.send(f"{EXAMPLES / 'traces' / 'kernels-missing.json'}\r")
    child.expect("I don't know")  # the read_when menu, drawn whole
    stream.feed(str(child.before) + str(child.after))  # type: ignore[attr-defined]
    menu = lines_of(screen)
    child.send("\x1b[B\r")  # the long choice: read while the profiler still runs
    child.expect(r"Diagnosis: ([a-z-]+)")
    stream.feed(str(child.before) + str(child.after) + finish(child))  # type: ignore[attr-defined]
    lines = lines_of(screen)
    question = load_playbook("kernels-missing").nodes["read_when"]
    long_label = next(c.label for c in question.choices if c.value == "early")  # type: ignore[attr-defined]
    words_on = {w for line in menu for w in line.split()}
    assert [w for w in long_label.split() if w not in words_on] == []  # every word of the menu whole
    shown = {w for line in lines for w in line.split()}
    echoed = (
        f"Where does your code read or copy the trace file? {long_label} {EXAMPLES / 'traces' / 'kernels-missing.json'}"
    )
    assert [w for w in echoed.split() if w not in shown] == []
    assert "While the profiler still runs, or right after stop() from another thread or process" in joined(lines)
    assert all(len(line) <= columns for line in lines)


@pytest.mark.parametrize("columns", [80, 120])
def test_the_ctrl_c_message_breaks_between_words(tmp_path: Path, columns: int) -> None:
    """Issue 37.5: the Ctrl-C message wrapped inside `--resume`."""
    screen, stream = screen_of(columns)
    child = spawn([], tmp_path, columns)
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.sendintr()
    stream.feed(str(child.before) + str(child.after) + finish(child))  # type: ignore[attr-defined]
    assert child.exitstatus == 130
    lines = lines_of(screen)
    said = joined(lines)
    assert "(continue with: warpwizard run triage --resume)" in said
    assert any("--resume)" in line for line in lines)
    assert all(len(line) < columns for line in lines if "answers so far saved" in line or "--resume" in line)


# -- the HTML report in Chromium (issue 37.8) ------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Any:
    from tests.helpers import chromium

    yield from chromium()


def test_the_run_page_renders_code_names_the_real_trace_and_says_no_rank_of_one_file(
    browser: Any, tmp_path: Path
) -> None:
    """Issue 37.8: literal backticks, `warpwizard trace fix TRACE OUT.json` with a placeholder, "ranks: 0"."""
    pytest.importorskip("plotly")
    from tests.conftest import run_inprocess
    from tests.helpers import open_page

    page_file = tmp_path / "run.html"
    answers = EXAMPLES / "answers" / "grid-overflow.yaml"
    ran = run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--report", str(page_file))
    assert ran.status == 0, ran.stderr
    page, seen = open_page(browser, page_file, tmp_path / "run.png")
    try:
        verdict = page.inner_text("#ww-run-verdict")
        trace = (EXAMPLES / "traces" / "grid-overflow.json").resolve()
        fixed = trace.with_name("grid-overflow-fixed.json")
        assert f"warpwizard trace fix {trace} {fixed} writes a copy with them" in " ".join(verdict.split())
        assert "`" not in verdict and "TRACE OUT.json" not in verdict
        assert page.eval_on_selector_all("#ww-run-verdict code", "els => els.map(e => e.textContent)")[1:2] == [
            f"warpwizard trace fix {trace} {fixed}"
        ]
        assert "ranks:" not in page.inner_text("body")
        assert seen["errors"] == []
    finally:
        page.close()
