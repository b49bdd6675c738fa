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
