"""Start-up of ``trace inspect`` (issue 48, item 1): what a plain Kineto JSON inspection loads, read from the real
command's own import log (``python -X importtime``, as PYTHONPROFILEIMPORTTIME=1 asks of any entry point).

At 506439c ``trace inspect`` on a 6 KB trace took 122 ms, 286 ms by 2026-12-01. Among what it loaded at start-up
and did not use: the fixer (imported by ``wizard.api``), numpy (by the Cuspy module when the reader loaded), the
report renderers and the process pool. Each is now loaded where it is used; these tests fail when one of them is
loaded at start-up again. numpy itself is still loaded by the health checks (their tables are numpy arrays) once a
trace has been read: that import is checked to come from a running check, never from loading a module.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, cli_command, cli_env
from tests.helpers import demo_trace

# Loaded only where used: the fixer (trace fix), compare (compare, rank-skew over reports), the report renderers
# (--report, --markdown), the process pool (a file of 96 MB and more on three cores or more, or several files).
NOT_AT_START = ("wizard.trace.fix", "wizard.compare", "wizard.report.registry", "concurrent.futures", "multiprocessing")

IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|( *)(\S+)$")


def _import_log(trace: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[tuple[int, str]]]:
    """The real command on ``trace``, with each import as (depth, module) in the order Python logs it (a module
    after the imports it made, one level deeper)."""
    done = subprocess.run(
        [*cli_command(), "trace", "inspect", "--json", "--fail-on", "never", str(trace)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=cli_env(PYTHONPROFILEIMPORTTIME="1", PYTHONPATH=str(REPO)),
    )
    log = []
    for line in done.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            log.append((len(match[1]) // 2, match[2]))
    return done, log


def _importer(log: list[tuple[int, str]], index: int) -> str | None:
    """The module whose loading imported ``log[index]``: the first later entry one level up (None: imported by
    running code, not by loading a module)."""
    depth = log[index][0]
    return next((name for d, name in log[index + 1 :] if d < depth), None)


def test_plain_kineto_inspection_loads_no_fixer_renderer_or_pool(tmp_path: Path) -> None:
    done, log = _import_log(demo_trace(tmp_path / "small.json"), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"kernels": 3' in done.stdout  # it did inspect the trace: the demo's three launches
    loaded = {name for _, name in log}
    assert "wizard.trace.inspection.run" in loaded  # the log is the real one (a name it must hold)
    assert [m for m in NOT_AT_START if m in loaded] == []


def test_numpy_is_not_loaded_by_loading_a_module(tmp_path: Path) -> None:
    """numpy may come in only from code that runs (a health check's function), never because a module of
    warpwizard imports it at its top: that cost every command, every trace, at start-up."""
    done, log = _import_log(demo_trace(tmp_path / "small.json"), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    where = [i for i, (_, name) in enumerate(log) if name == "numpy"]
    assert len(where) == 1  # imported once, so logged once
    assert _importer(log, where[0]) is None, f"numpy loaded by loading {_importer(log, where[0])}"


def test_reading_a_plain_kineto_trace_loads_no_numpy(tmp_path: Path) -> None:
    """The reader on its own (wizard.trace.read.reader, as the fixer and the profiler hooks use it): a Kineto
    trace, which is no Cuspy trace, is read without numpy (only Cuspy's clamping counts use it)."""
    trace = demo_trace(tmp_path / "small.json")
    code = (
        "import sys\n"
        "from wizard.trace.read.reader import read_trace\n"
        f"contents = read_trace({str(trace)!r})\n"
        "print(len(contents.kernels), repr(contents.writer), 'numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=cli_env(PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3", "'PyTorch", "profiler", "(Kineto)'", "False"]


def test_the_import_log_parser_finds_a_module_level_import() -> None:
    """The check above can fail: a log where numpy is loaded inside the Cuspy module's import names that module."""
    log = [(2, "numpy._core"), (1, "numpy"), (0, "wizard.trace.read.cuspy"), (0, "numpy.ma")]
    assert _importer(log, 1) == "wizard.trace.read.cuspy"
    assert _importer(log, 3) is None
