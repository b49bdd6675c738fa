"""What judging a job from per-rank summaries costs (issue 51): a rank directory inspected as today (``trace inspect
--jobs 2 DIR``, every rank's full report held by the parent), by the per-rank step in local workers (``--engine
local --jobs 2``), and on a two-worker Dask LocalCluster started by the run (``--engine dask --jobs 2``), each as
a whole process (wall, CPU of the process and its reaped children, the parent's peak RSS); then a rerun with the
summaries reused; then the job's reduce alone over 10,000 synthetic summaries (time, peak traced memory).

    PYTHONPATH=. .venv/bin/python benchmarks/dask_cost.py [--ranks 16] [--mb 20] [--runs 1]

Assumes: the ranks are builder traces (wizard/testing/ranks.py), one made and the others copied with their rank
changed (the cost is the read, not the build); a LocalCluster's workers are processes on this machine (its start,
~5-15 s on a busy two-core machine, is in the figure, as a user's first run pays it); nothing else is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(directory: Path, ranks: int, mb: float) -> int:
    """``ranks`` traces of about ``mb`` MB each: one built, the rest its copies declaring their own rank."""
    from wizard.testing.ranks import RankPlan, rank_builder

    steps = max(1, round(mb * 1e6 / 400 / 970))  # ~970 bytes a kernel, 400 kernels a step
    text = rank_builder(0, RankPlan(world_size=ranks, steps=steps, kernels=400)).text()
    directory.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        mine = text.replace('"rank": 0,', f'"rank": {rank},', 1)
        (directory / f"rank{rank}.json").write_text(mine)
    return sum(p.stat().st_size for p in directory.iterdir())


def build_apart(directory: Path, ranks: int, mb: float) -> int:
    """``build`` in a process of its own: Linux keeps a process's peak RSS across ``execve``, so a benchmark that
    built 50 MB traces in itself would hand that peak to every command it starts (each read 354 MB, the reused
    run's too)."""
    code = (
        "import sys; from benchmarks.dask_cost import build; print(build(__import__('pathlib').Path(sys.argv[1]), "
        "int(sys.argv[2]), float(sys.argv[3])))"
    )
    argv = [sys.executable, "-c", code, str(directory), str(ranks), str(mb)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """``python -m wizard ARGV``: wall s, CPU s (user + system, its reaped children's included), peak MB of the
    largest process among it and its reaped children (wait4's ru_maxrss), exit code."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "wizard", *argv], env=env, cwd=tempfile.gettempdir(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def synthetic(n: int) -> list[object]:
    """``n`` summaries as the step makes them: a world of ``n``, 20 all-reduces each, two verdicts."""
    import random

    import wizard
    from wizard.jobs.step import Outcome
    from wizard.jobs.summary import decode
    from wizard.schemas import RANK_SUMMARY

    rng = random.Random(1)
    out = []
    for rank in range(n):
        doc = {
            "schema": RANK_SUMMARY, "warpwizard": wizard.__version__, "checks": None,
            "source": {"path": f"/job/rank{rank:05d}.json", "size": 500 << 20, "mtime": "1", "etag": None},
            "rank": rank, "place": {"rank": rank, "world_size": n, "backend": "nccl", "groups": []},
            "truncated": False, "truncation": None, "format": "kineto-json", "writer": "", "bytes_read": 500 << 20,
            "events": 10**6, "kernels": 10**5, "devices": [], "steps": [1e5] * 20,
            "collectives": {"ncclDevKernel_AllReduce": [1e5 * i + rng.random() * 80 for i in range(20)]},
            "health": [{"check": c, "status": rng.choice(["ok", "ok", "info", "warning"]), "count": 1, "summary": "s"}
                       for c in ("trace-incomplete", "clock-skew", "kernels-missing")],
            "health_status": "warning", "seconds": 1.0,
        }  # fmt: skip
        out.append(Outcome(decode(json.dumps(doc).encode())))
    return out


def reduce_cost(n: int) -> tuple[float, float, float, int]:
    """The reduce alone over ``n`` summaries: seconds (untraced), the summaries' own traced MB, the reduce's peak
    traced MB above them, and the bytes of its --json document."""
    from wizard.inspect_options import InspectOptions
    from wizard.jobs.reduce import reduce
    from wizard.serialize import dumps

    outcomes = synthetic(n)
    reduce(outcomes, InspectOptions())  # type: ignore[arg-type]  # imports (numpy, the checks) paid here
    started = time.perf_counter()
    job = reduce(outcomes, InspectOptions())  # type: ignore[arg-type]
    took = time.perf_counter() - started
    size = len(dumps(job.to_dict()))
    del outcomes, job
    tracemalloc.start()
    outcomes = synthetic(n)
    held = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.reset_peak()
    reduce(outcomes, InspectOptions())  # type: ignore[arg-type]
    peak = tracemalloc.get_traced_memory()[1] / 2**20 - held
    tracemalloc.stop()
    return took, held, peak, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--summaries", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.ranks:  # --ranks 0: the reduce alone
            return print_reduce(args.summaries)
        ranks = Path(tmp) / "ranks"
        total = build_apart(ranks, args.ranks, args.mb)
        print(f"{args.ranks} ranks, {total / 1e6:.0f} MB in all")
        store = Path(tmp) / "summaries"
        cases = {
            "trace inspect --jobs 2 (today)": ["trace", "inspect", "--jobs", "2", "--json", str(ranks)],
            "--engine local --jobs 2": ["trace", "inspect", "--engine", "local", "--jobs", "2", "--json", str(ranks)],
            "--engine dask --jobs 2 (LocalCluster)": ["trace", "inspect", "--engine", "dask", "--jobs", "2",
                                                      "--json", str(ranks)],
            "--engine local, --summaries (written)": ["trace", "inspect", "--engine", "local", "--jobs", "2",
                                                      "--summaries", str(store), "--json", str(ranks)],
            "--engine local, --summaries (reused)": ["trace", "inspect", "--engine", "local", "--jobs", "2",
                                                     "--summaries", str(store), "--json", str(ranks)],
        }  # fmt: skip
        base = None
        print("| run | wall s | CPU s | peak MB | exit | wall / today |\n|---|---|---|---|---|---|")
        for name, argv in cases.items():
            samples = [measure(argv) for _ in range(args.runs)]
            wall, cpu, peak = (statistics.median(s[i] for s in samples) for i in range(3))
            base = base or wall
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {peak:.0f} | {samples[0][3]} | {wall / base:.2f} |")
    print_reduce(args.summaries)


def print_reduce(n: int) -> None:
    took, held, peak, size = reduce_cost(n)
    print(
        f"reduce over {n} summaries: {took:.2f} s; the summaries hold {held:.0f} MB, the reduce {peak:.0f} MB more "
        f"at its peak (traced); --json {size / 1e3:.0f} KB"
    )


if __name__ == "__main__":
    main()
