"""Every option the playbooks and the health checks' advice quote is one the real parser has, spelled in full:
the rank-skew playbook and ranks-complete's meaning said ``--skip-check ranks-complete`` where the option is
``--skip-checks`` (argparse took the prefix, so it ran, until an option of that prefix is added). The options of
other programs the advice quotes are named here with whose they are."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from tests.conftest import REPO
from wizard.cli.parser import build_parser

# options the advice quotes from other programs' command lines, not warpwizard's
OTHERS = {
    "--cap-add": "docker run",
    "--cuda-graph-trace": "nsys profile",
    "--capture-range": "nsys profile (the summary-table playbook's warm-up for an Nsight Systems export)",
    "--delay": "nsys profile",
    "--query-gpu": "nvidia-smi",
    "--steps": "the user's own training script (python train.py --steps 3)",
}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _advice() -> dict[str, str]:
    """Each advice file's text by its path: the playbooks, and the health checks whose meaning is advice."""
    files = [*sorted((REPO / "playbooks").rglob("*.yaml")), *sorted((REPO / "wizard/trace/health/checks").glob("*.py"))]
    return {str(f.relative_to(REPO)): f.read_text(encoding="utf-8") for f in files}


def test_every_quoted_option_is_the_parsers_own_in_full() -> None:
    real = {option for parser in _parsers(build_parser()) for option in parser._option_string_actions}
    wrong = sorted(
        f"{path}: {option}"
        for path, text in _advice().items()
        for option in set(OPTION.findall(text))
        if option not in real and option not in OTHERS
    )
    assert wrong == []


def test_the_quoted_way_out_of_ranks_complete_parses() -> None:
    """The advice's own command line, through the real parser, with no prefix taken for an option."""
    advice = _advice()
    quoted = "warpwizard trace inspect DIR --skip-checks ranks-complete"
    assert quoted in advice["playbooks/rank-skew.yaml"]
    assert "--skip-checks ranks-complete" in advice["wizard/trace/health/checks/ranks_complete.py"]
    args = build_parser().parse_args(quoted.split()[1:])
    assert (args.paths, args.skip_checks) == (["DIR"], ("ranks-complete",))


def test_other_programs_options_are_still_quoted() -> None:
    """An entry of OTHERS that no advice quotes any more goes (the list says what the advice holds)."""
    said = {option for text in _advice().values() for option in OPTION.findall(text)}
    assert set(OTHERS) <= said
