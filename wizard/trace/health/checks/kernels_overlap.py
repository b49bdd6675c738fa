"""kernels-overlap: kernels Perfetto cannot nest on their row (its rule: wizard/trace/health/nesting.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    CheckFact,
    CheckFix,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.read.records import NO_CORRELATION

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from wizard.trace.health.tables import Calls, Floats, Ints, Tables
    from wizard.trace.read.collector import TraceContents


# Launch calls that can carry the programmatic-stream-serialization attribute (Programmatic Dependent Launch):
# the evidence that an overlap was asked for; a graph replay's kernels share one cudaGraphLaunch and are not it.
PDL_LAUNCH_CALLS = frozenset(
    {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz"}
)
# The longest overlap still read as PDL's: the dependent kernel starts while its predecessor's last blocks drain
# (on the B200 trace 0.13-3.7 µs); a predecessor whose recorded end runs tens of µs past its successor's start
# is a duration the GPU cannot have had, not a launch the program asked for (docs/health.md).
PDL_OVERLAP_US = 5.0
# A kernel that ends this little after the annotation or copy around it shares that event's microsecond: Perfetto's
# llround(us * 1000) of microsecond-epoch doubles (a step of 0.25 µs) puts equal decimal ends apart.
ROUNDING_US = 1.0


class KernelsOverlapDetails(TypedDict):
    kernels: Annotated[int, "kernel events"]
    lanes: Annotated[int, "rows holding a kernel that cannot nest"]
    pdl: Annotated[int, "of those kernels, Programmatic Dependent Launch's"]
    rounding: Annotated[int, "of those kernels, a rounding's"]
    graph: Annotated[int, "of those kernels, run by a graph launch"]
    max_overlap_us: Annotated[float, "the longest overlap, in µs"]
    other_events: Annotated[dict[str, int], "other events of kernel rows that cannot nest, by category"]


def _overlap_fix() -> CheckFix:
    return CheckFix(
        option="--split-overlaps",
        output="lanes",
        unit="kernel",
        found=("starts inside an earlier event", "start inside an earlier event"),
        means=(
            "and ends after it: Perfetto hides such a kernel before v57 and draws it apart, its launch arrow on "
            "another kernel, from v57. This writes a copy that shows them all, each arrow on its own kernel, on new "
            "rows",
            "and end after it: Perfetto hides such a kernel before v57 and draws it apart, its launch arrow on "
            "another kernel, from v57. This writes a copy that shows them all, each arrow on its own kernel, on new "
            "rows",
        ),
        row="(overlapping kernels, lane 1)",
        rest=", lane 2 and so on, the lowest free at each start:",
        rows="lanes",
    )


CHECK = CheckSpec(
    "kernels-overlap",
    "kernels-hidden",
    "kernels overlapping on a stream",
    KernelsOverlapDetails,
    order=30,
    triage_rank=40,
    counts=(
        "kernels Perfetto cannot nest on their row, by Perfetto's own rule (below): per row (`pid`, `tid` as "
        "Perfetto keys them: a number as an unsigned 32-bit one, out of range 0; a `tid` of 0 is the `pid` "
        "when that is not 0), every complete event of the row (kernels, `gpu_memcpy`/`gpu_memset`, "
        "`gpu_user_annotation`, `cuda_sync`, any other X event the trace puts there) in the order `ts`, the "
        "longer first, file order, with times as Perfetto's nanoseconds (`llround(us * 1000)`, a whole number"
        " of µs times 1000); an event that ends at or before the end of the innermost open event nests under "
        "it (equal ends and zero durations nest; an event starting where the open one ends closes it), one "
        "that starts inside it and ends after it cannot nest and is left off the row. `lanes` (rows with such"
        " a kernel), `kernels`, `pdl` (those launched by an eager `cuLaunchKernelEx`/`cudaLaunchKernelExC` "
        f"call with their correlation id that overlap a kernel by at most {PDL_OVERLAP_US:g} µs), `rounding` "
        f"(those that end at most {ROUNDING_US:g} µs after the annotation or copy they overlap), `graph` (those "
        "a graph launch ran), "
        "`max_overlap_us` (the open event's end minus the kernel's start, at most), `other_events` (the other"
        " events of kernel rows that cannot nest, by category: counted apart, not in `count`, status `ok` "
        "when no kernel is among them)"
    ),
    status_rule=(
        "`info` when each is `pdl` or `rounding`: only the viewer suffers; `warning` otherwise: a duration "
        "that overruns its successor, or an overlap nothing in the trace asked for; `not_applicable` without kernels"
    ),
    facts=(
        CheckFact(
            "overlapping_kernels",
            int,
            "kernels Perfetto cannot nest on their row: they start inside an earlier event and end after it",
        ),
        CheckFact(
            "pdl_overlapping_kernels",
            int,
            f"of those, launched with cuLaunchKernelEx/cudaLaunchKernelExC and overlapping a kernel by at most "
            f"{PDL_OVERLAP_US:g} µs",
            "pdl",
        ),
        CheckFact(
            "rounding_overlapping_kernels",
            int,
            f"of those, ending at most {ROUNDING_US:g} µs after the annotation or copy they overlap (a rounding)",
            "rounding",
        ),
        CheckFact(
            "graph_overlapping_kernels",
            int,
            "of those, run by a graph launch (one correlation id: not PDL)",
            "graph",
        ),
    ),
    colour="#bf8700",
    fix=_overlap_fix(),
)


@dataclass(slots=True)
class _Hidden:
    """The kernels-overlap check's facts: which events of the kernel rows Perfetto cannot nest."""

    kernels: Ints  # kernel positions, in the rows' order
    overlap_ns: Ints  # per kernel: how long it shares with the open event it cannot nest under
    overhang_ns: Ints  # per kernel: how far it runs past that event's end
    under_kernel: npt.NDArray[np.bool_]  # per kernel: that open event is a kernel (not an annotation, copy, ...)
    rows: int  # rows holding such a kernel
    others: Counter[str]  # non-kernel events that cannot nest, by category


def _hidden(contents: TraceContents) -> _Hidden:
    """Perfetto's rule over the kernel rows (``nesting``), kept to the kernels, and the rest counted by category."""
    import numpy as np

    from wizard.trace.health import nesting
    from wizard.trace.health.tables import distinct

    events = nesting.gather(contents)
    hidden, against = nesting.cannot_nest(events)
    is_kernel = events.kind[hidden] == nesting.KERNEL if len(hidden) else np.zeros(0, dtype=bool)
    mine, theirs = hidden[is_kernel], against[is_kernel]
    others = Counter(events.categories[j] for j in hidden[~is_kernel].tolist())
    return _Hidden(
        events.ref[mine],
        events.ts[theirs] + events.dur[theirs] - events.ts[mine],
        events.ts[mine] + events.dur[mine] - events.ts[theirs] - events.dur[theirs],
        events.kind[theirs] == nesting.KERNEL,
        len(distinct(events.row[mine])),
        others,
    )


def _pdl(calls: Calls, corr: Ints) -> npt.NDArray[np.bool_]:
    """Which of these correlation ids an eager launch call that can ask for PDL made."""
    import numpy as np

    from wizard.trace.health.tables import distinct, member

    ex = np.array([n in PDL_LAUNCH_CALLS for n in calls.names] or [False])
    made = calls.launch & ex[calls.name_of] if len(calls.name_of) else np.zeros(0, dtype=bool)
    ids = distinct(calls.corr[made & (calls.corr != NO_CORRELATION)])
    return member(corr, ids)


def run(t: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import distinct, kernel_samples, member

    contents, calls, kernels = t.contents, t.calls, t.kernels
    n = len(kernels.ts)
    if not n:
        return CHECK.not_applicable(
            "no GPU kernels",
            kernels=0, lanes=0, pdl=0, rounding=0, graph=0, max_overlap_us=0.0, other_events={},
        )  # fmt: skip
    found = _hidden(contents)
    count = len(found.kernels)
    corr = kernels.corr[found.kernels]
    overlap_us = found.overlap_ns / 1000.0
    launched_ex = _pdl(calls, corr)
    pdl = launched_ex & found.under_kernel & (overlap_us <= PDL_OVERLAP_US)
    rounding = ~found.under_kernel & (found.overhang_ns <= ROUNDING_US * 1000)
    graph_ids = distinct(calls.corr[calls.graph & (calls.corr != NO_CORRELATION)])
    graph = int(member(corr, graph_ids).sum())
    details = {
        "kernels": n, "lanes": found.rows, "pdl": int(pdl.sum()), "rounding": int(rounding.sum()), "graph": graph,
        "max_overlap_us": float(overlap_us.max()) if count else 0.0,
        "other_events": dict(sorted(found.others.items(), key=lambda kv: (-kv[1], kv[0]))),
    }  # fmt: skip
    status, summary, meaning = _overlap_verdict(count, found, details, overlap_us)
    if not count:
        return CHECK.verdict(0, status, summary, meaning, details=details)
    first = np.argsort(found.kernels, kind="stable")[:EXAMPLES].tolist()
    return CHECK.verdict(
        count, status, summary, meaning, details=details,
        examples=[
            kernels.example(
                int(found.kernels[i]),
                f"starts {overlap_us[i]:.3f} µs before the {'kernel' if found.under_kernel[i] else 'event'} "
                "open on its row ends, and ends after it"
                + (" (launched with cuLaunchKernelEx/cudaLaunchKernelExC)" if launched_ex[i] else ""),
            )
            for i in first
        ],
        samples=kernel_samples(kernels, found.kernels),
    )  # fmt: skip


def _overlap_verdict(count: int, found: _Hidden, details: dict[str, Any], overlap_us: Floats) -> tuple[str, str, str]:
    """Status and words: overlaps of PDL's size with its launch evidence, and ends a rounding apart, are ``info``
    (only the viewer suffers); anything else a ``warning`` (a duration that overruns its successor, or an overlap
    nothing in the trace asked for)."""
    others = sum(found.others.values())
    other_words = (
        f"; {plural(others, 'other GPU event')} ({', '.join(found.others)}) cannot nest either" if others else ""
    )
    if not count:
        return "ok", f"every kernel nests on its row, as Perfetto draws it{other_words}", ""
    pdl, rounding, graph = details["pdl"], details["rounding"], details["graph"]
    rest = count - pdl - rounding
    summary = (
        f"{plural(count, 'kernel')} {verb(count, 'starts', 'start')} inside an earlier event on "
        f"{verb(count, 'its', 'their')} row and {verb(count, 'ends', 'end')} after it "
        f"({plural(found.rows, 'row')}, by up to {float(overlap_us.max()):.3f} µs): hidden before Perfetto v57, "
        f"apart with a wrong launch arrow from v57{other_words}"
    )
    causes = []
    if pdl:
        causes.append(
            f"{plural(pdl, 'kernel')} launched with cuLaunchKernelEx/cudaLaunchKernelExC "
            f"{verb(pdl, 'overlaps', 'overlap')} a kernel by at most {PDL_OVERLAP_US:g} µs: Programmatic Dependent "
            "Launch, the GPU ran them overlapped on purpose"
        )
    if rounding:
        causes.append(
            f"{plural(rounding, 'kernel')} {verb(rounding, 'ends', 'end')} at most {ROUNDING_US:g} µs after the "
            f"annotation or copy around {verb(rounding, 'it', 'them')}: the same microsecond, apart once Perfetto "
            "rounds microseconds to nanoseconds"
        )
    if rest:
        replay = (
            f", {plural(graph, 'graph-replay kernel')} among them (one cudaGraphLaunch: not Programmatic Dependent "
            "Launch)"
            if graph
            else ""
        )
        causes.append(
            f"{plural(rest, 'other')} overrun the event before {verb(rest, 'it', 'them')}{replay}: a recorded "
            "duration or time the GPU cannot have had, or an overlap nothing in the trace asked for"
        )
    meaning = (
        "Perfetto cannot nest a slice that starts inside another on its row and ends after it: v51 to v56 drop it "
        "(hidden), v57 on (ui.perfetto.dev) draw it on an extra row, and in both its launch arrow binds to the "
        "row's top slice, another event; older Perfetto builds embedded in other tools may misnest it. "
        f"{'; '.join(causes)}. `warpwizard trace fix --split-overlaps` writes a copy with them on rows of their own "
        "and each arrow on its own kernel"
    )
    return ("info" if rest == 0 else "warning"), summary, meaning
