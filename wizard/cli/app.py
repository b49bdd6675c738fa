"""The command line: parse, build the environment, call the library, render, exit.

This is the only module that knows about sys.exit and the one error boundary: every
domain error becomes one line on stderr and an ExitStatus. Heavy imports (rich,
questionary, torch, msgspec) happen inside the commands, so ``--help`` starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from wizard import __version__
from wizard.errors import (
    AnswersError,
    InputFileError,
    Interrupted,
    NoTerminalError,
    PlaybookError,
    PlaybookNotFound,
    ProbeInfrastructureError,
    UsageError,
    WizardError,
)
from wizard.exit_status import ExitStatus

EPILOG = """exit codes: 0 diagnosis reached / nothing impossible; 1 impossible values found (trace inspect);
2 usage; 3 invalid playbook (run, validate); 4 bad or missing answers, or a prompt with no terminal;
5 a probe could not run; 6 unreadable input file; 70 internal error; 130 interrupted (answers saved)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, our exit code
        raise UsageError(f"{self.prog}: {message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="warpwizard",
        description="Walks you from a negative 'warps per SM' (or inf, nan, 0%) "
        "in a PyTorch profiler trace to its cause.",
        epilog=EPILOG,
    )
    p.add_argument("--version", action="version", version=f"warpwizard {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    p.add_argument("--no-color", action="store_true", help="plain output (also: NO_COLOR=1)")
    p.add_argument(
        "--playbook-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="also look for playbooks here (also: WARPWIZARD_PLAYBOOK_PATH)",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="walk a playbook to a diagnosis", epilog=EPILOG)
    run.add_argument("playbook", help="playbook name (see 'list') or path to a .yaml file")
    run.add_argument("--answers", metavar="FILE", help="answers (YAML/JSON, '-' for stdin): no prompts")
    run.add_argument("--set", action="append", default=[], metavar="QUESTION=VALUE", help="answer one question")
    run.add_argument("--defaults", action="store_true", help="take each unanswered question's default (no prompts)")
    run.add_argument("--record", metavar="FILE", help="write the answers given, to replay with --answers")
    run.add_argument(
        "--json", action="store_true", help="print the transcript as JSON (schema warpwizard.transcript/1)"
    )
    run.add_argument("--report", metavar="FILE.md", help="write a Markdown report for a bug report")
    run.add_argument("--teach", action="store_true", help="explain every step and node as you go")
    run.add_argument("--workload", metavar="CMD", help='your program, e.g. "python train.py --steps 3"')
    run.add_argument("--python", metavar="PATH", help="interpreter of the environment to probe (default: this one)")
    run.add_argument(
        "--report-dir",
        metavar="DIR",
        default=os.environ.get("WARPWIZARD_REPORT_DIR", "warpwizard-report"),
        help="where probes write files (also: WARPWIZARD_REPORT_DIR)",
    )
    run.add_argument(
        "--compare-python",
        action="append",
        default=[],
        metavar="PATH",
        help="interpreters of other environments (other torch versions) to re-profile with",
    )
    run.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="REPORT.json",
        help="JSON reports from other machines, for hardware.compare",
    )
    run.add_argument("--allow-commands", action="store_true", help="let the playbook run commands (command.run)")
    run.add_argument("--allow-sanitizer", action="store_true", help="let probes run compute-sanitizer (slow)")

    sub.add_parser("list", help="list the playbooks found")
    val = sub.add_parser("validate", help="check playbooks and report every problem")
    val.add_argument("paths", nargs="+", metavar="PLAYBOOK")
    graph = sub.add_parser("graph", help="the decision tree as Mermaid or Graphviz dot")
    graph.add_argument("playbook")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    exp = sub.add_parser("explain", help="the whole tree in words, for onboarding")
    exp.add_argument("playbook")
    sub.add_parser("probes", help="list the registered probes, their parameters and facts")
    sub.add_parser("schema", help="print the playbook JSON Schema (for editors)")

    trace = sub.add_parser("trace", help="inspect or fix profiler traces")
    tsub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=_Parser)
    ins = tsub.add_parser("inspect", help="explain every impossible kernel metric in traces", epilog=EPILOG)
    ins.add_argument("paths", nargs="+", metavar="PATH", help=".json/.json.gz traces or per-rank directories")
    ins.add_argument("--json", action="store_true", help="machine-readable (schema warpwizard.trace-report/1)")
    ins.add_argument("--markdown", metavar="FILE", help="write Markdown for a bug report ('-' for stdout)")
    ins.add_argument("--all", action="store_true", help="also list correct-by-design kernels (F)")
    ins.add_argument("--jobs", type=int, default=None, help="parallel processes for several files")
    ins.add_argument(
        "--sms",
        type=int,
        default=None,
        metavar="N",
        help="SM count of the GPU, for traces without deviceProperties (PyTorch 1.8): 80 for a V100, "
        "68 for an RTX 2080 Ti, 108 for an A100, 132 for an H100",
    )
    fix = tsub.add_parser("fix", help="write a copy of a trace with true values")
    fix.add_argument("input")
    fix.add_argument("output")

    cmp_ = sub.add_parser("compare", help="compare JSON reports from several machines")
    cmp_.add_argument("reports", nargs="+", metavar="REPORT.json")
    cmp_.add_argument("--json", action="store_true")
    envp = sub.add_parser("env", help="versions, GPUs and profilers available here")
    envp.add_argument("--python", metavar="PATH")
    envp.add_argument("--json", action="store_true")
    return p


def _console(args: argparse.Namespace, stderr: bool = False) -> Any:
    from rich.console import Console

    no_color = args.no_color or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False, soft_wrap=False, emoji=False)


def _probes() -> Any:
    from wizard.probes.registry import builtin_probes

    return builtin_probes()


def _load(args: argparse.Namespace, name: str) -> Any:
    from wizard.playbook.discovery import load
    from wizard.probes.registry import catalog

    return load(name, catalog(_probes()), args.playbook_dir)


# -- commands ------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace, playbook_name: str | None = None) -> ExitStatus:
    from wizard.cli.run import RunOptions, run_playbook

    options = RunOptions(
        playbook=playbook_name or args.playbook,
        answers_file=args.answers,
        sets=args.set,
        defaults=args.defaults,
        record=args.record,
        json_out=args.json,
        report=args.report,
        teach=args.teach,
        workload=args.workload,
        python=args.python,
        report_dir=args.report_dir,
        compare=args.compare,
        allow_commands=args.allow_commands,
        allow_sanitizer=args.allow_sanitizer,
        compare_pythons=args.compare_python,
        playbook_dirs=args.playbook_dir,
    )
    return run_playbook(options, _console(args, stderr=args.json), _console(args))


def cmd_list(args: argparse.Namespace) -> ExitStatus:
    from rich.table import Table

    from wizard.playbook.discovery import list_playbooks
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    probes = catalog(_probes())
    table = Table(title="playbooks")
    for col in ("name", "title", "version", "steps", "from"):
        table.add_column(col)
    for found in list_playbooks(args.playbook_dir):
        try:
            pb = load_playbook(found.path, probes)
            table.add_row(found.name, pb.title, pb.version, str(len(pb.steps)), found.origin)
        except PlaybookError as exc:
            table.add_row(found.name, f"[red]invalid: {exc}[/]", "", "", found.origin)
    _console(args).print(table)
    return ExitStatus.OK


def cmd_validate(args: argparse.Namespace) -> ExitStatus:
    from wizard.playbook.discovery import resolve
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    probes = catalog(_probes())
    bad = 0
    for name in args.paths:
        try:
            pb = load_playbook(resolve(name, args.playbook_dir), probes)
        except (PlaybookError, PlaybookNotFound) as exc:
            bad += 1
            problems = exc.problems if isinstance(exc, PlaybookError) else [str(exc)]
            for problem in problems:
                print(problem)
            continue
        print(f"{pb.path}: ok ({len(pb.nodes)} nodes, {len(pb.steps)} steps)")
    return ExitStatus.INVALID_PLAYBOOK if bad else ExitStatus.OK


def cmd_graph(args: argparse.Namespace) -> ExitStatus:
    from wizard.playbook.graph import dot, mermaid

    pb = _load(args, args.playbook)
    sys.stdout.write(mermaid(pb) if args.format == "mermaid" else dot(pb))
    return ExitStatus.OK


def cmd_explain(args: argparse.Namespace) -> ExitStatus:
    from wizard.playbook.graph import explain

    text = explain(_load(args, args.playbook))
    if sys.stdout.isatty():
        from rich.markdown import Markdown

        _console(args).print(Markdown(text))
    else:
        sys.stdout.write(text)
    return ExitStatus.OK


def cmd_probes(args: argparse.Namespace) -> ExitStatus:
    from rich.table import Table

    from wizard.probes.registry import catalog

    table = Table(title="registered probes", show_lines=True)
    for col in ("probe", "what it does", "parameters", "facts"):
        table.add_column(col)
    for info in catalog(_probes()).values():
        params = "\n".join(f"{p.name}: {p.type}{' (required)' if p.required else ''}" for p in info.params)
        facts = ", ".join(f.name for f in info.facts)
        table.add_row(info.name, info.summary, params, facts)
    _console(args).print(table)
    return ExitStatus.OK


def cmd_schema(args: argparse.Namespace) -> ExitStatus:
    from wizard.playbook.schema import SCHEMA_PATH

    sys.stdout.write(SCHEMA_PATH.read_text(encoding="utf-8"))
    return ExitStatus.OK


def cmd_trace(args: argparse.Namespace) -> ExitStatus:
    if args.trace_command == "fix":
        from wizard.trace.fix import fix_trace

        summary = fix_trace(args.input, args.output)
        mechanisms = ", ".join(f"{m}: {n}" for m, n in summary.mechanisms.items()) or "none"
        print(
            f"wrote {summary.output}: corrected {summary.corrected} of {summary.kernels} kernels "
            f"(mechanisms {mechanisms}); originals kept under args['warpwizard original']"
        )
        if summary.uncorrectable:
            print(f"{summary.uncorrectable} kernel(s) could not be corrected (the trace lacks their device's SM count)")
        return ExitStatus.OK
    if args.trace_command != "inspect":
        raise UsageError("warpwizard trace: choose an action: inspect or fix (see --help)")
    from wizard.trace.inspect import inspect_paths

    if args.sms is not None and args.sms <= 0:
        raise UsageError(f"warpwizard trace inspect: --sms must be a positive number of SMs, not {args.sms}")
    inspection = inspect_paths(args.paths, args.jobs, args.sms)
    if args.json:
        from wizard.report.trace_json import inspection_to_dict

        print(json.dumps(inspection_to_dict(inspection), indent=1, default=str))
    else:
        from wizard.ui.render import inspection_view

        _console(args).print(inspection_view(inspection, show_all=args.all))
    if args.markdown:
        from wizard.report.markdown import inspection_markdown

        text = inspection_markdown(inspection)
        if args.markdown == "-":
            sys.stdout.write(text)
        else:
            Path(args.markdown).write_text(text, encoding="utf-8")
    return ExitStatus.FINDINGS if inspection.impossible else ExitStatus.OK


def cmd_compare(args: argparse.Namespace) -> ExitStatus:
    from wizard.compare import compare, load_report

    result = compare([load_report(r) for r in args.reports])
    if args.json:
        from dataclasses import asdict

        machines = [asdict(m) for m in result.machines]
        summary = {"machines": machines, "verdict": result.verdict, "hardware_specific": result.hardware_specific}
        print(json.dumps(summary, indent=1))
        return ExitStatus.OK
    from rich.table import Table

    table = Table(title="reports")
    for col in ("machine", "torch", "driver", "result"):
        table.add_column(col)
    for m in result.machines:
        verdict = (
            "unknown"
            if m.impossible is None
            else (f"[red]impossible values: {', '.join(m.mechanisms)}[/]" if m.impossible else "[green]clean[/]")
        )
        table.add_row(m.key, m.torch or "—", m.driver or "—", verdict)
    console = _console(args)
    console.print(table)
    console.print(f"[bold]{result.verdict}[/]")
    return ExitStatus.OK


def cmd_env(args: argparse.Namespace) -> ExitStatus:
    import tempfile

    from wizard.environment import Environment
    from wizard.probes.env import EnvProbe

    with tempfile.TemporaryDirectory() as tmp:
        env = Environment(report_dir=Path(tmp), python=args.python or sys.executable)
        result = EnvProbe().run(env, {})
    if args.json:
        print(json.dumps(result.facts, indent=1, default=str))
    else:
        console = _console(args)
        for line in result.evidence:
            console.print(line, markup=False)
    return ExitStatus.OK


def cmd_default(args: argparse.Namespace, parser: argparse.ArgumentParser) -> ExitStatus:
    """No command: pick a playbook (or the only one) and run it at the terminal."""
    if not sys.stdin.isatty():
        parser.print_help(sys.stderr)
        raise UsageError(
            "warpwizard: no command given and stdin is not a terminal; try 'warpwizard run PLAYBOOK --answers FILE'"
        )
    from wizard.playbook.discovery import list_playbooks

    found = list_playbooks(args.playbook_dir)
    if not found:
        raise UsageError("warpwizard: no playbooks found")
    name = found[0].name
    if len(found) > 1:
        import questionary

        name = questionary.select("Which playbook?", choices=[f.name for f in found]).unsafe_ask()
    run_args = parser.parse_args(["run", name])
    run_args.no_color, run_args.playbook_dir = args.no_color, args.playbook_dir
    return cmd_run(run_args, name)


COMMANDS = {
    "run": cmd_run,
    "list": cmd_list,
    "validate": cmd_validate,
    "graph": cmd_graph,
    "explain": cmd_explain,
    "probes": cmd_probes,
    "schema": cmd_schema,
    "trace": cmd_trace,
    "compare": cmd_compare,
    "env": cmd_env,
}


def _error(message: str) -> None:
    print(f"warpwizard: error: {message}" if not message.startswith("warpwizard") else message, file=sys.stderr)


# Domain error -> exit status; the first matching class wins (subclasses first).
ERROR_STATUS: tuple[tuple[type[BaseException], ExitStatus], ...] = (
    (Interrupted, ExitStatus.INTERRUPTED),
    (KeyboardInterrupt, ExitStatus.INTERRUPTED),
    (PlaybookError, ExitStatus.INVALID_PLAYBOOK),
    (AnswersError, ExitStatus.BAD_ANSWERS),
    (NoTerminalError, ExitStatus.BAD_ANSWERS),
    (ProbeInfrastructureError, ExitStatus.PROBE_FAILURE),
    (InputFileError, ExitStatus.INPUT_ERROR),
    (UsageError, ExitStatus.USAGE),
    (PlaybookNotFound, ExitStatus.USAGE),
    (WizardError, ExitStatus.PROBE_FAILURE),
)


def _report(exc: BaseException) -> None:
    if isinstance(exc, PlaybookError):
        for problem in exc.problems:  # every problem, one line each
            print(problem, file=sys.stderr)
    elif isinstance(exc, KeyboardInterrupt):
        _error("interrupted")
    else:
        _error(str(exc))


def main(argv: list[str] | None = None) -> int:
    """The error boundary: domain errors become one line on stderr and an ExitStatus."""
    parser = build_parser()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            return int(cmd_default(args, parser))
        return int(COMMANDS[args.command](args))
    except BrokenPipeError:
        return ExitStatus.OK
    except (WizardError, KeyboardInterrupt) as exc:
        _report(exc)
        return next(status for kind, status in ERROR_STATUS if isinstance(exc, kind))
    except Exception as exc:
        if debug:
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)")
        return ExitStatus.INTERNAL


def entry() -> None:
    sys.exit(main())
