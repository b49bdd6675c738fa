"""A rocpd database (AMD rocprofiler-sdk's SQLite output) with the real schema, for tests and examples: the
minimal rocpd reader's tests (tests/trace/test_readers_rocpd.py) and every test that tries each format (trace fix's
refusals) make one here.

The schema is ROCm/rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`` (stored copy at commit
50c89cbde07fa1890f7b3167bef29297bdae608e): 20 tables, each named with the run's ``{{uuid}}`` after it, and
``rocpd_views.sql`` (commit 19d33bb304b35d94a2a082f6771d918408e0c848): a view without the suffix over each table
(its 21st, over ``rocpd_timestamp``, is left out: that tables file creates no such table). ``TABLES`` transcribes
each table's columns and types in the file's order (no third-party file is copied verbatim: the foreign keys,
defaults and CHECKs are left out, none of which a reader sees); ``rocpd_info_agent`` starts on line 65,
``rocpd_info_kernel_symbol`` on line 158, ``rocpd_kernel_dispatch`` on line 272.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

UUID = "_0000a1b2_c3d4"  # the {{uuid}} substituted into every table's name (any run's own)
TABLES: dict[str, str] = {  # rocpd_tables.sql, in its order: name -> columns (after "id INTEGER PRIMARY KEY")
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
VIEWS = list(TABLES)  # rocpd_views.sql's, in its order (but rocpd_timestamp's)
# (start ns, end ns, agent id, kernel id, stream id, LDS bytes, workgroup, grid in work-items): out of time order
DISPATCHES = [
    (5_000, 9_000, 2, 1, 1, 0, (256, 1, 1), (1024, 1, 1)),
    (1_000, 1_500, 2, 2, 1, 16_384, (64, 4, 1), (1000, 30, 1)),  # 1000/64 and 30/4 are not whole: rounded up
    (3_000, 3_100, 3, 1, 2, 0, (256, 1, 1), (256, 1, 1)),
    (7_000, 7_800, 3, 2, 2, 65_536, (128, 2, 2), (4096, 8, 6)),
]


def write_rocpd(path: Path) -> Path:
    """A rocpd database at ``path``: three agents (a CPU, two MI300X), two kernel symbols, ``DISPATCHES``."""
    db = sqlite3.connect(path)
    with db:
        for name, cols in TABLES.items():
            db.execute(f'CREATE TABLE "{name}{UUID}" (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, {cols})')
        for name in VIEWS:
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
            [(a, k, n, s, t0, t1, lds, *wg, *grid) for n, (t0, t1, a, k, s, lds, wg, grid) in enumerate(DISPATCHES)],
        )
    db.close()
    return path
