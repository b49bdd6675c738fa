"""What the health check costs: `trace inspect --json` with every check on, beside the same command of a
checkout from before the health check (its reader kept less, and ran no health pass).

    python benchmarks/health_cost.py BIG.json [MINIFIED.json] --before DIR [--runs 3] [--markdown OUT.md]

DIR is a checkout of the commit before the health check (`git worktree add DIR 506439c`); both run with
this interpreter, each with its own source first on PYTHONPATH. Each command runs --runs times, alternating,
and the table shows medians of wall time, CPU time (user + system) and peak memory (the process's maximum
resident set, from wait4's rusage; with --jobs 1, the default here, there are no worker processes). On a
shared machine the CPU time is the steadier figure; `valgrind --tool=callgrind` counts instructions where
even that is too noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(source: Path, trace: Path, jobs: int) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one `trace inspect --json` from ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source.resolve())}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "wizard", "trace", "inspect", "--json", "--jobs", str(jobs), str(trace.resolve())],
        env=env,
        cwd=tempfile.gettempdir(),  # not a checkout: `python -m` puts the current directory before PYTHONPATH
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (its workers' included once reaped)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="a checkout from before the health check")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for trace in args.traces:
        results: dict[str, list[tuple[float, float, float, int]]] = {"before": [], "health": []}
        for _ in range(args.runs):
            for label, source in (("before", args.before), ("health", REPO)):
                results[label].append(run(source, trace, args.jobs))
        medians = {
            label: tuple(statistics.median(r[i] for r in runs) for i in range(3)) for label, runs in results.items()
        }
        for label in ("before", "health"):
            wall, cpu, peak = medians[label]
            ratio = "" if label == "before" else (
                f"{wall / medians['before'][0]:.2f}x / {cpu / medians['before'][1]:.2f}x / "
                f"{peak / medians['before'][2]:.2f}x"
            )  # fmt: skip
            codes = [r[3] for r in results[label]]
            rows.append(
                f"| {trace.name} ({trace.stat().st_size / 1e6:,.0f} MB) | {label} | {wall:.2f} | {cpu:.2f} | "
                f"{peak:,.0f} | {ratio} | {codes} |"
            )
    table = "\n".join(
        [
            f"{args.runs} runs each, alternating, medians; --jobs {args.jobs}; machine: {os.uname().machine}, "
            f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
            "",
            "| trace | build | wall (s) | CPU (s) | peak MB | health / before (wall / CPU / memory) | exit codes |",
            "|---|---|---:|---:|---:|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
