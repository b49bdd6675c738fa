"""What `warpwizard compare` (and `ranks.baseline`, which loads reports the same way) costs: a job of N
per-rank `trace inspect --json` reports, and one hostile report just under the 64 MB cap.

    python benchmarks/compare_cost.py [--ranks 1000 10000] [--starts 300] [--big-mb 61] [--before DIR]
                                      [--runs 1] [--markdown OUT.md]

Each rank's report is a real one: the `trace inspect --json` of a builder-made trace with NCCL kernels,
its rank and its collectives' starts changed per rank (3 NCCL names, --starts starts in all, jittered).
The big report holds one document's worth of collectives (64 names of 10,000 starts, many ranks) up to
--big-mb. Each command runs in its own process; the table shows wall time, CPU time (user + system) and
peak memory (the maximum resident set, from wait4's rusage). --before DIR runs the same inputs with a
checkout of an earlier commit (`git worktree add DIR main`), its source first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NAMES = ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclDevKernel_AllGather_RING_LL", "ncclDevKernel_Broadcast")


def rank_template(directory: Path, starts: int) -> dict[str, Any]:
    """One rank's real report: a trace with ``starts`` NCCL kernels, inspected by this checkout."""
    import wizard
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder(gpu="H100")
    builder.set_metadata("distributedInfo", {"rank": 0, "world_size": 2})
    for i in range(starts):
        builder.add(KernelSpec(NAMES[i % len(NAMES)], (32, 1, 1), (512, 1, 1)))
        builder.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4>", (1024, 1, 1), (128, 1, 1)))
    trace = builder.write(directory / "rank0.json")
    document: dict[str, Any] = wizard.inspect_traces(trace, jobs=1, plots=False).to_dict()
    return document


def write_job(directory: Path, template: dict[str, Any], ranks: int) -> list[Path]:
    """``ranks`` reports: the template with each rank's number and its own jittered starts."""
    from wizard.serialize import dumps

    (report,) = template["reports"]
    base = report["collectives"]["starts"]
    rng = random.Random(7)
    paths = []
    for rank in range(ranks):
        starts = {name: [round(t + rng.uniform(0, 40), 3) for t in values] for name, values in base.items()}
        report["collectives"] = {"rank": rank, "starts": starts}
        report["path"] = f"/scratch/job/rank{rank}.json"
        template["host"] = {"hostname": f"node{rank // 8}", "rank": rank}
        path = directory / f"rank{rank}.json"
        path.write_text(dumps(template, indent=None))
        paths.append(path)
    return paths


def write_big(directory: Path, template: dict[str, Any], megabytes: int) -> Path:
    """One report just under the cap: as many ranks' collectives (64 names x 10,000 starts) as fit."""
    from wizard.serialize import dumps

    (report,) = template["reports"]
    one = {f"ncclDevKernel_{i}": [round(1.7e15 + 10.0 * j + i, 3) for j in range(10_000)] for i in range(64)}
    text = dumps({"rank": 0, "starts": one}, indent=None)
    copies = max(1, (megabytes << 20) // len(text))
    reports = [dict(report, path=f"rank{r}.json", collectives={"rank": r, "starts": one}) for r in range(copies)]
    path = directory / "big.json"
    path.write_text(dumps(dict(template, reports=reports), indent=None))
    return path


def write_empties(directory: Path, megabytes: int) -> Path:
    """The hostile shape: a report's list of empty objects (json.loads built 25 bytes for each byte)."""
    count = (megabytes << 20) // 3
    path = directory / "empties.json"
    with path.open("w") as out:
        out.write('{"schema": "warpwizard.trace-report/2", "reports": [{"groups": [')
        out.write(",".join(["{}"] * count))
        out.write("]}]}")
    return path


def run(source: Path, paths: list[Path]) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one `compare --json` from ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "wizard", "compare", "--json", *map(str, paths)],
        env=env,
        cwd=paths[0].parent,  # not a checkout: `-m wizard` would import the current directory's package first
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def generate(directory: Path, ranks: list[int], starts: int, big_mb: int) -> None:
    """The inputs, written by a process of their own: a child forked from a parent that imported numpy
    would start with the parent's resident set, and its peak would be the parent's."""
    template = rank_template(directory, starts)
    for count in ranks:
        job = directory / f"job{count}"
        job.mkdir()
        write_job(job, template, count)
    write_big(directory, rank_template(directory, 3), big_mb)
    write_empties(directory, big_mb)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--starts", type=int, default=300, help="NCCL kernels per rank")
    ap.add_argument("--big-mb", type=int, default=61)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.generate:
        generate(args.generate, args.ranks, args.starts, args.big_mb)
        return 0
    sources = [("this checkout", REPO)] + ([("before", args.before)] if args.before else [])
    rows = [
        "| input | reports | bytes in all | code | wall s | CPU s | peak MB | exit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        subprocess.run(
            [sys.executable, __file__, *argv, "--generate", str(directory)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        cases: list[tuple[str, list[Path]]] = [
            (
                f"{count:,} ranks, {args.starts} starts each",
                sorted((directory / f"job{count}").iterdir(), key=lambda p: int(p.stem[4:])),
            )
            for count in args.ranks
        ]
        cases.append(("one report of collectives, at most --big-mb", [directory / "big.json"]))
        cases.append(("one report of empty objects (`[{}, {}, ...]`)", [directory / "empties.json"]))
        for label, paths in cases:
            size = sum(p.stat().st_size for p in paths)
            for name, source in sources:
                for _ in range(args.runs):
                    wall, cpu, peak, code = run(source, paths)
                    rows.append(
                        f"| {label} | {len(paths):,} | {size / 1e6:.1f} MB | {name} | {wall:.1f} | {cpu:.1f} | "
                        f"{peak:.0f} | {code} |"
                    )
                    print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    if args.markdown:
        args.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
