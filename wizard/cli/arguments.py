"""The argument groups several commands share (``--report``, ``--quiet/--progress``, the probes' options from
``wizard.options.Options``' declaration) and the parser class every command's parser is. Commands import this,
never wizard/cli/parser.py (which imports the table that lists them). Importing this loads argparse only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.errors import UsageError

if TYPE_CHECKING:
    from wizard.options import Options


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, our exit code
        raise UsageError(f"{self.prog}: {message} (see --help)")


COMPLETES_ATTR = "warpwizard_completes"  # the attribute naming what an argument completes (wizard/cli/completion.py)


def mark_completions(parser: argparse.ArgumentParser, kinds: dict[str, str]) -> None:
    """Each argument of ``parser`` whose dest ``kinds`` names is marked with the names it completes (a command
    module's ``COMPLETES``); shtab's own ``.complete`` is set from it when a completion script is made."""
    for action in parser._actions:
        if action.dest in kinds:
            setattr(action, COMPLETES_ATTR, kinds[action.dest])


Sub = Any  # what a command's add_parser is handed: argparse's _SubParsersAction, private in typeshed


def add_report(parser: argparse.ArgumentParser) -> None:
    """--report FILE, the same on every command that writes one (wizard.report.registry picks the format)."""
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write a report, its format by suffix: .html (one page with plots; needs warpwizard[html]), .md or .json",
    )


def add_progress(parser: argparse.ArgumentParser) -> None:
    """--quiet / --progress, the same on every command that may take long (docs: README, Progress)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no progress bars or live lines on stderr")
    group.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr even without a terminal, under CI or with NO_COLOR (plain lines for a log)",
    )


def add_probe_options(parser: argparse.ArgumentParser) -> None:
    """What probes may do and where they write, the same for ``run`` and ``probe``: one argument per
    field of ``wizard.options.Options``, declared there (``option``: flag, metavar, help, kind) and nowhere else,
    wired by the one function every option set's arguments are (``option_fields.add_arguments``)."""
    from wizard.option_fields import add_arguments
    from wizard.options import Options

    add_arguments(parser, Options)


def probe_options(args: argparse.Namespace) -> Options:
    """The ``Options`` a command line asked for (the parsed arguments of ``add_probe_options``)."""
    import dataclasses

    from wizard.options import Options

    return Options(**{spec.name: getattr(args, spec.name) for spec in dataclasses.fields(Options)})
