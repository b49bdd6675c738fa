"""Everything outside the process that probes touch, in one injectable place.

Tests build an Environment with a fake NVML, a fixed clock or a recorded command output;
the CLI builds the real one. Probes never reach for os.environ, subprocess or pynvml
themselves.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wizard.runner import CommandResult, SubprocessRunner


class Clock(Protocol):
    def now(self) -> _dt.datetime: ...
    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()


class Runner(Protocol):
    def run(
        self, argv: Any, *, timeout: float, env: Any = None, cwd: str | None = None, log_path: Path | None = None
    ) -> CommandResult: ...


def load_pynvml() -> Any:
    """The NVML binding (package nvidia-ml-py, imported as pynvml), imported only when asked."""
    import pynvml

    return pynvml


@dataclass(slots=True)
class Workload:
    """The engineer's program: argv as given, with 'python' meaning the target interpreter."""

    argv: list[str]
    description: str

    @classmethod
    def parse(cls, text: str, python: str) -> Workload:
        argv = shlex.split(text)
        if not argv:
            raise ValueError("empty workload command")
        if argv[0] in ("python", "python3"):
            argv[0] = python
        elif argv[0].endswith(".py"):
            argv.insert(0, python)
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

    def child_env(self, **extra: str) -> dict[str, str]:
        env = dict(self.base_env)
        env.update(extra)
        return env
