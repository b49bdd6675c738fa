"""The dry run: the path the answers take as far as they decide it, every probe and program it would run, across
the playbooks it continues into. Nothing runs and nothing is written (``warpwizard run --dry-run``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wizard.api import PathLike
from wizard.playbook.model import Playbook
from wizard.probes.registry import catalog
from wizard.run_request import RunRequest
from wizard.runs.playbooks import playbook_loader
from wizard.runs.start import Notify, Spell, as_request, gather, keyword, quiet
from wizard.system import System

if TYPE_CHECKING:
    from wizard.engine.plan import Plan


def plan_playbook(
    playbook: Playbook | PathLike,
    request: RunRequest | Mapping[str, Any] | PathLike | None = None,
    *,
    system: System | None = None,
    notify: Notify = quiet,
    spell: Spell = keyword,
) -> Plan:
    """The Plan of a run of ``playbook`` with ``request`` (a RunRequest or the answers alone), gathered and checked
    as the run's (resume, sets, workload, defaults, allow_commands); its outputs and ``from_node`` play no part."""
    from wizard.engine.plan import plan_run

    asked = as_request(request, {}, spell)
    system = system or System()
    start = gather(playbook, asked, system, notify, spell)
    return plan_run(
        start.playbook,
        start.given,
        catalog(),
        defaults=asked.defaults,
        allow_commands=asked.options.allow_commands,
        load=playbook_loader(asked.playbook_dirs, system.environ),
    )
