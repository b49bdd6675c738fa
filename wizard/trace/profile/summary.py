"""The profile pass: one trace summed up for comparison (``PROFILE_PASS``; its result is ``ProfileSummary``).

Steps 1 and 5 of the method compare two profiles of one workload (another profiler or PyTorch, another GPU). A
comparison needs to know first whether the two can be compared (devices, ranks, steps, graph state, versions,
capture options, each side's health) and then what changed (kernels by name and launch configuration, steps).
That is a few kilobytes per trace, kept in the same read as every other pass and written in ``--json`` under
``reports[].profile``, so a diff of two reports, or of a thousand ranks, never reads a trace again.

Bounded on purpose (a trace comes from someone else): the kernels are grouped by normalised name and launch
configuration and the ``MAX_KERNELS`` groups with the most GPU time kept (the rest summed as ``others``); step
durations and the metadata's version fields are capped; nothing of the metadata is copied but the named fields
(a trace's metadata can carry a harness's whole environment, tokens included).
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import Struct, field

from wizard.inspect_options import InspectOptions
from wizard.serialize import record_dict
from wizard.trace.health.checker import HEALTH_PASS, worst_status
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import Results, TracePass
from wizard.trace.read.collector import TraceContents

PROFILE_SCHEMA = "warpwizard.profile/1"
MAX_KERNELS = 300  # kernel groups kept per trace, the most GPU time first (a few KB each 100)
MAX_STEPS = 1000  # step durations kept
MAX_TEXT = 200  # characters of a kernel name or a version field
STEP_PREFIX = "ProfilerStep#"  # torch.profiler's step spans, written as ops by some versions
MAX_OPS = 300  # op groups kept per trace and per matching (by name and shapes; by name alone), most CPU time first
# Top-level keys Kineto writes that say which software recorded the trace (PyTorch's profiler, kineto's
# output_json.cpp: cupti_version, cuda_runtime_version, cuda_driver_version; ROCm's roctracer and HIP versions).
VERSION_KEYS = (
    "schemaVersion",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "roctracer_version",
    "hip_runtime_version",
    "hip_driver_version",
)
# The capture options torch.profiler writes at the top level when set (record_shapes, with_stack, ...).
CAPTURE_KEYS = ("record_shapes", "with_stack", "profile_memory", "with_flops", "with_modules")

_VERSION_SUFFIX = re.compile(r"_v\d+$")  # Triton's and cuDNN's per-build suffixes: kernel_v1234
# How two demanglers spell one template argument: Nsight Compute writes `(int)128`, `(bool)0` and `<unnamed>`
# where c++filt (and so Kineto's kernel names) write `128`, `false` and `(anonymous namespace)`.
_CASTS = re.compile(r"\((?:unsigned )?(?:int|long|long long|short|char|signed char)\)(?=-?\d)")
_BOOLS = {"(bool)0": "false", "(bool)1": "true"}
_INT_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)  # 4096ul in a template argument
# Blanks beside punctuation, matched without the punctuation so that they are removed with no replacement template:
# ``sub(r"\1", ...)`` on ``\s*([<>,()*&])\s*`` expanded its template in Python for every comma and bracket of a
# kernel name (12 of 24 µs a long template's name; tests/trace/test_kernel_names_normalised.py holds the two equal)
_SPACES = re.compile(r"\s+(?=[<>,()*&])|(?<=[<>,()*&])\s+")


def normalise(name: str) -> str:
    """A kernel's name as two builds (and two demanglers) of the same code agree on: no ``_vNNNN`` build suffix,
    no integer-literal suffixes or casts in template arguments (``4096ul``, ``(int)128``), ``false``/``true`` for
    ``(bool)0``/``(bool)1``, no spaces around punctuation, no ``(anonymous namespace)::`` or ``<unnamed>::``."""
    text = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    for cast, word in _BOOLS.items():
        text = text.replace(cast, word)
    text = _CASTS.sub("", text)
    text = _SPACES.sub("", text.strip())
    text = _INT_SUFFIX.sub(r"\1", text)
    return _VERSION_SUFFIX.sub("", text)


KEY_CHARS = 160  # of a normalised name kept readable in a key; the whole name is in the key's hash


def kernel_key(name: str) -> str:
    """What two profiles (and Nsight Compute) match a kernel on: its normalised name, a long one cut and its
    whole text's hash appended, so two long templates that differ only past the cut stay apart."""
    text = normalise(name)
    if len(text) <= KEY_CHARS:
        return text
    from wizard.sha256 import sha256  # no OpenSSL loaded for a name

    return f"{text[:KEY_CHARS]}…#{sha256(text.encode()).hexdigest()[:12]}"


class KernelGroup(Struct):
    """The launches of one kernel (normalised name) with one launch configuration."""

    key: str  # the normalised name (kernel_key)
    name: str  # the first full name seen, cut to MAX_TEXT
    grid: list[int] | None
    block: list[int] | None
    launches: int
    total_us: float
    median_us: float
    mad_us: float  # median absolute deviation of the durations: their noise
    wrong: dict[str, int] = field(default_factory=dict)  # mechanism -> launches with a wrong value
    # The first launch's attributes, as the trace wrote them (what Nsight Compute's view is joined on): registers,
    # static + dynamic shared memory, the three reported metrics, and Kineto's own occupancy limits (2.12 on).
    registers: int | None = None
    shared_memory: int | None = None
    reported: dict[str, float | None] = field(default_factory=dict)
    kineto_limits: dict[str, int | None] | None = None


class OpGroup(Struct):
    """The calls of one CPU op (``cpu_op``) with one ``Input Dims`` (None: matched on the name alone). Durations
    are inclusive (an op's time holds its children's), as the profiler's own table's CPU total is."""

    name: str
    shapes: str | None  # the op's Input Dims as the trace wrote them (compact JSON), cut to MAX_TEXT
    calls: int
    total_us: float
    median_us: float
    mad_us: float


class ProfileDevice(Struct):
    """A GPU the kernels ran on, as the trace describes it (None where it does not)."""

    id: int | None
    name: str | None
    num_sms: int | None
    compute_capability: str | None
    # where the name came from: deviceProperties (the trace names the device; nsys's TARGET_INFO_GPU too), assumed
    # (an id the trace does not describe, named like the one GPU it does), inferred (no device described: the GPU
    # with its SM count, a guess); None without a name, or in a report written before it was kept
    name_source: str | None = None


class HealthNote(Struct):
    """A health check that is not ok: what comparing two profiles needs of it."""

    check: str
    status: str
    count: int


class ProfileSummary(Struct):
    """What comparing this profile with another needs, and nothing else."""

    format: str
    writer: str
    rank: int | None
    world_size: int | None
    backend: str | None
    vendor: str | None  # NVIDIA or AMD, where the trace says (its devices, or ROCm's own keys)
    devices: list[ProfileDevice]  # the GPUs its kernels ran on
    versions: dict[str, str]
    capture: dict[str, bool]
    graph_mode: str | None  # eager | graph | mixed, as the graph-launches check read it
    health_status: str
    health: list[HealthNote]  # the checks not ok
    mechanisms: dict[str, int]
    steps: list[float]  # each ProfilerStep's duration, µs, in order
    kernel_count: int
    gpu_time_us: float  # the kernels' durations summed
    kernels: list[KernelGroup]
    others: dict[str, float]  # the groups past MAX_KERNELS: {"groups", "launches", "total_us"}
    schema: str = PROFILE_SCHEMA
    # CPU ops grouped by name and Input Dims (empty where no op has shapes: record_shapes off), and by name alone
    # (what a side without shapes is matched on); each the MAX_OPS groups with the most time.
    ops: list[OpGroup] = field(default_factory=list)
    ops_by_name: list[OpGroup] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)

    def written(self) -> dict[str, Any]:
        """Its field of a trace's report in --json: ``profile`` (docs/json-output.md)."""
        return {"profile": record_dict(self)}


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return str(value)[:MAX_TEXT]


def _distributed(contents: TraceContents) -> tuple[int | None, str | None]:
    info = contents.metadata.get("distributedInfo")
    if not isinstance(info, dict):
        return None, None
    world = info.get("world_size")
    size = world if isinstance(world, int) and not isinstance(world, bool) and 0 < world < 1 << 20 else None
    return size, _text(info.get("backend"))


def _versions(contents: TraceContents) -> dict[str, str]:
    found = {key: _text(contents.metadata.get(key)) for key in VERSION_KEYS}
    return {key: value for key, value in found.items() if value is not None}


def _capture(contents: TraceContents) -> dict[str, bool]:
    return {key: bool(contents.metadata[key]) for key in CAPTURE_KEYS if key in contents.metadata}


def _devices(contents: TraceContents, described: list[dict[str, Any]]) -> list[ProfileDevice]:
    """The devices the kernels ran on, as the mechanism pass described them (its ``devices`` rows), each name with
    where it came from: without deviceProperties a name is only the GPU its SM count suggests."""
    by_id = {d.get("id"): d for d in described}
    out = []
    for device in sorted(contents.kernels.device_ids()):
        d = by_id.get(device, {})
        sms = d.get("num_sms")
        whole = sms if isinstance(sms, int) and not isinstance(sms, bool) else None
        name = _text(d.get("name")) or None  # nsys without TARGET_INFO_GPU names a device ''
        named = None if name is None else _name_source(contents, d.get("source"))
        out.append(ProfileDevice(device, name, whole, _text(d.get("compute_capability")), named))
    return out


def _name_source(contents: TraceContents, source: Any) -> str:
    """Where a device's name came from: the trace's description of it (or of the one GPU it describes: assumed),
    else the SM count (inferred or given with --sms)."""
    if not contents.device_properties:
        return "inferred"
    return "assumed" if source == "assumed" else "deviceProperties"


def _kernel_groups(
    contents: TraceContents, wrong: dict[str, dict[str, int]]
) -> tuple[list[KernelGroup], dict[str, float], float]:
    """Every launch grouped by (normalised name, grid, block), with count, total, median and MAD of durations: the
    ``MAX_KERNELS`` groups with the most GPU time (ties by key, then first seen) made whole, the rest summed as
    ``others``; and the GPU time. Counts, totals and the ranking are numpy over every launch (an export whose every
    kernel has its own grid is millions of groups); a group's object only for those kept."""
    import numpy as np

    from wizard.trace.health.tables import median as median_of

    kernels = contents.kernels
    _, dur, _, _, _ = kernels.columns()
    if not len(dur):
        return [], _others(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)), 0.0
    groups, firsts = kernels.launch_groups(kernel_key)
    durations = np.frombuffer(dur, dtype=np.float64)
    durations = np.where(np.isfinite(durations) & (durations >= 0), durations, 0.0)
    gpu_us = float(durations.sum())
    ordered, starts, counts = _by_group(durations, groups, len(firsts))
    alone = ordered is durations  # every launch its own group: each total is its duration (-0.0 + d is d)
    del durations, groups
    totals = ordered if alone else _group_sums(ordered, starts, counts)
    keys, key_of = _group_keys(kernels, firsts)
    np.negative(totals, out=totals)  # the most time first, negated where it is (no copy), and back after
    ranked = np.lexsort((totals,) if key_of is None or key_of.min() == key_of.max() else (key_of, totals))
    np.negative(totals, out=totals)  # stable: ties in first-seen order
    del key_of
    out = []
    for gid in ranked[:MAX_KERNELS].tolist():
        values = ordered[starts[gid] : starts[gid] + counts[gid]]  # sorted within the group by _by_group
        median = median_of(values)
        shape = kernels.combination(int(firsts[gid]))
        name, grid, block = str(shape[0]), shape[5], shape[6]
        out.append(
            KernelGroup(
                keys[gid], name[:MAX_TEXT],
                list(grid) if grid else None, list(block) if block else None,
                len(values), float(totals[gid]), median, median_of(np.abs(values - median)),
                dict(wrong.get(name, {})), **_attributes(shape),
            )
        )  # fmt: skip
    rest = ranked[MAX_KERNELS:]
    return out, _others(totals, counts, rest), gpu_us


_CHUNK = 1 << 18  # groups or launches taken at once where a whole-array temporary would be one per launch


def _by_group(durations: Any, groups: Any, size: int) -> tuple[Any, Any, Any]:
    """The durations sorted by (group, duration), each group's start among them and its count (32-bit). Where every
    launch is its own group, numbered in order (an export whose every kernel has its own grid), they already are:
    no sort, no copy."""
    import numpy as np

    index = np.int32 if len(groups) < 1 << 31 else np.int64
    if size == len(groups) and all(
        bool((groups[lo : lo + _CHUNK] == np.arange(lo, min(lo + _CHUNK, size))).all()) for lo in range(0, size, _CHUNK)
    ):
        return durations, np.arange(size, dtype=index), np.ones(size, dtype=np.int8)
    counts = np.bincount(groups, minlength=size).astype(index)
    starts = np.zeros(size, dtype=index)
    np.cumsum(counts[:-1], out=starts[1:])
    return durations[np.lexsort((durations, groups))], starts, counts


def _group_keys(kernels: Any, firsts: Any) -> tuple[Any, Any]:
    """Each group's key (by its first launch's name, a name's key computed once) and the key's rank among them,
    from the kernels' names (``base_columns``): no name or key per group held."""
    import numpy as np

    shape, shapes = kernels.base_columns()
    found: dict[str, str] = {}
    of_base = []
    for s in shapes:
        name = str(s[0])
        key = found.get(name)
        if key is None:
            key = found[name] = kernel_key(name)
        of_base.append(key)
    rank_of = {k: n for n, k in enumerate(sorted(set(of_base)))}
    if len(rank_of) < 2:  # one key: its rank orders nothing, and every group's key is it
        return _GroupKeys(of_base, None), None
    bases = np.frombuffer(shape, dtype=np.int32)[firsts] if len(firsts) else np.zeros(0, dtype=np.int32)
    rank = np.array([rank_of[k] for k in of_base] or [0], dtype=np.int32)[bases]
    return _GroupKeys(of_base, bases), rank


class _GroupKeys:
    """Each group's key, looked up when asked (by its first launch's kernel name)."""

    def __init__(self, of_base: list[str], bases: Any) -> None:
        self.of_base, self.bases = of_base, bases

    def __getitem__(self, gid: int) -> str:
        return self.of_base[0 if self.bases is None else int(self.bases[gid])]


def _group_sums(ordered: Any, starts: Any, counts: Any) -> Any:
    """Each group's ``values.sum()``, exactly as numpy sums one group: below 8 values left to right from -0.0
    (numpy's pairwise summation does that for fewer than 8), the rest one group at a time; a chunk of groups at a
    time (the same additions in the same order, without a temporary per group)."""
    import numpy as np

    totals = np.full(len(counts), -0.0)
    for lo in range(0, len(counts), _CHUNK):
        count, start, total = counts[lo : lo + _CHUNK], starts[lo : lo + _CHUNK], totals[lo : lo + _CHUNK]
        small = count < 8
        for k in range(7):
            take = small & (count > k)
            if not take.any():
                break
            total[take] += ordered[start[take] + k]
    for gid in np.flatnonzero(counts >= 8).tolist():
        totals[gid] = ordered[starts[gid] : starts[gid] + counts[gid]].sum()
    return totals


def _others(totals: Any, counts: Any, rest: Any) -> dict[str, float]:
    """The groups at ``rest`` (the groups past MAX_KERNELS, in rank order): how many, their launches, their time
    (summed left to right from 0, as Python's sum of the groups' totals), a chunk of groups at a time: the same
    additions in the same order, without a copy of every group's total and of its running sum."""
    import numpy as np

    running: float | None = None
    launches = 0
    for lo in range(0, len(rest), _CHUNK):
        at = rest[lo : lo + _CHUNK]
        part = totals[at] if running is None else np.concatenate(([running], totals[at]))
        running = float(np.cumsum(part)[-1])
        launches += int(counts[at].sum())
    total: float = running + 0.0 if running is not None else 0
    return {"groups": float(len(rest)), "launches": float(launches), "total_us": total}


def _attributes(shape: Any) -> dict[str, Any]:
    """A launch's registers, shared memory, reported metrics and Kineto's own limits (KernelRecord's order)."""
    reported = {
        "blocks_per_sm": shape[9].value, "warps_per_sm": shape[10].value, "occupancy": shape[11].value,
    }  # fmt: skip
    own = shape[14]
    limits = None
    if own is not None:
        limits = {
            "registers": own.limit_registers, "shared_mem": own.limit_shared_memory,
            "warps": own.limit_warps, "blocks": own.limit_blocks, "active": own.active_blocks,
        }  # fmt: skip
    return {"registers": shape[7], "shared_memory": shape[8], "reported": reported, "kineto_limits": limits}


def _op_groups(contents: TraceContents) -> tuple[list[OpGroup], list[OpGroup]]:
    """Every CPU op's calls grouped by (name, Input Dims) and by name: calls, total, median and MAD of durations;
    the first list empty where no op carries its shapes (the trace was recorded without record_shapes). The ops are
    read where the index keeps them, a thread's views at a time (``_grouped``): no column of every op's duration
    and descriptor id is made (12 bytes an op, the profile's peak at 200 MB)."""
    import numpy as np

    index = contents.ops
    parts = [
        (np.frombuffer(s, "d"), np.frombuffer(e, "d"), np.frombuffer(r, np.intc)) for _, s, e, r in index.threads()
    ]
    if not parts:
        return [], []
    infos = [index.descriptor(i) for i in range(max(int(r.max()) for _, _, r in parts) + 1)]
    steps = [i.name.startswith(STEP_PREFIX) for i in infos]  # the steps are compared as steps, not as ops
    if any(steps):
        step = np.array(steps)
        if all(bool(step[r].all()) for _, _, r in parts):
            return [], []
    shaped = any(info.input_dims is not None for info in infos)
    pairs = list(zip(infos, steps, strict=True))
    by_shape = _grouped(parts, [None if s else (i.name, i.input_dims) for i, s in pairs]) if shaped else []
    return by_shape, _grouped(parts, [None if s else (i.name, None) for i, s in pairs])


def _grouped(parts: list[tuple[Any, Any, Any]], keys: list[tuple[str, str | None] | None]) -> list[OpGroup]:
    """The ops of ``parts`` (each thread's starts, ends and descriptor ids, in the index's order) grouped by the key
    of each one's descriptor (None: left out), each duration ``end - start`` (0 where not a finite, non-negative
    number): the MAX_OPS groups with the most time."""
    import numpy as np

    from wizard.trace.health.tables import median as median_of

    ids: dict[tuple[str, str | None], int] = {}
    numbers = [-1 if k is None else ids.setdefault(k, len(ids)) for k in keys]
    # by group, then each group's durations sorted (stable, as a lexsort by (duration, group) left them): a sort of
    # small integers is a radix sort, 2.5x faster than the lexsort of 320,000 ops at 200 MB; each op's group made in
    # that width at once, the ops left out numbered past the last group
    small = np.int16 if len(ids) <= np.iinfo(np.int16).max else np.int64
    groups = [np.array([len(ids) if n < 0 else n for n in numbers], dtype=small)[r] for _, _, r in parts]
    counts = np.zeros(len(ids) + 1, dtype=np.int64)
    for g in groups:
        counts += np.bincount(g, minlength=len(ids) + 1)
    counts = counts[: len(ids)]
    names = list(ids)
    out: list[OpGroup] = []
    for first, last in _group_ranges(counts, int(counts.sum())) if counts.any() else ():
        picked = [np.flatnonzero((g >= first) & (g < last)) for g in groups]  # the range's ops, in the index's order
        group = np.concatenate([g[p] for g, p in zip(groups, picked, strict=True)])
        spans = np.concatenate([e[p] - s[p] for (s, e, _), p in zip(parts, picked, strict=True)])
        del picked
        spans[~(np.isfinite(spans) & (spans >= 0))] = 0.0
        order = np.argsort(group, kind="stable")
        bounds = np.flatnonzero(np.diff(group[order])) + 1
        for part in np.split(order, bounds):
            values = np.sort(spans[part], kind="stable")
            median = median_of(values)
            name, shapes = names[int(group[part[0]])]
            out.append(
                OpGroup(
                    name[:MAX_TEXT], shapes[:MAX_TEXT] if shapes is not None else None, len(values),
                    float(values.sum()), median, median_of(np.abs(values - median)),
                )
            )  # fmt: skip
        del order, bounds, group, spans
    return sorted(out, key=lambda g: (-g.total_us, g.name, g.shapes or ""))[:MAX_OPS]


_OPS_AT_ONCE = 1 << 16  # ops _grouped orders at once (unless a group or an eighth of the ops is more)


def _group_ranges(counts: Any, ops: int) -> list[tuple[int, int]]:
    """Ranges of group ids [first, last) holding about ``max(_OPS_AT_ONCE, ops / 8)`` ops each (a bigger group alone):
    ``_grouped`` orders one range's ops at a time, so its int64 order is a range's, not every op's (8 bytes an op
    of the profile's peak): about 8 ranges, at most about ``2 * ops / most + 1`` where small and big groups
    alternate."""
    import numpy as np

    most = max(_OPS_AT_ONCE, -(-ops // 8))
    ranges: list[tuple[int, int]] = []
    first = held = 0
    for group, count in enumerate(np.asarray(counts).tolist()):
        if held and count and held + count > most:  # each range starts at a group with ops: none is empty
            ranges.append((first, group))
            first, held = group, 0
        held += count
    ranges.append((first, len(counts)))
    return ranges


def _wrong_by_kernel(metrics: Any) -> dict[str, dict[str, int]]:
    """Kernel name -> mechanism -> launches with a wrong value (F, by design, is no wrong value)."""
    out: dict[str, dict[str, int]] = {}
    for group in metrics.groups:
        if group.wrong:
            out.setdefault(group.kernel, {})[group.mechanism] = group.count
    return out


_QUIET = ("ok", "not_applicable")  # statuses no comparison reads


class ProfilePass:
    """Nothing while reading; the summary once the kernel and health passes are done."""

    def __init__(self, options: InspectOptions) -> None:
        self.options = options

    def feed(self, contents: TraceContents) -> None:
        """The summary needs every launch."""

    def finish(self, contents: TraceContents, before: Results) -> ProfileSummary:
        metrics, health = before.get(METRICS_PASS), before.get(HEALTH_PASS)
        kept, others, gpu_time = _kernel_groups(contents, _wrong_by_kernel(metrics))
        world, backend = _distributed(contents)
        ops, ops_by_name = _op_groups(contents)
        graphs = next((c for c in health.checks if c.check == "graph-launches"), None)
        mode = graphs.details.get("mode") if graphs is not None and graphs.status != "not_applicable" else None
        return ProfileSummary(
            format=contents.format,
            writer=contents.writer,
            rank=contents.rank,
            world_size=world,
            backend=backend,
            vendor="AMD" if metrics.rocm else ("NVIDIA" if len(contents.kernels) else None),
            devices=_devices(contents, metrics.devices),
            versions=_versions(contents),
            capture=_capture(contents),
            graph_mode=mode if isinstance(mode, str) else None,
            health_status=worst_status(health.checks),
            health=[
                HealthNote(c.check, c.status, c.count)
                for c in health.checks
                if c.status not in ("ok", "not_applicable")
            ],
            mechanisms=dict(metrics.mechanisms),
            steps=[end - start for start, end, _ in contents.timeline.steps[:MAX_STEPS]],
            kernel_count=len(contents.kernels),
            gpu_time_us=gpu_time,
            kernels=kept,
            others=others,
            ops=ops,
            ops_by_name=ops_by_name,
        )


PROFILE_PASS = TracePass(
    "profile", ProfileSummary, ProfilePass, ProfileSummary.written, needs=(METRICS_PASS, HEALTH_PASS)
)
