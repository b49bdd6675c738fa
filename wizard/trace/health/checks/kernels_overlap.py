"""kernels-overlap: kernels Perfetto cannot nest on their row (its rule: wizard/trace/health/nesting.py).

What the status says (issue 45): a user acts on an overlap when it makes a number they read materially wrong;
one that is systematic, each below a kernel launch's latency and small in all, changes no number and is ``info``,
worded with what is known of it. Four kinds are told apart, per kernel that cannot nest:

- ``pdl``: Programmatic Dependent Launch, its evidence the kernel's own eager ``cuLaunchKernelEx`` /
  ``cudaLaunchKernelExC`` call, overlapping a kernel by at most ``PDL_OVERLAP_US`` (B200: 0.13-3.7 µs).
- ``rounding``: ending at most ``ROUNDING_US`` after the annotation or copy it overlaps (a microsecond-epoch
  double steps by 0.25 µs, so equal decimal ends come apart in Perfetto's nanoseconds).
- ``sub_latency``: any other overlap of a kernel by at most ``SUB_LATENCY_US`` (20 µs): under the time one launch
  takes to reach the GPU, so no launch a user changes moves it. Seen: 0.13-4.6 µs inside B300 decode graph replays
  (CUDA graphs carry programmatic edges, ``CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC``, that a trace does not record,
  and PyTorch's Cuspy clamps CUPTI's graph-replay kernels because their timestamps overlap "~13%" of the time:
  ``torch/profiler/_cuspy/trace.py``, ``_build_render_stages``), 1-13 µs in V100 replays, 12.4 µs once in 4,010
  eager kernels (an Nsight Systems export), 0.11-2.4 µs on ROCm traces. The shortest launch-to-kernel time of
  the shared traces (clock-skew's ``min_us``) is 5.0-17.2 µs: 20 µs is one launch's latency with room, and
  above every overlap of this kind seen.
- ``concurrent``: overlapping a kernel of another stream drawn on the same row. A Kineto row is one CUDA stream, so
  this happens only where an exporter moved kernels onto display lanes: PyTorch's ``export_chrome_trace(...,
  cuda_graph_annotations=..., graph_lanes="all")`` (pytorch/pytorch#194854, ``torch/profiler/_chrome_trace_export.py``)
  puts each graphed kernel on its annotation's lane or on ``default_stream`` (7), writes the lane as ``tid`` and
  ``args.stream`` and the stream it ran on as ``args.original_stream``, and Cuspy's logical lanes do the same. The
  reader keeps ``original_stream`` as the kernel's stream, so two kernels of one lane from different streams ran
  concurrently, as streams do: no timestamp is wrong, only the viewer draws one lane. Checked before the others.
- the rest: a kernel that overruns the event before it by more, or an annotation by more than a rounding.

``info`` when there is no rest and the ``sub_latency`` overlaps add up to at most ``MARGIN`` (10%) of the
trace's kernel time counted once (every kernel's duration added up, less those overlaps): past it the summed
kernel time exceeds the time counted once by more than the margin at which summary-table calls a sum
misleading. ``warning`` otherwise (a duration the GPU cannot have had, or overlap enough to change the sums a
user reads).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import msgspec

from wizard.formatting import plural, verb
from wizard.trace.health.spec import (
    EXAMPLES,
    MARGIN,
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
# the evidence that an overlap was asked for; a graph replay's kernels share one cudaGraphLaunch, which says nothing.
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
# The longest overlap of a kernel still below a kernel launch's latency (module docstring: the evidence); such
# overlaps are info while they add up to at most MARGIN of the trace's kernel time counted once.
SUB_LATENCY_US = 20.0


class KernelsOverlapDetails(TypedDict):
    kernels: Annotated[int, "kernel events"]
    lanes: Annotated[int, "rows holding a kernel that cannot nest"]
    pdl: Annotated[int, "of those kernels, Programmatic Dependent Launch's"]
    rounding: Annotated[int, "of those kernels, a rounding's"]
    graph: Annotated[int, "of those kernels, run by a graph launch"]
    sub_latency: Annotated[int, "of those kernels, overlapping a kernel by less than a launch's latency"]
    concurrent: Annotated[int, "of those kernels, overlapping a kernel of another stream drawn on the same lane"]
    sub_latency_us: Annotated[float, "those kernels' overlaps added up, in µs"]
    kernel_us: Annotated[float, "every kernel's duration added up, in µs (the time the overlaps are a share of)"]
    material: Annotated[bool, "whether sub_latency_us is more than the margin of the kernel time counted once"]
    max_overlap_us: Annotated[float, "the longest overlap, in µs"]
    other_events: Annotated[dict[str, int], "other events of kernel rows that cannot nest, by category"]
    too_deep: Annotated[int, "kernels nested deeper than Perfetto's 512 levels on their row, which it does not draw"]


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
        " a kernel), `kernels`, `concurrent` (those overlapping a kernel of another stream on the same row: a row "
        "that is a display lane, where an exporter moved graphed kernels, each kernel's stream its "
        "`args.original_stream`: PyTorch's `graph_lanes`, Cuspy's logical lanes), `pdl` (the others launched by an "
        "eager `cuLaunchKernelEx`/`cudaLaunchKernelExC` call with their correlation id that overlap a kernel by "
        f"at most {PDL_OVERLAP_US:g} µs), `rounding` "
        f"(those that end at most {ROUNDING_US:g} µs after the annotation or copy they overlap), `graph` (those "
        f"a graph launch ran), `sub_latency` (the others that overlap a kernel by at most {SUB_LATENCY_US:g} µs, "
        "less than a kernel launch's latency: graph replays' timestamps, a timestamp's jitter), `sub_latency_us` "
        f"(their overlaps added up), `material` (`sub_latency_us` above {MARGIN:.0%} of `kernel_us` minus it: "
        "summed kernel time over the time counted once by more than summary-table's margin), "
        "`kernel_us` (every kernel's duration added up, a negative or missing one as 0), "
        "`max_overlap_us` (the open event's end minus the kernel's start, at most), `other_events` (the other"
        " events of kernel rows that cannot nest, by category: counted apart, not in `count`, status `ok` "
        "when no kernel is among them), `too_deep` (kernels that nest but would open 512 or more levels deep on "
        "their row: Perfetto's slice tracker drops them, `kMaxDepth`, so no version draws them; counted in `count`)"
    ),
    status_rule=(
        "`info` when each is `concurrent`, `pdl`, `rounding` or `sub_latency` and not `material`: the viewer "
        "suffers, no "
        "number read from the trace changes; `warning` otherwise: a duration that overruns its successor by more "
        "than a launch's latency, an annotation overrun past a rounding, or overlaps that change the summed "
        "kernel time; `not_applicable` without kernels"
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
            "of those, run by a graph launch (one correlation id: no launch call of their own says why)",
            "graph",
        ),
        CheckFact(
            "sub_latency_overlapping_kernels",
            int,
            f"of those, the others overlapping a kernel by at most {SUB_LATENCY_US:g} µs (under a launch's latency)",
            "sub_latency",
        ),
        CheckFact(
            "overlap_changes_sums",
            bool,
            f"whether the sub-latency overlaps add up to more than {MARGIN:.0%} of the kernel time counted once (any "
            "trace)",
            "material",
            "any",
            False,
        ),
    ),
    colour="#bf8700",
    fix=_overlap_fix(),
)


class _Hidden(msgspec.Struct, eq=False):
    """The kernels-overlap check's facts: which events of the kernel rows Perfetto cannot nest."""

    kernels: Ints  # kernel positions, in the rows' order
    against: Ints  # per kernel: the position in its table of the open event it cannot nest under
    overlap_ns: Ints  # per kernel: how long it shares with the open event it cannot nest under
    overhang_ns: Ints  # per kernel: how far it runs past that event's end
    under_kernel: npt.NDArray[np.bool_]  # per kernel: that open event is a kernel (not an annotation, copy, ...)
    rows: int  # rows holding such a kernel
    others: Counter[str]  # non-kernel events that cannot nest, by category
    deep: Ints  # kernel positions nested past Perfetto's depth limit (dropped, not drawn)


def _hidden(contents: TraceContents) -> _Hidden:
    """Perfetto's rule over the kernel rows (``nesting``), kept to the kernels, and the rest counted by category."""
    import numpy as np

    from wizard.trace.health import nesting
    from wizard.trace.health.tables import distinct

    events = nesting.gather(contents)
    hidden, against, deep = nesting.walk(events)
    is_kernel = events.kind[hidden] == nesting.KERNEL if len(hidden) else np.zeros(0, dtype=bool)
    mine, theirs = hidden[is_kernel], against[is_kernel]
    others = Counter(events.categories[j] for j in hidden[~is_kernel].tolist())
    return _Hidden(
        events.ref[mine],
        events.ref[theirs],
        events.ts[theirs] + events.dur[theirs] - events.ts[mine],
        events.ts[mine] + events.dur[mine] - events.ts[theirs] - events.dur[theirs],
        events.kind[theirs] == nesting.KERNEL,
        len(distinct(events.row[mine])),
        others,
        events.ref[deep[events.kind[deep] == nesting.KERNEL]] if len(deep) else np.zeros(0, dtype=np.int64),
    )


def _pdl(calls: Calls, corr: Ints) -> npt.NDArray[np.bool_]:
    """Which of these correlation ids an eager launch call that can ask for PDL made."""
    import numpy as np

    from wizard.trace.health.tables import distinct, member

    ex = np.array([n in PDL_LAUNCH_CALLS for n in calls.names] or [False])
    made = calls.launch & ex[calls.name_of] if len(calls.name_of) else np.zeros(0, dtype=bool)
    ids = distinct(calls.corr[made & (calls.corr != NO_CORRELATION)])
    return member(corr, ids)


class _Kinds(msgspec.Struct, eq=False):
    """Per kernel that cannot nest, which kind of overlap it is (module docstring), and the words it needs."""

    pdl: npt.NDArray[np.bool_]
    rounding: npt.NDArray[np.bool_]
    sub_latency: npt.NDArray[np.bool_]
    concurrent: npt.NDArray[np.bool_]
    graph: npt.NDArray[np.bool_]
    launched_ex: npt.NDArray[np.bool_]
    graph_api: str  # the trace's own graph launch call(s): cudaGraphLaunch, hipGraphLaunch
    rocm: bool
    unwritable: str  # the format, with its article, when `trace fix` cannot write a copy of it; else ""


def _graph_api(calls: Calls, rocm: bool) -> str:
    """The graph launch calls the trace holds, by name (a HIP trace's is hipGraphLaunch); else the platform's."""
    from wizard.trace.health.tables import distinct  # not np.unique: it imports numpy.ma (17 ms at start-up)

    made = distinct(calls.name_of[calls.graph]).tolist() if len(calls.name_of) else []
    found = sorted({calls.names[i] for i in made})
    return " / ".join(found) if found else ("hipGraphLaunch" if rocm else "cudaGraphLaunch")


def _kinds(t: Tables, found: _Hidden, overlap_us: Floats) -> _Kinds:
    """Each hidden kernel's kind: pdl, rounding, sub_latency, or none (the rest)."""
    from wizard.trace.health.tables import distinct, member
    from wizard.trace.read.formats import BY_ID

    calls, contents = t.calls, t.contents
    corr = t.kernels.corr[found.kernels]
    launched_ex = _pdl(calls, corr)
    concurrent = found.under_kernel & _other_stream(t, found)
    pdl = launched_ex & found.under_kernel & ~concurrent & (overlap_us <= PDL_OVERLAP_US)
    rounding = ~found.under_kernel & (found.overhang_ns <= ROUNDING_US * 1000)
    sub_latency = found.under_kernel & ~pdl & ~concurrent & (overlap_us <= SUB_LATENCY_US)
    graph = member(corr, distinct(calls.corr[calls.graph & (calls.corr != NO_CORRELATION)]))
    fmt = BY_ID.get(contents.format)
    return _Kinds(
        pdl, rounding, sub_latency, concurrent, graph, launched_ex, _graph_api(calls, contents.is_rocm),
        contents.is_rocm, "" if fmt is None or fmt.rewritable else fmt.name_with_article,
    )  # fmt: skip


def _other_stream(t: Tables, found: _Hidden) -> npt.NDArray[np.bool_]:
    """Per hidden kernel: whether the open event is a kernel of another stream (a lane holding several: module
    docstring). Only meaningful where ``under_kernel``; the stream is the one the kernel ran on (original_stream)."""
    import numpy as np

    shapes = t.kernels.shapes
    stream_id: dict[Any, int] = {}
    of_shape = np.array([stream_id.setdefault(s[4], len(stream_id)) for s in shapes] or [0], dtype=np.int64)
    if not len(found.kernels):
        return np.zeros(0, dtype=bool)
    mine = of_shape[t.kernels.shape[found.kernels]]
    against = np.where(found.under_kernel, found.against, 0)
    theirs = of_shape[t.kernels.shape[against]] if len(t.kernels.shape) else mine
    return np.asarray(mine != theirs)


def _kernel_us(t: Tables) -> float:
    """Every kernel's duration added up (negative, missing or non-finite as 0): what summed kernel time reads."""
    import numpy as np

    dur = t.kernels.dur
    return float(np.where(np.isfinite(dur) & (dur > 0), dur, 0.0).sum())


def run(tables: Tables) -> HealthCheck:
    import numpy as np

    from wizard.trace.health.tables import kernel_samples

    kernels = tables.kernels
    if not len(kernels.ts):
        return CHECK.not_applicable(
            "no GPU kernels",
            kernels=0, lanes=0, pdl=0, rounding=0, graph=0, sub_latency=0, concurrent=0, sub_latency_us=0.0,
            kernel_us=0.0,
            material=False, max_overlap_us=0.0, other_events={}, too_deep=0,
        )  # fmt: skip
    found = _hidden(tables.contents)
    count = len(found.kernels) + len(found.deep)
    overlap_us = found.overlap_ns / 1000.0
    kinds = _kinds(tables, found, overlap_us)
    kernel_us = _kernel_us(tables)
    sub_us = float(overlap_us[kinds.sub_latency].sum())
    details = {
        "kernels": len(kernels.ts), "lanes": found.rows, "pdl": int(kinds.pdl.sum()),
        "rounding": int(kinds.rounding.sum()), "graph": int(kinds.graph.sum()),
        "sub_latency": int(kinds.sub_latency.sum()), "concurrent": int(kinds.concurrent.sum()),
        "sub_latency_us": round(sub_us, 3),
        "kernel_us": round(kernel_us, 3),
        "material": bool(sub_us > MARGIN * (kernel_us - sub_us)),
        "max_overlap_us": float(overlap_us.max()) if len(overlap_us) else 0.0,
        "other_events": dict(sorted(found.others.items(), key=lambda kv: (-kv[1], kv[0]))),
        "too_deep": len(found.deep),
    }  # fmt: skip
    status, summary, meaning = _overlap_verdict(count, found, details, overlap_us, kinds)
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
                + (" (launched with cuLaunchKernelEx/cudaLaunchKernelExC)" if kinds.launched_ex[i] else "")
                + (f" (in a graph replay: {kinds.graph_api})" if kinds.graph[i] else ""),
            )
            for i in first
        ],
        samples=kernel_samples(kernels, found.kernels),
    )  # fmt: skip


def _sub_latency_words(kinds: _Kinds, overlap_us: Floats, details: dict[str, Any]) -> str:
    """What is known of overlaps below a launch's latency: in a graph replay, a graph's unrecorded edges or CUPTI's
    replay timestamps (CUDA); eagerly, one timestamp off by less than a launch takes; and their share of the sums."""
    sub, graph = kinds.sub_latency, kinds.sub_latency & kinds.graph
    parts = []
    if graph.any():
        n = int(graph.sum())
        why = (
            "nothing in the trace says why (one launch call for the whole replay)"
            if kinds.rocm
            else "a graph's kernel nodes can carry programmatic edges (CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC) the "
            "trace does not record, and CUPTI's graph-replay timestamps overlap by themselves (PyTorch's Cuspy "
            "clamps them before writing)"
        )
        parts.append(
            f"{plural(n, 'kernel')} of graph replays ({kinds.graph_api}) {verb(n, 'overlaps', 'overlap')} the "
            f"kernel before {verb(n, 'it', 'them')} by at most {float(overlap_us[graph].max()):.3f} µs: {why}"
        )
    eager = sub & ~kinds.graph
    if eager.any():
        n = int(eager.sum())
        parts.append(
            f"{plural(n, 'kernel')} launched one by one {verb(n, 'overlaps', 'overlap')} the kernel before "
            f"{verb(n, 'it', 'them')} by at most {float(overlap_us[eager].max()):.3f} µs with no PDL launch: one of "
            "the two timestamps is off by less than a launch takes"
        )
    total, kernel_us = details["sub_latency_us"], details["kernel_us"]
    once = kernel_us - total  # the kernel time with those overlaps counted once
    share = total / once if once > 0 else 0.0
    share_words = f"{share:.2%}" if share >= 0.0001 or share == 0 else "under 0.01%"
    sums = (
        f"more than {MARGIN:.0%}: summed kernel time (Self CUDA, per-kernel totals) counts that time twice"
        if details["material"]
        else f"at most {MARGIN:.0%}: no number read from the trace changes"
    )
    return (
        f"{'; '.join(parts)}. Each is under {SUB_LATENCY_US:g} µs, a kernel launch's latency, and together "
        f"{total:,.3f} µs, {share_words} of the {once:,.1f} µs of kernel time counted once ({sums})"
    )


def _rest_words(rest: npt.NDArray[np.bool_], kinds: _Kinds) -> str:
    n = int(rest.sum())
    graph = int((rest & kinds.graph).sum())
    replay = (
        f", {plural(graph, 'graph-replay kernel')} among them (one {kinds.graph_api} for the replay: no launch "
        "call of their own says why)"
        if graph
        else ""
    )
    return (
        f"{plural(n, 'other')} {verb(n, 'overruns', 'overrun')} the event before {verb(n, 'it', 'them')} by more "
        f"than a launch's latency ({SUB_LATENCY_US:g} µs) or an annotation past a rounding{replay}: a recorded "
        "duration or time the GPU cannot have had"
    )


def _causes(kinds: _Kinds, overlap_us: Floats, details: dict[str, Any]) -> list[str]:
    """Why the kernels overlap, kind by kind (module docstring)."""
    pdl, rounding = details["pdl"], details["rounding"]
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
    concurrent = details["concurrent"]
    if concurrent:
        causes.append(
            f"{plural(concurrent, 'kernel')} {verb(concurrent, 'overlaps', 'overlap')} a kernel of another stream "
            "drawn on the same row: the exporter moved graphed kernels onto display lanes (PyTorch's "
            "export_chrome_trace graph_lanes, or Cuspy's logical lanes; each kernel's stream is its "
            "args.original_stream), so a row here is a lane, not a CUDA stream, and these ran concurrently as streams "
            "do; export with graph_lanes='none' to see the streams as rows"
        )
    if kinds.sub_latency.any():
        causes.append(_sub_latency_words(kinds, overlap_us, details))
    rest = ~(kinds.pdl | kinds.rounding | kinds.sub_latency | kinds.concurrent)
    if rest.any():
        causes.append(_rest_words(rest, kinds))
    return causes


def _overlap_verdict(
    count: int, found: _Hidden, details: dict[str, Any], overlap_us: Floats, kinds: _Kinds
) -> tuple[str, str, str]:
    """Status and words: PDL's, a rounding's, small sub-latency overlaps and streams drawn on one lane are ``info``
    (only the viewer suffers); the rest, or sub-latency overlaps that add up, a ``warning`` (module docstring)."""
    others = sum(found.others.values())
    other_words = (
        f"; {plural(others, 'other GPU event')} ({', '.join(found.others)}) cannot nest either" if others else ""
    )
    if not count:
        return "ok", f"every kernel nests on its row, as Perfetto draws it{other_words}", ""
    if count == len(found.deep):
        return "warning", _deep_words(len(found.deep)) + other_words, _deep_meaning(kinds)
    summary = (
        f"{plural(count, 'kernel')} {verb(count, 'starts', 'start')} inside an earlier event on "
        f"{verb(count, 'its', 'their')} row and {verb(count, 'ends', 'end')} after it "
        f"({plural(found.rows, 'row')}, by up to {float(overlap_us.max()):.3f} µs): hidden before Perfetto v57, "
        f"apart with a wrong launch arrow from v57{other_words}"
    )
    fix = (
        f"`trace fix` writes corrected copies of Chrome trace JSON only, and this file is {kinds.unwritable}"
        if kinds.unwritable
        else "`warpwizard trace fix --split-overlaps` writes a copy with them on rows of their own and each arrow on "
        "its own kernel"
    )
    meaning = (
        "Perfetto cannot nest a slice that starts inside another on its row and ends after it: v51 to v56 drop it "
        "(hidden), v57 on (ui.perfetto.dev) draw it on an extra row, and in both its launch arrow binds to the "
        "row's top slice, another event; older Perfetto builds embedded in other tools may misnest it. "
        f"{'; '.join(_causes(kinds, overlap_us, details))}. {fix}"
    )
    if len(found.deep):
        summary += f"; {_deep_words(len(found.deep))}"
        meaning += f" {_deep_meaning(kinds)}"
    rest = count - details["pdl"] - details["rounding"] - details["sub_latency"] - details["concurrent"]
    return ("info" if rest == 0 and not details["material"] else "warning"), summary, meaning


def _deep_words(deep: int) -> str:
    from wizard.trace.health.nesting import MAX_DEPTH

    return (
        f"{plural(deep, 'kernel')} {verb(deep, 'nests', 'nest')} {MAX_DEPTH} or more levels deep on "
        f"{verb(deep, 'its', 'their')} row: Perfetto does not draw {verb(deep, 'it', 'them')}"
    )


def _deep_meaning(kinds: _Kinds) -> str:
    """Why a kernel nested too deep is missing from the viewer, and what writes a copy that shows it."""
    from wizard.trace.health.nesting import MAX_DEPTH

    fix = (
        f"`trace fix` writes corrected copies of Chrome trace JSON only, and this file is {kinds.unwritable}"
        if kinds.unwritable
        else "`warpwizard trace fix --split-overlaps` writes a copy with them on rows of their own"
    )
    return (
        f"Perfetto's trace processor drops a slice that would open {MAX_DEPTH} levels deep on its row (its slice "
        f"tracker's kMaxDepth), in every version: such kernels are missing from the timeline, not drawn apart. {fix}."
    )
