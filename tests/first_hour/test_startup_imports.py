"""What ``trace inspect --json`` on a small trace does not load (issue 48's start-up: 122 ms at 506439c, 286 ms by
2026-12-01, the goal 130 ms): read from the real entry point's own ``sys.modules`` as the process exits.

Each module named here was loaded at start-up without being needed by a plain inspection, and is now loaded only
where used: importlib.metadata (with email, zipfile and csv) by the plugin look-up when no installed distribution
declares a warpwizard group (wizard/plugins.py), numpy.ma by ``np.unique`` and ``np.median`` (the checks use
``tables.distinct`` and ``tables.median``), statistics (with fractions) by the checks' registry. The rest are the
interactive and optional libraries a plain inspection has no use for. numpy itself is still loaded by the health
checks (their tables are numpy arrays): docs/performance.md says what that costs. The console script loads it
with OpenBLAS's thread pool at one thread (wizard/numpy_threads.py): the last two tests count the threads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, cli_env
from tests.helpers import demo_trace

NOT_LOADED = (
    # loaded only where used (issue 48)
    "importlib.metadata", "email", "zipfile", "csv", "numpy.ma", "statistics", "fractions",
    # the interactive and optional libraries
    "rich", "yaml", "questionary", "prompt_toolkit", "regex", "re2", "pandas", "torch",
)  # fmt: skip

# The console script's own function, with the modules loaded by the time the process exits written to a file
# (atexit runs after ``entry``'s sys.exit).
RUNNER = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from wizard.cli.app import entry
entry()
"""


def _loaded(trace: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The real command on ``trace`` and every module in its ``sys.modules`` at exit."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(out), "trace", "inspect", "--json", "--fail-on", "never", str(trace)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=cli_env(PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done, set(json.loads(out.read_text()))


def _heavy(loaded: set[str]) -> list[str]:
    return [m for m in NOT_LOADED if m in loaded or any(name.startswith(m + ".") for name in loaded)]


@pytest.mark.parametrize("which", ["builder", "example"])
def test_a_small_inspection_loads_none_of_the_heavy_modules(which: str, tmp_path: Path) -> None:
    trace = demo_trace(tmp_path / "small.json") if which == "builder" else EXAMPLES / "traces" / "grid-overflow.json"
    done, loaded = _loaded(trace, tmp_path)
    report = json.loads(done.stdout)["reports"][0]
    assert report["kernels"] == (3 if which == "builder" else 4)  # the demo's three launches; the example's four
    assert len(report["health"]) >= 10  # the checks ran (each reports, ok or not)
    # the list is the process's own: the modules the inspection ran are in it
    assert {"wizard.trace.inspection.run", "wizard.trace.health.checks", "msgspec.json"} <= loaded
    assert _heavy(loaded) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    """The same reading names a heavy module the command does load: an installed distribution whose entry points
    name the trace passes' group (here with none in it) brings importlib.metadata back, as it must: the full
    look-up decides what the group holds."""
    site = tmp_path / "site"
    info = site / "pass_plugin-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pass-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[warpwizard.passes]\n")
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(out), "trace", "inspect", "--json", "--fail-on", "never",
         str(demo_trace(tmp_path / "small.json"))],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=cli_env(PYTHONPATH=f"{REPO}:{site}"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "importlib.metadata" in _heavy(set(json.loads(out.read_text())))


# -- numpy's BLAS threads (wizard/numpy_threads.py) -------------------------------------------------------------

TASKS = """
import atexit, json, os, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps([len(os.listdir("/proc/self/task")),
                                                          os.environ.get("OPENBLAS_NUM_THREADS")])))
"""
needs_proc = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")


def _threads_at_exit(code: str, args: list[str], tmp_path: Path, **env: str) -> tuple[int, str | None]:
    """The process's threads (numpy's BLAS pool among them) as it exits, and its OPENBLAS_NUM_THREADS then."""
    out = tmp_path / "tasks.json"
    environ = cli_env(PYTHONPATH=str(REPO), **env)
    if "OPENBLAS_NUM_THREADS" not in env:
        environ.pop("OPENBLAS_NUM_THREADS", None)  # a setting of the test run's own would be the user's
    done = subprocess.run(
        [sys.executable, "-c", TASKS + code, str(out), *args], capture_output=True, text=True, timeout=300,
        cwd=tmp_path, env=environ,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    tasks, variable = json.loads(out.read_text())
    return tasks, variable


def _plain_numpy(tmp_path: Path, **env: str) -> int:
    """What numpy alone starts in a bare interpreter with this environment (the second computation)."""
    return _threads_at_exit("import numpy\n", [], tmp_path, **env)[0]


@needs_proc
def test_the_command_loads_numpy_with_one_blas_thread_and_leaves_no_variable(tmp_path: Path) -> None:
    trace = str(demo_trace(tmp_path / "small.json"))
    tasks, variable = _threads_at_exit(
        "from wizard.cli.app import entry\nentry()\n", ["trace", "inspect", "--json", "--fail-on", "never", trace],
        tmp_path,
    )  # fmt: skip
    assert tasks == 1  # the main thread only: OpenBLAS started none (numpy alone starts _plain_numpy's)
    assert variable is None  # a program warpwizard starts does not inherit it


@needs_proc
def test_a_users_setting_and_a_library_caller_keep_numpys_threads(tmp_path: Path) -> None:
    trace = str(demo_trace(tmp_path / "small.json"))
    command = "from wizard.cli.app import entry\nentry()\n"
    args = ["trace", "inspect", "--json", "--fail-on", "never", trace]
    assert _threads_at_exit(command, args, tmp_path, OPENBLAS_NUM_THREADS="2") == (
        _plain_numpy(tmp_path, OPENBLAS_NUM_THREADS="2"),
        "2",
    )
    library = f"from wizard.api import inspect_traces\ninspect_traces([{trace!r}])\n"
    assert _threads_at_exit(library, [], tmp_path) == (_plain_numpy(tmp_path), None)
