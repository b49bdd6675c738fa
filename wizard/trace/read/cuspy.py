"""PyTorch's second GPU collector, Cuspy (2.15; ``cupti_monitor`` in 2.13 and 2.14), in Chrome JSON: how a trace
is known to be its, and what its exporter hides.

Read in pytorch/pytorch ``torch/profiler/_cuspy/trace.py`` (``_trace_window_entries``) and its predecessor
``torch/profiler/_cupti_monitor_trace.py`` (in the 2.13 wheel the tests run):

- Kineto still writes the CPU side (``schemaVersion``, ops, Python frames); Cuspy adds the GPU side from CUPTI
  records: kernel args ``device``, ``context``, ``stream``, ``correlation`` (2.15 adds ``grid``, ``block``,
  ``registers per thread``, ``shared memory``, ``priority``, ``queued``, ``channel``), and never ``blocks per SM``,
  ``warps per SM`` or ``est. achieved occupancy %``, which Kineto's own GPU side writes on every CUDA kernel.
  That absence, on a CUDA trace whose CPU side is Kineto's, is how a trace is recognised as Cuspy's.
- Every GPU op's and runtime call's ``ts`` and ``dur`` are clamped at 0 (``max(x, 0.0)``, ``np.maximum``): a
  negative duration arrives as ``dur == 0`` and a start before the trace's base time (Kineto's three-month
  boundary, so a garbage or zero CUPTI timestamp) as ``ts == 0``.
- CUDA-graph ops moved to a "logical lane": ``tid`` and ``args.stream`` are the lane, the real stream is
  ``args.original_stream`` (the collector keeps the real stream; the row stays the lane a viewer draws).
- Graph host nodes of a replay queued behind another carry correlation id 0 (a CUPTI bug its code names); they
  are ``graph_host_node`` events, not kernels, so no kernel check counts them.
"""

from __future__ import annotations

import msgspec

from wizard.trace.read.collector import TraceContents

WRITER = "PyTorch profiler with the Cuspy collector (PyTorch 2.15; cupti_monitor in 2.13-2.14)"
CANNOT_SHOW = {
    "impossible-metrics": "Cuspy writes no blocks per SM, warps per SM or occupancy to check",
}


def is_cuspy(contents: TraceContents) -> bool:
    """CUDA kernels (with CUDA runtime or driver calls) of which none carries Kineto's per-SM metrics, in a trace
    whose CPU side is Kineto's."""
    cuda = contents.timeline.categories.keys() & {"cuda_runtime", "cuda_driver"}  # not an XPU or ROCm trace
    if not len(contents.kernels) or contents.is_rocm or not cuda or "schemaVersion" not in contents.metadata:
        return False
    return not contents.kernels.carries_metrics()


class Clamped(msgspec.Struct, frozen=True, eq=False):
    """What Cuspy's clamping may hide in one trace."""

    zero_duration: int  # GPU events (kernels, copies, sets) with dur == 0: each may be a negative duration
    at_zero: int  # GPU events and runtime calls with ts == 0: each started before the base (a bad timestamp)
    lanes: int  # kernels drawn on a logical lane, not their stream


def clamped(contents: TraceContents) -> Clamped:
    """Counted only for a Cuspy trace: numpy is imported here, not when the reader loads (every trace's start-up)."""
    import numpy as np

    starts, durations, _, shape_of, shapes = contents.kernels.columns()
    ts, dur = (np.frombuffer(c, dtype=np.float64) if len(c) else np.zeros(0) for c in (starts, durations))
    ops = contents.timeline.gpu_ops
    op_ts = np.frombuffer(ops.ts, dtype=np.float64) if len(ops.ts) else np.zeros(0)
    op_dur = np.frombuffer(ops.dur, dtype=np.float64) if len(ops.dur) else np.zeros(0)
    calls = np.frombuffer(contents.runtime.starts, dtype=np.float64) if len(contents.runtime) else np.zeros(0)
    moved = np.array([s[2] != s[4] and s[4] is not None for s in shapes] or [False])  # tid (the lane) vs stream
    lanes = int(moved[np.frombuffer(shape_of, dtype=np.int32)].sum()) if len(shape_of) else 0
    return Clamped(
        int((dur == 0).sum() + (op_dur == 0).sum()),
        int((ts == 0).sum() + (op_ts == 0).sum() + (calls == 0).sum()),
        lanes,
    )
