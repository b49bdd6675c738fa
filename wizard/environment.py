"""What probes run with: the outside world and the user's settings, apart.

``System`` (wizard/system.py) holds the services: subprocesses, NVML, the clock, ``which``,
environment variables. ``ProbeSettings`` holds what the user asked for. Tests build an
Environment with a fake NVML, a fixed clock or a recorded command output; the CLI builds the
real one. Probes never reach for os.environ, subprocess or pynvml themselves.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from wizard.system import System


@dataclass(slots=True)
class Workload:
    """The engineer's program: argv as given, with 'python' meaning the target interpreter."""

    argv: list[str]
    description: str

    @classmethod
    def parse(cls, text: str, python: str) -> Workload:
        """``python SCRIPT.py ...``, ``python -m MODULE ...``, ``python -c CODE ...`` or ``SCRIPT.py ...``.

        The harness runs the program inside the target interpreter (under the profiler), so only
        Python programs can be workloads; anything else is refused here, with the reason.
        """
        argv = shlex.split(text)  # ValueError for an unclosed quote
        if not argv:
            raise ValueError("empty workload command")
        if argv[0] in ("python", "python3", python):
            argv[0] = python
        elif argv[0].endswith(".py"):
            argv.insert(0, python)
        else:
            raise ValueError(
                f"{argv[0]!r} is not a Python program: the workload runs inside warpwizard's harness in the target "
                "interpreter, so give it as 'python SCRIPT.py ARGS', 'python -m MODULE ARGS' or 'python -c CODE'"
            )
        if len(argv) < 2 or (argv[1] in ("-m", "-c") and len(argv) < 3):
            raise ValueError("name the script, -m MODULE or -c CODE after python")
        if argv[1].startswith("-") and argv[1] not in ("-m", "-c"):
            raise ValueError(f"interpreter option {argv[1]!r} is not supported; put the script, -m or -c first")
        return cls(argv, text)

    @property
    def script(self) -> str | None:
        """The Python script when the workload is 'python script.py ...'."""
        if len(self.argv) >= 2 and self.argv[1].endswith(".py"):
            return self.argv[1]
        return None


def _default_workspace() -> Path:
    """For settings built without one (tests, library callers): this process's own workspace."""
    import datetime as _dt
    import os

    from wizard.workspace import choose

    return choose(None, os.environ, _dt.datetime.now(_dt.timezone.utc))


@dataclass
class ProbeSettings:
    """What the user asked the probes for: the command line's options, nothing from a playbook."""

    python: str = sys.executable
    report_dir: Path = field(default_factory=_default_workspace)
    workload: Workload | None = None
    allow_commands: bool = False
    allow_sanitizer: bool = False
    compare_reports: list[str] = field(default_factory=list)
    compare_pythons: list[str] = field(default_factory=list)


_SYSTEM_FIELDS = set(System.FIELDS)
_SETTINGS_FIELDS = {f.name for f in fields(ProbeSettings)}


@dataclass
class Environment:
    """What a probe runs with: the outside world (``system``: subprocesses, NVML, clock, which,
    environment variables), the user's settings, and the files this run wrote for later probes."""

    system: System = field(default_factory=System)
    settings: ProbeSettings = field(default_factory=ProbeSettings)
    artifacts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, **values: Any) -> Environment:
        """An Environment from keyword values, each routed to the System or the settings it names
        (``Environment.of(report_dir=..., runner=fake)``): for tests and library callers."""
        unknown = set(values) - _SYSTEM_FIELDS - _SETTINGS_FIELDS
        if unknown:
            raise TypeError(f"unknown Environment values: {', '.join(sorted(unknown))}")
        system = System(**{k: v for k, v in values.items() if k in _SYSTEM_FIELDS})
        settings = ProbeSettings(**{k: v for k, v in values.items() if k in _SETTINGS_FIELDS})
        return cls(system, settings)

    def child_env(self, **extra: str) -> dict[str, str]:
        """Environment variables for a program a probe starts."""
        env = dict(self.system.environ)
        env.update(extra)
        return env
