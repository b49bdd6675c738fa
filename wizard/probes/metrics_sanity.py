"""``metrics.sanity``: check registers, shared memory, threads and occupancy against what
the device can physically do, using the trace doctor's occupancy calculator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.formatting import plural
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.inspections import contents as run_contents
from wizard.probes.verdicts import HARD_LIMITS, SOFT, Sanity, check_limits, sanity_verdict
from wizard.trace.kineto_math import product
from wizard.trace.metrics.detectors import resident_blocks
from wizard.trace.metrics.devices import DeviceInfo, device_for, device_table
from wizard.trace.read.counters import Series, counter_series
from wizard.trace.read.records import KernelRecord
from wizard.untrusted import cut


class MetricsSanityFacts(TypedDict, total=False):
    """The facts MetricsSanityProbe declares once (help, ``probes``, the schema and the loader read them)."""

    kernels: Annotated[int, "kernels checked"]
    impossible_registers: Annotated[int, "kernels with more registers per thread than the architecture allows"]
    impossible_shared_memory: Annotated[int, "kernels above the opt-in shared memory limit"]
    impossible_block: Annotated[int, "kernels with more threads per block than allowed"]
    occupancy_above_100: Annotated[int, "kernels whose reported occupancy exceeds 100%"]
    above_48kb: Annotated[int, "kernels above 48 KB of shared memory (reported 0%: mechanism E)"]
    low_occupancy: Annotated[int, "kernels whose theoretical occupancy is under 25%"]
    top_limiter: Annotated[str | None, "most common limiting factor of theoretical occupancy"]
    limiters: Annotated[dict[str, int], "limiting factor -> kernels"]
    examples: Annotated[list[str], "one line per kind of problem found"]
    counters: Annotated[
        list[str], "PM-sampling counter series the trace carries (PyTorch 2.15+), e.g. sm__warps_active"
    ]
    measured: Annotated[
        list[str], "per kernel covered by samples: the measured counter beside the computed value, in words"
    ]


class MetricsSanityProbe:
    name = "metrics.sanity"
    summary = "Registers, shared memory, block size and occupancy against the device's hard limits"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (ParamSpec("trace", "paths", "the trace files to check", required=True),)
    facts: tuple[FactSpec, ...] = declared_facts(MetricsSanityFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        paths = params.get("trace")
        paths = paths if isinstance(paths, list) else [paths] if paths else []
        sanity = Sanity()
        counters: set[str] = set()
        measured: list[str] = []
        for path in paths:  # gather: each kernel with its device's limits (the run's read of the file)
            try:
                contents = run_contents(env, str(path))
            except InputFileError as exc:
                return ProbeResult(Status.ERROR, str(exc), facts={"kernels": 0})
            if contents.is_rocm:
                continue
            devices = device_table(contents.device_properties, contents.kernels)
            for k in contents.kernels:
                device = device_for(devices, k.device)
                if device is not None and device.limits is not None:
                    check_limits(sanity, k, device.limits)
            if contents.counter_events:
                series = counter_series(contents)
                counters.update(name for _, name in series)
                measured += measured_beside_computed(contents.kernels, devices, series)[: MAX_MEASURED - len(measured)]
        status, summary = sanity_verdict(sanity)
        facts = {**_facts(sanity), "counters": sorted(counters), "measured": measured}
        return ProbeResult(status, summary, facts=facts, evidence=_evidence(sanity) + measured)


MAX_MEASURED = 8  # kernels shown with their sampled counters


def measured_beside_computed(
    kernels: Sequence[KernelRecord], devices: dict[int, DeviceInfo], series: Mapping[tuple[int, str], Series]
) -> list[str]:
    """For the longest kernels that samples cover: each warps-active counter's mean while the kernel ran,
    beside the resident warps per SM the calculator gives it (the samples are device-wide, every SM and
    every kernel running then; the computed value is this kernel's ceiling)."""
    out: list[str] = []
    seen: set[str] = set()
    for k in sorted(kernels, key=lambda k: -k.dur):
        if len(out) >= MAX_MEASURED:
            break
        if k.name in seen or k.device is None:
            continue
        for (device_id, name), found in series.items():
            values = found.during(k.ts, k.ts + k.dur) if device_id == k.device else []
            if not values or "warps_active" not in name:
                continue
            seen.add(k.name)
            mean = sum(values) / len(values)
            beside = _computed_words(k, device_for(devices, k.device))
            out.append(
                f"{cut(k.name, 160)}: {cut(name, 80)} measured {mean:.4g} (mean of "
                f"{plural(len(values), 'sample')} while it ran){beside}"
            )
    return out


def _computed_words(k: KernelRecord, device: DeviceInfo | None) -> str:
    """The warps per SM this launch keeps resident, in words: at most its active blocks (opt-in limit) times
    its warps per block; where its grid is smaller than that over the SMs, the grid's share, which is a
    mean over the SMs (0.6061 of a block: some SMs hold one, others none), with the most one SM holds."""
    if device is None or k.grid is None or k.block is None or not device.num_sms:
        return ""
    threads, grid = product(k.block), product(k.grid)
    blocks, _, active = resident_blocks(device, k, threads, grid)
    if blocks is None or active is None:
        return ""
    warps = -(-threads // 32)
    if blocks >= active:
        return f", computed at most {blocks * warps:.4g} resident warps per SM"
    most = min(active, -(-grid // device.num_sms)) * warps
    return (
        f", computed {blocks * warps:.4g} resident warps per SM on average (its {grid} blocks over "
        f"{device.num_sms} SMs; at most {most} on one SM)"
    )


def _facts(sanity: Sanity) -> dict[str, Any]:
    return {
        "kernels": sanity.checked,
        **{key: sanity.counts.get(key, 0) for key in (*HARD_LIMITS, *SOFT)},
        "top_limiter": sanity.limiters.most_common(1)[0][0] if sanity.limiters else None,
        "limiters": dict(sanity.limiters),
        "examples": list(sanity.examples.values()),
    }


def _evidence(sanity: Sanity) -> list[str]:
    evidence = list(sanity.examples.values())
    if sanity.limiters:
        evidence.append(
            "theoretical occupancy limited by: " + ", ".join(f"{f} ({n})" for f, n in sanity.limiters.most_common())
        )
    return evidence
