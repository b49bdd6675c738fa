"""Helpers more than one test module uses (issue 46: no test module imports another).

Fixtures live in ``tests/conftest.py`` (with the paths REPO, TRACES, EXAMPLES and the CLI runners); what a test
calls by name and shares lives here: the real terminal (pexpect, rendered by pyte), the browser (Chromium driven
by Playwright), an installed distribution, built rank directories, and ``trace inspect --json`` parsed strictly.
A helper used by one module stays in that module.
"""

from __future__ import annotations

import array
import contextlib
import enum
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pexpect
import pytest

from tests.conftest import HANG_GUARD_S, REPO, RunCli, cli_command, cli_env, strict_json
from wizard.testing import pftrace
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches

if TYPE_CHECKING:
    from wizard.trace.read.collector import Collector

# -- trace inspect --json ------------------------------------------------------------------------------------


def inspect_json(run_cli: RunCli, path: Path | str, *flags: str, status: int | None = None) -> dict[str, Any]:
    """``trace inspect PATH --json FLAGS``'s document, parsed strictly (NaN and Infinity are errors); ``status``:
    the exit status it must have (a problem found exits 1 and still writes the document), unchecked if None."""
    result = run_cli("trace", "inspect", str(path), "--json", *flags)
    if status is not None:
        assert result.returncode == status, result.stderr
    data = strict_json(result.stdout)
    assert isinstance(data, dict)
    return data


# -- an installed distribution (entry points) ----------------------------------------------------------------


def installed(site: Path, dist: str, entry_points: str) -> None:
    """A distribution as pip leaves one (its .dist-info beside its code): importlib.metadata finds it."""
    info = site / f"{dist.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


# -- a real terminal (pexpect; pyte renders what it shows) ---------------------------------------------------


def spawn(args: list[str], cwd: Path, columns: int = 160, *, colour: bool = False) -> pexpect.spawn[str]:
    """The console script at a real terminal; ``colour``: without NO_COLOR and CI, which turn the live progress
    line off."""
    env = {k: v for k, v in os.environ.items() if not colour or k not in ("NO_COLOR", "CI")}
    env.update(COLUMNS=str(columns), LINES="50", TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    if not colour:
        env["NO_COLOR"] = "1"
    command = cli_command()
    child = pexpect.spawn(
        command[0],
        [*command[1:], *args],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=HANG_GUARD_S,
        dimensions=(50, columns),
    )
    return child


def matched(child: pexpect.spawn[str]) -> str:
    """The first group of what the last expect() matched."""
    match = child.match
    assert isinstance(match, re.Match)
    return str(match.group(1))


def finish(child: pexpect.spawn[str]) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def screen_lines(args: list[str], columns: int) -> list[str]:
    """What a terminal ``columns`` wide shows: the pty's bytes rendered by pyte, cell by cell."""
    pyte = pytest.importorskip("pyte")
    shown = pyte.Screen(columns, 400)
    stream = pyte.Stream(shown)
    child = spawn(args, REPO, columns)
    child.setwinsize(400, columns)
    stream.feed(finish(child))
    return [line.rstrip() for line in shown.display]


def screen_of(columns: int, rows: int = 400) -> tuple[object, object]:
    pyte = pytest.importorskip("pyte")
    shown = pyte.Screen(columns, rows)
    return shown, pyte.Stream(shown)


def lines_of(shown: object) -> list[str]:
    return [line.rstrip() for line in shown.display]  # type: ignore[attr-defined]


def joined(lines: list[str]) -> str:
    """The screen's words as one line: what a reader reads across the wraps (box edges dropped)."""
    return " ".join(" ".join(line.replace("│", " ").split()) for line in lines if line.strip())


def teach_screen(args: list[str], answers: list[tuple[str, str]], columns: int, tmp_path: Path) -> list[str]:
    shown, stream = screen_of(columns, 1000)
    child = spawn(args, tmp_path, columns)
    child.setwinsize(1000, columns)
    for expected, send in answers:
        child.expect(expected)
        stream.feed(str(child.before) + str(child.after))  # type: ignore[attr-defined]
        child.send(send)
    reached = child.expect([r"Diagnosis: [a-z-]+", "Where does your code read"])
    stream.feed(str(child.before) + str(child.after))  # type: ignore[attr-defined]
    if reached == 1:  # a question waits: Ctrl-C (never while the diagnosis is being written)
        child.sendintr()
    stream.feed(finish(child))  # type: ignore[attr-defined]
    return lines_of(shown)


def defined_before_used(lines: list[str]) -> list[str]:
    """Each glossary word's first use on screen, outside a definition, comes after its definition."""
    from wizard.playbook.glossary import TERMS

    # a definition's own lines (it wraps) run from "new word" to the next line that is not indented as it is
    inside, in_definition = [], False
    for line in lines:
        in_definition = line.startswith("  new word ") or (
            in_definition and line.startswith("  ") and line[2:3] != " " and not line.startswith("  ●")
        )
        inside.append(in_definition)
    late = []
    for term in TERMS:
        defined = next((i for i, line in enumerate(lines) if line.startswith(f"  new word {term.word}:")), None)
        used = next((i for i, line in enumerate(lines) if not inside[i] and term.pattern.search(line)), None)
        if used is not None and (defined is None or defined > used):
            late.append(f"{term.word}: used on line {used} ({lines[used].strip()!r}), defined on line {defined}")
    return late


# -- a real browser (Debian's Chromium driven by Playwright) -------------------------------------------------

CHROMIUM = os.environ.get("WARPWIZARD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install -y chromium; .ci/run does)")


def chromium() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, for a module's browser fixture."""
    if CHROMIUM is None:
        pytest.skip("no Chromium")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="browser tests need playwright")
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def artifacts(tmp_path: Path) -> Path:
    where = Path(os.environ.get("WARPWIZARD_ARTIFACTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def open_page(
    browser: Any, page_file: Path, shot: Path, width: int = 1280, *, plots: bool = True
) -> tuple[Any, dict[str, Any]]:
    """The page as a user sees it, with what went wrong on the way: console errors, script errors,
    dialogs (alert) and every request that was not the file itself (blocked). ``plots``: wait until plotly has
    drawn the pictures (a page without any, the diff's bars in HTML, waits for its load alone)."""
    seen: dict[str, Any] = {"errors": [], "blocked": [], "dialogs": []}
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))

    def route(r: Any) -> None:
        if r.request.url == page_file.as_uri():
            r.continue_()
        else:
            seen["blocked"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(page_file.as_uri(), wait_until="load")
    if plots:
        page.wait_for_selector("body[data-plots=drawn]", timeout=30_000)
        page.wait_for_timeout(300)
    page.screenshot(path=str(shot), full_page=True)
    return page, seen


def payload(html: str) -> Any:
    found = re.search(r'<script type="application/json" id="ww-data">(.*?)</script>', html, re.S)
    assert found is not None
    return strict_json(found.group(1))


# Every visible element's right edge inside the window, and nothing hidden by an overflow it clips or scrolls
# (the findings table and the health table reflow into cards instead of scrolling).
AUDIT = r"""(vw) => {
  const bad = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.display === 'none') continue;
    const name = el.tagName + (el.id ? '#' + el.id : '') + ' ' + (el.textContent || '').slice(0, 50);
    if (r.right > vw + 0.5) bad.push('past the right edge (' + Math.round(r.right) + ' px): ' + name);
    if (el instanceof SVGElement) continue;
    const hides = ['hidden', 'clip', 'auto', 'scroll'];
    if (hides.includes(cs.overflowX) && el.scrollWidth > el.clientWidth + 1)
      bad.push('content cut or scrolled (' + el.scrollWidth + ' > ' + el.clientWidth + '): ' + name);
  }
  return bad;
}"""

# -- built rank directories ----------------------------------------------------------------------------------


def rank_dir(directory: Path, waits: list[list[float]]) -> Path:
    """One trace per rank, its all-reduces started after ``waits`` (µs) each."""
    directory.mkdir()
    for rank, rank_waits in enumerate(waits):
        b = TraceBuilder()
        b.set_metadata("distributedInfo", {"rank": rank, "world_size": len(waits)})
        for wait in rank_waits:
            b.wait(wait)
            b.add(KernelSpec("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (4, 1, 1), (512, 1, 1)))
        b.write(directory / f"rank{rank}.json")
    return directory


SKEWED: list[list[float]] = [[0, 0, 0], [400, 0, 0], [100, 500, 0]]  # starts apart by 400, 600, 600 µs
LINED_UP: list[list[float]] = [[0, 0, 0], [2, 0, 0], [0, 1, 0]]  # 2 µs each


def rank_trace(directory: Path, rank: int, delays: Sequence[float], *, declared: bool = True) -> None:
    """Rank ``rank`` of a world of 3: an all-reduce after each delay (µs), and rank + 1 broadcasts."""
    b = TraceBuilder()
    if declared:
        b.set_metadata("distributedInfo", {"rank": rank, "world_size": 3})
    for delay in delays:
        b.wait(delay)
        b.add(KernelSpec("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (64, 1, 1), (128, 1, 1)))
    b.add(KernelSpec("ncclDevKernel_Broadcast", (64, 1, 1), (128, 1, 1), repeat=rank + 1))  # only 1 on every rank
    b.write(directory / f"rank{rank}.json")


def eight_ranks(directory: Path, kernels: int = 3) -> Path:
    """Eight ranks' traces, each with ``kernels`` mechanism-E kernels (226 KB of shared memory on an H100) and one
    right kernel: the shape of the 8-rank B200 job the issue ran the triage on."""
    directory.mkdir()
    for rank in range(8):
        builder = TraceBuilder(gpu="H100")
        builder.set_metadata("distributedInfo", {"rank": rank, "world_size": 8})
        for i in range(kernels):
            builder.add(KernelSpec(f"e_kernel_{i}", (8, 16, 1), (384, 1, 1), 168, 231424))
        builder.add(KernelSpec("void ok_kernel", (64, 1, 1), (128, 1, 1)))
        builder.write(directory / f"rank{rank}.json")
    return directory


# -- the CUDA Programming Guide's table ----------------------------------------------------------------------

# Written from NVIDIA's "Technical Specifications per Compute Capability" table, independently of
# wizard/trace/metrics/occupancy.py: resident threads per SM, resident blocks per SM, shared memory per SM (KB).
# Jetson Thor's resident blocks (cc 10.1 and 11.0) are 24, as cudaOccMaxBlocksPerMultiprocessor in CUDA 13.0's
# cuda_occupancy.h says (this table had 32, the bug of issue 23; tests/probes/test_multi_gpu_and_capabilities.py
# checks the header).
GUIDE: dict[tuple[int, int], tuple[int, int, int]] = {
    (3, 0): (2048, 16, 48), (3, 2): (2048, 16, 48), (3, 5): (2048, 16, 48), (3, 7): (2048, 16, 112),
    (5, 0): (2048, 32, 64), (5, 2): (2048, 32, 96), (5, 3): (2048, 32, 64),
    (6, 0): (2048, 32, 64), (6, 1): (2048, 32, 96), (6, 2): (2048, 32, 64),
    (7, 0): (2048, 32, 96), (7, 2): (2048, 32, 96), (7, 5): (1024, 16, 64),
    (8, 0): (2048, 32, 164), (8, 6): (1536, 16, 100), (8, 7): (1536, 16, 164), (8, 9): (1536, 24, 100),
    (9, 0): (2048, 32, 228), (10, 0): (2048, 32, 228), (10, 1): (2048, 24, 228), (10, 3): (2048, 32, 228),
    (11, 0): (2048, 24, 228), (12, 0): (1536, 24, 100), (12, 1): (1536, 24, 100),
}  # fmt: skip


# -- two profiles of one workload (tests/trace/test_diff*.py, tests/report/test_diff50_page.py) ---------------------
GEMM = "void gemm_kernel<128>(float*)"
ADD = "void add_kernel(float*)"
GEMM_US = [40.0, 41.0, 39.0, 40.5, 39.5, 40.0, 40.2, 39.8]  # eight launches a step, within 2.5% of each other


def diff_trace(path: Path, *, gemm_scale: float = 1.0, gpu: str = "H100", devices: int = 1, world: int | None = None,
           steps: int = 3) -> Path:  # fmt: skip
    """``steps`` steps of eight GEMMs and eight adds; the GEMMs' durations scaled by ``gemm_scale``."""
    b = TraceBuilder(gpu=gpu, devices=devices)
    if world is not None:
        b.set_metadata("distributedInfo", {"backend": "nccl", "rank": 0, "world_size": world})
    for _ in range(steps):
        for i, dur in enumerate(GEMM_US):
            b.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=dur * gemm_scale, device=i % devices))
            b.add(KernelSpec(ADD, (64, 1, 1), (128, 1, 1), dur=6.0))
    return b.write(path)


def ncu_kernels(path: Path) -> list[dict[str, Any]]:
    """Every kernel of a report, by the test's own read (ncu-report directly)."""
    ncu_report = pytest.importorskip("ncu_report", reason="NVIDIA's ncu-report is not installed (the test extra)")
    report = ncu_report.load_report(str(path))
    out = []
    for r in range(report.num_ranges()):
        found = report.range_by_idx(r)
        for a in range(found.num_actions()):
            action = found.action_by_idx(a)

            def value(name: str, action: Any = action) -> float | None:
                metric = action.metric_by_name(name)
                if metric is None:
                    return None
                number = metric.as_double()
                return None if math.isnan(number) else number

            out.append({
                "demangled": action.name(ncu_report.IAction.NameBase_DEMANGLED),
                "value": {n: value(n) for n in action.metric_names()},
                "device": action.metric_by_name("device__attribute_display_name").as_string(),
            })  # fmt: skip
    return out


def ncu_properties(kernel: dict[str, Any]) -> dict[str, Any]:
    """The device as Kineto's deviceProperties names it, from ncu's device attributes."""
    v = kernel["value"]

    def whole(name: str) -> int:
        return int(v[f"device__attribute_{name}"])

    return {
        "name": kernel["device"], "computeMajor": whole("compute_capability_major"),
        "computeMinor": whole("compute_capability_minor"), "numSms": whole("multiprocessor_count"),
        "maxThreadsPerMultiprocessor": whole("max_threads_per_multiprocessor"),
        "regsPerMultiprocessor": whole("max_registers_per_multiprocessor"),
        "regsPerBlock": whole("max_registers_per_block"), "sharedMemPerBlock": whole("max_shared_memory_per_block"),
        "sharedMemPerMultiprocessor": whole("max_shared_memory_per_multiprocessor"),
        "sharedMemPerBlockOptin": whole("max_shared_memory_per_block_optin"),
        "maxThreadsPerBlock": whole("max_threads_per_block"), "warpSize": 32, "totalGlobalMem": 1 << 34,
    }  # fmt: skip


def ncu_dims(v: dict[str, Any], what: str) -> tuple[int, int, int]:
    return (int(v[f"launch__{what}_dim_x"]), int(v[f"launch__{what}_dim_y"]), int(v[f"launch__{what}_dim_z"]))


def ncu_trace_of(kernels: list[dict[str, Any]], path: Path, plant: str | None = None) -> Path:
    """The same launches as a Kineto trace: every kernel that has launch metrics, in the report's order."""
    with_launch = [k for k in kernels if k["value"].get("launch__grid_size") is not None]
    b = TraceBuilder(properties=ncu_properties(with_launch[0]))
    for k in with_launch:
        v = k["value"]
        smem = int(v["launch__shared_mem_per_block_static"] + v["launch__shared_mem_per_block_dynamic"])
        registers = int(v["launch__registers_per_thread"])
        b.add(KernelSpec(k["demangled"], ncu_dims(v, "grid"), ncu_dims(v, "block"), registers, smem, plant=plant))
    return b.write(path)


# -- processes (Linux's /proc) ------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, from /proc (each one's stat: state, then ppid, after the name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Running, sleeping or stopped: anything but gone or a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def survivors_of_a_killed_read(ranks: Path) -> list[int]:
    """A rank directory read with two workers; the parent stopped once both exist (so it cannot finish first), then
    SIGKILLed as the OOM killer does: the workers still alive 10 s later (none, where each dies with its parent)."""
    parent = subprocess.Popen(
        [*cli_command(), "trace", "inspect", str(ranks), "--jobs", "2"],
        env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and parent.poll() is None and time.monotonic() < deadline:
            workers = children(parent.pid)
        os.kill(parent.pid, signal.SIGSTOP)
        workers = children(parent.pid)
        assert len(workers) == 2, "the read ended before both workers were seen"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        return [w for w in workers if alive(w)]
    finally:
        for pid in [*workers, parent.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=30)


# protobuf's wire format as the tests write it: wizard/testing/pftrace.py's encoder (the builders' and the hostile
# cases'), which shares nothing with the decoders the tests check (protobuf.py and wizard/_core.c).
encode_varint = pftrace.varint  # protobuf.dev, Encoding, "Base 128 Varints"
dfield = pftrace.field  # a length-delimited field (wire type 2)


def every_change(message: bytes) -> Iterator[bytes]:
    """Every cut of a message and every one-byte change to the values a reader treats specially."""
    for cut in range(len(message)):
        yield message[:cut]
    for at in range(len(message)):
        for byte in (0x00, 0x07, 0x7F, 0x80, 0xFF):
            yield message[:at] + bytes([byte]) + message[at + 1 :]


def tag(number: int, wire: int) -> bytes:
    """A field's key: its number and wire type (protobuf.dev, Encoding, "Message Structure")."""
    return encode_varint(number << 3 | wire)


def vfield(number: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return tag(number, 0) + encode_varint(value)


def call_outcome(function: Any, *args: Any) -> tuple[str, Any]:
    """What a call gives: ("value", its value), or its error's type and words (what a compiled function and its
    Python twin must agree on, the words a reader's one-line error quotes)."""
    try:
        return "value", function(*args)
    except Exception as error:  # noqa: BLE001 - the error's type and words are what is compared
        return type(error).__name__, str(error)


def demo_trace(path: Path, repeat: int = 1) -> Path:
    """The builder's demo launches (``repeat`` times over) written to ``path``: the small healthy trace."""
    builder = TraceBuilder()
    for spec in demo_launches() * repeat:
        builder.add(spec)
    return builder.write(path)


def pftrace_conversions(directory: Path, repeat: int = 1) -> list[Path]:
    """.pftrace files Perfetto's own package writes (skipped where it is not installed): the demo trace and the four
    smallest shared Kineto traces, converted as transformer_nuggets does (wizard/testing/pftrace.py)."""
    pytest.importorskip("perfetto.trace_builder.proto_builder")
    from tests.conftest import TRACES

    sources = [
        demo_trace(directory / "demo.json", repeat),
        *sorted(TRACES.glob("*.json"), key=lambda p: p.stat().st_size)[:4],
    ]
    made = []
    for source in sources:
        target = directory / f"{source.stem}.pftrace"
        target.write_bytes(pftrace.convert(json.loads(source.read_bytes())))
        made.append(target)
    return made


def twin_swapper(monkeypatch: pytest.MonkeyPatch, modules: Sequence[Any], twins: dict[Any, Any]) -> Any:
    """A function that swaps, in ``modules``, every name bound to a compiled function of ``twins`` for its Python
    twin (the names each module bound them under), undone with the test."""

    def swap() -> None:
        for module in modules:
            for name, value in list(vars(module).items()):
                if any(value is compiled for compiled in twins):
                    monkeypatch.setattr(module, name, twins[value])

    return swap


def read_peak_mb(read: Any, path: Path) -> float:
    """tracemalloc's peak, in MiB, while ``read(path)`` runs (garbage collected first)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        read(path)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def passes_peak_bytes(path: Path, plots: bool = False) -> int:
    """The Python heap's peak over the passes of one whole inspection of ``path`` (what the read holds, and every
    pass over it: the read's own peak is its batch of rows, a constant), asked as ``trace inspect --json`` asks it
    (no per-launch records kept, no pictures unless ``plots``, as ``--report page.html`` asks: the library's defaults
    keep a record per launch on purpose, for a DataFrame)."""
    import tracemalloc

    from wizard.api import inspect_traces
    from wizard.trace.inspection import run

    read = run.read_trace  # type: ignore[attr-defined]  # the name the inspection calls

    def read_then_reset(*args: Any, **kwargs: Any) -> Any:
        contents = read(*args, **kwargs)
        tracemalloc.reset_peak()  # the passes' peak from here
        return contents

    tracemalloc.start(1)
    try:
        base = tracemalloc.get_traced_memory()[0]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(run, "read_trace", read_then_reset)
            inspect_traces([str(path)], launches="none", plots=plots)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


_RECORDER_HEAD = """
import atexit, collections, gc, json, sys
out, library = sys.argv.pop(1), sys.argv.pop(1) == "library"
compiled = collections.Counter()
"""
_RECORDER_TAIL = """
atexit.register(_write)
sys.addaudithook(_audit)
if library:
    from wizard.api import inspect_traces
    inspect_traces(sys.argv[1:])
else:
    from wizard.cli.app import entry
    entry()
"""


def recorded_run(tmp_path: Path, hooks: str, *args: str, library: bool = False) -> dict[str, Any]:
    """The real entry point (or the library's inspect_traces) on ``args`` in a process where ``hooks`` (source
    defining ``_audit``, an audit hook, and ``_write``, run at exit to write the record to ``out``; ``compiled``, a
    Counter, and the modules above are there for them) watch it, and what that process recorded."""
    out = tmp_path / "recorded.json"
    runner = _RECORDER_HEAD + hooks + _RECORDER_TAIL
    done = subprocess.run(
        [sys.executable, "-c", runner, str(out), "library" if library else "cli", *args],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=cli_env(PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    recorded: dict[str, Any] = json.loads(out.read_text())
    return recorded


# -- what a collector keeps, deeply (the scanner's and the .pftrace sink's tests compare two collectors) --------


def deep_state(obj: Any, visiting: frozenset[int] = frozenset()) -> Any:
    """Everything reachable from ``obj`` as plain data that tells 1 from 1.0 and True, -0.0 from 0.0, nan from None
    and dictionaries' order: structs by their fields, slotted and plain objects by their attributes, arrays by
    their type code. Not by identity (a value the scanner made once and shared is the one msgspec makes twice);
    ``msgspec.Raw`` as its bytes (the scanner hands the Raw fields to the collector as bytes, which reads both
    alike). Anything else fails, so that nothing is compared by an address."""
    if obj is None or isinstance(obj, (bool, str, bytes, int, float)):
        return f"{type(obj).__name__}:{obj!r}"
    if isinstance(obj, (msgspec.Raw, memoryview, bytearray)):
        return f"bytes:{bytes(obj)!r}"
    if type(obj) is object:  # a sentinel (a memo's "not yet")
        return "<object>"
    if id(obj) in visiting:
        raise AssertionError(f"a cycle through {type(obj).__name__}")
    inner = visiting | {id(obj)}
    if isinstance(obj, array.array):
        return ("array", obj.typecode, [deep_state(v) for v in obj])
    if isinstance(obj, dict):
        return (type(obj).__name__, [(deep_state(k, inner), deep_state(v, inner)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [deep_state(v, inner) for v in obj])
    if isinstance(obj, (set, frozenset)):
        return (type(obj).__name__, sorted(repr(deep_state(v, inner)) for v in obj))
    return (type(obj).__name__, _deep_attributes(obj, inner))


def _deep_attributes(obj: Any, inner: frozenset[int]) -> dict[str, Any]:
    """A struct's fields, an object's slots and its ``__dict__``, each as ``state``."""
    fields: dict[str, Any] = {}
    if isinstance(obj, msgspec.Struct):
        fields.update((f, deep_state(getattr(obj, f), inner)) for f in obj.__struct_fields__)
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in fields and not slot.startswith("__") and hasattr(obj, slot):
                fields[slot] = deep_state(getattr(obj, slot), inner)
    fields.update((k, deep_state(v, inner)) for k, v in getattr(obj, "__dict__", {}).items())
    if not fields and not isinstance(obj, msgspec.Struct):
        raise AssertionError(f"no way to compare a {type(obj).__name__}")
    return fields


def kept(collector: Collector) -> Any:
    """The collector's contents and its memos (names, op and frame refs, reported values, dims, raws)."""
    return deep_state((collector.c, collector))


class Colour(enum.IntEnum):
    RED = 1


class Tag(str, enum.Enum):
    A = "a"


DOCUMENTS: list[Any] = [  # what the JSON writer is held to (tests/cli/test_serialize.py, test_clean_twins.py)
    {},
    [],
    {"a": [], "b": {}, "c": [[]], "d": [{}]},
    {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "zero": -0.0, "tiny": 1e-05, "big": 1e16, "pi": math.pi},
    {"ints": [0, -1, 2**63, -(2**70), True, False, None], "enum": Colour.RED, "tag": Tag.A},
    {"text": 'quote " backslash \\ brackets [ ] { } , : newline \n tab \t nul \x00 é ☃ 😀'},
    {"undecodable": ["\udcff", "a\ud800b", "\udc80\udc80"]},  # surrogateescape's bytes: msgspec refuses them
    {1: "int key", None: "none key", (1, 2): "tuple key", 2.5: "float key", Colour.RED: "enum key"},
    {"numpy": [np.float64(1.5), np.float64("nan"), np.int64(7), np.bool_(True)]},
    {"tuple": (1, (2, 3)), "set": {4}, "frozenset": frozenset({5}), "path": Path("/tmp/x y"), "bytes": b"\xff"},
    OrderedDict([("z", 1), ("a", [1.0, 2.25])]),
    [{"deep": [[[[{"x": [1, {"y": None}]}]]]]}],
    "a bare string",
    3.5,
]
