"""Two profiles of one workload side by side: whether they can be compared, then what changed.

Steps 1 and 5 of the method are comparisons (re-profile with another PyTorch or profiler; run on another GPU), and
every diff tool in the field matches kernels by name and says nothing of whether the runs can be compared. Here the
comparability comes first, as factors read from what the two profiles carry (each ``same``, ``differs`` or
``unknown``, with what it means), and a verdict: ``comparable``, ``comparable with caveats`` or ``not comparable``.
A comparison that cannot be made is never shown as a result: its changes are not computed.

Each side is a trace (any format the reader takes), a rank directory, or a ``trace inspect --json`` report, whose
``reports[].profile`` holds the same summary (wizard/trace/profile/summary.py), so a report is never read
again as a trace. The library never prints; ``warpwizard diff`` renders the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from wizard.errors import InputFileError, UsageError
from wizard.formatting import plural
from wizard.ncu import NcuKernel, Runner, is_ncu, read_ncu
from wizard.ncu.join import Joined, join
from wizard.trace.profile.summary import (
    MAX_KERNELS,
    MAX_STEPS,
    KernelGroup,
    OpGroup,
    ProfileDevice,
    ProfileSummary,
)  # fmt: skip

DIFF_SCHEMA = "warpwizard.diff/1"
DEFAULT_THRESHOLD = 0.10  # a kernel's median duration 10% slower is a regression (when above its noise)
# At most a kernel eleven times slower: a bound that catches a fraction typed as a percent's hundredfold (1000 for
# 10), not one any real threshold meets.
MAX_THRESHOLD = 10.0
# A kernel whose GPU time is under 1% of its side's is no regression however its time moves: nobody acts on it.
MATERIAL_SHARE = 0.01
NOISE_SIGMAS = 3.0  # a change must exceed three standard errors of the two medians together
SHARED_BLOCKS = 0.5  # under half the GPU time in kernels both sides ran: different work, not comparable
SHARED_CAVEAT = 0.9  # under 90%: comparable, with the unshared share named
FACTORS_NAMED = 4  # the factors of a kind (blocking, caveats, unknown) the verdict's line names; the rest counted
MAX_REPORT_BYTES = 64 << 20
MAX_RANKS = 100_000

Status = Literal["same", "differs", "unknown"]
Effect = Literal["none", "caveat", "blocks"]
Verdict = Literal["comparable", "comparable with caveats", "not comparable"]


@dataclass(slots=True)
class Side:
    """One profile: a label, and a summary per rank (one for a single trace)."""

    label: str
    summaries: list[ProfileSummary]
    _merged: dict[tuple[str, Any, Any], KernelGroup] | None = field(default=None, repr=False, compare=False)

    def devices(self) -> list[ProfileDevice]:
        return [d for s in self.summaries for d in s.devices]

    def kernels(self) -> dict[tuple[str, Any, Any], KernelGroup]:
        """Every rank's kernel groups summed, by (normalised name, grid, block): merged once, read by every
        factor and change (a thousand ranks' groups were merged again for each)."""
        if self._merged is not None:
            return self._merged
        out: dict[tuple[str, Any, Any], KernelGroup] = {}
        for summary in self.summaries:
            for g in summary.kernels:
                key = (g.key, _dims(g.grid), _dims(g.block))
                if key not in out:
                    out[key] = KernelGroup(g.key, g.name, g.grid, g.block, 0, 0.0, g.median_us, g.mad_us, {})
                merged = out[key]
                merged.launches += g.launches
                merged.total_us += g.total_us
                for mechanism, count in g.wrong.items():
                    merged.wrong[mechanism] = merged.wrong.get(mechanism, 0) + count
        self._merged = out
        return out

    @property
    def gpu_time_us(self) -> float:
        return sum(s.gpu_time_us for s in self.summaries)

    @property
    def has_shapes(self) -> bool:
        """Whether its ops carry their input shapes (record_shapes was on)."""
        return any(s.ops for s in self.summaries)

    def ops(self, shapes: bool) -> dict[tuple[str, str | None], OpGroup]:
        """Every rank's op groups summed, by (name, shapes) or by name alone; the median is the first rank's."""
        out: dict[tuple[str, str | None], OpGroup] = {}
        for summary in self.summaries:
            for g in summary.ops if shapes else summary.ops_by_name:
                key = (g.name, g.shapes)
                if key not in out:
                    out[key] = OpGroup(g.name, g.shapes, 0, 0.0, g.median_us, g.mad_us)
                out[key].calls += g.calls
                out[key].total_us += g.total_us
        return out


def _dims(value: list[int] | None) -> tuple[int, ...] | None:
    return tuple(value) if value else None


@dataclass(slots=True)
class Factor:
    """One thing two comparable profiles must share, and what this pair shows of it."""

    name: str
    before: str
    after: str
    status: Status
    effect: Effect  # what a difference does to the comparison
    meaning: str

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(slots=True)
class KernelChange:
    """One kernel (name and launch configuration) on both sides."""

    name: str
    grid: list[int] | None
    block: list[int] | None
    before_launches: int
    after_launches: int
    before_median_us: float
    after_median_us: float
    before_total_us: float
    after_total_us: float
    change: float  # the median's relative change (0.2: 20% slower)
    noise: float  # the change the two medians' own spread allows, relative
    regression: bool
    improvement: bool

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(slots=True)
class OpChange:
    """One CPU op (name, and input shapes where both sides recorded them) on both sides; times inclusive."""

    name: str
    shapes: str | None
    before_calls: int
    after_calls: int
    before_median_us: float
    after_median_us: float
    before_total_us: float
    after_total_us: float
    change: float
    noise: float
    regression: bool
    improvement: bool

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(slots=True)
class RankChange:
    """One rank on both sides, compared rank against rank: its GPU time, median step and kernels."""

    rank: int
    before_gpu_us: float
    after_gpu_us: float
    before_step_us: float | None  # the median ProfilerStep, where steps were recorded
    after_step_us: float | None
    change: float  # the GPU time's relative change
    regressions: int  # this rank's kernels slower beyond the threshold and the noise
    worst: str | None  # the kernel (on this rank) with the largest slowdown, regression or not
    worst_change: float

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(slots=True)
class WrongValues:
    """A kernel both sides ran whose launches hold wrong values on at least one side: which mechanisms where."""

    name: str
    before: dict[str, int]  # mechanism -> launches with a wrong value
    after: dict[str, int]

    @property
    def only_before(self) -> bool:
        return bool(self.before) and not self.after

    @property
    def only_after(self) -> bool:
        return bool(self.after) and not self.before

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "before": self.before, "after": self.after}


@dataclass(slots=True)
class ProfileDiff:
    """The comparison: factors and verdict first; the changes only when the two can be compared."""

    before: str
    after: str
    threshold: float
    factors: list[Factor]
    changes: list[KernelChange] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)  # kernels one side ran and the other did not
    only_after: list[str] = field(default_factory=list)
    mechanisms: list[str] = field(default_factory=list)  # wrong values present on one side only, in words
    health: list[str] = field(default_factory=list)  # findings that appear or disappear, in words
    ncu: list[Joined] = field(default_factory=list)  # Nsight Compute's kernels beside the trace's, when one side is
    wrong: list[WrongValues] = field(default_factory=list)  # wrong values on launches both sides ran, side by side
    ops: list[OpChange] = field(default_factory=list)  # CPU ops both sides ran
    ops_matched_on: str = "none"  # "name and shapes" | "name" (a side without shapes) | "none" (no op on a side)
    ops_only_before: int = 0  # op groups one side ran and the other did not
    ops_only_after: int = 0
    ranks: list[RankChange] = field(default_factory=list)  # rank by rank, where both sides have several; worst first

    @property
    def verdict(self) -> Verdict:
        effects = {f.effect for f in self.factors if f.status != "same"}
        if "blocks" in effects:
            return "not comparable"
        return "comparable with caveats" if "caveat" in effects else "comparable"

    @property
    def unknown(self) -> list[str]:
        """The factors not recorded on a side (or only guessed): the verdict holds for what could be checked."""
        return [f.name for f in self.factors if f.status == "unknown"]

    @property
    def said(self) -> str:
        """The verdict in words: what blocks the comparison (or, where nothing does, what is a caveat), then what it
        could not check: a bare 'comparable' beside an unknown GPU model would read as 'the same GPUs', and a bare
        'not comparable' left the reader to find the cause among the unknowns."""
        differing = [f for f in self.factors if f.status == "differs"]
        blocking = [f.name for f in differing if f.effect == "blocks"]
        parts = [f"blocked by {_named(blocking)}"] if blocking else []
        if not blocking:
            caveats = [f.name for f in differing if f.effect == "caveat"]
            parts += [f"caveats: {_named(caveats)}"] if caveats else []
        parts += [f"unknown: {_named(self.unknown)}"] if self.unknown else []
        return f"{self.verdict} ({'; '.join(parts)})" if parts else self.verdict

    @property
    def threshold_pct(self) -> str:
        """The threshold as the percent it was given (0.5%, 10%, 12.5%): never rounded to 0%."""
        return percent(self.threshold)

    @property
    def regressions(self) -> list[KernelChange]:
        return [c for c in self.changes if c.regression]

    @property
    def rank_regressions(self) -> list[RankChange]:
        """Ranks on which a kernel is slower beyond the threshold and the noise (summed ranks can hide one)."""
        return [r for r in self.ranks if r.regressions]

    @property
    def op_regressions(self) -> list[OpChange]:
        return [c for c in self.ops if c.regression]

    @property
    def profiler_bugs(self) -> list[Joined]:
        """Launches where Nsight Compute shows the trace's number wrong."""
        return [j for j in self.ncu if j.label == "profiler bug"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": DIFF_SCHEMA,
            "before": self.before,
            "after": self.after,
            "verdict": self.verdict,
            "unknown": self.unknown,
            "threshold": self.threshold,
            "factors": [f.to_dict() for f in self.factors],
            "regressions": len(self.regressions),
            "changes": [c.to_dict() for c in self.changes],
            "only_before": self.only_before,
            "only_after": self.only_after,
            "mechanisms": self.mechanisms,
            "health": self.health,
            "ncu": [j.to_dict() for j in self.ncu],
            "wrong": [w.to_dict() for w in self.wrong],
            "ops_matched_on": self.ops_matched_on,
            "op_regressions": len(self.op_regressions),
            "ops": [c.to_dict() for c in self.ops],
            "ops_only_before": self.ops_only_before,
            "ops_only_after": self.ops_only_after,
            "rank_regressions": len(self.rank_regressions),
            "ranks": [r.to_dict() for r in self.ranks],
        }


# -- reading a side ----------------------------------------------------------------------------------------


class _Report(msgspec.Struct):
    profile: ProfileSummary | None = None


class _Document(msgspec.Struct):
    schema: str | None = None
    reports: list[_Report] = []


def _report_summaries(path: str, data: bytes) -> list[ProfileSummary]:
    """A ``trace inspect --json`` report's per-trace summaries, typed; a report without them is said."""
    try:
        document = msgspec.json.decode(data, type=_Document)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InputFileError(f"{path}: not a warpwizard trace report with profiles ({exc})") from None
    found = [r.profile for r in document.reports if r.profile is not None]
    if not found or len(found) != len(document.reports):
        raise InputFileError(
            f"{path}: a trace report without profile summaries (reports[].profile): it was written before "
            "warpwizard kept them; inspect the trace again with `warpwizard trace inspect --json`"
        )
    for summary in found:
        if len(summary.kernels) > MAX_KERNELS or len(summary.steps) > MAX_STEPS or len(found) > MAX_RANKS:
            raise InputFileError(
                f"{path}: a profile summary over its bounds ({MAX_KERNELS} kernels, {MAX_STEPS} steps)"
            )
    return found


def _is_report(path: Path) -> bytes | None:
    """The bytes of a JSON report (a file that starts with '{' and names a warpwizard schema), else None."""
    if not path.is_file():
        return None
    with open(path, "rb") as fh:
        head = fh.read(4096)
        if not head.lstrip().startswith(b"{") or b'"warpwizard.trace-report' not in head:
            return None
        data = head + fh.read(MAX_REPORT_BYTES + 1 - len(head))
    if len(data) > MAX_REPORT_BYTES:
        raise InputFileError(f"{path}: too large for a warpwizard report (over {MAX_REPORT_BYTES} bytes)")
    return data


Inspect = Callable[[str], list[ProfileSummary]]


def load_side(path: str, inspect: Inspect) -> Side:
    """A side from a path: a ``--json`` report is read as it is, and so is a directory of them (each rank's, as a
    job's nodes write them: no trace is read again); anything else is inspected as a trace or a rank directory."""
    where = Path(path)
    data = _is_report(where)
    if data is not None:
        return Side(where.name or path, _report_summaries(path, data))
    reports = _report_directory(where)
    if reports:
        summaries = [s for file, raw in reports for s in _report_summaries(str(file), raw)]
        return Side(where.name or path, summaries)
    return Side(where.name or path, inspect(path))


def _report_directory(where: Path) -> list[tuple[Path, bytes]]:
    """A directory whose ``.json`` files are all warpwizard reports: each with its bytes; else nothing."""
    if not where.is_dir():
        return []
    files = sorted(p for p in where.iterdir() if p.suffix == ".json" and p.is_file())
    if not files or len(files) > MAX_RANKS:
        return []
    found = []
    for file in files:
        data = _is_report(file)
        if data is None:
            return []
        found.append((file, data))
    return found


# -- comparability -----------------------------------------------------------------------------------------


def _shown(values: Iterable[Any]) -> str:
    """Each distinct value, ``unknown`` among them where one is missing (never left out: a rank or device that
    does not say is not the same as the others)."""
    found = sorted({"unknown" if v is None or v == "" else str(v) for v in values})
    return ", ".join(found) if found else "unknown"


UNKNOWN_MEANS = "not recorded on one side or both: it cannot be checked"


def _named(names: list[str]) -> str:
    """The first FACTORS_NAMED names, in the factors' order (the hardware's first), the rest counted."""
    shown = names[:FACTORS_NAMED] + [f"{len(names) - FACTORS_NAMED} more"] * (len(names) > FACTORS_NAMED)
    return ", ".join(shown)


def _factor(name: str, before: str, after: str, effect: Effect, meaning: str) -> Factor:
    """A factor from what each side shows; ``meaning`` is what a difference means (said only when they differ)."""
    unknown = "unknown" in before.split(", ") or "unknown" in after.split(", ")
    status: Status = "unknown" if unknown else ("same" if before == after else "differs")
    said = {"differs": meaning, "unknown": UNKNOWN_MEANS, "same": ""}[status]
    return Factor(name, before, after, status, effect if status == "differs" else "none", said)


def _vendor(side: Side) -> str:
    found = {s.vendor for s in side.summaries if s.vendor}
    return ", ".join(sorted(found)) if found else "unknown"


INFERRED_MEANS = (
    "a name inferred from the SM count (the trace describes no GPU) is a guess, not compared: SMs per GPU "
    "compares the count"
)


Named = tuple[str, bool, bool]  # the model as shown, whether it is known, whether a name in it is a guess


def _model(side: Side) -> Named:
    """The GPU model its devices are named: known where every device is named by its trace (or like the one GPU
    the trace describes). A device without a name is ``unknown``; a name inferred from the SM count is shown as
    that, and not known."""
    devices = side.devices()
    shown: set[str] = set()
    for d in devices:
        if not d.name:
            shown.add("unknown")
        elif d.name_source == "inferred":
            shown.add(f"{d.name} (inferred from {d.num_sms} SMs)" if d.num_sms else f"{d.name} (inferred)")
        else:
            shown.add(d.name)
    known = bool(devices) and all(d.name and d.name_source != "inferred" for d in devices)
    guessed = any(d.name and d.name_source == "inferred" for d in devices)
    return ", ".join(sorted(shown)) or "unknown", known, guessed


def _model_factor(before: Named, after: Named, meaning: str) -> Factor:
    """GPU model: compared only where both sides name theirs; else ``unknown``, a guess said as one."""
    if before[1] and after[1]:
        return _factor("GPU model", before[0], after[0], "caveat", meaning)
    said = INFERRED_MEANS if before[2] or after[2] else UNKNOWN_MEANS
    return Factor("GPU model", before[0], after[0], "unknown", "none", said)


def _hardware(b: Side, a: Side) -> list[Factor]:
    vendor = _factor(
        "GPU vendor", _vendor(b), _vendor(a), "caveat",
        "other GPUs, other libraries (cuBLAS or hipBLASLt): kernels differ by name, so few can be matched",
    )  # fmt: skip
    gpu = _model_factor(
        _model(b), _model(a), "a difference between the sides includes the hardware's (step 5 asks exactly this)"
    )
    count = _factor(
        "GPU count", str(len(b.devices())), str(len(a.devices())), "blocks",
        "the work is split differently: per-kernel times are not the same kernels' times",
    )  # fmt: skip
    sms = _factor(
        "SMs per GPU", _shown(d.num_sms for d in b.devices()), _shown(d.num_sms for d in a.devices()),
        "caveat", "blocks and warps per SM and occupancy are relative to the SM count",
    )  # fmt: skip
    return [vendor, gpu, count, sms]


def _job(b: Side, a: Side) -> list[Factor]:
    world = _factor(
        "world size", _shown(s.world_size for s in b.summaries), _shown(s.world_size for s in a.summaries), "blocks",
        "another parallel layout: collectives and per-rank work differ by construction",
    )  # fmt: skip
    return [world, _ranks_factor(b, a)]


def rank_ids(side: Side) -> dict[int, ProfileSummary]:
    """Each summary by the rank its trace says (``distributedInfo.rank``); by its order where ranks are missing or
    repeat (a directory of single-process traces)."""
    ids = [s.rank for s in side.summaries]
    if any(i is None for i in ids) or len(set(ids)) != len(ids):
        return dict(enumerate(side.summaries))
    return {int(i): s for i, s in zip(ids, side.summaries, strict=True) if i is not None}


def _spans(ranks: Iterable[int]) -> str:
    """0-3, 5, 7-8: a rank set short enough for a thousand ranks."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out) if len(out) <= 8 else ", ".join(out[:8]) + f", … ({len(out) - 8} more spans)"


def _ranks_factor(b: Side, a: Side) -> Factor:
    """The ranks given on each side: a count for single traces; with several, which ranks, and any on one side only."""
    if len(b.summaries) <= 1 and len(a.summaries) <= 1:
        return _factor(
            "ranks given", str(len(b.summaries)), str(len(a.summaries)), "blocks",
            "one side has ranks the other lacks: totals are over different processes",
        )  # fmt: skip
    before, after = set(rank_ids(b)), set(rank_ids(a))
    only = [f"{_spans(before - after)} only in BEFORE"] if before - after else []
    only += [f"{_spans(after - before)} only in AFTER"] if after - before else []
    return _factor(
        "ranks given",
        f"{len(before)} ({_spans(before)})",
        f"{len(after)} ({_spans(after)})",
        "blocks",
        f"rank {'; '.join(only)}: totals are over different processes" if only else "",
    )


def _recording(b: Side, a: Side) -> list[Factor]:
    steps = _factor(
        "steps recorded", _shown(len(s.steps) for s in b.summaries), _shown(len(s.steps) for s in a.summaries),
        "caveat", "totals cover different numbers of steps: compare medians per launch, as this diff does",
    )  # fmt: skip
    graphs = _factor(
        "CUDA graphs", _shown(s.graph_mode for s in b.summaries), _shown(s.graph_mode for s in a.summaries),
        "caveat", "graph replay removes launch overhead and changes what the timeline shows between kernels",
    )  # fmt: skip
    profiler = _factor(
        "profiler", _shown(f"{s.writer or s.format}" for s in b.summaries),
        _shown(f"{s.writer or s.format}" for s in a.summaries), "caveat",
        "two tools timed the kernels: the same launches, timestamps from each tool's own CUPTI clock",
    )  # fmt: skip
    return [steps, graphs, profiler]


def _software(b: Side, a: Side) -> list[Factor]:
    keys = sorted({k for s in (*b.summaries, *a.summaries) for k in s.versions})
    out = []
    for key in keys:
        out.append(
            _factor(
                key, _shown(s.versions.get(key) for s in b.summaries), _shown(s.versions.get(key) for s in a.summaries),
                "caveat", "the software that recorded or ran the work differs: a change may be the profiler's or "
                "the library's (step 1 asks exactly this)",
            )
        )  # fmt: skip
    for key in sorted({k for s in (*b.summaries, *a.summaries) for k in s.capture}):
        out.append(
            _factor(
                key, _shown(s.capture.get(key) for s in b.summaries), _shown(s.capture.get(key) for s in a.summaries),
                "caveat", "a capture option adds CPU-side overhead (stacks, shapes, memory): CPU times differ by it",
            )
        )  # fmt: skip
    return out


def _health_factor(side: Side, which: str) -> Factor:
    """One side's health check as a row: a problem in that side's column (the other side has a row of its own);
    both columns 'ok' where it found none, as the row always said."""
    errors = sorted({h.check for s in side.summaries for h in s.health if h.status == "error"})
    warnings = sorted({h.check for s in side.summaries for h in s.health if h.status == "warning"})

    def row(value: str, status: Status, effect: Effect, meaning: str) -> Factor:
        before, after = (value, "") if which == "before" else ("", value)
        return Factor(f"health ({which})", before, after, status, effect, meaning)

    if errors:
        return row(
            "error", "differs", "blocks",
            f"the {which} profile is not whole or not true ({', '.join(errors)}): what it lacks would read as a change",
        )  # fmt: skip
    if warnings:
        return row(
            "warning", "differs", "caveat",
            f"the {which} profile has warnings ({', '.join(warnings)}): read `warpwizard trace inspect` on it first",
        )  # fmt: skip
    return Factor(f"health ({which})", "ok", "ok", "same", "none", "")


def _shared(b: Side, a: Side) -> Factor:
    """How much of the GPU time is in kernels both sides ran (by normalised name)."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for side, by_name in ((b, before), (a, after)):
        for (key, *_), g in side.kernels().items():
            by_name[key] = by_name.get(key, 0.0) + g.total_us
    total = sum(before.values()) + sum(after.values())
    if total <= 0:
        return Factor("shared kernels", "unknown", "unknown", "unknown", "none", "no kernel time on either side")
    common_before = sum(v for k, v in before.items() if k in after)
    common_after = sum(v for k, v in after.items() if k in before)
    share = (common_before + common_after) / total
    effect: Effect = "blocks" if share < SHARED_BLOCKS else ("caveat" if share < SHARED_CAVEAT else "none")
    meaning = (
        f"{_share(share)} of the two sides' GPU time is in kernels both ran"
        + (": different work, not the same workload" if effect == "blocks" else "")
        + (": the rest is in kernels only one side ran" if effect == "caveat" else "")
    )
    status: Status = "same" if effect == "none" else "differs"
    return Factor("shared kernels", _side_share(common_before, before), _side_share(common_after, after), status,
                  effect, meaning)  # fmt: skip


def _side_share(common: float, by_name: dict[str, float]) -> str:
    """One side's share of its own GPU time in kernels the other side ran too (each side its own: two equal
    numbers beside 'differs' read as a contradiction)."""
    total = sum(by_name.values())
    return _share(common / total) if total > 0 else "unknown"


def _share(fraction: float) -> str:
    """A share to a tenth of a percent (89.96% is not 90%, the caveat's bound), whole where it is whole."""
    return f"{fraction:.1%}".replace(".0%", "%")


def factors(b: Side, a: Side) -> list[Factor]:
    """Every comparability factor, the hardware's first."""
    return [
        *_hardware(b, a), *_job(b, a), *_recording(b, a), *_software(b, a),
        _health_factor(b, "before"), _health_factor(a, "after"), _shared(b, a),
    ]  # fmt: skip


# -- what changed ------------------------------------------------------------------------------------------


def _spread(median: float, mad: float, count: int) -> float:
    """The standard error of a median (1.2533 sigma / sqrt(n), sigma from the MAD: 1.4826 MAD)."""
    return 1.2533 * 1.4826 * mad / math.sqrt(max(count, 1))


def _moved(
    b: tuple[float, float, int, float],
    a: tuple[float, float, int, float],
    threshold: float,
    material: tuple[float, float],
) -> tuple[float, float, bool]:
    """(median, mad, count, total) on each side: the relative change, its noise, and whether it is beyond both
    (and on a group holding at least MATERIAL_SHARE of its side's time)."""
    base = b[0]
    change = (a[0] - base) / base if base > 0 else 0.0
    noise = NOISE_SIGMAS * math.hypot(_spread(*b[:3]), _spread(*a[:3])) / base if base > 0 else 0.0
    matters = b[3] >= MATERIAL_SHARE * material[0] or a[3] >= MATERIAL_SHARE * material[1]
    return change, noise, abs(change) > threshold and abs(change) > noise and matters


def _change(b: KernelGroup, a: KernelGroup, threshold: float, material: tuple[float, float]) -> KernelChange:
    change, noise, beyond = _moved(
        (b.median_us, b.mad_us, b.launches, b.total_us), (a.median_us, a.mad_us, a.launches, a.total_us),
        threshold, material,
    )  # fmt: skip
    return KernelChange(
        b.name, b.grid, b.block, b.launches, a.launches, b.median_us, a.median_us, b.total_us, a.total_us,
        change, noise, beyond and change > 0, beyond and change < 0,
    )  # fmt: skip


def _op_change(b: OpGroup, a: OpGroup, threshold: float, material: tuple[float, float]) -> OpChange:
    change, noise, beyond = _moved(
        (b.median_us, b.mad_us, b.calls, b.total_us), (a.median_us, a.mad_us, a.calls, a.total_us),
        threshold, material,
    )  # fmt: skip
    return OpChange(
        b.name, b.shapes, b.calls, a.calls, b.median_us, a.median_us, b.total_us, a.total_us,
        change, noise, beyond and change > 0, beyond and change < 0,
    )  # fmt: skip


def _op_changes(diff: ProfileDiff, b: Side, a: Side) -> None:
    """Ops matched by name and input shapes where both sides recorded shapes, else by name alone (said in
    ``ops_matched_on``). The material share is of all op time, inclusive: nested ops count in each parent."""
    shapes = b.has_shapes and a.has_shapes
    before, after = b.ops(shapes), a.ops(shapes)
    if not before or not after:
        return
    diff.ops_matched_on = "name and shapes" if shapes else "name"
    material = (sum(g.total_us for g in before.values()), sum(g.total_us for g in after.values()))
    found = [_op_change(before[k], after[k], diff.threshold, material) for k in before if k in after]
    diff.ops = sorted(found, key=lambda c: (not c.regression, -abs(c.after_total_us - c.before_total_us)))
    diff.ops_only_before = sum(1 for k in before if k not in after)
    diff.ops_only_after = sum(1 for k in after if k not in before)


def _kernel_changes(diff: ProfileDiff, b: Side, a: Side) -> None:
    before, after = b.kernels(), a.kernels()
    material = (b.gpu_time_us, a.gpu_time_us)
    changes = [_change(before[k], after[k], diff.threshold, material) for k in before if k in after]
    diff.changes = sorted(changes, key=lambda c: (not c.regression, -abs(c.after_total_us - c.before_total_us)))
    diff.only_before = [before[k].name for k in sorted(before, key=lambda k: -before[k].total_us) if k not in after]
    diff.only_after = [after[k].name for k in sorted(after, key=lambda k: -after[k].total_us) if k not in before]


def _rank_change(rank: int, b: ProfileSummary, a: ProfileSummary, threshold: float) -> RankChange:
    """Rank ``rank`` of BEFORE against the same rank of AFTER: its kernels, GPU time and median step."""
    import statistics

    before = {(g.key, _dims(g.grid), _dims(g.block)): g for g in b.kernels}
    after = {(g.key, _dims(g.grid), _dims(g.block)): g for g in a.kernels}
    material = (b.gpu_time_us, a.gpu_time_us)
    changes = [_change(before[k], after[k], threshold, material) for k in before if k in after]
    worst = max(changes, key=lambda c: c.change, default=None)
    return RankChange(
        rank, b.gpu_time_us, a.gpu_time_us,
        statistics.median(b.steps) if b.steps else None, statistics.median(a.steps) if a.steps else None,
        (a.gpu_time_us - b.gpu_time_us) / b.gpu_time_us if b.gpu_time_us > 0 else 0.0,
        sum(1 for c in changes if c.regression), worst.name if worst else None, worst.change if worst else 0.0,
    )  # fmt: skip


def _rank_changes(diff: ProfileDiff, b: Side, a: Side) -> None:
    """Rank r against rank r, where both sides have several: the ranks with regressions first, then the slowest."""
    if len(b.summaries) <= 1 or len(a.summaries) <= 1:
        return
    before, after = rank_ids(b), rank_ids(a)
    found = [_rank_change(r, before[r], after[r], diff.threshold) for r in sorted(before) if r in after]
    diff.ranks = sorted(found, key=lambda r: (-r.regressions, -r.change, r.rank))


def _mechanism_words(diff: ProfileDiff, b: Side, a: Side) -> None:
    """Wrong values on launches both sides ran, side by side; one side only is the profiler's, not the kernel's."""
    before, after = b.kernels(), a.kernels()
    for key in (k for k in before if k in after):
        found = WrongValues(before[key].name, dict(before[key].wrong), dict(after[key].wrong))
        if not found.before and not found.after:
            continue
        diff.wrong.append(found)
        for mechanism, count in found.before.items():
            if mechanism not in found.after:
                diff.mechanisms.append(
                    _one_side(mechanism, count, found.name, ("BEFORE", diff.before), ("AFTER", diff.after))
                )
        for mechanism, count in found.after.items():
            if mechanism not in found.before:
                diff.mechanisms.append(
                    _one_side(mechanism, count, found.name, ("AFTER", diff.after), ("BEFORE", diff.before))
                )


def _one_side(mechanism: str, count: int, name: str, here: tuple[str, str], there: tuple[str, str]) -> str:
    return (
        f"mechanism {mechanism} in {here[0]} ({here[1]}) on {plural(count, 'launch')} of {name}; the same launches "
        f"in {there[0]} ({there[1]}) read right: the profiler, not your kernel"
    )


def _health_words(diff: ProfileDiff, b: Side, a: Side) -> None:
    def found(side: Side) -> dict[str, str]:
        return {h.check: h.status for s in side.summaries for h in s.health}

    before, after = found(b), found(a)
    for check in sorted(set(before) | set(after)):
        if before.get(check) != after.get(check):
            diff.health.append(f"{check}: {before.get(check, 'ok')} before, {after.get(check, 'ok')} after")


def percent(fraction: float) -> str:
    """0.005 as 0.5%, 0.1 as 10%, 0.125 as 12.5%: the digits it has (four at most), never 0% for a fraction above 0."""
    return f"{fraction * 100:.4g}%"


def check_threshold(threshold: float) -> float:
    """A threshold as a fraction (0.1 is 10%), refused unless finite, above 0 and below MAX_THRESHOLD."""
    if not (math.isfinite(threshold) and 0 < threshold < MAX_THRESHOLD):
        raise UsageError(
            f"the threshold must be a fraction above 0 and below {MAX_THRESHOLD:g} (0.1 is 10%), not {threshold!r}"
        )
    return threshold


def threshold_of(typed: str, flag: str = "--threshold") -> float:
    """A threshold typed as a percent (``10``, ``12.5`` or ``10%``) as the fraction the comparison takes; refused in
    the words typed, with both bounds, before any profile is read."""
    try:
        pct = float(typed.strip().removesuffix("%"))
    except ValueError:
        pct = math.nan
    if not (math.isfinite(pct) and 0 < pct < MAX_THRESHOLD * 100):
        raise UsageError(
            f"{flag} {typed}: the threshold is a percent above 0 and below {MAX_THRESHOLD * 100:g} "
            "(10 is 10%, 0.5 is half a percent)"
        )
    return pct / 100


def compare_sides(b: Side, a: Side, threshold: float = DEFAULT_THRESHOLD) -> ProfileDiff:
    """The comparison of two loaded sides; its changes only when the verdict allows one."""
    check_threshold(threshold)
    diff = ProfileDiff(b.label, a.label, threshold, factors(b, a))
    if diff.verdict != "not comparable":
        _kernel_changes(diff, b, a)
        _op_changes(diff, b, a)
        _rank_changes(diff, b, a)
        _mechanism_words(diff, b, a)
        _health_words(diff, b, a)
    return diff


def ncu_beside(side: Side, label: str, kernels: list[NcuKernel]) -> ProfileDiff:
    """A trace and an Nsight Compute report of the same kernels: the device first, then each kernel joined."""
    ncu_devices = sorted({k.device for k in kernels if k.device})
    ncu_sms = sorted({n for k in kernels if (n := k.whole("sms")) is not None})
    named = _model_factor(
        _model(side), (", ".join(ncu_devices) or "unknown", bool(ncu_devices), False),
        "ncu profiled another GPU: its measurements and limits are that GPU's",
    )  # fmt: skip
    sms = _factor(
        "SMs per GPU", _shown(d.num_sms for d in side.devices()), ", ".join(map(str, ncu_sms)) or "unknown",
        "caveat", "Kineto's per-SM numbers used another SM count than ncu's device has",
    )  # fmt: skip
    diff = ProfileDiff(side.label, label, DEFAULT_THRESHOLD, [named, sms, _health_factor(side, "before")])
    diff.ncu = join(side.summaries, kernels)
    return diff


def diff_profiles(
    before: str,
    after: str,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    jobs: int | None = None,
    runner: Runner | None = None,
) -> ProfileDiff:
    """Compare two profiles (traces, rank directories or ``trace inspect --json`` reports) of one workload; with an
    Nsight Compute report (``.ncu-rep`` or ``ncu --csv --page raw``) on one side, join its kernels to the trace's.
    ``runner`` starts the ``.ncu-rep`` reader's process (wizard.runner.SubprocessRunner by default)."""
    from wizard.api import inspect_traces

    check_threshold(threshold)  # before either side is read

    def inspect(path: str) -> list[ProfileSummary]:
        found = inspect_traces(path, jobs=jobs, launches="none", plots=False)
        return [r.profile for r in found.reports]

    ncu_after, ncu_before = is_ncu(Path(after)), is_ncu(Path(before))
    if ncu_after and ncu_before:
        raise UsageError("two Nsight Compute reports: give a trace on one side and the report on the other")
    if ncu_after or ncu_before:
        trace, report = (before, after) if ncu_after else (after, before)
        return ncu_beside(load_side(trace, inspect), Path(report).name, read_ncu(report, runner))
    return compare_sides(load_side(before, inspect), load_side(after, inspect), threshold)


def markdown(diff: ProfileDiff, top: int = 10) -> str:
    """Short enough for a CI job summary: the verdict, the factors that differ, the top changes."""
    from wizard.untrusted import markdown_code

    lines = [f"## {diff.before} → {diff.after}: {diff.said}", ""]
    differing = [f for f in diff.factors if f.status == "differs"]
    if differing:
        lines += ["| factor | before | after | means |", "|---|---|---|---|"]
        lines += [f"| {f.name} | {_md(f.before)} | {_md(f.after)} | {_md(f.meaning)} |" for f in differing]
        lines.append("")
    if diff.verdict == "not comparable":
        lines.append("No changes are shown: a comparison that cannot be made shows no result.")
        return "\n".join(lines) + "\n"
    if diff.ncu:
        lines += ["| ncu kernel | joined on | label | Kineto est. % | ncu achieved % |", "|---|---|---|---|---|"]
        lines += [
            f"| {markdown_code(j.kernel[:80], table=True)} | {_md(j.matched)} | {j.label} | "
            f"{_pct(j.kineto_occupancy_pct)} | {_pct(j.ncu_achieved_pct)} |"
            for j in diff.ncu[:top]
        ]
        return "\n".join(lines) + "\n"
    shown = [c for c in diff.changes if c.regression or c.improvement][:top]
    lines.append(f"{plural(len(diff.regressions), 'regression')} beyond {diff.threshold_pct} and the noise.")
    same = [f.name for f in diff.factors if f.status == "same"]
    if same:
        lines.append(f"The same on both sides: {_md(', '.join(same))}.")
    if shown:
        lines += ["", "| kernel | grid / block | launches | median µs | change |", "|---|---|---|---|---|"]
        lines += [
            f"| {markdown_code(c.name[:80], table=True)} | {_md(launch_shape(c))} | "
            f"{c.before_launches} → {c.after_launches} | "
            f"{c.before_median_us:.3f} → {c.after_median_us:.3f} | {c.change:+.1%} |"
            for c in shown
        ]
    moved = [c for c in diff.ops if c.regression or c.improvement][:top]
    if moved:
        lines += ["", f"Ops matched by {diff.ops_matched_on}:", "", "| op | shapes | median µs | change |"]
        lines.append("|---|---|---|---|")
        lines += [
            f"| {markdown_code(c.name[:60], table=True)} | {markdown_code((c.shapes or '—')[:60], table=True)} | "
            f"{c.before_median_us:.3f} → {c.after_median_us:.3f} | {c.change:+.1%} |"
            for c in moved
        ]
    lines += [f"- {_md(m)}" for m in diff.mechanisms[:top]]
    return "\n".join(lines) + "\n"


def launch_shape(change: KernelChange) -> str:
    """Its grid and block as every output shows them (two rows of one kernel name are two configurations)."""
    return f"{change.grid} / {change.block}" if change.grid else "—"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _md(text: str) -> str:
    from wizard.untrusted import markdown

    return markdown(text)
