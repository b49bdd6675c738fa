"""CUDA's occupancy calculator (``cuda_occupancy.h``) as libkineto calls it.

Kineto passes the default 48 KB per-block shared-memory limit, never the kernel's opt-in,
which is why kernels above 48 KB print 0% (mechanism E). ``opt_in=True`` repeats the
calculation with ``sharedMemPerBlockOptin`` to give the value the kernel really has.
"""

from __future__ import annotations

from msgspec import Struct

from wizard.trace.metrics.mechanisms import SMEM_DEFAULT_LIMIT

_KB = 1024


class Architecture(Struct, frozen=True):
    """Per-compute-capability limits the calculator hard-codes."""

    max_blocks_per_sm: int
    carveout_kb: tuple[int, ...]  # empty: use sharedMemPerMultiprocessor as it is
    sub_partitions: int = 4
    max_regs_per_thread: int = 256
    smem_granularity: int = 128
    reserved_smem: int = 1024


_VOLTA_CARVEOUT = (0, 8, 16, 32, 64, 96)
_AMPERE_CARVEOUT = (0, 8, 16, 32, 64, 100, 132, 164)
_HOPPER_CARVEOUT = (*_AMPERE_CARVEOUT, 196, 228)
_GA10X_CARVEOUT = (0, 8, 16, 32, 64, 100)

# What cuda_occupancy.h (CUDA 13.0) hard-codes per compute capability, function by function:
# cudaOccMaxBlocksPerMultiprocessor (resident blocks per SM), cudaOccAlignUpShmemSizeVoltaPlus (the
# carveout steps, cc >= 7; before, cudaOccSMemPreference takes sharedMemPerMultiprocessor as it is with the
# default cache preference), cudaOccSubPartitionsPerMultiprocessor (2 on GP100, else 4),
# cudaOccRegAllocationMaxPerThread (255 through cc 6.x, 256 from 7.0), cudaOccSMemAllocationGranularity
# (256 B through 7.x, 128 B from 8.0) and cudaOccSMemPerBlock (the driver's reservedSharedMemPerBlock, 1 KB,
# counted from cc 8.0). tests/probes/test_multi_gpu_and_capabilities.py checks every row against the header,
# compiling it where it
# is installed. Jetson Thor was cc 10.1 until CUDA 13 renamed it 11.0: data-centre Blackwell's carveout
# steps (to 228 KB) but 24 resident blocks per SM, not 32. GB10 (DGX Spark, 12.1) has consumer Blackwell's
# SM (100 KB, 24 blocks). Where a trace carries Kineto's own ``occupancy`` object, its result is checked
# against this table (a disagreement is a note).
ARCHITECTURES: dict[tuple[int, int], Architecture] = {
    **{
        (3, minor): Architecture(16, (), max_regs_per_thread=255, smem_granularity=256, reserved_smem=0)
        for minor in (0, 2, 5, 7)  # Kepler: K10/K20/K40/K80
    },
    **{
        (5, minor): Architecture(32, (), max_regs_per_thread=255, smem_granularity=256, reserved_smem=0)
        for minor in (0, 2, 3)  # Maxwell: M10/M40/M60, Jetson TX1
    },
    (6, 0): Architecture(32, (), sub_partitions=2, max_regs_per_thread=255, smem_granularity=256, reserved_smem=0),
    (6, 1): Architecture(32, (), max_regs_per_thread=255, smem_granularity=256, reserved_smem=0),
    (6, 2): Architecture(32, (), max_regs_per_thread=255, smem_granularity=256, reserved_smem=0),
    (7, 0): Architecture(32, _VOLTA_CARVEOUT, smem_granularity=256, reserved_smem=0),
    (7, 2): Architecture(32, _VOLTA_CARVEOUT, smem_granularity=256, reserved_smem=0),
    (7, 5): Architecture(16, (32, 64), smem_granularity=256, reserved_smem=0),
    (8, 0): Architecture(32, _AMPERE_CARVEOUT),
    (8, 6): Architecture(16, _GA10X_CARVEOUT),
    (8, 7): Architecture(16, _AMPERE_CARVEOUT),
    (8, 9): Architecture(24, _GA10X_CARVEOUT),
    (9, 0): Architecture(32, _HOPPER_CARVEOUT),
    (10, 0): Architecture(32, _HOPPER_CARVEOUT),  # B200
    (10, 1): Architecture(24, _HOPPER_CARVEOUT),  # Jetson Thor before CUDA 13
    (10, 3): Architecture(32, _HOPPER_CARVEOUT),  # B300
    (11, 0): Architecture(24, _HOPPER_CARVEOUT),  # Jetson Thor from CUDA 13
    (12, 0): Architecture(24, _GA10X_CARVEOUT),  # RTX 50, RTX PRO 6000
    (12, 1): Architecture(24, _GA10X_CARVEOUT),  # GB10 (DGX Spark)
}

# The CUDA header that first knew each architecture (mechanism D needs it).
MIN_CUDA_HEADER: dict[tuple[int, int], str] = {
    (8, 0): "11.0",
    (8, 6): "11.1",
    (8, 7): "11.4",
    (8, 9): "11.8",
    (9, 0): "11.8",
    (10, 0): "12.8",
    (10, 1): "12.8",
    (10, 3): "13.0",
    (11, 0): "13.0",
    (12, 0): "12.8",
    (12, 1): "12.9",
}


class DeviceLimits(Struct, frozen=True):
    """The per-device numbers the calculator reads (from the trace's deviceProperties)."""

    compute_major: int
    compute_minor: int
    num_sms: int
    max_threads_per_sm: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    shared_mem_per_block: int = SMEM_DEFAULT_LIMIT
    shared_mem_per_sm: int = 0
    shared_mem_per_block_optin: int = 0
    max_threads_per_block: int = 1024
    name: str = ""

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.compute_major, self.compute_minor)


class Occupancy(Struct, frozen=True):
    """Active blocks per SM and what limits them (``launch__occupancy_limit_*`` in ncu)."""

    active_blocks: int
    limit_warps: int
    limit_registers: int
    limit_shared_memory: int
    limit_blocks: int

    @property
    def limiting_factors(self) -> tuple[str, ...]:
        named = {
            "warps": self.limit_warps,
            "registers": self.limit_registers,
            "shared memory": self.limit_shared_memory,
            "blocks": self.limit_blocks,
        }
        return tuple(name for name, value in named.items() if value == self.active_blocks)


class UnknownArchitecture(Exception):
    """The calculator has no table for this compute capability (it would fail: -99/-100)."""


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def architecture(cc: tuple[int, int]) -> Architecture:
    try:
        return ARCHITECTURES[cc]
    except KeyError:
        raise UnknownArchitecture(f"compute capability {cc[0]}.{cc[1]}") from None


def _shared_memory_per_sm(arch: Architecture, device: DeviceLimits, allocated: int) -> int:
    size = device.shared_mem_per_sm
    if not arch.carveout_kb:
        return size
    steps = [kb * _KB for kb in arch.carveout_kb]
    wanted = max(size, allocated)
    for step in steps:
        if step >= wanted:
            return step
    return steps[-1]


def active_blocks_per_sm(
    device: DeviceLimits,
    threads_per_block: int,
    registers_per_thread: int,
    shared_memory: int,
    *,
    opt_in: bool = False,
) -> Occupancy:
    """``cudaOccMaxActiveBlocksPerMultiprocessor`` with Kineto's arguments."""
    arch = architecture(device.compute_capability)
    warp_size = 32
    warps_per_block = -(-threads_per_block // warp_size) if threads_per_block > 0 else 0
    big = 2**31 - 1

    if threads_per_block <= 0 or threads_per_block > device.max_threads_per_block:
        limit_warps = 0
    else:
        limit_warps = (device.max_threads_per_sm // warp_size) // warps_per_block

    if registers_per_thread <= 0 or warps_per_block == 0:
        limit_regs = big
    else:
        per_warp = _round_up(registers_per_thread * warp_size, 256)
        assumed = per_warp * _round_up(warps_per_block, arch.sub_partitions)
        allocated = per_warp * warps_per_block
        if (
            registers_per_thread > arch.max_regs_per_thread
            or device.regs_per_block < assumed
            or device.regs_per_block < allocated
        ):
            limit_regs = 0
        else:
            per_partition = device.regs_per_sm // arch.sub_partitions // per_warp
            limit_regs = per_partition * arch.sub_partitions // warps_per_block

    block_limit = device.shared_mem_per_block
    if opt_in and arch.carveout_kb:  # opting in to more than 48 KB per block exists from cc 7.0 on
        block_limit = max(block_limit, device.shared_mem_per_block_optin)
    if shared_memory <= 0:
        limit_smem = big
    else:
        allocated_smem = _round_up(shared_memory + arch.reserved_smem, arch.smem_granularity)
        if allocated_smem > block_limit + arch.reserved_smem:
            limit_smem = 0
        else:
            per_sm = _shared_memory_per_sm(arch, device, allocated_smem)
            limit_smem = per_sm // allocated_smem

    limit_blocks = arch.max_blocks_per_sm
    active = min(limit_warps, limit_regs, limit_smem, limit_blocks)
    return Occupancy(active, limit_warps, limit_regs, limit_smem, limit_blocks)
