"""``warpwizard graph PLAYBOOK``: the decision tree as Mermaid or Graphviz dot."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context, load_playbook
from wizard.exit_status import ExitStatus

COMPLETES = {"playbook": "playbooks"}


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    graph: argparse.ArgumentParser = sub.add_parser("graph", help=kw["help"])
    graph.add_argument("playbook")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    return graph


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import playbook_graph

    ctx.write(playbook_graph(load_playbook(ctx, ctx.args.playbook), ctx.args.format))
    return ExitStatus.OK
