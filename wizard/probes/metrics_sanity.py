"""``metrics.sanity``: check registers, shared memory, threads and occupancy against what
the device can physically do, using the trace doctor's occupancy calculator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status
from wizard.trace.devices import device_for, device_table
from wizard.trace.kineto_math import product
from wizard.trace.occupancy import UnknownArchitecture, active_blocks_per_sm, architecture
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
        counts: Counter[str] = Counter()
        limiters: Counter[str] = Counter()
        examples: dict[str, str] = {}
        checked = 0
        for path in paths:
            try:
                contents = read_trace(str(path))
            except InputFileError as exc:
                return ProbeResult(Status.ERROR, str(exc), facts={"kernels": 0})
            devices = device_table(contents.device_properties, contents.kernels)
            for k in contents.kernels:
                device = device_for(devices, k.device)
                if device is None or device.limits is None or k.block is None or contents.is_rocm:
                    continue
                checked += 1
                threads = product(k.block)
                try:
                    arch = architecture(device.limits.compute_capability)
                except UnknownArchitecture:
                    continue
                regs, smem = k.registers or 0, k.shared_memory or 0
                name = k.name[:80]
                if regs > arch.max_regs_per_thread:
                    counts["impossible_registers"] += 1
                    examples.setdefault("registers", f"{name}: {regs} registers/thread > {arch.max_regs_per_thread}")
                optin = device.limits.shared_mem_per_block_optin or device.limits.shared_mem_per_block
                if smem > optin:
                    counts["impossible_shared_memory"] += 1
                    examples.setdefault("smem", f"{name}: {smem} B shared memory > opt-in limit {optin} B")
                if threads > device.limits.max_threads_per_block:
                    counts["impossible_block"] += 1
                    examples.setdefault(
                        "block", f"{name}: {threads} threads/block > {device.limits.max_threads_per_block}"
                    )
                occ = k.occupancy.value
                if occ is not None and occ > 100:
                    counts["occupancy_above_100"] += 1
                    examples.setdefault("occ", f"{name}: occupancy {occ:g}% > 100%")
                if smem > 49152:
                    counts["above_48kb"] += 1
                calc = active_blocks_per_sm(device.limits, threads, regs, smem, opt_in=smem > 49152)
                theoretical = 100.0 * calc.active_blocks * threads / device.limits.max_threads_per_sm
                for factor in calc.limiting_factors:
                    limiters[factor] += 1
                if theoretical < 25:
                    counts["low_occupancy"] += 1
        facts: dict[str, Any] = {
            "kernels": checked,
            **{
                key: counts.get(key, 0)
                for key in (
                    "impossible_registers",
                    "impossible_shared_memory",
                    "impossible_block",
                    "occupancy_above_100",
                    "above_48kb",
                    "low_occupancy",
                )
            },
            "top_limiter": limiters.most_common(1)[0][0] if limiters else None,
            "limiters": dict(limiters),
            "examples": list(examples.values()),
        }
        hard = sum(
            counts[k]
            for k in ("impossible_registers", "impossible_shared_memory", "impossible_block", "occupancy_above_100")
        )
        evidence = list(examples.values())
        if limiters:
            evidence.append(
                "theoretical occupancy limited by: " + ", ".join(f"{f} ({n})" for f, n in limiters.most_common())
            )
        if checked == 0:
            return ProbeResult(Status.SKIP, "no kernel with launch dimensions and known device limits", facts=facts)
        if hard:
            return ProbeResult(
                Status.FAIL, f"{hard} kernel(s) with values the hardware cannot produce", facts=facts, evidence=evidence
            )
        if counts["above_48kb"]:
            return ProbeResult(
                Status.WARN,
                f"registers, shared memory and block sizes are possible; "
                f"{counts['above_48kb']} kernel(s) above 48 KB get a wrong 0% occupancy (E)",
                facts=facts,
                evidence=evidence,
            )
        return ProbeResult(
            Status.PASS, f"all {checked} kernels within the device's limits", facts=facts, evidence=evidence
        )
