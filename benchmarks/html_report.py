"""Time the HTML report against `trace inspect --json` on the same trace, and weigh the page.

    python benchmarks/html_report.py BIG.json [--runs 3] [--markdown OUT.md]

The goal (issue 18): the page for a 1 GB trace in at most 10% more time than --json, under 5 MB. Both
commands are whole processes of the installed CLI with stdout to /dev/null; medians of --runs.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    cli = [sys.executable, "-m", "wizard", "trace", "inspect", str(args.trace)]
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "page.html"
        json_s, html_s = [], []
        for _ in range(args.runs):  # interleaved, so a warm page cache favours neither
            json_s.append(timed([*cli, "--json"]))
            html_s.append(timed([*cli, "--report", str(page), "--force"]))
        size = page.stat().st_size
    j, h = statistics.median(json_s), statistics.median(html_s)
    lines = [
        f"trace: {args.trace} ({args.trace.stat().st_size / 1e9:.2f} GB), {args.runs} runs, medians",
        "",
        "| command | wall time | vs --json |",
        "|---|---|---|",
        f"| trace inspect --json | {j:.2f} s | 1.00x |",
        f"| trace inspect --report page.html | {h:.2f} s | {h / j:.2f}x |",
        "",
        f"page: {size / 1e6:.2f} MB",
    ]
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
