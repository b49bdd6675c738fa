"""The occupancy calculator reproduces the profiler's est. achieved occupancy % exactly."""

from __future__ import annotations

import pytest

from tests.conftest import REAL_TRACES, TRACES, kernels_of, load_json_trace, needs_shared
from wizard.trace.kineto_math import kineto_blocks_per_sm, kineto_occupancy_percent, product
from wizard.trace.metrics.devices import limits_from_properties
from wizard.trace.metrics.occupancy import DeviceLimits, UnknownArchitecture, active_blocks_per_sm

H100 = DeviceLimits(9, 0, 132, 2048, 65536, 65536, 49152, 233472, 232448)


@needs_shared
@pytest.mark.parametrize("name", [n for n in REAL_TRACES if "rocm" not in n and "mi300" not in n])
def test_every_real_kernel_matches_the_profiler(name: str) -> None:
    doc = load_json_trace(TRACES / name)
    if isinstance(doc, list):
        pytest.skip("PyTorch 1.8 array traces carry no occupancy")
    props = doc.get("deviceProperties") or doc.get("computeProperties") or []
    devices = {p["id"]: limits_from_properties(p) for p in props}
    checked = 0
    for k in kernels_of(doc):
        a = k["args"]
        reported = a.get("est. achieved occupancy %", a.get("theoretical occupancy %"))
        device = devices.get(a.get("device"))
        if reported is None or device is None:
            continue
        threads = product(tuple(a["block"]))
        occ = active_blocks_per_sm(device, threads, a["registers per thread"], a["shared memory"])
        bps = kineto_blocks_per_sm(tuple(a["grid"]), device.num_sms)
        assert reported in kineto_occupancy_percent(occ.active_blocks, bps, threads, device.max_threads_per_sm), k
        checked += 1
    assert checked > 0 or name.startswith(("cpu-only", "trimmed"))


def test_reference_h100_gemm_with_opt_in() -> None:
    """The reference's worked example: block 384, 168 registers, 231424 B gives 19% with opt-in, 0 without."""
    default = active_blocks_per_sm(H100, 384, 168, 231424)
    assert default.active_blocks == 0 and default.limit_shared_memory == 0
    opted = active_blocks_per_sm(H100, 384, 168, 231424, opt_in=True)
    assert opted.active_blocks == 1
    assert set(opted.limiting_factors) == {"registers", "shared memory"}
    assert kineto_occupancy_percent(opted.active_blocks, 10.0, 384, 2048)[0] == 19


def test_48kb_edge_is_exact_on_every_architecture() -> None:
    for cc in [(7, 0), (7, 5), (8, 0), (8, 6), (9, 0), (10, 0), (12, 0)]:
        limits = DeviceLimits(
            *cc,
            100,
            2048 if cc != (7, 5) else 1024,
            shared_mem_per_sm=233472 if cc[0] >= 8 else 98304,
            shared_mem_per_block_optin=232448 if cc[0] >= 8 else 98304,
        )
        if cc == (7, 5):
            limits = DeviceLimits(7, 5, 68, 1024, shared_mem_per_sm=65536, shared_mem_per_block_optin=65536)
        assert active_blocks_per_sm(limits, 128, 32, 49152).active_blocks > 0, cc
        assert active_blocks_per_sm(limits, 128, 32, 49153).active_blocks == 0, cc


def test_unknown_architecture_is_reported() -> None:
    with pytest.raises(UnknownArchitecture):
        active_blocks_per_sm(DeviceLimits(13, 0, 200, 2048), 128, 32, 0)


def test_register_and_block_limits() -> None:
    assert active_blocks_per_sm(H100, 1024, 64, 0).active_blocks == 1  # 64 regs x 1024 threads = whole file
    assert active_blocks_per_sm(H100, 1024, 65, 0).active_blocks == 0  # one register too many
    assert active_blocks_per_sm(H100, 32, 16, 0).limiting_factors == ("blocks",)
    assert active_blocks_per_sm(H100, 1025, 16, 0).active_blocks == 0
