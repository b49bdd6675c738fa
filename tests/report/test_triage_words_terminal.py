"""Issue 44 (the first hour, round 3), at a real terminal: what the triage asks and says (pexpect)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import eight_ranks, finish, spawn
from wizard.runs import load_playbook

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")

DOWN = "\x1b[B"


def _offered(playbook_id: str) -> int:
    """The place of ``playbook_id`` in the triage's "What did you see?" list (its choices, in order)."""
    described = load_playbook("triage").nodes["described"]
    values = [c.value for c in described.choices]  # type: ignore[attr-defined]
    return values.index(playbook_id)


@pytest.mark.parametrize(
    ("playbook_id", "repeated", "then"),
    [
        ("rank-skew", "Does NCCL time differ", "Diagnosis: rank-skew-needs-every-rank"),
        ("cuda-graphs", "Does your model run with CUDA graphs", "What do you want to read from this trace"),
    ],
)
def test_the_triage_does_not_ask_again_the_symptom_just_chosen(
    tmp_path: Path, playbook_id: str, repeated: str, then: str
) -> None:
    """Issue 44 item 8: after "NCCL collectives far slower on some ranks than on others", the triage went into
    rank-skew, which asked "Does NCCL time differ a lot between ranks?"; cuda-graphs asked "Does your model run
    with CUDA graphs?" after "A CUDA graph run". Each goes on from what the choice said."""
    child = spawn(["run", "triage"], tmp_path)
    child.expect("What do you have to start from")
    child.send(DOWN * 2 + "\r")  # only what I saw
    child.expect("What did you see")
    child.send(DOWN * _offered(playbook_id) + "\r")
    child.expect(f"Continuing with {playbook_id}")
    index = child.expect([repeated, then])
    seen = str(child.before)
    if index == 0 or playbook_id == "cuda-graphs":
        child.sendintr()  # a question waits: stop the run
    output = finish(child)
    assert index == 1, f"asked again: {repeated}"
    assert repeated not in seen + output


@pytest.mark.parametrize(
    ("args", "trace", "words"),
    [
        (["run", "negative-warps-per-sm", "--teach"], "shared-memory-over-48k.json", ["trace doctor", "mechanism"]),
        (["run", "summary-table", "--teach"], "summary-table.json", ["Self CUDA"]),
    ],
)
def test_teach_defines_the_mechanism_letters_the_trace_doctor_and_self_cuda(
    tmp_path: Path, args: list[str], trace: str, words: list[str]
) -> None:
    """Issue 44 item 10: --teach used "mechanism E", "the trace doctor" and "Self CUDA" and never said what they
    are. Each is defined, before its first use on the screen."""
    from tests.conftest import EXAMPLES
    from tests.helpers import defined_before_used, teach_screen

    path = EXAMPLES / "traces" / trace
    lines = teach_screen(args, [("start from", "\r"), ("Path to the trace", f"{path}\r")], 120, tmp_path)
    for word in words:
        assert any(line.startswith(f"  new word {word}:") for line in lines), word
    assert defined_before_used(lines) == []


def test_the_triage_on_eight_ranks_says_each_thing_once_with_its_ranks(tmp_path: Path) -> None:
    """Issue 44 item 5: the triage said the E paragraph once per kernel per rank, and its "checked:" evidence was
    every rank's twelve checks, unlabelled (7,147 characters for these eight ranks)."""
    from tests.helpers import joined, screen_lines

    ranks = eight_ranks(tmp_path / "ranks")
    said = joined(screen_lines(["run", "triage", "--set", "have=trace", "--set", f"trace_path={ranks}"], 120))
    assert said.count("the default per-block limit Kineto passes") == 1
    assert "E: the same for 23 other kernels, on 8 ranks" in said  # 8 ranks x 3 kernels, less the one said
    checked = said[said.index("checked: ") : said.index("files read:")]
    assert checked.count("kernels-missing") == 1 and "impossible-metrics (info) [all 8 ranks]: 3 launches" in checked
    assert "ok [all 8 ranks]: trace-incomplete, kernels-missing, kernels-overlap, graph-launches" in checked
    assert "ranks-complete (ok) [all ranks]: all 8 ranks of the job, each once" in checked
    assert "rank-skew (ok) [all ranks]" in checked
    assert len(checked) < 800


def test_alike_validator_lines_are_said_once_with_their_files() -> None:
    """Issue 44 item 5: PyTorch's validator's line was printed once per rank."""
    from wizard.probes.trace_inspect import fold_alike

    names = [f"rank{n}.json" for n in range(3)]
    passed = [f"PyTorch's trace validator (torch 2.13) on {n}: its timeline rules all pass" for n in names]
    assert fold_alike(passed, names) == [
        "PyTorch's trace validator (torch 2.13) on each of the 3 files: its timeline rules all pass"
    ]
    mixed = [*passed[:2], "PyTorch's trace validator (torch 2.13) could not read rank2.json: cut"]
    assert fold_alike(mixed, names) == [
        "PyTorch's trace validator (torch 2.13) on rank0.json, rank1.json: its timeline rules all pass",
        "PyTorch's trace validator (torch 2.13) could not read rank2.json: cut",
    ]
