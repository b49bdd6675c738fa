"""Build a large trace by repeating the events of a real trace, with overflowing kernels planted.

    python benchmarks/make_big_trace.py ../shared/traces/h800-deepseek-train-rank0.json.gz OUT.json --size-gb 1 \
        [--layout lines|minified|indented|relative]

Layouts, as traces come from the wild: ``lines`` is one event per line (what Kineto writes);
``minified`` has no newline at all (``json.dump`` without indent: vLLM and SGLang profiles,
traces rewritten by analysis tools); ``indented`` is ``json.dump(indent=2)``, one key per line.
The same events in each, so the three files compare the reader, not the content. ``relative`` is
``lines`` with ``ts`` and ``dur`` as PyTorch 2's Kineto writes them: µs since ``baseTimeNanoseconds``
with three decimals (libkineto/src/output_json.cpp, ``transToRelativeTime`` and ``"ts": {}.{:03}``):
16 significant digits, 13 before the point, where the H800 trace has 16-digit integers since the
epoch; the nanosecond digits, which the source does not have, are made up from each time (so the
events keep their order).

Each repetition shifts timestamps and ids so the copy is a plausible longer profile; a few
kernels get a grid of 100000 x 30000 blocks with the values a real profiler prints for it
(mechanism A), so the benchmark measures a run that finds something.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wizard.trace.kineto_math import kineto_blocks_per_sm, kineto_occupancy_percent, kineto_warps_per_sm

PLANT_GRID = (100000, 30000, 1)
RELATIVE_FIRST = 1_365_627_862_757  # µs: where the relative layout's first event lies


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


def framing(layout: str, doc: dict[str, Any]) -> tuple[str, Callable[[Any], str], str, str]:
    """The layout's separator between events, how an event is written, and the text before and after them."""
    if layout == "minified":
        dump: Callable[[Any], str] = lambda v: json.dumps(v, separators=(",", ":"))  # noqa: E731
        start = "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in doc.items()) + ',"traceEvents":['
        return ",", dump, start, "]}"
    if layout == "indented":
        head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, indent=2)}" for k, v in doc.items())
        dump = lambda v: json.dumps(v, indent=2).replace("\n", "\n    ")  # noqa: E731
        return ",\n    ", dump, "{\n" + head + ',\n  "traceEvents": [\n    ', "\n  ]\n}\n"
    head = ",\n".join(f'  "{k}": {json.dumps(v)}' for k, v in doc.items())
    return ",\n  ", json.dumps, "{\n" + head + ',\n  "traceEvents": [\n  ', "\n  ]\n}\n"


def _nanos(us: float) -> int:
    """Made-up nanoseconds for a time in whole µs: a function of the time, so that events keep their order, and their
    ends theirs (an end's are the end's own, not the start's plus the duration's)."""
    return int(us) * 7919 % 1000


def copy_of(event: dict[str, Any], rep: int, shift: float, base_us: float | None) -> dict[str, Any]:
    """An event's copy in repetition rep: its time shifted (relative to base_us, with made-up nanoseconds,
    where given) and its ids moved past the other repetitions'."""
    e = dict(event)
    ids = rep * 10_000_000
    if isinstance(e.get("ts"), (int, float)):
        e["ts"] = e["ts"] + shift
        if base_us is not None:  # µs since the base, three decimals
            start, dur = e["ts"], e.get("dur")
            e["ts"] = round(start - base_us + _nanos(start) / 1000, 3)
            if isinstance(dur, (int, float)):
                e["dur"] = round(dur + (_nanos(start + dur) - _nanos(start)) / 1000, 3)
    if "id" in e and isinstance(e["id"], int):
        e["id"] += ids
    a = e.get("args")
    if isinstance(a, dict):
        a = dict(a)
        for key in ("correlation", "External id"):
            if isinstance(a.get(key), int):
                a[key] += ids
        e["args"] = a
    return e


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("output", type=Path)
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--plants", type=int, default=5)
    ap.add_argument("--layout", choices=("lines", "minified", "indented", "relative"), default="lines")
    args = ap.parse_args(argv)
    doc = load(args.source)
    events: list[dict[str, Any]] = doc.pop("traceEvents")
    num_sms = doc["deviceProperties"][0]["numSms"]
    one = sum(len(json.dumps(e)) + 4 for e in events)
    reps = max(1, int(args.size_gb * 1e9 / one))
    ts = [t for t in (e.get("ts") for e in events) if isinstance(t, (int, float))]
    span = max(ts) - min(ts) + 1000
    plant_reps = {int(reps * (i + 1) / (args.plants + 1)) for i in range(args.plants)}
    kernel_index = next(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    # relative: the first event at the shared B200 trace's first ts, 13 digits before the point as in every PyTorch 2
    # trace of ../shared/traces (B200, H100, MI250, MI300: 1.2e12-4.2e12 µs)
    base_us = min(ts) - RELATIVE_FIRST if args.layout == "relative" else None
    if base_us is not None:
        doc["baseTimeNanoseconds"] = int(base_us) * 1000
    sep, dump, start, end = framing(args.layout, doc)
    with args.output.open("w") as out:
        out.write(start)
        for rep in range(reps):
            for i, event in enumerate(events):
                e = copy_of(event, rep, rep * span, base_us)
                if rep in plant_reps and i == kernel_index:
                    plant(e, num_sms)
                out.write(("" if rep == i == 0 else sep) + dump(e))
        out.write(end)
    print(
        f"wrote {args.output}: {reps} repetitions of {len(events)} events, {args.output.stat().st_size / 1e9:.2f} GB, "
        f"{len(plant_reps)} overflowing kernels planted"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
