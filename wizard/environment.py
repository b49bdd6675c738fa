"""Everything outside the process that probes touch, in one injectable place.

Tests build an Environment with a fake NVML, a fixed clock or a recorded command output;
the CLI builds the real one. Probes never reach for os.environ, subprocess or pynvml
themselves.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.runner import SubprocessRunner
from wizard.system import Clock, Runner, SystemClock, load_pynvml


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


@dataclass
class Environment:
    clock: Clock = field(default_factory=SystemClock)
    runner: Runner = field(default_factory=SubprocessRunner)
    nvml_loader: Callable[[], Any] = load_pynvml
    which: Callable[[str], str | None] = shutil.which
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str = sys.executable
    report_dir: Path = field(default_factory=lambda: Path("warpwizard-report"))
    workload: Workload | None = None
    allow_commands: bool = False
    allow_sanitizer: bool = False
    compare_reports: list[str] = field(default_factory=list)
    compare_pythons: list[str] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)  # files this run wrote for later probes

    def child_env(self, **extra: str) -> dict[str, str]:
        env = dict(self.base_env)
        env.update(extra)
        return env
