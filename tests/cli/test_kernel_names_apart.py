"""Kernels of one template told apart where a table cuts their names: three CUTLASS kernels of the H800 trace read
as one 'void cutlass::device_kernel<dpsk::grouped_gemm:…' in `trace inspect`'s table (a newcomer's walk). Each
expected cut is written out by hand from the names' characters."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RunCli
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.untrusted import cuts_apart

TEMPLATE = "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::"  # 54 characters
PTP = TEMPLATE + "fp8_ptp128c::GemmKernel>(dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel::Params)"
DPTP = TEMPLATE + "fp8_dptp128c_acc::GemmKernel>(dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel::Params)"
GROUPED = TEMPLATE + "m_grouped_fp8_ptp128c::GemmKernel>(dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel"
GROUPED += "::Params)"
OTHER = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
# PTP parts from DPTP at character 58 ('fp8_' then p / d), from GROUPED at 54: its part starts 8 before 58; GROUPED
# parts from both at 54, so from 46; 16 + the ellipsis + 31 (30 and an ellipsis) = 48 characters each
APART = [
    "void cutlass::de…da::fp8_ptp128c::GemmKernel>(d…",
    "void cutlass::de…da::fp8_dptp128c_acc::GemmKern…",
    "void cutlass::de…::cuda::m_grouped_fp8_ptp128c:…",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesi…",  # cut alone: the plain cut
]


def test_names_cut_alike_keep_the_part_that_tells_them_apart() -> None:
    assert cuts_apart([PTP, DPTP, GROUPED, OTHER], 48) == APART
    assert all(len(cut) == 48 for cut in APART)
    same = cuts_apart([PTP, PTP], 48)  # one name twice is not two kernels: the plain cut
    assert same == [PTP[:47] + "…"] * 2
    assert cuts_apart(["short", "short too"], 48) == ["short", "short too"]


def test_the_inspect_table_shows_three_kernels_of_one_template_apart(run_cli: RunCli, tmp_path: Path) -> None:
    builder = TraceBuilder()
    for name in (PTP, DPTP, GROUPED):
        builder.add(KernelSpec(name, (100000, 30000, 1), (256, 1, 1)))  # mechanism A: each a row of the table
    trace = builder.write(tmp_path / "t.json")
    shown = run_cli("trace", "inspect", str(trace)).stdout
    for cut in APART[:3]:
        assert cut in shown
    assert "device_kernel<dpsk::grouped_gemm:…" not in shown
