"""Hostile sizes: traces shaped to cost memory or output rather than to be big.

    python benchmarks/hostile_sizes.py [--workdir DIR] [--tiny 5000000] [--distinct 100000]

- ``tiny``: N minimal kernel events (``{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}``, 54 bytes
  each): memory per launch is what counts, not bytes per event.
- ``distinct``: N kernels with distinct names, each with an overflowing grid (mechanism A): one
  finding group each, which the JSON report used to list whole.

Each is inspected as a whole process (table, then ``--json``); the peak memory is the largest
resident set of one process of the tree (``getrusage(RUSAGE_CHILDREN)``), the time is wall time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

H100 = {
    "id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0,
    "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
    "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
    "sharedMemPerMultiprocessor": 233472, "numSms": 132, "sharedMemPerBlockOptin": 232448,
}  # fmt: skip


def tiny_trace(path: Path, n: int) -> Path:
    line = '{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1},\n'
    with open(path, "w") as fh:
        fh.write('{"deviceProperties": [' + json.dumps(H100) + '],\n"traceEvents": [\n')
        fh.write(line * (n - 1))
        fh.write(line.rstrip(",\n") + "\n]}\n")
    return path


def distinct_trace(path: Path, n: int) -> Path:
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder()
    for i in range(n):
        builder.add(KernelSpec(f"kernel_{i}<float, {i}>", (100000, 30000, 1), (256, 1, 1)))
    return builder.write(path)


_PROBE = (
    "import resource, subprocess, sys\n"
    "out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "print(len(out.stdout), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def measure(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak MB of the largest process of the tree, bytes written to stdout), from a
    fresh parent each time (a process's RUSAGE_CHILDREN peak never goes down)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    written, peak_kb = (int(v) for v in out.stdout.split())
    return elapsed, peak_kb // 1024, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--tiny", type=int, default=5_000_000)
    parser.add_argument("--distinct", type=int, default=100_000)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="warpwizard-hostile-"))
    cli = [sys.executable, "-m", "wizard"]
    print("| trace | file (MB) | command | wall (s) | peak MB (largest process) | stdout (MB) |")
    print("|---|---:|---|---:|---:|---:|")
    for name, make, n in (("tiny", tiny_trace, args.tiny), ("distinct", distinct_trace, args.distinct)):
        path = make(workdir / f"{name}.json", n)
        size = path.stat().st_size / 1e6
        for extra in ([], ["--json"]):
            wall, peak, written = measure([*cli, "trace", "inspect", str(path), *extra])
            command = "trace inspect " + " ".join(extra)
            print(
                f"| {name} ({n:,}) | {size:,.0f} | `{command.strip()}` | {wall:.2f} | {peak:,} | {written / 1e6:.1f} |"
            )


if __name__ == "__main__":
    main()
