"""kernels-missing where nothing was dropped (issue 45, items 7 and 8), each status and count against a second
computation here: plain JSON (tests/health_oracle.py, written from docs/health.md's text) or plain SQL.

Item 7, range-profiler traces recorded before May 2025. Kineto's CUPTI range profiler writes one
``cuda_profiler_range`` event per range, named after the kernel in auto-range mode, with one arg per counter
(pytorch/kineto at cd8d3190^ = bbde3430, libkineto/src/CuptiRangeProfiler.cpp:143-187, addRangeEvents: the ranges
are ``result.rangeVals`` in order, ``use_kernel_as_range ? demangle(profiler->getKernelNames()[ridx])``; times are
the span split evenly, line 166). Only cd8d3190 (2025-05-31, "Record dynamic device kernel launches in libkineto")
added ``event->addMetadata("correlation", correlationId)`` (CuptiRangeProfiler.cpp:190 at cd8d3190, 0 where the
kernel registry has no entry). Before bbde3430 (2025-05-29) the range profiler refused to run beside kernel,
memcpy or memset activities (CuptiRangeProfiler.cpp:266-276 at bbde3430^: "cannot run in combination with other
cuda activity profilers"), so such a trace has ranges and launch calls and no kernel event: HTA's
tests/data/cupti_profiler trace has 77 ranges without ``correlation`` for 77 cudaLaunchKernel calls.

Item 8, a window cut while the GPU ran behind (nsys-ai's h100_2gpu_1s.sqlite: a 1 s window, the GPU 243-439 ms
behind, every launch before ~717 ms with its kernel, none after): kernels queued behind that backlog would run
after the profiler stopped. The rule (docs/health.md, kernels-missing): a missing launch is ``after_window`` when
it starts after its process's last launch that has its kernel and no earlier than the window's end minus the
largest call-start-to-kernel-end time of that process's launches that have their kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests import health_oracle as oracle
from tests.conftest import RunCli, sql_rows, strict_json
from wizard.testing.nsys import Call, Kernel, write_export
from wizard.testing.traces import KernelSpec, TraceBuilder


def spec(name: str = "k", **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), **kw)


def inspect(run_cli: RunCli, path: Path) -> tuple[int, dict[str, Any]]:
    """The gate: `trace inspect --json` with the default --fail-on; its exit code and kernels-missing."""
    result = run_cli("trace", "inspect", "--json", str(path))
    assert result.returncode in (0, 1), result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    found = next(c for c in report["health"] if c["check"] == "kernels-missing")
    return result.returncode, found


def oracle_of(path: Path) -> dict[str, Any]:
    events, _ = oracle.load_events(path)
    return oracle.kernels_missing(events)


# -- item 7 --------------------------------------------------------------------------------------------------


def ranged_before_cd8d3190(d: Path, launches: int, dropped: int = 0) -> Path:
    """``launches`` launches measured by the range profiler as Kineto wrote them before cd8d3190 (no correlation
    on the ranges, no kernel events), then ``dropped`` launches with neither kernel nor range."""
    b = TraceBuilder()
    b.add_ranged(spec("gemm", repeat=launches), {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 4096.0},
                 correlated=False)  # fmt: skip
    if dropped:
        b.add(spec("lost", kernel=False, repeat=dropped))
        b.wait(100_000.0)  # the lost launches well before the window's last 1%
        b.add_cpu_op("aten::empty")
    return b.write(d / f"ranged-{launches}-{dropped}.json")


def test_ranges_without_ids_are_the_launches_in_order(run_cli: RunCli, tmp_path: Path) -> None:
    """HTA's cupti_profiler trace: 77 ranges without ids for 77 launches without a kernel: measured, not dropped."""
    path = ranged_before_cd8d3190(tmp_path, 77)
    events = json.loads(path.read_text())["traceEvents"]
    ranges = [e for e in events if e["cat"] == "cuda_profiler_range"]
    assert len(ranges) == 77 and not any("correlation" in e["args"] for e in ranges)
    assert not any(e["cat"] == "kernel" for e in events)
    code, missing = inspect(run_cli, path)
    truth = oracle_of(path)
    assert (truth["count"], truth["profiler_ranges"], truth["explained"]) == (77, 77, 77)
    assert (missing["status"], missing["count"], missing["profiler_ranges"]) == ("info", 77, 77)
    assert missing["summary"].startswith("a CUPTI range-profiler trace: 77 launches of 77 have a cuda_profiler_range")
    assert code == 0


def test_launches_beyond_the_ranges_are_still_dropped(run_cli: RunCli, tmp_path: Path) -> None:
    """5 ranges without ids and 7 launches without a kernel: the first 5 in launch order were measured; the last 2
    had neither a kernel nor a range: dropped, an error naming them."""
    path = ranged_before_cd8d3190(tmp_path, 5, dropped=2)
    code, missing = inspect(run_cli, path)
    truth = oracle_of(path)
    assert (truth["count"], truth["profiler_ranges"], truth["explained"]) == (7, 5, 5)
    assert (missing["status"], missing["count"], missing["profiler_ranges"]) == ("error", 7, 5)
    assert [e["correlation"] for e in missing["examples"]] == [105, 106]
    assert code == 1


def test_ranges_without_ids_beside_kernel_events_explain_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    """Between bbde3430 (kernel activities allowed beside the range profiler) and cd8d3190 (ids on ranges), a trace
    has kernels and ranges without ids: a launch without its kernel there was dropped, whatever the ranges."""
    b = TraceBuilder()
    b.add(spec("gemm", repeat=4))
    b.add_ranged(spec("gemm"), correlated=False)  # a launch with a range and no kernel: nothing says it was measured
    b.wait(100_000.0)
    b.add_cpu_op("aten::empty")
    path = b.write(tmp_path / "ranged-beside-kernels.json")
    code, missing = inspect(run_cli, path)
    truth = oracle_of(path)
    assert (truth["count"], truth["profiler_ranges"], truth["explained"]) == (1, 0, 0)
    assert (missing["status"], missing["count"], missing["profiler_ranges"]) == ("error", 1, 0)
    assert code == 1


# -- item 8: a Kineto trace ----------------------------------------------------------------------------------


def gpu_behind(d: Path, launches: int = 300, kept: int = 200) -> Path:
    """A launch every 100 µs, each kernel 150 µs back to back on one stream: the GPU falls 50 µs further behind at
    every launch. The profiler stops after the last launch: only the first ``kept`` kernels ran by then."""
    b = TraceBuilder()
    for i in range(launches):
        b.add(spec(f"step_{i}", dur=150.0, kernel_delay=27.0 + 50.0 * i, kernel=i < kept))
    return b.write(d / "behind.json")


def test_a_window_cut_while_the_gpu_ran_behind_is_info(run_cli: RunCli, tmp_path: Path) -> None:
    """100 of 300 launches have no kernel, all after the 200th (the last with one), which waited 10.1 ms from its
    call to its kernel's end: 98 after the window, 2 in its last 1% (the window is 30.03 ms: launches 298, 299)."""
    path = gpu_behind(tmp_path)
    code, missing = inspect(run_cli, path)
    truth = oracle_of(path)
    assert (truth["count"], truth["after_window"], truth["in_last_1pct"], truth["explained"]) == (100, 98, 2, 100)
    assert (missing["status"], missing["count"], missing["after_window"], missing["in_last_1pct"]) == (
        "info", 100, 98, 2,
    )  # fmt: skip
    assert missing["max_backlog_us"] == truth["max_backlog_us"]
    assert missing["summary"].startswith("100 launches of 300 have no kernel: made after the last launch that has")
    assert code == 0


def test_a_drop_in_the_middle_of_a_backlog_is_still_an_error(run_cli: RunCli, tmp_path: Path) -> None:
    """The same, with launch 100's kernel lost too: it lies before launches that have their kernel."""
    b = TraceBuilder()
    for i in range(300):
        b.add(spec(f"step_{i}", dur=150.0, kernel_delay=27.0 + 50.0 * i, kernel=i < 200 and i != 100))
    path = b.write(tmp_path / "behind-dropped.json")
    code, missing = inspect(run_cli, path)
    truth = oracle_of(path)
    assert (truth["count"], truth["after_window"], truth["explained"]) == (101, 98, 100)
    assert (missing["status"], missing["count"], missing["after_window"]) == ("error", 101, 98)
    assert missing["examples"][0]["correlation"] == 200  # launch 100 (ids from 100)
    assert code == 1


# -- item 8: an Nsight Systems export of two processes -------------------------------------------------------


def sql_after_window(path: Path) -> dict[str, int]:
    """The rule in SQL: per process (globalTid bits 24-47), its launches with a kernel (same process, same id), the
    last one's start and the largest end-minus-call-start; missing launches after both bounds, outside the last 1%."""
    matched = """SELECT (r.globalTid >> 24) & 16777215 AS pid, r.start AS start, k.end AS kend
        FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
          AND ((k.globalPid >> 24) & 16777215) = ((r.globalTid >> 24) & 16777215)"""
    missing = """SELECT (r.globalTid >> 24) & 16777215 AS pid, r.start AS start FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        WHERE NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.correlationId = r.correlationId
          AND ((k.globalPid >> 24) & 16777215) = ((r.globalTid >> 24) & 16777215))"""
    window = """SELECT min(s), max(e) FROM (SELECT start AS s, end AS e FROM CUPTI_ACTIVITY_KIND_RUNTIME
        UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL)"""
    (low, high), = sql_rows(path, window)  # fmt: skip
    cut = high - 0.01 * (high - low)
    (count, late, after), = sql_rows(path, f"""
        WITH m AS ({matched}), x AS ({missing}),
             p AS (SELECT pid, max(start) AS last, max(kend - start) AS backlog FROM m GROUP BY pid)
        SELECT count(*), total(x.start >= {cut}),
               total(x.start < {cut} AND x.start > p.last AND x.start >= {high} - p.backlog)
        FROM x LEFT JOIN p ON p.pid = x.pid""")  # fmt: skip
    return {"count": int(count), "in_last_1pct": int(late), "after_window": int(after)}


def two_gpus(d: Path, *, kernel_ns: tuple[int, int], keep_until_ns: int, lost: tuple[int, ...] = ()) -> Path:
    """Two processes, one GPU each, launching every 300 µs for 1 s; process 1's kernels take ``kernel_ns[0]``,
    process 2's ``kernel_ns[1]``, back to back. Kernels that end after ``keep_until_ns`` are not in the export
    (the capture stopped), nor are those of the launches in ``lost`` (process 1's launch numbers)."""
    calls, kernels = [], []
    for p, (pid, dur) in enumerate(zip((101, 202), kernel_ns, strict=True)):
        free = 0
        for i in range(3334):
            at = 300_000 * i + 1_000 * p
            corr = 1_000 + i
            calls.append(Call(at, at + 5_000, corr, pid=pid, tid=pid))
            start = max(at + 8_000, free)
            free = start + dur
            if free <= keep_until_ns and not (p == 0 and i in lost):
                kernels.append(Kernel(start, free, corr, pid=pid, device=p))
    return write_export(d / "two-gpus.sqlite", kernels, calls)


def test_two_gpus_behind_at_the_window_end_are_info(run_cli: RunCli, tmp_path: Path) -> None:
    """As h100_2gpu_1s: a 1 s window, the GPUs 400 and 330 ms behind at its end: no launch after the last one with
    a kernel is a drop; the SQL's rule counts them all."""
    path = two_gpus(tmp_path, kernel_ns=(500_000, 450_000), keep_until_ns=1_000_200_000)
    truth = sql_after_window(path)
    assert truth["count"] > 2_000 and truth["after_window"] + truth["in_last_1pct"] == truth["count"]
    code, missing = inspect(run_cli, path)
    assert (missing["status"], missing["count"], missing["after_window"], missing["in_last_1pct"]) == (
        "info", truth["count"], truth["after_window"], truth["in_last_1pct"],
    )  # fmt: skip
    assert code == 0


def test_a_gpu_that_kept_up_lost_its_tail(run_cli: RunCli, tmp_path: Path) -> None:
    """Kernels of 100 µs for launches 300 µs apart: the GPU kept up (a backlog of 108 µs), so kernels missing from
    600 ms on were dropped, not queued: an error, with as few after the window as the SQL finds."""
    path = two_gpus(tmp_path, kernel_ns=(100_000, 100_000), keep_until_ns=600_000_000)
    truth = sql_after_window(path)
    assert truth["count"] > 2_000 and truth["after_window"] == 0
    code, missing = inspect(run_cli, path)
    assert (missing["status"], missing["count"], missing["after_window"], missing["in_last_1pct"]) == (
        "error", truth["count"], 0, truth["in_last_1pct"],
    )  # fmt: skip
    assert code == 1


def test_a_drop_before_the_last_kernel_is_not_the_window(run_cli: RunCli, tmp_path: Path) -> None:
    """The backlog of the first test, and 3 of process 1's kernels lost mid-window: those 3 are dropped."""
    path = two_gpus(tmp_path, kernel_ns=(500_000, 450_000), keep_until_ns=1_000_200_000, lost=(10, 500, 1_000))
    truth = sql_after_window(path)
    assert truth["count"] - truth["after_window"] - truth["in_last_1pct"] == 3
    code, missing = inspect(run_cli, path)
    assert (missing["status"], missing["count"], missing["after_window"]) == (
        "error", truth["count"], truth["after_window"],
    )  # fmt: skip
    assert sorted(e["correlation"] for e in missing["examples"])[:3] == [1_010, 1_500, 2_000]
    assert code == 1
