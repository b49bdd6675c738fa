"""Shared fixtures and paths: where the real traces are, and how to run the real CLI.

At the top of tests/ so its fixtures reach every room. Tests live in folders by room; tests/README.md says which
room a new test goes in. What several test modules call by name lives in tests/helpers.py; no test module
imports another (tests/first_hour/test_suite_layout.py).
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests check what the code does with every input, not how fast: Hypothesis' 200 ms deadline per example
# failed them on a loaded machine (a first call 500 ms, the replay 0.7 ms). Where time matters, a test bounds it
# itself (the hostile catalogue, the reader's time limits).
settings.register_profile("warpwizard", deadline=None)
settings.load_profile("warpwizard")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TRACES = SHARED / "traces"
ORACLES = SHARED / "oracles" / "kineto-blocks-warps-vectors.json"
EXAMPLES = REPO / "examples"

HAVE_TORCH = importlib.util.find_spec("torch") is not None  # probes import it in a subprocess, never here
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed in this interpreter")

needs_shared = pytest.mark.skipif(
    not TRACES.is_dir(),
    reason="../shared/traces is not beside this checkout (real traces are never committed); "
    "the builder-made fixtures in the other tests cover the same code paths",
)

# file -> kernel events, counted once with json.load (see test_reader.py)
REAL_TRACES: dict[str, int] = {
    "a100-alexnet.json.gz": 79,
    "b200-eager.json.gz": 768,
    "cpu-only-rank34.json.gz": 0,
    "dlrm-2ranks/worker0_step_12.1694128201545.pt.trace.json": 245,
    "dlrm-2ranks/worker1_step_12.1694128201556.pt.trace.json": 310,
    "h100-bert-small.json.gz": 60,
    "h800-deepseek-train-rank0.json.gz": 963,
    "mi250-rocm-minitoy.json.gz": 14,
    "mi300-bert-small.json.gz": 60,
    "rtx2080ti-linear.json.gz": 8716,
    "trimmed-no-device-properties.json": 1,
    "v100-df-index-resolver.json.gz": 19370,
    "v100-old-keys-gpu-metrics.json": 30,
    "v100-resnet50-2021.pt.trace.json.gz": 8772,
    "v100-resnet50-pt18-array-format.pt.trace.json.gz": 9538,
}


# A test waits for an event (a prompt, a line, an exit), never for a wall-clock budget that a busy
# machine breaks. What remains is a guard against a hang: long enough for any load, short enough
# that a hung test still ends (pytest-timeout's, in pyproject.toml, is longer still).
HANG_GUARD_S = 600.0


def load_factor() -> float:
    """How much slower than idle this machine runs now: runnable processes per core (at least 1),
    times WARPWIZARD_TEST_SLOWDOWN (for a machine slow in other ways)."""
    try:
        busy = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        busy = 1.0
    return max(1.0, busy) * max(1.0, float(os.environ.get("WARPWIZARD_TEST_SLOWDOWN") or 1))


def budget(seconds: float) -> float:
    """A bound that a test asserts (a hostile input is refused within it), scaled to the load, so a
    busy runner does not fail it while a hang or a quadratic blow-up still does."""
    return seconds * 2 * load_factor()


def cli_command() -> list[str]:
    """The installed console script (the real entry point), else ``python -m wizard``."""
    script = Path(sys.executable).with_name("warpwizard")
    if script.exists():
        return [str(script)]
    found = shutil.which("warpwizard")
    return [found] if found else [sys.executable, "-m", "wizard"]


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"})
    env.pop("WARPWIZARD_PLAYBOOK_PATH", None)
    env.update(extra)
    return env


RunCli = Callable[..., Any]


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCli:
    """``run_inprocess`` with the environment of a user whose probes write under this test's
    tmp_path: the same helper, as a fixture (one in-process runner for every test)."""

    def run(
        *args: str, cwd: Path = REPO, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
    ) -> CliResult:  # timeout: in-process runs are bounded by pytest-timeout instead
        environ = env or cli_env(WARPWIZARD_REPORT_DIR=str(tmp_path / "report"))
        return run_inprocess(*args, stdin=stdin or "", environ=environ, cwd=cwd, replace_environ=True)

    return run


@pytest.fixture
def run_process(tmp_path: Path) -> RunCli:
    """Run the installed console script in a real process: for what only a process shows (start-up,
    signals, the interpreter's own streams)."""

    def run(
        *args: str, cwd: Path = REPO, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli_command(), *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or cli_env(WARPWIZARD_REPORT_DIR=str(tmp_path / "report")),
        )

    return run


def load_json_trace(path: Path) -> Any:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def write_trace(doc: Any, path: Path, *, bare: dict[str, str] | None = None) -> Path:
    """Write a trace one event per line; ``bare`` maps placeholder strings to bare tokens."""
    if isinstance(doc, list):
        text = "[\n  " + ",\n  ".join(json.dumps(e) for e in doc) + "\n]\n"
    else:
        events = doc.pop("traceEvents")
        head = ",\n".join(f'  "{k}": {json.dumps(v)}' for k, v in doc.items())
        text = "{\n" + head + (",\n" if head else "") + '  "traceEvents": [\n  '
        text += ",\n  ".join(json.dumps(e) for e in events) + "\n  ]\n}\n"
        doc["traceEvents"] = events
    for placeholder, token in (bare or {}).items():
        text = text.replace(json.dumps(placeholder), token)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def kernels_of(doc: Any) -> list[dict[str, Any]]:
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    return [e for e in events if e.get("cat") in ("kernel", "Kernel")]


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON token {token}")


def strict_json(text: str | bytes) -> Any:
    """Parse JSON as any other tool would: NaN, Infinity and -Infinity are errors."""
    return json.loads(text, parse_constant=_reject_constant)


def old_fingerprint(path: Path) -> dict[str, Any]:
    """A file's ``--from`` fingerprint as wizard/engine/reuse.py wrote it before its hash came from the trace
    read's own open (commit bfc8598): written out here on its own, so what a run records is checked against the
    formula every earlier transcript holds, not against the code that computes it now."""
    import hashlib

    info = path.stat()
    with path.open("rb") as fh:
        digest = hashlib.sha256(fh.read(1 << 20))
        if info.st_size > 1 << 20:
            fh.seek(max(1 << 20, info.st_size - (1 << 20)))
            digest.update(fh.read(1 << 20))
    return {"kind": "file", "size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256_ends": digest.hexdigest()}


def inspected(run_cli: Any, path: Path) -> dict[str, Any]:
    """The one trace report of ``trace inspect PATH --json --fail-on never``, parsed strictly (it must succeed)."""
    result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
    assert result.status == 0, result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    assert isinstance(report, dict)
    return report


def health_check(report: dict[str, Any], check: str) -> dict[str, Any]:
    """One health check's verdict in a trace report."""
    found = next(c for c in report["health"] if c["check"] == check)
    assert isinstance(found, dict)
    return found


GPU_DATA = REPO / "tests" / "data" / "gpu"


@dataclass
class CliResult:
    """What one in-process run of the CLI gave: the exit status and both streams."""

    status: int
    stdout: str
    stderr: str

    @property
    def returncode(self) -> int:  # the name a process result has: tests read either
        return self.status

    @property
    def json(self) -> Any:
        return strict_json(self.stdout)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site directory on sys.path for this test (where plugin tests install packages); the modules it adds are
    forgotten after it."""
    where = tmp_path / "site"
    where.mkdir()
    monkeypatch.syspath_prepend(str(where))
    before = set(sys.modules)
    yield where
    for name in set(sys.modules) - before:
        if name.startswith(("warpwizard_example_plugin", "hostile_plugin", "clashing_plugin", "pass_plugin")):
            del sys.modules[name]


@pytest.fixture(autouse=True, scope="session")
def _facts_match_their_declaration() -> Any:
    """Every probe run anywhere in the tests (the CLI in-process included) produces only facts its
    declaration names, each of its declared type: a misspelt or mistyped fact fails the test that ran it."""
    from wizard.probes.base import fact_problems
    from wizard.probes.registry import builtin_probes

    originals = {type(p): type(p).run for p in builtin_probes().values()}

    def checked(original: Any) -> Any:
        def run(self: Any, env: Any, params: Any, *, timeout: float = 600.0) -> Any:
            result = original(self, env, params, timeout=timeout)
            problems = fact_problems(self.facts, result.facts)
            assert problems == [], f"probe {self.name}: {problems}"
            return result

        return run

    for cls, original in originals.items():
        cls.run = checked(original)  # type: ignore[method-assign]
    yield
    for cls, original in originals.items():
        cls.run = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _report_dir_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Probes' workspaces and saved sessions go to the user's state directory unless told otherwise:
    every test points them into its own temporary directory so nothing lands in the user's home."""
    monkeypatch.setenv("WARPWIZARD_REPORT_DIR", str(tmp_path / "report"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # saved sessions, default workspaces


def run_inprocess(
    *args: str,
    stdin: str = "",
    environ: dict[str, str] | None = None,
    cwd: Path | None = None,
    replace_environ: bool = False,
) -> CliResult:
    """``warpwizard ARGS`` through ``main(argv, system)`` with captured streams: no process start.

    ``environ`` adds to this process's variables, or with ``replace_environ`` is the whole of them.
    Runs with ``--debug`` (httpie's ``http()`` is the model): an internal error raises its traceback
    into the test instead of hiding as exit 70, and a status that is no ``ExitStatus`` fails loudly.
    A few tests still start the real console script (and a real terminal); most do not need to.
    """
    import io

    from wizard.cli.app import main
    from wizard.system import System

    out, err = io.StringIO(), io.StringIO()
    variables = dict(environ or {}) if replace_environ else cli_env(**(environ or {}))
    system = System(
        stdin=io.StringIO(stdin),
        stdout=out,
        stderr=err,
        environ=variables,
        isatty=lambda stream: False,
    )
    from wizard.exit_status import ExitStatus

    with contextlib.chdir(cwd or Path.cwd()):
        status = main(["--debug", *args], system)
    known = {int(s) for s in ExitStatus} - {int(ExitStatus.INTERNAL)}
    assert status in known, f"warpwizard {' '.join(args)}: unexpected exit status {status}: {err.getvalue()[-2000:]}"
    return CliResult(status, out.getvalue(), err.getvalue())


class ScriptedRunner:
    """A runner that starts nothing: it records each argv and answers with the output a real run
    printed (for tests of what a probe does around a program, not of the program)."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.calls: list[list[str]] = []

    def run(
        self,
        argv: Any,
        *,
        timeout: float,
        env: Any = None,
        cwd: str | None = None,
        log_path: Path | None = None,
    ) -> Any:
        from wizard.runner import CommandResult

        self.calls.append(list(argv))
        result = CommandResult(list(argv), 0, self.output, 0.0, False)
        if log_path is not None:
            from wizard.outputs import write_own

            write_own(log_path, self.output)
            result.log_path = str(log_path)
        return result


def start_flagship_workload(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """The real console script walking the flagship into a workload that sleeps: (the process, the
    workload's pid), for tests that signal a run in the middle of a probe."""
    marker = tmp_path / "workload.pid"
    script = tmp_path / "slow.py"
    script.write_text(f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n")
    proc = subprocess.Popen(
        [*cli_command(), "run", "negative-warps-per-sm", "--set", "have=workload", "--set",
         f"workload_cmd=python {script}", "--json", "--report-dir", str(tmp_path / "report")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the workload never started"
    time.sleep(0.2)  # the pid is written; let the write finish
    return proc, int(marker.read_text())


def sql_rows(path: Path, query: str) -> list[tuple[Any, ...]]:
    """A query's rows from an SQLite file opened read-only and immutable: the tests' plain-SQL second reading of
    Nsight Systems exports, sharing nothing with the reader."""
    import sqlite3

    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return list(db.execute(query))
    finally:
        db.close()
