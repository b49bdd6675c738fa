"""Issue 47's memory bound, measured: the peak resident memory of ``trace inspect --json`` stays under the file's
unpacked size plus a constant, in every format, on the hostile shapes of items 1 and 7.

    python benchmarks/memory_formats.py [--names 1500] [--name-bytes 1000000] [--nsys-rows 2000000,10000000]
        [--work /tmp/ww-memory-formats] [--only SHAPES]

One line per (format, shape): the file's size, its unpacked size (a gzip's inflated bytes; else the file's), the
peak resident set of the ``python -m wizard trace inspect --json FILE`` process (wait4's ru_maxrss), its CPU time,
exit status, and whether the peak is under unpacked + ``CONSTANT_MB``. The shapes (wizard/testing/hostile.py,
wizard/testing/nsys.py): ``--names`` interned names of ``--name-bytes`` never used, track descriptors with such a
name (and sibling_merge_key), slices begun with such a name and never ended, and kernels with such distinct names
(``.pftrace`` and ``.pftrace.gz``; kernels also as Kineto JSON, ``.json`` and ``.json.gz``, as an Nsight Systems
export's StringIds and as a rocpd database's kernel symbols); and Nsight Systems exports of ``--nsys-rows``
kernels, each with its own grid. A name is 1,000,000 bytes by default (SQLite's bound on one value is 1 MiB).

``CONSTANT_MB`` (256 MiB) is what a read holds whatever the file: the interpreter with numpy and warpwizard's
modules (~100 MB resident on a 6 KB trace, the baseline lines), the JSON reader's two 8 MB blocks and the events
decoded from one (up to ~62 MB, tests/safety/test_pftrust_bytes.py), SQLite's page cache (8 MiB) and one batch of
50,000 rows as Python tuples and a numpy matrix (~40 MB). Everything else must grow with the file at most byte for
byte: a name is cut where it is read (16,384 characters), a kernel of an Nsight export is ~36 bytes of columns.

Every file is built by a child process (Linux carries a process's peak RSS across fork and execve, so this
process stays small) and deleted after it is measured. Disk: up to ~3 GB at once (a plain ``.pftrace`` of track
descriptors holds two names per track).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSTANT_MB = 256


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)
    return env


# -- builders (run in a child: ``memory_formats.py --build KIND PATH ...``) -----------------------------------------


def build_hostile(path: Path, shape: str, count: int, size: int) -> None:
    from wizard.testing import hostile

    make, _ = hostile.shapes(count)[shape]
    hostile.write(path, make, size)


def build_nsys_names(path: Path, count: int, size: int) -> None:
    """An export of ``count`` kernels, each named by a StringIds entry of ``size`` bytes of its own."""
    from wizard.testing.hostile import name
    from wizard.testing.nsys import write_many

    write_many(path, count, names=count, calls=False)
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, value FROM StringIds WHERE value LIKE 'kernel\\_%' ESCAPE '\\'").fetchall()
        for sid, value in rows:
            db.execute("UPDATE StringIds SET value = ? WHERE id = ?", (name(int(value[7:]), size).decode(), sid))


def build_nsys_rows(path: Path, count: int) -> None:
    from wizard.testing.nsys import write_many

    write_many(path, count, grids=10**12, calls=False)


def build_rocpd_names(path: Path, count: int, size: int) -> None:
    """The rocpd builder's database with ``count`` more kernel symbols of ``size``-byte names, each dispatched once."""
    from wizard.testing.hostile import name
    from wizard.testing.rocpd import UUID, write_rocpd

    write_rocpd(path)
    with sqlite3.connect(path) as db:
        for i in range(count):
            text = name(i, size).decode()
            db.execute(
                f'INSERT INTO "rocpd_info_kernel_symbol{UUID}" (id, nid, pid, code_object_id, kernel_name, '
                "display_name, arch_vgpr_count, accum_vgpr_count, sgpr_count) VALUES (?, 1, 1, 1, ?, ?, 32, 0, 96)",
                (100 + i, text, text),
            )
            db.execute(
                f'INSERT INTO "rocpd_kernel_dispatch{UUID}" (nid, pid, tid, agent_id, kernel_id, dispatch_id, '
                'queue_id, stream_id, start, "end", group_segment_size, workgroup_size_x, workgroup_size_y, '
                "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z) "
                "VALUES (1, 1, 1, 2, ?, ?, 1, 1, ?, ?, 0, 256, 1, 1, 1024, 1, 1)",
                (100 + i, 100 + i, 20_000 + 1000 * i, 20_500 + 1000 * i),
            )


def build_tiny(path: Path) -> None:
    """A 6 KB-scale trace of the path's format: what any read holds (the baseline)."""
    from wizard.testing import hostile

    if path.name.endswith((".pftrace", ".pftrace.gz", ".json", ".json.gz")):
        shape = "kernels-json" if ".json" in path.name else "kernels-pftrace"
        hostile.write(path, hostile.shapes(3)[shape][0], 64)
    elif path.name.startswith("rocpd"):
        from wizard.testing.rocpd import write_rocpd

        write_rocpd(path)
    else:
        build_nsys_rows(path, 3)


def _build_main(argv: list[str]) -> None:
    kind, path, *numbers = argv
    n = [int(x) for x in numbers]
    builders: dict[str, Callable[[], None]] = {
        "hostile": lambda: build_hostile(Path(path), os.environ["WW_SHAPE"], n[0], n[1]),
        "nsys-names": lambda: build_nsys_names(Path(path), n[0], n[1]),
        "nsys-rows": lambda: build_nsys_rows(Path(path), n[0]),
        "rocpd-names": lambda: build_rocpd_names(Path(path), n[0], n[1]),
        "tiny": lambda: build_tiny(Path(path)),
    }
    builders[kind]()


# -- measuring ------------------------------------------------------------------------------------------------------


def _build(kind: str, path: Path, *numbers: int, shape: str = "") -> None:
    env = _env() | {"WW_SHAPE": shape}
    argv = [sys.executable, str(Path(__file__).resolve()), "--build", kind, str(path), *map(str, numbers)]
    subprocess.run(argv, check=True, env=env, cwd=REPO)


def unpacked(path: Path) -> int:
    """The bytes a read takes in: a gzip's inflated size, else the file's."""
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    total = 0
    with gzip.open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            total += len(chunk)
    return total


def inspect(path: Path) -> tuple[float, float, int]:
    """``trace inspect --json`` of the file as a whole process: its peak RSS (MB), CPU seconds and exit status."""
    argv = [sys.executable, "-m", "wizard", "trace", "inspect", "--json", str(path)]
    child = subprocess.Popen(argv, env=_env(), cwd="/tmp", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    assert child.stderr is not None
    child.stderr.close()
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def _cases(args: argparse.Namespace) -> list[tuple[str, str, str, tuple[int, ...], str]]:
    """(format, shape, builder, numbers, file name) in the order measured."""
    c, b = args.names, args.name_bytes
    out: list[tuple[str, str, str, tuple[int, ...], str]] = []
    for fmt, suffix in (("Kineto JSON", ".json"), ("Kineto JSON gzip", ".json.gz")):
        out += [(fmt, "baseline (3 kernels)", "tiny", (), f"tiny{suffix}")]
        out += [(fmt, f"{c:,} kernels, distinct names", "hostile:kernels-json", (c, b), f"kernels{suffix}")]
    for fmt, suffix in ((".pftrace", ".pftrace"), (".pftrace.gz", ".pftrace.gz")):
        out += [(fmt, "baseline (3 kernels)", "tiny", (), f"tiny{suffix}")]
        for shape, words in (
            ("interned-never-used", "interned names never used"),
            ("track-descriptors", "track descriptors with such names"),
            ("slices-never-ended", "slices never ended"),
            ("kernels-pftrace", "kernels, distinct names"),
        ):
            out += [(fmt, f"{c:,} {words}", f"hostile:{shape}", (c, b), f"{shape}{suffix}")]
    out += [("nsys SQLite", "baseline (3 kernels)", "tiny", (), "tiny.sqlite")]
    out += [("nsys SQLite", f"{c:,} kernels, distinct names", "nsys-names", (c, b), "names.sqlite")]
    for rows in args.nsys_rows:
        out += [("nsys SQLite", f"{rows:,} kernel rows, distinct grids", "nsys-rows", (rows,), f"rows-{rows}.sqlite")]
    out += [("rocpd", "baseline (4 dispatches)", "tiny", (), "rocpd-tiny.db")]
    out += [("rocpd", f"{c:,} kernels, distinct names", "rocpd-names", (c, b), "rocpd-names.db")]
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--build":
        _build_main(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--names", type=int, default=1500)
    ap.add_argument("--name-bytes", type=int, default=1_000_000)
    ap.add_argument("--nsys-rows", type=lambda s: [int(x) for x in s.split(",")], default=[2_000_000, 10_000_000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/ww-memory-formats"))
    ap.add_argument("--only", default="", help="measure only the cases whose format or shape holds this text")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"constant: {CONSTANT_MB} MiB; peak RSS of `python -m wizard trace inspect --json FILE` (wait4)")
    print("| format | shape | file MB | unpacked MB | peak RSS MB | CPU s | exit | under unpacked + constant |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for fmt, shape, builder, numbers, name in _cases(args):
        if args.only and args.only not in f"{fmt} {shape}":
            continue
        path = args.work / name
        kind, _, hostile_shape = builder.partition(":")
        started = time.perf_counter()
        _build(kind, path, *numbers, shape=hostile_shape)
        size, inflated = path.stat().st_size, unpacked(path)
        peak, cpu, code = inspect(path)
        path.unlink()
        under = peak < inflated / 2**20 + CONSTANT_MB
        print(
            f"| {fmt} | {shape} | {size / 2**20:,.1f} | {inflated / 2**20:,.1f} | {peak:,.0f} | {cpu:.1f} | {code} | "
            f"{'yes' if under else 'NO'} |",
            flush=True,
        )
        del started


if __name__ == "__main__":
    main()
