"""What a new user tripped on in the first hour (issue 27): words, prompts and sessions."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLES, REPO, RunCli

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
