"""Which device each kernel ran on, and the numbers the profiler used for it.

From the trace's ``deviceProperties`` (or 2021's ``computeProperties``) when present;
otherwise the SM count is inferred from the kernels' own grid and ``blocks per SM`` and
matched to a known GPU, and the report says so.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from wizard.formatting import shown
from wizard.trace.gpus import FAMILY, PROPERTIES
from wizard.trace.kineto_math import INT32_MAX, product
from wizard.trace.metrics.mechanisms import SMEM_DEFAULT_LIMIT
from wizard.trace.metrics.occupancy import DeviceLimits
from wizard.trace.read.records import KernelRecord, KernelTable
from wizard.untrusted import cut

_PLAUSIBLE = 1 << 31


def _get(props: dict[str, Any], *names: str) -> int | None:
    """A device fact as a positive integer the profiler could have used, else None."""
    for name in names:
        value = props.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < _PLAUSIBLE:
            return value
    return None


def fact_problem(props: dict[str, Any], *names: str) -> str | None:
    """Why a device fact cannot be used, in words (None when it can, or is simply absent)."""
    for name in names:
        if name not in props:
            continue
        value = props[name]
        if _get(props, name) is not None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} is {shown(value, 40)} ({type(value).__name__}), not a number"
        if isinstance(value, float):
            return f"{name} is {shown(value, 40)}, not a whole number"
        return f"{name} is {shown(value, 40)}, which no GPU has"
    return None


class DeviceInfo(msgspec.Struct, frozen=True):
    device_id: int
    num_sms: int | None
    limits: DeviceLimits | None
    source: str  # deviceProperties | inferred | given | assumed | unknown
    name: str = ""
    problem: str | None = None  # a malformed fact that keeps values from being recomputed
    declared_sms: int | None = None  # deviceProperties' count, where the kernels prove another (mechanism G)


def limits_from_properties(props: dict[str, Any]) -> DeviceLimits | None:
    num_sms = _get(props, "numSms", "multiProcessorCount")
    major = _get(props, "computeMajor", "major")
    minor = props.get("computeMinor", props.get("minor"))
    minor = minor if isinstance(minor, int) and not isinstance(minor, bool) and 0 <= minor < 100 else None
    max_threads = _get(props, "maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor")
    if num_sms is None or major is None or minor is None or max_threads is None:
        return None
    return DeviceLimits(
        compute_major=major,
        compute_minor=minor,
        num_sms=num_sms,
        max_threads_per_sm=max_threads,
        regs_per_sm=_get(props, "regsPerMultiprocessor") or 65536,
        regs_per_block=_get(props, "regsPerBlock") or 65536,
        shared_mem_per_block=_get(props, "sharedMemPerBlock") or SMEM_DEFAULT_LIMIT,
        shared_mem_per_sm=_get(props, "sharedMemPerMultiprocessor") or 0,
        shared_mem_per_block_optin=_get(props, "sharedMemPerBlockOptin") or 0,
        max_threads_per_block=_get(props, "maxThreadsPerBlock") or 1024,
        name=str(props.get("name", "")),
    )


def _sm_vote(k: KernelRecord) -> int | None:
    """The SM count a launch's own numbers imply (grid / blocks per SM, or via warps), if whole."""
    if k.grid is None:
        return None
    grid = product(k.grid)
    if grid <= 0 or grid > INT32_MAX:
        return None
    bps = k.blocks_per_sm.value
    wps = k.warps_per_sm.value
    estimate: float | None = None
    if bps is not None and math.isfinite(bps) and bps > 0:
        estimate = grid / bps
    elif wps is not None and math.isfinite(wps) and wps > 0 and k.block is not None:
        estimate = grid * product(k.block) / 32 / wps
    if estimate is None:
        return None
    rounded = round(estimate)
    return rounded if rounded > 0 and abs(estimate - rounded) <= 1e-3 * rounded else None


_VOTES = 200  # a device's launches that imply a whole SM count, counted in launch order, for its inferred count


def inferred_sm_counts(kernels: Sequence[KernelRecord]) -> dict[int, int | None]:
    """Per device (in the order its first launch comes), the SM count most of its first ``_VOTES`` launches that
    imply a whole one agree on (the first met among equals), or None where none does. A table's combinations are
    voted once each, their launches' devices and votes spread over them with numpy and grouped by one stable sort
    (a record made for every launch was most of a ``.pftrace`` inspection's metrics pass; a pass over the launches
    for each device would be quadratic in a trace of many); any other sequence is its own combinations."""
    import numpy as np

    shared = kernels.combinations() if isinstance(kernels, KernelTable) else None
    ids, records = shared if shared is not None else (array("i", range(len(kernels))), list(kernels))
    devices: dict[int, int] = {}  # each device, and each vote (a count past int64 too), numbered as first met
    counts: dict[int, int] = {}
    numbered = [
        (-1 if k.device is None else devices.setdefault(k.device, len(devices)),
         -1 if (vote := _sm_vote(k)) is None else counts.setdefault(vote, len(counts)))
        for k in records
    ] or [(-1, -1)]  # fmt: skip
    known, said = list(devices), list(counts)
    launch = np.frombuffer(ids, dtype=np.int32) if len(ids) else np.zeros(0, dtype=np.int32)
    device_of = np.array([d for d, _ in numbered], dtype=np.int64)[launch]
    vote_of = np.array([v for _, v in numbered], dtype=np.int64)[launch]
    on_device = np.flatnonzero(device_of >= 0)
    grouped = on_device[np.argsort(device_of[on_device], kind="stable")]  # by device, each in launch order
    starts = np.flatnonzero(np.diff(device_of[grouped], prepend=-1)) if len(grouped) else grouped
    bounds = np.append(starts, len(grouped))
    out: dict[int, int | None] = {}
    for g in np.argsort(grouped[starts], kind="stable").tolist():  # the devices in the order their first launch comes
        launches = grouped[bounds[g] : bounds[g + 1]]
        chosen = launches[vote_of[launches] >= 0][:_VOTES]
        counted = Counter(vote_of[chosen].tolist())  # in launch order: most_common keeps the first met among equals
        out[known[int(device_of[launches[0]])]] = said[counted.most_common(1)[0][0]] if counted else None
    return out


_PROOF_SCAN = 5000  # launches looked at: enough for every device of a real trace, bounded for a huge one


def _first_launches(kernels: Sequence[KernelRecord], stop: int) -> Iterable[tuple[KernelRecord, int]]:
    """The first ``stop`` launches, each with a count: a table's combinations once each, with how many of those
    launches have it, in the order they first appear (a vote reads only what they share; 5,000 records made one by
    one were a fixed ~10 ms of every JSON inspection), else each launch once."""
    shared = kernels.combinations() if isinstance(kernels, KernelTable) else None
    if shared is None:
        return ((k, 1) for k in itertools.islice(kernels, stop))
    ids, records = shared
    return ((records[combination], n) for combination, n in Counter(ids[:stop]).items())


def proven_sm_counts(kernels: Sequence[KernelRecord]) -> dict[int, int]:
    """Per device, the SM count its launches' values prove: at least nine in ten of the launches
    that imply a whole count imply this one (the rest are small grids printed with few digits)."""
    votes: dict[int, Counter[int]] = {}
    for k, n in _first_launches(kernels, _PROOF_SCAN):
        vote = _sm_vote(k)
        if vote is not None and k.device is not None:
            votes.setdefault(k.device, Counter())[vote] += n
    proven = {}
    for device_id, counted in votes.items():
        count, n = counted.most_common(1)[0]
        if n >= 0.9 * sum(counted.values()):
            proven[device_id] = count
    return proven


def device_table(
    device_properties: list[dict[str, Any]], kernels: Sequence[KernelRecord], sms: int | None = None
) -> dict[int, DeviceInfo]:
    """One entry per device id seen in the properties or on a kernel.

    ``sms`` is the engineer's word for traces that carry no device properties (PyTorch 1.8):
    it is used where the properties are missing, never over them, and never over the count a
    device's own kernels prove (every blocks per SM fitting it exactly): that one wins, as
    ``inferred``, so a wrong ``--sms`` cannot turn every launch into a '?'.
    """
    table: dict[int, DeviceInfo] = {}
    proven = proven_sm_counts(kernels) if device_properties else {}
    for props in device_properties:
        device_id = props.get("id")
        if not isinstance(device_id, int) or isinstance(device_id, bool) or not 0 <= device_id < _PLAUSIBLE:
            continue
        limits = limits_from_properties(props)
        num_sms = limits.num_sms if limits else _get(props, "numSms", "multiProcessorCount")
        problem = fact_problem(props, "numSms", "multiProcessorCount") or (
            None if limits else fact_problem(props, "maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor")
        )
        name = props.get("name")
        declared, source = None, "deviceProperties"
        if num_sms is not None and proven.get(device_id, num_sms) != num_sms:  # mechanism G
            declared, num_sms, source = num_sms, proven[device_id], "inferred"
            limits = msgspec.structs.replace(limits, num_sms=num_sms) if limits is not None else None
        table[device_id] = DeviceInfo(
            device_id, num_sms, limits, source, name if isinstance(name, str) else "", problem, declared
        )
    if device_properties:
        return table
    for device_id, num_sms in inferred_sm_counts(kernels).items():
        if sms is not None and num_sms in (None, sms):
            limits = KNOWN_GPUS.get(sms)
            table[device_id] = DeviceInfo(device_id, sms, limits, "given", limits.name if limits else "")
            continue
        if num_sms is None:
            table[device_id] = DeviceInfo(device_id, None, None, "unknown")
            continue
        limits = KNOWN_GPUS.get(num_sms)
        table[device_id] = DeviceInfo(device_id, num_sms, limits, "inferred", limits.name if limits else "")
    return table


def sm_count_conflicts(table: dict[int, DeviceInfo]) -> list[str]:
    """Each device whose kernels prove another SM count than its deviceProperties declares (mechanism G):
    both counts, and where each came from."""
    return [
        f"device {d.device_id}{f' ({cut(d.name, 80)})' if d.name else ''}: {d.num_sms} SMs from its kernels' own "
        f"values (their blocks and warps per SM fit {d.num_sms} SMs; the true values use it), {d.declared_sms} SMs "
        "from the trace's deviceProperties (mechanism G)"
        for d in sorted(table.values(), key=lambda d: d.device_id)
        if d.declared_sms is not None
    ]


def device_for(table: dict[int, DeviceInfo], device_id: int | None) -> DeviceInfo | None:
    """The kernel's device; for an id the trace does not list (mechanism C), the listed
    devices' numbers when they are all the same GPU, marked as assumed."""
    if device_id is None:
        return None
    found = table.get(device_id)
    if found is not None:
        return found
    known = [d for d in table.values() if d.num_sms is not None]
    if known and len({(d.num_sms, d.limits) for d in known}) == 1:
        like = known[0]
        return DeviceInfo(device_id, like.num_sms, like.limits, "assumed", like.name)
    return None


# SM count -> a GPU with that count whose limits stand for it (only the counts in gpus.FAMILY).
KNOWN_GPUS: dict[int, DeviceLimits] = {
    limits.num_sms: msgspec.structs.replace(limits, name=FAMILY[key])
    for key, props in PROPERTIES.items()
    if key in FAMILY and (limits := limits_from_properties(props)) is not None
}
