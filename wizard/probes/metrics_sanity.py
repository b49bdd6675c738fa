"""``metrics.sanity``: check registers, shared memory, threads and occupancy against what
the device can physically do, using the trace doctor's occupancy calculator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status
from wizard.probes.verdicts import HARD_LIMITS, SOFT, Sanity, check_limits, sanity_verdict
from wizard.trace.devices import device_for, device_table
from wizard.trace.reader import read_trace


class MetricsSanityProbe:
    name = "metrics.sanity"
    summary = "Registers, shared memory, block size and occupancy against the device's hard limits"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (ParamSpec("trace", "paths", "trace file(s) to check", required=True),)
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
    )

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        paths = params.get("trace")
        paths = paths if isinstance(paths, list) else [paths] if paths else []
        sanity = Sanity()
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
        status, summary = sanity_verdict(sanity)
        return ProbeResult(status, summary, facts=_facts(sanity), evidence=_evidence(sanity))


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
