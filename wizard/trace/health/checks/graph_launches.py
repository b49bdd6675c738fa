"""graph-launches: a CUDA graph run's launches, and replays recorded without their kernels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    CheckFact,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.read.records import NO_CORRELATION

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


class GraphLaunchesDetails(TypedDict):
    kernels: Annotated[int, "kernels run by graph launches"]
    mode: Annotated[Literal["eager", "graph", "mixed"], "the trace's launches: eager, graph or both"]
    unrecorded: Annotated[int, "graph launches with no kernel while others have theirs"]


CHECK = CheckSpec(
    "graph-launches",
    "cuda-graphs",
    "CUDA/HIP graph launches",
    GraphLaunchesDetails,
    order=40,
    triage_rank=30,
    counts=(
        "graph-launch calls; `kernels` (kernel events whose correlation id is a graph launch's), `mode` "
        "(`eager`, `graph`, `mixed`), `unrecorded` (graph-launch calls with an id that matches no kernel, "
        "counted only while another graph-launch call has a kernel: replays the profiler did not record)"
    ),
    status_rule=("`info` (what a graph trace can tell); `warning` when `unrecorded` > 0"),
    facts=(
        CheckFact("graph_launches", int, "cudaGraphLaunch / hipGraphLaunch calls"),
        CheckFact("graph_kernels", int, "kernels run by those graph launches", "kernels"),
        CheckFact("graph_mode", str, "eager, graph or mixed", "mode", "worst"),
        CheckFact(
            "graph_unrecorded",
            int,
            "graph launches with no kernel while other graph launches have theirs",
            "unrecorded",
        ),
    ),
)


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import call_example, call_samples, distinct, member

    contents, calls, kernels = tables.contents, tables.calls, tables.kernels
    graphs = int(calls.graph.sum())
    launches = int(calls.launch.sum())
    with_id = np.flatnonzero(calls.graph & (calls.corr != NO_CORRELATION))
    graph_ids = distinct(calls.corr[with_id])
    replayed = int(member(kernels.corr, graph_ids).sum()) if len(graph_ids) else 0
    mode = "eager" if not graphs else ("graph" if not launches else "mixed")
    if not graphs:
        details = {"kernels": replayed, "mode": mode, "unrecorded": 0}
        return CHECK.verdict(0, "ok", "no graph launches: an eager trace", "", details=details)
    kernel_ids = distinct(kernels.corr[kernels.corr != NO_CORRELATION])
    empty = with_id[~member(calls.corr[with_id], kernel_ids)]
    # under-recorded replays: a graph launch with no kernel while other graph launches have theirs
    unrecorded = empty if len(empty) < len(with_id) else empty[:0]
    details = {"kernels": replayed, "mode": mode, "unrecorded": len(unrecorded)}
    stands = (
        f"{plural(graphs, 'graph launch')} {verb(graphs, 'stands', 'stand')} for "
        f"{plural(replayed, 'kernel')} ({mode} trace)"
    )
    if not len(unrecorded):
        return CHECK.verdict(
            graphs, "info", f"{stands}; every replay's kernels are recorded",
            "a graph launch runs many kernels from one call, so per-op GPU time cannot be attributed to PyTorch "
            "ops and the CPU side shows one call per replay; the kernels' own times are complete",
            details=details,
            examples=[call_example(contents, calls, int(i)) for i in np.flatnonzero(calls.graph)[:EXAMPLES]],
        )  # fmt: skip
    n = len(unrecorded)
    return CHECK.verdict(
        graphs,
        "warning",
        f"{stands}; {plural(n, 'replay')} {verb(n, 'has', 'have')} no kernel recorded while "
        f"{plural(len(with_id) - n, 'other')} {verb(len(with_id) - n, 'has', 'have')} theirs",
        "the profiler under-recorded the graph's replays: idle % and GPU busy time from this trace are too low "
        "(AMD-AGI/Hyperloom PR #1121: only about 1 of N replays recorded). Compare with an eager trace of the "
        "same step",
        details=details,
        examples=[
            call_example(contents, calls, int(i), "no kernel has this correlation id") for i in unrecorded[:EXAMPLES]
        ],
        samples=call_samples(contents, calls, unrecorded),
    )
