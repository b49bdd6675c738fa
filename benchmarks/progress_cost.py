"""What the progress bar costs: `warpwizard trace inspect` at a pseudo-terminal, with the bar and with
``--quiet``, as whole processes, runs alternated so the machine's load falls on both alike.

    python benchmarks/progress_cost.py BIG.json [--runs 5] [--markdown OUT.md]
    python benchmarks/progress_cost.py BIG.json --parts [--seconds 4.15]

Both write the report to the terminal (a pty whose output this script reads and drops), so the only
difference is the bar: rich's live display redrawn 4 times a second, and the reader's hook once per
8 MB block. Each bar run must show the bar ("MB/s" in its output), or the measurement is refused.

On a shared machine the whole-process times vary far more than 2% from run to run; ``--parts``
measures the bar's two costs themselves, in this process (a redraw of the bar as the terminal gets
it, and one report from the reader), and gives the share of a read taking ``--seconds``:
redraws per second x a redraw, plus blocks per second x a report. Load slows these as it slows the
read, so the share holds on a busy machine too.
"""

from __future__ import annotations

import argparse
import os
import platform
import pty
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def _command() -> list[str]:
    script = Path(sys.executable).with_name("warpwizard")
    return [str(script)] if script.exists() else [shutil.which("warpwizard") or "warpwizard"]


def at_terminal(argv: list[str]) -> tuple[float, float, bytes]:
    """Wall time and CPU time (user + system, of the process and its workers) of ``argv`` with stdin,
    stdout and stderr on a fresh pty, and what it wrote there."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR")}
    env.update(TERM="xterm", COLUMNS="120", LINES="40")
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the slave side is closed
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, stdin=slave, stdout=slave, stderr=slave, env=env, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    os.close(slave)
    reader.join(timeout=5)
    os.close(master)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {bytes(seen[-2000:]).decode(errors='replace')}")
    return elapsed, cpu, bytes(seen)


def parts(trace: Path, seconds: float) -> str:
    """The bar's cost from its parts: a redraw, a report from the reader."""
    from rich.console import Console

    from wizard.system import SystemClock
    from wizard.trace.read.reader import ReaderConfig
    from wizard.ui.progress import REFRESH_PER_SECOND, TerminalProgress

    size = trace.stat().st_size
    with open(os.devnull, "w") as sink:  # a terminal that keeps nothing
        console = Console(file=sink, force_terminal=True, width=120, highlight=False, markup=False, emoji=False)
        shown = TerminalProgress(console, SystemClock(), live=True, delay=0.0)
        bar = shown.task(trace.name, doing="reading", total=size, unit="bytes")
        bar.update(1)  # past the delay: the live display starts
        bars = shown._bars
        assert bars is not None
        redraws = 2000
        started = time.perf_counter()
        for i in range(redraws):
            bar.update(size * i / redraws)
            bars.refresh()
        redraw = (time.perf_counter() - started) / redraws
        reports = 20000
        started = time.perf_counter()
        for i in range(reports):
            bar.update(size * i / reports)
        report = (time.perf_counter() - started) / reports
        bar.close()
        shown.close()
    blocks = size / ReaderConfig().block_size
    share = REFRESH_PER_SECOND * redraw + blocks / seconds * report  # seconds of bar per second of read
    return "\n".join(
        [
            f"The bar's parts, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}:",
            "",
            "| part | each | per second of a read |",
            "|---|---:|---:|",
            f"| redraw (rich, {REFRESH_PER_SECOND} a second) | {redraw * 1e3:.3f} ms | "
            f"{REFRESH_PER_SECOND * redraw * 1e3:.2f} ms |",
            f"| report from the reader ({blocks:.0f} blocks of 8 MB in {seconds:g} s) | {report * 1e6:.1f} us | "
            f"{blocks / seconds * report * 1e3:.3f} ms |",
            f"| **share of the read's time** | | **{share * 100:.2f}%** |",
            "",
        ]
    )


def _runs(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--parts", action="store_true", help="measure a redraw and a report, not whole processes")
    ap.add_argument("--seconds", type=float, default=4.15, help="--parts: how long the read takes (idle: 4.15 s)")
    args = ap.parse_args(argv)
    if args.parts:
        print(parts(args.trace, args.seconds))
        return 0
    base = [*_command(), "trace", "inspect", str(args.trace)]
    times: dict[str, list[float]] = {"bar": [], "--quiet": []}
    cpus: dict[str, list[float]] = {"bar": [], "--quiet": []}
    at_terminal([*base, "--quiet"])  # the page cache warmed for both
    for run in range(args.runs):
        for name in ("bar", "--quiet") if run % 2 == 0 else ("--quiet", "bar"):
            elapsed, cpu, output = at_terminal(base + ([] if name == "bar" else ["--quiet"]))
            shown = b"MB/s" in output
            if shown != (name == "bar"):
                raise SystemExit(f"run {run} ({name}): the bar was {'shown' if shown else 'not shown'}")
            times[name].append(elapsed)
            cpus[name].append(cpu)
            print(f"run {run + 1} {name}: {elapsed:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    bar, quiet = statistics.median(times["bar"]), statistics.median(times["--quiet"])
    bar_cpu, quiet_cpu = statistics.median(cpus["bar"]), statistics.median(cpus["--quiet"])
    size = args.trace.stat().st_size / 1e6
    table = [
        f"`warpwizard trace inspect` at a pseudo-terminal, {size:,.0f} MB, {args.runs} runs each, alternated; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}",
        "",
        "| | wall, median (s) | CPU, median (s) | wall, each run (s) | CPU, each run (s) |",
        "|---|---:|---:|---|---|",
        f"| with the bar | {bar:.2f} | {bar_cpu:.2f} | {_runs(times['bar'])} | {_runs(cpus['bar'])} |",
        f"| `--quiet` | {quiet:.2f} | {quiet_cpu:.2f} | {_runs(times['--quiet'])} | {_runs(cpus['--quiet'])} |",
        f"| bar / quiet | {bar / quiet:.3f}x | {bar_cpu / quiet_cpu:.3f}x | | |",
    ]
    text = "\n".join(table) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
