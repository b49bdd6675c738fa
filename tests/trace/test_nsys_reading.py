"""Nsight Systems exports read right (issue 45, item 9): calls, overhead records and per-launch true values, each
against plain SQL written here (sqlite3 queries sharing no code with wizard/trace/read/nsys.py), on exports the
builder writes with real nsys column names (wizard/testing/nsys.py) and on the real exports in ../shared/traces.

What the tests lean on, from NVIDIA's own text:
- ENUM_NSYS_EVENT_CLASS (Nsight Systems Analysis Guide, "SQLite Schema Event Values", CUDA Event Class Values; the
  same table ships in every real export: ``SELECT * FROM ENUM_NSYS_EVENT_CLASS``): 0 TRACE_PROCESS_EVENT_CUDA_RUNTIME,
  1 TRACE_PROCESS_EVENT_CUDA_DRIVER, 67 TRACE_PROCESS_EVENT_CUDABACKTRACE. Only 0 and 1 are API calls; a backtrace
  row repeats its call's interval and correlation id.
- nsys 2020.1's exporter documentation lists CUPTI_ACTIVITY_KIND_RUNTIME without ``eventClass`` (start, end,
  globalTid, correlationId, nameId, returnValue): a column a table lacks is a real schema, not damage.
- Rows in no promised order: the exporter creates no indexes or constraints (Nsight Systems 2021.5 exporter
  documentation, "SQLite Export Schema Reference"); issue 45 quotes the 2025.6 release notes (rows are not exported
  in timestamp order), which the stored corpus does not hold: nothing here relies on either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, CliResult, health_check, needs_shared, sql_rows, strict_json
from wizard.testing.nsys import Call, Kernel, Overhead, Range, write_export

RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx")
REAL = [
    TRACES / "nsys-mock.sqlite",
    TRACES / "nsys-mfu_2gpu_before.sqlite",
    TRACES / "pairs" / "nsys-mfu-2gpu-before-after" / "before.sqlite",
    TRACES / "pairs" / "nsys-mfu-2gpu-before-after" / "after.sqlite",
]


# -- the second reading: plain SQL ------------------------------------------------------------------------------


def _columns(path: Path, table: str) -> set[str]:
    return {row[1] for row in sql_rows(path, f"PRAGMA table_info({table})")}


def _tables(path: Path) -> set[str]:
    return {row[0] for row in sql_rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def _calls_where(path: Path, alias: str = "") -> str:
    """The API calls of the runtime table: eventClass 0 or 1, every row where the table has no eventClass."""
    return f"{alias}eventClass IN (0, 1)" if "eventClass" in _columns(path, RUNTIME) else "1"


def _launch_where(path: Path) -> str:
    names = " OR ".join(f"s.value = '{n}' OR s.value LIKE '{n}\\_v%' ESCAPE '\\'" for n in LAUNCH_NAMES)
    return f"({names})"


def sql_calls(path: Path) -> int:
    return int(sql_rows(path, f"SELECT count(*) FROM {RUNTIME} WHERE {_calls_where(path)}")[0][0])


def sql_launches(path: Path) -> list[tuple[Any, ...]]:
    """(start, correlationId or NULL) of every launch call."""
    corr = "r.correlationId" if "correlationId" in _columns(path, RUNTIME) else "NULL"
    return sql_rows(
        path,
        f"SELECT r.start, {corr} FROM {RUNTIME} r JOIN StringIds s ON s.id = r.nameId "
        f"WHERE {_calls_where(path, 'r.')} AND {_launch_where(path)}",
    )


def sql_window(path: Path) -> tuple[int, int]:
    """The window in ns: every kernel, copy, set, API call and NVTX range (push/pop, start/end)."""
    parts = []
    for table, where in (
        ("CUPTI_ACTIVITY_KIND_KERNEL", "1"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "1"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "1"),
        (RUNTIME, _calls_where(path)),
        ("NVTX_EVENTS", "eventType IN (59, 60, 70, 71)"),
    ):
        if table in _tables(path):
            end = "max(coalesce(end, start), start)" if "end" in _columns(path, table) else "start"
            parts.append(f"SELECT start AS s, {end} AS e FROM {table} WHERE {where}")
    low, high = sql_rows(path, f"SELECT min(s), max(e) FROM ({' UNION ALL '.join(parts)})")[0]
    return int(low), int(high)


def sql_overhead(path: Path) -> tuple[int, float, float]:
    """Overhead rows of both tables; their ns inside the window and outside it."""
    low, high = sql_window(path)
    rows = " UNION ALL ".join(
        f"SELECT start, end FROM {t}"
        for t in ("PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD")
        if t in _tables(path)
    )
    if not rows:
        return 0, 0.0, 0.0
    n, inside, whole = sql_rows(
        path,
        f"SELECT count(*), total(max(min(end, {high}) - max(start, {low}), 0)), total(max(end - start, 0)) "
        f"FROM ({rows})",
    )[0]
    return int(n), float(inside), float(whole) - float(inside)


def sql_true_values(path: Path) -> dict[int, tuple[float, float]]:
    """Per kernel (by correlation id): the whole grid's blocks and warps per SM on the export's GPU, as Kineto
    defines them (threads / 32, not whole warps: ../shared/docs/kineto-metrics.md); nsys prints none, they follow
    from grid, block and TARGET_INFO_GPU's smCount."""
    if "TARGET_INFO_GPU" not in _tables(path):
        return {}
    rows = sql_rows(
        path,
        "SELECT k.correlationId, 1.0 * k.gridX * k.gridY * k.gridZ / g.smCount, "
        "1.0 * k.gridX * k.gridY * k.gridZ * k.blockX * k.blockY * k.blockZ / 32 / g.smCount "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN TARGET_INFO_GPU g ON g.cuDevice = k.deviceId",
    )
    return {int(c): (float(b), float(w)) for c, b, w in rows}


# -- what warpwizard says ---------------------------------------------------------------------------------------


def _report(run_cli: Any, path: Path) -> dict[str, Any]:
    result: CliResult = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    assert result.status == 0, result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    assert isinstance(report, dict)
    return report


def _read_calls(path: Path) -> int:
    from wizard.trace.read.nsys import read_nsys

    return len(read_nsys(path).runtime)


def _launch_values(path: Path) -> dict[int, tuple[float | None, float | None]]:
    import wizard

    found = wizard.inspect_traces(str(path), launches="all", jobs=1).launches
    return {int(k.correlation): (k.true_blocks_per_sm, k.true_warps_per_sm) for k in found if k.correlation is not None}


def _agree(run_cli: Any, path: Path) -> dict[str, Any]:
    """Every count the reader gives equals the SQL's; the report, for more."""
    report = _report(run_cli, path)
    assert _read_calls(path) == sql_calls(path)
    launches = sql_launches(path)
    missing = health_check(report, "kernels-missing")
    assert missing["launches"] == len(launches)
    assert missing["no_correlation"] == sum(1 for _, corr in launches if corr is None)
    overhead = health_check(report, "profiler-overhead")
    n, inside_ns, outside_ns = sql_overhead(path)
    assert overhead["count"] == n
    assert overhead.get("overhead_us", 0.0) == pytest.approx(inside_ns / 1000, abs=1e-6)
    assert overhead.get("outside_us", 0.0) == pytest.approx(outside_ns / 1000, abs=1e-6)
    low, high = sql_window(path)
    if n:
        assert overhead["window_us"] == pytest.approx((high - low) / 1000, abs=1e-6)
    truth = sql_true_values(path)
    values = _launch_values(path)
    assert values.keys() == truth.keys()
    for corr, (blocks, warps) in truth.items():
        assert list(values[corr]) == [pytest.approx(blocks), pytest.approx(warps)], corr
    return report


# -- planted exports --------------------------------------------------------------------------------------------


def _export(tmp_path: Path, name: str, **kw: Any) -> Path:
    """One process: 5 launches (the 5th without its kernel), a copy call and a driver launch between them, an op
    around each launch, and 4 overhead records: a buffer flush and module loading inside the window, nsys's
    initialisation before it and a flush after it."""
    calls, kernels, ranges = [], [], []
    for i in range(1, 6):
        at = 10_000 * i
        calls.append(Call(at, at + 3_000, 100 + i))
        calls.append(Call(at + 4_000, at + 4_500, 200 + i, name="cudaMemcpyAsync_v3020"))
        if i < 5:
            kernels.append(Kernel(at + 5_000, at + 8_000, 100 + i, grid=(64 * i, 2, 1), block=(96, 2, 1)))
        ranges.append(Range(at - 500, at + 3_500, f"aten::mm, seq = {i}, op_id = {i}, sizes = [[2, 2]]"))
    calls.append(Call(58_000, 58_400, 300, name="cuLaunchKernel", driver=True))
    kernels.append(Kernel(58_500, 59_000, 300, grid=(7, 1, 1), block=(33, 1, 1)))
    overheads = [
        Overhead(21_000, 22_500),
        Overhead(31_000, 37_000, "Runtime Triggered Module Loading", kind=6, cupti=True, correlation=103),
        Overhead(1_000, 9_000, "CUDA profiling initialization", kind=0),
        Overhead(58_000, 70_000, "CUDA profiling data flush on process exit", kind=0),  # half inside
    ]
    return write_export(tmp_path / name, kernels, calls, ranges, overheads=overheads, **kw)


@pytest.mark.parametrize(
    ("label", "kw"),
    [
        ("plain", {}),
        ("backtraces", {"backtraces": True}),
        ("unsorted", {"shuffle": 7}),
        ("no-eventClass", {"drop": {RUNTIME: ["eventClass"]}}),  # nsys 2020.1's runtime table
        ("no-correlationId", {"drop": {RUNTIME: ["correlationId"]}}),
        ("all-three", {"backtraces": True, "shuffle": 3, "drop": {RUNTIME: ["globalTid"]}}),
    ],
)
def test_the_reader_counts_what_plain_sql_counts(run_cli: Any, tmp_path: Path, label: str, kw: dict[str, Any]) -> None:
    path = _export(tmp_path, f"{label}.sqlite", **kw)
    report = _agree(run_cli, path)
    missing = health_check(report, "kernels-missing")
    if label == "no-correlationId":  # nothing to match a kernel by: every launch is counted apart, none missing
        assert (missing["launches"], missing["no_correlation"], missing["count"]) == (6, 6, 0)
    else:  # 5 runtime launches and 1 driver one; the 5th runtime launch (id 105) lost its kernel
        assert (missing["launches"], missing["no_correlation"], missing["count"]) == (6, 0, 1)
        assert [e["correlation"] for e in missing["examples"]] == [105]
    assert _read_calls(path) == 11  # never 22: a backtrace row is not a call


def test_backtrace_rows_double_nothing(run_cli: Any, tmp_path: Path) -> None:
    """As pipit's saxpy export (5 launches in 10 rows, once read as 10 launch calls): here 11 calls (6 of them
    launches), each with a backtrace row beside it, 22 rows; read as 11 calls and 6 launches."""
    path = _export(tmp_path, "bt.sqlite", backtraces=True)
    assert sql_rows(path, f"SELECT count(*) FROM {RUNTIME}")[0][0] == 22
    assert sql_rows(path, f"SELECT count(*) FROM {RUNTIME} WHERE eventClass = 67")[0][0] == 11
    assert health_check(_report(run_cli, path), "kernels-missing")["launches"] == 6


def test_a_missing_column_keeps_the_table(run_cli: Any, tmp_path: Path) -> None:
    """An export whose runtime table lacks one column still has its 6 launches (it once read as none), and the
    contents' metadata and a note say which column was read as NULL."""
    from wizard.trace.read.nsys import read_nsys

    path = _export(tmp_path, "old.sqlite", drop={RUNTIME: ["eventClass"]})
    assert "eventClass" not in _columns(path, RUNTIME)
    report = _report(run_cli, path)
    assert health_check(report, "kernels-missing")["launches"] == 6
    assert read_nsys(path).metadata["nsys"]["missing_columns"] == {RUNTIME: ["eventClass"]}
    assert f"this export's {RUNTIME} has no eventClass column: read without it" in report["notes"]


def test_unsorted_rows_read_as_sorted_ones(run_cli: Any, tmp_path: Path) -> None:
    """The same export with every table's rows shuffled: every health check and count is the same."""
    tidy, shuffled = _export(tmp_path, "tidy.sqlite"), _export(tmp_path, "shuffled.sqlite", shuffle=11)
    assert sql_rows(shuffled, f"SELECT start FROM {RUNTIME}") != sorted(
        sql_rows(shuffled, f"SELECT start FROM {RUNTIME}")
    )

    def health(path: Path) -> str:
        checks = _report(run_cli, path)["health"]
        return json.dumps(checks, sort_keys=True).replace(path.name, "X")

    assert health(shuffled) == health(tidy)


def test_overhead_records_are_read_and_clipped_to_the_window(run_cli: Any, tmp_path: Path) -> None:
    """4 records: 1.5 µs and 6 µs inside, 8 µs before the window (initialisation) and a flush whose first 1 µs
    is inside: the window runs from the first op (9.5 µs) to the driver launch's kernel end (59 µs)."""
    overhead = health_check(_report(run_cli, _export(tmp_path, "o.sqlite")), "profiler-overhead")
    assert (overhead["status"], overhead["count"]) == ("warning", 4)  # 8.5 µs of a 49.5 µs window: above 10%
    assert (overhead["overhead_us"], overhead["outside_us"]) == (pytest.approx(8.5), pytest.approx(19.0))
    assert overhead["window_us"] == pytest.approx(59.0 - 9.5)
    assert overhead["kinds"]["Runtime Triggered Module Loading"] == pytest.approx(6.0)


def test_true_values_are_shown_per_launch(tmp_path: Path) -> None:
    """Computed per launch as for a JSON trace (the launches list), where they were computed but never shown: launch
    101's grid of 64x2 blocks of 96x2 threads on 132 SMs is 128/132 blocks and 128*192/32/132 warps per SM."""
    values = _launch_values(_export(tmp_path, "v.sqlite"))
    assert sorted(values) == [101, 102, 103, 104, 300]
    assert list(values[101]) == [pytest.approx(128 / 132), pytest.approx(128 * 192 / 32 / 132)]


# -- the real exports -------------------------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name if p.parent == TRACES else f"pairs-{p.name}")
def test_real_exports_agree_with_plain_sql(run_cli: Any, path: Path) -> None:
    _agree(run_cli, path)


@needs_shared
def test_the_real_overhead_rows_are_read() -> None:
    """The 2-GPU capture's 6 PROFILER_OVERHEAD rows (2,009,505 ns), once said to be none; the mock's 25 + 6."""
    assert sql_overhead(TRACES / "nsys-mfu_2gpu_before.sqlite") == (6, 2_009_505.0, 0.0)
    assert sql_overhead(TRACES / "nsys-mock.sqlite")[0] == 31
