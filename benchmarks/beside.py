"""What health_cost.py and run_reads.py share: one command of each checkout measured as a whole process, and the
table of medians with each build's ratio to the one before."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

Sample = tuple[float, float, float, int]  # wall s, CPU s (user + system), peak MB, exit code


def measure(source: Path, argv: Sequence[str], cwd: Path | None = None) -> Sample:
    """``python -m wizard ARGV`` from ``source``, run from a directory that is no checkout (``python -m`` puts
    the current directory before PYTHONPATH); its own rusage from wait4."""
    env = {**os.environ, "PYTHONPATH": str(source.resolve())}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "wizard", *argv],
        env=env,
        cwd=cwd or tempfile.gettempdir(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (its workers' included once reaped)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def rows(name: str, results: Mapping[str, Sequence[Sample]]) -> list[str]:
    """A table row per build (the first is the one the others are divided by): medians, ratios, exit codes."""
    medians = {label: [statistics.median(r[i] for r in runs) for i in range(3)] for label, runs in results.items()}
    was = next(iter(medians.values()))
    out = []
    for n, (label, (wall, cpu, peak)) in enumerate(medians.items()):
        ratio = "" if n == 0 else f"{wall / was[0]:.2f}x / {cpu / was[1]:.2f}x / {peak / was[2]:.2f}x"
        codes = [r[3] for r in results[label]]
        out.append(f"| {name} | {label} | {wall:.2f} | {cpu:.2f} | {peak:,.0f} | {ratio} | {codes} |")
    return out


def table(runs: int, ratio: str, body: Sequence[str], how: str = "") -> str:
    return "\n".join(
        [
            f"{runs} runs each, alternating, medians{how}; machine: {os.uname().machine}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}",
            "",
            f"| trace | build | wall (s) | CPU (s) | peak MB | {ratio} (wall / CPU / memory) | exit codes |",
            "|---|---|---:|---:|---:|---|---|",
            *body,
        ]
    )
