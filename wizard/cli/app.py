"""The command line: parse, call the library, render, exit.

``main(argv, system)`` is the one error boundary: every domain error becomes one line on
stderr and an ExitStatus; anything else is an internal error whose traceback only ``--debug``
shows. All input and output goes through the ``System`` it is given, so tests run the whole
CLI in-process. Heavy imports (rich, questionary, msgspec) happen inside the commands, so
``--help`` starts fast. Each command's grammar and body is its module under ``wizard.cli.commands``, named in
that package's table; this module only parses, dispatches and answers for what went wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
from typing import Any

from wizard.cli.commands import COMMANDS
from wizard.cli.context import Context, _Stream
from wizard.cli.parser import build_parser, command_at, command_of, innermost, run_values_joined
from wizard.cli.table import load
from wizard.errors import (
    AnswersError,
    InputFileError,
    Interrupted,
    MissingDependency,
    NoTerminalError,
    OutputFileError,
    PlaybookError,
    PlaybookNotFound,
    ProbeInfrastructureError,
    Terminated,
    TerminateSignal,
    UsageError,
    WizardError,
    stopped_by,
)
from wizard.exit_status import ExitStatus, for_signal
from wizard.system import System
from wizard.untrusted import visible

# Domain error -> exit status; the first matching class wins (subclasses first).
ERROR_STATUS: tuple[tuple[type[BaseException], ExitStatus], ...] = (
    (Interrupted, ExitStatus.INTERRUPTED),
    (KeyboardInterrupt, ExitStatus.INTERRUPTED),
    (PlaybookError, ExitStatus.INVALID_PLAYBOOK),
    (AnswersError, ExitStatus.BAD_ANSWERS),
    (NoTerminalError, ExitStatus.BAD_ANSWERS),
    (ProbeInfrastructureError, ExitStatus.PROBE_FAILURE),
    (InputFileError, ExitStatus.INPUT_ERROR),
    (OutputFileError, ExitStatus.OUTPUT_ERROR),
    (UsageError, ExitStatus.USAGE),
    (PlaybookNotFound, ExitStatus.USAGE),
    (MissingDependency, ExitStatus.MISSING_DEPENDENCY),  # an optional extra the command asked for (x.html)
    (WizardError, ExitStatus.PROBE_FAILURE),
)


def _status_of(exc: BaseException) -> ExitStatus:
    if isinstance(exc, (Terminated, TerminateSignal)):
        return for_signal(exc.signum)
    return next(status for kind, status in ERROR_STATUS if isinstance(exc, kind))


def _terminal_width(system: System) -> int | None:
    """The columns of the terminal stderr is, or None (a log or a pipe keeps each message on one line)."""
    if not system.isatty(system.stderr):
        return None
    columns = system.environ.get("COLUMNS", "")
    if columns.isascii() and columns.isdigit() and int(columns) > 0:  # '²' is a digit to isdigit, not to int
        return int(columns)
    try:
        return os.get_terminal_size(system.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def _wrapped(line: str, width: int | None) -> str:
    """A message broken between words at the terminal's width: the terminal broke the Ctrl-C line inside
    ``--resume``."""
    from wizard.formatting import wrap_words

    return "\n".join(wrap_words(line, width - 1)) or line if width else line


def _error_lines(exc: BaseException) -> list[str]:
    if isinstance(exc, PlaybookError):
        return exc.problems  # every problem, one line each
    if isinstance(exc, TerminateSignal):
        return [f"warpwizard: error: {stopped_by(exc.signum)}"]
    if isinstance(exc, KeyboardInterrupt):
        return ["warpwizard: error: interrupted"]
    message = str(exc)
    return [message if message.startswith("warpwizard") else f"warpwizard: error: {message}"]


OUTPUT_OPTIONS = ("record", "report", "report_dir", "output", "markdown")
# wizard.outputs.STDOUT (an output named '-' is stdout), spelled here: importing outputs loads pathlib, which
# --help and the light commands never need (tests/first_hour/test_startup_and_packaging.py holds them equal)
STDOUT = "-"


def _place_outputs(ctx: Context) -> None:
    """{host}, {rank}, {local_rank} and {pid} in any output path: each process of a job writes its own. The
    launcher's side (wizard.cluster) is loaded where an output path is given (``--json`` on stdout has none)."""
    given = [name for name in OUTPUT_OPTIONS if isinstance(getattr(ctx.args, name, None), str)]
    if not any(getattr(ctx.args, name) != STDOUT for name in given):
        return
    from wizard.cluster import placed

    for name in given:
        value = getattr(ctx.args, name)
        if value != STDOUT:
            setattr(ctx.args, name, placed(value, ctx.system.environ))


def _progress(ctx: Context) -> Any:
    """Progress on stderr for commands that take long (docs: README, Progress): at a terminal,
    unless --quiet, CI, NO_COLOR/--no-color, or --json with stdout captured; --progress forces it
    (plain lines without a terminal or with NO_COLOR). Sets ``ctx.system.progress``; None when off."""
    args, system = ctx.args, ctx.system
    long_work = args.command is None or COMMANDS[args.command].long  # None: no command, the triage at a terminal
    if not long_work or getattr(args, "quiet", False):
        return None
    terminal = system.isatty(system.stderr)
    plain = bool(args.no_color or system.environ.get("NO_COLOR"))
    captured = (getattr(args, "json", False) or getattr(args, "markdown", None) == STDOUT) and not system.isatty(
        system.stdout
    )
    if not getattr(args, "progress", False) and (not terminal or plain or "CI" in system.environ or captured):
        return None
    from wizard.ui.progress import TerminalProgress

    shown = TerminalProgress(ctx.console(stderr=True), system.clock, live=terminal and not plain)
    ctx.system = system.replace(progress=shown)
    return shown


def _check_playbook_dirs(ctx: Context) -> None:
    for d in ctx.args.playbook_dir:
        if not os.path.isdir(d or "."):  # Path(d).is_dir(): an empty name is the current directory
            raise UsageError(f"--playbook-dir {d}: no such directory")


_OUT_OF_MEMORY_LINE = (
    "out of memory (or a worker process was killed by the system, which it does when memory runs out); "
    "try --jobs 1, fewer files at once, or a machine with more memory"
)


def _out_of_memory(exc: BaseException) -> bool:
    """MemoryError here or in a worker, or a worker the system killed (BrokenProcessPool)."""
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(exc, (MemoryError, BrokenProcessPool))


def main(argv: list[str] | None = None, system: System | None = None) -> int:
    """The error boundary: domain errors become one line on stderr and an ExitStatus."""
    system = system or System()
    arguments = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in arguments
    stdout, stderr = _Stream(system.stdout), _Stream(system.stderr)
    arguments = run_values_joined(arguments)  # `warpwizard --answers FILE`: run's, as the README shows
    only = command_of(arguments)
    parser = build_parser(only)
    args: argparse.Namespace | None = None
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            args, given = parser.parse_known_args(arguments)  # --help and --version print through these
            if args.command is not None and args.command != only:  # command_of misread the line: the whole grammar
                parser = build_parser()
                args, given = parser.parse_known_args(arguments)
            if given and args.command is not None:  # an unknown option: one line, the command named where it
                _refuse(parser, args, arguments, given)  # follows the command's word
        ctx = Context(args, system, stdout, stderr, build_parser)
        _check_playbook_dirs(ctx)
        _place_outputs(ctx)
        shown = _progress(ctx)
        try:
            status = _run(ctx, parser, given)
        finally:
            if shown is not None:
                shown.close()  # erased before the error line or the exit
        stdout.flush()
        return int(status)
    except SystemExit as exc:  # --help / --version
        stdout.flush()
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    except (WizardError, KeyboardInterrupt) as exc:
        return _failed(args, stdout, stderr, _error_lines(exc), _status_of(exc), _terminal_width(system))
    except Exception as exc:
        if _out_of_memory(exc):  # documented (exit 8), not an internal error, with --debug too
            memory = f"warpwizard: error: {_OUT_OF_MEMORY_LINE}"
            return _failed(args, stdout, stderr, [memory], ExitStatus.OUT_OF_MEMORY)
        if debug:
            raise
        message = f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)"
        return _failed(args, stdout, stderr, [f"warpwizard: error: {message}"], ExitStatus.INTERNAL)


def _refuse(parser: argparse.ArgumentParser, args: argparse.Namespace, line: list[str], given: list[str]) -> None:
    """argparse's 'unrecognized arguments' for the words no grammar took: said by the grammar of the command the line
    chose where they follow the command's word (``trace inspect x --bogus``), else by the top level's (``--json
    trace inspect x``: the option is the command's, but typed before it)."""
    at = command_at(line)
    after = at is not None and all(word in line[at + 1 :] for word in given)
    (innermost(parser, args) if after else parser).error(f"unrecognized arguments: {' '.join(given)}")


def _run(ctx: Context, parser: argparse.ArgumentParser, given: list[str]) -> ExitStatus:
    """The command on the line (its module's ``run``), or the bare ``warpwizard``'s triage."""
    if ctx.args.command is None:
        from wizard.cli.commands import default

        return default.run(ctx, parser, given)
    status: ExitStatus = load(COMMANDS[ctx.args.command]).run(ctx)
    return status


def _failed(  # noqa: PLR0917 - the boundary's streams and what it says on them
    args: Any, stdout: _Stream, stderr: _Stream, lines: list[str], status: ExitStatus, width: int | None = None
) -> int:
    """The error's lines on stderr (broken between words at a terminal's ``width``); with ``--json``, when nothing
    reached stdout yet, also one JSON object naming the error and the exit code there (a script reading stdout
    never gets an empty document)."""
    for line in lines:
        stderr.write(_wrapped(visible(line), width) + "\n")
    if (getattr(args, "json", False) or getattr(args, "json_out", False)) and not stdout.written:
        from wizard.schemas import ERROR
        from wizard.serialize import dumps

        said = [line.removeprefix("warpwizard: error: ") for line in lines]
        document = {"schema": ERROR, "error": "\n".join(said), "exit_code": int(status), "exit": status.name.lower()}
        stdout.write(dumps(document) + "\n")
        stdout.flush()
    return int(status)


STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")
GC_YOUNG_THRESHOLD = 50_000  # the console script's first-generation threshold (entry, below)


def _on_stop_signal(signum: int, frame: Any) -> None:
    """The first stop signal unwinds the run like Ctrl-C; later ones are ignored, so the clean-up it
    starts (stop the workload's process group, remove temporary files, save the answers) finishes."""
    for name in STOP_SIGNALS:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    raise TerminateSignal(signum)


def install_signal_handlers() -> None:
    """SIGTERM, SIGHUP and SIGQUIT stop like Ctrl-C (workload killed, answers saved, exit 128+N)."""
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(number, _on_stop_signal)


def _numpy_with_one_blas_thread() -> None:
    """numpy imported with OpenBLAS's pool at one thread, where no other thread runs and the user set none; the
    variable removed once numpy is loaded, so no program this process starts inherits it (wizard/numpy_threads.py)."""
    import threading

    if "OPENBLAS_NUM_THREADS" in os.environ or threading.active_count() > 1:
        import numpy

        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # OpenBLAS reads it once, as the library loads
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def entry() -> None:
    """The console script."""
    from wizard import numpy_threads

    # The start-up makes some 40,000 objects that live to the exit (modules, classes, numpy's); at CPython's default
    # threshold (a collection every 700 new container objects) the collector walks them again and again as they
    # are made: 3% of a small inspection's instructions. Fewer, larger young collections: the same objects are
    # freed, and cyclic garbage waits for at most 50,000 new objects (a few MB) instead of 700.
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    numpy_threads.use(_numpy_with_one_blas_thread)
    install_signal_handlers()
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left: keep Python's own exit flush from complaining
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    # The interpreter's exit collects garbage over every object still alive (numpy's and every module's: 4% of a
    # small inspection's instructions). The run is over and its outputs closed: frozen, they are left to the exit.
    gc.freeze()
    sys.exit(code)
