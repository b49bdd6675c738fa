"""What probes may do and where they write (``Options``), declared once: the library takes it as a
value, and ``warpwizard run`` / ``probe`` build their options from its fields' metadata
(wizard/cli/parser.py). A light module: ``--help`` imports it and nothing heavy."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.errors import UsageError
from wizard.option_fields import check_fields, option

if TYPE_CHECKING:
    from wizard.environment import ProbeSettings
    from wizard.system import System

PathLike = str | os.PathLike[str]


@dataclass
class Options:
    """What probes may do and where they write: the command line's options, as one value.

    Declared once: each field's metadata is its command-line option (``wizard.option_fields.option``: flag,
    metavar, help, kind, bounds), and ``warpwizard run`` and ``warpwizard probe`` build their arguments from
    these fields (wizard/cli/parser.py), so an option is added here and nowhere else. ``workload``: your
    program (``"python train.py --steps 3"``). ``python``: the interpreter whose torch the probes
    use (default: this one). ``report_dir``: the workspace where probes write (default:
    ``WARPWIZARD_REPORT_DIR``, else a private one per run under the user's state directory; see
    wizard/workspace.py). ``allow_commands``: let playbooks and answers name programs to run.
    ``compare_reports``: JSON reports from other machines (``hardware.compare``).
    """

    workload: str | None = field(
        default=None, metadata=option('your program, e.g. "python train.py --steps 3"', metavar="CMD")
    )
    python: str | None = field(
        default=None, metadata=option("interpreter of the environment to probe (default: this one)", metavar="PATH")
    )
    report_dir: PathLike | None = field(
        default=None,
        metadata=option(
            "the workspace where probes write (default: a private one per run under your state directory; "
            "also: WARPWIZARD_REPORT_DIR)",
            metavar="DIR",
        ),
    )
    allow_commands: bool = field(
        default=False,
        metadata=option(
            "let the playbook and the answers file name programs to run (command.run, workloads)", kind=bool
        ),
    )
    allow_sanitizer: bool = field(default=False, metadata=option("let probes run compute-sanitizer (slow)", kind=bool))
    compare_reports: list[str] = field(
        default_factory=list,
        metadata=option(
            "JSON reports from other machines, for hardware.compare", metavar="REPORT.json", flag="--compare", kind=list
        ),
    )
    compare_pythons: list[str] = field(
        default_factory=list,
        metadata=option(
            "interpreters of other environments (other torch versions) to re-profile with",
            metavar="PATH",
            flag="--compare-python",
            kind=list,
        ),
    )

    def settings(self, system: System | None = None, *, spell: Callable[[str], str] = str) -> ProbeSettings:
        """Checked: a workload that is not a Python program is a UsageError naming what is accepted
        (``spell`` names the option as the caller knows it: ``--workload`` on a command line); a
        workspace that exists and is not private is an OutputFileError, before anything runs; a bounded option
        outside its declared bounds is a UsageError (``check_fields``, as for every option set)."""
        from wizard import workspace
        from wizard.environment import ProbeSettings, Workload  # a run's, not --help's
        from wizard.system import System

        opts = check_fields(self, spell=spell)
        system = system or System()
        report_dir = workspace.choose(opts.report_dir, system.environ, system.clock.now())
        workspace.check_early(report_dir)
        python = opts.python or sys.executable
        workload = None
        if opts.workload:
            try:
                workload = Workload.parse(opts.workload, python)
            except ValueError as exc:
                raise UsageError(f"{spell('workload')}: {exc}") from None
        return ProbeSettings(
            python=python,
            report_dir=report_dir,
            workload=workload,
            allow_commands=opts.allow_commands,
            allow_sanitizer=opts.allow_sanitizer,
            compare_reports=list(opts.compare_reports),
            compare_pythons=list(opts.compare_pythons),
        )
