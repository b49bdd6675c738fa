"""The same events read from each format: Kineto JSON, the same events as TrackEvent slices in a `.pftrace`
(converted as drisspg/transformer_nuggets converts them, wizard/testing/pftrace.py), gzipped or not, and as an
Nsight Systems SQLite export where one is given.

    python benchmarks/formats_read.py [--launches 20000] [--runs 3] [--nsys EXPORT.sqlite] [--markdown OUT.md]

Each file is inspected by `trace inspect --json --jobs 1` in its own process, --runs times, alternating; the
table shows medians of wall time, CPU time (user + system) and peak memory (maximum resident set, from wait4's
rusage). The traces are built with the project's trace builder (healthy launches of demo shapes, with their ops
and Python frames) in a temporary directory. Needs the `test` extra (Perfetto's Python package writes the
.pftrace).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wizard.testing.pftrace import convert  # noqa: E402
from wizard.testing.traces import TraceBuilder, demo_launches  # noqa: E402


def run(trace: Path) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one `trace inspect --json --jobs 1`."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "wizard", "trace", "inspect", "--json", "--jobs", "1", "--fail-on", "never", str(trace)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    return (
        time.perf_counter() - started,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
    )


def build(directory: Path, launches: int) -> list[Path]:
    b = TraceBuilder()
    shapes = demo_launches()
    for n in range(launches):
        b.add(shapes[n % len(shapes)])
    source = b.write(directory / "trace.json")
    proto = convert(json.loads(source.read_text()))
    (directory / "trace.pftrace").write_bytes(proto)
    (directory / "trace.pftrace.gz").write_bytes(gzip.compress(proto, 6))
    (directory / "trace.json.gz").write_bytes(gzip.compress(source.read_bytes(), 6))
    return [source, directory / "trace.json.gz", directory / "trace.pftrace", directory / "trace.pftrace.gz"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nsys", type=Path, help="an Nsight Systems SQLite export to time beside them")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the child that writes the files
    args = parser.parse_args()
    if args.build:
        build(args.build, args.launches)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        # Built in a child: a child forked from a process holding the traces would count its pages as its own
        # peak memory (ru_maxrss covers the time before exec)
        subprocess.run([sys.executable, __file__, "--build", tmp, "--launches", str(args.launches)], check=True)
        files = [Path(tmp) / n for n in ("trace.json", "trace.json.gz", "trace.pftrace", "trace.pftrace.gz")]
        if args.nsys:
            files.append(args.nsys)
        results: dict[Path, list[tuple[float, float, float, int]]] = {f: [] for f in files}
        for _ in range(args.runs):
            for f in files:
                results[f].append(run(f))
        rows = [
            "| file | size | wall s | CPU s | peak MB |",
            "|---|---|---|---|---|",
        ]
        for f, runs in results.items():
            assert all(r[3] == 0 for r in runs), f"{f}: exit {runs}"
            rows.append(
                f"| {f.name} | {f.stat().st_size / 1e6:.1f} MB | {statistics.median(r[0] for r in runs):.2f} | "
                f"{statistics.median(r[1] for r in runs):.2f} | {statistics.median(r[2] for r in runs):.0f} |"
            )
    table = "\n".join(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(f"{args.launches} launches, {args.runs} runs each, medians\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
