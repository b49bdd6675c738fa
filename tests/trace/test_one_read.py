"""One inspection per run (issue 34): a run opens each trace file once, its HTML report included.

Every open of a trace file goes through ``wizard.trace.read.source.open_input`` (the JSON walker, the format
recognition, the Perfetto and SQLite readers, the parallel workers). These tests count a run's opens two ways: by
wrapping that one function, and by a Python audit hook that sees every ``open``/``os.open`` in this process,
whoever makes it; both must say one per trace file, so no open goes around the one function either.

PyTorch's own trace validator (``torch_validator: true`` in the flagship's and the triage's ``inspect``) is
aside, as the issue says: it runs in the probed interpreter, a process of its own that reads the file itself
(no count here can see it), and before that ``_torch_validator`` in wizard/probes/trace_inspect.py looks at the
file's first bytes (``formats.detect``) to tell whether it is Chrome JSON, in its own thread, named ``beside``
(``_Beside`` there). The count leaves out exactly that thread's opens, and asserts it made one.

The engine's ``--from`` fingerprint of each file a probe node names (the transcript's ``input_files``: size and
mtime stat'ed before the probe runs, and a hash of the first and last MiB) opens nothing more: the hash is taken
from the read's one open (``wizard/file_ends.py``, by ``pread``) and kept in the run's store by the file's
identity, so no open is counted apart but the validator's, and the transcript's fingerprint is still the one
earlier versions wrote (checked here against that formula, computed independently).
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, TRACES, RunCli, old_fingerprint, strict_json
from wizard.environment import Environment, RunInspections, file_identity
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.read import parallel, source

VALIDATOR_THREAD = "beside"  # wizard/probes/trace_inspect.py, _Beside: the thread PyTorch's validator runs from
PM_COUNTER = "sm__warps_active.avg.per_cycle_active"

_AUDITED: list[list[tuple[str, str]]] = []  # while a test counts: its list of (resolved path, thread)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _AUDITED and isinstance(args[0], (str, bytes, os.PathLike)):
        _AUDITED[-1].append((os.path.realpath(os.fsdecode(args[0])), threading.current_thread().name))


sys.addaudithook(_audit)  # a hook stays for the process: it records nothing unless a test is counting


class Opens:
    """The opens a run made through the one function and, by the audit hook, at all, per resolved path."""

    def __init__(self) -> None:
        self.through: list[tuple[str, str]] = []
        self.audited: list[tuple[str, str]] = []

    def of(self, found: list[tuple[str, str]], *, aside: bool = False) -> Counter[str]:
        """Per path, the opens by the validator's thread (``aside``) or, without it, by the rest."""
        return Counter(path for path, who in found if (who == VALIDATOR_THREAD) is aside)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[Opens]:
    """Wrap ``open_input`` wherever a module bound it (``from ... import open_input``) and turn the hook on."""
    counted = Opens()
    real = source.open_input

    def counting(path: Path) -> Any:
        counted.through.append((os.path.realpath(path), threading.current_thread().name))
        return real(path)

    bound = [m for m in list(sys.modules.values()) if getattr(m, "open_input", None) is real]
    assert {m.__name__ for m in bound} >= {
        "wizard.trace.read.source",
        "wizard.trace.read.formats",
        "wizard.trace.read.reader",
        parallel.__name__,  # imported above: the file alone runs as it does in the suite
    }
    for module in bound:
        monkeypatch.setattr(module, "open_input", counting)
    _AUDITED.append(counted.audited)
    try:
        yield counted
    finally:
        _AUDITED.remove(counted.audited)


def _trace(tmp_path: Path, *, counters: bool) -> Path:
    """The flagship's impossible-registers case (300 registers per thread: its run reaches step 6,
    metrics.sanity), with PM-sampling counters while the kernel runs or without."""
    b = TraceBuilder(gpu="H100", kineto="2.14")
    b.add(KernelSpec("void corrupted_record_kernel", (2048, 1, 1), (128, 1, 1), 300, 0, "aten::mul",
                     [[1024, 256], [1024, 256]], ["float", "float"], plant="garbled", dur=3000))  # fmt: skip
    if counters:
        ((start, _),) = b.kernel_spans
        for i, value in enumerate((11.0, 12.0, 13.0)):
            b.add_counter(PM_COUNTER, start + 1000 * i, value)
    return b.write(tmp_path / ("pm.json" if counters else "plain.json"))


def _answers(tmp_path: Path, trace: Path) -> Path:
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\nother_profile: ''\ncustom_kernel: false\n")
    return answers


def _assert_one_open_each(opens: Opens, trace: Path) -> None:
    through, audited = opens.of(opens.through), opens.of(opens.audited)
    trace_files = set(through)  # every file read as a trace: the run's and those its probes wrote
    path = str(trace.resolve())
    assert path in trace_files
    assert through == Counter(dict.fromkeys(trace_files, 1))  # one open per trace file, through the one function
    assert {p: audited[p] for p in trace_files} == dict.fromkeys(trace_files, 1)  # and no other open, fingerprints'
    # Left out above, exactly: the validator's look at the first bytes, in its own thread.
    assert opens.of(opens.through, aside=True) == Counter({path: 1})
    assert opens.of(opens.audited, aside=True)[path] == 1


def _assert_fingerprinted(doc: dict[str, Any], trace: Path, probes: list[str]) -> None:
    """Each probe node naming the trace recorded the fingerprint earlier versions wrote (--from reuses it)."""
    expected = old_fingerprint(trace)
    found = [e["probe"] for e in doc["entries"] if (e.get("input_files") or {}).get(str(trace)) == expected]
    assert found == probes


@pytest.mark.parametrize("counters", [True, False], ids=["pm-counters", "no-counters"])
def test_a_flagship_run_with_an_html_report_opens_each_trace_once(
    tmp_path: Path, run_cli: RunCli, opens: Opens, counters: bool
) -> None:
    pytest.importorskip("plotly", reason="the HTML report needs the html extra (plotly)")
    trace = _trace(tmp_path, counters=counters)
    out = tmp_path / "run.html"
    result = run_cli("run", "negative-warps-per-sm", "--answers", str(_answers(tmp_path, trace)), "--report",
                     str(out), "--json")  # fmt: skip
    assert result.status == 0, result.stderr
    doc = strict_json(result.stdout)
    assert doc["conclusion"]["diagnosis"] == "impossible-kernel-attributes"
    (sanity,) = [e for e in doc["entries"] if e.get("probe") == "metrics.sanity"]
    assert sanity["facts"]["impossible_registers"] == 1
    # the counters came from the one read (there is no second pass over the file any more)
    assert sanity["facts"]["counters"] == ([PM_COUNTER] if counters else [])
    assert len(sanity["facts"]["measured"]) == (1 if counters else 0)
    assert "corrupted_record_kernel" in out.read_text()  # the page drew the run's inspection
    _assert_one_open_each(opens, trace)
    # inspect's paths, profile.compare's trace (step 1's comparison: no other profile, nothing opened),
    # hardware.compare's (step 5's comparison, the same: the run's one read), metrics'
    _assert_fingerprinted(doc, trace, ["trace.inspect", "profile.compare", "hardware.compare", "metrics.sanity"])


def test_the_triage_continuing_into_the_flagship_opens_the_trace_once(
    tmp_path: Path, run_cli: RunCli, opens: Opens
) -> None:
    pytest.importorskip("plotly", reason="the HTML report needs the html extra (plotly)")
    trace = _trace(tmp_path, counters=True)
    out = tmp_path / "run.html"
    result = run_cli("run", "triage", "--answers", str(_answers(tmp_path, trace)), "--report", str(out), "--json")
    assert result.status == 0, result.stderr
    doc = strict_json(result.stdout)
    assert [link["playbook"]["id"] for link in doc["chain"]] == ["triage", "negative-warps-per-sm"]
    assert doc["conclusion"]["diagnosis"] == "impossible-kernel-attributes"
    (sanity,) = [e for e in doc["entries"] if e.get("probe") == "metrics.sanity"]
    assert sanity["facts"]["counters"] == [PM_COUNTER]  # from the triage's read, which the flagship's probes reuse
    _assert_one_open_each(opens, trace)
    _assert_fingerprinted(
        doc, trace, ["trace.inspect", "profile.compare", "hardware.compare", "metrics.sanity"]
    )  # the flagship's carried


def _big_trace(path: Path, kernels: int) -> Path:
    b = TraceBuilder(gpu="H100")
    for i in range(kernels):
        b.add(KernelSpec(f"void k{i % 11}", (4096, 1, 1), (256, 1, 1), 32, 0))
    return b.write(path)


def _shared(name: str) -> Path:
    path = TRACES / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (real traces are never committed)")
    return path


@pytest.mark.parametrize(
    "trace",
    [
        pytest.param(lambda tmp: _trace(tmp, counters=True), id="under-a-MiB"),
        pytest.param(lambda tmp: _big_trace(tmp / "one-and-a-half.json", 1700), id="ends-overlapping"),
        pytest.param(lambda tmp: _big_trace(tmp / "three.json", 3500), id="ends-apart"),
        pytest.param(lambda tmp: _shared("v100-df-index-resolver.json.gz"), id="gzip-raw-bytes"),
        pytest.param(lambda tmp: _shared("nsys-mfu_2gpu_before.sqlite"), id="nsys-sqlite"),
    ],
)
def test_the_fingerprint_is_the_old_formula_from_the_one_open(tmp_path: Path, opens: Opens, trace: Any) -> None:
    """The hash the read took from its descriptor is the one earlier versions computed by opening the file again
    (a compressed file: its raw bytes), whatever the size (the two ends overlapping, or apart) and the format."""
    from wizard.engine.reuse import fingerprints, stat_inputs
    from wizard.probes.base import ParamSpec
    from wizard.probes.inspections import inspection

    path: Path = trace(tmp_path)
    specs = (ParamSpec("paths", "paths", "traces"),)
    env = Environment(inspections=RunInspections())
    before = stat_inputs(specs, {"paths": [str(path)]})
    inspection(env, [str(path)])
    recorded = fingerprints(before, env.inspections.ends)
    assert opens.of(opens.audited)[str(path.resolve())] == 1  # the read's open, and no other
    assert recorded == {str(path): old_fingerprint(path)}


def test_only_the_runs_reads_hash_the_files_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint is the engine's (ReaderConfig.fingerprint): ``trace inspect``, ``diff`` and a library read
    hash nothing (2 MiB through CPython's own SHA-256 was 12 ms of every read); the run's inspection hashes the
    file once, from the read's open, to the old formula."""
    from wizard.file_ends import OpenedEnds, opened_ends
    from wizard.probes.inspections import inspection
    from wizard.trace.inspection.run import inspect_paths
    from wizard.trace.read import reader

    hashed: list[str] = []

    def counted(p: Path, fd: int) -> OpenedEnds | None:
        hashed.append(str(p))
        return opened_ends(p, fd)

    monkeypatch.setattr(reader, "opened_ends", counted)
    path = _big_trace(tmp_path / "three.json", 3500)
    assert reader.read_trace(path).ends is None
    assert inspect_paths([str(path)]).reports[0].ends is None
    assert hashed == []
    read = reader.read_trace(path, config=reader.ReaderConfig(fingerprint=True))
    assert read.ends is not None and read.ends.sha256_ends == old_fingerprint(path)["sha256_ends"]
    env = Environment(inspections=RunInspections())
    inspection(env, [str(path)])
    assert hashed == [str(path), str(path)]


def test_a_trace_the_reader_refuses_is_opened_once_too(tmp_path: Path, run_cli: RunCli, opens: Opens) -> None:
    """A flagship run on a trace that does not parse: the reader's one open found its ends before it failed, and the
    fingerprint takes them from the error (before, the engine opened the refused file again to hash it)."""
    trace = tmp_path / "corrupt.json"
    trace.write_bytes((REPO / "examples" / "traces" / "corrupt.json").read_bytes())
    answers = _answers(tmp_path, trace)
    path = str(trace.resolve())
    written = opens.of(opens.audited)[path]  # the test's own writing of the file
    result = run_cli("run", "negative-warps-per-sm", "--answers", str(answers), "--json")
    assert opens.of(opens.through) == Counter({path: 1})  # the reader's
    assert opens.of(opens.audited)[path] - written == 1  # and no other, the fingerprint's included
    # (PyTorch's validator, in its own thread, is left to finish on its own when the inspection fails: not counted)
    doc = strict_json(result.stdout)
    assert doc["conclusion"]["diagnosis"] == "trace-unreadable", result.stderr
    (inspect,) = [e for e in doc["entries"] if e.get("probe") == "trace.inspect"]
    assert inspect["status"] == "error"
    assert inspect["input_files"] == {str(trace): old_fingerprint(trace)}  # the old formula, from that one open


def test_a_file_rewritten_during_the_run_is_read_again(tmp_path: Path, opens: Opens) -> None:
    from wizard.probes.inspections import contents, inspection

    trace = _trace(tmp_path, counters=False)
    env = Environment(inspections=RunInspections())
    first = inspection(env, [str(trace)], keep_contents=True)
    assert inspection(env, [str(trace)]) is first  # the same file: the same inspection
    assert contents(env, str(trace)).kernels[0].registers == 300
    b = TraceBuilder(gpu="H100", kineto="2.14")
    b.add(KernelSpec("void rewritten_kernel", (64, 1, 1), (128, 1, 1), 32, 0))
    b.write(trace)  # same path, new contents: another size and mtime
    again = inspection(env, [str(trace)])
    assert again is not first and again.reports[0].metrics.groups == []
    assert contents(env, str(trace)).kernels[0].name == "void rewritten_kernel"  # not the kept, stale contents
    assert opens.of(opens.through)[str(trace.resolve())] == 3  # read, read again, and contents read on its own


def test_the_contents_a_run_kept_are_released_before_its_report(tmp_path: Path) -> None:
    from wizard.probes.inspections import CONTENTS, inspection

    trace = _trace(tmp_path, counters=False)
    env = Environment(inspections=RunInspections())
    inspection(env, [str(trace)], keep_contents=True)
    key = file_identity(str(trace))
    assert key is not None and env.inspections.find(CONTENTS, key) is not None
    env.inspections.release(CONTENTS)
    assert env.inspections.find(CONTENTS, key) is None


def test_counters_collected_in_the_read_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wizard.trace.read import counters
    from wizard.trace.read.reader import read_trace

    monkeypatch.setattr(counters, "MAX_SAMPLES", 5)
    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("k", (4, 1, 1), (128, 1, 1)))
    for i in range(12):
        b.add_counter("SM Active", float(i), float(i))
    contents = read_trace(b.write(tmp_path / "many.json"))
    assert contents.counter_events == 12
    assert {k: list(s.values) for k, s in counters.counter_series(contents).items()} == {
        (0, "SM Active"): [0.0, 1.0, 2.0, 3.0, 4.0]
    }


def test_the_parallel_workers_read_the_one_open_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big file's blocks are decoded by forked workers: each reads its byte range from the descriptor of the
    read's one open, which it inherited, and opens nothing (an open there fails the read: fork copies the patch)."""
    from wizard.trace.read.reader import ReaderConfig, read_trace, usable_cores

    if usable_cores() < 2:
        pytest.skip("needs two cores for two workers")
    b = TraceBuilder(gpu="H100")
    for i in range(400):
        b.add(KernelSpec(f"k{i % 7}", (4096, 1, 1), (256, 1, 1), 32, 0))
    for i in range(40):
        b.add_counter(PM_COUNTER, 10.0 * i, float(i))
    path = b.write(tmp_path / "big.json")
    sequential = read_trace(path, config=ReaderConfig(workers=0))

    def refuse(path: Path, **_: Any) -> Any:
        raise AssertionError(f"a worker opened {path} itself")

    monkeypatch.setattr(parallel, "open_input", refuse)
    opened = source.STATS.opened[str(path)]
    split = read_trace(
        path, config=ReaderConfig(block_size=16 << 10, parallel_block=8 << 10, parallel_min_bytes=0, workers=2)
    )
    assert split.timing["workers"] == 2
    assert source.STATS.opened[str(path)] - opened == 1
    assert [k.name for k in split.kernels] == [k.name for k in sequential.kernels]
    # the counters' samples come back from the workers' blocks, in file order
    found, alone = counters_of(split), counters_of(sequential)
    assert list(found) == [(0, PM_COUNTER)]
    assert list(found[(0, PM_COUNTER)].values) == [float(i) for i in range(40)] == list(alone[(0, PM_COUNTER)].values)


def counters_of(contents: Any) -> Any:
    from wizard.trace.read.counters import counter_series

    return counter_series(contents)


@pytest.mark.parametrize(("report", "draws"), [("run.html", True), ("run.htm", True), ("run.md", False), (None, False)])
def test_only_a_page_makes_the_first_inspection_gather_its_plots(report: str | None, draws: bool) -> None:
    """The run knows its report's format before any probe runs: an HTML page, and only it, draws the trace."""
    pytest.importorskip("plotly", reason="the HTML report needs the html extra (plotly)")
    from wizard.runs import RunOutputs

    assert RunOutputs(None, report, False, []).draws_trace() is draws
