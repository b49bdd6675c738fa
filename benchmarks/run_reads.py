"""What a run's reads of its trace cost: the flagship's two trace probes and its HTML page, beside an older checkout.

    python benchmarks/run_reads.py BIG.json --before DIR [--runs 3] [--markdown OUT.md]

The run is ``warpwizard run`` of a two-node playbook written here, the flagship's ``trace.inspect`` and
``metrics.sanity`` with the flagship's parameters (``torch_validator`` off: PyTorch's own validator is a
process of its own, aside), with ``--report run.html``: before one inspection per run that read the file three
times (the inspection, metrics.sanity's read, the page's inspection; a fourth with PM counters), now once.
DIR is a checkout of the commit before (``git worktree add --detach DIR COMMIT``); both run with this
interpreter, each with its own source first on PYTHONPATH, alternating; the table gives medians of wall time,
CPU time and peak memory (the process's maximum resident set, from wait4's rusage; --jobs is 1 for every read).
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

PLAYBOOK = """\
id: two-reads
title: The flagship's trace probes
version: "1"
nodes:
  - id: inspect
    kind: probe
    probe: trace.inspect
    params:
      paths: "{trace}"
      jobs: 1
    next: metrics
  - id: metrics
    kind: probe
    probe: metrics.sanity
    params:
      trace: "{trace}"
    next: done
  - id: done
    kind: conclusion
    diagnosis: read
    summary: the trace was read
"""


def run(source: Path, playbook: Path, report: Path) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one run from ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "wizard", "run", str(playbook), "--report", str(report), "--defaults"],
        env=env,
        cwd=report.parent,  # not the checkout: `python -m` puts the current directory before PYTHONPATH
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="a checkout from before one inspection per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        playbook = Path(scratch) / "two-reads.yaml"
        playbook.write_text(PLAYBOOK.format(trace=args.trace.resolve()))
        results: dict[str, list[tuple[float, float, float, int]]] = {"before": [], "now": []}
        for _ in range(args.runs):
            for label, source in (("before", args.before), ("now", REPO)):
                results[label].append(run(source, playbook, Path(scratch) / "run.html"))
    medians = {label: tuple(statistics.median(r[i] for r in runs) for i in range(3)) for label, runs in results.items()}
    rows = []
    for label in ("before", "now"):
        wall, cpu, peak = medians[label]
        was = medians["before"]
        ratio = "" if label == "before" else f"{wall / was[0]:.2f}x / {cpu / was[1]:.2f}x / {peak / was[2]:.2f}x"
        codes = [r[3] for r in results[label]]
        size = args.trace.stat().st_size / 1e6
        name = f"{args.trace.name} ({size:,.0f} MB)"
        rows.append(f"| {name} | {label} | {wall:.2f} | {cpu:.2f} | {peak:,.0f} | {ratio} | {codes} |")
    table = "\n".join(
        [
            f"{args.runs} runs each, alternating, medians; machine: {os.uname().machine}, {os.cpu_count()} cores, "
            f"Python {sys.version.split()[0]}",
            "",
            "| trace | build | wall (s) | CPU (s) | peak MB | now / before (wall / CPU / memory) | exit codes |",
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
