"""The columnar Nsight Systems read (issue 47 item 7, issue 48's nsys row): kernels and calls go from SQLite rows
straight into typed columns, and every pass still sees the records the row-by-row read gave. Each test reads an
export the builder writes (wizard/testing/nsys.py: real column names) against a second reading written here, in
plain sqlite3 and Python sharing no code with wizard/trace/read/nsys.py or records.py: what a kernel record holds
(nsys.py's docstring: pid = device and tid = stream as Kineto writes them; correlation ids kept apart per process
above bit 40; names through StringIds, demangled first), in start order with ties in the file's order.

The shared exports are read the same as before through the output digests (tests/output_digests.py).
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli
from tests.helpers import inspect_json
from wizard.testing.nsys import Call, Kernel, write_export, write_many
from wizard.trace.read.nsys import read_nsys

KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
MIN64 = -(2**63)


# -- the second reading -------------------------------------------------------------------------------------------


def _strings(db: sqlite3.Connection) -> dict[int, str]:
    return {i: v[:16_384] for i, v in db.execute("SELECT id, value FROM StringIds") if type(v) is str}


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def expected_kernels(path: Path) -> list[tuple[Any, ...]]:
    """Every kernel as (name, ts, dur, pid, tid, device, stream, correlation, grid, block, registers, shared
    memory), from the rows in rowid order sorted by start (Python's sort is stable)."""
    db = sqlite3.connect(path)
    strings = _strings(db)
    cols = [row[1] for row in db.execute(f"PRAGMA table_info({KERNELS})")]
    rows = [dict(zip(cols, row, strict=True)) for row in db.execute(f"SELECT * FROM {KERNELS} ORDER BY rowid")]
    pids = sorted({(g >> 24) & 0xFFFFFF for r in rows if type(g := r.get("globalPid")) is int})
    index = {pid: n for n, pid in enumerate(pids)} if len(pids) > 1 else {}
    out = []
    for r in sorted((r for r in rows if type(r["start"]) is int), key=lambda r: r["start"]):
        v = {k: _int(r.get(k)) for k in cols}
        names = [strings.get(sid) for k in ("demangledName", "shortName") if (sid := v.get(k)) is not None]
        name = next((n for n in names if n), "unknown")
        corr, g = v.get("correlationId"), v.get("globalPid")
        if corr is not None and index and g is not None:
            corr = (index[(g >> 24) & 0xFFFFFF] << 40) | (corr & ((1 << 40) - 1))
        if corr is not None and not MIN64 < corr < 2**63:
            corr = None
        grid = tuple(v.get(k) for k in ("gridX", "gridY", "gridZ"))
        block = tuple(v.get(k) for k in ("blockX", "blockY", "blockZ"))
        static, dynamic = v.get("staticSharedMemory"), v.get("dynamicSharedMemory")
        device = v["deviceId"]
        out.append((
            name, r["start"] / 1000.0, (v["end"] - r["start"]) / 1000.0 if v["end"] is not None else 0.0,
            device, v["streamId"], device if device != MIN64 else None, v["streamId"], corr,
            None if None in grid else grid, None if None in block else block, v["registersPerThread"],
            static + dynamic if static is not None and dynamic is not None else None,
        ))  # fmt: skip
    return out


def read_kernels(path: Path) -> list[tuple[Any, ...]]:
    contents = read_nsys(path)
    return [
        (k.name, k.ts, k.dur, k.pid, k.tid, k.device, k.stream, k.correlation, k.grid, k.block, k.registers,
         k.shared_memory)
        for k in contents.kernels
    ]  # fmt: skip


def _numbered(keys: list[Any]) -> list[int]:
    """Each key's number in order of first appearance."""
    seen: dict[Any, int] = {}
    return [seen.setdefault(k, len(seen)) for k in keys]


# -- the exports ----------------------------------------------------------------------------------------------------


def _shuffled_processes(path: Path) -> Path:
    """Two processes, kernels out of time order with ties, names demangled, short-only and missing."""
    kernels = [
        Kernel(5000 - 10 * (i % 7), 6000, i + 1, name=f"k{i % 3}", device=i % 2, stream=7 + i % 4,
               grid=(1 + i, 2, 1), block=(128, 1 + i % 2, 1), registers=16 + i % 5, static_smem=i, dynamic_smem=7,
               pid=4242 if i % 3 else 5151)
        for i in range(300)
    ]  # fmt: skip
    calls = [Call(100 + i, 200 + i, i + 1, pid=4242 if i % 3 else 5151) for i in range(300)]
    write_export(path, kernels, calls, shuffle=3)
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {KERNELS} SET demangledName = NULL WHERE correlationId % 11 = 0")
        db.execute(f"UPDATE {KERNELS} SET demangledName = 999, shortName = 998 WHERE correlationId % 13 = 0")
    return path


def _hostile_values(path: Path) -> Path:
    """Values no int64 column holds as an ordinary number: -2**63, shared memory past int64 in sum, text and
    reals in integer columns, a start that is not an integer, NULLs."""
    write_export(path, [Kernel(1000 * i, 1000 * i + 500, i + 1, grid=(i + 1, 1, 1)) for i in range(40)], [])
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {KERNELS} SET gridX = ? WHERE correlationId = 3", (MIN64,))
        db.execute(f"UPDATE {KERNELS} SET deviceId = ? WHERE correlationId = 4", (MIN64,))
        db.execute(f"UPDATE {KERNELS} SET staticSharedMemory = ?, dynamicSharedMemory = ? WHERE correlationId = 5",
                   (2**62 + 5, 2**62 + 9))  # fmt: skip
        db.execute(f"UPDATE {KERNELS} SET registersPerThread = 'many', blockY = 2.5 WHERE correlationId = 6")
        db.execute(f"UPDATE {KERNELS} SET start = 'soon' WHERE correlationId = 7")
        db.execute(f'UPDATE {KERNELS} SET "end" = NULL, streamId = NULL WHERE correlationId = 8')
        db.execute(f"UPDATE {KERNELS} SET correlationId = ? WHERE correlationId = 9", (MIN64,))
        db.execute(f'UPDATE {KERNELS} SET start = ?, "end" = ? WHERE correlationId = 10', (2**62 + 1, -(2**62)))
    return path


def _many(path: Path) -> Path:
    return write_many(path, 3000, grids=10**9, names=37, streams=5)


def _without_columns(path: Path) -> Path:
    """An older schema: no shortName, no dynamicSharedMemory, no gridZ."""
    kernels = [Kernel(1000 * i, 1000 * i + 10, i + 1, grid=(i, 1, 1)) for i in range(50)]
    drop = {KERNELS: ("shortName", "dynamicSharedMemory", "gridZ")}
    return write_export(path, kernels, [], drop=drop)


EXPORTS = {
    "shuffled-processes": _shuffled_processes,
    "hostile-values": _hostile_values,
    "distinct-grids-names-streams": _many,
    "without-columns": _without_columns,
}


# -- the tests ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", EXPORTS.values(), ids=EXPORTS.keys())
def test_kernel_records_are_the_rows(tmp_path: Path, build: Any) -> None:
    path = build(tmp_path / "export.sqlite")
    assert read_kernels(path) == expected_kernels(path)


@pytest.mark.parametrize("build", EXPORTS.values(), ids=EXPORTS.keys())
def test_combinations_are_numbered_in_order_of_first_appearance(tmp_path: Path, build: Any) -> None:
    """``columns()``: each launch's combination (every field but its start, duration and correlation) numbered as
    the row-by-row read numbered them, past the materialised list too (a table of many combinations)."""
    contents = read_nsys(build(tmp_path / "export.sqlite"))
    _, _, _, ids, shapes = contents.kernels.columns()
    want = [(k.name, k.pid, k.tid, k.device, k.stream, k.grid, k.block, k.registers, k.shared_memory)
            for k in contents.kernels]  # fmt: skip
    assert list(ids) == _numbered(want)
    assert [tuple(shapes[i][:9]) for i in ids] == want
    assert [s[:9] for s in shapes] == list(dict.fromkeys(want))


def test_combinations_read_through_the_view_are_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wizard.trace.read import records

    path = _many(tmp_path / "export.sqlite")
    listed = read_nsys(path).kernels.columns()
    monkeypatch.setattr(records, "_MATERIALISED", 10)
    viewed = read_nsys(path).kernels.columns()
    assert type(viewed[4]) is not list
    assert list(viewed[3]) == list(listed[3])
    assert list(viewed[4]) == listed[4]
    assert [viewed[4][j] for j in range(len(viewed[4]))] == listed[4]


def test_calls_are_the_rows(tmp_path: Path) -> None:
    """The runtime and driver calls (eventClass 0 and 1; a backtrace row is no call) in start order."""
    kernels = [Kernel(10_000 + i, 10_500 + i, i + 1) for i in range(20)]
    calls = [Call(900 - 10 * (i % 4), 990, i + 1, driver=i % 2 == 1, tid=4243 + i % 3,
                  name="cudaLaunchKernel_v7000" if i % 5 else "cuLaunchKernelEx") for i in range(20)]  # fmt: skip
    path = write_export(tmp_path / "calls.sqlite", kernels, calls, backtraces=True, shuffle=5)
    db = sqlite3.connect(path)
    strings = _strings(db)
    rows = db.execute("SELECT start, \"end\", globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                      "WHERE eventClass IN (0, 1) ORDER BY rowid").fetchall()  # fmt: skip
    want = [
        (c, ((g >> 24) & 0xFFFFFF, g & 0xFFFFFF), s / 1000.0, strings[n].split("_v")[0])
        for s, _, g, c, n in sorted(rows, key=lambda r: r[0])
    ]
    runtime = read_nsys(path).runtime
    got = [
        (runtime.correlations[i], runtime.thread(runtime.threads[i]), runtime.starts[i],
         runtime.name_list[runtime.names[i]])
        for i in range(len(runtime))
    ]  # fmt: skip
    assert got == want
    assert runtime.last_end == max(e for _, e, *_ in rows) / 1000.0


def _read_peak(path: Path) -> int:
    tracemalloc.start()
    try:
        contents = read_nsys(path)
        contents.kernels.columns()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_per_kernel_is_bounded_with_every_grid_distinct(tmp_path: Path) -> None:
    """The peak Python memory of a read grows by at most 80 bytes per kernel (its start, duration and correlation
    are 24, its combination 4, a launch field that varies 4, the combination number 4, plus the arrays' growth)
    where each kernel has a grid of its own: the row-by-row read kept a tuple per launch, ~470 bytes (3.27 GB
    for 2M kernels, issue 47 item 7). Measured as a slope between two sizes, so the fixed costs (imports, a batch of
    rows) cancel out."""
    small = write_many(tmp_path / "small.sqlite", 100_000, grids=10**9, calls=False)
    large = write_many(tmp_path / "large.sqlite", 250_000, grids=10**9, calls=False)
    _read_peak(small)  # imports and first-use caches, outside the measurement
    per_kernel = (_read_peak(large) - _read_peak(small)) / 150_000
    assert per_kernel < 80, per_kernel


def test_profile_kernel_groups_and_the_rest_from_columns(tmp_path: Path, run_cli: RunCli) -> None:
    """The profile's kernel groups of an export of 900 groups (name, grid, block): one launch, a few, and more
    than 8 (numpy sums those pairwise), with tied totals. Durations are whole microseconds, so every sum is exact
    in any order: the ``MAX_KERNELS`` (300) with the most time, ties by key then first seen, each with its launches,
    total, median and MAD; the rest summed as ``others``."""
    kernels, n = [], 0
    for g in range(900):
        for j in range(1 + (g * 7) % 11):
            n += 1
            dur = 1000 * (1 + (g * 13 + j * 5) % 9)
            kernels.append(Kernel(10_000 * n, 10_000 * n + dur, n, name=f"kern_{g % 40}", grid=(g, 1, 1)))
    path = write_export(tmp_path / "groups.sqlite", kernels, [], shuffle=11)
    groups: dict[tuple[str, int], list[float]] = {}
    for k in sorted(kernels, key=lambda k: k.start_ns):
        groups.setdefault((k.name, k.grid[0]), []).append((k.end_ns - k.start_ns) / 1000.0)
    ranked = sorted(groups.items(), key=lambda item: (-sum(item[1]), item[0][0]))  # stable: first seen on ties

    def median(values: list[float]) -> float:
        v, m = sorted(values), len(values) // 2
        return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2

    want = [
        (name, [grid, 1, 1], len(d), sum(d), median(d), median([abs(x - median(d)) for x in d]))
        for (name, grid), d in ranked[:300]
    ]
    profile = inspect_json(run_cli, path)["reports"][0]["profile"]
    got = [(g["key"], g["grid"], g["launches"], g["total_us"], g["median_us"], g["mad_us"]) for g in profile["kernels"]]
    assert got == want
    rest = ranked[300:]
    assert profile["others"] == {
        "groups": float(len(rest)),
        "launches": float(sum(len(d) for _, d in rest)),
        "total_us": float(sum(sum(d) for _, d in rest)),
    }


@pytest.mark.parametrize("build", EXPORTS.values(), ids=EXPORTS.keys())
def test_the_workload_fingerprint_is_the_hash_of_the_sorted_list(tmp_path: Path, build: Any) -> None:
    """The fingerprint streamed is ``work_fingerprint`` of the distinct (name, grid, block) sorted by repr."""
    from wizard.schemas import work_fingerprint

    contents = read_nsys(build(tmp_path / "export.sqlite"))
    distinct = {(k.name, k.grid, k.block) for k in contents.kernels}
    assert contents.kernels.fingerprint() == work_fingerprint(sorted(distinct, key=repr))
