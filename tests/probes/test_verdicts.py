"""The probes' rules, as tables: what each concludes from what it gathered, with no subprocess."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.probes.base import Status
from wizard.probes.verdicts import (
    Reprofiled,
    Sanity,
    check_limits,
    launch_blocking_verdict,
    op_isolate_verdict,
    reprofile_verdict,
    sanity_verdict,
)
from wizard.trace.metrics.devices import KNOWN_GPUS
from wizard.trace.read.events import reported
from wizard.trace.read.records import KernelRecord


@pytest.mark.parametrize(
    ("found", "status", "follows"),
    [
        (Reprofiled(cuda=False, impossible=True, mechanisms=("A",)), Status.SKIP, "unknown"),
        (Reprofiled(cuda=True, impossible=False, mechanisms=()), Status.PASS, "not reproduced"),
        (Reprofiled(cuda=True, impossible=True, mechanisms=("A",)), Status.FAIL, "profiler"),
        (Reprofiled(cuda=True, impossible=True, mechanisms=("?",)), Status.WARN, "unknown"),
        (Reprofiled(cuda=True, impossible=True, mechanisms=("?",), nsys_ran=True), Status.FAIL, "profiler"),
        (
            Reprofiled(cuda=True, impossible=True, mechanisms=("?",), versions={"2.4.0": [], "2.5.0": ["?"]}),
            Status.FAIL,
            "profiler",
        ),
        (Reprofiled(cuda=True, impossible=True, mechanisms=("?",), versions={"2.5.0": ["?"]}), Status.WARN, "unknown"),
    ],
)
def test_when_reprofiling_blames_the_profiler(found: Reprofiled, status: Status, follows: str) -> None:
    got_status, got_follows, summary = reprofile_verdict(found)
    assert (got_status, got_follows) == (status, follows)
    if found.versions.get("2.4.0") == []:
        assert summary.endswith("and torch 2.4.0 reports correct values")


@pytest.mark.parametrize(
    ("args", "status", "summary"),
    [
        (
            ("device-side assert triggered", None, None, True, 1),
            Status.FAIL,
            "CUDA error at launch: device-side assert triggered",
        ),
        ((None, 3, "Warp assert", True, 0), Status.FAIL, "CUDA error at launch: Warp assert"),
        ((None, None, None, False, 0), Status.SKIP, "no CUDA device: the workload ran on the CPU"),
        ((None, None, None, True, 2), Status.WARN, "the workload failed (exit 2) without a CUDA error"),
        ((None, 0, None, True, 0), Status.PASS, "no CUDA error with blocking launches"),
    ],
)
def test_launch_blocking_rules(args: tuple[Any, ...], status: Status, summary: str) -> None:
    got_status, got_summary = launch_blocking_verdict(*args)
    assert got_status is status and got_summary.startswith(summary)


@pytest.mark.parametrize(
    ("repro", "mechanisms", "status", "reproduced"),
    [
        ({"too_large": 10**9, "device": "cpu"}, [], Status.SKIP, None),
        ({"missing_op": True, "error": "not registered", "device": "cuda"}, [], Status.WARN, None),
        ({"error": "TypeError: bad", "device": "cuda"}, [], Status.WARN, None),
        ({"device": "cpu"}, [], Status.SKIP, None),
        ({"device": "cuda"}, ["A"], Status.FAIL, True),
        ({"device": "cuda"}, [], Status.PASS, False),
    ],
)
def test_op_isolate_rules(
    repro: dict[str, Any], mechanisms: list[str], status: Status, reproduced: bool | None
) -> None:
    got_status, _, got_reproduced = op_isolate_verdict("aten::mul", repro, mechanisms)
    assert (got_status, got_reproduced) == (status, reproduced)


def _kernel(threads: int, registers: int, smem: int, occupancy: float | None = None) -> KernelRecord:
    return KernelRecord(
        "k", 0.0, 1.0, 1, 1, 0, 7, 1, (132, 1, 1), (threads, 1, 1), registers, smem,
        reported(1.0), reported(1.0), reported(occupancy), "est. achieved occupancy %", 0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kernel", "status", "count"),
    [
        (_kernel(256, 32, 0), Status.PASS, None),
        (_kernel(256, 300, 0), Status.FAIL, "impossible_registers"),
        (_kernel(2048, 32, 0), Status.FAIL, "impossible_block"),
        (_kernel(256, 32, 300_000), Status.FAIL, "impossible_shared_memory"),
        (_kernel(256, 32, 0, occupancy=120), Status.FAIL, "occupancy_above_100"),
        (_kernel(384, 168, 231424), Status.WARN, "above_48kb"),
    ],
)
def test_metrics_sanity_rules(kernel: KernelRecord, status: Status, count: str | None) -> None:
    sanity = Sanity()
    check_limits(sanity, kernel, KNOWN_GPUS[132])
    assert sanity_verdict(sanity)[0] is status
    assert sanity.checked == 1
    if count is not None:
        assert sanity.counts[count] == 1


def test_the_limiting_factor_is_the_one_right_answer() -> None:
    sanity = Sanity()
    check_limits(sanity, _kernel(384, 168, 231424), KNOWN_GPUS[132])
    assert dict(sanity.limiters) == {"registers": 1, "shared memory": 1}


def test_no_kernel_is_a_skip() -> None:
    assert sanity_verdict(Sanity())[0] is Status.SKIP
