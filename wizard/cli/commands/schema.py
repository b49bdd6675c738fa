"""``warpwizard schema``: the playbook JSON Schema, for editors."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.arguments import Sub
from wizard.cli.context import Context
from wizard.exit_status import ExitStatus


def add_parser(sub: Sub, **kw: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser("schema", help=kw["help"])
    return parser


def run(ctx: Context) -> ExitStatus:
    from wizard.runs import playbook_schema

    ctx.write(playbook_schema())
    return ExitStatus.OK
