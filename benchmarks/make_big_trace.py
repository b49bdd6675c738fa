"""Build a large trace by repeating the events of a real trace, with overflowing kernels planted.

    python benchmarks/make_big_trace.py ../shared/traces/h800-deepseek-train-rank0.json.gz OUT.json --size-gb 1 \
        [--layout lines|minified|indented]

Layouts, as traces come from the wild: ``lines`` is one event per line (what Kineto writes);
``minified`` has no newline at all (``json.dump`` without indent: vLLM and SGLang profiles,
traces rewritten by analysis tools); ``indented`` is ``json.dump(indent=2)``, one key per line.
The same events in each, so the three files compare the reader, not the content.

Each repetition shifts timestamps and ids so the copy is a plausible longer profile; a few
kernels get a grid of 100000 x 30000 blocks with the values a real profiler prints for it
(mechanism A), so the benchmark measures a run that finds something.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from wizard.trace.kineto_math import kineto_blocks_per_sm, kineto_occupancy_percent, kineto_warps_per_sm

PLANT_GRID = (100000, 30000, 1)


def load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def plant(event: dict[str, Any], num_sms: int) -> None:
    args = event["args"]
    block = tuple(args["block"])
    args["grid"] = list(PLANT_GRID)
    args["blocks per SM"] = float(f"{kineto_blocks_per_sm(PLANT_GRID, num_sms):.9g}")
    args["warps per SM"] = float(f"{kineto_warps_per_sm(PLANT_GRID, block, num_sms):.9g}")
    threads = block[0] * block[1] * block[2]
    args["est. achieved occupancy %"] = kineto_occupancy_percent(
        1, kineto_blocks_per_sm(PLANT_GRID, num_sms), threads, 2048
    )[0]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("output", type=Path)
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--plants", type=int, default=5)
    ap.add_argument("--layout", choices=("lines", "minified", "indented"), default="lines")
    args = ap.parse_args(argv)
    doc = load(args.source)
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    num_sms = doc["deviceProperties"][0]["numSms"]
    lines = [json.dumps(e) for e in events]
    one = sum(len(line) + 4 for line in lines)
    reps = max(1, int(args.size_gb * 1e9 / one))
    ts = [e.get("ts") for e in events]
    span = max(t for t in ts if isinstance(t, (int, float))) - min(t for t in ts if isinstance(t, (int, float))) + 1000
    plant_reps = {int(reps * (i + 1) / (args.plants + 1)) for i in range(args.plants)}
    kernel_index = next(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    if args.layout == "minified":
        sep, dump = ",", (lambda v: json.dumps(v, separators=(",", ":")))
        start, end = "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in doc.items()) + ',"traceEvents":[', "]}"
    elif args.layout == "indented":
        sep, dump = ",\n    ", (lambda v: json.dumps(v, indent=2).replace("\n", "\n    "))
        head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, indent=2)}" for k, v in doc.items())
        start, end = "{\n" + head + ',\n  "traceEvents": [\n    ', "\n  ]\n}\n"
    else:
        sep, dump = ",\n  ", json.dumps
        head = ",\n".join(f'  "{k}": {json.dumps(v)}' for k, v in doc.items())
        start, end = "{\n" + head + ',\n  "traceEvents": [\n  ', "\n  ]\n}\n"
    with args.output.open("w") as out:
        out.write(start)
        first = True
        for rep in range(reps):
            shift = rep * span
            ids = rep * 10_000_000
            for i, event in enumerate(events):
                e = dict(event)
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + shift
                if "id" in e and isinstance(e["id"], int):
                    e["id"] += ids
                a = e.get("args")
                if isinstance(a, dict):
                    a = dict(a)
                    for key in ("correlation", "External id"):
                        if isinstance(a.get(key), int):
                            a[key] += ids
                    e["args"] = a
                if rep in plant_reps and i == kernel_index:
                    plant(e, num_sms)
                out.write(("" if first else sep) + dump(e))
                first = False
        out.write(end)
    print(
        f"wrote {args.output}: {reps} repetitions of {len(events)} events, {args.output.stat().st_size / 1e9:.2f} GB, "
        f"{len(plant_reps)} overflowing kernels planted"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
