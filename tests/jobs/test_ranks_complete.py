"""Issue 45 items 2 and 3: a rank directory whose ranks do not add up fails the gate (ranks-complete), and a cut
rank does not hide a straggler (rank-skew compares the ranks that can be compared and names the others).

Each planted job goes through the real CLI (``warpwizard trace inspect --json DIR``, the default ``--fail-on
warning``); the expected ranks are counted here from what was written, and the expected skew by
tests/health_oracle.py, which shares no code with wizard/trace/health/checks/.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests import health_oracle as oracle
from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.checks.ranks_complete import GROUPS, JobPlace, job_place

ALL_REDUCE = KernelSpec("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (4, 1, 1), (512, 1, 1))
GEMM = KernelSpec("sm90_xmma_gemm_bf16", (64, 1, 1), (256, 1, 1))
STEPS = 6


def rank_trace(
    path: Path, info: dict[str, Any] | None, *, late_us: float = 0.0, nccl: bool = True, cut_at_nccl: bool = False
) -> Path:
    """One rank's trace: STEPS steps of a GEMM then an all-reduce, 1 ms apart; ``late_us`` before the first
    step (a straggler); ``cut_at_nccl``: the file cut where its first all-reduce's events begin (its op), as a
    crash would: the first GEMM's op, launch and kernel whole, nothing of a collective."""
    b = TraceBuilder()
    if info is not None:
        b.set_metadata("distributedInfo", info)
    b.wait(late_us)
    for _ in range(STEPS):
        b.add(GEMM)
        if nccl:
            b.add(ALL_REDUCE)
        b.wait(1000)
    if not cut_at_nccl:
        return b.write(path)
    text = b.text()
    op = text.rindex('"cat": "cpu_op"', 0, text.index(ALL_REDUCE.name))  # the all-reduce's op: its first event
    return b.write(path, truncate_at=text.rindex("\n", 0, op) + 1)


def job(directory: Path, ranks: Sequence[int], world: int = 8, **per_rank: dict[str, Any]) -> Path:
    """One file per rank (``rank{N}.json``, each declaring rank N of ``world`` on NCCL); ``per_rank``:
    ``r5={"late_us": 3000}`` passes options to rank 5's trace."""
    directory.mkdir()
    for r in ranks:
        info = {"backend": "nccl", "rank": r, "world_size": world}
        rank_trace(directory / f"rank{r}.json", info, **per_rank.get(f"r{r}", {}))
    return directory


def inspect(run_cli: RunCli, directory: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    """The real CLI's exit status and the job's checks by id."""
    result = run_cli("trace", "inspect", "--json", str(directory))
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, {c["check"]: c for c in strict_json(result.stdout)["health"]}


def declared(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each file's distributedInfo, read here as JSON."""
    return [(p.name, json.loads(p.read_text())["distributedInfo"]) for p in sorted(directory.glob("*.json"))]


# -- item 2: a job whose ranks do not add up --------------------------------------------------------------


def test_a_missing_rank_fails_and_is_named(tmp_path: Path, run_cli: RunCli) -> None:
    ranks = job(tmp_path / "job", [r for r in range(8) if r != 5])
    code, found = inspect(run_cli, ranks)
    infos = declared(ranks)
    world = {info["world_size"] for _, info in infos}.pop()
    missing = sorted(set(range(world)) - {info["rank"] for _, info in infos})  # the second computation
    complete = found["ranks-complete"]
    assert (code, complete["status"], complete["count"]) == (1, "warning", len(missing))
    assert (complete["missing"], complete["missing_count"], complete["world_size"]) == ([5], 1, 8) == (
        missing, len(missing), world)  # fmt: skip
    assert complete["summary"] == "7 of 8 ranks: rank 5 missing"
    assert (complete["duplicated"], complete["foreign"], complete["unplaced"]) == ({}, [], [])
    # the triage does not call it healthy: it continues into rank-skew, which says what the job lacks
    triage = run_cli("run", "triage", "--set", "have=trace", "--set", f"trace_path={ranks}", "--defaults", "--json")
    conclusion = strict_json(triage.stdout)["conclusion"]
    assert conclusion["diagnosis"] == "rank-directory-incomplete", triage.stdout[-2000:]
    assert "(1 rank of a world of 8 without a trace)" in conclusion["summary"]


def test_eight_files_that_all_say_rank_1_fail(tmp_path: Path, run_cli: RunCli) -> None:
    directory = tmp_path / "job"
    directory.mkdir()
    for n in range(8):
        rank_trace(directory / f"trace{n}.json", {"backend": "nccl", "rank": 1, "world_size": 8})
    code, found = inspect(run_cli, directory)
    said = Counter(info["rank"] for _, info in declared(directory))
    duplicated = {str(r): n for r, n in said.items() if n > 1}
    missing = sorted(set(range(8)) - set(said))
    complete = found["ranks-complete"]
    assert (code, complete["status"]) == (1, "warning")
    assert (complete["duplicated"], complete["missing"]) == ({"1": 8}, [0, 2, 3, 4, 5, 6, 7]) == (duplicated, missing)
    assert complete["count"] == len(missing) + sum(n - 1 for n in said.values()) == 14
    assert complete["summary"] == "1 of 8 ranks: ranks 0, 2-7 missing; rank 1 in 8 traces"
    skew = found["rank-skew"]  # the ranks repeat: no skew to measure
    assert (skew["status"], skew["reason"]) == (
        "not_applicable",
        "the traces' ranks are unknown or repeated (no distributedInfo.rank and no rank in the file name)",
    )


def test_another_jobs_rank_by_world_size_or_backend_fails(tmp_path: Path, run_cli: RunCli) -> None:
    directory = job(tmp_path / "job", range(8))
    rank_trace(directory / "old-run-rank2.json", {"backend": "nccl", "rank": 2, "world_size": 4})
    rank_trace(directory / "gloo-rank6.json", {"backend": "gloo", "rank": 6, "world_size": 8})
    code, found = inspect(run_cli, directory)
    complete = found["ranks-complete"]
    assert (code, complete["status"], complete["count"]) == (1, "warning", 2)
    assert complete["foreign"] == [
        "gloo-rank6.json: backend gloo, not nccl",
        "old-run-rank2.json: world size 4, not 8",
    ]
    assert (complete["missing"], complete["duplicated"], complete["ranks"]) == ([], {}, list(range(8)))
    expected = oracle.ranks_complete([(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("*.json"))])
    assert expected["foreign"] == ["gloo-rank6.json", "old-run-rank2.json"] and expected["count"] == 2


def groups_of(rank: int, pairs: Sequence[Sequence[int]], world: int) -> list[dict[str, Any]]:
    """pg_config as PyTorch writes it (distributed_c10d._get_pg_config): the world, then this rank's groups."""
    world_group = {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": world,
                   "ranks": list(range(world))}  # fmt: skip
    mine = [p for p in pairs if rank in p]
    return [world_group] + [
        {"pg_name": str(n + 1), "pg_desc": "undefined", "backend_config": "cuda:nccl", "pg_size": len(p),
         "ranks": list(p)}
        for n, p in enumerate(mine)
    ]  # fmt: skip


def test_a_rank_of_another_process_group_layout_fails(tmp_path: Path, run_cli: RunCli) -> None:
    """Ranks 0-2 of a job with tensor-parallel pairs [0, 1], [2, 3]; rank 3's trace is of a run whose pairs were
    [0, 2], [1, 3]: same world size and backend, but rank 1 does not list rank 3's group, nor rank 3 rank 2's.
    Which of the two is another run's the traces cannot say: both are named."""
    directory = tmp_path / "job"
    directory.mkdir()
    here, there = [[0, 1], [2, 3]], [[0, 2], [1, 3]]
    for r in range(4):
        pairs = there if r == 3 else here
        info = {"backend": "nccl", "rank": r, "world_size": 4, "pg_count": 3, "pg_config": groups_of(r, pairs, 4)}
        rank_trace(directory / f"rank{r}.json", info)
    code, found = inspect(run_cli, directory)
    complete = found["ranks-complete"]
    assert (code, complete["status"]) == (1, "warning")
    assert complete["groups_disagree"] == [
        "rank2.json: its process group of ranks 2-3 is not rank 3's",
        "rank3.json: its process group of ranks 1, 3 is not rank 1's",
    ]
    assert (complete["missing"], complete["foreign"], complete["count"]) == ([], [], 2)
    assert "rank3.json: process groups disagree (its process group of ranks 1, 3 is not rank 1's)" in (
        complete["summary"])  # fmt: skip
    expected = oracle.ranks_complete([(p.name, json.loads(p.read_text())) for p in sorted(directory.glob("*.json"))])
    assert (expected["groups_disagree"], expected["count"]) == (["rank2.json", "rank3.json"], 2)


def test_a_complete_job_passes(tmp_path: Path, run_cli: RunCli) -> None:
    code, found = inspect(run_cli, job(tmp_path / "job", range(8)))
    complete = found["ranks-complete"]
    assert (code, complete["status"], complete["count"], complete["ranks"]) == (0, "ok", 0, list(range(8)))
    assert complete["summary"] == "all 8 ranks of the job, each once"
    assert found["rank-skew"]["status"] == "info"  # every rank started together: 0 µs apart


def test_a_single_trace_is_no_job(tmp_path: Path, run_cli: RunCli) -> None:
    """One rank's trace, given alone: its world of 8 is not this run's question (a user inspects rank 0)."""
    path = rank_trace(tmp_path / "rank0.json", {"backend": "nccl", "rank": 0, "world_size": 8})
    complete = next(c for c in inspect_json(run_cli, path, status=0)["health"] if c["check"] == "ranks-complete")
    assert complete["status"] == "not_applicable"
    # nothing counted, so nothing missing: '7 missing' beside an empty list read as a fault (a newcomer's walk)
    assert (complete["world_size"], complete["missing"], complete["missing_count"]) == (8, [], 0)


@needs_shared
def test_dlrm_2ranks_is_two_ranks_of_eight() -> None:
    """HTA's dlrm traces are ranks 0 and 1 of a job whose distributedInfo says world_size 8: ranks 2-7 missing.
    (The gate said nothing of them before; rank-skew over the two is as it was: info, 17 µs median.)"""
    from tests.conftest import run_inprocess

    directory = TRACES / "dlrm-2ranks"
    found = {c["check"]: c for c in inspect_json(run_inprocess, directory, status=1)["health"]}
    infos = [json.loads(p.read_text())["distributedInfo"] for p in sorted(directory.glob("*.json"))]
    missing = sorted(set(range(infos[0]["world_size"])) - {i["rank"] for i in infos})
    complete = found["ranks-complete"]
    assert (complete["status"], complete["missing"], complete["world_size"]) == ("warning", missing, 8)
    assert missing == [2, 3, 4, 5, 6, 7]
    skew = found["rank-skew"]
    assert (skew["status"], skew["median_us"], skew["left_out"]) == ("info", 17.0, {})
    # where only these ranks were profiled on purpose, the documented way out passes the gate
    assert run_inprocess("trace", "inspect", "--skip-checks", "ranks-complete", str(directory)).returncode == 0


# -- item 3: a cut rank beside a straggler ----------------------------------------------------------------


def test_a_cut_rank_does_not_hide_a_straggler(tmp_path: Path, run_cli: RunCli) -> None:
    """Rank 5 starts 3 ms late; rank 3's trace is cut before its first collective. Before, the instances every
    rank has were none: "ok", exit 0. Now rank 3 is left out and named, and the skew of the other seven found."""
    ranks = job(tmp_path / "job", range(8), r5={"late_us": 3000.0}, r3={"cut_at_nccl": True})
    code, found = inspect(run_cli, ranks)
    skew = found["rank-skew"]
    compared = [(r, oracle.load_events(ranks / f"rank{r}.json")[0]) for r in range(8) if r != 3]
    want = oracle.rank_skew(compared)  # the second computation, over the seven uncut ranks
    assert (code, skew["status"]) == (1, "warning")
    assert skew["left_out"] == {"3": "its trace is cut short"}
    assert skew["ranks"] == want["ranks"] == [0, 1, 2, 4, 5, 6, 7]
    assert (skew["count"], skew["median_us"], skew["max_us"]) == (want["count"], want["median_us"], want["max_us"])
    assert (want["count"], want["median_us"]) == (STEPS, 3000.0)
    assert skew["last_by_rank"] == want["last_by_rank"] == {"5": STEPS}
    assert "rank 5 started last 6 times; rank 3 not compared: its trace is cut short" in skew["summary"]
    assert found["ranks-complete"]["status"] == "ok"  # rank 3 is there, cut: the per-trace checks say so


def test_a_rank_with_no_collective_is_named_and_fails(tmp_path: Path, run_cli: RunCli) -> None:
    """Rank 6 recorded no NCCL kernel where seven ranks did (hung before its first all-reduce): it never reached
    what the others waited in. Before, the collectives on every rank were none: "ok"."""
    code, found = inspect(run_cli, job(tmp_path / "job", range(8), r6={"nccl": False}))
    skew = found["rank-skew"]
    assert (code, skew["status"], skew["count"]) == (1, "warning", 1)
    assert skew["left_out"] == {"6": "no NCCL kernel"}
    assert skew["summary"].startswith(
        "rank 6 recorded no NCCL kernel where the other ranks did; 6 collectives across 7"
    )


# -- the per-trace record: distributedInfo read as PyTorch writes it, bounded --------------------------------


@pytest.mark.parametrize(
    ("info", "place"),
    [
        ({"backend": "nccl", "rank": 3, "world_size": 8}, JobPlace(3, 8, "nccl")),
        ({"rank": True, "world_size": "8", "backend": 7}, JobPlace()),  # a bool, a str, a number: no value
        ({"rank": 1, "world_size": 0}, JobPlace(1)),
        ({"rank": 1, "world_size": 2**40}, JobPlace(1)),
        ({"rank": 1, "world_size": 4, "pg_config": [{"ranks": [1, 9]}, {"ranks": [0, 2]}, "x", {"ranks": [1, 3]}]},
         JobPlace(1, 4, None, ((1, 3),))),  # rank 9 is outside the world; [0, 2] does not hold rank 1
        ([1, 2], JobPlace()),
    ],
)  # fmt: skip
def test_job_place_takes_only_what_pytorch_writes(info: Any, place: JobPlace) -> None:
    assert job_place({"distributedInfo": info}) == place


def test_job_place_reads_a_bounded_number_of_groups() -> None:
    config = [{"ranks": [0, n]} for n in range(1, 100_000)]
    place = job_place({"distributedInfo": {"rank": 0, "world_size": 1 << 19, "pg_config": config}})
    assert len(place.groups) == GROUPS


def test_a_world_of_a_million_ranks_is_counted_not_listed() -> None:
    """Three traces that say world_size 2^20 - 1 (the largest a rank may be): the missing ranks are counted, the
    first 64 named, and the summary stays one line."""
    from wizard.trace.health.checks.ranks_complete import NAMED, Trace, ranks_complete

    world = (1 << 20) - 1
    traces = [Trace(f"rank{r}.json", r, JobPlace(r, world, "nccl")) for r in (0, 5, 7)]
    check = ranks_complete(traces)
    expected = [r for r in range(NAMED + 3) if r not in (0, 5, 7)][:NAMED]
    assert (check.count, check.details["missing_count"], check.details["missing"]) == (world - 3, world - 3, expected)
    assert check.summary == f"3 of {world} ranks: ranks 1-4, 6, 8-66 and {world - 3 - NAMED} more missing"


def test_many_repeated_ranks_are_said_in_one_line() -> None:
    from wizard.trace.health.checks.ranks_complete import SAID, Trace, ranks_complete

    traces = [Trace(f"t{n}.json", n % 20, JobPlace(n % 20, 20, "nccl")) for n in range(40)]  # each rank twice
    check = ranks_complete(traces)
    assert check.details["duplicated"] == {str(r): 2 for r in range(20)} and check.count == 20
    assert check.summary.endswith(f"rank {SAID - 1} in 2 traces; {20 - SAID} more")
