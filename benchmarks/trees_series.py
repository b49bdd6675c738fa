"""``trace inspect --json`` of several source trees on the same files, interleaved: a change's before and after beside
506439c in one series (speed_series.py's harness: CPU from wait4, medians of per-round ratios, lowest-highest).

    python benchmarks/trees_series.py FILE [FILE ...] --tree before=/tmp/before --tree after=. \
        [--tree 506439c=/tmp/ww-506439c] [--rounds 3] [--jobs 1] [--work /tmp/ww-speed-bench]

Each tree runs ``python -m wizard trace inspect --json FILE`` with PYTHONPATH on it (a tree: a checkout or a
``git archive`` of one); the first tree is the one the others are divided by. Byte code is cached first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed_series import _env, inspect_argv, median, ratio, series


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--tree", action="append", required=True, help="LABEL=PATH, in order; the first is the base")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", help="--jobs for every run (default: the command's own)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ww-speed-bench")
    args = ap.parse_args()
    trees = [(label, Path(path).resolve()) for label, path in (t.split("=", 1) for t in args.tree)]
    extra = ("--jobs", args.jobs) if args.jobs else ()
    for trace in args.files:
        commands = [(label, inspect_argv(trace, *extra), _env(tree, args.work)) for label, tree in trees]
        for _, argv, env in commands:  # byte code cached first, as an installed package has it
            subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
        jobs = f", --jobs {args.jobs}" if args.jobs else ""
        print(f"{trace} ({trace.stat().st_size / 1e6:,.0f} MB, {args.rounds} rounds{jobs}):", flush=True)
        r = series(commands, args.rounds, lambda line: print(line, flush=True))
        base = trees[0][0]
        for label, _ in trees:
            cpu = [s.cpu for s in r[label]]
            print(
                f"    {label}: CPU median {median(r[label], 'cpu'):.2f} s (spread {min(cpu):.2f}-{max(cpu):.2f}), "
                f"wall {median(r[label], 'wall'):.2f} s, largest {median(r[label], 'largest_mb'):.0f} MB"
                + (f"; / {base}: CPU {ratio(r[label], r[base], 'cpu')}" if label != base else ""),
                flush=True,
            )
        for label, _ in trees[1:]:
            for other, _ in trees[1:]:
                if other != label:
                    print(f"    {label} / {other}: CPU {ratio(r[label], r[other], 'cpu')}", flush=True)


if __name__ == "__main__":
    main()
