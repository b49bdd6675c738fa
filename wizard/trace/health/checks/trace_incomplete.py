"""trace-incomplete: a trace cut short (events lost), or one with a GPU and not one GPU event.

Both leave every GPU number a reader takes from the trace short or absent, with nothing else saying so: the reader
keeps what lies before a cut (its ``Truncation``), and a trace whose GPU was never recorded reads as a healthy CPU
trace. Evidence (pytorch/kineto at ``spec.KINETO``, libkineto/src/output_json.cpp): Kineto opens the event list at
the start (``handleTraceStart``, 445-478) and closes it only in ``finalizeTrace`` (1066-1108) with a "Record
Window End" event, after which come the ``distributedInfo`` it gathered and ``traceName``; it writes to
``NAME.tmp`` (``openTraceFile``, 485-493) and renames it once closed, returning early without the rename when a
write failed (1067-1070). So a file that ends inside its event list lost at least that last event and every event
written after the cut (a crash or kill while writing, a full disk, or a copy cut short): ``error``, like
``kernels-missing``'s dropped records, because every count is short. A cut after the list lost no event: ``info``.
Kineto lists the GPUs (``deviceProperties``) whatever activities it records (GenericActivityProfiler.cpp:163-178,
``devicePropertiesJson()``, from ``cudaGetDeviceCount`` in DeviceProperties.cpp:50-72), so a GPU listed, or CUDA
calls recorded, with not one kernel, copy or set is either a CPU-only profile or CUPTI recording nothing:
``warning``, which the kernels-missing playbook tells apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from wizard.formatting import plural, verb
from wizard.trace.health.spec import CheckFact, CheckSpec, HealthCheck

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables
    from wizard.trace.read.collector import TraceContents, Truncation


class TraceIncompleteDetails(TypedDict):
    cut: Annotated[bool, "the file ends before its end (the reader recorded a truncation)"]
    events_lost: Annotated[bool, "the cut fell inside the event list: every event written after it is lost"]
    at_byte: Annotated[int | None, "where the file ends: the byte of the JSON (unpacked) where reading stopped"]
    partial_event_bytes: Annotated[int, "bytes of an event cut in half, dropped"]
    events_read: Annotated[int, "events read (before the cut, in a cut trace)"]
    last_ts: Annotated[float | None, "the timestamp of the last event read (µs)"]
    gpus: Annotated[int, "GPUs the trace's deviceProperties lists"]
    gpu_api_calls: Annotated[int, "CUDA or HIP runtime and driver calls"]
    gpu_events: Annotated[int, "events on a GPU: kernels, copies, sets and range-profiler measurements"]


CHECK = CheckSpec(
    "trace-incomplete",
    "kernels-missing",
    "trace incomplete",
    TraceIncompleteDetails,
    order=15,
    triage_rank=10,
    counts=(
        "events read before the cut (a cut trace: every event for a cut after the list), else GPU API calls in a "
        "trace with a GPU and no GPU event (the GPUs `deviceProperties` lists when there are no calls); 0 when "
        "nothing is incomplete; `cut`, `events_lost`, `at_byte`, `partial_event_bytes`, `events_read`, `last_ts`, "
        "`gpus`, `gpu_api_calls`, `gpu_events`"
    ),
    status_rule=(
        "`error` when the file ends inside its event list (every event written after the cut is lost); "
        "`warning` when the whole file holds not one event (nothing to check), or when `deviceProperties` lists a GPU "
        "or the trace has CUDA/HIP calls and it has not one kernel, copy, set or `cuda_profiler_range` event; `info` "
        "when the file was cut after its event list (every event read); `ok` otherwise (events and no GPU listed or "
        "called: a CPU-only profile)"
    ),
    facts=(
        CheckFact("trace_cut", bool, "whether a trace ends inside its event list (events lost)", "events_lost", "any"),
        CheckFact("events_before_cut", int, "events read from the traces (before the cut in a cut one)", "events_read"),
        CheckFact(
            "gpu_events", int, "events on a GPU in the traces: kernels, copies, sets, range measurements", "gpu_events"
        ),
        CheckFact("gpu_api_calls", int, "CUDA or HIP runtime and driver calls in the traces", "gpu_api_calls"),
    ),
)


def _where(cut: Truncation, contents: TraceContents) -> str:
    """Where the cut lies, in the words a user checks it with: the byte, what was read, the last time."""
    unpacked = " of the unpacked JSON" if contents.compressed else ""
    last = f", the last at ts {cut.last_complete_ts:,.3f} µs" if cut.last_complete_ts is not None else ""
    return f"byte {cut.at_byte:,}{unpacked}; {plural(contents.events, 'event')} read before it{last}"


def run(tables: Tables) -> HealthCheck:
    from wizard.trace.read.collector import PROFILER_RANGE

    contents = tables.contents
    cut = contents.truncation
    gpus, calls = len(contents.device_properties), len(contents.runtime)
    # the CUPTI range profiler records a cuda_profiler_range event per kernel instead of the kernel (kernels-missing's
    # info): the GPU was recorded, by its counters
    ranges = contents.timeline.categories.get(PROFILER_RANGE, 0)
    gpu_events = len(contents.kernels) + len(contents.timeline.gpu_ops) + ranges
    details: dict[str, Any] = {
        "cut": cut is not None,
        "events_lost": cut is not None and cut.events_lost,
        "at_byte": cut.at_byte if cut is not None else None,
        "partial_event_bytes": cut.partial_event_bytes if cut is not None else 0,
        "events_read": contents.events,
        "last_ts": contents.last_ts,
        "gpus": gpus,
        "gpu_api_calls": calls,
        "gpu_events": gpu_events,
    }
    if cut is not None and cut.events_lost:
        return _cut_in_events(cut, contents, gpu_events, details)
    if cut is None and not _timed(contents):
        return _no_events(contents, details)
    if not gpu_events and (gpus or calls):
        return _no_gpu_events(gpus, calls, details)
    if cut is not None:
        return CHECK.verdict(
            contents.events, "info",
            f"the file was cut after its event list, at {_where(cut, contents)}: every event was read",
            "the numbers are whole; keys written after the event list (traceName, distributedInfo, and "
            "deviceProperties where a tool moved it there) may be missing",
            details=details,
        )  # fmt: skip
    on_gpu = f", {plural(gpu_events, 'GPU event')} among them" if gpu_events else ""
    said = f"{plural(contents.events, 'event')} read to the end of the file{on_gpu}"
    return CHECK.verdict(0, "ok", said, "", details=details)  # nothing incomplete: the count is 0


def _cut_in_events(cut: Truncation, contents: TraceContents, gpu_events: int, details: dict[str, Any]) -> HealthCheck:
    partial = (
        f"; the {plural(cut.partial_event_bytes, 'byte')} after the last whole event (an event cut in half, or "
        "bytes that are not JSON) dropped"
        if cut.partial_event_bytes
        else ""
    )
    none_on_gpu = "; not one GPU event in the part read" if not gpu_events else ""
    said = (
        f"the file ends at byte {cut.at_byte:,}{' of the unpacked JSON' if contents.compressed else ''}, before its "
        "event list (traceEvents) began: not one event was read"
        if cut.before_events
        else f"the file ends inside its event list at {_where(cut, contents)}{partial}: every event written after "
        f"the cut is lost{none_on_gpu}"
    )
    return CHECK.verdict(
        contents.events, "error",
        said,
        "every count read from this trace (GPU time, kernels, steps, per-op times) covers only the part before "
        "the cut, and the keys after the event list are missing: the writer stopped mid-file (the process killed "
        "or crashed while writing, a full disk, or a copy cut short). Kineto writes NAME.tmp and renames it only "
        "once the list is closed: look for the .tmp, the disk's free space and how the job ended; profile again "
        "or copy the file whole",
        details=details,
    )  # fmt: skip


def _timed(contents: TraceContents) -> int:
    """The events a check can look at: ops, Python frames, calls, kernels, copies and sets, other complete events
    and counter samples. Metadata ("M": process and thread names, which Kineto writes with or without an activity
    recorded), flows and instants alone are a profile of nothing."""
    timeline = contents.timeline
    return (
        contents.ops.count + contents.python.count + len(contents.runtime) + len(contents.kernels)
        + len(timeline.gpu_ops) + len(timeline.slices) + contents.counter_events
    )  # fmt: skip


def _no_events(contents: TraceContents, details: dict[str, Any]) -> HealthCheck:
    """A whole trace with not one event a check can look at: nothing to check, which must not read as a healthy
    trace (a gate given a profile that recorded nothing passes nothing). Events but no kernel stays legitimate: a
    CPU-only profile."""
    if contents.events:
        where = f"its {plural(contents.events, 'event')} {verb(contents.events, 'is', 'are')} metadata, flows or marks"
    else:
        where = "its event list is empty" if contents.format == "kineto-json" else "not one was read from the file"
    return CHECK.verdict(
        0, "warning",
        f"the trace holds no timed events: {where}, so no check had anything to look at",
        "no number can be read from this trace: the profiler recorded nothing (stopped before its first step, "
        "a schedule whose active steps never ran, or every activity turned off) or the file was written empty; "
        "check the profiler's schedule and that the profiled code ran, then profile again",
        details=details,
    )  # fmt: skip


def _no_gpu_events(gpus: int, calls: int, details: dict[str, Any]) -> HealthCheck:
    listed = f"deviceProperties lists {plural(gpus, 'GPU')}" if gpus else ""
    called = f"{plural(calls, 'CUDA/HIP API call')} {verb(calls, 'was', 'were')} recorded" if calls else ""
    return CHECK.verdict(
        calls or gpus, "warning",
        f"{' and '.join(x for x in (listed, called) if x)}, but not one GPU event (kernel, copy or set)",
        "the trace shows no GPU time at all: its GPU was not recorded. Either the profile asked for the CPU only "
        "(activities=[ProfilerActivity.CPU]: Kineto lists the GPUs whatever it records), or CUPTI recorded "
        "nothing (it failed to start: privileges, a second libcupti, another profiler holding it); add "
        "ProfilerActivity.CUDA, or follow the kernels-missing playbook to find which",
        details=details,
    )  # fmt: skip
