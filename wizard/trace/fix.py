"""``trace fix``: a copy of a trace with the impossible values replaced by the true ones.

Perfetto, TensorBoard and HTA then show true numbers. Each corrected kernel keeps what
the profiler wrote under ``warpwizard original`` and the mechanism under ``warpwizard
mechanism``; every other byte of every other event is copied as it was.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from wizard.outputs import atomic_file, check_output
from wizard.trace.analysis import PROFILER_BUGS, MemoChecker
from wizard.trace.devices import device_table
from wizard.trace.reader import KERNEL_CATEGORIES, EventSink, parse_into, read_trace, unmark_bare

ORIGINAL_ARG = "warpwizard original"
MECHANISM_ARG = "warpwizard mechanism"


@dataclass(slots=True)
class FixSummary:
    source: str
    output: str
    kernels: int
    corrected: int
    mechanisms: dict[str, int]
    uncorrectable: int


def _json_value(value: float | int | None) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, float):
        return round(value, 6)
    return value


class _FixSink(EventSink):
    wants_raw = True

    def __init__(self, out: IO[bytes], corrections: dict[int, tuple[str, dict[str, Any]]], array: bool) -> None:
        self.out = out
        self.corrections = corrections
        self.array = array
        self.kernel_index = 0
        self.first_key = True
        self.first_event = True

    def _key(self, key: str) -> None:
        self.out.write(b"\n" if self.first_key else b",\n")
        self.first_key = False
        self.out.write(f"  {json.dumps(key)}: ".encode())

    def meta(self, key: str, value: Any) -> None:
        self._key(key)
        self.out.write(json.dumps(value).encode())

    def events_start(self) -> None:
        if not self.array:
            self._key("traceEvents")
        self.out.write(b"[")

    def events_end(self) -> None:
        self.out.write(b"\n]")

    def add_raw(self, events: list[bytes]) -> None:
        for raw in events:
            raw = self._fix(raw) if b'ernel"' in raw else unmark_bare(raw)
            self.out.write(b"\n  " if self.first_event else b",\n  ")
            self.first_event = False
            self.out.write(raw)

    def _fix(self, raw: bytes) -> bytes:
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            return unmark_bare(raw)
        if not isinstance(event, dict) or event.get("cat") not in KERNEL_CATEGORIES:
            return unmark_bare(raw)
        index = self.kernel_index
        self.kernel_index += 1
        fix = self.corrections.get(index)
        args = event.get("args")
        if fix is None or not isinstance(args, dict):
            return unmark_bare(raw)
        mechanism, values = fix
        original: dict[str, Any] = {}
        for metric, value in values.items():
            if metric in args:
                written = args[metric]
                if isinstance(written, str) and written.startswith("__warpwizard_bare__"):
                    written = written[len("__warpwizard_bare__") :]
                original[metric] = written
                args[metric] = _json_value(value)
        args[ORIGINAL_ARG] = original
        args[MECHANISM_ARG] = mechanism
        return json.dumps(event).encode()


def fix_trace(source: str | Path, output: str | Path, *, force: bool = False) -> FixSummary:
    """Write ``output`` (gzip if it ends in .gz) with corrected kernel metrics.

    The output is checked before the input is read (never the input itself, even through a
    hard link; never a file that exists, unless ``force``) and appears only when complete.
    """
    src, out = Path(source), Path(output)
    check_output(out, inputs=[src], force=force, what="corrected trace")
    contents = read_trace(src)
    checker = MemoChecker(device_table(contents.device_properties, contents.kernels), contents.is_rocm)
    corrections: dict[int, tuple[str, dict[str, Any]]] = {}
    mechanisms: dict[str, int] = {}
    uncorrectable = 0
    for k in contents.kernels:
        result = checker.check(k)
        bugs = [f for f in result.findings if f.mechanism in PROFILER_BUGS]
        if not bugs:
            continue
        names = "+".join(sorted({f.mechanism.value for f in bugs}))
        mechanisms[names] = mechanisms.get(names, 0) + 1
        values = {m: v for m, v in result.corrected.items() if v is not None}
        for f in bugs:  # E's true occupancy uses the opt-in limit, not the default one
            for metric, value in f.true.items():
                if value is not None and metric not in ("blocks per SM", "warps per SM"):
                    values[metric] = round(value, 2)
        if not values:
            uncorrectable += 1
            continue
        corrections[k.index] = (names, values)
    with atomic_file(out, inputs=[src], force=force, what="corrected trace") as target:
        compressed = gzip.GzipFile(fileobj=target, mode="wb", mtime=0) if out.name.endswith(".gz") else None
        fh = cast(IO[bytes], compressed) if compressed is not None else target
        sink = _FixSink(fh, corrections, contents.layout == "array")
        if contents.layout == "array":
            parse_into(src, sink)
            fh.write(b"\n")
        else:
            fh.write(b"{")
            parse_into(src, sink)
            fh.write(b"\n}\n")
        if compressed is not None:
            compressed.close()
    return FixSummary(str(src), str(out), len(contents.kernels), len(corrections), mechanisms, uncorrectable)
