"""The minimal rocpd reader (wizard/trace/read/rocpd.py) on a database with rocprofiler-sdk's real schema.

The schema is ROCm/rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` (stored copy at commit
50c89cbde07fa1890f7b3167bef29297bdae608e): 20 tables, each named with the run's ``{{uuid}}`` after it, and
``rocpd_views.sql`` (commit 19d33bb304b35d94a2a082f6771d918408e0c848): a view without the suffix over each table
(its 21st, over ``rocpd_timestamp``, is left out: that tables file creates no such table, and SQLite refuses the
next schema change under a view of a missing table). With ``sqlite_sequence`` (``AUTOINCREMENT``) that is the ~40
objects issue 46 names. ``_TABLES`` below transcribes each table's columns and
types in the file's order (the project copies no third-party file verbatim: the foreign keys, defaults and CHECKs
are left out, none of which a reader sees), with the line its ``CREATE TABLE`` starts on:
``rocpd_info_agent`` line 65, ``rocpd_info_kernel_symbol`` line 158, ``rocpd_kernel_dispatch`` line 272.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import sql_rows, strict_json

UUID = "_0000a1b2_c3d4"  # the {{uuid}} substituted into every table's name (any run's own)
_TABLES: dict[str, str] = {  # rocpd_tables.sql, in its order: name -> columns (after "id INTEGER PRIMARY KEY")
    "rocpd_metadata": "tag TEXT, value TEXT",
    "rocpd_string": "guid TEXT, string TEXT",
    "rocpd_info_node": "guid TEXT, hash BIGINT, machine_id TEXT, system_name TEXT, hostname TEXT, release TEXT, "
    "version TEXT, hardware_name TEXT, domain_name TEXT",
    "rocpd_info_process": "guid TEXT, nid INTEGER, ppid INTEGER, pid INTEGER, init BIGINT, fini BIGINT, "
    'start BIGINT, "end" BIGINT, command TEXT, environment JSONB, extdata JSONB',
    "rocpd_info_thread": "guid TEXT, nid INTEGER, ppid INTEGER, pid INTEGER, tid INTEGER, name TEXT, start BIGINT, "
    '"end" BIGINT, extdata JSONB',
    "rocpd_info_agent": "guid TEXT, nid INTEGER, pid INTEGER, type TEXT, absolute_index INTEGER, "
    "logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT, vendor_name TEXT, "
    "product_name TEXT, user_name TEXT, extdata JSONB",
    "rocpd_info_queue": "guid TEXT, nid INTEGER, pid INTEGER, name TEXT, extdata JSONB",
    "rocpd_info_stream": "guid TEXT, nid INTEGER, pid INTEGER, name TEXT, extdata JSONB",
    "rocpd_info_pmc": "guid TEXT, nid INTEGER, pid INTEGER, agent_id INTEGER, target_arch TEXT, event_code INT, "
    "instance_id INTEGER, name TEXT, symbol TEXT, description TEXT, long_description TEXT, component TEXT, "
    "units TEXT, value_type TEXT, block TEXT, expression TEXT, is_constant INTEGER, is_derived INTEGER, "
    "extdata JSONB",
    "rocpd_info_code_object": "guid TEXT, nid INTEGER, pid INTEGER, agent_id INTEGER, uri TEXT, load_base BIGINT, "
    "load_size BIGINT, load_delta BIGINT, storage_type TEXT, extdata JSONB",
    "rocpd_info_kernel_symbol": "guid TEXT, nid INTEGER, pid INTEGER, code_object_id INTEGER, kernel_name TEXT, "
    "display_name TEXT, kernel_object INTEGER, kernarg_segment_size INTEGER, kernarg_segment_alignment INTEGER, "
    "group_segment_size INTEGER, private_segment_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER, "
    "accum_vgpr_count INTEGER, extdata JSONB",
    "rocpd_track": "guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, name_id INTEGER, extdata JSONB",
    "rocpd_event": "guid TEXT, category_id INTEGER, stack_id INTEGER, parent_stack_id INTEGER, "
    "correlation_id INTEGER, call_stack JSONB, line_info JSONB, extdata JSONB",
    "rocpd_arg": "guid TEXT, event_id INTEGER, position INTEGER, type TEXT, name TEXT, value TEXT, extdata JSONB",
    "rocpd_pmc_event": "guid TEXT, event_id INTEGER, pmc_id INTEGER, value REAL, extdata JSONB",
    "rocpd_region": 'guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, start BIGINT, "end" BIGINT, '
    "name_id INTEGER, event_id INTEGER, extdata JSONB",
    "rocpd_sample": "guid TEXT, track_id INTEGER, timestamp BIGINT, event_id INTEGER, extdata JSONB",
    "rocpd_kernel_dispatch": "guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, "
    'kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT, "end" BIGINT, '
    "private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER, "
    "workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER, "
    "grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER, extdata JSONB",
    "rocpd_memory_copy": 'guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, start BIGINT, "end" BIGINT, '
    "name_id INTEGER, dst_agent_id INTEGER, dst_address INTEGER, src_agent_id INTEGER, src_address INTEGER, "
    "size INTEGER, queue_id INTEGER, stream_id INTEGER, region_name_id INTEGER, event_id INTEGER, extdata JSONB",
    "rocpd_memory_allocate": "guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, type TEXT, "
    'level TEXT, start BIGINT, "end" BIGINT, address INTEGER, size INTEGER, queue_id INTEGER, stream_id INTEGER, '
    "event_id INTEGER, extdata JSONB",
}
_VIEWS = list(_TABLES)  # rocpd_views.sql's, in its order (but rocpd_timestamp's)
# (start ns, end ns, agent id, kernel id, stream id, LDS bytes, workgroup, grid in work-items): out of time order
_DISPATCHES = [
    (5_000, 9_000, 2, 1, 1, 0, (256, 1, 1), (1024, 1, 1)),
    (1_000, 1_500, 2, 2, 1, 16_384, (64, 4, 1), (1000, 30, 1)),  # 1000/64 and 30/4 are not whole: rounded up
    (3_000, 3_100, 3, 1, 2, 0, (256, 1, 1), (256, 1, 1)),
    (7_000, 7_800, 3, 2, 2, 65_536, (128, 2, 2), (4096, 8, 6)),
]


def _database(path: Path) -> Path:
    db = sqlite3.connect(path)
    with db:
        for name, cols in _TABLES.items():
            db.execute(f'CREATE TABLE "{name}{UUID}" (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, {cols})')
        for name in _VIEWS:
            db.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "{name}{UUID}"')
        db.execute(f'INSERT INTO "rocpd_metadata{UUID}" (tag, value) VALUES ("schema_version", "3")')
        agents = [
            (1, "CPU", 0, "AMD EPYC 9654"),
            (2, "GPU", 0, "AMD Instinct MI300X"),
            (3, "GPU", 1, "AMD Instinct MI300X"),
        ]
        db.executemany(
            f'INSERT INTO "rocpd_info_agent{UUID}" (id, nid, pid, type, type_index, name, product_name) '
            "VALUES (?, 1, 1, ?, ?, 'gfx942', ?)",
            agents,
        )
        symbols = [(1, "_Z4gemmPfi", "gemm(float*, int)", 64, 32), (2, "_Z7softmaxPf", "softmax(float*)", 40, 0)]
        db.executemany(
            f'INSERT INTO "rocpd_info_kernel_symbol{UUID}" (id, nid, pid, code_object_id, kernel_name, display_name, '
            "arch_vgpr_count, accum_vgpr_count, sgpr_count) VALUES (?, 1, 1, 1, ?, ?, ?, ?, 96)",
            symbols,
        )
        db.executemany(
            f'INSERT INTO "rocpd_kernel_dispatch{UUID}" (nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, '
            'stream_id, start, "end", group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, '
            "grid_size_x, grid_size_y, grid_size_z) VALUES (1, 1, 1, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(a, k, n, s, t0, t1, lds, *wg, *grid) for n, (t0, t1, a, k, s, lds, wg, grid) in enumerate(_DISPATCHES)],
        )
    db.close()
    return path


def _sql_kernels(path: Path) -> list[tuple[Any, ...]]:
    """The second computation, in plain SQL over the tables: per dispatch in start order, its name, device index,
    stream, start and duration in µs, grid in workgroups (integer ceiling), block, VGPRs and LDS."""
    d, s, a = (f'"{t}{UUID}"' for t in ("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol", "rocpd_info_agent"))
    return sql_rows(
        path,
        'SELECT s.display_name, a.type_index, d.stream_id, d.start / 1000.0, (d."end" - d.start) / 1000.0, '
        "(d.grid_size_x + d.workgroup_size_x - 1) / d.workgroup_size_x, "
        "(d.grid_size_y + d.workgroup_size_y - 1) / d.workgroup_size_y, "
        "(d.grid_size_z + d.workgroup_size_z - 1) / d.workgroup_size_z, "
        "d.workgroup_size_x, d.workgroup_size_y, d.workgroup_size_z, s.arch_vgpr_count + s.accum_vgpr_count, "
        f"d.group_segment_size FROM {d} d JOIN {s} s ON s.id = d.kernel_id JOIN {a} a ON a.id = d.agent_id "
        "ORDER BY d.start",
    )


def test_the_database_has_the_real_schema(tmp_path: Path) -> None:
    path = _database(tmp_path / "results.db")
    kinds = dict(sql_rows(path, "SELECT type, count(*) FROM sqlite_master GROUP BY type"))
    assert kinds == {"table": 21, "view": 20}  # 20 of rocpd's and sqlite_sequence: the ~40 issue 46 names


def test_a_rocpd_database_is_recognised_by_its_tables(tmp_path: Path) -> None:
    """It was taken for an Nsight Systems export (every SQLite file was) and refused; the second look at its
    tables makes it rocpd, whatever its name."""
    from wizard.trace.read.formats import detect

    path = _database(tmp_path / "results.sqlite")  # an nsys export's suffix: the tables decide
    assert detect(path).id == "rocpd-sqlite"


def test_the_kernels_are_the_databases(tmp_path: Path) -> None:
    from wizard.trace.read.rocpd import read_rocpd

    path = _database(tmp_path / "results.db")
    contents = read_rocpd(path)
    got = [
        (k.name, k.device, k.stream, k.ts, k.dur, *(k.grid or ()), *(k.block or ()), k.registers, k.shared_memory)
        for k in contents.kernels
    ]
    assert got == [tuple(row) for row in _sql_kernels(path)]
    assert contents.kernels[0].grid == (16, 8, 1)  # 1000/64 = 15.6 and 30/4 = 7.5, rounded up
    assert contents.metadata["deviceProperties"] == [
        {"id": 0, "name": "AMD Instinct MI300X"},
        {"id": 1, "name": "AMD Instinct MI300X"},
    ]
    assert contents.is_rocm


def test_the_cli_reads_it_and_names_what_it_cannot_show(run_cli: Any, tmp_path: Path) -> None:
    path = _database(tmp_path / "results.db")
    result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    assert result.status == 0, result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    assert (report["format"], report["writer"], report["kernels"]) == (
        "rocpd-sqlite",
        "AMD rocprofiler-sdk (rocpd)",
        len(_sql_kernels(path)),
    )
    states = {c["check"]: c["status"] for c in report["health"]}
    assert states["unlinked-kernels"] == states["kernels-missing"] == "not_applicable"


def test_a_virtual_dispatch_table_is_refused(run_cli: Any, tmp_path: Path) -> None:
    path = _database(tmp_path / "results.db")
    db = sqlite3.connect(path)
    with db:
        db.execute(f'ALTER TABLE "rocpd_kernel_dispatch{UUID}" RENAME TO old')
        db.execute(f'CREATE VIRTUAL TABLE "rocpd_kernel_dispatch{UUID}" USING fts5(start, "end", content=\'old\')')
    db.close()
    result = run_cli("trace", "inspect", str(path))
    assert result.status == 6
    assert f"rocpd_kernel_dispatch{UUID} is a virtual table (USING fts5)" in result.stderr


@pytest.mark.parametrize("suffix", [".db", ".db.gz"])
def test_gzip_hands_the_database_back(run_cli: Any, tmp_path: Path, suffix: str) -> None:
    import gzip

    path = _database(tmp_path / "results.db")
    if suffix.endswith(".gz"):
        packed = tmp_path / f"results{suffix}"
        packed.write_bytes(gzip.compress(path.read_bytes()))
        path = packed
    result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    (report,) = strict_json(result.stdout)["reports"]
    assert (report["format"], report["kernels"]) == ("rocpd-sqlite", 4)
