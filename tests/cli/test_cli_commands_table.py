"""The table of commands (wizard/cli/commands/__init__.py): every row is a module with a grammar and a body, the
grammar built has exactly the table's commands, and a new command is one module and one row (issue 46)."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, run_inprocess
from wizard.cli.commands import COMMANDS
from wizard.cli.commands.trace import ACTIONS
from wizard.cli.parser import build_parser
from wizard.cli.table import Command

COMMANDS_DIR = REPO / "wizard" / "cli" / "commands"
TABLES = {"": COMMANDS, "trace": ACTIONS}  # where a command has actions, the table of them (its prefix: trace)


def _rows() -> Iterator[tuple[str, Command]]:
    for prefix, table in TABLES.items():
        for name, row in table.items():
            yield f"{prefix} {name}".strip(), row


@pytest.mark.parametrize(("name", "row"), list(_rows()), ids=[name for name, _ in _rows()])
def test_every_row_is_a_module_with_its_grammar_and_its_body(name: str, row: Command) -> None:
    module = importlib.import_module(row.module)
    assert Path(str(module.__file__)).parent == COMMANDS_DIR, name  # in the package, not elsewhere
    grammar = inspect.signature(module.add_parser)
    body = inspect.signature(module.run)
    first, *_ = grammar.parameters
    assert first == "sub" and any(p.kind is p.VAR_KEYWORD for p in grammar.parameters.values()), name
    assert len(body.parameters) == 1, f"{name}: run(ctx) takes the context alone"
    assert row.summary and "\n" not in row.summary, name


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """The parser's subcommands as argparse holds them: name -> (the help --help lists, the subparser)."""
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (helps[name], sub) for name, sub in action.choices.items()}


def test_the_grammar_built_has_the_table_s_commands_in_its_order_with_its_summaries() -> None:
    """Both ways: every subparser argparse holds is a row and every row a subparser, listed by --help in the
    table's order with the row's summary (``run``'s help is declared in its module too: the same words)."""
    built = _subcommands(build_parser())
    assert list(built) == list(COMMANDS)
    assert {name: help for name, (help, _) in built.items()} == {name: row.summary for name, row in COMMANDS.items()}
    actions = _subcommands(built["trace"][1])
    assert list(actions) == list(ACTIONS)
    assert {name: help for name, (help, _) in actions.items()} == {name: row.summary for name, row in ACTIONS.items()}


def test_help_built_alone_lists_the_same_commands() -> None:
    """``warpwizard --help`` builds no command's arguments (``command_of`` is None): the names and summaries it
    lists are still the table's, row for row."""
    alone = _subcommands(build_parser(None))
    assert [(name, help) for name, (help, _) in alone.items()] == [(n, r.summary) for n, r in COMMANDS.items()]
    # nothing built: one parser without an argument (not even -h) stands for every command
    assert len({id(sub) for _, sub in alone.values()}) == 1
    assert all(sub._actions == [] for _, sub in alone.values())
    # the command on the line alone is built, with its own parser
    one = _subcommands(build_parser("trace"))
    assert len({id(sub) for name, (_, sub) in one.items() if name != "trace"}) == 1
    assert [a.dest for a in one["trace"][1]._actions][:2] == ["help", "trace_command"]


def test_every_module_in_the_package_is_a_row() -> None:
    """Read from the folder, not the table: a module no row names is a command --help never lists. The bare
    ``warpwizard`` (default.py) is the one module that is no subcommand."""
    on_disk = {p.stem for p in COMMANDS_DIR.glob("*.py")} - {"__init__", "default"}
    named = {row.module.rsplit(".", 1)[1] for _, row in _rows()}
    assert on_disk == named


SCRATCH = '''
"""A command written the way the table's docstring says, registered by one row."""
import argparse
from typing import Any

from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks"}


def add_parser(sub: Any, **kw: Any) -> argparse.ArgumentParser:
    parser = sub.add_parser("hello", **kw)
    parser.add_argument("playbook")
    parser.add_argument("--times", type=int, default=1)
    return parser


def run(ctx: Any) -> ExitStatus:
    ctx.write(f"hello {ctx.args.playbook}\\n" * ctx.args.times)
    return ExitStatus.FINDINGS
'''


@pytest.fixture
def scratch_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new command: one module (on sys.path for this test) and one row in the table, nothing else."""
    name = f"scratch_command_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SCRATCH))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(COMMANDS, "hello", Command(name, "greet a playbook (a scratch command)"))
    yield name
    sys.modules.pop(name, None)


def test_a_new_command_is_one_module_and_one_row(scratch_command: str) -> None:
    ran = run_inprocess("hello", "triage", "--times", "2")
    assert (ran.status, ran.stdout, ran.stderr) == (1, "hello triage\nhello triage\n", "")  # its own exit status
    listed = run_inprocess("--help")
    assert "    hello             greet a playbook (a scratch command)\n" in listed.stdout
    assert "usage: warpwizard hello [-h] [--times TIMES] playbook" in run_inprocess("hello", "--help").stdout
    refused = run_inprocess("hello", "triage", "--bogus")
    assert (refused.status, refused.stderr) == (2, "warpwizard hello: unrecognized arguments: --bogus (see --help)\n")


def test_a_new_command_completes_in_the_shell_by_its_own_declaration(scratch_command: str) -> None:
    """The completion script is made from the grammar the table builds; the row's module declares what its
    playbook argument completes (``COMPLETES``), no list in completion.py names the command."""
    script = run_inprocess("completion", "bash").stdout
    assert " hello " in script.split("_shtab_warpwizard_subparsers=(", 1)[1].split(")", 1)[0] + " "
    assert "_shtab_warpwizard_hello_pos_0_COMPGEN=_warpwizard_names_playbooks_files" in script


def _command_modules_loaded(argv: list[str]) -> list[str]:
    code = (
        "import sys\nfrom wizard.cli.app import main\n"
        f"main({argv!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('wizard.cli.commands.')))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    return list(ast.literal_eval(ran.stdout.strip().splitlines()[-1]))


def test_only_the_command_on_the_line_is_imported() -> None:
    """--help reads the table and imports no command; ``trace inspect`` imports trace's modules alone."""
    assert _command_modules_loaded(["--help"]) == []
    inspected = _command_modules_loaded(["trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json")])
    assert inspected == sorted([COMMANDS["trace"].module, *(row.module for row in ACTIONS.values())])


def test_no_cli_module_over_400_lines_and_no_function_over_60() -> None:
    long_modules, long_functions = [], []
    for path in sorted((REPO / "wizard" / "cli").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 400:
            long_modules.append(rel)
        functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        long_functions += [f"{rel}:{f.lineno} {f.name}" for f in functions if (f.end_lineno or 0) - f.lineno + 1 > 60]
    assert (long_modules, long_functions) == ([], [])
