"""The command line: parse, call the library, render, exit.

``main(argv, system)`` is the one error boundary: every domain error becomes one line on
stderr and an ExitStatus; anything else is an internal error whose traceback only ``--debug``
shows. All input and output goes through the ``System`` it is given, so tests run the whole
CLI in-process. Heavy imports (rich, questionary, msgspec) happen inside the commands, so
``--help`` starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, cast

from wizard.cli.parser import build_parser, command_of, probe_options
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

if TYPE_CHECKING:  # the library's types, for the type checker only: at run time the CLI loads none of them
    from wizard.engine.transcript import Transcript
    from wizard.options import Options
    from wizard.playbook.model import Playbook
    from wizard.probes.base import ProbeInfo


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

    def __init__(self, args: argparse.Namespace, system: System, stdout: _Stream, stderr: _Stream) -> None:
        self.args, self.system, self.stdout, self.stderr = args, system, stdout, stderr
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


def _catalog() -> dict[str, ProbeInfo]:
    from wizard.runs import list_probes

    return list_probes()


def _load(ctx: Context, name: str) -> Playbook:
    from wizard.runs import load_playbook

    return load_playbook(name, playbook_dirs=ctx.playbook_dirs, environ=ctx.system.environ)


def _probe_options(ctx: Context) -> Options:
    """The options of ``run`` and ``probe`` for probes, checked now (a workload that is not Python)."""
    options = probe_options(ctx.args)
    options.settings(ctx.system, spell=_option)
    return options


# -- commands ------------------------------------------------------------------------------
def cmd_run(ctx: Context, playbook_name: str | None = None) -> ExitStatus:
    from wizard.cli.run import RunOptions, run_command

    options = RunOptions.parsed(ctx.args, options=_probe_options(ctx), playbook_dirs=ctx.playbook_dirs)
    options.playbook = playbook_name or options.playbook
    return run_command(options, ctx.system, ctx.console(stderr=options.json_out), ctx.console(), ctx.stdout)


def cmd_probe(ctx: Context) -> ExitStatus:
    from wizard.cluster import device_for_rank, launcher_rank
    from wizard.runs import probe_params, run_inputs, run_probe

    args = ctx.args
    if args.timeout <= 0:
        raise UsageError(f"warpwizard probe: --timeout must be a positive number of seconds, not {args.timeout:g}")
    params = probe_params(args.name, args.param)
    options = _probe_options(ctx)
    system = ctx.system
    rank = launcher_rank(system.environ)
    if args.device_from_rank:
        device = device_for_rank(system.environ, rank.local_rank)
        system = system.replace(environ={**system.environ, "CUDA_VISIBLE_DEVICES": device})
    target = args.output  # its {host}/{rank}/... were filled in with every output path (_place_outputs)
    inputs = run_inputs(options, params.values())
    if target is not None:
        from wizard.outputs import check_output, make_parent

        make_parent(target, what="probe report")  # 'reports/{host}-{rank}.json' on every rank, no mkdir first
        check_output(target, inputs=inputs, force=args.force, what="probe report")
    from wizard.progress import task

    with task(system.progress, args.name, doing="running"):
        transcript = run_probe(args.name, params, options=options, timeout=args.timeout, system=system)
    _show_probe(ctx, transcript, target, inputs)
    status = transcript.entries[0].status
    return {"fail": ExitStatus.FINDINGS, "error": ExitStatus.PROBE_FAILURE}.get(status or "", ExitStatus.OK)


def _show_probe(ctx: Context, transcript: Transcript, target: str | None, inputs: list[str]) -> None:
    from wizard.serialize import dumps

    document = dumps(transcript.to_dict()) + "\n"
    if ctx.args.json:  # first: a report the file cannot hold (taken meanwhile, disk full) is not lost
        ctx.write(document)
        ctx.stdout.flush()
    if target is not None:
        from wizard.outputs import write_text

        write_text(target, document, inputs=inputs, force=ctx.args.force, what="probe report")
    if ctx.args.json:
        return
    from wizard.ui.render import probe_result_lines

    for line in probe_result_lines(transcript.entries[0], target):
        ctx.say(line)


def cmd_list(ctx: Context) -> ExitStatus:
    from wizard.runs import found_playbooks
    from wizard.ui.tables import playbooks_table

    found = found_playbooks(ctx.playbook_dirs, ctx.system.environ)
    rows = [(f.name, f.title, f.version, str(f.steps) if f.title else "", f.origin, f.problem) for f in found]
    ctx.console().print(playbooks_table(rows))
    for f in found:
        if f.shadowing:
            ctx.say(f"note: {f.shadowing}")
    for line in dict.fromkeys(line for f in found for line in f.fragment_shadowing):  # once, however many use it
        ctx.say(f"note: {line}")
    return ExitStatus.OK


def cmd_validate(ctx: Context) -> ExitStatus:
    from wizard.runs import check_playbooks
    from wizard.ui.render import program_use_lines

    checked = check_playbooks(ctx.args.paths, ctx.playbook_dirs, ctx.system.environ)
    for one in checked:
        for line in one.problems or [one.summary, *one.warnings, *program_use_lines(one.program_uses)]:
            ctx.say(line)
    return ExitStatus.INVALID_PLAYBOOK if any(one.problems for one in checked) else ExitStatus.OK


def cmd_graph(ctx: Context) -> ExitStatus:
    from wizard.runs import playbook_graph

    ctx.write(playbook_graph(_load(ctx, ctx.args.playbook), ctx.args.format))
    return ExitStatus.OK


def cmd_explain(ctx: Context) -> ExitStatus:
    from wizard.runs import explain_playbook

    text = explain_playbook(_load(ctx, ctx.args.playbook))
    if ctx.system.isatty(ctx.system.stdout):
        from wizard.ui.render import explain_view

        ctx.console().print(explain_view(text))
    else:
        ctx.write(text)
    return ExitStatus.OK


def cmd_answers(ctx: Context) -> ExitStatus:
    from wizard.runs import answers_file_template

    ctx.write(answers_file_template(_load(ctx, ctx.args.playbook), ctx.playbook_dirs, ctx.system.environ))
    return ExitStatus.OK


def cmd_probes(ctx: Context) -> ExitStatus:
    probes = _catalog()
    name = ctx.args.name
    if name is not None and name not in probes:
        raise UsageError(f"unknown probe {name!r}; registered: {', '.join(sorted(probes))}")
    chosen = {name: probes[name]} if name else probes
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps([info.to_dict() for info in chosen.values()]) + "\n")
    elif name:
        from wizard.ui.tables import probe_lines

        for line in probe_lines(probes[name]):
            ctx.say(line)
    else:
        from wizard.ui.tables import probes_table

        ctx.console().print(probes_table(probes))
    return ExitStatus.OK


def cmd_examples(ctx: Context) -> ExitStatus:
    from wizard.examples import copy_example, list_examples

    name = ctx.args.name
    if name is None:  # a header says what the columns are (two bare columns read as a list of pairs)
        ctx.say(f"{'EXAMPLE':<28} DIAGNOSIS IT REACHES (the playbook to run, where not negative-warps-per-sm)", hang=29)
        for example in list_examples():
            other = f"  (warpwizard run {example.playbook})" if example.playbook != "negative-warps-per-sm" else ""
            ctx.say(f"{example.name:<28} {example.diagnosis}{other}", hang=29)
        ctx.say("copy one out to try it: warpwizard examples NAME [--to DIR]")
        return ExitStatus.OK
    from pathlib import Path

    destination = Path(ctx.args.to or name)
    written = copy_example(name, destination)
    for path in written:
        ctx.write(f"wrote {path}\n")
    flag = " --allow-commands" if any(p.suffix == ".py" for p in written) else ""  # its answers name a workload
    playbook = next(e.playbook for e in list_examples() if e.name == name)
    ctx.write(f"try it: warpwizard run {playbook} --answers {destination / 'answers.yaml'}{flag}\n")
    return ExitStatus.OK


def cmd_completion(ctx: Context) -> ExitStatus:
    """Generated from this parser by shtab, so it never drifts from the options (installed with e.g.
    ``warpwizard completion bash > ~/.local/share/bash-completion/completions/warpwizard``)."""
    from wizard.cli.completion import script
    from wizard.runs import completion_names

    if ctx.args.names:  # what the script asks while someone presses Tab: this installation's names
        ctx.write(
            "".join(
                f"{name}\n"
                for name in completion_names(
                    ctx.args.names, ctx.playbook_dirs, ctx.system.environ, playbook=ctx.args.playbook
                )
            )
        )
        return ExitStatus.OK
    if not ctx.args.shell:
        raise UsageError("warpwizard completion: name a shell: bash, zsh, fish, tcsh or powershell")
    ctx.write(script(build_parser(), ctx.args.shell))
    return ExitStatus.OK


def cmd_schema(ctx: Context) -> ExitStatus:
    from wizard.runs import playbook_schema

    ctx.write(playbook_schema())
    return ExitStatus.OK


def cmd_trace(ctx: Context) -> ExitStatus:
    action = ctx.args.trace_command
    if action == "fix":
        return _trace_fix(ctx)
    if action == "inspect":
        return _trace_inspect(ctx)
    raise UsageError("warpwizard trace: choose an action: inspect or fix (see --help)")


def _trace_fix(ctx: Context) -> ExitStatus:
    from wizard.api import fix_trace
    from wizard.ui.render import fix_summary_lines, truncation_warning

    args = ctx.args
    summary = fix_trace(
        args.input,
        args.output,
        force=args.force,
        split_overlaps=args.split_overlaps,
        progress=ctx.system.progress,
    )
    for line in fix_summary_lines(summary):
        ctx.say(line)
    if summary.truncation is not None:
        ctx.stderr.write(visible(truncation_warning(args.input, summary.truncation.detail)) + "\n")
    return ExitStatus.OK


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _trace_inspect(ctx: Context) -> ExitStatus:
    from dataclasses import replace

    from wizard.api import check_options, inspect_traces
    from wizard.inspect_options import InspectOptions, flag_of
    from wizard.outputs import check_outputs, write_text

    args = ctx.args
    if args.report or args.markdown is not None:  # the renderers load only when they write something
        from wizard.report.registry import FORMATS, format_for
    options = check_options(InspectOptions.parsed(args), spell=flag_of)  # before anything is written
    files = [(args.report, format_for(args.report))] if args.report else []  # the format's extra checked now
    if args.markdown not in (None, "-"):
        files.append((args.markdown, FORMATS[".md"]))  # --markdown FILE: Markdown whatever its suffix
    options = replace(options, plots=any(chosen.needs_inspection for _, chosen in files))
    check_outputs([(path, chosen.name) for path, chosen in files], inputs=args.paths, force=args.force)
    inspection = inspect_traces(args.paths, options, progress=ctx.system.progress, spell=flag_of)
    if args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(inspection.to_dict()) + "\n")
    elif args.markdown != "-":  # '--markdown -' is the whole of stdout
        from wizard.runs import playbook_names
        from wizard.ui.render import health_view, inspection_view

        console = ctx.console()
        console.print(
            health_view(
                inspection, verbose=args.verbose, playbooks=playbook_names(ctx.playbook_dirs, ctx.system.environ)
            )
        )
        console.print(inspection_view(inspection, show_all=args.all))
    if args.markdown == "-":
        ctx.write(FORMATS[".md"].inspection(inspection))
    for path, chosen in files:
        write_text(path, chosen.inspection(inspection), inputs=args.paths, force=args.force, what=chosen.name)
    if args.report and not args.json and args.markdown != "-":
        ctx.stderr.write(visible(f"{files[0][1].name} written to {args.report}") + "\n")
    failing = args.fail_on != "never" and bool(inspection.problems(at_least=args.fail_on))
    return ExitStatus.FINDINGS if failing else ExitStatus.OK


def cmd_compare(ctx: Context) -> ExitStatus:
    from wizard.api import rank_skew_of
    from wizard.compare import compare, load_report

    result = compare([load_report(r) for r in ctx.args.reports])
    skew = rank_skew_of(result.machines)
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps({**result.to_dict(), "health": [skew.to_dict()] if skew else []}) + "\n")
        return ExitStatus.OK
    from wizard.ui.tables import comparison_table
    from wizard.untrusted import rich_text

    console = ctx.console()
    console.print(comparison_table(result))
    console.print(rich_text(result.verdict, "bold"))
    if skew is not None:
        console.print(rich_text(f"rank skew ({skew.status}): {skew.summary}", "bold"))
    return ExitStatus.OK


def cmd_diff(ctx: Context) -> ExitStatus:
    """Two profiles side by side: the comparability verdict first; changes only when they can be compared."""
    from wizard.diff import diff_profiles, markdown
    from wizard.outputs import check_outputs, write_text

    args = ctx.args
    inputs = [args.before, args.after]
    if args.markdown is not None:
        check_outputs([(args.markdown, "Markdown summary")], inputs=inputs, force=False)
    result = diff_profiles(args.before, args.after, threshold=args.threshold / 100, jobs=args.jobs)
    if args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(result.to_dict()) + "\n")
    else:
        from wizard.ui.tables import diff_view

        ctx.console().print(diff_view(result))
    if args.markdown is not None:
        write_text(args.markdown, markdown(result), inputs=inputs, what="Markdown summary")
    if result.verdict == "not comparable":
        return ExitStatus.NOT_COMPARABLE
    return ExitStatus.FINDINGS if result.regressions or result.profiler_bugs else ExitStatus.OK


def cmd_env(ctx: Context) -> ExitStatus:
    from wizard.runs import machine_facts

    result = machine_facts(ctx.system, ctx.args.python)
    if ctx.args.json:
        from wizard.serialize import dumps

        ctx.write(dumps(result.facts) + "\n")
    else:
        for line in result.evidence:
            ctx.say(line)
    return ExitStatus.OK


def cmd_default(ctx: Context, parser: argparse.ArgumentParser, given: Sequence[str] = ()) -> ExitStatus:
    """No command at a terminal: the triage, the front door (it asks what you have, checks the trace's
    health and continues into the playbook for what it finds); without a triage playbook on the search
    path, the list to pick from (``warpwizard list`` shows it too). ``given``: ``run``'s options typed
    without a command (``warpwizard --teach``), which the run takes as its own."""
    if given:
        parser.parse_args(["run", TRIAGE, *given])  # an option `run` does not know: its one-line error
    if not ctx.system.interactive:
        parser.print_help(cast(IO[str], ctx.stderr))
        raise UsageError(
            "warpwizard: no command given and stdin is not a terminal; try 'warpwizard run PLAYBOOK --answers FILE'"
        )
    from wizard.runs import found_playbooks
    from wizard.ui.prompts import choose_playbook

    found = found_playbooks(ctx.playbook_dirs, ctx.system.environ)
    if not found:
        raise UsageError("warpwizard: no playbooks found")
    triage = [f for f in found if f.name == TRIAGE and f.problem is None]
    name = TRIAGE if triage else choose_playbook(found, ctx.console())
    run_args = parser.parse_args(["run", name, *given])
    run_args.no_color, run_args.playbook_dir = ctx.args.no_color, ctx.args.playbook_dir
    ctx.args = run_args
    return cmd_run(ctx, name)


TRIAGE = "triage"  # the playbook `warpwizard` alone starts

COMMANDS: dict[str, Callable[[Context], ExitStatus]] = {
    "run": cmd_run,
    "probe": cmd_probe,
    "list": cmd_list,
    "validate": cmd_validate,
    "graph": cmd_graph,
    "explain": cmd_explain,
    "probes": cmd_probes,
    "answers": cmd_answers,
    "schema": cmd_schema,
    "completion": cmd_completion,
    "examples": cmd_examples,
    "trace": cmd_trace,
    "compare": cmd_compare,
    "diff": cmd_diff,
    "env": cmd_env,
}


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


def _place_outputs(ctx: Context) -> None:
    """{host}, {rank}, {local_rank} and {pid} in any output path: each process of a job writes its own."""
    from wizard.cluster import placed

    for name in OUTPUT_OPTIONS:
        value = getattr(ctx.args, name, None)
        if isinstance(value, str) and value != "-":
            setattr(ctx.args, name, placed(value, ctx.system.environ))


LONG_WORK = ("run", "probe", "trace", "diff", None)  # None: no command, a playbook chosen and run at the terminal


def _progress(ctx: Context) -> Any:
    """Progress on stderr for commands that take long (docs: README, Progress): at a terminal,
    unless --quiet, CI, NO_COLOR/--no-color, or --json with stdout captured; --progress forces it
    (plain lines without a terminal or with NO_COLOR). Sets ``ctx.system.progress``; None when off."""
    args, system = ctx.args, ctx.system
    if args.command not in LONG_WORK or getattr(args, "quiet", False):
        return None
    terminal = system.isatty(system.stderr)
    plain = bool(args.no_color or system.environ.get("NO_COLOR"))
    captured = (getattr(args, "json", False) or getattr(args, "markdown", None) == "-") and not system.isatty(
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
    only = command_of(arguments)
    parser = build_parser(only)
    args: argparse.Namespace | None = None
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            args, given = parser.parse_known_args(arguments)  # --help and --version print through these
            if args.command is not None and args.command != only:  # command_of misread the line: the whole grammar
                parser = build_parser()
                args, given = parser.parse_known_args(arguments)
            if given and args.command is not None:
                parser.parse_args(arguments)  # a command's unknown option: its own one-line error
        ctx = Context(args, system, stdout, stderr)
        _check_playbook_dirs(ctx)
        _place_outputs(ctx)
        shown = _progress(ctx)
        try:
            status = cmd_default(ctx, parser, given) if args.command is None else COMMANDS[args.command](ctx)
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


def entry() -> None:
    """The console script."""
    install_signal_handlers()
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left: keep Python's own exit flush from complaining
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)
