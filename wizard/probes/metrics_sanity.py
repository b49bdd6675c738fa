"""``metrics.sanity``: check registers, shared memory, threads and occupancy against what
the device can physically do, using the trace doctor's occupancy calculator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.formatting import plural
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status
from wizard.probes.verdicts import HARD_LIMITS, SOFT, Sanity, check_limits, sanity_verdict
from wizard.trace.analysis import resident_blocks
from wizard.trace.counters import Series, read_counters
from wizard.trace.devices import DeviceInfo, device_for, device_table
from wizard.trace.kineto_math import product
from wizard.trace.reader import read_trace
from wizard.trace.records import KernelRecord
from wizard.untrusted import cut


class MetricsSanityProbe:
    name = "metrics.sanity"
    summary = "Registers, shared memory, block size and occupancy against the device's hard limits"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (ParamSpec("trace", "paths", "the trace files to check", required=True),)
    facts: tuple[FactSpec, ...] = (
        FactSpec("kernels", "int", "kernels checked"),
        FactSpec("impossible_registers", "int", "kernels with more registers per thread than the architecture allows"),
        FactSpec("impossible_shared_memory", "int", "kernels above the opt-in shared memory limit"),
        FactSpec("impossible_block", "int", "kernels with more threads per block than allowed"),
        FactSpec("occupancy_above_100", "int", "kernels whose reported occupancy exceeds 100%"),
        FactSpec("above_48kb", "int", "kernels above 48 KB of shared memory (reported 0%: mechanism E)"),
        FactSpec("low_occupancy", "int", "kernels whose theoretical occupancy is under 25%"),
        FactSpec("top_limiter", "str", "most common limiting factor of theoretical occupancy"),
        FactSpec("limiters", "dict", "limiting factor -> kernels"),
        FactSpec("examples", "list", "one line per kind of problem found"),
        FactSpec(
            "counters", "list", "PM-sampling counter series the trace carries (PyTorch 2.15+), e.g. sm__warps_active"
        ),
        FactSpec("measured", "list", "per kernel covered by samples: the measured counter beside the computed value"),
    )

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        paths = params.get("trace")
        paths = paths if isinstance(paths, list) else [paths] if paths else []
        sanity = Sanity()
        counters: set[str] = set()
        measured: list[str] = []
        for path in paths:  # gather: each kernel with its device's limits
            try:
                contents = read_trace(str(path))
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
                series = read_counters(str(path))
                counters.update(name for _, name in series)
                measured += measured_beside_computed(contents.kernels, devices, series)[: MAX_MEASURED - len(measured)]
        status, summary = sanity_verdict(sanity)
        facts = {**_facts(sanity), "counters": sorted(counters), "measured": measured}
        return ProbeResult(status, summary, facts=facts, evidence=_evidence(sanity) + measured)


MAX_MEASURED = 8  # kernels shown with their sampled counters


def measured_beside_computed(
    kernels: Sequence[KernelRecord], devices: dict[int, DeviceInfo], series: dict[tuple[int, str], Series]
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
            computed = _resident_warps(k, device_for(devices, k.device))
            beside = f", computed at most {computed:.4g} resident warps per SM" if computed is not None else ""
            out.append(
                f"{cut(k.name, 160)}: {cut(name, 80)} measured {mean:.4g} (mean of "
                f"{plural(len(values), 'sample')} while it ran){beside}"
            )
    return out


def _resident_warps(k: KernelRecord, device: DeviceInfo | None) -> float | None:
    """The warps per SM this launch can keep resident: active blocks (opt-in limit) times warps per block."""
    if device is None or k.grid is None or k.block is None:
        return None
    threads = product(k.block)
    blocks = resident_blocks(device, k, threads, product(k.grid))[0]
    return None if blocks is None else blocks * -(-threads // 32)


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
