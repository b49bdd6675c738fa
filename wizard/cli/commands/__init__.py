"""The table of commands (pip's ``commands_dict`` is the model): name -> the module that declares the command's
grammar and its body, and the one line ``warpwizard --help`` lists it with. A new command is one module here and
one row below.

A command's module has ``add_parser(sub, **kw) -> ArgumentParser``, which adds its parser to ``sub`` and returns
it (``kw``: ``help``, the row's summary, and the exit-status ``epilog`` with its ``formatter_class``, which a
command shows by passing ``**kw`` on), and ``run(ctx) -> ExitStatus``; it may declare ``COMPLETES`` (argument
dest -> the names the shell completes there: wizard.cli.completion.NAME_KINDS). wizard/cli/parser.py builds the
grammar from this table, importing only the module of the command on the line (``wizard.cli.table.load``);
wizard/cli/app.py runs it. The table's order is the order ``--help`` lists them in. A command's module never
imports this package (it is imported from here): the bare ``warpwizard``'s triage is ``default.py``, no row.
"""

from __future__ import annotations

from wizard.cli.table import Command

COMMANDS: dict[str, Command] = {
    "run": Command("wizard.cli.commands.run", "walk a playbook to a diagnosis", long=True),
    "probe": Command(
        "wizard.cli.commands.probe",
        "run one probe (see 'probes'), e.g. on every node of a cluster; 'compare' merges the reports",
        long=True,
    ),
    "list": Command("wizard.cli.commands.list", "list the playbooks found"),
    "validate": Command(
        "wizard.cli.commands.validate", "check playbooks (files, names or directories) and report every problem"
    ),
    "graph": Command("wizard.cli.commands.graph", "the decision tree as Mermaid or Graphviz dot"),
    "explain": Command("wizard.cli.commands.explain", "the whole tree in words, for onboarding"),
    "probes": Command("wizard.cli.commands.probes", "list the registered probes, their parameters and facts"),
    "answers": Command("wizard.cli.commands.answers", "print a commented answers file to fill in, for --answers"),
    "schema": Command("wizard.cli.commands.schema", "print the playbook JSON Schema (for editors)"),
    "examples": Command("wizard.cli.commands.examples", "list the shipped examples, or copy one out to try"),
    "completion": Command(
        "wizard.cli.commands.completion", "print a shell completion script (bash, zsh, fish, tcsh, powershell)"
    ),
    "trace": Command("wizard.cli.commands.trace", "inspect or fix profiler traces", long=True),
    "compare": Command("wizard.cli.commands.compare", "compare JSON reports from several machines"),
    "diff": Command(
        "wizard.cli.commands.diff",
        "two profiles of one workload side by side: comparable first, then what changed",
        long=True,
    ),
    "env": Command("wizard.cli.commands.env", "versions, GPUs and profilers available here"),
}
