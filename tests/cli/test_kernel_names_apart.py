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
# PTP parts from DPTP at character 58 ('fp8_' then p / d), from GROUPED at 54: shown through 58 and 12 more, then
# the ellipsis (72 characters); DPTP the same; GROUPED parts from both at 54 (68 characters)
APART = [
    "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::Gemm…",
    "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc:…",
    "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8…",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesi…",  # cut alone: the plain cut
]
# two pairs whose plain cuts differ (…backwa… / …forwar…) and whose members differ past the cut: a start and a
# window would show backward and forward alike; each is shown through where it parts from its kin
SOFTMAX = [
    f"void (anonymous namespace)::softmax_warp_{d}<float, float, float, 10, {f}, false>(float*, float const*, int)"
    for d in ("backward", "forward")
    for f in ("false", "true")
]
SOFTMAX_APART = [
    "void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, false, false>…",
    "void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, true, false>(…",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>…",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(…",
]


def test_names_cut_alike_are_cut_past_where_they_part() -> None:
    assert cuts_apart([PTP, DPTP, GROUPED, OTHER], 48) == APART
    assert cuts_apart(SOFTMAX, 48) == SOFTMAX_APART
    assert cuts_apart([PTP, PTP], 48) == [PTP[:47] + "…"] * 2  # one name twice is not two kernels: the plain cut
    assert cuts_apart(["short", "short too"], 48) == ["short", "short too"]


def test_names_that_part_past_four_limits_show_their_start_and_where_they_part() -> None:
    far = ["x" * 300 + "A" + "t" * 300, "x" * 300 + "B" + "t" * 300]  # alike for 300 characters
    shown = cuts_apart(far, 48)
    # the first 16, an ellipsis, then from 8 before where they part, cut at 4 x 48 in all
    assert shown == ["x" * 16 + "…" + "x" * 8 + c + "t" * 165 + "…" for c in "AB"]  # 16 + 1 + 8 + 1 + 165 + 1
    assert all(len(s) == 192 for s in shown)


def _kernel_cells(shown: str) -> list[str]:
    """The table's kernel column, a row's lines joined without their blanks (rich breaks a long name at a blank,
    or within a word, to fit the column)."""
    rows: list[str] = []
    for line in shown.splitlines():
        cells = line.split("│")
        if len(cells) < 4:
            continue
        if cells[1].strip():  # a mechanism: a new row
            rows.append("")
        if rows:
            rows[-1] += cells[2].replace(" ", "")
    return rows


def test_the_inspect_table_shows_three_kernels_of_one_template_apart(run_cli: RunCli, tmp_path: Path) -> None:
    builder = TraceBuilder()
    for name in (PTP, DPTP, GROUPED):
        builder.add(KernelSpec(name, (100000, 30000, 1), (256, 1, 1)))  # mechanism A: each a row of the table
    trace = builder.write(tmp_path / "t.json")
    cells = _kernel_cells(run_cli("trace", "inspect", str(trace)).stdout)
    assert sorted(c for c in cells if c.startswith("voidcutlass")) == sorted(a.replace(" ", "") for a in APART[:3])
