"""Time `warpwizard trace inspect` against its peers on a big trace, as whole processes.

    python benchmarks/run_trace_benchmark.py LINES.json [MINIFIED.json INDENTED.json] [--runs 3]
        [--hta-python PATH] [--markdown OUT.md]

Peers: `cat` (reading the bytes), Python's `json.load`, and Holistic Trace Analysis
(`TraceAnalysis(trace_dir=...)`, PyPI holistictraceanalysis, run from its own venv because
it pulls pandas and friends). Each command runs --runs times; the table shows medians of
wall time and of peak memory, where memory is the peak of the summed resident set size
(VmRSS) of the whole process tree, sampled every 50 ms: worker processes count, and pages
they share with their parent after fork count twice, so it is an upper bound.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _tree(pid: int) -> list[int]:
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pids
    for child in children:
        pids += _tree(int(child))
    return pids


def _rss_kb(pid: int) -> int:
    """VmRSS: cheap to read (smaps_rollup's PSS walks page tables and slowed the measured run)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(argv: list[str], timeout: float) -> tuple[float, int, int]:
    """(wall seconds, peak tree PSS in MB, exit code)."""
    peak = 0
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, sum(_rss_kb(p) for p in _tree(proc.pid)))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = -9
    stop.set()
    sampler.join()
    return time.perf_counter() - started, peak // 1024, code


def _commands(
    trace: Path, ww: list[str], hta_python: str | None, hta_dir: Path, api: bool
) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = [
        ("cat (read the bytes)", ["cat", str(trace)]),
        ("python json.load", [sys.executable, "-c", f"import json; json.load(open({str(trace)!r}))"]),
        ("warpwizard --jobs 2", [*ww, "trace", "inspect", "--json", "--jobs", "2", str(trace)]),
        ("warpwizard --jobs 1", [*ww, "trace", "inspect", "--json", "--jobs", "1", str(trace)]),
    ]
    if api:  # the library with per-launch records: what a notebook pays for a DataFrame
        for keep in ("wrong", "all"):
            code = f"import wizard; wizard.inspect_traces({str(trace)!r}, launches={keep!r})"
            commands.append((f"wizard.inspect_traces(launches={keep!r})", [sys.executable, "-c", code]))
    if hta_python:
        (hta_dir / trace.name).symlink_to(trace)
        code = f"from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir={str(hta_dir)!r})"
        commands.append(("HTA TraceAnalysis(trace_dir=...)", [hta_python, "-c", code]))
    return commands


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", type=Path, nargs="+", help="one trace per layout (lines, minified, indented)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hta-python", help="interpreter with holistictraceanalysis installed")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--api", action="store_true", help="also time the Python API with per-launch records")
    args = ap.parse_args(argv)
    ww = [shutil.which("warpwizard") or sys.executable, *([] if shutil.which("warpwizard") else ["-m", "wizard"])]
    lines = [
        f"{args.runs} runs each, medians of wall time and of the process tree's peak memory; machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "",
        "| trace | command | wall time (s) | peak memory (MB) | vs json.load (time) | memory / file | exit codes |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    ours_by_trace: dict[str, float] = {}
    for trace in (t.resolve() for t in args.traces):
        size_mb = trace.stat().st_size / 1e6
        rows = []
        hta_dir = Path(tempfile.mkdtemp(prefix="hta-"))
        for label, command in _commands(trace, ww, args.hta_python, hta_dir, args.api):
            times, peaks, codes = [], [], []
            for _ in range(args.runs):
                wall, peak, code = measure(command, args.timeout)
                times.append(wall)
                peaks.append(peak)
                codes.append(code)
                print(f"{trace.name} | {label}: {wall:.2f} s, {peak} MB, exit {code}", flush=True)
            rows.append((label, statistics.median(times), int(statistics.median(peaks)), codes))
        json_load = next(t for label, t, _, _ in rows if label == "python json.load")
        ours_by_trace[trace.name] = next(t for label, t, _, _ in rows if label == "warpwizard --jobs 2")
        for label, wall, peak, codes in rows:
            versus = f"{wall / json_load:.2f}x" if label.startswith(("warpwizard", "wizard.", "HTA")) else ""
            lines.append(
                f"| {trace.name} ({size_mb:,.0f} MB) | {label} | {wall:.2f} | {peak:,} | {versus} | "
                f"{peak / size_mb:.2f} | {codes} |"
            )
    first = next(iter(ours_by_trace.values()))
    lines += [
        "",
        "warpwizard --jobs 2 against the first trace's layout: "
        + ", ".join(f"{name} {t / first:.2f}x" for name, t in ours_by_trace.items()),
    ]
    table = "\n".join(lines)
    print()
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
