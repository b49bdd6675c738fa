"""Recompute every kernel's metrics and name the mechanism behind each impossible value.

Pure functions over the reader's compact records. The mechanisms and what each means are in
``trace.mechanisms``; here are the detectors that find them, in order.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from wizard.formatting import exact, plural, verb
from wizard.trace.gpus import sm_count_examples
from wizard.trace.kineto_math import (
    INT32_MAX,
    early_kineto_warps_per_sm,
    f32,
    kineto_blocks_per_sm,
    kineto_occupancy_percent,
    kineto_warps_per_sm,
    product,
    same_float32,
    true_blocks_per_sm,
    true_warps_per_sm,
    wrap_int32,
)
from wizard.trace.metrics.devices import DeviceInfo, device_for
from wizard.trace.metrics.mechanisms import SMEM_DEFAULT_LIMIT, Mechanism
from wizard.trace.metrics.occupancy import (
    MIN_CUDA_HEADER,
    Occupancy,
    UnknownArchitecture,
    active_blocks_per_sm,
)
from wizard.trace.read.records import Dim3, KernelRecord, ProfilerOccupancy


class Finding(msgspec.Struct):
    """One kernel, one mechanism: what the trace says, what is true, and why."""

    mechanism: Mechanism
    kernel_index: int
    kernel: str
    device: int | None
    ts: float
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    reported: dict[str, float | None]
    true: dict[str, float | None]
    evidence: str
    limiting_factors: tuple[str, ...] = ()
    correlation: int | None = None

    @property
    def severity(self) -> str:
        return self.mechanism.severity

    def badness(self) -> float:
        """How far the reported value is from the truth, for picking a group's worst example."""
        worst = 0.0
        for metric, value in self.reported.items():
            truth = self.true.get(metric)
            if value is None or truth is None:
                continue
            if not math.isfinite(value):
                return math.inf
            worst = max(worst, abs(value - truth))
        return worst


class KernelCheck(msgspec.Struct, eq=False):
    """Everything found for one kernel (possibly nothing)."""

    findings: list[Finding] = msgspec.field(default_factory=list)
    checked: bool = False
    corrected: dict[str, float | int | None] = msgspec.field(default_factory=dict)  # as the profiler would print them
    true: dict[str, float | None] = msgspec.field(default_factory=dict)  # the values the launch really had
    notes: list[str] = msgspec.field(default_factory=list)  # about the tools, not the launch (calculators disagreeing)


def _dims(d: tuple[int, int, int]) -> str:
    return f"{d[0]}x{d[1]}x{d[2]}"


def _opt_in_active(device: DeviceInfo, k: KernelRecord, threads: int) -> tuple[int | None, tuple[str, ...]]:
    """Active blocks per SM with the kernel's opt-in shared-memory limit (what it really had), and what
    limits them. For a capability our calculator has no table for, from the profiler's own occupancy
    object: its warp, register and block limits do not depend on the shared-memory limit, and the SM's
    shared memory is the whole of sharedMemPerMultiprocessor for a kernel above 48 KB."""
    assert device.limits is not None
    smem = k.shared_memory or 0
    try:
        occ = active_blocks_per_sm(device.limits, threads, k.registers or 0, smem, opt_in=True)
        return occ.active_blocks, occ.limiting_factors
    except UnknownArchitecture:
        pass
    prof = k.profiler_occupancy
    if prof is None or None in (prof.limit_warps, prof.limit_registers, prof.limit_blocks, prof.limit_shared_memory):
        return None, ()
    smem_limit = prof.limit_shared_memory
    allocated = prof.allocated_shared_memory
    if smem > SMEM_DEFAULT_LIMIT and allocated:
        fits = allocated <= max(device.limits.shared_mem_per_block_optin, SMEM_DEFAULT_LIMIT) + 1024
        smem_limit = device.limits.shared_mem_per_sm // allocated if fits else 0
    named = {
        "warps": prof.limit_warps,
        "registers": prof.limit_registers,
        "shared memory": smem_limit,
        "blocks": prof.limit_blocks,
    }
    active = min(v for v in named.values() if v is not None)
    return active, tuple(name for name, value in named.items() if value == active)


def resident_blocks(
    device: DeviceInfo, k: KernelRecord, threads: int, grid_blocks: int
) -> tuple[float | None, tuple[str, ...], int | None]:
    """The blocks per SM the launch really keeps resident (its active blocks with the opt-in limit, or its
    whole grid's share when smaller), what limits them, and the active blocks; Nones when unknowable."""
    if device.limits is None or device.num_sms is None or device.num_sms <= 0:
        return None, (), None
    active, factors = _opt_in_active(device, k, threads)
    if active is None:
        return None, (), None
    return min(float(active), grid_blocks / device.num_sms), factors, active


def _true_occupancy(
    device: DeviceInfo, k: KernelRecord, threads: int, grid_blocks: int
) -> tuple[float | None, tuple[str, ...], int | None]:
    """The occupancy % the kernel really has (64-bit grid, the opt-in shared-memory limit)."""
    blocks, factors, active = resident_blocks(device, k, threads, grid_blocks)
    if blocks is None or device.limits is None:
        return None, (), None
    return 100.0 * blocks * threads / device.limits.max_threads_per_sm, factors, active


SM_COUNT_HINT = f"pass the GPU's SM count with --sms N for the true values ({sm_count_examples()})"


def _impossible_values(k: KernelRecord) -> list[str]:
    """Reported values no launch can have, whatever the device: negative or not finite."""
    out = []
    for name, r in (
        ("blocks per SM", k.blocks_per_sm),
        ("warps per SM", k.warps_per_sm),
        (k.occupancy_key, k.occupancy),
    ):
        if r.value is not None and (not math.isfinite(r.value) or r.value < 0) and name:
            out.append(f"{name} {exact(r.value)}")
    return out


def _unrecomputable(k: KernelRecord, why: str) -> KernelCheck:
    """A launch whose values are impossible but whose recomputation lacks a usable fact: still a finding."""
    result = KernelCheck(checked=True)
    bad = _impossible_values(k)
    reported = {"blocks per SM": k.blocks_per_sm.value, "warps per SM": k.warps_per_sm.value}
    if k.occupancy_key is not None:
        reported[k.occupancy_key] = k.occupancy.value
    result.findings.append(
        Finding(
            Mechanism.UNEXPLAINED,
            k.index,
            k.name,
            k.device,
            k.ts,
            k.grid,
            k.block,
            reported,
            dict.fromkeys(reported),
            f"reported {', '.join(bad)}: impossible for any launch, and the true values cannot be recomputed: {why}",
            correlation=k.correlation,
        )
    )
    return result


class LaunchContext(msgspec.Struct, eq=False):
    """One launch, what it implies, and the check being built: what every detector reads."""

    k: KernelRecord
    device: DeviceInfo | None
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks: int
    threads: int
    num_sms: int | None
    reported: dict[str, float | None]
    true: dict[str, float | None]
    result: KernelCheck
    occupancy_explained: bool = False
    typed: bool = False  # the trace is PyTorch 2.14's typed metadata: quoted inf/nan is its legal spelling

    @property
    def launch(self) -> str:
        return f"grid {_dims(self.grid)} = {self.blocks} blocks, block {_dims(self.block)} = {self.threads} threads"

    def add(
        self,
        mechanism: Mechanism,
        evidence: str,
        factors: tuple[str, ...] = (),
        true: dict[str, float | None] | None = None,
    ) -> None:
        k = self.k
        self.result.findings.append(
            Finding(
                mechanism,
                k.index,
                k.name,
                k.device,
                k.ts,
                self.grid,
                self.block,
                dict(self.reported),
                dict(true or self.true),
                evidence,
                factors,
                k.correlation,
            )
        )


def _context(k: KernelRecord, device: DeviceInfo | None, grid: Dim3, block: Dim3) -> LaunchContext:
    """Everything the detectors share: the launch's numbers and its true values where they can be known."""
    blocks, threads = product(grid), product(block)
    num_sms = device.num_sms if device is not None else None
    reported = {"blocks per SM": k.blocks_per_sm.value, "warps per SM": k.warps_per_sm.value}
    if k.occupancy_key is not None:
        reported[k.occupancy_key] = k.occupancy.value
    ctx = LaunchContext(
        k,
        device,
        grid,
        block,
        blocks,
        threads,
        num_sms,
        reported,
        dict.fromkeys(("blocks per SM", "warps per SM")),
        KernelCheck(checked=True),
    )
    if device is not None and num_sms:
        _truth(ctx, device, num_sms)
    return ctx


def _truth(ctx: LaunchContext, device: DeviceInfo, num_sms: int) -> None:
    """True values in 64-bit integers; the occupancy as the kernel really had it and as the profiler prints it."""
    k, true = ctx.k, ctx.true
    true["blocks per SM"] = true_blocks_per_sm(ctx.grid, num_sms)
    true["warps per SM"] = true_warps_per_sm(ctx.grid, ctx.block, num_sms)
    corrected: dict[str, float | int | None] = {
        "blocks per SM": true["blocks per SM"],
        "warps per SM": true["warps per SM"],
    }
    # The kernel ran, so it had the shared memory it asked for: its true occupancy is the opt-in one
    # (the same as the default one up to 48 KB), whatever else is wrong with the launch's record.
    occ_true, _, active = _true_occupancy(device, k, ctx.threads, ctx.blocks)
    if k.occupancy_key is not None:
        true[k.occupancy_key] = occ_true
        if occ_true is not None and device.limits is not None:  # the integer percent the profiler prints
            bps = f32(true["blocks per SM"] or 0.0)
            corrected[k.occupancy_key] = kineto_occupancy_percent(
                active, bps, ctx.threads, device.limits.max_threads_per_sm
            )[0]
    ctx.result.corrected = corrected


# -- detectors, in order: each adds findings; True stops the check ---------------------------------


def _non_finite(ctx: LaunchContext) -> bool:
    """C and C': inf/nan blocks or warps per SM mean the profiler divided by an SM count of 0."""
    k, device = ctx.k, ctx.device
    bad = [
        (name, r)
        for name, r in (("blocks per SM", k.blocks_per_sm), ("warps per SM", k.warps_per_sm))
        if r.value is not None and not math.isfinite(r.value)
    ]
    if not bad:
        return False
    known = ""
    if device is not None and device.source == "assumed":
        known = (
            f", which is not in the trace's deviceProperties (values below assume it is the same GPU "
            f"as the listed ones, {device.num_sms} SMs)"
        )
    values = ", ".join(f"{name} = {exact(r.value)}" for name, r in bad)
    truth = (
        f"; true blocks per SM {exact(ctx.true['blocks per SM'])}, warps per SM {exact(ctx.true['warps per SM'])}"
        if ctx.num_sms
        else "; the true values need the device's SM count, which the trace does not give"
    )
    ctx.add(
        Mechanism.UNKNOWN_DEVICE,
        f"{values}: the profiler divided by an SM count of 0 for device {k.device}{known} ({ctx.launch}){truth}",
    )
    spellings = {r.spelling for _, r in bad}
    occ = k.occupancy.value
    if occ is not None and k.occupancy.spelling in ("bare", "quoted") and not math.isfinite(occ):
        spellings.add(k.occupancy.spelling)
    if "bare" in spellings:
        ctx.add(Mechanism.NON_FINITE_JSON, NON_FINITE_EVIDENCE["bare"])
    elif "quoted" in spellings and not ctx.typed and k.profiler_occupancy is None:
        # PyTorch 2.12+ (the occupancy object) and 2.14's typed metadata quote inf/nan by design
        ctx.add(Mechanism.NON_FINITE_JSON, NON_FINITE_EVIDENCE["quoted"])
    return True


NON_FINITE_EVIDENCE = {
    "bare": "written as a bare inf/nan token, which is invalid JSON: json.load, HTA and TensorBoard "
    "reject the whole file (Kineto 2022-04 to 2023-12)",
    "quoted": 'written as a quoted string ("inf"/"nan") where a number is expected: tools that sum or '
    "compare the column fail or skip it (Kineto 2023-12 on)",
}


def _placeholders(ctx: LaunchContext) -> bool:
    """C in 2021-22: -1 placeholders when Kineto had no SM count for the device."""
    bps, wps = ctx.reported["blocks per SM"], ctx.reported["warps per SM"]
    if not (bps == -1 and wps in (-1, None) and ctx.blocks > 1):
        return False
    ctx.add(
        Mechanism.UNKNOWN_DEVICE,
        f"blocks per SM = -1 and warps per SM = {exact(wps)}: the placeholders Kineto wrote in 2021-22 when it "
        f"had no SM count for device {ctx.k.device} ({ctx.launch}); true blocks per SM "
        f"{exact(ctx.true['blocks per SM'])}, warps per SM {exact(ctx.true['warps per SM'])}",
    )
    return True


def _without_sm_count(ctx: LaunchContext) -> bool:
    """No usable SM count: B still shows (it needs none); other impossible values are named as such."""
    if ctx.num_sms:
        return False
    bps, device = ctx.reported["blocks per SM"], ctx.device
    problem = f"the trace's {device.problem}" if device is not None and device.problem else None
    if bps is not None and ctx.blocks > 0 and same_float32(bps, kineto_blocks_per_sm(ctx.grid, -1)):
        ctx.add(
            Mechanism.OLD_SM_COUNT,
            f"blocks per SM {exact(bps)} is the grid's {ctx.blocks} blocks divided by -1: the SM count was read as "
            f"-1 ({ctx.launch}); " + (problem or SM_COUNT_HINT),
        )
    elif _impossible_values(ctx.k):
        why = problem or "the trace gives no SM count for this device; " + SM_COUNT_HINT
        ctx.result.findings += _unrecomputable(ctx.k, why).findings
    return True


def _sm_count_mismatch(ctx: LaunchContext) -> bool:
    """G: the values are Kineto's on the SM count the launches prove, not on the one the trace's
    deviceProperties declares: the trace's device table is not the profiled GPU's. Named, with the
    values on both counts; A and E are still looked for on top of it."""
    device, num_sms = ctx.device, ctx.num_sms
    if device is None or device.declared_sms is None or not num_sms:
        return False
    bps, wps = ctx.reported["blocks per SM"], ctx.reported["warps per SM"]
    fits = (bps is None or same_float32(bps, kineto_blocks_per_sm(ctx.grid, num_sms))) and (
        wps is None or same_float32(wps, kineto_warps_per_sm(ctx.grid, ctx.block, num_sms))
    )
    if not fits or (bps is None and wps is None):
        return False
    declared = device.declared_sms
    ctx.add(
        Mechanism.SM_COUNT_MISMATCH,
        f"blocks per SM {exact(bps)}, warps per SM {exact(wps)} are Kineto's values on {num_sms} SMs, but the "
        f"trace's deviceProperties says {declared} SMs for device {ctx.k.device} ({ctx.launch}): the values "
        f"were computed with another device table than the one the trace carries; on {num_sms} SMs the true "
        f"values are {exact(ctx.true['blocks per SM'])} and {exact(ctx.true['warps per SM'])}, on {declared} "
        f"SMs they would be {exact(true_blocks_per_sm(ctx.grid, declared))} and "
        f"{exact(true_warps_per_sm(ctx.grid, ctx.block, declared))}",
    )
    return False


def _grid_arithmetic(ctx: LaunchContext) -> bool:
    """A, A', B with an SM count, an unexplained disagreement, or F: the grid against Kineto's formula."""
    assert ctx.num_sms
    bps, wps, num_sms = ctx.reported["blocks per SM"], ctx.reported["warps per SM"], ctx.num_sms
    expected_bps = kineto_blocks_per_sm(ctx.grid, num_sms)
    expected_wps = kineto_warps_per_sm(ctx.grid, ctx.block, num_sms)
    bps_ok = bps is None or same_float32(bps, expected_bps)
    wps_ok = wps is None or same_float32(wps, expected_wps)
    if bps_ok and wps_ok and ctx.blocks > INT32_MAX:
        _grid_overflow(ctx)
    elif not (bps_ok and wps_ok):
        _wrong_grid_values(ctx, expected_bps, expected_wps)
    elif (true_wps := ctx.true["warps per SM"]) is not None and true_wps > (resident := _resident_warps(ctx.device)):
        ctx.add(
            Mechanism.BY_DESIGN,
            f"warps per SM {exact(wps)} counts the whole grid ({ctx.blocks} blocks over {num_sms} SMs), not the "
            f"warps resident at once (at most {resident}); the value is correct",
        )
    return False


def _resident_warps(device: DeviceInfo | None) -> int:
    """The warps an SM of this GPU holds at once (its maxThreadsPerMultiprocessor / 32; 64 when unknown)."""
    if device is not None and device.limits is not None and device.limits.max_threads_per_sm > 0:
        return device.limits.max_threads_per_sm // 32
    return 64


def _grid_overflow(ctx: LaunchContext) -> None:
    bps, wps, occ = ctx.reported["blocks per SM"], ctx.reported["warps per SM"], ctx.k.occupancy.value
    occ_note = ""
    if occ is not None:
        ctx.occupancy_explained = True
        label = ctx.k.occupancy_key or "occupancy"
        true_occ = ctx.true.get(label)
        shown_true = exact(round(true_occ, 1) if true_occ is not None else None)
        occ_note = f"; {label} {exact(occ)} follows from the wrapped value (true {shown_true})"
    ctx.add(
        Mechanism.GRID_OVERFLOW,
        f"{ctx.launch} > 2^31-1; the int32 product wraps to {wrap_int32(ctx.blocks)}; reported blocks per SM "
        f"{exact(bps)}, warps per SM {exact(wps)}; true {exact(ctx.true['blocks per SM'])} and "
        f"{exact(ctx.true['warps per SM'])} on {ctx.num_sms} SMs{occ_note}",
    )


def _wrong_grid_values(ctx: LaunchContext, expected_bps: float, expected_wps: float) -> None:
    bps, wps, occ = ctx.reported["blocks per SM"], ctx.reported["warps per SM"], ctx.k.occupancy.value
    assert ctx.num_sms
    grid, block, blocks, threads, num_sms = ctx.grid, ctx.block, ctx.blocks, ctx.threads, ctx.num_sms
    b_bps, b_wps = kineto_blocks_per_sm(grid, -1), kineto_warps_per_sm(grid, block, -1)
    if (bps is None or same_float32(bps, b_bps)) and (wps is None or same_float32(wps, b_wps)):
        ctx.occupancy_explained = occ is not None and occ < 0
        ctx.add(
            Mechanism.OLD_SM_COUNT,
            f"blocks per SM {exact(bps)} and warps per SM {exact(wps)} are the grid's {blocks} blocks and "
            f"{blocks}*{threads}/32 warps divided by -1: the profiler used an SM count of -1 instead of {num_sms} "
            f"({ctx.launch}); true "
            f"{exact(ctx.true['blocks per SM'])} and {exact(ctx.true['warps per SM'])}",
        )
    elif (
        wps is not None
        and blocks * threads > INT32_MAX
        and same_float32(wps, early_kineto_warps_per_sm(grid, block, num_sms))
    ):
        ctx.add(
            Mechanism.EARLY_OVERFLOW,
            f"{ctx.launch}: {blocks * threads} threads > 2^31-1, multiplied in int32 wraps to "
            f"{wrap_int32(blocks * threads)}; reported warps per SM {exact(wps)}, "
            f"true {exact(ctx.true['warps per SM'])}",
        )
    else:
        implied = ""
        if bps is not None and bps != 0 and math.isfinite(bps):
            implied = f"; it implies {wrap_int32(blocks) / bps:.4g} SMs, {_sm_source(ctx.device, num_sms)}"
        ctx.add(
            Mechanism.UNEXPLAINED,
            f"reported blocks per SM {exact(bps)}, warps per SM {exact(wps)}; Kineto's formula gives "
            f"{exact(expected_bps)} and {exact(expected_wps)} on {num_sms} SMs ({ctx.launch}){implied}",
        )


_SM_SOURCE = {"given": "--sms gives {n}", "inferred": "{n} were inferred from the kernels", "assumed": "{n} assumed"}


def _sm_source(device: DeviceInfo | None, num_sms: int | None) -> str:
    """Where the SM count came from, in words: the trace's own, --sms, or inference (and, where the kernels
    prove another count than deviceProperties, both)."""
    source = device.source if device is not None else "deviceProperties"
    words = _SM_SOURCE.get(source, "the trace says {n}").format(n=num_sms)
    if device is not None and device.declared_sms is not None:
        words += f" (the trace's deviceProperties says {device.declared_sms})"
    return words


class _OccupancyReading(msgspec.Struct, frozen=True, eq=False):
    """What the occupancy check compares, gathered once: the printed value, both calculators' results and the
    values Kineto's formula gives from them."""

    device: DeviceInfo
    occ: float
    label: str
    calc: Occupancy | None
    active: int | None  # ours, or Kineto's own where ours has no table for the capability
    truncating: float | None
    lround: float | None
    follows_kineto: bool  # the printed value is what Kineto's own calculator gave
    smem: int
    registers: int


def _occupancy(ctx: LaunchContext) -> bool:
    """E, D, or an unexplained occupancy: the printed value against CUDA's calculator as Kineto calls it."""
    reading = _occupancy_reading(ctx)
    if reading is None:
        return True
    _cross_check(ctx, reading.calc, ctx.k.profiler_occupancy, reading.label if reading.follows_kineto else None)
    _judge_occupancy(ctx, reading)
    return True


def _occupancy_reading(ctx: LaunchContext) -> _OccupancyReading | None:
    """The printed occupancy and what both calculators give for this launch; None where there is nothing to check
    (no value, already explained, or no device limits)."""
    k, device, occ = ctx.k, ctx.device, ctx.k.occupancy.value
    if occ is None or ctx.occupancy_explained or device is None or device.limits is None:
        return None
    limits = device.limits
    smem, registers = k.shared_memory or 0, k.registers or 0
    try:
        calc: Occupancy | None = active_blocks_per_sm(limits, ctx.threads, registers, smem)
    except UnknownArchitecture:
        calc = None
    prof = k.profiler_occupancy
    prof_active = prof.active_blocks if prof is not None else None
    # Kineto's own result stands in for a capability our calculator has no table for
    active = calc.active_blocks if calc is not None else prof_active
    assert ctx.num_sms  # _without_sm_count stopped the check otherwise
    expected_bps = kineto_blocks_per_sm(ctx.grid, ctx.num_sms)
    truncating, lround = kineto_occupancy_percent(active, expected_bps, ctx.threads, limits.max_threads_per_sm)
    # the printed value is what the profiler's own calculator gave: where the two calculators disagree, which
    # table is wrong is a note about the tools, never a finding about the launch
    follows_kineto = prof_active is not None and occ in kineto_occupancy_percent(
        prof_active, expected_bps, ctx.threads, limits.max_threads_per_sm
    )
    label = k.occupancy_key or "occupancy"
    return _OccupancyReading(
        device, occ, label, calc, active, truncating, lround, follows_kineto, smem, registers
    )  # fmt: skip


def _cuda_header(cc: tuple[int, int]) -> str:
    """The CUDA header a PyTorch needs to know this compute capability, in words."""
    needs = MIN_CUDA_HEADER.get(cc)
    if needs:
        return f"a CUDA header older than CUDA {needs}"
    return f"a CUDA header that predates compute capability {cc[0]}.{cc[1]}, newer than every CUDA warpwizard knows"


def _judge_occupancy(ctx: LaunchContext, r: _OccupancyReading) -> None:
    """Which mechanism explains the printed value: E (shared memory past the default), the calculator failing or
    not knowing the capability, or nothing this tool knows; a value either calculator gives is no finding."""
    assert r.device.limits is not None  # _occupancy_reading returns None otherwise
    cc = r.device.limits.compute_capability
    occ = r.occ
    if occ in (r.truncating, r.lround):
        if occ == 0 and r.smem > SMEM_DEFAULT_LIMIT and r.active is not None:
            _shared_memory_limit(ctx, r.device, r.label)
        elif r.active is None and occ < 0:
            ctx.add(
                Mechanism.OCCUPANCY_CALCULATOR,
                f"{r.label} = {exact(occ)}: compute capability {cc[0]}.{cc[1]} is unknown to the occupancy "
                f"calculator (a PyTorch built with {_cuda_header(cc)}); blocks per SM is fine",
            )
    elif occ in (-99, -100) and r.calc is not None:
        why = (
            f"PyTorch built with {_cuda_header(cc)}"
            if cc in MIN_CUDA_HEADER
            else f"every CUDA header knows compute capability {cc[0]}.{cc[1]}, so not for want of a newer one: "
            "it rejected this launch's inputs"
        )
        ctx.add(
            Mechanism.OCCUPANCY_CALCULATOR,
            f"{r.label} = {exact(occ)} while blocks per SM {exact(ctx.reported['blocks per SM'])} is right: the "
            f"profiler's occupancy calculator failed on compute capability {cc[0]}.{cc[1]} ({why}); true "
            f"{exact(ctx.true.get(r.label))}%, limited by {', '.join(r.calc.limiting_factors)}",
            r.calc.limiting_factors,
        )
    elif r.active is None and 0 <= occ <= 100:
        pass  # a capability our calculator has no table for: a valid-looking value cannot be called wrong
    elif r.follows_kineto:
        pass  # Kineto's calculator and ours disagree (the note says so); the launch is not wrong
    else:
        which = "the occupancy calculator" if r.calc is not None else "the trace's own occupancy object"
        ctx.add(
            Mechanism.UNEXPLAINED,
            f"{r.label} = {exact(occ)}, but {which} with this trace's device properties gives "
            f"{r.truncating}% (registers {r.registers}, shared memory {r.smem} B, {ctx.threads} threads/block, "
            f"cc {cc[0]}.{cc[1]}): a profiler or device this tool does not know",
        )


def _cross_check(
    ctx: LaunchContext, calc: Occupancy | None, prof: ProfilerOccupancy | None, printed: str | None
) -> None:
    """Kineto's occupancy object against our calculator with the same (default 48 KB) arguments: a
    disagreement is about warpwizard's table or the profiler's, never about the launch; noted once (with
    how many launches, by the report). ``printed``: the metric whose value follows Kineto's result."""
    if calc is None or prof is None or prof.active_blocks is None or prof.active_blocks == calc.active_blocks:
        return
    assert ctx.device is not None and ctx.device.limits is not None
    cc = ctx.device.limits.compute_capability
    ctx.result.notes.append(
        f"Kineto's own occupancy calculator gives {prof.words()} where warpwizard's gives {calc.active_blocks} "
        f"({', '.join(calc.limiting_factors)}) on compute capability {cc[0]}.{cc[1]} ({ctx.threads} threads, "
        f"{ctx.k.registers or 0} registers, {ctx.k.shared_memory or 0} B shared memory): one of the two "
        "calculators' tables is not this GPU's"
        + (f"; the printed {printed} follows Kineto's, so it is not called wrong" if printed else "")
    )


def _shared_memory_limit(ctx: LaunchContext, device: DeviceInfo, label: str) -> None:
    k = ctx.k
    assert device.limits is not None
    value, factors, opt_active = _true_occupancy(device, k, ctx.threads, ctx.blocks)
    if value is not None and value < 0.5:
        return  # the printed 0 is the truth rounded (a few blocks of a small kernel): nothing is wrong
    fixed = dict(ctx.true)
    fixed[label] = value
    fit = "an unknown number of blocks per SM fit"
    if opt_active is not None:
        fit = f"{plural(opt_active, 'block')} per SM {verb(opt_active, 'fits', 'fit')}"
    ctx.add(
        Mechanism.SHARED_MEMORY_LIMIT,
        f"{label} = 0 for a kernel that ran: shared memory {k.shared_memory} B > {SMEM_DEFAULT_LIMIT} B (48 KB), "
        f"the default per-block limit Kineto passes to the occupancy calculator; with the opt-in limit "
        f"sharedMemPerBlockOptin = {device.limits.shared_mem_per_block_optin} B, {fit}, "
        f"so the occupancy is {exact(round(value, 1) if value is not None else None)}%, "
        f"limited by {', '.join(factors) or 'nothing'}"
        + (f"; Kineto's own calculator says {k.profiler_occupancy.words()}" if k.profiler_occupancy else ""),
        factors,
        fixed,
    )


DETECTORS = (_non_finite, _placeholders, _without_sm_count, _sm_count_mismatch, _grid_arithmetic, _occupancy)


def check_kernel(k: KernelRecord, device: DeviceInfo | None, *, rocm: bool = False, typed: bool = False) -> KernelCheck:
    """Classify one kernel. Never raises on odd data: odd data is a finding or a skip."""
    if rocm or k.fixed is not None:
        return KernelCheck()
    if k.grid is None or k.block is None:
        if _impossible_values(k):
            return _unrecomputable(k, "the launch's grid or block is missing or not three whole numbers")
        return KernelCheck()
    if k.blocks_per_sm.value is None and k.warps_per_sm.value is None and k.occupancy.value is None:
        return _computed(k, k.grid, k.block, device)
    ctx = _context(k, device, k.grid, k.block)
    ctx.typed = typed
    for detect in DETECTORS:
        if detect(ctx):
            break
    ctx.result.true = dict(ctx.true)
    return ctx.result


def _computed(k: KernelRecord, grid: Dim3, block: Dim3, device: DeviceInfo | None) -> KernelCheck:
    """A launch the trace prints no metrics for (Cuspy's and Nsight Systems' never do): nothing to check, but its
    true values follow from grid, block and the device's SM count (occupancy with the opt-in shared-memory limit)."""
    if device is None or not device.num_sms:
        return KernelCheck()
    blocks, threads = product(grid), product(block)
    occupancy, _, _ = _true_occupancy(device, k, threads, blocks)
    return KernelCheck(
        true={
            "blocks per SM": true_blocks_per_sm(grid, device.num_sms),
            "warps per SM": true_warps_per_sm(grid, block, device.num_sms),
            "est. achieved occupancy %": occupancy,
        }
    )


# Distinct launches memoised: real traces have a few thousand; an export whose every kernel has its own grid has
# millions, each a KernelCheck kept for nothing (~1 KB: 10 GB for 10M kernels, issue 47 item 7). Past it, a launch
# is checked anew each time (the same answer: check_kernel is a function of the signature).
MEMO_CAP = 1 << 14


class MemoChecker:
    """``check_kernel`` once per distinct launch: training steps repeat the same kernels, so a
    gigabyte trace has hundreds of thousands of launches but a few thousand distinct ones.
    Identical launches get the very same KernelCheck object back."""

    def __init__(self, devices: dict[int, DeviceInfo], rocm: bool, typed: bool = False) -> None:
        self.devices = devices
        self.rocm = rocm
        self.typed = typed
        self._memo: dict[tuple[Any, ...], KernelCheck] = {}
        self.kept = True  # whether the last check's result is the memo's (alive, the same object for the same launch)

    def check(self, k: KernelRecord) -> KernelCheck:
        signature = (
            k.device,
            k.grid,
            k.block,
            k.registers,
            k.shared_memory,
            k.blocks_per_sm.value,
            k.blocks_per_sm.spelling,
            k.warps_per_sm.value,
            k.warps_per_sm.spelling,
            k.occupancy.value,
            k.occupancy.spelling,
            k.occupancy_key,
            k.fixed,
            k.profiler_occupancy,
        )
        result = self._memo.get(signature)
        self.kept = True
        if result is None:
            result = check_kernel(k, device_for(self.devices, k.device), rocm=self.rocm, typed=self.typed)
            if len(self._memo) < MEMO_CAP:
                self._memo[signature] = result
            else:
                self.kept = False
        return result
