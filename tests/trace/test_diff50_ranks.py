"""`warpwizard diff` of two rank directories: rank r against rank r (issue 50, "ranks by rank").

Summing a job's ranks hides a slow rank: one rank's GEMM 30% slower among twelve moves the summed kernel's numbers
by a fraction of that. Each expected number here comes from the trace files read with ``json.load``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import RunCli, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

GEMM = "void gemm_kernel<128>(float*)"
GEMM_US = [40.0, 41.0, 39.0, 40.5, 39.5, 40.0, 40.2, 39.8]
SLOW_RANK, RANKS = 7, 12


def _job(where: Path, ranks: list[int], *, slow: dict[int, float] | None = None) -> Path:
    """One trace per rank (``distributedInfo.rank``), eight GEMMs and eight adds each, shuffled file names."""
    where.mkdir()
    for rank in ranks:
        b = TraceBuilder()
        b.set_metadata("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": RANKS})
        for dur in GEMM_US:
            b.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=dur * (slow or {}).get(rank, 1.0)))
            b.add(KernelSpec("void add_kernel(float*)", (64, 1, 1), (128, 1, 1), dur=6.0))
        b.write(where / f"trace-{(rank * 5) % 17:02d}.json")  # the order of the files is not the ranks'
    return where


def _gpu_time_by_rank(where: Path) -> dict[int, float]:
    out = {}
    for file in where.iterdir():
        doc = json.loads(file.read_text())
        kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        out[doc["distributedInfo"]["rank"]] = sum(e["dur"] for e in kernels)
    return out


def _diff(run_cli: RunCli, before: Path, after: Path) -> tuple[int, dict[str, Any]]:
    result = run_cli("diff", str(before), str(after), "--json")
    assert result.returncode in (0, 1, 10), result.stderr
    return result.returncode, strict_json(result.stdout)


def test_one_slow_rank_among_twelve_is_found_rank_against_rank(run_cli: RunCli, tmp_path: Path) -> None:
    before = _job(tmp_path / "before", list(range(RANKS)))
    after = _job(tmp_path / "after", list(range(RANKS)), slow={SLOW_RANK: 1.3})
    code, data = _diff(run_cli, before, after)
    assert (code, data["verdict"]) == (1, "comparable")
    assert data["rank_regressions"] == 1 and len(data["ranks"]) == RANKS
    worst = data["ranks"][0]
    assert (worst["rank"], worst["regressions"], worst["worst"]) == (SLOW_RANK, 1, GEMM)
    b, a = _gpu_time_by_rank(before), _gpu_time_by_rank(after)
    for r in data["ranks"]:
        assert (r["before_gpu_us"], r["after_gpu_us"]) == (b[r["rank"]], a[r["rank"]])
    assert worst["change"] == (a[SLOW_RANK] - b[SLOW_RANK]) / b[SLOW_RANK]
    assert all(r["regressions"] == 0 and r["change"] == 0 for r in data["ranks"][1:])


def test_the_terminal_shows_the_worst_ten_ranks_not_every_rank(run_cli: RunCli, tmp_path: Path) -> None:
    before = _job(tmp_path / "before", list(range(RANKS)))
    after = _job(tmp_path / "after", list(range(RANKS)), slow={SLOW_RANK: 1.3})
    result = run_cli("diff", str(before), str(after))
    text = " ".join(result.stdout.split())
    assert "12 ranks compared rank by rank; 1 rank with a kernel regression; the worst 10:" in text
    table = result.stdout.split("the worst 10:", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("│") and line.split("│")[1].strip().isdigit()]
    assert len(rows) == 10 and rows[0].split("│")[1].strip() == str(SLOW_RANK)


def test_a_rank_on_one_side_only_is_not_comparable_and_named(run_cli: RunCli, tmp_path: Path) -> None:
    before = _job(tmp_path / "before", [0, 1, 2, 3])
    after = _job(tmp_path / "after", [0, 1, 2, 5])
    code, data = _diff(run_cli, before, after)
    assert (code, data["verdict"], data["ranks"], data["changes"]) == (10, "not comparable", [], [])
    ranks = next(f for f in data["factors"] if f["name"] == "ranks given")
    assert (ranks["before"], ranks["after"], ranks["effect"]) == ("4 (0-3)", "4 (0-2, 5)", "blocks")
    assert ranks["meaning"].startswith("rank 3 only in BEFORE; 5 only in AFTER")


def test_a_single_trace_a_side_has_no_rank_table(run_cli: RunCli, tmp_path: Path) -> None:
    before = _job(tmp_path / "before", [0])
    code, data = _diff(run_cli, before, before)
    assert (code, data["ranks"], data["rank_regressions"]) == (0, [], 0)
