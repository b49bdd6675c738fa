"""An example trace pass: how much GPU time a trace spends copying and setting memory, beside the kernels.

A pass declares itself once (``TracePass``): its name (its key in ``--json`` and in ``facts.inspect.passes``),
its result's type, the run started per trace with the inspection's options, how its result is written, and the
passes whose results it reads (here the flagship's, typed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.inspect_options import InspectOptions
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import Results, TracePass
from wizard.trace.read.collector import TraceContents


@dataclass(frozen=True)
class Copies:
    """What the pass found in one trace."""

    copies: int  # gpu_memcpy / gpu_memset events
    copy_us: float  # their summed duration
    kernels_checked: int  # the flagship's count, read typed from its result


class CopyTime:
    def __init__(self, options: InspectOptions) -> None:
        self.options = options

    def feed(self, contents: TraceContents) -> None:
        """Nothing while reading: the sums need the whole trace."""

    def finish(self, contents: TraceContents, before: Results) -> Copies:
        ops = contents.timeline.gpu_ops
        return Copies(len(ops), float(sum(ops.dur)), before.get(METRICS_PASS).kernels_checked)


def write(found: Copies) -> dict[str, Any]:
    return {"copies": found.copies, "copy_us": found.copy_us, "kernels_checked": found.kernels_checked}


COPY_TIME = TracePass("copy-time", Copies, CopyTime, write, needs=(METRICS_PASS,))
