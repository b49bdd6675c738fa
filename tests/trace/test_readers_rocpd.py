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
from wizard.testing.rocpd import UUID
from wizard.testing.rocpd import write_rocpd as _database


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
