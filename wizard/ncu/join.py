"""Nsight Compute's kernels joined to a trace's launches, and what the two say of each (issue 50, part 4).

Three identities hold between Kineto's numbers and Nsight Compute's for the same launch (research by this project
on NVIDIA's own sample reports; docs/comparing.md):

1. ``launch__waves_per_multiprocessor = (grid / SMs) / min(launch__occupancy_limit_*)``: Kineto's "blocks per SM"
   is ``grid / SMs``, so ``waves x min(limits)`` is it.
2. Kineto's "est. achieved occupancy %" ``= min(1, waves) x theoretical occupancy``
   (``sm__maximum_warps_per_active_cycle_pct``): an estimate, not a measurement.
3. Kineto's block limits (``occupancy.blockLimit{Regs,SharedMem,Warps,Blocks}``, or the calculator called as Kineto
   calls it) ``= launch__occupancy_limit_{registers,shared_mem,warps,blocks}``, diverging exactly where mechanism E
   says: above 48 KB of shared memory Kineto asks with the default limit and gets 0 blocks.

Each joined launch gets a label: **profiler bug** (identity 1 or 2 broken without E: the trace's number is wrong),
**configuration blind spot** (E: identity 3 differs in the shared-memory limit alone), or **estimate** (the
identities hold; Nsight Compute's measured achieved occupancy differs from Kineto's estimate by what is said, and
why: on a grid of several waves the estimate is above the measurement, on a grid with fewer blocks than SMs ncu
averages over the SMs that ran and Kineto over all of them).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from wizard.formatting import plural
from wizard.ncu import NcuKernel
from wizard.trace.metrics.occupancy import DeviceLimits, UnknownArchitecture, active_blocks_per_sm
from wizard.trace.profile.summary import KernelGroup, ProfileSummary

SMEM_DEFAULT = 49152  # the per-block limit Kineto asks the calculator with (mechanism E above it)
ROUNDING = 0.5  # Kineto prints the occupancy rounded to a whole percent
RELATIVE = 1e-5  # blocks per SM is a float32: a relative difference below this is the same number
AGREE_POINTS = 1.0  # an estimate within a point of the measurement agrees with it (Kineto rounds to whole points)
LIMITS = ("registers", "shared_mem", "warps", "blocks")

Label = Literal["profiler bug", "configuration blind spot", "estimate", "not joined"]


@dataclass(slots=True)
class Identity:
    """One identity on one launch: both sides' numbers and whether they agree."""

    name: str
    kineto: Any
    ncu: Any
    holds: bool | None  # None: a side lacks the numbers


@dataclass(slots=True)
class Joined:
    """One Nsight Compute kernel beside the trace's launch of it."""

    ncu_index: int
    ncu_name: str
    kernel: str  # the full name
    grid: list[int] | None
    block: list[int] | None
    matched: str  # "name and launch configuration", "launch configuration", or why it is not joined
    label: Label
    why: str
    identities: list[Identity] = field(default_factory=list)
    kineto_occupancy_pct: float | None = None
    ncu_achieved_pct: float | None = None
    ncu_theoretical_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def device_limits(k: NcuKernel) -> DeviceLimits | None:
    """The device as Nsight Compute describes it: what the calculator needs (a trace may lack it)."""
    need = ("cc_major", "cc_minor", "sms", "max_threads_per_sm")
    if any(k.whole(n) is None for n in need):
        return None
    return DeviceLimits(
        compute_major=k.whole("cc_major") or 0,
        compute_minor=k.whole("cc_minor") or 0,
        num_sms=k.whole("sms") or 0,
        max_threads_per_sm=k.whole("max_threads_per_sm") or 0,
        regs_per_sm=k.whole("regs_per_sm") or 65536,
        regs_per_block=k.whole("regs_per_block") or 65536,
        shared_mem_per_block=k.whole("smem_per_block") or SMEM_DEFAULT,
        shared_mem_per_sm=k.whole("smem_per_sm") or 0,
        shared_mem_per_block_optin=k.whole("smem_optin") or 0,
        max_threads_per_block=k.whole("max_threads_per_block") or 1024,
        name=k.device or "",
    )


def _kineto_limits(g: KernelGroup, k: NcuKernel) -> dict[str, int | None] | None:
    """Kineto's block limits for the launch: its own occupancy object where the trace has it, else CUDA's
    calculator called as Kineto calls it (default 48 KB limit, no opt-in) on ncu's device description."""
    if g.kineto_limits is not None:
        return {name: g.kineto_limits.get(name) for name in LIMITS}
    device = device_limits(k)
    threads = math.prod(g.block) if g.block else None
    if device is None or threads is None or g.registers is None or g.shared_memory is None:
        return None
    try:
        occ = active_blocks_per_sm(device, threads, g.registers, g.shared_memory)
    except UnknownArchitecture:
        return None
    return {
        "registers": occ.limit_registers, "shared_mem": occ.limit_shared_memory,
        "warps": occ.limit_warps, "blocks": occ.limit_blocks,
    }  # fmt: skip


def _ncu_limits(k: NcuKernel) -> dict[str, int | None]:
    return {name: k.whole(f"limit_{name}") for name in LIMITS}


def identities(g: KernelGroup, k: NcuKernel) -> list[Identity]:
    """The three identities on one launch, each with both sides' numbers."""
    grid, sms, waves = k.whole("grid_size"), k.whole("sms"), k.get("waves")
    ncu_limits = _ncu_limits(k)
    known = [v for v in ncu_limits.values() if v is not None and v < 2**31 - 1]
    per_sm = grid / sms if grid is not None and sms else None
    reported = g.reported.get("blocks_per_sm")
    first = None
    if per_sm is not None and waves is not None and known:
        ncu_side = waves * min(known)
        first = math.isclose(ncu_side, per_sm, rel_tol=RELATIVE) and (
            reported is None or math.isclose(reported, per_sm, rel_tol=RELATIVE, abs_tol=1e-6)
        )
    one = Identity("blocks per SM = waves x min(limits) = grid / SMs", reported, per_sm, first)
    estimate, theoretical = g.reported.get("occupancy"), k.get("theoretical_pct")
    predicted = min(1.0, waves) * theoretical if waves is not None and theoretical is not None else None
    second = None if estimate is None or predicted is None else abs(estimate - predicted) <= ROUNDING + 1e-9
    two = Identity("est. achieved occupancy % = min(1, waves) x theoretical occupancy", estimate, predicted, second)
    kineto = _kineto_limits(g, k)
    three = Identity(
        "Kineto's block limits = ncu's launch__occupancy_limit_*", kineto, ncu_limits, _limits_agree(kineto, ncu_limits)
    )
    return [one, two, three]


def _active(limits: dict[str, int | None]) -> int | None:
    known = [v for v in limits.values() if v is not None]
    return min(known) if len(known) == len(LIMITS) else None


def _limits_agree(kineto: dict[str, int | None] | None, ncu: dict[str, int | None]) -> bool | None:
    """The registers, warps and blocks limits equal, and the same active blocks per SM. The shared-memory limit
    alone may differ without changing anything: CUDA's calculator, as Kineto calls it, assumes the largest
    carveout (and no 1 KB reservation for a kernel with none), where ncu shows the carveout the driver chose
    (``launch__shared_mem_config_size``): 3 blocks of 43 KB against ncu's 2 on an A100 configured for 100 KB,
    with registers binding at 2 on both."""
    if kineto is None or any(ncu[n] is None for n in LIMITS):
        return None
    same = all(kineto[n] == ncu[n] for n in ("registers", "warps", "blocks"))
    return same and _active(kineto) == _active(ncu)


def _label(g: KernelGroup, k: NcuKernel, found: list[Identity]) -> tuple[Label, str]:
    one, two, three = found
    smem = g.shared_memory if g.shared_memory is not None else k.shared_memory
    kineto, ncu = three.kineto, three.ncu
    if smem is not None and smem > SMEM_DEFAULT and kineto is not None:
        differing = [n for n in LIMITS if kineto[n] != ncu[n]]
        if differing == ["shared_mem"] and kineto["shared_mem"] == 0 and (ncu["shared_mem"] or 0) > 0:
            return "configuration blind spot", (
                f"mechanism E: {smem} B of shared memory is over the 48 KB Kineto asks the calculator with, so "
                f"Kineto's shared-memory limit is 0 blocks where ncu, with the opt-in, finds {ncu['shared_mem']}; "
                "its 0% occupancy is that, not the kernel"
            )
    if one.holds is False:
        return "profiler bug", (
            f"Kineto's blocks per SM {one.kineto} is not grid / SMs = {one.ncu} (which ncu's waves confirm): the "
            "trace's number is wrong"
        )
    if two.holds is False:
        return "profiler bug", (
            f"Kineto's estimate {two.kineto}% is not min(1, waves) x theoretical = {two.ncu:.1f}%: the trace's "
            "number is wrong"
        )
    return "estimate", _estimate_words(k, two)


def _estimate_words(k: NcuKernel, two: Identity) -> str:
    achieved, waves = k.get("achieved_pct"), k.get("waves")
    if achieved is None or two.kineto is None:
        return "the identities hold; no measured achieved occupancy to set beside the estimate"
    gap = achieved - float(two.kineto)
    base = f"Kineto estimates {two.kineto}%, ncu measured {achieved:.1f}% ({gap:+.1f} points)"
    if abs(gap) <= AGREE_POINTS:
        return base + ": the estimate and the measurement agree here"
    if waves is not None and waves > 1:
        return (
            base
            + ": on a grid of several waves the estimate assumes every wave full; tails and stalls leave warps idle"
        )
    grid, sms = k.whole("grid_size"), k.whole("sms")
    if grid is not None and sms and grid < sms:
        return base + f": {plural(grid, 'block')} on {sms} SMs; ncu averages over the SMs that ran, Kineto over all"
    return base + ": an estimate from the launch configuration, not a measurement"


def _candidates(summaries: list[ProfileSummary]) -> list[KernelGroup]:
    return [g for s in summaries for g in s.kernels]


def _find(k: NcuKernel, groups: list[KernelGroup]) -> tuple[KernelGroup | None, str]:
    """The trace's kernel for an ncu kernel: the full name and the launch configuration decide (ncu calls every
    CUTLASS kernel ``Kernel``); the configuration alone only when exactly one kernel of the trace has it. A trace's
    kernel is its launches of one name and configuration, so several ncu kernels may join one."""
    same_config = [
        g for g in groups
        if g.grid is not None and tuple(g.grid) == k.grid and g.block is not None and tuple(g.block) == k.block
    ]  # fmt: skip
    for g in same_config:
        if g.key == k.key:
            return g, "name and launch configuration"
    if len(same_config) == 1:
        return same_config[0], "launch configuration (the names differ)"
    return None, "no launch in the trace has its name and launch configuration"


def join(summaries: list[ProfileSummary], kernels: list[NcuKernel]) -> list[Joined]:
    """Each ncu kernel, in the report's order, beside the trace's launch of it (or why there is none)."""
    groups, out = _candidates(summaries), []
    for k in kernels:
        base = Joined(k.index, k.name, k.demangled or k.name, list(k.grid) if k.grid else None,
                      list(k.block) if k.block else None, "", "not joined", "")  # fmt: skip
        if not k.has_launch_metrics:
            base.matched = "not joined: ncu recorded this kernel without its launch metrics"
            base.why = "no grid, block or occupancy limits in the report: nothing to join or compare on"
            out.append(base)
            continue
        g, how = _find(k, groups)
        base.matched = how
        if g is None:
            base.why = "the trace has no launch like it"
            out.append(base)
            continue
        base.identities = identities(g, k)
        base.label, base.why = _label(g, k, base.identities)
        base.kineto_occupancy_pct = g.reported.get("occupancy")
        base.ncu_achieved_pct, base.ncu_theoretical_pct = k.get("achieved_pct"), k.get("theoretical_pct")
        out.append(base)
    return out
