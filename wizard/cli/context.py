"""What every command gets (``Context``: its arguments, the outside world, its streams) and the helpers several
commands share. Light: ``--help`` imports it (the library loads inside the functions)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from wizard.system import System
from wizard.untrusted import visible

if TYPE_CHECKING:  # the library's types, for the type checker only: at run time the CLI loads none of them
    from wizard.options import Options
    from wizard.playbook.model import Playbook


class _Stream:
    """A text stream that survives its reader going away (``| head``, a closed terminal): writes after
    a broken pipe or an I/O error are dropped, so the command still finishes (saving what it must)
    and returns its own exit status."""

    def __init__(self, inner: IO[str]) -> None:
        self.inner = inner
        self.broken = False
        self.written = False  # anything at all: a --json failure then adds no second document

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        if not self.broken:
            try:
                self.inner.write(text)
            except OSError:  # EPIPE; EIO once the terminal is gone (SIGHUP)
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.inner.flush()
            except OSError:
                self.broken = True

    def isatty(self) -> bool:
        try:
            return bool(self.inner.isatty())
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:
        return str(getattr(self.inner, "encoding", None) or "utf-8")


class Context:
    """What every command gets: its arguments and the outside world."""

    def __init__(
        self,
        args: argparse.Namespace,
        system: System,
        stdout: _Stream,
        stderr: _Stream,
        grammar: Callable[[], argparse.ArgumentParser],
    ) -> None:
        self.args, self.system, self.stdout, self.stderr = args, system, stdout, stderr
        self.grammar = grammar  # the whole command line's (completion scripts): wizard/cli/parser.py's build_parser
        self.consoles: dict[bool, Any] = {}

    def console(self, *, stderr: bool = False) -> Any:
        if stderr not in self.consoles:
            from wizard.ui.render import make_console

            no_color = bool(self.args.no_color or self.system.environ.get("NO_COLOR"))
            columns = self.system.environ.get("COLUMNS", "")
            self.consoles[stderr] = make_console(
                self.stderr if stderr else self.stdout,
                no_color=no_color,
                width=int(columns) if columns.isascii() and columns.isdigit() and int(columns) > 0 else None,
            )
        return self.consoles[stderr]

    def write(self, text: str) -> None:
        self.stdout.write(text)

    def say(self, line: str, *, hang: int | None = None) -> None:
        """A line of prose, escaped: at a terminal, broken between words at its width and continued at
        column ``hang`` (default: the line's indent plus 2), where the terminal itself breaks mid-word;
        whole when piped, for grep and scripts."""
        line = visible(line)
        if not self.system.isatty(self.system.stdout):
            self.write(line + "\n")
            return
        from wizard.formatting import wrap_words

        indent = len(line) - len(line.lstrip(" "))
        more = " " * (hang if hang is not None else indent + 2)
        self.write("\n".join(wrap_words(line, int(self.console().width), hang=more)) + "\n")

    @property
    def playbook_dirs(self) -> list[str]:
        return list(self.args.playbook_dir)


def load_playbook(ctx: Context, name: str) -> Playbook:
    """The playbook ``name`` (an id or a file) on the command line's search path."""
    from wizard.runs import load_playbook

    return load_playbook(name, playbook_dirs=ctx.playbook_dirs, environ=ctx.system.environ)


def probe_options_of(ctx: Context) -> Options:
    """The options of ``run`` and ``probe`` for probes, checked now (a workload that is not Python)."""
    from wizard.cli.arguments import probe_options

    options = probe_options(ctx.args)
    options.settings(ctx.system, spell=option_flag)
    return options


def option_flag(name: str) -> str:
    """An option's flag from its field's name (``report_dir``: ``--report-dir``), for the library's messages."""
    return "--" + name.replace("_", "-")
