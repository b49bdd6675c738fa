"""What docs/security.md promises, one promise per test: generated code holds untrusted text as
data; files are written whole, beside what the user edited, never over an input; signals and
closed pipes end a run with the right status and nothing left behind."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import (
    EXAMPLES,
    REPO,
    ScriptedRunner,
    cli_command,
    cli_env,
    needs_torch,
    run_inprocess,
    start_flagship_workload,
    strict_json,
)
from wizard.compare import MachineReport, compare
from wizard.environment import Environment
from wizard.probes.base import Status
from wizard.probes.op_isolate import OpIsolateProbe, repro_source

HOSTILE_NAMES = [
    'aten::mul"""\nimport os; open("PWNED-op", "w").write("x")\n"""',
    "aten::x'''; open('PWNED-op', 'w') #",
    "aten::back\\slash\\\\n\\x00",
    "aten::nul\x00byte",
    "aten::undecodable\udcff\udcfe",
    "aten::newline\r\n\u2028",
    "aten::" + "A" * 100_000,
]


def _spec_of(source: str) -> dict[str, object]:
    """The data literal of a generated repro, read back without running anything."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SPEC":
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.Constant)
            text = call.args[0].value
            assert isinstance(text, str)
            spec: dict[str, object] = json.loads(text)
            return spec
    raise AssertionError("no SPEC in the repro")


@pytest.mark.parametrize("op", HOSTILE_NAMES, ids=lambda n: repr(n)[:30])
def test_hostile_op_names_round_trip_as_data(op: str) -> None:
    source = repro_source(op, [[4, 4]], ["float"])
    spec = _spec_of(source)
    assert spec["op"] == op and spec["shapes"] == [[4, 4]]
    assert source.isascii()  # any byte of the name is an escape inside one string literal
    code_lines = [line for line in source.splitlines() if "PWNED" in line]
    assert all(line.startswith("SPEC = json.loads(") for line in code_lines)


@needs_torch
def test_a_hostile_repro_runs_as_written(tmp_path: Path) -> None:
    """Run the generated script for real: the name is looked up as an op, never executed."""
    script = tmp_path / "repro.py"
    script.write_text(repro_source(HOSTILE_NAMES[0], [[2, 2], [2, 2]], ["float", "float"]))
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "t.json")], cwd=tmp_path, capture_output=True, text=True
    )
    assert '"missing_op": true' in result.stdout, result.stdout + result.stderr
    assert not (tmp_path / "PWNED-op").exists()


def test_a_rerun_writes_beside_the_repro_the_user_edited(tmp_path: Path) -> None:
    """File placement only: the repro itself runs for real in test_probes.py."""
    runner = ScriptedRunner('WARPWIZARD_RESULT {"device": "cpu"}\n')
    env = Environment.of(report_dir=tmp_path / "report", runner=runner)
    params = {"op": "aten::mul", "input_dims": "[[2,2],[2,2]]", "input_types": '["float","float"]'}
    first = OpIsolateProbe().run(env, params, timeout=120)
    script = Path(first.facts["repro_script"])
    assert script.name == "repro.py"
    again = OpIsolateProbe().run(env, params, timeout=120)  # unedited: replaced in place
    assert again.facts["repro_script"] == str(script)
    script.write_text(script.read_text() + "\n# my change\n")
    third = OpIsolateProbe().run(env, params, timeout=120)
    assert Path(third.facts["repro_script"]).name == "repro-2.py"
    assert script.read_text().endswith("# my change\n")
    assert [Path(argv[1]).name for argv in runner.calls] == ["repro.py", "repro.py", "repro-2.py"]
    assert third.status is Status.SKIP and third.facts["device"] == "cpu"


def test_compare_names_the_mechanism_that_differs() -> None:
    h100 = MachineReport("a.json", "node1", ["H100"], None, None, ["A", "E"], True)
    a100 = MachineReport("b.json", "node2", ["A100"], None, None, ["E"], True)
    result = compare([h100, a100])
    assert result.hardware_specific
    assert result.verdict == (
        "hardware or driver specific: A only on node1 (H100), not on node2 (A100); E (harmless) on every machine"
    )


def test_graph_quotes_conditions_as_written() -> None:
    from wizard.playbook.graph import dot, mermaid
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    pb = load_playbook(REPO / "playbooks" / "negative-warps-per-sm.yaml", catalog())
    assert '-->|"#quot;A\'#quot; in facts.inspect.mechanisms"| early_overflow' in mermaid(pb)
    assert '-> early_overflow [label="\\"A\'\\" in facts.inspect.mechanisms"];' in dot(pb)


def test_interrupted_runs_never_overwrite_saved_answers(tmp_path: Path) -> None:
    """Sessions go to the state directory (never where the user stands); a second Ctrl-C in the same
    second writes beside the first; with nothing answered, nothing is written; --record's name is
    used when given, beside any file already there."""
    import datetime as dt

    from wizard.cli.run import _continue_with
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog
    from wizard.runs import save_interrupted
    from wizard.system import System

    class Fixed:
        def now(self) -> dt.datetime:
            return dt.datetime(2026, 11, 30, 7, 15, 0, tzinfo=dt.timezone.utc)

        def monotonic(self) -> float:
            return 0.0

    pb = load_playbook(REPO / "playbooks" / "negative-warps-per-sm.yaml", catalog())
    system = System(environ={"XDG_STATE_HOME": str(tmp_path / "state")}, clock=Fixed())
    here = tmp_path / "here"
    here.mkdir()
    os.chdir(here)
    try:
        first, _ = save_interrupted(pb, {"have": "trace"}, system, inputs=[])
        second, _ = save_interrupted(pb, {"have": "description"}, system, inputs=[])
        none, why = save_interrupted(pb, {}, system, inputs=[])
        (here / "mine.yaml").write_text("my own\n")
        recorded, _ = save_interrupted(pb, {"have": "trace"}, system, record="mine.yaml", inputs=[])
    finally:
        os.chdir(REPO)
    sessions = tmp_path / "state" / "warpwizard" / "sessions"
    assert first == str(sessions / "negative-warps-per-sm-20261130T071500.yaml")
    assert second == str(sessions / "negative-warps-per-sm-20261130T071500-2.yaml")
    assert _continue_with(pb.id) == "continue with: warpwizard run negative-warps-per-sm --resume"
    assert yaml.safe_load(Path(first).read_text()) == {"have": "trace"}
    assert none is None and "nothing was saved" in why
    assert recorded == "mine-2.yaml" and (here / "mine.yaml").read_text() == "my own\n"
    assert sorted(p.name for p in here.iterdir()) == ["mine-2.yaml", "mine.yaml"]


def test_a_closed_pipe_keeps_the_exit_status() -> None:
    """`trace inspect ... | head -1` still says 1 (impossible values found)."""
    proc = subprocess.Popen(
        [*cli_command(), "trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head -1` does
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr


def test_a_full_disk_leaves_no_partial_file(tmp_path: Path) -> None:
    """A write that fails halfway (here a file-size limit, as a full disk would) is exit 7, nothing left."""
    import resource

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "fixed.json"
    result = subprocess.run(
        [*cli_command(), "trace", "fix", str(EXAMPLES / "traces" / "grid-overflow.json"), str(out)],
        capture_output=True,
        text=True,
        env=cli_env(),
        preexec_fn=small_files,
        timeout=60,
    )
    assert result.returncode == 7, result.stderr
    assert "cannot write the corrected trace (File too large)" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no fixed.json, no temporary file


@needs_torch
def test_sigterm_stops_the_workload_and_saves_the_answers(tmp_path: Path) -> None:
    proc, workload = start_flagship_workload(tmp_path)
    script = tmp_path / "slow.py"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    (session,) = (Path(os.environ["XDG_STATE_HOME"]) / "warpwizard" / "sessions").iterdir()
    assert f"terminated (SIGTERM); answers so far saved to {session} (continue with: warpwizard run" in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(workload, 0)  # stopped with the run, not left behind
    saved = yaml.safe_load(session.read_text())
    assert saved == {"have": "workload", "workload_cmd": f"python {script}"}


@needs_torch
def test_python_dash_c_workload_and_a_failing_one(tmp_path: Path) -> None:
    ok = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=workload", "--set", "workload_cmd=python -c \"print('hi')\"",
        "--json", "--report-dir", str(tmp_path / "ok"),
    )  # fmt: skip
    assert ok.status == 0, ok.stderr
    entries = {e["node"]: e for e in ok.json["entries"]}
    assert entries["reprofile"]["facts"]["workload_failed"] is False
    failing = run_inprocess(
        "run", "negative-warps-per-sm", "--set", "have=workload",
        "--set", "workload_cmd=python -c \"raise SystemExit('no data here')\"",
        "--json", "--report-dir", str(tmp_path / "bad"),
    )  # fmt: skip
    transcript = strict_json(failing.stdout)
    assert transcript["conclusion"]["diagnosis"] == "workload-failed"
    assert transcript["conclusion"]["evidence"] == ["it ended with: no data here"]
