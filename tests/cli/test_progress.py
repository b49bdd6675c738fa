"""Progress on long work (issue 29): a bar for reading a big trace and a live line per probe, on
stderr at a terminal only, past half a second; never a byte of it with --json on captured stdout,
in a pipe, under CI, with NO_COLOR or from the Python API.

The renderer's timing is tested with an injected clock and a simulated terminal (System); what a
person sees is tested at a real pseudo-terminal (pexpect), waiting on what appears, never on time.
"""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.conftest import EXAMPLES, HANG_GUARD_S, REPO, cli_command, cli_env, needs_torch, strict_json
from wizard.cli.app import main
from wizard.system import System
from wizard.testing.traces import TraceBuilder, demo_launches

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")

SMALL = EXAMPLES / "traces" / "grid-overflow.json"
HIDE_CURSOR = "\x1b[?25l"  # rich's live display starts by hiding the cursor, and shows it at the end
SHOW_CURSOR = "\x1b[?25h"
ERASE_LINE = "\x1b[2K"
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# ---- the renderer, with a clock and a terminal the test controls ------------------------------
class StepClock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now_s = 100.0

    def now(self) -> Any:
        import datetime as dt

        return dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)

    def monotonic(self) -> float:
        return self.now_s


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def renderer(*, live: bool, clock: StepClock) -> tuple[Any, Terminal]:
    from wizard.ui.progress import TerminalProgress
    from wizard.ui.render import make_console

    screen = Terminal()
    console = make_console(screen, no_color=False, width=100)
    return TerminalProgress(console, clock, live=live, delay=0.5), screen


def test_work_done_within_half_a_second_draws_nothing() -> None:
    clock = StepClock()
    progress, screen = renderer(live=True, clock=clock)
    one = progress.task("small.json", doing="reading", total=1000, unit="bytes")
    clock.now_s += 0.4
    one.update(1000)
    one.close()
    progress.close()
    assert screen.getvalue() == ""


def test_a_bar_past_half_a_second_shows_bytes_and_is_erased_when_the_work_ends() -> None:
    clock = StepClock()
    progress, screen = renderer(live=True, clock=clock)
    one = progress.task("big.json", doing="reading", total=400e6, unit="bytes")
    clock.now_s += 0.6
    one.update(100e6)
    clock.now_s += 1.0
    one.update(200e6)
    progress._bars.refresh()  # what the refresh thread draws 4 times a second
    drawn = screen.getvalue()
    assert "big.json" in drawn and "reading" in drawn and "200.0/400.0 MB" in drawn
    one.close()
    after = screen.getvalue()[len(drawn) :]
    assert ERASE_LINE in after and SHOW_CURSOR in after  # the line erased, the cursor back
    assert ESCAPES.sub("", after).strip() == ""  # and nothing drawn again


def test_a_probe_shares_one_line_that_says_what_it_does_now() -> None:
    clock = StepClock()
    progress, screen = renderer(live=True, clock=clock)
    probe = progress.task("trace.inspect", doing="running")
    clock.now_s += 0.6
    step = progress.task("", doing="running PyTorch's trace validator")  # a step of whatever runs
    probe.update()
    progress._bars.refresh()
    text = ESCAPES.sub("", screen.getvalue())
    assert "trace.inspect  running PyTorch's trace validator" in text
    assert len(progress._lines) == 1
    step.close()
    probe.close()
    assert progress._lines == []


def test_plain_lines_for_a_log_at_most_every_five_seconds() -> None:
    clock = StepClock()
    progress, screen = renderer(live=False, clock=clock)
    one = progress.task("big.json", doing="reading", total=400e6, unit="bytes")
    for _ in range(10):
        clock.now_s += 1.0
        one.update(40e6 * (clock.now_s - 100))
    one.close()
    lines = screen.getvalue().splitlines()
    assert lines == [
        "big.json  reading: 40.0 MB of 400.0 MB (1 s)",
        "big.json  reading: 240.0 MB of 400.0 MB (6 s)",
        "big.json: done in 10.0 s",
    ]


# ---- when it is on: the CLI's rules, on a simulated terminal ----------------------------------
class FastClock(StepClock):
    """Every reading a second later: any work is past the delay at once, so a small trace would
    show the bar wherever the rules let it."""

    def monotonic(self) -> float:
        self.now_s += 1.0
        return self.now_s


def run_at(args: list[str], *, tty: tuple[str, ...] = ("stdout", "stderr"), **environ: str) -> tuple[int, str, str]:
    out = Terminal() if "stdout" in tty else io.StringIO()
    err = Terminal() if "stderr" in tty else io.StringIO()
    variables = {k: v for k, v in cli_env().items() if k not in ("CI", "NO_COLOR")}
    system = System(stdin=io.StringIO(""), stdout=out, stderr=err, environ={**variables, **environ}, clock=FastClock())
    status = main(["--debug", *args], system)
    return status, out.getvalue(), err.getvalue()


def test_at_a_terminal_the_bar_is_drawn_on_stderr() -> None:
    status, out, err = run_at(["trace", "inspect", str(SMALL)])
    assert status == 1 and HIDE_CURSOR in err and "grid-overflow.json" in err
    assert HIDE_CURSOR not in out


@pytest.mark.parametrize(
    ("args", "tty", "environ"),
    [
        (["--json"], ("stderr",), {}),  # --json with stdout captured
        (["--markdown", "-"], ("stderr",), {}),
        ([], ("stdout",), {}),  # stderr a pipe
        ([], ("stdout", "stderr"), {"CI": "1"}),
        ([], ("stdout", "stderr"), {"NO_COLOR": "1"}),
        (["--quiet"], ("stdout", "stderr"), {}),
    ],
    ids=["json", "markdown-stdout", "pipe", "CI", "NO_COLOR", "quiet"],
)
def test_no_progress_byte(args: list[str], tty: tuple[str, ...], environ: dict[str, str]) -> None:
    status, out, err = run_at(["trace", "inspect", str(SMALL), *args], tty=tty, **environ)
    assert status == 1 and err == ""
    if args == ["--json"]:
        strict_json(out)


def test_no_color_flag_draws_nothing_and_progress_forces_plain_lines() -> None:
    assert run_at(["--no-color", "trace", "inspect", str(SMALL)])[2] == ""
    status, _, err = run_at(["--no-color", "trace", "inspect", str(SMALL), "--progress"])
    assert status == 1 and HIDE_CURSOR not in err and "\x1b" not in err
    assert re.fullmatch(r"grid-overflow\.json: done in [\d.]+ s", err.splitlines()[-1]), err
    _, _, log = run_at(["trace", "inspect", str(SMALL), "--progress"], tty=("stdout",), CI="1")
    assert "grid-overflow.json  reading: " in log  # for a log: plain lines, even under CI


def test_trace_fix_shows_its_read_and_its_write(tmp_path: Path) -> None:
    status, out, err = run_at(["trace", "fix", str(SMALL), str(tmp_path / "fixed.json")])
    text = ESCAPES.sub("", err)
    assert (
        status == 0
        and "grid-overflow.json  reading" in text
        and "grid-overflow.json  writing the corrected copy" in text
    )
    assert HIDE_CURSOR not in out and (tmp_path / "fixed.json").is_file()


def test_a_probe_reports_what_it_does_on_the_system_it_is_given() -> None:
    status, out, err = run_at(["probe", "trace.inspect", "--param", f"paths={SMALL}"], tty=("stderr",))
    assert status == 1 and "FAIL" in out and HIDE_CURSOR not in out
    assert "trace.inspect" in err and "reading the trace" in ESCAPES.sub("", err)


def test_the_api_reports_nothing_unless_given_a_hook() -> None:
    import wizard

    seen: list[tuple[str, Any]] = []
    wizard.inspect_traces(SMALL, progress=Recorder(seen))
    size = SMALL.stat().st_size
    name = "grid-overflow.json"
    assert seen == [("task", (name, size, "bytes")), ("update", (name, size)), ("close", name)]


class Recorder:
    """A progress hook of the caller's own: what the library reported, in order."""

    def __init__(self, seen: list[tuple[str, Any]], label: str = "") -> None:
        self.seen, self.label = seen, label

    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Any = "") -> Any:
        self.seen.append(("task", (label, total, unit)))
        return Recorder(self.seen, label)

    def update(self, completed: float | None = None, **_: Any) -> None:
        self.seen.append(("update", (self.label, completed)))

    def close(self) -> None:
        self.seen.append(("close", self.label))


def test_a_rank_directory_has_a_bar_for_its_files_and_one_for_each_file_read_even_in_workers(tmp_path: Path) -> None:
    import shutil

    import wizard

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(3):
        shutil.copy(SMALL, ranks / f"rank{rank}.json")
    size = SMALL.stat().st_size
    files = [f"rank{rank}.json" for rank in range(3)]
    for jobs in (1, 2):  # in this process, and in a pool of worker processes whose reports come back
        seen: list[tuple[str, Any]] = []
        wizard.inspect_traces(ranks, jobs=jobs, progress=Recorder(seen))
        mine = [(k, v) for k, v in seen if "trace files" not in v]
        assert seen[0] == ("task", ("trace files", 3, "files")) and seen[-1] == ("close", "trace files")
        counted = [v for k, v in seen if k == "update" and v[0] == "trace files"]
        assert counted == [("trace files", n) for n in (1, 2, 3)]
        assert sorted(v for k, v in mine if k == "task") == [(f, size, "bytes") for f in files]
        assert sorted(v for k, v in mine if k == "update") == [(f, size) for f in files]
        assert sorted(v for k, v in mine if k == "close") == files


def test_pytorchs_validator_runs_beside_the_inspection(tmp_path: Path) -> None:
    """The validator (a fresh interpreter importing torch: seconds) starts before the inspection
    reads the trace, not after it: the inspection's read waits until the validator has started, and
    the validator's run until the read has begun; one after the other, each would wait in vain."""
    from wizard.environment import Environment
    from wizard.probes.trace_inspect import TraceInspectProbe
    from wizard.runner import CommandResult

    validator_started, read_started = threading.Event(), threading.Event()
    overlapped: list[bool] = []

    class Runner:
        def run(self, argv: Any, *, timeout: float, env: Any = None, cwd: Any = None, log_path: Any = None) -> Any:
            validator_started.set()
            overlapped.append(read_started.wait(30))
            line = 'WARPWIZARD_RESULT {"ok": true, "available": true, "torch": "2.13.0", "passed": true}'
            return CommandResult(list(argv), 0, line, 0.1, False)

    doings: list[str] = []

    class Watcher(Recorder):
        def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Any = "") -> Any:
            doings.append(doing)
            if unit == "bytes":  # the inspection begins to read the file
                read_started.set()
                overlapped.append(validator_started.wait(30))
            return super().task(label, doing=doing, total=total, unit=unit)

    seen: list[tuple[str, Any]] = []
    env = Environment.of(report_dir=tmp_path / "report", runner=Runner(), progress=Watcher(seen))
    result = TraceInspectProbe().run(env, {"paths": [str(SMALL)], "torch_validator": True})
    assert overlapped == [True, True]
    assert "PyTorch's trace validator (torch 2.13.0) on grid-overflow.json: its timeline rules all pass" in (
        result.evidence
    )
    assert "reading the trace and running PyTorch's trace validator" in doings
    assert doings[-1] == "running PyTorch's trace validator"  # what the probe's line says while it waits


# ---- at a real terminal ---------------------------------------------------------------------------
def terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR")}
    return {**env, "COLUMNS": "120", "LINES": "40", "TERM": "xterm", **extra}


def spawn(args: list[str], cwd: Path, **extra: str) -> pexpect.spawn[str]:
    command = cli_command()
    return pexpect.spawn(
        command[0],
        [*command[1:], *args],
        cwd=str(cwd),
        env=terminal_env(**extra),
        encoding="utf-8",
        timeout=HANG_GUARD_S,  # a ceiling for a stuck run, not a budget: each step waits on output
        dimensions=(40, 120),
    )


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 100 MB: a third of a second to read on this project's two idle cores since the compiled scanner, so the
    tests that need the bar up feed it through a FIFO that stalls."""
    folder = tmp_path_factory.mktemp("big")
    builder = TraceBuilder(gpu="H100")
    for spec in demo_launches():
        builder.add(spec)
    source = builder.write(folder / "source.json")
    big = folder / "big.json"
    maker = REPO / "benchmarks" / "make_big_trace.py"
    subprocess.run([sys.executable, str(maker), str(source), str(big), "--size-gb", "0.1"], check=True, timeout=900)
    return big


# A fresh interpreter: a thread holds ctypes' import lock (as the validator's thread did while it loaded
# libc for its subprocess) at the instant the rank directory's workers fork; each worker then imports
# numpy, which imports ctypes. Before the fix the workers waited for that lock forever.
FORK_WHILE_IMPORTING = """
import importlib.abc, sys, threading, time
from wizard.inspect_options import InspectOptions
from wizard.trace.inspection.run import inspect_paths
assert "ctypes" not in sys.modules and "numpy" not in sys.modules
holding = threading.Event()

class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "ctypes" and threading.current_thread().name == "importer":
            holding.set()
            time.sleep(3)  # with ctypes' module lock held
        return None

sys.meta_path.insert(0, Slow())
threading.Thread(target=lambda: __import__("ctypes"), name="importer").start()
holding.wait()
inspection = inspect_paths([sys.argv[1]], InspectOptions(jobs=2))
print("ranks", len(inspection.reports))
"""


def test_a_rank_directory_is_read_while_another_thread_imports(tmp_path: Path) -> None:
    """The flagship on a rank directory hung: forked workers inherited an import lock another thread held."""
    ranks = EXAMPLES / "traces" / "rank-skew"
    done = subprocess.run(
        [sys.executable, "-c", FORK_WHILE_IMPORTING, str(ranks)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ranks", str(len(list(ranks.glob("*.json"))))]


@contextlib.contextmanager
def stalled(big_trace: Path, fifo: Path, *, then_the_rest: bool) -> Iterator[threading.Event]:
    """A FIFO at ``fifo`` fed the big trace's first 24 MB, then held until the event is set (then given the rest,
    where asked): a read of it waits there with its bar up, however fast the machine. The event is set on the way
    out, whatever the test did."""
    os.mkfifo(fifo)
    release = threading.Event()

    def writer() -> None:
        with big_trace.open("rb") as source, fifo.open("wb") as sink, contextlib.suppress(BrokenPipeError):
            sink.write(source.read(24 << 20))  # broken when Ctrl-C comes before the reader took it all
            sink.flush()
            release.wait(600)
            if then_the_rest:
                sink.write(source.read())

    threading.Thread(target=writer, daemon=True).start()
    try:
        yield release
    finally:
        release.set()


def test_the_bar_appears_on_a_big_trace_and_is_gone_when_the_report_prints(big_trace: Path, tmp_path: Path) -> None:
    """The trace comes through a FIFO whose writer waits a quarter of the way in until the bar is up, then writes
    the rest: since the compiled scanner a 100 MB file is read within the bar's half-second delay on an idle
    machine, so only a stall shows the bar however fast the machine (its "of the file's size" is the unit test's,
    test_a_bar_past_half_a_second_shows_bytes_and_is_erased_when_the_work_ends)."""
    (tmp_path / "fifo").mkdir()
    fifo = tmp_path / "fifo" / "big.json"
    with stalled(big_trace, fifo, then_the_rest=True) as shown:
        child = spawn(["trace", "inspect", str(fifo)], tmp_path)
        child.expect(r"big\.json\S*  reading")
        child.expect(r"[\d.]+ MB")  # bytes read (a pipe has no size to read them of)
        shown.set()
        child.expect(re.escape(SHOW_CURSOR))  # the live display ended
        ended = str(child.before)
        child.expect(pexpect.EOF)
        report = str(child.before)
        child.close()
    assert child.exitstatus == 1
    assert ended.rstrip("\r").endswith(ERASE_LINE)  # the bar's line erased before the cursor came back
    assert "Impossible or wrong values found" in report
    assert "MB/s" not in report and "reading" not in report  # nothing of the bar after the report began


def test_no_bar_on_a_small_trace(tmp_path: Path) -> None:
    child = spawn(["trace", "inspect", str(SMALL)], tmp_path)
    child.expect(pexpect.EOF)
    output = str(child.before)
    child.close()
    assert child.exitstatus == 1
    assert "Impossible or wrong values found" in output
    assert HIDE_CURSOR not in output and "reading" not in output


def _helper_threads_blocking(pid: int) -> dict[str, bool]:
    """Each thread of ``pid`` but its main one: whether it blocks SIGINT (Linux's /proc)."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        pytest.skip("no /proc here to read the threads' signal masks from")
    found = {}
    for task in tasks.iterdir():
        if task.name == str(pid):
            continue
        try:
            text = (task / "status").read_text()
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile (the bar's timer)
            continue
        status = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        found[f"{status['Name'].strip()} {task.name}"] = bool(int(status["SigBlk"], 16) & (1 << (signal.SIGINT - 1)))
    return found


def test_a_program_started_from_a_helper_thread_takes_the_stop_signals() -> None:
    """A fork keeps its thread's signal mask through exec: PyTorch's validator, started from the thread
    beside the inspection, ignored the SIGTERM of a timeout until SIGKILL came."""
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc here to read a signal mask from")
    from wizard.runner import SubprocessRunner
    from wizard.threads import STOPPING, start

    found: list[str] = []
    code = "print([x for x in open('/proc/self/status') if x.startswith('SigBlk')][0])"

    def helper() -> None:
        found.append(SubprocessRunner().run([sys.executable, "-c", code], timeout=HANG_GUARD_S).output)

    start(threading.Thread(target=helper)).join()
    (line,) = [x for x in found[0].splitlines() if x.startswith("SigBlk")]
    blocked = int(line.split()[1], 16)
    assert [s for s in STOPPING if blocked & (1 << (int(s) - 1))] == []


def test_ctrl_c_during_the_bar_stops_cleanly(big_trace: Path, tmp_path: Path) -> None:
    """The trace comes through a FIFO whose writer stops a third of the way in: the read waits there
    with its bar up, however fast the machine, until Ctrl-C."""
    fifo = tmp_path / "stalled.json"
    with stalled(big_trace, fifo, then_the_rest=False):
        child = spawn(["trace", "inspect", str(fifo)], tmp_path)
        child.expect(r"stalled\.json\S*  reading")
        child.expect(r"[\d.]+ MB")  # bytes read (a pipe has no size to read them of)
        # Every helper thread (the bar's refresh and timer) blocks SIGINT: one that took it left the main
        # thread asleep in its read, and Ctrl-C did nothing (seen under load).
        assert child.pid is not None
        helpers = _helper_threads_blocking(child.pid)
        assert helpers and all(helpers.values()), helpers
        child.sendintr()
        child.expect("warpwizard: error: interrupted")
        before = str(child.before)
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 130
    assert SHOW_CURSOR in before  # the bar erased and the cursor back before the one error line
    assert "Traceback" not in before + str(child.before)


def _at_a_pty(argv: list[str], *, stdout: int | None = None, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run with stderr (and stdout unless given) on a fresh pty: (status, stdout if piped, the pty's bytes)."""
    master, slave = pty.openpty()
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(
        argv, stdin=slave, stdout=stdout if stdout is not None else slave, stderr=slave, env=env, check=False
    )
    os.close(slave)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, proc.stdout or b"", bytes(seen)


def test_json_on_captured_stdout_puts_no_progress_byte_on_the_terminal(big_trace: Path) -> None:
    argv = [*cli_command(), "trace", "inspect", str(big_trace), "--json"]
    status, out, terminal = _at_a_pty(argv, stdout=subprocess.PIPE, env=terminal_env())
    assert status == 1 and terminal == b""
    assert strict_json(out.decode())["impossible"]


def test_ci_at_a_terminal_puts_no_progress_byte_there(big_trace: Path) -> None:
    argv = [*cli_command(), "trace", "inspect", str(big_trace)]
    status, _, terminal = _at_a_pty(argv, env=terminal_env(CI="1"))
    text = terminal.decode()
    assert status == 1 and "Impossible or wrong values found" in text
    assert HIDE_CURSOR not in text and "reading" not in text and "MB/s" not in text


def test_a_pipe_gets_no_progress_byte(big_trace: Path) -> None:
    proc = subprocess.run(
        [*cli_command(), "trace", "inspect", str(big_trace)], capture_output=True, env=terminal_env(), check=False
    )
    assert proc.returncode == 1 and proc.stderr == b""


def test_the_python_api_at_a_terminal_prints_nothing(big_trace: Path) -> None:
    code = "import sys, wizard; wizard.inspect_traces(sys.argv[1])"
    status, _, terminal = _at_a_pty([sys.executable, "-c", code, str(big_trace)], env=terminal_env())
    assert status == 0 and terminal == b""


@needs_torch
def test_a_live_probe_line_while_a_workload_runs_under_the_cpu_profiler(tmp_path: Path) -> None:
    """The flagship re-profiles examples/workloads/tiny_matmul.py under torch.profiler in a fresh
    interpreter (seconds: torch's import alone): the line says so, then is replaced by the result."""
    answers = EXAMPLES / "answers" / "workload-cpu.yaml"
    child = spawn(
        ["run", "negative-warps-per-sm", "--answers", str(answers), "--allow-commands"],
        REPO,
        WARPWIZARD_REPORT_DIR=str(tmp_path / "report"),
        CUDA_VISIBLE_DEVICES="",
    )
    child.expect(r"profiler\.reprofile\S*  profiling `python examples/workloads/tiny_matmul\.py` under torch\.profiler")
    child.expect(r"\d:\d\d:\d\d")  # the time elapsed
    # (trace.inspect's own line no longer shows: PyTorch's validator now takes a tenth of a second, under
    # the half second before a line is drawn; test_pytorchs_validator_runs_beside_the_inspection keeps it.)
    child.expect("Diagnosis: no-gpu-kernels")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_help_loads_nothing_of_progress() -> None:
    code = (
        "import sys\nfrom wizard.cli.app import main\n"
        "try:\n    main(['trace', 'inspect', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('wizard.ui.progress', 'rich', 'rich.progress') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout
