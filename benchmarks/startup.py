"""Start-up time of `warpwizard --help` against a bare `python -c pass` (whole processes, median of N).

python benchmarks/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def median_ms(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    ww = shutil.which("warpwizard") or sys.executable
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("warpwizard --help", [ww, "--help"] if ww != sys.executable else [ww, "-m", "wizard", "--help"]),
        ("warpwizard --version", [ww, "--version"] if ww != sys.executable else [ww, "-m", "wizard", "--version"]),
        ("python -c 'import torch' (for scale)", [sys.executable, "-c", "import torch"]),
    ]
    print(f"| command | median of {runs} (ms) |\n|---|---:|")
    for label, argv in cases:
        print(f"| {label} | {median_ms(argv, runs):.0f} |")


if __name__ == "__main__":
    main()
