"""What `warpwizard diff` costs: two large traces (beside `trace inspect --json` of one, which the diff does twice),
and two rank directories of per-rank `--json` reports (the job's nodes wrote them; no trace is read again).

    python benchmarks/diff_cost.py [--trace-mb 200] [--ranks 1000] [--markdown OUT.md]

The traces are made by benchmarks/make_big_trace.py from ../shared/traces/h800-deepseek-train-rank0.json.gz (the
second one is the first with every kernel 20% longer, so the diff finds regressions); the reports are real
`trace inspect --json` documents of a builder-made rank, copied per rank with the rank changed. Each command runs
in its own process; the table shows wall time, CPU time (user + system) and peak memory (wait4's rusage).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "traces" / "h800-deepseek-train-rank0.json.gz"


def measure(argv: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak MB, exit code) of one command, in its own process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def slower(source: Path, target: Path) -> None:
    """The same trace, every kernel 20% longer: one event per line, as make_big_trace.py writes it."""
    with open(source) as fh, open(target, "w") as out:
        for line in fh:
            if '"cat": "kernel"' in line or '"cat":"kernel"' in line:
                event = json.loads(line.rstrip().rstrip(","))
                event["dur"] = event["dur"] * 1.2
                line = json.dumps(event) + ("," if line.rstrip().endswith(",") else "") + "\n"
            out.write(line)


def rank_reports(directory: Path, ranks: int, scale: float) -> Path:
    """``ranks`` per-rank reports of one builder-made rank, each with its own rank number."""
    import wizard
    from wizard.serialize import dumps
    from wizard.testing.traces import KernelSpec, TraceBuilder

    b = TraceBuilder(gpu="H100")
    b.set_metadata("distributedInfo", {"backend": "nccl", "rank": 0, "world_size": ranks})
    for i in range(200):
        b.add(KernelSpec(f"void kernel_{i % 40}<128>(float*)", (132, 1, 1), (256, 1, 1), dur=10.0 * scale))
    trace = b.write(directory / "rank.json")
    template: dict[str, Any] = wizard.inspect_traces(trace, jobs=1, plots=False).to_dict()
    out = directory / f"reports-{scale}"
    out.mkdir()
    for rank in range(ranks):
        template["reports"][0]["profile"]["rank"] = rank
        (out / f"rank{rank:05d}.json").write_text(dumps(template))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-mb", type=int, default=200)
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "wizard"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="diff-cost-") as tmp:
        where = Path(tmp)
        before, after = where / "before.json", where / "after.json"
        size = str(args.trace_mb / 1024)
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_big_trace.py"), str(SOURCE), str(before),
                        "--size-gb", size], check=True, cwd=REPO)  # fmt: skip
        slower(before, after)
        mb = before.stat().st_size / 1e6
        rows.append((f"trace inspect --json, one {mb:.0f} MB trace", measure([*cli, "trace", "inspect", "--json",
                     "--fail-on", "never", str(before)], where)))  # fmt: skip
        rows.append((f"diff --json, two {mb:.0f} MB traces", measure([*cli, "diff", "--json", str(before),
                     str(after)], where)))  # fmt: skip
        reports = [rank_reports(where, args.ranks, scale) for scale in (1.0, 1.2)]
        rows.append((f"diff --json, two directories of {args.ranks} per-rank reports",
                     measure([*cli, "diff", "--json", *map(str, reports)], where)))  # fmt: skip
    lines = ["| command | wall s | CPU s | peak MB | exit |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {w:.2f} | {c:.2f} | {m:.0f} | {code} |" for name, (w, c, m, code) in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
