"""The command line's grammar: one function per command group; ``run`` and ``probe`` take their
probe options from ``wizard.options.Options``' declaration. Importing this loads argparse only."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from wizard import __version__
from wizard.errors import UsageError
from wizard.exit_status import epilog
from wizard.schemas import TRACE_REPORT, TRANSCRIPT

if TYPE_CHECKING:
    from wizard.options import Options


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, our exit code
        raise UsageError(f"{self.prog}: {message} (see --help)")


EVERY = "*"  # build_parser's default: every command's arguments (completion scripts, the docs' tests)


def build_parser(only: str | None = EVERY) -> argparse.ArgumentParser:
    """The grammar. ``only``: the one command whose arguments are built (``command_of(argv)``); the others are
    named with their help and nothing more, so ``warpwizard --help`` builds the list of commands, not the
    hundred arguments under them (each costs argparse a formatter and gettext lookups)."""
    text = epilog()
    kw: dict[str, Any] = {"epilog": text, "formatter_class": argparse.RawDescriptionHelpFormatter}
    p = _Parser(
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
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    chosen = sub if only == EVERY else _Only(sub, only)

    _add_run(chosen, kw)
    _add_probe(chosen, kw)
    _add_catalogue_commands(chosen)
    _add_trace(chosen, kw)
    _add_machine_commands(chosen)
    return p


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


class _Unbuilt:
    """A command's parser that is not being built: every declaration on it is dropped."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _Only:
    """The subcommands' action, building only one command's arguments: the others are added (so ``--help``
    lists them and argparse knows the names) with an empty parser."""

    def __init__(self, sub: Any, only: str | None) -> None:
        self.sub, self.only = sub, only

    def add_parser(self, name: str, **kw: Any) -> Any:
        parser = self.sub.add_parser(name, **kw)
        return parser if name == self.only else _Unbuilt()


_Sub = Any  # argparse's _SubParsersAction, private in typeshed


def _add_report(parser: argparse.ArgumentParser) -> None:
    """--report FILE, the same on every command that writes one (wizard.report.registry picks the format)."""
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write a report, its format by suffix: .html (one page with plots; needs warpwizard[html]), .md or .json",
    )


def _add_progress(parser: argparse.ArgumentParser) -> None:
    """--quiet / --progress, the same on every command that may take long (docs: README, Progress)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no progress bars or live lines on stderr")
    group.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr even without a terminal, under CI or with NO_COLOR (plain lines for a log)",
    )


def _add_run(sub: _Sub, kw: dict[str, Any]) -> None:
    """``run``'s arguments: the playbook, then one per command-line field of ``wizard.run_request.RunRequest``
    (declared there and nowhere else), then the probes' options (``Options``')."""
    run = sub.add_parser("run", help="walk a playbook to a diagnosis", **kw)
    if isinstance(run, _Unbuilt):
        return
    from wizard.run_request import command_line_fields, flag_of

    run.add_argument("playbook", help="playbook name (see 'list') or path to a .yaml file")
    groups: dict[str, Any] = {}
    for spec in command_line_fields():
        meta = spec.metadata
        if meta.get("shared") == "report":
            _add_report(run)
            continue
        kind = dict(meta["kind"])
        group = kind.pop("group", None)
        if group and group not in groups:
            groups[group] = run.add_mutually_exclusive_group()
        if meta["metavar"]:
            kind["metavar"] = meta["metavar"]
        (groups[group] if group else run).add_argument(flag_of(spec.name), dest=spec.name, help=meta["help"], **kind)
    _add_probe_options(run)
    _add_progress(run)


def _add_probe(sub: _Sub, kw: dict[str, Any]) -> None:
    probe = sub.add_parser(
        "probe",
        help="run one probe (see 'probes'), e.g. on every node of a cluster; 'compare' merges the reports",
        **kw,
    )
    probe.add_argument("name", help="a registered probe, e.g. trace.inspect, profiler.reprofile, op.isolate")
    probe.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="one of its parameters")
    probe.add_argument("--json", action="store_true", help=f"print the report (schema {TRANSCRIPT})")
    probe.add_argument(
        "--output",
        metavar="FILE",
        help="write the JSON report there; {host}, {rank} and {local_rank} are filled in from the launcher "
        "(SLURM, torchrun, Open MPI)",
    )
    probe.add_argument("--force", action="store_true", help="replace an --output file that exists")
    probe.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="for each program it starts")
    probe.add_argument(
        "--device-from-rank",
        action="store_true",
        help="run on the GPU of this process's local rank (CUDA_VISIBLE_DEVICES=LOCAL_RANK): one report per GPU",
    )
    _add_probe_options(probe)
    _add_progress(probe)


def _add_probe_options(parser: argparse.ArgumentParser) -> None:
    """What probes may do and where they write, the same for ``run`` and ``probe``: one argument per
    field of ``wizard.options.Options``, declared there (flag, metavar, help) and nowhere else."""
    if isinstance(parser, _Unbuilt):
        return
    import dataclasses

    from wizard.options import Options

    for spec in dataclasses.fields(Options):
        flag = spec.metadata.get("flag") or "--" + spec.name.replace("_", "-")
        annotation = str(spec.type)  # a string: the module uses postponed annotations
        kind: dict[str, Any] = {"metavar": spec.metadata["metavar"]}
        if annotation == "bool":
            kind = {"action": "store_true"}
        elif annotation.startswith("list"):
            kind = {"action": "append", "default": [], "metavar": spec.metadata["metavar"]}
        parser.add_argument(flag, dest=spec.name, help=spec.metadata["help"], **kind)


def probe_options(args: argparse.Namespace) -> Options:
    """The ``Options`` a command line asked for (the parsed arguments of ``_add_probe_options``)."""
    import dataclasses

    from wizard.options import Options

    return Options(**{spec.name: getattr(args, spec.name) for spec in dataclasses.fields(Options)})


def _add_catalogue_commands(sub: _Sub) -> None:
    """Commands over the playbooks and probes found: list, validate, graph, explain, probes, schema."""
    sub.add_parser("list", help="list the playbooks found")
    val = sub.add_parser("validate", help="check playbooks (files, names or directories) and report every problem")
    val.add_argument("paths", nargs="+", metavar="PLAYBOOK")
    graph = sub.add_parser("graph", help="the decision tree as Mermaid or Graphviz dot")
    graph.add_argument("playbook")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    exp = sub.add_parser("explain", help="the whole tree in words, for onboarding")
    exp.add_argument("playbook")
    probes = sub.add_parser("probes", help="list the registered probes, their parameters and facts")
    probes.add_argument("name", nargs="?", help="one probe, shown in full (every parameter and fact)")
    probes.add_argument("--json", action="store_true", help="every probe (or the one named), whole")
    ans = sub.add_parser("answers", help="print a commented answers file to fill in, for --answers")
    ans.add_argument("playbook")
    sub.add_parser("schema", help="print the playbook JSON Schema (for editors)")
    ex = sub.add_parser("examples", help="list the shipped examples, or copy one out to try")
    ex.add_argument("name", nargs="?", help="the example to copy (see the list)")
    ex.add_argument("--to", metavar="DIR", help="where to copy it (default: ./NAME)")
    comp = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish, tcsh, powershell)")
    comp.add_argument("shell", nargs="?", choices=("bash", "zsh", "fish", "tcsh", "powershell"))
    comp.add_argument("--names", choices=("playbooks", "probes", "nodes", "examples"), help=argparse.SUPPRESS)
    comp.add_argument("--playbook", help=argparse.SUPPRESS)  # --names nodes: only this playbook's (the line's)


FAIL_ON = ("info", "warning", "error", "never")


def _add_trace(sub: _Sub, kw: dict[str, Any]) -> None:
    trace = sub.add_parser("trace", help="inspect or fix profiler traces")
    tsub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=_Parser)
    ins = tsub.add_parser(
        "inspect",
        help="check a trace's health and explain every impossible kernel metric",
        description="Checks a trace's health (every way a profiler trace is known to lie: kernels missing or "
        "hidden, impossible durations or metrics, CUDA graphs, rank skew) and recomputes every kernel's blocks/warps "
        "per SM and occupancy, naming each wrong value's cause.",
        **kw,
    )
    ins.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="traces (Kineto or Cuspy JSON, .json.gz, .pftrace[.gz], nsys .sqlite) or per-rank directories",
    )
    ins.add_argument("--json", action="store_true", help=f"machine-readable (schema {TRACE_REPORT})")
    ins.add_argument("--markdown", metavar="FILE", help="write Markdown for a bug report ('-': to stdout, alone)")
    _add_report(ins)
    ins.add_argument("--force", action="store_true", help="replace a --markdown or --report file that exists")
    ins.add_argument("--all", action="store_true", help="also list correct-by-design kernels (F)")
    ins.add_argument("--verbose", "-v", action="store_true", help="every health check, with what it means and examples")
    ins.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="warning",
        metavar="LEVEL",
        help="exit 1 when a health check is at LEVEL or worse: info, warning (default), error, or never",
    )
    _add_progress(ins)
    _add_inspect_options(ins)
    fix = tsub.add_parser("fix", help="write a copy of a trace with true values", **kw)
    fix.add_argument("input")
    fix.add_argument("output")
    fix.add_argument("--force", action="store_true", help="replace an output file that exists")
    _add_progress(fix)
    fix.add_argument(
        "--split-overlaps",
        action="store_true",
        help="move the kernels Perfetto cannot nest on their stream's row to extra rows, each with its own launch "
        "arrow, so Perfetto shows them all",
    )


def _add_inspect_options(parser: argparse.ArgumentParser) -> None:
    """What ``trace inspect`` asks of the inspection: one argument per field of
    ``wizard.inspect_options.InspectOptions`` that carries help, declared there (help, metavar, type) and nowhere
    else; the flag is the name with dashes."""
    if isinstance(parser, _Unbuilt):
        return  # another command is on the line: the declaration's module (and dataclasses) stays unloaded
    from wizard.inspect_options import command_line_fields, flag_of

    for spec in command_line_fields():
        meta = spec.metadata
        parser.add_argument(
            flag_of(spec.name), dest=spec.name, default=spec.default, help=meta["help"], metavar=meta["metavar"],
            **meta["kind"],
        )  # fmt: skip


def _add_machine_commands(sub: _Sub) -> None:
    """Commands about this machine and others: compare, env."""
    cmp_ = sub.add_parser("compare", help="compare JSON reports from several machines")
    cmp_.add_argument("reports", nargs="+", metavar="REPORT.json")
    cmp_.add_argument("--json", action="store_true")
    diffp = sub.add_parser(
        "diff",
        help="two profiles of one workload side by side: comparable first, then what changed",
        description="Compare two profiles (traces in any format, rank directories, or `trace inspect --json` "
        "reports): whether they can be compared (devices, ranks, steps, graphs, versions, capture options, health, "
        "shared kernels), then which kernels changed beyond --threshold and their noise.",
    )
    diffp.add_argument("before", metavar="BEFORE")
    diffp.add_argument("after", metavar="AFTER")
    diffp.add_argument(
        "--threshold", type=float, default=10.0, metavar="PCT",
        help="a kernel's median duration this much slower (and beyond its noise) is a regression, exit 1 (default 10)",
    )  # fmt: skip
    diffp.add_argument("--json", action="store_true", help="the comparison as JSON (schema warpwizard.diff/1)")
    diffp.add_argument("--markdown", metavar="FILE", help="also write a short Markdown summary (a CI job summary)")
    diffp.add_argument("--jobs", type=int, default=None, metavar="N", help="processes for reading traces")
    envp = sub.add_parser("env", help="versions, GPUs and profilers available here")
    envp.add_argument("--python", metavar="PATH")
    envp.add_argument("--json", action="store_true")
