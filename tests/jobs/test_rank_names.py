"""A rank comes from the trace (distributedInfo.rank) or from a rank-like file name, never from a GPU's model
number in the name: ``trace inspect`` of a folder of unrelated traces read h100-bert-small.json.gz as rank 100,
rtx2080ti-linear.json.gz as rank 2080 and mi250-rocm-minitoy.json.gz as rank 250 ("another job's").

The expected ranks come from tests/health_oracle.py's own reading of the contract (docs/health.md), which shares
no code with wizard/ranks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import health_oracle as oracle
from tests.conftest import TRACES, RunCli, needs_shared
from tests.helpers import inspect_json
from wizard.ranks import rank_in_name
from wizard.testing.traces import KernelSpec, TraceBuilder

NAMES = {
    # GPU models, dates and versions: no rank
    "h100-bert-small.json.gz": None,
    "rtx2080ti-linear.json.gz": None,
    "mi250-rocm-minitoy.json.gz": None,
    "mi300-bert-small.json.gz": None,
    "v100-resnet50-2021.pt.trace.json.gz": None,
    "nsys-mfu_2gpu_before.sqlite": None,
    "a100.json": None,
    "bert3.json": None,
    "trace7.json": None,
    "r9nano.json": None,
    "rank0of8.json": None,
    # tensorboard_trace_handler's default worker name is hostname_pid: the number is a pid
    "node01_41235.1700000000123.pt.trace.json": None,
    "node01_41235.1700000000123.pt.trace.json.gz": None,
    # rank-like names
    "rank3.json": 3,
    "rank_3.json": 3,
    "rank-3.json": 3,
    "RANK3.json": 3,
    "r3.json": 3,
    "job-r3.json.gz": 3,
    "3.json": 3,
    # a number at a stem's end is a step, a length or a model as often as a rank (a review of the rule above)
    "trace_3.json": None,
    "step_100.json": None,
    "bert_seq_512.json": None,
    "resnet_50.json": None,
    "faster_rcnn_r50_fpn_1x.json": None,
    "llama_bs_32.pt.trace.json": None,
    "h800-deepseek-train-rank0.json.gz": 0,
    "cpu-only-rank34.json.gz": 34,
    "worker1_step_12.1694128201556.pt.trace.json": 1,  # HTA's per-rank names (dlrm-2ranks)
    "rank5.1700000000123.pt.trace.json.gz": 5,  # tensorboard_trace_handler(worker_name=f"rank{rank}")
    "h100_rank7.json": 7,
    "rank٣.json": None,  # ASCII digits only
}
BOUNDED = ("rank99999999999.json", f"rank{1 << 20}.json")  # no rank outside [0, 2^20) (docs/security.md)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_a_rank_comes_only_from_a_rank_like_name(name: str) -> None:
    assert (rank_in_name(name), oracle.rank_of({}, name)) == (NAMES[name], NAMES[name])


@pytest.mark.parametrize("name", BOUNDED)
def test_a_rank_like_name_out_of_bounds_is_no_rank(name: str) -> None:
    assert oracle.rank_of({}, name) is not None and rank_in_name(name) is None


GEMM = KernelSpec("sm90_xmma_gemm_bf16", (64, 1, 1), (256, 1, 1))


def _trace(path: Path, info: dict[str, object]) -> Path:
    b = TraceBuilder()
    b.set_metadata("distributedInfo", info)
    b.add(GEMM)
    return b.write(path)


def test_a_gpu_name_is_unplaced_not_another_jobs(tmp_path: Path, run_cli: RunCli) -> None:
    """Two traces of a world of 2 that say no rank, named rank_0 and rank_1, and one named for its GPU: the
    GPU's number is no rank 100 "outside a world of 2", the trace is one whose rank is unknown."""
    directory = tmp_path / "job"
    directory.mkdir()
    for name in ("rank_0.json", "rank_1.json", "h100-extra.json"):
        _trace(directory / name, {"backend": "nccl", "world_size": 2})
    found = {c["check"]: c for c in inspect_json(run_cli, directory, status=1)["health"]}
    complete = found["ranks-complete"]
    assert complete["foreign"] == []
    assert complete["unplaced"] == ["h100-extra.json"]
    assert (complete["ranks"], complete["missing"]) == ([0, 1], [])


@needs_shared
def test_the_shared_traces_gpu_names_are_no_ranks(run_cli: RunCli) -> None:
    """The shared folder's unrelated traces: no GPU model number is a rank; the traces that say their rank (or are
    named rank0, rank34) keep it."""
    found = {c["check"]: c for c in inspect_json(run_cli, TRACES)["health"]}
    complete = found["ranks-complete"]
    said = " ".join(complete["foreign"]) + " " + complete["summary"]
    for number in ("rank 100 ", "rank 2080 ", "rank 250 ", "rank 300 ", "rank 2 "):
        assert number not in said
    assert {"h100-bert-small.json.gz", "rtx2080ti-linear.json.gz", "mi250-rocm-minitoy.json.gz"} <= set(
        complete["unplaced"]
    )
    assert any(f.startswith("cpu-only-rank34.json.gz") for f in complete["foreign"])  # its own world of 300
