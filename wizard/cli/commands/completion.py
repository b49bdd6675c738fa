"""``warpwizard completion SHELL``: a shell completion script, generated from the whole grammar by shtab
(wizard/cli/completion.py), so it never drifts from the options (installed with e.g.
``warpwizard completion bash > ~/.local/share/bash-completion/completions/warpwizard``)."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.errors import UsageError
from wizard.exit_status import ExitStatus

SHELLS = ("bash", "zsh", "fish", "tcsh", "powershell")


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    from wizard.cli.completion import NAME_KINDS

    comp: argparse.ArgumentParser = sub.add_parser("completion", help=kw["help"])
    comp.add_argument("shell", nargs="?", choices=SHELLS)
    comp.add_argument("--names", choices=NAME_KINDS, help=argparse.SUPPRESS)
    comp.add_argument("--playbook", help=argparse.SUPPRESS)  # --names nodes: only this playbook's (the line's)
    return comp


def run(ctx: Context) -> ExitStatus:
    from wizard.cli.completion import script
    from wizard.runs import completion_names

    if ctx.args.names:  # what the script asks while someone presses Tab: this installation's names
        names = completion_names(ctx.args.names, ctx.playbook_dirs, ctx.system.environ, playbook=ctx.args.playbook)
        ctx.write("".join(f"{name}\n" for name in names))
        return ExitStatus.OK
    if not ctx.args.shell:
        raise UsageError("warpwizard completion: name a shell: bash, zsh, fish, tcsh or powershell")
    ctx.write(script(ctx.grammar(), ctx.args.shell))
    return ExitStatus.OK
