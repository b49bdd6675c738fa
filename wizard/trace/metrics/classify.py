"""The flagship's pass: every kernel's blocks and warps per SM and occupancy checked against the profiler's own
arithmetic, each wrong value grouped by kernel and mechanism and linked to the op that launched it.

``Classifier`` classifies kernels as they arrive (each distinct launch once); ``analyse`` finishes one read trace
into ``KernelMetrics``; ``METRICS_PASS`` declares the pass the inspection runs (wizard/trace/passes.py).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from wizard.formatting import article, compact, plural, verb
from wizard.inspect_options import DEFAULT_MAX_LAUNCHES, DEFAULT_OPTIONS, InspectOptions, Keep
from wizard.trace.metrics.detectors import MEMO_CAP, SM_COUNT_HINT, Finding, KernelCheck, MemoChecker
from wizard.trace.metrics.devices import DeviceInfo, device_for, device_table, sm_count_conflicts
from wizard.trace.metrics.findings import (
    POINTS_CAP,
    TIMELINE_CAP,
    FindingGroup,
    KernelLaunch,
    KernelMetrics,
    Launch,
    OpLink,
    PlotData,
    Point,
)
from wizard.trace.metrics.mechanisms import Mechanism, is_wrong
from wizard.trace.passes import Results, TracePass
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.formats import BY_ID, KINETO_JSON, cannot_show
from wizard.trace.read.records import KernelRecord, KernelTable, OpInfo, RuntimeCall

__all__ = ["METRICS_PASS", "Classifier", "KernelMetrics", "analyse", "link_op"]


def link_op(
    contents: TraceContents, kernel: KernelRecord, calls: dict[int, RuntimeCall] | None = None
) -> OpLink | None:
    """Kernel -> runtime call (same correlation id) -> innermost cpu_op on that thread.

    ``calls`` are runtime calls looked up in one batch (a lookup scans millions of calls).
    """
    if kernel.correlation is None:
        return None
    if calls is None:
        calls = contents.runtime.find({kernel.correlation})
    call = calls.get(kernel.correlation)
    if call is None:
        return None
    info = contents.ops.innermost(call.pid, call.tid, call.ts)
    op = info if isinstance(info, OpInfo) else None
    stack = [str(frame) for frame in contents.python.containing(call.pid, call.tid, call.ts)]
    if not stack and op is not None and op.call_stack:
        stack = [frame for frame in op.call_stack.split(";") if frame]
    if op is None and not stack:
        return None
    return OpLink(
        op=op.name if op else None,
        runtime_call=call.name,
        thread=f"pid {call.pid} tid {call.tid}",
        input_dims=op.input_dims if op else None,
        input_types=op.input_types if op else None,
        python_stack=stack,
        via="correlation" if op else "python stack",
    )


def _device_summary(devices: dict[int, DeviceInfo], used: set[int]) -> list[dict[str, Any]]:
    """One row per device the trace describes or a kernel ran on (``used``): an id the trace does not describe is
    the listed devices' GPU, ``assumed``, where they are all one (what its kernels were checked against), else
    ``unknown``."""
    rows = []
    for device_id in sorted(devices.keys() | used):
        d = devices.get(device_id) or device_for(devices, device_id) or DeviceInfo(device_id, None, None, "unknown")
        cc = f"{d.limits.compute_major}.{d.limits.compute_minor}" if d.limits else None
        rows.append(
            {"id": device_id, "name": d.name, "num_sms": d.num_sms, "compute_capability": cc, "source": d.source}
        )
    return rows


def _for_kernel(finding: Finding, k: KernelRecord) -> Finding:
    """A memoised finding, stamped with this kernel's identity."""
    return msgspec.structs.replace(
        finding, kernel_index=k.index, kernel=k.name, device=k.device, ts=k.ts, correlation=k.correlation
    )


def _first_min(current: float, values: Any) -> float:
    """``min(current, v)`` for each of ``values`` in turn, as Python folds it: the first value strictly below every
    one before it (a NaN never is, and a NaN ``current`` stays; of 0.0 and -0.0 the first met)."""
    below = values[values < current]
    if not len(below):
        return current
    return float(below[int((below == below.min()).argmax())])


def _first_max_above(current: float, values: Any) -> int | None:
    """Where ``if v > best: best = v`` over ``values`` last takes a value (the first of the largest, where it is
    above ``current``), or None where none is."""
    import numpy as np

    above = np.flatnonzero(values > current)
    if not len(above):
        return None
    found = values[above]
    return int(above[int((found == found.max()).argmax())])


class Classifier:
    """Classifies kernels as they arrive, so analysis can overlap with reading.

    Training steps launch the same kernels over and over: each distinct launch is
    classified once, and a per-kernel Finding is made only when it becomes a group's
    first or worst example.
    """

    def __init__(
        self,
        devices: dict[int, DeviceInfo],
        rocm: bool,
        source: TraceContents | None = None,
        max_launches: int = DEFAULT_MAX_LAUNCHES,
        *,
        typed: bool = False,
        plots: bool = False,
    ) -> None:
        self.source = source  # the contents whose kernels were fed, in order
        self.max_launches = max_launches
        self.devices = devices
        self.rocm = rocm
        self.fed = 0
        self.groups: dict[tuple[str, str], FindingGroup] = {}
        self.worst_badness: dict[tuple[str, str], float] = {}
        self.mechanisms: Counter[str] = Counter()
        self.checked = 0
        self.max_true_wps: float | None = None
        self.computed = 0  # launches that print no metrics but whose true values were computed (Cuspy, nsys)
        self.max_computed_wps: float | None = None
        self.typed = typed
        self.checker = MemoChecker(devices, rocm, typed)
        self.tool_notes: Counter[str] = Counter()  # launches per note about the calculators, not the launch
        self.plots = plots
        # the picture's distinct (metric, mechanism, reported, true) points and their launches, counted as launches
        # arrive (at most POINTS_CAP points; the launches of any further point counted per metric), and the points of
        # each check the memo keeps (id(check) -> its points): past MEMO_CAP a check per launch would be kept, ~1 KB
        self._points: Counter[Point] = Counter()
        self._points_of: dict[int, tuple[Point, ...]] = {}
        self._points_omitted: Counter[str] = Counter()
        self._timeline: dict[tuple[str, str], list[float]] = {}
        self._timeline_omitted = 0
        # id(KernelCheck) -> its findings, one per mechanism (the worst), with their badness, and
        # whether the launch is wrong: a launch counts once per mechanism, and once among the wrong
        self.badness: dict[int, tuple[list[tuple[Finding, float]], bool]] = {}
        self.wrong_launches = 0
        # kernel-table shape id -> its check, whether wrong, its findings with badness, group key, whether listed
        self._by_shape: dict[
            int, tuple[KernelCheck, bool, tuple[tuple[Finding, float, tuple[str, str], bool], ...]]
        ] = {}

    def feed(self, kernels: KernelTable) -> None:
        """Check the launches that arrived since the last call. A launch's check depends only on what it shares
        with others (its shape in the kernel table): each shape is checked once, from its first launch's record,
        the totals are counted per shape (launches of it in this batch), and only launches whose shape has
        findings are looked at one by one, for their groups (a record and a check signature per launch were most
        of the flagship's time at 200 MB). Shapes are taken in the order of their first launch, so every counter
        gains its keys in launch order, as one launch at a time gave them."""
        start, self.fed = self.fed, len(kernels)
        columns = kernels.columns()
        ts, shape_of = columns[0], columns[3]
        # the picture needs every launch's record; an export whose every kernel has its own shape (distinct grids:
        # millions) is checked a launch at a time, as counting per shape would hold a count and a check per launch
        if self.plots or len(columns[4]) > MEMO_CAP:
            for k in kernels.since(start):
                self._launch(k, *self._judged(k))
            return
        keyed_of: dict[int, tuple[tuple[Finding, float, tuple[str, str], bool], ...]] = {}
        for shape, launches in Counter(shape_of[start : self.fed]).items():
            seen = self._by_shape.get(shape)
            if seen is None:
                k = kernels[shape_of.index(shape, start, self.fed)]
                result, findings, wrong = self._judged(k)
                keyed = tuple(
                    (finding, bad, (finding.mechanism.value, k.name), is_wrong(finding.mechanism.value))
                    for finding, bad in findings
                )
                seen = self._by_shape[shape] = (result, wrong, keyed)
            result, wrong, keyed = seen
            self._counted(result, wrong, launches)
            for _, _, (mechanism, _), _ in keyed:
                self.mechanisms[mechanism] += launches
            if keyed:
                keyed_of[shape] = keyed
        if keyed_of:
            self._group_launches(kernels, start, ts, shape_of, keyed_of)

    def _group_launches(
        self,
        kernels: KernelTable,
        start: int,
        ts: Any,
        shape_of: Any,
        keyed_of: dict[int, tuple[tuple[Finding, float, tuple[str, str], bool], ...]],
    ) -> None:
        """Each launch with findings into its groups, group by group: a group's launches in launch order, the first
        (a new group's), its examples and its listed launches one by one, the rest counted with numpy (a Python
        loop over every launch with findings was 7% of a 200 MB trace's passes, and grows with the trace). What
        each group holds is what adding its launches one at a time gives (``_grouped``; tests/trace/
        test_group_launches.py folds them so, as the loop did). New groups are made in the order of their first
        launch, as the loop made them."""
        import numpy as np

        fed = self.fed
        shapes = np.frombuffer(shape_of, dtype=f"i{shape_of.itemsize}")[start:fed]
        order = np.argsort(shapes, kind="stable")  # each shape's launches together, in launch order
        ordered, wanted = shapes[order], list(keyed_of)
        los, his = np.searchsorted(ordered, wanted).tolist(), np.searchsorted(ordered, wanted, side="right").tolist()
        launches = {shape: order[lo:hi] + start for shape, lo, hi in zip(wanted, los, his, strict=True)}
        # keyed_of holds the shapes in the order of their first launch (feed's Counter), so a group's key comes
        # first where its first launch would have made the group
        parts: dict[tuple[str, str], list[tuple[int, Finding, float, bool]]] = {}
        for shape, keyed in keyed_of.items():
            for finding, bad, key, listed in keyed:
                parts.setdefault(key, []).append((shape, finding, bad, listed))
        times = np.frombuffer(ts, dtype=np.float64)
        for key, of_key in parts.items():
            self._group_of(kernels, key, of_key, launches, times)

    def _group_of(
        self,
        kernels: KernelTable,
        key: tuple[str, str],
        parts: list[tuple[int, Finding, float, bool]],
        launches: dict[int, Any],
        times: Any,
    ) -> None:
        """One group's launches (``parts``: the shapes whose findings it holds, each its finding, badness and
        whether listed) added in launch order."""
        import numpy as np

        index = np.concatenate([launches[shape] for shape, *_ in parts])
        part = np.repeat(np.arange(len(parts)), [len(launches[shape]) for shape, *_ in parts])
        in_order = np.argsort(index, kind="stable")
        index, part = index[in_order], part[in_order]
        group = self.groups.get(key)
        if group is None:
            i = int(index[0])
            _, finding, bad, _ = parts[part[0]]
            self._grouped(finding, bad, key[1], i, float(times[i]), kernels, counted=True)
            group = self.groups[key]
            index, part = index[1:], part[1:]
        if not len(index):
            return
        group.examples.extend(index[: max(0, 8 - len(group.examples))].tolist())
        group.count += len(index)
        group.first_ts = _first_min(group.first_ts, times[index])
        if parts[0][3]:  # listed: every mechanism but F (one mechanism a group); F is correct by design
            taken = max(0, self.max_launches - len(group.launch_refs))
            group.launch_refs.extend(
                (i, parts[p][1]) for i, p in zip(index[:taken].tolist(), part[:taken].tolist(), strict=True)
            )
            group.launches_omitted += max(0, len(index) - taken)
        bads = np.array([bad for _, _, bad, _ in parts], dtype=np.float64)[part]
        worst = _first_max_above(self.worst_badness[key], bads)
        if worst is not None:
            _, finding, bad, _ = parts[part[worst]]
            group.worst = _for_kernel(finding, kernels[int(index[worst])])
            self.worst_badness[key] = bad

    def _judged(self, k: KernelRecord) -> tuple[KernelCheck, list[tuple[Finding, float]], bool]:
        """A launch's check (memoised), its findings one per mechanism with their badness, and whether it is wrong."""
        result = self.checker.check(k)
        judged = self.badness.get(id(result))
        if judged is None:
            judged = _per_mechanism(result.findings)
            if self.checker.kept:  # alive in the memo: its id is never another's
                self.badness[id(result)] = judged
        return result, *judged

    def _launch(self, k: KernelRecord, result: KernelCheck, findings: list[tuple[Finding, float]], wrong: bool) -> None:
        """One launch with its record at hand (when plotting, or when every launch is its own shape)."""
        self._counted(result, wrong, 1)
        if self.plots:
            self._draw(k, result, findings, wrong)
        for finding, bad in findings:
            self._grouped(finding, bad, k.name, k.index, k.ts, k)

    def _counted(self, result: KernelCheck, wrong: bool, launches: int) -> None:
        """What ``launches`` launches with this check add to the totals."""
        self.wrong_launches += wrong * launches
        for note in result.notes:
            self.tool_notes[note] += launches
        if not result.checked and result.true:
            self._computed(result, launches)
        if result.checked:
            self.checked += launches
            true_wps = result.corrected.get("warps per SM")
            if (
                isinstance(true_wps, float)
                and math.isfinite(true_wps)
                and (self.max_true_wps is None or true_wps > self.max_true_wps)
            ):
                self.max_true_wps = true_wps

    def _grouped(  # noqa: PLR0917 - a launch's fields, read from the columns without a record
        self,
        finding: Finding,
        bad: float,
        name: str,
        index: int,
        ts: float,
        where: KernelTable | KernelRecord,
        *,
        counted: bool = False,
    ) -> None:
        """A launch's finding into its (mechanism, kernel) group; ``where`` gives the launch's record when needed;
        ``counted``: its mechanism was counted already (per shape)."""
        mechanism = finding.mechanism.value
        if not counted:
            self.mechanisms[mechanism] += 1
        key = (mechanism, name)
        group = self.groups.get(key)
        if group is None:
            k = where if isinstance(where, KernelRecord) else where[index]
            group = self.groups[key] = FindingGroup(
                mechanism, finding.mechanism.summary, finding.severity, name, 1, ts, _for_kernel(finding, k)
            )
            group.examples.append(index)
            self.worst_badness[key] = bad
            self._keep_launch(group, index, finding)
            return
        if len(group.examples) < 8:
            group.examples.append(index)
        group.count += 1
        group.first_ts = min(group.first_ts, ts)
        self._keep_launch(group, index, finding)
        if bad > self.worst_badness[key]:
            group.worst = _for_kernel(finding, where if isinstance(where, KernelRecord) else where[index])
            self.worst_badness[key] = bad

    def _computed(self, result: KernelCheck, launches: int = 1) -> None:
        """Launches that printed nothing to check, whose true values were computed (Cuspy, nsys)."""
        self.computed += launches
        wps = result.true.get("warps per SM")
        if isinstance(wps, float) and math.isfinite(wps):
            self.max_computed_wps = max(self.max_computed_wps or 0.0, wps)

    def _draw(self, k: KernelRecord, result: KernelCheck, findings: list[tuple[Finding, float]], wrong: bool) -> None:
        """Count the launch under its points; keep a wrong launch's start for the timeline."""
        points = self._points_of.get(id(result))
        if points is None:
            points = _plotted(result, k)
            if self.checker.kept:  # alive in the memo: its id is never another's
                self._points_of[id(result)] = points
        counts = self._points
        for point in points:
            if point in counts or len(counts) < POINTS_CAP:
                counts[point] += 1
            else:
                self._points_omitted[point[0]] += 1
        if not wrong:
            return
        for finding, _ in findings:
            if finding.mechanism.wrong:
                times = self._timeline.setdefault((str(k.stream), finding.mechanism.value), [])
                if len(times) < TIMELINE_CAP:
                    times.append(k.ts)
                else:
                    self._timeline_omitted += 1

    def plot_data(self) -> PlotData:
        """The distinct points, per metric, with their launch counts, and the wrong launches' times."""
        points = [(m, mech, r, t, n) for (m, mech, r, t), n in self._points.items()]
        return PlotData(points, self._timeline, self._timeline_omitted, points_omitted=dict(self._points_omitted))

    def _keep_launch(self, group: FindingGroup, index: int, finding: Finding) -> None:
        if not group.wrong:
            return  # F: correct by design, never listed as wrong
        if len(group.launch_refs) < self.max_launches:
            group.launch_refs.append((index, finding))
        else:
            group.launches_omitted += 1


def _per_mechanism(findings: Sequence[Finding]) -> tuple[list[tuple[Finding, float]], bool]:
    """One finding per mechanism for a launch (the worst: a '?' on the grid and on the occupancy is one
    '?' launch), with its badness, and whether any of them makes the launch wrong."""
    worst: dict[str, tuple[Finding, float]] = {}
    for finding in findings:
        bad = finding.badness()
        key = finding.mechanism.value
        if key not in worst or bad > worst[key][1]:
            worst[key] = (finding, bad)
    return list(worst.values()), any(is_wrong(key) for key in worst)


def _launches(group: FindingGroup, kernels: Sequence[KernelRecord]) -> list[Launch]:
    out = []
    for index, finding in group.launch_refs:
        k = kernels[index]
        out.append(Launch(k.ts, k.device, k.stream, k.correlation, k.grid, k.block, finding.reported, finding.true))
    return out


def analyse(
    contents: TraceContents, options: InspectOptions = DEFAULT_OPTIONS, classifier: Classifier | None = None
) -> KernelMetrics:
    """Check every kernel of one read trace (``options.sms``: the SM count for traces without device properties;
    ``options.plots``: also gather what a picture needs, ``KernelMetrics.plot``).

    ``classifier`` may already hold the kernels classified while the file was being read.
    """
    started = time.perf_counter()
    sms, max_launches, plots = options.sms, options.max_launches, options.plots
    devices = device_table(contents.device_properties, contents.kernels, sms)
    rocm = contents.is_rocm
    if (
        classifier is None
        or classifier.source is not contents
        or classifier.devices != devices
        or classifier.rocm != rocm
        or classifier.max_launches != max_launches
        or classifier.typed != contents.typed
        or classifier.plots != plots
    ):  # what was known while reading fell short
        classifier = Classifier(devices, rocm, contents, max_launches, typed=contents.typed, plots=plots)
    classifier.feed(contents.kernels)
    _link_groups(contents, classifier.groups)
    ordered = sorted(classifier.groups.values(), key=lambda g: (not g.wrong, g.mechanism, -g.count, g.kernel))
    found = KernelMetrics(
        kernels_checked=classifier.checked,
        devices=_device_summary(devices, contents.kernels.device_ids()),
        rocm=rocm,
        rocm_metrics=_rocm_carrying(contents) if rocm else 0,
        resident_warps=[] if rocm else _resident_limits(devices),
        mechanisms=dict(classifier.mechanisms),
        groups=ordered,
        notes=_notes(contents, devices, sms, classifier.mechanisms)
        + _computed_note(classifier)
        + _tool_notes(classifier.tool_notes),
        max_true_warps_per_sm=classifier.max_true_wps if classifier.checked else classifier.max_computed_wps,
        computed_launches=classifier.computed,
        launches=_launch_records(contents, classifier.checker, options.launches),
        workload=contents.kernels.fingerprint(),
        wrong_launches=classifier.wrong_launches,
        plot=classifier.plot_data() if plots else None,
    )
    found.analyse_s = time.perf_counter() - started
    return found


class _Named(msgspec.Struct, frozen=True, eq=False):
    """A check's mechanisms (each once, in order), the one a record leads with, and whether any is wrong."""

    mechanisms: tuple[str, ...]
    primary: str | None
    wrong: bool


def _plotted(result: KernelCheck, k: KernelRecord) -> tuple[Point, ...]:
    """A launch's points in the picture, a metric each: what the trace says and the true value, under the launch's
    mechanism; none where nothing was checked. Every launch sharing a check shares its written values (the memo's
    key), so a check's points are its first launch's."""
    if not result.checked:
        return ()
    mechanism = _named(result).primary or "ok"
    true = result.true
    points: tuple[Point, ...] = (
        ("blocks per SM", mechanism, k.blocks_per_sm.value, true.get("blocks per SM")),
        ("warps per SM", mechanism, k.warps_per_sm.value, true.get("warps per SM")),
    )
    if k.occupancy_key is not None:
        points += (("occupancy %", mechanism, k.occupancy.value, true.get(k.occupancy_key)),)
    return points


def _named(result: KernelCheck) -> _Named:
    mechanisms = tuple(dict.fromkeys(f.mechanism.value for f in result.findings))
    wrong = [m for m in mechanisms if is_wrong(m)]
    return _Named(mechanisms, wrong[0] if wrong else (mechanisms[0] if mechanisms else None), bool(wrong))


def _launch_records(contents: TraceContents, checker: MemoChecker, keep: Keep) -> list[KernelLaunch]:
    """One record per checked launch, or launch whose true values were computed (``all``), or per launch with a
    wrong value (``wrong``), with its op.

    A second walk over the kernels, but each distinct launch was classified already (memoised)."""
    if keep == "none":
        return []
    chosen: list[tuple[KernelRecord, KernelCheck, _Named]] = []
    named: dict[int, _Named] = {}  # id(KernelCheck) -> its mechanisms: checks are shared by identical launches
    for k in contents.kernels:
        result = checker.check(k)
        verdict = named.get(id(result))
        if verdict is None:
            verdict = _named(result)
            if checker.kept:  # alive in the memo: its id is never another's
                named[id(result)] = verdict
        # a launch that prints nothing to check (Cuspy, Nsight Systems) but whose true values were computed is
        # listed with them, as a checked one is
        if (result.checked or verdict.mechanisms or result.true) and (keep == "all" or verdict.wrong):
            chosen.append((k, result, verdict))
    calls = contents.runtime.find({k.correlation for k, _, _ in chosen if k.correlation is not None})
    launch_calls = [calls.get(k.correlation) if k.correlation is not None else None for k, _, _ in chosen]
    placed = [(c.pid, c.tid, c.ts) for c in launch_calls if c is not None]
    found = iter(contents.ops.innermost_many(placed))
    ops = [next(found) if c is not None else None for c in launch_calls]
    rank, path = contents.rank, contents.path
    out = []
    for (k, result, verdict), info in zip(chosen, ops, strict=True):
        op = info if isinstance(info, OpInfo) else None
        occupancy_key = k.occupancy_key
        out.append(
            KernelLaunch(
                s_name=k.name,
                ts=k.ts,
                dur=k.dur,
                pid=k.pid,
                tid=k.tid,
                device=k.device,
                stream=k.stream,
                correlation=k.correlation,
                grid=k.grid,
                block=k.block,
                registers_per_thread=k.registers,
                shared_memory=k.shared_memory,
                blocks_per_sm=k.blocks_per_sm.value,
                warps_per_sm=k.warps_per_sm.value,
                est_occupancy=k.occupancy.value if occupancy_key is not None else None,
                true_blocks_per_sm=result.true.get("blocks per SM"),
                true_warps_per_sm=result.true.get("warps per SM"),
                true_est_occupancy=result.true.get(occupancy_key) if occupancy_key is not None else None,
                mechanism=verdict.primary,
                mechanisms=verdict.mechanisms,
                op=op.name if op else None,
                input_dims=op.input_dims if op else None,
                input_type=op.input_types if op else None,
                trace=path,
                rank=rank,
            )
        )
    return out


def _link_groups(contents: TraceContents, groups: dict[tuple[str, str], FindingGroup]) -> None:
    """Each group's op (from its worst launch, else its first examples) and its wrong launches."""
    if not groups:
        return
    kernels = contents.kernels
    wanted = {i for g in groups.values() for i in (g.worst.kernel_index, *g.examples)}
    calls = contents.runtime.find({c for i in wanted if (c := kernels[i].correlation) is not None})
    for group in groups.values():
        for index in (group.worst.kernel_index, *group.examples):
            if (link := link_op(contents, kernels[index], calls)) is not None:
                group.op = link
                break
        group.launches = _launches(group, kernels)


def _unverified_occupancy_notes(devices: dict[int, DeviceInfo], objects: bool) -> list[str]:
    """Once per compute capability the occupancy calculator has no table for (a GPU newer than this
    release): blocks and warps per SM are still checked; the occupancy against the profiler's own
    calculator result where the trace carries it (``objects``), else taken as printed."""
    from wizard.trace.metrics.occupancy import ARCHITECTURES

    unknown = sorted(
        {d.limits.compute_capability for d in devices.values() if d.limits is not None} - set(ARCHITECTURES)
    )
    if objects:
        return [
            f"compute capability {major}.{minor} is newer than warpwizard's occupancy table: the occupancy was "
            "checked against the profiler's own calculator result (the trace's occupancy objects)"
            for major, minor in unknown
        ]
    return [
        f"the occupancy could not be verified for compute capability {major}.{minor} (warpwizard's calculator has "
        "no table for it yet); blocks and warps per SM were checked, occupancy values are shown as printed"
        for major, minor in unknown
    ]


def _computed_note(classifier: Classifier) -> list[str]:
    """Where the trace prints no metrics (Cuspy, Nsight Systems), the true values were computed instead."""
    if not classifier.computed or classifier.checked:
        return []
    largest = classifier.max_computed_wps
    return [
        f"no kernel carries blocks/warps per SM or occupancy; the true values of "
        f"{plural(classifier.computed, 'launch')} were computed from grid, block and the SM count"
        + (f" (largest warps per SM {compact(largest)}: the whole grid's warps per SM)" if largest is not None else "")
    ]


def _tool_notes(notes: Counter[str]) -> list[str]:
    """What the trace's own occupancy objects say against warpwizard's calculator, with how often."""
    return [f"{note} ({plural(count, 'launch')})" for note, count in notes.most_common(8)]


def _rocm_carrying(contents: TraceContents) -> int:
    """Kernels that carry blocks or warps per SM (on a ROCm trace: values that are listed, not checked)."""
    return sum(
        1 for k in contents.kernels if k.blocks_per_sm.spelling != "missing" or k.warps_per_sm.spelling != "missing"
    )


def _rocm_note(contents: TraceContents) -> str:
    """ROCm traces are not checked; say why in terms of what this trace carries."""
    carrying = _rocm_carrying(contents)
    if carrying:
        return (
            f"ROCm trace: {plural(carrying, 'kernel')} {verb(carrying, 'carries', 'carry')} blocks/warps per SM, "
            "but warpwizard does not check ROCm values "
            "(AMD GPUs count compute units and 64-thread wavefronts, and no occupancy calculator is known for "
            "them); they are listed as they are"
        )
    return (
        "ROCm trace: the profiler records no blocks/warps per SM or occupancy on AMD GPUs, "
        "so there is nothing to check; launch dimensions are listed as they are"
    )


def _fixed_launches(contents: TraceContents) -> int:
    """Launches ``trace fix`` already corrected, counted on the kernel table's columns (a record per launch cost
    a tenth of the flagship's time after the read at 200 MB, to find none in nearly every trace)."""
    shape_of, shapes = contents.kernels.columns()[3:]
    fixed = [n for n, shape in enumerate(shapes) if shape[13] is not None]  # KernelRecord.fixed
    return sum(map(shape_of.count, fixed))


def _notes(
    contents: TraceContents, devices: dict[int, DeviceInfo], sms: int | None, mechanisms: Counter[str]
) -> list[str]:
    """What a reader of the report should know about the trace itself, in order."""
    notes: list[str] = _format_notes(contents)
    if contents.is_rocm:  # nothing is checked, so no note says what was
        notes.append(_rocm_note(contents))
    else:
        notes += _unverified_occupancy_notes(devices, contents.kernels.carries_profiler_occupancy())
    if not contents.kernels and contents.truncation is not None:
        notes.append(
            f"no GPU kernels in the part that was read: the file is cut off at byte {contents.truncation.at_byte}, "
            "and the kernels may be in the part that was lost"
        )
    elif not contents.kernels:
        notes.append("no GPU kernels in this trace (CPU-only profile, or the CUDA activity was not recorded)")
    notes += _sm_count_notes(contents, devices, sms) + sm_count_conflicts(devices)
    already_fixed = _fixed_launches(contents)
    if already_fixed:
        notes.append(
            f"{plural(already_fixed, 'kernel')} {verb(already_fixed, 'was', 'were')} already corrected by "
            "`warpwizard trace fix` (originals under 'warpwizard original'); "
            f"{verb(already_fixed, 'it is', 'they are')} not checked again"
        )
    if contents.truncation is not None:
        notes.append(f"truncated: {contents.truncation.detail}")
    if contents.counter_events:
        notes.append(
            f"{plural(contents.counter_events, 'CUPTI PM-sampling counter event')} (PyTorch 2.15+): "
            "measured values, shown beside the computed ones by the flagship's step 6 (metrics.sanity)"
        )
    if mechanisms.get(Mechanism.BY_DESIGN.value):
        notes.append(
            "large warps-per-SM values are by design (mechanism F): the metric divides the whole "
            f"grid's warps by the SM count; it is not resident warps and is not comparable to {_resident(devices)}"
        )
    return notes


def _graph_lanes_note(contents: TraceContents) -> list[str]:
    """A Kineto JSON trace whose graphed kernels PyTorch's exporter moved onto display lanes
    (``export_chrome_trace(..., graph_lanes="all")``, pytorch/pytorch#194854: ``tid`` and ``args.stream`` the lane,
    ``args.original_stream`` the stream), or that says its graph annotations are baked in
    (``cudaGraphInlineAnnotated``): what its rows mean."""
    *_, shape_of, shapes = contents.kernels.columns()
    moved_shapes = {i for i, s in enumerate(shapes) if type(s[2]) is int and type(s[4]) is int and s[2] != s[4]}
    moved = sum(1 for i in shape_of if i in moved_shapes) if moved_shapes else 0
    if moved:
        return [
            f"{plural(moved, 'graphed kernel')} drawn on the lanes PyTorch's exporter moved them to (graph_lanes, "
            "CUDA-graph annotations): a row is a lane, not a CUDA stream; each kernel is checked on the stream it "
            "ran on (args.original_stream), and kernels of several streams on one lane overlap as streams do"
        ]
    if contents.metadata.get("cudaGraphInlineAnnotated") is True:
        return [
            "CUDA-graph annotations baked into the trace (cudaGraphInlineAnnotated); its kernels stay on their streams"
        ]
    return []


def _format_notes(contents: TraceContents) -> list[str]:
    """For a format other than Kineto's JSON, or Cuspy's JSON: what was read, what it cannot carry, and what its
    writer said of its own collection (Nsight Systems' warnings and errors); for Kineto's JSON, its graph lanes."""
    cuspy = contents.metadata.get("cuspy")
    if contents.format == KINETO_JSON.id and not isinstance(cuspy, dict):
        return _graph_lanes_note(contents)
    fmt = BY_ID[contents.format]
    notes = [f"read as {fmt.name_with_article}" + (f", written by {contents.writer}" if contents.writer else "")]
    if isinstance(cuspy, dict) and cuspy.get("lanes"):
        notes.append(
            f"{plural(int(cuspy['lanes']), 'kernel')} drawn on Cuspy's logical lanes (CUDA-graph ops moved off their "
            "stream): checked on their real stream (original_stream), shown on the lane"
        )
    notes += [f"this file cannot show {check}: {why}" for check, why in cannot_show(contents).items()]
    if contents.metadata.get("perfetto_clocks"):
        notes.append(
            "this trace names clocks or packet defaults (TracePacketDefaults, timestamp_clock_id) that are not "
            "applied here: its times may be offset"
        )
    wal = contents.metadata.get("nsys_wal")
    if isinstance(wal, dict):
        notes.append(
            f"{wal['path']} beside this export holds {wal['bytes']:,} bytes of SQLite's write-ahead log: rows written "
            "there are not read (the export is read as it is on disk); checkpoint it into the file first (sqlite3 FILE "
            "'PRAGMA wal_checkpoint') to read them"
        )
    nsys = contents.metadata.get("nsys")
    if isinstance(nsys, dict):
        diagnostics = nsys.get("diagnostics") or []
        for d in diagnostics[:3]:
            notes.append(f"Nsight Systems {d['severity']}: {d['text']}")
        if len(diagnostics) > 3:
            notes.append(f"{plural(len(diagnostics) - 3, 'more Nsight Systems diagnostic')} in the JSON report")
        for table, columns in sorted((nsys.get("missing_columns") or {}).items()):
            notes.append(f"this export's {table} has no {', '.join(columns)} column: read without it")
    return notes


def _resident_limits(devices: dict[int, DeviceInfo]) -> list[int]:
    """The warps an SM of these GPUs holds at once (32 on a cc 7.5 GPU, 48 on most consumer ones, 64 on
    data-centre ones), from the trace's own device limits: what F is counted against."""
    return sorted({d.limits.max_threads_per_sm // 32 for d in devices.values() if d.limits is not None})


def _resident(devices: dict[int, DeviceInfo]) -> str:
    most = _resident_limits(devices)
    if not most:
        return "the few dozen warps an SM holds at once"
    return f"the at most {' or '.join(map(str, most))} warps an SM of this GPU holds at once"


def _sm_count_notes(contents: TraceContents, devices: dict[int, DeviceInfo], sms: int | None) -> list[str]:
    """Where the SM count came from when the trace gives none: --sms (and whether it fits), or inference;
    and that --sms went unused when the trace gives its own."""
    if contents.device_properties and sms is not None:
        own = sorted({d.num_sms for d in devices.values() if d.num_sms is not None})
        return [
            f"the SM count given with --sms ({sms}) was not used: the trace has deviceProperties, and its devices' "
            f"own SM counts were used ({' or '.join(map(str, own)) or 'none usable'})"
        ]
    if contents.device_properties or not contents.kernels or contents.is_rocm or not contents.kernels.carries_metrics():
        return []  # (a trace whose kernels carry no metrics, Cuspy's or nsys's, has nothing to recompute with one)
    inferred = [d for d in devices.values() if d.source == "inferred"]
    if sms is not None:  # device_table let the count the kernels prove win over a contradicting --sms
        overruled = [
            f"the SM count given with --sms ({sms}) does not fit this trace: its kernels' blocks per SM fit "
            f"{d.num_sms} SMs exactly{f' ({article(d.name)} {d.name})' if d.name else ''}, so {d.num_sms} was used"
            for d in inferred
        ]
        return overruled or [f"the trace has no deviceProperties; using the SM count given with --sms: {sms}"]
    if not inferred:
        return ["the trace has no deviceProperties and the SM count could not be inferred; " + SM_COUNT_HINT]
    found = ", ".join(
        f"device {d.device_id}: {d.num_sms} SMs" + (f", assumed {d.name}" if d.limits else "") for d in inferred
    )
    return [
        "the trace has no deviceProperties; SM counts were inferred from the kernels' own grid "
        f"and blocks or warps per SM ({found})"
    ]


class MechanismPass:
    """The flagship's pass over one trace: classified while blocks arrive once the device properties are known,
    finished into ``KernelMetrics``."""

    def __init__(self, options: InspectOptions) -> None:
        self.options = options
        self.classifier: Classifier | None = None

    def feed(self, contents: TraceContents) -> None:
        """Runs between merges while workers decode: classify what has arrived."""
        o = self.options
        if self.classifier is None:
            if not contents.device_properties:
                return  # inferring SM counts needs every kernel: wait for the end
            devices = device_table(contents.device_properties, [], o.sms)
            self.classifier = Classifier(
                devices, contents.is_rocm, contents, o.max_launches, typed=contents.typed, plots=o.plots
            )
        self.classifier.feed(contents.kernels)

    def finish(self, contents: TraceContents, before: Results) -> KernelMetrics:
        return analyse(contents, self.options, self.classifier)


METRICS_PASS = TracePass("mechanisms", KernelMetrics, MechanismPass, KernelMetrics.to_dict)
