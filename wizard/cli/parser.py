"""The command line's grammar: the top level here, each command's in its module under ``wizard.cli.commands``,
built from that package's table (the argument groups several commands share: wizard/cli/arguments.py). Importing
this loads argparse only."""

from __future__ import annotations

import argparse
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


def command_of(argv: Sequence[str]) -> str | None:
    """The command an argument list runs, for ``build_parser(only=...)``: the first word that is not an option
    (nor the value of ``--playbook-dir``, or an abbreviation of it); ``run`` for no command (the bare
    ``warpwizard`` is ``run triage``), None when ``--help`` or ``--version`` comes first (nothing to build)."""
    values = False
    for arg in argv:
        if values:
            values = False
            continue
        if arg == "--":
            break
        if arg in ("-h", "-V") or (len(arg) > 2 and ("--help".startswith(arg) or "--version".startswith(arg))):
            return None
        if arg.startswith("-"):
            values = "=" not in arg and len(arg) > 2 and _TOP_VALUED.startswith(arg)  # --p: argparse's too
            continue
        return arg
    return "run"
