"""The flagship's records: what the kernel-metric checks find in one trace (``KernelMetrics``, the mechanisms
pass's result) and the records it is made of (finding groups, launches, op links, what a picture needs), each
with the ``to_dict`` its part of ``warpwizard.trace-report/2`` is written by."""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from wizard.frames import innermost_user_frame, trace_frame_path
from wizard.serialize import clean
from wizard.trace.metrics.detectors import Finding
from wizard.trace.metrics.mechanisms import is_wrong


class OpLink(Struct):
    """What launched a kernel, found through the runtime call's correlation id: the PyTorch op
    around that call, and the Python frames around it. ``op`` is None for a kernel launched
    without an op (a raw kernel through the driver API: seen on an H200 with torch.cuda._compile_kernel).
    """

    op: str | None
    runtime_call: str
    thread: str
    input_dims: str | None = None
    input_types: str | None = None
    python_stack: list[str] = field(default_factory=list)
    via: str = "correlation"

    @property
    def user_frame(self) -> str | None:
        """The innermost frame outside torch: where the user's code launched the kernel."""
        return innermost_user_frame(self.python_stack, trace_frame_path)


class Launch(Struct, frozen=True):
    """One launch with a wrong value, as scripts need it: when, where, and reported against true."""

    ts: float
    device: int | None
    stream: Any
    correlation: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    reported: dict[str, float | None]
    true: dict[str, float | None]


class KernelLaunch(Struct, frozen=True):
    """One checked kernel launch, for scripts and notebooks: what the trace says beside what is true.

    Field names are Holistic Trace Analysis's kernel-frame columns where they mean the same thing
    (``ts``, ``dur``, ``pid``, ``tid``, ``stream``, ``correlation``, ``device``, ``grid``, ``block``,
    ``registers_per_thread``, ``shared_memory``, ``blocks_per_sm``, ``warps_per_sm``,
    ``est_occupancy``, ``input_dims``, ``input_type``; ``s_name`` is HTA's decoded kernel name), so
    the two frames join on ``correlation`` (and ``pid``) per rank. Reported values are floats as the
    trace holds them (``inf``/``nan`` included; None where absent); ``true_*`` are what the launch had.
    """

    s_name: str
    ts: float
    dur: float
    pid: Any
    tid: Any
    device: int | None
    stream: Any
    correlation: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers_per_thread: int | None
    shared_memory: int | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    est_occupancy: float | None
    true_blocks_per_sm: float | None
    true_warps_per_sm: float | None
    true_est_occupancy: float | None
    mechanism: str | None  # the first wrong mechanism (trace.mechanisms.WRONG), else F, else None
    mechanisms: tuple[str, ...]  # every mechanism found for this launch
    op: str | None  # the PyTorch op that launched it, where the trace links one
    input_dims: str | None
    input_type: str | None
    trace: str  # the file it came from
    rank: int | None

    @property
    def wrong(self) -> bool:
        """Whether the trace holds a wrong value for this launch (F, by design, is not wrong)."""
        return any(is_wrong(m) for m in self.mechanisms)


LAUNCH_COLUMNS: tuple[str, ...] = KernelLaunch.__struct_fields__


class FindingGroup(Struct):
    """All kernels with one name and one mechanism."""

    mechanism: str
    title: str
    severity: str
    kernel: str
    count: int
    first_ts: float
    worst: Finding
    op: OpLink | None = None
    examples: list[int] = field(default_factory=list)  # kernel indexes tried for the op link
    launch_refs: list[tuple[int, Finding]] = field(default_factory=list)  # (kernel index, its finding)
    launches: list[Launch] = field(default_factory=list)  # built from launch_refs when the trace is done
    launches_omitted: int = 0

    @property
    def wrong(self) -> bool:
        """Whether this group's launches hold wrong values (every mechanism but F)."""
        return is_wrong(self.mechanism)

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst
        return _plain(
            {
                "mechanism": self.mechanism,
                "title": self.title,
                "severity": self.severity,
                "kernel": self.kernel,
                "count": self.count,
                "first_ts": self.first_ts,
                "worst": {
                    "ts": worst.ts,
                    "device": worst.device,
                    "correlation": worst.correlation,
                    "grid": list(worst.grid) if worst.grid else None,
                    "block": list(worst.block) if worst.block else None,
                    "reported": worst.reported,
                    "true": worst.true,
                    "evidence": worst.evidence,
                    "limiting_factors": list(worst.limiting_factors),
                },
                "op": _shallow(self.op, _OP_FIELDS) if self.op else None,
                "launches": [_shallow(launch, _LAUNCH_FIELDS) for launch in self.launches],
                "launches_omitted": self.launches_omitted,
            }
        )


MAX_GROUPS = 1000  # finding groups listed per trace in JSON and Markdown; the rest are counted


TIMELINE_CAP = 100_000  # wrong launches' start times kept per (stream, mechanism) for a picture
# distinct (metric, mechanism, reported, true) points kept per trace for a picture, whose page draws the 1,000 most
# launched a metric (report/plots.py MAX_POINTS): an export whose every kernel has its own grid has a point per launch
POINTS_CAP = 100_000

Point = tuple[str, str, float | None, float | None]  # (metric, mechanism or "ok", reported, true)


class PlotData(Struct):
    """What a picture of one trace needs, small whatever the trace's size: distinct (reported, true) points
    with how many launches share each, and when the wrong launches ran, per stream and mechanism."""

    points: list[tuple[str, str, float | None, float | None, int]] = field(default_factory=list)
    # (metric, mechanism or "ok", reported, true, launches)
    timeline: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (stream, mechanism) -> ts
    timeline_omitted: int = 0
    points_omitted: dict[str, int] = field(default_factory=dict)  # metric -> launches whose point was past POINTS_CAP
    span: tuple[float, float] | None = None  # the trace's first start and last end (µs): where its time axis starts


class KernelMetrics(Struct):
    """The flagship pass's result for one trace: every kernel's blocks and warps per SM and occupancy checked
    against the profiler's own arithmetic, the wrong values grouped by kernel and mechanism, and what a reader
    of the report should know (``notes``)."""

    kernels_checked: int
    devices: list[dict[str, Any]]
    rocm: bool
    mechanisms: dict[str, int]
    groups: list[FindingGroup]
    notes: list[str]
    max_true_warps_per_sm: float | None
    analyse_s: float = 0.0  # the time the checks took after the read
    launches: list[KernelLaunch] = field(default_factory=list)  # when asked for: every checked, or every wrong
    workload: str = ""  # fingerprint of the work recorded (kernels, grids, blocks): compare's "same work?"
    wrong_launches: int = 0  # launches with at least one wrong value, each counted once
    plot: PlotData | None = None  # when a picture was asked for (the HTML report)
    rocm_metrics: int = 0  # kernels of a ROCm trace that carry blocks/warps per SM (listed, never checked)
    resident_warps: list[int] = field(default_factory=list)  # per-SM warp limits F is counted against (not ROCm)
    computed_launches: int = 0  # launches printing no metrics whose true values were computed (Cuspy, nsys)

    @property
    def impossible(self) -> bool:
        return any(is_wrong(m) for m in self.mechanisms)

    def to_dict(self) -> dict[str, Any]:
        """Its fields of a trace's report in --json (docs/json-output.md), where they have always been."""
        return _plain(
            {
                "kernels_checked": self.kernels_checked,
                "computed_launches": self.computed_launches,
                "wrong_launches": self.wrong_launches,
                "devices": self.devices,
                "rocm": self.rocm,
                "rocm_metrics": self.rocm_metrics,
                "impossible": self.impossible,
                "mechanisms": self.mechanisms,
                "max_true_warps_per_sm": self.max_true_warps_per_sm,
                "groups": [g.to_dict() for g in self.groups[:MAX_GROUPS]],
                "groups_omitted": max(0, len(self.groups) - MAX_GROUPS),
                "workload": self.workload,
                "notes": self.notes,
            }
        )


def launched_by(link: OpLink | None) -> str:
    """The 'launched by' cell: the op and its shapes, else the user's Python frame, else a dash."""
    if link is None:
        return "—"
    if link.op is not None:
        return link.op + (f" {link.input_dims}" if link.input_dims else "")
    return f"no op; {link.user_frame}" if link.user_frame else "—"


_OP_FIELDS: tuple[str, ...] = OpLink.__struct_fields__
_LAUNCH_FIELDS: tuple[str, ...] = Launch.__struct_fields__


def _shallow(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A record's fields by name, in order: what ``asdict`` gives for records holding no other record, without
    its deep copy of every value (a third of a big report's writing); ``clean`` then copies into plain JSON data."""
    return {name: getattr(record, name) for name in names}


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    cleaned = clean(value)
    assert isinstance(cleaned, dict)
    return cleaned
