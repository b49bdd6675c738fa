"""Issue 48's goals, measured in one series on this machine: every command of a round run one after the other
(interleaved), each figure the median over rounds of a per-round ratio, with its spread (lowest-highest).

    python benchmarks/speed_series.py [--rounds 3] [--sizes 100,200] [--layouts lines,minified] [--gb]
        [--nsys-kernels 1000000,5000000] [--pftrace-launches 20000] [--work /tmp/ww-speed-bench] [--only SECTIONS]
        [--hta-python PATH] [--tracelens-python PATH]

Sections (``--only``, comma-separated; all by default):
- ``json``: ``trace inspect --json`` (``--jobs`` the default, and ``--jobs 1``) against ``json.load`` of the same
  file and against commit 506439c's ``trace inspect --json``, per size and layout (files built by make_big_trace.py
  from the public H800 trace: lines as Kineto writes them, minified as ``json.dump`` does). 1 GB only with ``--gb``
  (about 2 GB of disk per layout and minutes a round). ``--layouts lines,minified,relative`` adds the timestamps as
  PyTorch 2 writes them (make_big_trace.py's ``relative``: µs since a base, three decimals), beside the goals' two.
  The benchmark checks 506439c out with ``git worktree add
  /tmp/ww-506439c 506439c`` and runs its ``python -m wizard`` with PYTHONPATH on that tree.
- ``pftrace``: a ``.pftrace`` against the JSON of the same slices (the trace builder's launches, converted as
  wizard/testing/pftrace.py does; needs the ``perfetto`` package), CPU time; on the compiled core and on its
  pure-Python twins (``WARPWIZARD_PURE=1``).
- ``nsys``: an Nsight Systems export of each ``--nsys-kernels`` count of kernels (wizard/testing/nsys.py), CPU µs
  per kernel (the run's CPU less an empty export's, over the kernels).
- ``peers``: Holistic Trace Analysis (parse, temporal and kernel breakdowns) and TraceLens (its PyTorch perf report
  as CSVs) on each size's lines file beside ``trace inspect --json``, each in the interpreter ``--hta-python`` /
  ``--tracelens-python`` names (scripts/install-peers makes them), or this one where it has the module; a line says
  which is skipped.
- ``startup``: ``trace inspect --json`` on a 5 KB trace, today's against 506439c's.

Each command is a whole process started from a directory that is no checkout; wall and CPU (user + system, its
workers included) from wait4; peak memory both as the largest process (wait4's ru_maxrss) and as the sum over the
process tree (VmRSS of the process and its children read every 20 ms from /proc: an upper bound, pages forked
workers share with their parent count twice). Byte code is cached under the work directory (PYTHONPYCACHEPREFIX):
a user's installed package has its .pyc files, so start-up is measured with them. On a machine shared with others
(this project's: 2 cores, 8 developers) wall times are noisy: CPU times and ratios of commands run side by side
are the steadier figures; the spread says how noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OLD_COMMIT = "506439c"
OLD_TREE = Path("/tmp/ww-506439c")
SOURCE = REPO.parent / "shared" / "traces" / "h800-deepseek-train-rank0.json.gz"
SECTIONS = ("startup", "json", "pftrace", "nsys", "peers")


@dataclass(frozen=True, slots=True)
class Sample:
    wall: float  # s
    cpu: float  # s, user + system, the process and the children it waited for
    largest_mb: float  # the largest process's peak resident set
    summed_mb: float  # the highest sum over the process tree, sampled
    code: int


def _tree_rss_kb(root: int) -> int:
    """VmRSS of ``root`` and every descendant (the tree walked through /proc/*/stat's parent field)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew, tree = bool(more), tree | more
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def measure(argv: Sequence[str], env: dict[str, str] | None = None, sample: bool = True) -> Sample:
    """One whole process: ``argv`` run from a temporary directory, its output thrown away."""
    started = time.perf_counter()
    child = subprocess.Popen(
        list(argv),
        cwd=tempfile.gettempdir(),
        env=env or os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_rss_kb(child.pid))

    watcher = threading.Thread(target=watch, daemon=True)
    if sample:
        watcher.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    if sample:
        watcher.join()
    return Sample(
        wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak[0] / 1024, os.waitstatus_to_exitcode(status)
    )


def _env(tree: Path, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(work / "pycache"))
    return env


def inspect_argv(trace: Path, *extra: str) -> list[str]:
    """The command both trees know (506439c has no --fail-on: exit 1 is findings, 0 none, both a full report)."""
    return [sys.executable, "-m", "wizard", "trace", "inspect", "--json", *extra, str(trace)]


JSON_LOAD = "import json, sys\nwith open(sys.argv[1], 'rb') as fh:\n    json.load(fh)\n"


def old_tree() -> Path:
    """506439c checked out beside, once."""
    if not (OLD_TREE / "wizard").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(OLD_TREE), OLD_COMMIT], check=True)
    return OLD_TREE


def build_json(work: Path, megabytes: int, layout: str) -> Path:
    path = work / f"h800-{megabytes}mb-{layout}.json"
    if not path.exists():
        subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "make_big_trace.py"), str(SOURCE), str(path),
             "--size-gb", str(megabytes / 1000), "--layout", layout],
            check=True, env=_env(REPO, work), stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return path


def build_small(work: Path) -> Path:
    path = work / "small.json"
    if not path.exists():
        code = (
            "import sys\nfrom wizard.testing.traces import TraceBuilder, demo_launches\nb = TraceBuilder()\n"
            "for s in demo_launches():\n    b.add(s)\nb.write(sys.argv[1])\n"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=_env(REPO, work))
    return path


def build_pftrace(work: Path, launches: int) -> tuple[Path, Path]:
    json_path, proto_path = work / f"slices-{launches}.json", work / f"slices-{launches}.pftrace"
    if not proto_path.exists():
        code = (
            "import json, sys\nfrom pathlib import Path\nfrom wizard.testing.pftrace import convert\n"
            "from wizard.testing.traces import TraceBuilder, demo_launches\nb = TraceBuilder()\n"
            "shapes = demo_launches()\nfor n in range(int(sys.argv[3])):\n    b.add(shapes[n % len(shapes)])\n"
            "source = b.write(sys.argv[1])\nPath(sys.argv[2]).write_bytes(convert(json.loads(source.read_text())))\n"
        )
        subprocess.run([sys.executable, "-c", code, str(json_path), str(proto_path), str(launches)], check=True,
                       env=_env(REPO, work))  # fmt: skip
    return json_path, proto_path


def build_nsys(work: Path, kernels: int) -> Path:
    path = work / f"nsys-{kernels}.sqlite"
    if not path.exists():
        code = (
            "import sys\nfrom pathlib import Path\nfrom wizard.testing.nsys import Call, Kernel, write_export\n"
            "n = int(sys.argv[2])\nks = (Kernel(1000 + 3000 * i, 2000 + 3000 * i, i + 1) for i in range(n))\n"
            "cs = (Call(500 + 3000 * i, 900 + 3000 * i, i + 1) for i in range(n))\n"
            "write_export(Path(sys.argv[1]), ks, cs)\n"
        )
        subprocess.run([sys.executable, "-c", code, str(path), str(kernels)], check=True, env=_env(REPO, work))
    return path


Command = tuple[str, list[str], dict[str, str]]


def series(commands: Sequence[Command], rounds: int, say: Callable[[str], None]) -> dict[str, list[Sample]]:
    """Every command once a round, in order, ``rounds`` times; raw samples printed as they come."""
    results: dict[str, list[Sample]] = {label: [] for label, _, _ in commands}
    for number in range(1, rounds + 1):
        for label, argv, env in commands:
            s = measure(argv, env)
            if s.code not in (0, 1):  # 1: findings (trace inspect's default --fail-on); anything else is no report
                raise SystemExit(f"{label} exited {s.code}: {' '.join(argv)}")
            results[label].append(s)
            say(
                f"    raw round {number}: {label}: wall {s.wall:.2f} s, CPU {s.cpu:.2f} s, "
                f"largest {s.largest_mb:.0f} MB, "
                f"tree {s.summed_mb:.0f} MB, exit {s.code}"
            )
    return results


def ratio(top: list[Sample], bottom: list[Sample], what: str) -> str:
    """Median of per-round ratios, with the lowest and highest."""
    values = sorted(getattr(a, what) / getattr(b, what) for a, b in zip(top, bottom, strict=True) if getattr(b, what))
    if not values:
        return "n/a"
    return f"{statistics.median(values):.3f}x ({values[0]:.3f}-{values[-1]:.3f})"


def median(samples: list[Sample], what: str) -> float:
    return float(statistics.median(getattr(s, what) for s in samples))


def section_startup(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    small = build_small(args.work)
    old = old_tree()
    commands = [
        ("python -c pass", [sys.executable, "-c", "pass"], _env(REPO, args.work)),
        ("today", inspect_argv(small), _env(REPO, args.work)),
        (OLD_COMMIT, inspect_argv(small), _env(old, args.work)),
    ]
    for _, argv, env in commands[1:]:  # byte code cached first, as an installed package has it
        subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    r = series(commands, args.rounds * 5, say)
    say(f"  start-up, trace inspect --json on {small.stat().st_size:,} bytes ({args.rounds * 5} rounds):")
    for label in r:
        say(
            f"    {label}: wall {median(r[label], 'wall') * 1000:.0f} ms, CPU {median(r[label], 'cpu') * 1000:.0f} ms, "
            f"largest {median(r[label], 'largest_mb'):.0f} MB"
        )
    say(
        f"    today / {OLD_COMMIT}: wall {ratio(r['today'], r[OLD_COMMIT], 'wall')}, "
        f"CPU {ratio(r['today'], r[OLD_COMMIT], 'cpu')}"
    )


def section_json(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    sizes = list(args.sizes) + ([1000] if args.gb else [])
    tree = old_tree()
    for megabytes in sizes:
        for layout in args.layouts:
            trace = build_json(args.work, megabytes, layout)
            commands: list[Command] = [
                ("json.load", [sys.executable, "-c", JSON_LOAD, str(trace)], _env(REPO, args.work)),
                ("today", inspect_argv(trace), _env(REPO, args.work)),
                ("today --jobs 1", inspect_argv(trace, "--jobs", "1"), _env(REPO, args.work)),
                (
                    "today --jobs 1 pure",
                    inspect_argv(trace, "--jobs", "1"),
                    {**_env(REPO, args.work), "WARPWIZARD_PURE": "1"},
                ),
            ]
            commands.append((OLD_COMMIT, inspect_argv(trace), _env(tree, args.work)))
            size = trace.stat().st_size
            say(f"  {layout}, {size / 1e6:,.0f} MB ({args.rounds} rounds):")
            r = series(commands, args.rounds, say)
            for label, samples in r.items():
                say(
                    f"    {label}: wall {median(samples, 'wall'):.2f} s, CPU {median(samples, 'cpu'):.2f} s, "
                    f"largest {median(samples, 'largest_mb'):.0f} MB "
                    f"({median(samples, 'largest_mb') * 1e6 / size:.2f}x "
                    f"the file), tree {median(samples, 'summed_mb'):.0f} MB"
                )
            for label in [c[0] for c in commands[1:]]:  # 506439c's too
                say(
                    f"    {label} / json.load: wall {ratio(r[label], r['json.load'], 'wall')}, "
                    f"CPU {ratio(r[label], r['json.load'], 'cpu')}"
                )
            say(
                f"    today / {OLD_COMMIT}: wall {ratio(r['today'], r[OLD_COMMIT], 'wall')}, CPU "
                f"{ratio(r['today'], r[OLD_COMMIT], 'cpu')}, largest {ratio(r['today'], r[OLD_COMMIT], 'largest_mb')}"
            )


def section_pftrace(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    try:
        json_path, proto = build_pftrace(args.work, args.pftrace_launches)
    except subprocess.CalledProcessError:
        say("  .pftrace: skipped (the perfetto package, the test extra, is not installed)")
        return
    env = _env(REPO, args.work)
    commands = [
        ("json", inspect_argv(json_path, "--jobs", "1"), env),
        (".pftrace", inspect_argv(proto, "--jobs", "1"), env),
        (".pftrace pure", inspect_argv(proto, "--jobs", "1"), {**env, "WARPWIZARD_PURE": "1"}),
    ]
    say(f"  .pftrace against JSON, {args.pftrace_launches:,} launches ({args.rounds} rounds):")
    r = series(commands, args.rounds, say)
    for label in (".pftrace", ".pftrace pure"):
        say(f"    {label} / json: CPU {ratio(r[label], r['json'], 'cpu')}, wall {ratio(r[label], r['json'], 'wall')}")
    say(f"    compiled core / pure Python (WARPWIZARD_PURE=1): CPU {ratio(r['.pftrace'], r['.pftrace pure'], 'cpu')}")


def section_nsys(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    env = _env(REPO, args.work)
    empty = build_nsys(args.work, 1)
    for kernels in args.nsys_kernels:
        full = build_nsys(args.work, kernels)
        commands = [
            ("1 kernel", inspect_argv(empty, "--jobs", "1"), env),
            (f"{kernels:,} kernels", inspect_argv(full, "--jobs", "1"), env),
        ]
        say(
            f"  Nsight Systems export, {kernels:,} kernels, {full.stat().st_size / 1e6:,.0f} MB ({args.rounds} rounds):"
        )
        r = series(commands, args.rounds, say)
        per = sorted((b.cpu - a.cpu) / kernels * 1e6 for a, b in zip(*r.values(), strict=True))
        say(f"    CPU per kernel: {statistics.median(per):.2f} µs ({per[0]:.2f}-{per[-1]:.2f})")


HTA_SCRIPT = (
    "import sys\nfrom hta.trace_analysis import TraceAnalysis\n"
    "a = TraceAnalysis(trace_dir=sys.argv[1])\n"
    "a.get_temporal_breakdown(visualize=False)\na.get_gpu_kernel_breakdown(visualize=False)\n"
)  # parse, then the two summaries a user asks of a single trace first: time by kind, kernels by kind


def peer_python(given: Path | None, module: str) -> Path | None:
    """The interpreter a peer runs in: the one named on the command line, else this one where it has the module.
    Peers live in their own virtual environments (scripts/install-peers): they pin pandas and friends."""
    import importlib.util

    if given is not None:
        return given
    return Path(sys.executable) if importlib.util.find_spec(module) is not None else None


def peer_commands(args: argparse.Namespace, trace: Path, say: Callable[[str], None]) -> list[Command]:
    """HTA and TraceLens on ``trace``, each where an interpreter has it (a line says which is skipped)."""
    commands: list[Command] = []
    hta = peer_python(args.hta_python, "hta")
    if hta is None:
        say("  Holistic Trace Analysis: skipped (no --hta-python, and module 'hta' is not installed here)")
    else:
        folder = args.work / f"hta-{trace.stem}"  # HTA reads every trace in a folder: this one holds only ours
        folder.mkdir(exist_ok=True)
        link = folder / trace.name
        if not link.exists():
            link.symlink_to(trace)
        commands.append(("HTA", [str(hta), "-c", HTA_SCRIPT, str(folder)], dict(os.environ)))
    lens = peer_python(args.tracelens_python, "TraceLens")
    if lens is None:
        say("  TraceLens: skipped (no --tracelens-python, and module 'TraceLens' is not installed here)")
    else:
        out = args.work / f"tracelens-{trace.stem}"
        argv = [str(lens), "-m", "TraceLens.Reporting.generate_perf_report_pytorch",
                "--profile_json_path", str(trace), "--output_csvs_dir", str(out)]  # fmt: skip
        commands.append(("TraceLens", argv, dict(os.environ)))
    return commands


def section_peers(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """warpwizard's ``trace inspect --json`` beside HTA's and TraceLens's first analysis of the same JSON file:
    each tool's whole process, from its start to its answer."""
    for megabytes in args.sizes:
        trace = build_json(args.work, megabytes, "lines")
        peers = peer_commands(args, trace, say)
        if not peers:
            return
        env = _env(REPO, args.work)
        commands = [
            ("warpwizard", inspect_argv(trace), env),
            ("warpwizard --jobs 1", inspect_argv(trace, "--jobs", "1"), env),
        ]
        say(f"  peers on lines, {trace.stat().st_size / 1e6:,.0f} MB ({args.rounds} rounds):")
        r = series(commands + peers, args.rounds, say)
        for label, _, _ in peers:
            say(
                f"    {label} / warpwizard: wall {ratio(r[label], r['warpwizard'], 'wall')}, "
                f"CPU {ratio(r[label], r['warpwizard'], 'cpu')}, "
                f"largest {ratio(r[label], r['warpwizard'], 'largest_mb')}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 200], help="MB")
    ap.add_argument("--layouts", type=lambda s: s.split(","), default=["lines", "minified"])
    ap.add_argument("--gb", action="store_true", help="also 1 GB (about 2 GB of disk a layout, minutes a round)")
    ap.add_argument("--nsys-kernels", type=lambda s: [int(x) for x in s.split(",")], default=[1_000_000, 5_000_000])
    ap.add_argument("--pftrace-launches", type=int, default=20_000)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ww-speed-bench")
    ap.add_argument("--only", type=lambda s: s.split(","), default=list(SECTIONS))
    ap.add_argument(
        "--hta-python", type=Path, help="an interpreter with Holistic Trace Analysis (scripts/install-peers)"
    )
    ap.add_argument("--tracelens-python", type=Path, help="an interpreter with TraceLens (scripts/install-peers)")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)

    def say(line: str) -> None:
        print(line, flush=True)

    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    say(f"# speed series, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, tree {head.stdout.strip()}")
    say(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; Python {sys.version.split()[0]}")
    for name in args.only:
        say(f"\n## {name}")
        started = time.perf_counter()
        if name == "startup":
            section_startup(args, say)
        elif name == "json":
            section_json(args, say)
        elif name == "pftrace":
            section_pftrace(args, say)
        elif name == "nsys":
            section_nsys(args, say)
        elif name == "peers":
            section_peers(args, say)
        else:
            raise SystemExit(f"unknown section {name!r}; the sections are {', '.join(SECTIONS)}")
        say(f"  ({time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
