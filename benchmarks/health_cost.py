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
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside.py, run as a script
from beside import Sample, measure, rows  # noqa: E402
from beside import table as render  # noqa: E402


def run(source: Path, trace: Path, jobs: int) -> Sample:
    """One `trace inspect --json` from ``source``."""
    return measure(source, ["trace", "inspect", "--json", "--jobs", str(jobs), str(trace.resolve())])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="a checkout from before the health check")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    body = []
    for trace in args.traces:
        results: dict[str, list[Sample]] = {"before": [], "health": []}
        for _ in range(args.runs):
            for label, source in (("before", args.before), ("health", REPO)):
                results[label].append(run(source, trace, args.jobs))
        body += rows(f"{trace.name} ({trace.stat().st_size / 1e6:,.0f} MB)", results)
    table = render(args.runs, "health / before", body, f"; --jobs {args.jobs}")
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
