"""Interactive runs in a real pseudo-terminal (pexpect): prompts, validation, Ctrl-C, replay."""

from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, REPO, RunCli, cli_env, needs_torch, strict_json
from tests.helpers import finish, matched, screen_lines, spawn
from wizard.playbook.model import QuestionNode

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")


def prompt_text(question: QuestionNode) -> str:
    """A question's prompt up to its first template hole: what the terminal shows verbatim."""
    assert question.prompt is not None
    return question.prompt.source.split("{{")[0]


def test_flagship_at_a_terminal_with_a_retry_after_a_bad_path(tmp_path: Path) -> None:
    child = spawn(["run", "negative-warps-per-sm", "--teach"], tmp_path)
    child.expect("why this step")  # --teach explains the step before asking
    child.expect("What do you have to start from")
    child.send("\r")  # the default: a trace file
    child.expect("Path to the trace")
    child.send("no/such/trace.json\r")
    child.expect("does not exist")  # validated as typed, the prompt stays
    child.send("\x15")  # Ctrl-U: clear the line
    child.send(f"{EXAMPLES / 'traces' / 'old-sm-count.json'}\r")
    child.expect("Diagnosis: profiler-bug-old-sm-count")
    output = finish(child)
    assert child.exitstatus == 0
    assert "Upgrade to PyTorch 1.10" in output


def test_example_playbook_same_conclusion_three_ways(tmp_path: Path, run_cli: RunCli) -> None:
    playbook = str(REPO / "examples" / "playbooks" / "torch-sees-no-gpu.yaml")
    record = tmp_path / "recorded.yaml"
    child = spawn(["run", playbook, "--record", str(record)], tmp_path)
    child.expect("What do you see")
    child.send("\r")
    child.expect(r"Diagnosis: ([a-z0-9-]+)")
    interactive = matched(child)
    finish(child)
    assert child.exitstatus == 0
    assert yaml.safe_load(record.read_text()) == {"symptom": "not_available"}

    answers = tmp_path / "answers.yaml"
    answers.write_text("symptom: not_available\n")
    from_file = strict_json(run_cli("run", playbook, "--answers", str(answers), "--json").stdout)
    replayed = strict_json(run_cli("run", playbook, "--answers", str(record), "--json").stdout)
    assert interactive == from_file["conclusion"]["diagnosis"] == replayed["conclusion"]["diagnosis"]


def _sessions() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "warpwizard" / "sessions"


def test_ctrl_c_then_resume_asks_only_what_is_left(tmp_path: Path) -> None:
    """Ctrl-C saves the session in the state directory (not where the user stands); --resume says
    which file it used, asks the remaining questions and reaches the diagnosis."""
    here = tmp_path / "project"
    here.mkdir()
    child = spawn(["run", "negative-warps-per-sm"], here)
    child.expect("What do you have to start from")
    child.send("\x1b[B")  # arrow down: a script I can run
    child.send("\x1b[B")  # arrow down: only what I saw
    child.send("\r")
    child.expect("What exactly did you see")
    child.sendintr()
    output = finish(child)
    assert child.exitstatus == 130
    (saved,) = _sessions().iterdir()
    assert f"answers so far saved to {saved} (continue with: warpwizard run negative-warps-per-sm --resume)" in (
        " ".join(output.split())
    )
    assert yaml.safe_load(saved.read_text()) == {"have": "description"}
    assert list(here.iterdir()) == []  # nothing where the user stands

    child = spawn(["run", "negative-warps-per-sm", "--resume"], here)
    child.expect("resuming from ([^\\s\\x1b]+)")
    assert matched(child) == str(saved)
    child.expect(r"✓ What do you have to start from\? Only what I saw")  # issue 37.6: the reused answer is said
    # issue 37.4: said as a resumed run's (both ways read "answered before, in a file")
    child.expect(r"\(reused: answered before the interruption, kept in the saved session\)")
    questions = _flagship_questions()
    ids = list(questions)
    patterns = [re.escape(prompt_text(questions[i])[:40]) for i in ids]  # type: ignore[arg-type]
    asked = []
    while (index := child.expect([*patterns, r"Diagnosis: ([a-z0-9-]+)"])) < len(ids):
        asked.append(ids[index])
        child.send("\r")  # each remaining question's default
    diagnosis = matched(child)
    finish(child)
    assert child.exitstatus == 0
    assert asked[0] == "symptom" and "have" not in asked  # the saved answer is not asked again
    assert diagnosis == "likely-profiler-bug-grid-overflow"


def test_an_answers_file_at_a_terminal_asks_what_it_does_not_answer(tmp_path: Path) -> None:
    answers = tmp_path / "partial.yaml"
    answers.write_text("have: trace\n")
    child = spawn(["run", "negative-warps-per-sm", "--answers", str(answers)], tmp_path)
    child.expect("Path to the trace")
    child.send(f"{EXAMPLES / 'traces' / 'old-sm-count.json'}\r")
    child.expect("Diagnosis: profiler-bug-old-sm-count")
    finish(child)
    assert child.exitstatus == 0


@needs_torch
@pytest.mark.slow
def test_a_typed_workload_is_confirmed_at_resume_not_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"import pathlib, time\npathlib.Path({str(marker)!r}).write_text('x')\ntime.sleep(300)\n")
    child = spawn(["run", "negative-warps-per-sm", "--report-dir", str(tmp_path / "wr")], tmp_path)
    child.expect("What do you have to start from")
    child.send("\x1b[B\r")  # a script I can run
    child.expect("Command that runs a few steps")
    child.send(f"python {script}\r")
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the typed workload never ran"
    child.sendintr()
    finish(child)
    assert child.exitstatus == 130
    marker.unlink()
    script.write_text("print('a step')\n")  # the resumed run finishes

    child = spawn(["run", "negative-warps-per-sm", "--resume", "--report-dir", str(tmp_path / "wr2")], tmp_path)
    child.expect(f"workload_cmd comes from a file: python {re.escape(str(script))}")
    child.expect("Run workload")
    child.send("y\r")
    child.expect(r"Diagnosis: ([a-z0-9-]+)")
    diagnosis = matched(child)
    output = finish(child)
    assert child.exitstatus == 0
    assert "not run" not in output and "--allow-commands" not in output
    assert diagnosis == "no-gpu-kernels"


@needs_torch
def test_a_step_that_needs_the_workload_asks_for_it_at_the_terminal_once(tmp_path: Path) -> None:
    """Issue 27: an interactive run asked no workload and its steps skipped with "run with --workload"."""
    books = tmp_path / "books"
    books.mkdir()
    (books / "blocking.yaml").write_text(
        "id: blocking\ntitle: Blocking twice\nversion: '1'\nnodes:\n"
        "  - {id: first, kind: probe, probe: cuda.launch_blocking, next: second}\n"
        "  - {id: second, kind: probe, probe: cuda.launch_blocking, next: done}\n"
        "  - {id: done, kind: conclusion, diagnosis: ran-twice,"
        " summary: 'exits {{ facts.first.exit_code }} and {{ facts.second.exit_code }}'}\n"
    )
    child = spawn(["--playbook-dir", str(books), "run", "blocking", "--report-dir", str(tmp_path / "wr")], tmp_path)
    child.expect("cuda.launch_blocking needs your workload")
    child.expect("Which command runs your workload")
    child.send("train.sh\r")
    child.expect("'train.sh' is not a Python program")
    child.expect("Which command runs your workload")
    child.send("\x15")  # Ctrl-U: the rejected text is kept for editing
    child.send("python -c 'raise SystemExit(3)'\r")
    # the line said before each ask (the prompt itself is redrawn at every key typed)
    asked_again = child.expect([r"needs your workload", r"Diagnosis: ([a-z0-9-]+)"])
    assert asked_again == 1  # the second step is not asked
    diagnosis = matched(child)
    output = str(child.before) + finish(child)
    assert child.exitstatus == 0
    assert diagnosis == "ran-twice"
    assert "exits 3 and 3" in output  # the one answer served both steps
    assert "--workload" not in output

    answers = tmp_path / "answers.yaml"  # an answers file that gives no workload means none: not asked
    answers.write_text("{}\n")
    child = spawn(["--playbook-dir", str(books), "run", "blocking", "--answers", str(answers)], tmp_path)
    child.expect(r"Diagnosis: ([a-z0-9-]+)")
    output = str(child.before) + finish(child)
    assert "Which command runs your workload" not in output
    assert "no workload given" in output


def test_enter_in_the_path_completion_menu_submits_the_highlighted_path(tmp_path: Path) -> None:
    """Issue 27: Enter only closed the completion menu; a second Enter was needed."""
    child = spawn(["run", "negative-warps-per-sm"], EXAMPLES)
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.send("traces/old-sm-co")
    child.expect("old-sm-count.json")  # the menu, opened while typing
    child.send("\x1b[B")  # highlight the one completion
    child.expect("old-sm-count.json")
    child.send("\r")  # once
    child.expect("Diagnosis: profiler-bug-old-sm-count")
    finish(child)
    assert child.exitstatus == 0


SCREEN_COMMANDS = [
    ["examples"],
    ["env"],
    ["probes", "trace.inspect"],
    ["validate", "playbooks/negative-warps-per-sm.yaml"],
    ["trace", "inspect", "examples/traces/old-sm-count.json"],
    ["trace", "inspect", "examples/traces/grid-overflow.json", "--verbose"],
    ["run", "negative-warps-per-sm", "--answers", "examples/answers/grid-overflow.yaml"],
]
SEPARATORS = re.compile(r"[\s│┃|]+")


@pytest.mark.parametrize("args", SCREEN_COMMANDS, ids=" ".join)
def test_at_80_columns_no_word_is_broken_across_lines(args: list[str], run_cli: RunCli) -> None:
    """Issue 27: plain lines (examples, env, probes NAME, validate) were left to the terminal, which breaks
    mid-word ("NVML Shared Library Not Foun" / "d"). A break is mid-word when the two pieces joined are a
    word of the same output unwrapped and either piece alone is not."""
    lines = screen_lines(args, 80)
    wide = run_cli(*args, env=cli_env(COLUMNS="3000"))
    words = set(SEPARATORS.split(wide.stdout + wide.stderr))
    broken = []
    for above, below in itertools.pairwise(lines):
        if len(above) < 79 or not above[-1:].strip() or not below[:1].strip():
            continue
        a, b = SEPARATORS.split(above)[-1], SEPARATORS.split(below)[0]
        if a + b in words and not (a in words and b in words):
            broken.append(f"{a}|{b}")
    assert broken == []


LONG_PROMPT = (
    "Can the grid of void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>> exceed the "
    "limits (x > 2^31-1, y or z > 65535), or is the grid computed in 32-bit int?"
)
LONG_HELP = (
    "How to find out: open the launch (kernel<<<grid, block>>> or the dim3 passed to it, or the grid lambda of a "
    "Triton kernel) and look at the type of the number of blocks; int (32-bit) with an element count n over about "
    "two billion overflows. Not sure: answer no."
)


@pytest.mark.parametrize("columns", [80, 120])
def test_a_long_prompt_and_its_help_wrap_between_words(tmp_path: Path, columns: int) -> None:
    """Issue 27: prompts wrapped mid-word at 120 columns (the help, as questionary's instruction, also hid (y/N))."""
    pyte = pytest.importorskip("pyte")
    books = tmp_path / "books"
    books.mkdir()
    (books / "long.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "long",
                "title": "Long",
                "version": "1",
                "nodes": [
                    {
                        "id": "q",
                        "kind": "question",
                        "type": "confirm",
                        "prompt": LONG_PROMPT,
                        "help": LONG_HELP,
                        "default": False,
                        "next": "done",
                    },
                    {"id": "done", "kind": "conclusion", "diagnosis": "asked", "summary": "asked"},
                ],
            },
            width=1000,
        )
    )
    screen = pyte.Screen(columns, 50)
    stream = pyte.Stream(screen)
    child = spawn(["--playbook-dir", str(books), "run", "long"], tmp_path, columns)
    child.expect(r"\(y/N\)")
    stream.feed(str(child.before) + str(child.after))
    child.send("\r")
    stream.feed(finish(child))
    assert child.exitstatus == 0
    lines = [line.rstrip() for line in screen.display]
    words = set(" ".join(lines).split())
    cut = [w for w in (LONG_PROMPT + " " + LONG_HELP).split() if w not in words]
    assert cut == []  # every word whole on one line of the screen


def _flagship_questions(playbook: str = "negative-warps-per-sm") -> dict[str, object]:
    """The questions of a shipped playbook (the flagship unless named), by id."""
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    pb = load_playbook(REPO / "playbooks" / f"{playbook}.yaml", catalog())
    return {q.id: q for q in pb.questions()}


EXAMPLE_MANIFEST = yaml.safe_load((EXAMPLES / "manifest.yaml").read_text())


@pytest.mark.parametrize("example", EXAMPLE_MANIFEST["examples"], ids=lambda e: e["name"])
def test_every_example_at_a_real_terminal(example: dict[str, str]) -> None:
    """Answer the real prompts the way a person would (arrow keys, y/n, typing) from the answers file."""
    from wizard.playbook.model import QuestionNode

    playbook = example.get("playbook") or EXAMPLE_MANIFEST["playbook"]
    questions = _flagship_questions(playbook)
    answers = yaml.safe_load((REPO / example["answers"]).read_text())
    waiting = {qid: q for qid, q in questions.items() if isinstance(q, QuestionNode)}
    child = spawn(["run", playbook], REPO)
    while True:
        ids = list(waiting)
        patterns = [re.escape(prompt_text(waiting[i])[:40]) for i in ids]
        index = child.expect([*patterns, r"Diagnosis: ([a-z0-9-]+)", "Which command runs your workload"])
        if index == len(ids) + 1:  # a step runs the workload: the example has none to give (Enter skips)
            child.send("\r")
            continue
        if index == len(ids):
            diagnosis = matched(child)
            break
        q = waiting.pop(ids[index])
        assert isinstance(q, QuestionNode)
        value = answers.get(q.id, q.default)
        if q.type == "path" and q.id in answers:  # relative to the answers file; typed at the prompt: absolute
            value = str(((REPO / example["answers"]).parent / value).resolve())
        if q.type == "select":
            values = [c.value for c in q.choices]
            steps = values.index(value) - values.index(q.default)
            child.send(("\x1b[B" if steps > 0 else "\x1b[A") * abs(steps) + "\r")
        elif q.type == "confirm":
            child.send("y\r" if value else "n\r")  # a yes/no question waits for Enter
        else:
            child.send(f"{value}\r")
    finish(child)
    assert child.exitstatus == 0
    assert diagnosis == example["diagnosis"]


def test_no_arguments_at_a_terminal_starts_the_triage(tmp_path: Path) -> None:
    child = spawn([], tmp_path)  # issue 26: the triage is the front door (`warpwizard list` lists playbooks)
    child.expect("What is wrong with my profile")
    child.expect("What do you have to start from")
    child.sendintr()
    finish(child)
    assert child.exitstatus == 130


def test_a_rejected_answer_is_explained_under_the_prompt_even_a_300_character_path(tmp_path: Path) -> None:
    child = spawn(["run", "negative-warps-per-sm"], tmp_path)
    child.expect("What do you have to start from")
    child.send("\r")
    child.expect("Path to the trace")
    child.send("x" * 300 + "\r")  # the path completer runs at every keystroke
    words = r"\s+".join(
        ["cannot", "be", "used", "as", "a", "path", r"\(File", "name", "too", r"long\);", "try", "again"]
    )
    child.expect(r"✗ 'x+\.\.\. \(302 characters\)\s+" + words)  # wrapped at the terminal's width
    child.expect("Path to the trace")  # asked again right below, the text kept for editing
    child.send("\x15")  # Ctrl-U
    child.send(f"{EXAMPLES / 'traces' / 'old-sm-count.json'}\r")
    child.expect("Diagnosis: profiler-bug-old-sm-count")
    output = finish(child)
    assert child.exitstatus == 0
    assert "Traceback" not in output and "OSError" not in output


def test_explain_renders_its_markdown_at_a_terminal(tmp_path: Path) -> None:
    """Piped, explain prints Markdown source; at a terminal it is rendered (no '## ' or '**')."""
    child = spawn(["explain", "negative-warps-per-sm"], tmp_path)
    child.expect("Step 1 of 6: Verify the profiler's correctness")
    output = finish(child)
    assert child.exitstatus == 0
    assert "**First suspect" not in output and "## Step" not in output
    assert "First suspect the measurement, not the kernel." in output
