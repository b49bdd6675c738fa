"""Recompute every kernel's metrics and name the mechanism behind each impossible value.

Pure functions over the reader's compact records. Mechanism ids follow
``docs/kineto-metrics.md``: A, A', B, C, C', D, E are profiler bugs; F is the metric's
by-design meaning (large values), explained but never flagged; ``?`` is a disagreement
no known mechanism explains, reported as a finding in its own right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from wizard.trace.devices import DeviceInfo, device_for
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
from wizard.trace.occupancy import (
    MIN_CUDA_HEADER,
    UnknownArchitecture,
    active_blocks_per_sm,
)
from wizard.trace.records import KernelRecord

SMEM_DEFAULT_LIMIT = 49152
HARDWARE_MAX_RESIDENT_WARPS = 64


class Mechanism(str, Enum):
    GRID_OVERFLOW = "A"
    EARLY_OVERFLOW = "A'"
    OLD_SM_COUNT = "B"
    UNKNOWN_DEVICE = "C"
    NON_FINITE_JSON = "C'"
    OCCUPANCY_CALCULATOR = "D"
    SHARED_MEMORY_LIMIT = "E"
    BY_DESIGN = "F"
    UNEXPLAINED = "?"

    @property
    def describe(self) -> str:
        return MECHANISM_TITLES[self]


MECHANISM_TITLES = {
    Mechanism.GRID_OVERFLOW: "grid size overflows int32 (gridX*gridY*gridZ > 2^31-1)",
    Mechanism.EARLY_OVERFLOW: "early Kineto multiplied grid and block in int32",
    Mechanism.OLD_SM_COUNT: "SM count read as -1 (PyTorch 1.8/1.9 on Turing and later)",
    Mechanism.UNKNOWN_DEVICE: "SM count unknown for the kernel's device (x/0)",
    Mechanism.NON_FINITE_JSON: "non-finite value written as a bare token or a string",
    Mechanism.OCCUPANCY_CALCULATOR: "occupancy calculator does not know the GPU architecture",
    Mechanism.SHARED_MEMORY_LIMIT: "occupancy judged with the default 48 KB shared-memory limit",
    Mechanism.BY_DESIGN: "large values are by design: the metric counts the whole grid",
    Mechanism.UNEXPLAINED: "value disagrees with the recomputation; no known mechanism explains it",
}

PROFILER_BUGS = frozenset(
    {
        Mechanism.GRID_OVERFLOW,
        Mechanism.EARLY_OVERFLOW,
        Mechanism.OLD_SM_COUNT,
        Mechanism.UNKNOWN_DEVICE,
        Mechanism.NON_FINITE_JSON,
        Mechanism.OCCUPANCY_CALCULATOR,
        Mechanism.SHARED_MEMORY_LIMIT,
    }
)


def is_wrong(mechanism: str) -> bool:
    """Whether a mechanism id means a wrong value: a profiler bug, or an unexplained disagreement (not F)."""
    return mechanism == Mechanism.UNEXPLAINED.value or Mechanism(mechanism) in PROFILER_BUGS


@dataclass(slots=True)
class Finding:
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
        return "info" if self.mechanism is Mechanism.BY_DESIGN else "error"

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


@dataclass(slots=True)
class KernelCheck:
    """Everything found for one kernel (possibly nothing)."""

    findings: list[Finding] = field(default_factory=list)
    checked: bool = False
    corrected: dict[str, float | int | None] = field(default_factory=dict)


def _fmt(value: float | None) -> str:
    if value is None:
        return "missing"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.9g}"


def _dims(d: tuple[int, int, int]) -> str:
    return f"{d[0]}x{d[1]}x{d[2]}"


def _true_occupancy(
    device: DeviceInfo, threads: int, registers: int, smem: int, grid_blocks: int, *, opt_in: bool
) -> tuple[float | None, tuple[str, ...], int | None]:
    """The occupancy % the kernel really has (64-bit grid, optionally opt-in smem limit)."""
    if device.limits is None or device.num_sms is None or device.num_sms <= 0:
        return None, (), None
    try:
        occ = active_blocks_per_sm(device.limits, threads, registers, smem, opt_in=opt_in)
    except UnknownArchitecture:
        return None, (), None
    blocks = min(float(occ.active_blocks), grid_blocks / device.num_sms)
    return 100.0 * blocks * threads / device.limits.max_threads_per_sm, occ.limiting_factors, occ.active_blocks


SM_COUNT_HINT = (
    "pass the GPU's SM count with --sms N for the true values (V100 80, T4 40, RTX 2080 Ti 68, "
    "A100 108, H100/H200 132, B200 148)"
)


def _impossible_values(k: KernelRecord) -> list[str]:
    """Reported values no launch can have, whatever the device: negative or not finite."""
    out = []
    for name, r in (
        ("blocks per SM", k.blocks_per_sm),
        ("warps per SM", k.warps_per_sm),
        (k.occupancy_key, k.occupancy),
    ):
        if r.value is not None and (not math.isfinite(r.value) or r.value < 0) and name:
            out.append(f"{name} {_fmt(r.value)}")
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


def check_kernel(k: KernelRecord, device: DeviceInfo | None, *, rocm: bool = False) -> KernelCheck:
    """Classify one kernel. Never raises on odd data: odd data is a finding or a skip."""
    result = KernelCheck()
    if rocm or k.fixed is not None:
        return result
    if k.grid is None or k.block is None:
        if _impossible_values(k):
            return _unrecomputable(k, "the launch's grid or block is missing or not three whole numbers")
        return result
    bps, wps, occ = k.blocks_per_sm.value, k.warps_per_sm.value, k.occupancy.value
    if bps is None and wps is None and occ is None:
        return result
    result.checked = True
    grid, block = k.grid, k.block
    blocks, threads = product(grid), product(block)
    num_sms = device.num_sms if device is not None else None
    reported = {"blocks per SM": bps, "warps per SM": wps}
    if k.occupancy_key is not None:
        reported[k.occupancy_key] = occ
    true: dict[str, float | None] = {"blocks per SM": None, "warps per SM": None}
    if device is not None and num_sms is not None and num_sms > 0:
        true["blocks per SM"] = true_blocks_per_sm(grid, num_sms)
        true["warps per SM"] = true_warps_per_sm(grid, block, num_sms)
        # The kernel ran, so it had the shared memory it asked for: its true occupancy is the opt-in one
        # (the same as the default one up to 48 KB), whatever else is wrong with the launch's record.
        occ_true, _, active_true = _true_occupancy(
            device, threads, k.registers or 0, k.shared_memory or 0, blocks, opt_in=True
        )
        if k.occupancy_key is not None:
            true[k.occupancy_key] = occ_true
        result.corrected = {"blocks per SM": true["blocks per SM"], "warps per SM": true["warps per SM"]}
        if occ_true is not None and k.occupancy_key is not None:
            # In the profiler's own form: the integer percent its C float arithmetic prints.
            assert device.limits is not None
            result.corrected[k.occupancy_key] = kineto_occupancy_percent(
                active_true, f32(true["blocks per SM"] or 0.0), threads, device.limits.max_threads_per_sm
            )[0]

    def add(
        mechanism: Mechanism,
        evidence: str,
        factors: tuple[str, ...] = (),
        true_override: dict[str, float | None] | None = None,
    ) -> None:
        result.findings.append(
            Finding(
                mechanism,
                k.index,
                k.name,
                k.device,
                k.ts,
                grid,
                block,
                dict(reported),
                dict(true_override or true),
                evidence,
                factors,
                k.correlation,
            )
        )

    launch = f"grid {_dims(grid)} = {blocks} blocks, block {_dims(block)} = {threads} threads"

    # C and C': non-finite values mean the SM count was unknown (x/0).
    non_finite = [
        (name, r)
        for name, r in (("blocks per SM", k.blocks_per_sm), ("warps per SM", k.warps_per_sm))
        if r.value is not None and not math.isfinite(r.value)
    ]
    if non_finite:
        known = ""
        if device is not None and device.source == "assumed":
            known = (
                f", which is not in the trace's deviceProperties (values below assume it is the same GPU "
                f"as the listed ones, {device.num_sms} SMs)"
            )
        shown = ", ".join(f"{name} = {_fmt(r.value)}" for name, r in non_finite)
        truth = (
            f"; true blocks per SM {_fmt(true['blocks per SM'])}, warps per SM {_fmt(true['warps per SM'])}"
            if num_sms
            else "; the true values need the device's SM count, which the trace does not give"
        )
        add(
            Mechanism.UNKNOWN_DEVICE,
            f"{shown}: the profiler divided by an SM count of 0 for device {k.device}{known} ({launch}){truth}",
        )
        spellings = {r.spelling for _, r in non_finite}
        if occ is not None and k.occupancy.spelling in ("bare", "quoted") and not math.isfinite(occ):
            spellings.add(k.occupancy.spelling)
        if "bare" in spellings:
            add(
                Mechanism.NON_FINITE_JSON,
                "written as a bare inf/nan token, which is invalid JSON: json.load, HTA and TensorBoard "
                "reject the whole file (Kineto 2022-04 to 2023-12)",
            )
        elif "quoted" in spellings:
            add(
                Mechanism.NON_FINITE_JSON,
                'written as a quoted string ("inf"/"nan") where a number is expected: tools that sum or '
                "compare the column fail or skip it (Kineto 2023-12 on)",
            )
        return result

    if bps == -1 and wps in (-1, None) and blocks > 1:
        # 2021-22 Kineto wrote -1 placeholders when it had no SM count for the device.
        add(
            Mechanism.UNKNOWN_DEVICE,
            f"blocks per SM = -1 and warps per SM = {_fmt(wps)}: the placeholders Kineto wrote in 2021-22 when it "
            f"had no SM count for device {k.device} ({launch}); true blocks per SM {_fmt(true['blocks per SM'])}, "
            f"warps per SM {_fmt(true['warps per SM'])}",
        )
        return result

    if num_sms is None or num_sms == 0:
        # Without an SM count only B can still be recognised (it needs none).
        if bps is not None and blocks > 0 and same_float32(bps, kineto_blocks_per_sm(grid, -1)):
            add(
                Mechanism.OLD_SM_COUNT,
                f"blocks per SM = {_fmt(bps)} = -(grid blocks): the SM count was read as -1 ({launch}); "
                + (f"the trace's {device.problem}" if device is not None and device.problem else SM_COUNT_HINT),
            )
        elif _impossible_values(k):
            why = (
                f"the trace's {device.problem}"
                if device is not None and device.problem
                else "the trace gives no SM count for this device; " + SM_COUNT_HINT
            )
            return _unrecomputable(k, why)
        return result

    expected_bps = kineto_blocks_per_sm(grid, num_sms)
    expected_wps = kineto_warps_per_sm(grid, block, num_sms)
    bps_ok = bps is None or same_float32(bps, expected_bps)
    wps_ok = wps is None or same_float32(wps, expected_wps)
    overflow = blocks > INT32_MAX
    occupancy_explained = False

    if bps_ok and wps_ok and overflow:
        wrapped = wrap_int32(blocks)
        occ_note = ""
        if occ is not None:
            occupancy_explained = True
            label = k.occupancy_key or "occupancy"
            occ_note = (
                f"; {label} {_fmt(occ)} follows from the wrapped value (true "
                f"{_fmt(round(t, 1) if (t := true.get(label)) is not None else None)})"
            )
        add(
            Mechanism.GRID_OVERFLOW,
            f"{launch} > 2^31-1; the int32 product wraps to {wrapped}; reported blocks per SM {_fmt(bps)}, "
            f"warps per SM {_fmt(wps)}; true {_fmt(true['blocks per SM'])} and {_fmt(true['warps per SM'])} "
            f"on {num_sms} SMs{occ_note}",
        )
    elif not (bps_ok and wps_ok):
        b_bps = kineto_blocks_per_sm(grid, -1)
        b_wps = kineto_warps_per_sm(grid, block, -1)
        if (bps is None or same_float32(bps, b_bps)) and (wps is None or same_float32(wps, b_wps)):
            occupancy_explained = occ is not None and occ < 0
            add(
                Mechanism.OLD_SM_COUNT,
                f"blocks per SM {_fmt(bps)} = -{blocks} and warps per SM {_fmt(wps)} = -{threads}*{blocks}/32: "
                f"the profiler used an SM count of -1 instead of {num_sms} ({launch}); true "
                f"{_fmt(true['blocks per SM'])} and {_fmt(true['warps per SM'])}",
            )
        elif (
            wps is not None
            and blocks * threads > INT32_MAX
            and same_float32(wps, early_kineto_warps_per_sm(grid, block, num_sms))
        ):
            add(
                Mechanism.EARLY_OVERFLOW,
                f"{launch}: {blocks * threads} threads > 2^31-1, multiplied in int32 wraps to "
                f"{wrap_int32(blocks * threads)}; reported warps per SM {_fmt(wps)}, true {_fmt(true['warps per SM'])}",
            )
        else:
            implied = ""
            if bps is not None and bps != 0 and math.isfinite(bps):
                implied = f"; it implies {wrap_int32(blocks) / bps:.4g} SMs, the trace says {num_sms}"
            add(
                Mechanism.UNEXPLAINED,
                f"reported blocks per SM {_fmt(bps)}, warps per SM {_fmt(wps)}; Kineto's formula gives "
                f"{_fmt(expected_bps)} and {_fmt(expected_wps)} on {num_sms} SMs ({launch}){implied}",
            )
    elif true["warps per SM"] is not None and true["warps per SM"] > HARDWARE_MAX_RESIDENT_WARPS:
        add(
            Mechanism.BY_DESIGN,
            f"warps per SM {_fmt(wps)} counts the whole grid ({blocks} blocks over {num_sms} SMs), not the "
            f"warps resident at once (at most {HARDWARE_MAX_RESIDENT_WARPS}); the value is correct",
        )

    if occ is None or occupancy_explained or device is None or device.limits is None:
        return result
    smem = k.shared_memory or 0
    registers = k.registers or 0
    try:
        calc = active_blocks_per_sm(device.limits, threads, registers, smem)
        active: int | None = calc.active_blocks
    except UnknownArchitecture:
        calc, active = None, None
    truncating, lround = kineto_occupancy_percent(active, expected_bps, threads, device.limits.max_threads_per_sm)
    label = k.occupancy_key or "occupancy"
    cc = device.limits.compute_capability
    if occ in (truncating, lround):
        if occ == 0 and smem > SMEM_DEFAULT_LIMIT and calc is not None:
            value, factors, opt_active = _true_occupancy(device, threads, registers, smem, blocks, opt_in=True)
            fixed = dict(true)
            fixed[label] = value
            optin = device.limits.shared_mem_per_block_optin
            add(
                Mechanism.SHARED_MEMORY_LIMIT,
                f"{label} = 0 for a kernel that ran: shared memory {smem} B > 49152 B (48 KB), the default "
                f"per-block limit Kineto passes to the occupancy calculator; with the opt-in limit "
                f"sharedMemPerBlockOptin = {optin} B, {opt_active} block(s) per SM fit, so the occupancy is "
                f"{_fmt(round(value, 1) if value is not None else None)}%, "
                f"limited by {', '.join(factors) or 'nothing'}",
                factors,
                fixed,
            )
        elif active is None and occ < 0:
            needs = MIN_CUDA_HEADER.get(cc, "a newer release")
            add(
                Mechanism.OCCUPANCY_CALCULATOR,
                f"{label} = {_fmt(occ)}: compute capability {cc[0]}.{cc[1]} is unknown to the occupancy "
                f"calculator (a PyTorch built with a CUDA header older than {needs}); blocks per SM is fine",
            )
        return result
    if occ in (-99, -100) and calc is not None:
        needs = MIN_CUDA_HEADER.get(cc, "a newer release")
        add(
            Mechanism.OCCUPANCY_CALCULATOR,
            f"{label} = {_fmt(occ)} while blocks per SM {_fmt(bps)} is right: the profiler's occupancy calculator "
            f"failed on compute capability {cc[0]}.{cc[1]} (PyTorch built with a CUDA header older than {needs}); "
            f"true {_fmt(true.get(label))}%, limited by {', '.join(calc.limiting_factors)}",
            calc.limiting_factors,
        )
        return result
    add(
        Mechanism.UNEXPLAINED,
        f"{label} = {_fmt(occ)}, but the occupancy calculator with this trace's device properties gives "
        f"{truncating}% (registers {registers}, shared memory {smem} B, {threads} threads/block, cc {cc[0]}.{cc[1]}): "
        "a profiler or device this tool does not know",
    )
    return result


class MemoChecker:
    """``check_kernel`` once per distinct launch: training steps repeat the same kernels, so a
    gigabyte trace has hundreds of thousands of launches but a few thousand distinct ones.
    Identical launches get the very same KernelCheck object back."""

    def __init__(self, devices: dict[int, DeviceInfo], rocm: bool) -> None:
        self.devices = devices
        self.rocm = rocm
        self._memo: dict[tuple[Any, ...], KernelCheck] = {}

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
        )
        result = self._memo.get(signature)
        if result is None:
            result = self._memo[signature] = check_kernel(k, device_for(self.devices, k.device), rocm=self.rocm)
        return result
