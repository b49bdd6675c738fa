"""A job's rank directory with planted problems, for the tests and benchmarks of a job judged from per-rank
summaries (wizard/jobs/): one trace per rank, each declaring its place (``distributedInfo``), each step compute
kernels then an NCCL all-reduce; a straggler rank reaches every all-reduce late, a missing rank has no file, a
cut rank's file stops inside its events (a crashed writer), an unreadable rank's file is no trace (a gzip
header and broken data)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wizard.outputs import write_bytes
from wizard.testing.traces import KernelSpec, TraceBuilder

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


@dataclass(frozen=True, slots=True)
class RankPlan:
    """What the directory holds: ``world_size`` ranks of ``steps`` steps with ``kernels`` compute kernels each
    (more kernels, bigger files: about 0.45 KB a kernel), and the ranks with a planted problem."""

    world_size: int = 4
    steps: int = 3
    kernels: int = 4
    straggler: int | None = None
    straggler_us: float = 500.0
    missing: tuple[int, ...] = ()
    cut: tuple[int, ...] = ()
    unreadable: tuple[int, ...] = ()


def rank_builder(rank: int, plan: RankPlan) -> TraceBuilder:
    """One rank's trace: its steps, each ``kernels`` compute launches and one all-reduce, the straggler late."""
    b = TraceBuilder()
    b.set_metadata("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": plan.world_size})
    for step in range(plan.steps):
        work = [KernelSpec(f"gemm_{n % 7}", (64, 1, 1), (128, 1, 1)) for n in range(plan.kernels)]
        b.span(f"ProfilerStep#{step}", work, cat="user_annotation")
        b.wait(plan.straggler_us if rank == plan.straggler else float(rank))  # jitter of a µs per rank
        b.add(KernelSpec(ALLREDUCE, (8, 1, 1), (256, 1, 1)))
    return b


def write_rank_directory(directory: str | Path, plan: RankPlan) -> list[Path]:
    """The rank directory (``rank{N}.json`` each), planted as ``plan`` says; the files written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rank in range(plan.world_size):
        if rank in plan.missing:
            continue
        path = out / f"rank{rank}.json"
        if rank in plan.unreadable:
            written.append(write_bytes(path, b"\x1f\x8b\x08\x00broken gzip data, no trace" * 4, force=True))
            continue
        builder = rank_builder(rank, plan)
        cut = int(len(builder.text().encode()) * 0.7) if rank in plan.cut else None
        written.append(builder.write(path, truncate_at=cut))
    return written
