"""What the probes conclude from what they gathered: pure functions, no I/O.

Each probe that runs things gathers (subprocesses, files) in its own module, then calls its rule
here, then phrases evidence. Keeping the rules apart means each one is a small table a unit test
can walk (``tests/probes/test_verdicts.py``) without starting a process.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from wizard.formatting import plural, verb
from wizard.probes.base import Status
from wizard.trace.kineto_math import product
from wizard.trace.metrics.mechanisms import SMEM_DEFAULT_LIMIT, Mechanism
from wizard.trace.metrics.occupancy import DeviceLimits, UnknownArchitecture, active_blocks_per_sm, architecture
from wizard.trace.read.records import KernelRecord

# -- profiler.reprofile ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reprofiled:
    """What re-profiling found: the fresh trace, other torch versions, and whether nsys ran."""

    cuda: bool
    impossible: bool
    mechanisms: tuple[str, ...]
    versions: dict[str, list[str]] = field(default_factory=dict)  # torch version -> mechanisms in its trace
    nsys_ran: bool = False


def reprofile_verdict(found: Reprofiled) -> tuple[Status, str, str]:
    """(status, follows, summary): does the anomaly follow the profiler or the kernel?

    A profiler mechanism the trace doctor recognised, a clean trace from another torch version, or
    Nsight Systems' raw launch dimensions all blame the profiler; only an unexplained disagreement
    with nothing to compare it against stays open.
    """
    if not found.cuda:
        return (
            Status.SKIP,
            "unknown",
            "no CUDA device: the workload was re-profiled on the CPU (trace written) but there are no GPU "
            "kernels to compare",
        )
    if not found.impossible:
        return Status.PASS, "not reproduced", "the fresh trace shows no impossible values"
    clean = [version for version, mechanisms in found.versions.items() if not mechanisms]
    if clean or found.nsys_ran or Mechanism.UNEXPLAINED.value not in found.mechanisms:
        summary = (
            "the anomaly follows the profiler: the same trace's raw launch dimensions recompute to sane "
            "values (a known profiler mechanism)"
            + (f" and torch {', '.join(clean)} reports correct values" if clean else "")
        )
        return Status.FAIL, "profiler", summary
    return Status.WARN, "unknown", "the fresh trace reproduces the anomaly; no second profiler could run to compare"


# -- cuda.launch_blocking -------------------------------------------------------------------------


def launch_blocking_verdict(
    cuda_error: str | None, sanitizer_errors: int | None, sanitizer_first: str | None, cuda: bool, exit_code: Any
) -> tuple[Status, str]:
    """A CUDA error (in the output or from memcheck) fails; without a GPU there is nothing to serialise."""
    if cuda_error is not None or (sanitizer_errors or 0) > 0:
        return Status.FAIL, f"CUDA error at launch: {cuda_error or sanitizer_first}"
    if not cuda:
        return (
            Status.SKIP,
            f"no CUDA device: the workload ran on the CPU, so there is no kernel launch to serialise (exit code "
            f"{exit_code})",
        )
    if exit_code not in (0, None):
        return Status.WARN, f"the workload failed (exit {exit_code}) without a CUDA error; see the log"
    return Status.PASS, "no CUDA error with blocking launches"


# -- op.isolate -----------------------------------------------------------------------------------


def op_isolate_verdict(op: str, repro: dict[str, Any], mechanisms: list[str]) -> tuple[Status, str, bool | None]:
    """(status, summary, reproduced) from what the repro script reported and its trace showed."""
    if repro.get("too_large"):
        return (
            Status.SKIP,
            f"no CUDA device, and the inputs ({repro['too_large']} elements) are too large to run on the CPU; "
            "the repro script was written",
            None,
        )
    if repro.get("missing_op"):
        return Status.WARN, str(repro.get("error")), None
    if repro.get("error"):
        return (
            Status.WARN,
            f"calling {op} with the recorded tensors alone failed ({repro['error']}); add its non-tensor arguments "
            "to the script",
            None,
        )
    if repro.get("device") != "cuda":
        return (
            Status.SKIP,
            f"no CUDA device: {op} ran alone on the CPU (the repro is valid) but kernel metrics need a GPU",
            None,
        )
    if mechanisms:
        return Status.FAIL, f"{op} alone reproduces the anomaly ({', '.join(mechanisms)})", True
    return Status.PASS, f"{op} alone does not reproduce the anomaly", False


# -- metrics.sanity -------------------------------------------------------------------------------

HARD_LIMITS = ("impossible_registers", "impossible_shared_memory", "impossible_block", "occupancy_above_100")
SOFT = ("above_48kb", "low_occupancy")


@dataclass(slots=True)
class Sanity:
    """Kernels against the hardware's limits: counts, limiting factors, one example per problem."""

    checked: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    limiters: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)


def check_limits(sanity: Sanity, k: KernelRecord, limits: DeviceLimits) -> None:
    """Add one kernel: what no device could produce, and what limits its theoretical occupancy."""
    if k.block is None:
        return
    try:
        arch = architecture(limits.compute_capability)
    except UnknownArchitecture:
        return
    sanity.checked += 1
    threads, regs, smem, name = product(k.block), k.registers or 0, k.shared_memory or 0, k.name[:80]
    optin = limits.shared_mem_per_block_optin or limits.shared_mem_per_block
    occ = k.occupancy.value
    problems = (
        (
            "impossible_registers",
            regs > arch.max_regs_per_thread,
            f"{regs} registers/thread > {arch.max_regs_per_thread}",
        ),
        ("impossible_shared_memory", smem > optin, f"{smem} B shared memory > opt-in limit {optin} B"),
        (
            "impossible_block",
            threads > limits.max_threads_per_block,
            f"{threads} threads/block > {limits.max_threads_per_block}",
        ),
        ("occupancy_above_100", occ is not None and occ > 100, f"occupancy {occ:g}% > 100%" if occ is not None else ""),
    )
    for key, broken, text in problems:
        if broken:
            sanity.counts[key] += 1
            sanity.examples.setdefault(key, f"{name}: {text}")
    if smem > SMEM_DEFAULT_LIMIT:
        sanity.counts["above_48kb"] += 1
    calc = active_blocks_per_sm(limits, threads, regs, smem, opt_in=smem > SMEM_DEFAULT_LIMIT)
    sanity.limiters.update(calc.limiting_factors)
    if 100.0 * calc.active_blocks * threads / limits.max_threads_per_sm < 25:
        sanity.counts["low_occupancy"] += 1


def sanity_verdict(sanity: Sanity) -> tuple[Status, str]:
    hard = sum(sanity.counts[key] for key in HARD_LIMITS)
    if sanity.checked == 0:
        return Status.SKIP, "no kernel with launch dimensions and known device limits"
    if hard:
        return Status.FAIL, f"{plural(hard, 'kernel')} with values the hardware cannot produce"
    if sanity.counts["above_48kb"]:
        return (
            Status.WARN,
            "registers, shared memory and block sizes are possible; "
            f"{plural(sanity.counts['above_48kb'], 'kernel')} above "
            "48 KB get a wrong 0% occupancy (E)",
        )
    return (
        Status.PASS,
        f"{verb(sanity.checked, 'the', 'all')} {plural(sanity.checked, 'kernel')} within the device's limits",
    )
