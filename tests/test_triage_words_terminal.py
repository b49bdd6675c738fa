"""Issue 44 (the first hour, round 3), at a real terminal: what the triage asks and says (pexpect)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.test_terminal import finish, spawn
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
    from tests.test_first_hour_terminal import _defined_before_used, _teach_screen

    path = EXAMPLES / "traces" / trace
    lines = _teach_screen(args, [("start from", "\r"), ("Path to the trace", f"{path}\r")], 120, tmp_path)
    for word in words:
        assert any(line.startswith(f"  new word {word}:") for line in lines), word
    assert _defined_before_used(lines) == []
