"""A table of commands' rows and the one loader of their modules (pip's ``commands_dict`` is the model): the
commands' table is ``wizard.cli.commands.COMMANDS``, ``trace``'s actions ``wizard.cli.commands.trace.ACTIONS``.
Apart from both, so a command's module can hold a table of its own without importing the package that lists it."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple


class Command(NamedTuple):
    """A row: the module that declares the command's grammar (``add_parser``) and body (``run``), the one line
    ``--help`` lists it with (its help), and whether it may take long (progress on stderr at a terminal)."""

    module: str
    summary: str
    long: bool = False


def load(command: Command) -> ModuleType:
    """The row's module, imported now: only the command on the line is, so ``--help`` imports none."""
    return importlib.import_module(command.module)
