"""The command line's grammar: the top level here, each command's in its module under ``wizard.cli.commands``,
built from that package's table (the argument groups several commands share: wizard/cli/arguments.py). Importing
this loads argparse only."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from wizard import __version__
from wizard.cli.arguments import Parser, mark_completions
from wizard.cli.commands import COMMANDS
from wizard.cli.table import load
from wizard.exit_status import epilog

EVERY = "*"  # build_parser's default: every command's arguments (completion scripts, the docs' tests)


def build_parser(only: str | None = EVERY) -> argparse.ArgumentParser:
    """The grammar. ``only``: the one command whose arguments are built (``command_of(argv)``); the others are
    named with their help and nothing more, their modules not even imported, so ``warpwizard --help`` builds the
    list of commands, not the hundred arguments under them (each costs argparse a formatter and gettext lookups)."""
    text = epilog()
    kw: dict[str, Any] = {"epilog": text, "formatter_class": argparse.RawDescriptionHelpFormatter}
    p = Parser(
        prog="warpwizard",
        description="Checks the health of any PyTorch profiler trace (kernels missing or hidden, impossible "
        "timing or metrics, CUDA graphs, rank skew) and walks you through a playbook to the cause. With no "
        "command at a terminal it starts the triage (warpwizard --teach explains as it goes).",
        **kw,
    )
    p.add_argument("-V", "--version", action="version", version=f"warpwizard {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    p.add_argument("--no-color", action="store_true", help="plain output (also: NO_COLOR=1)")
    p.add_argument(
        "--playbook-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="also look for playbooks here (also: WARPWIZARD_PLAYBOOK_PATH)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    unbuilt: Parser | None = None
    for name, command in COMMANDS.items():
        if only in (EVERY, name):
            module = load(command)
            mark_completions(module.add_parser(sub, help=command.summary, **kw), getattr(module, "COMPLETES", {}))
        else:  # another command is on the line: its name and help, so argparse knows it and --help lists it
            unbuilt = unbuilt or Parser(prog="warpwizard", add_help=False)
            _listed(sub, name, command.summary, unbuilt)
    return p


def _listed(sub: argparse._SubParsersAction[Any], name: str, summary: str, unbuilt: Parser) -> None:
    """A command named with its help and nothing more: what ``sub.add_parser(name, help=summary)`` registers for
    ``--help`` and for argparse's choice of command, with one argument-less parser (``unbuilt``) shared by every such
    name instead of a parser each (0.8 M instructions apiece, gettext's look-ups and the ``-h`` argument: 12 M of a
    small ``trace inspect``). Only a line ``command_of`` misread parses with it; ``main`` then builds the whole
    grammar and parses the line again."""
    # add_parser's own two steps, written alike in the argparse of CPython 3.10 to 3.14
    sub._name_parser_map[name] = unbuilt
    sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), summary))


_TOP_VALUED = "--playbook-dir"  # the one top-level option that takes a value
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse's _negative_number_matcher


def run_values_joined(argv: Sequence[str]) -> list[str]:
    """``run``'s options typed with no command (``warpwizard --teach --answers FILE``: the bare ``warpwizard`` is
    ``run triage``), each value joined to its option (``--answers=FILE``): the top level does not know them, and took
    the value for the command's name ("invalid choice"). The line as typed wherever it names a command, so that its
    errors quote what was typed; run's grammar is built only for a line whose first word is no command."""
    at, helped = _first_word(argv)
    if helped or (at is not None and argv[at] in COMMANDS):
        return list(argv)
    options = _run_valued()
    joined: list[str] = []
    at = 0
    while at < len(argv):
        arg = argv[at]
        at += 1
        if arg == "--":
            joined += argv[at - 1 :]
            break
        if arg.startswith("--") and "=" not in arg:
            if len(arg) > 2 and _TOP_VALUED.startswith(arg):  # the top level's own value, as _first_word skips it
                joined += argv[at - 1 : at + 1]
                at += 1
                continue
            if _takes_value(arg, options) and at < len(argv) and _is_value(argv[at]):
                arg, at = f"{arg}={argv[at]}", at + 1
        joined.append(arg)
    return list(argv) if _first_word(joined)[0] is not None else joined


def _takes_value(typed: str, options: dict[str, bool]) -> bool:
    """Whether an option as typed is one of run's that take a value: by its name, or as an abbreviation argparse
    takes (one that could be several, a valued one among them, is joined too: run's grammar then says it is
    ambiguous, as it does for ``run triage``)."""
    if typed in options:
        return options[typed]
    return any(takes for name, takes in options.items() if name.startswith(typed))


def _is_value(word: str) -> bool:
    """Whether argparse reads the word as an option's value: not an option (``-`` and negative numbers are values:
    run's grammar has no option that looks like one)."""
    return not word.startswith("-") or word == "-" or _NEGATIVE.match(word) is not None


def _run_valued() -> dict[str, bool]:
    """Whether each of ``run``'s long options takes a value, as its grammar declares them."""
    run = innermost(build_parser("run"), argparse.Namespace(command="run"))
    return {s: a.nargs is None for a in run._actions for s in a.option_strings if s.startswith("--")}


def innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The grammar of the command the line chose (``trace inspect``'s, not the top level's): its name leads the
    one-line error of an option it does not know, as it leads every other error of that command."""
    while (sub := _subparsers(parser)) is not None and getattr(args, sub.dest, None) in sub._name_parser_map:
        parser = sub._name_parser_map[getattr(args, sub.dest)]
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def command_of(argv: Sequence[str]) -> str | None:
    """The command an argument list runs, for ``build_parser(only=...)``: the first word that is not an option
    (nor the value of ``--playbook-dir``, or an abbreviation of it); ``run`` for no command (the bare
    ``warpwizard`` is ``run triage``), None when ``--help`` or ``--version`` comes first (nothing to build)."""
    at, helped = _first_word(argv)
    return None if helped else ("run" if at is None else argv[at])


def command_at(argv: Sequence[str]) -> int | None:
    """Where the command's word lies in the line (``command_of``'s), or None: no command, or help first."""
    return _first_word(argv)[0]


def _first_word(argv: Sequence[str]) -> tuple[int | None, bool]:
    """The index of the line's first word that is no option nor ``--playbook-dir``'s value (None: none before
    ``--`` or the end), and whether ``--help`` or ``--version`` came before it."""
    values = False
    for at, arg in enumerate(argv):
        if values:
            values = False
            continue
        if arg == "--":
            break
        if arg in ("-h", "-V") or (len(arg) > 2 and ("--help".startswith(arg) or "--version".startswith(arg))):
            return None, True
        if arg.startswith("-"):
            values = "=" not in arg and len(arg) > 2 and _TOP_VALUED.startswith(arg)  # --p: argparse's too
            continue
        return at, False
    return None, False
