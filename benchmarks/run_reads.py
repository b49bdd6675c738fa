"""What a run's reads of its trace cost: the flagship's two trace probes and its HTML page, beside an older checkout.

    python benchmarks/run_reads.py BIG.json --before DIR [--runs 3] [--markdown OUT.md]

The run is ``warpwizard run`` of a two-node playbook written here, the flagship's ``trace.inspect`` and
``metrics.sanity`` with the flagship's parameters (``torch_validator`` off: PyTorch's own validator is a
process of its own, aside), with ``--report run.html``: before one inspection per run that read the file three
times (the inspection, metrics.sanity's read, the page's inspection; a fourth with PM counters), now once.
DIR is a checkout of the commit before (``git worktree add --detach DIR COMMIT``); both run with this
interpreter, each with its own source first on PYTHONPATH, alternating; the table gives medians of wall time,
CPU time and peak memory (the process's maximum resident set, from wait4's rusage; --jobs is 1 for every read).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside.py, run as a script
from beside import Sample, measure, rows  # noqa: E402
from beside import table as render  # noqa: E402

PLAYBOOK = """\
id: two-reads
title: The flagship's trace probes
version: "1"
nodes:
  - id: inspect
    kind: probe
    probe: trace.inspect
    params:
      paths: "{trace}"
      jobs: 1
    next: metrics
  - id: metrics
    kind: probe
    probe: metrics.sanity
    params:
      trace: "{trace}"
    next: done
  - id: done
    kind: conclusion
    diagnosis: read
    summary: the trace was read
"""


def run(source: Path, playbook: Path, report: Path) -> Sample:
    """One run of the two-reads playbook from ``source``, writing ``report``."""
    report.unlink(missing_ok=True)
    return measure(source, ["run", str(playbook), "--report", str(report), "--defaults"], cwd=report.parent)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--before", type=Path, required=True, help="a checkout from before one inspection per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        playbook = Path(scratch) / "two-reads.yaml"
        playbook.write_text(PLAYBOOK.format(trace=args.trace.resolve()))
        results: dict[str, list[Sample]] = {"before": [], "now": []}
        for _ in range(args.runs):
            for label, source in (("before", args.before), ("now", REPO)):
                results[label].append(run(source, playbook, Path(scratch) / "run.html"))
    name = f"{args.trace.name} ({args.trace.stat().st_size / 1e6:,.0f} MB)"
    table = render(args.runs, "now / before", rows(name, results))
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
