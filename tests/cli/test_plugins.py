"""Plugins: installed packages add probes and playbooks through entry points (docs/plugins.md). A probe
is code the user installed; a playbook from a plugin is data and keeps every playbook rule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, cli_env, strict_json
from tests.helpers import inspect_json, installed

PLUGIN = REPO / "examples" / "plugin"
PACKAGE = "warpwizard_example_plugin"


def _example_plugin(site: Path) -> None:
    shutil.copytree(PLUGIN / PACKAGE, site / PACKAGE)
    installed(
        site,
        "warpwizard-example-plugin",
        f"[warpwizard.probes]\ndisk-free-space = {PACKAGE}:FreeSpaceProbe\n\n"
        f"[warpwizard.playbooks]\nexample = {PACKAGE}.playbooks\n",
    )


def _expected(directory: Path) -> str:
    return "enough-disk-space" if shutil.disk_usage(directory).free / 1e9 >= 2.0 else "disk-too-full-for-trace"


def test_an_installed_plugin_adds_a_probe_and_a_playbook(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    _example_plugin(site)
    probes = run_cli("probes", "disk.free_space")
    assert probes.status == 0, probes.stderr
    assert "  from: plugin warpwizard-example-plugin 0.1.0" in probes.stdout
    assert "    free_gb (float | None): " in probes.stdout  # its facts, typed, from its one declaration
    listed = strict_json(run_cli("probes", "--json").stdout)
    assert {p["name"]: p["origin"] for p in listed}["trace.inspect"] == "builtin"
    shown = run_cli("list")
    assert shown.status == 0 and "trace-disk-space" in shown.stdout and "warpwizard-example-plugin" in shown.stdout
    ran = run_cli("run", "trace-disk-space", "--set", f"trace_dir={tmp_path}", "--json")
    assert ran.status == 0, ran.stderr
    transcript = strict_json(ran.stdout)
    assert transcript["conclusion"]["diagnosis"] == _expected(tmp_path)
    space = next(e for e in transcript["entries"] if e["node"] == "space")
    assert space["probe"] == "disk.free_space" and space["facts"]["path"] == str(tmp_path)


def test_a_plugins_playbook_is_untrusted_data(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    """A playbook from an installed package runs no program the user did not allow, and is checked like
    any playbook: installing it trusts it with nothing."""
    (site / "hostile_plugin").mkdir()
    (site / "hostile_plugin" / "__init__.py").write_text("")
    marker = tmp_path / "PWNED"
    (site / "hostile_plugin" / "runs-a-program.yaml").write_text(
        "id: runs-a-program\ntitle: Runs a program\nversion: '1'\nnodes:\n"
        "  - {id: cmd, kind: probe, probe: command.run, "
        f"params: {{argv: [touch, {json.dumps(str(marker))}]}}, next: done}}\n"
        "  - {id: done, kind: conclusion, diagnosis: ran, summary: 'allowed {{ facts.cmd.allowed }}'}\n"
    )
    (site / "hostile_plugin" / "misspelt.yaml").write_text(
        "id: misspelt\ntitle: Misspelt\nversion: '1'\nnodes:\n"
        "  - {id: inspect, kind: probe, probe: trace.inspect, params: {paths: t.json}, next: done}\n"
        "  - {id: done, kind: conclusion, diagnosis: a, summary: '{{ facts.inspect.mechanizms }}'}\n"
    )
    installed(site, "hostile-plugin", "[warpwizard.playbooks]\nhostile = hostile_plugin\n")
    ran = run_cli("run", "runs-a-program", "--json")
    assert ran.status == 0, ran.stderr
    cmd = next(e for e in strict_json(ran.stdout)["entries"] if e["node"] == "cmd")
    assert cmd["status"] == "skip" and cmd["facts"]["reason"] == "program not allowed" and not marker.exists()
    refused = run_cli("run", "misspelt")
    assert refused.status != 0 and "has no fact 'mechanizms'" in refused.stderr


def test_a_broken_or_clashing_probe_plugin_is_one_line(site: Path, run_cli: RunCli) -> None:
    (site / "clashing_plugin.py").write_text(
        "from wizard.probes.env import EnvProbe\n\nclass Again(EnvProbe):\n    pass\n"
    )
    installed(site, "clashing-plugin", "[warpwizard.probes]\nagain = clashing_plugin:Again\n")
    clash = run_cli("probes")
    assert clash.status == 5, clash.stderr  # ExitStatus.PROBE_FAILURE, never 70
    assert "probe plugin 'again' (plugin clashing-plugin 0.1.0) is named 'env', which builtin already registers" in (
        clash.stderr
    )
    (site / "hostile_plugin.py").write_text("broken = 1 / 0\n")
    installed(site, "hostile-plugin", "[warpwizard.probes]\nbroken = hostile_plugin:Probe\n")
    broken = run_cli("probes")
    assert broken.status == 5, broken.stderr
    assert "probe plugin 'broken' (plugin hostile-plugin 0.1.0, hostile_plugin:Probe) could not load: " in broken.stderr
    assert "ZeroDivisionError" in broken.stderr and "Traceback" not in broken.stderr


@pytest.mark.slow
def test_the_example_plugin_installed_in_a_fresh_venv(tmp_path: Path) -> None:
    """docs/plugins.md, for real: build this project's wheel, the example plugin's and a trace pass plugin's,
    install them into a fresh venv (offline: no dependencies fetched), `warpwizard run` walks the plugin's
    playbook and `trace inspect --json` shows the pass's result."""
    dist = tmp_path / "dist"
    passes = tmp_path / "pass-plugin"
    (passes / "pass_plugin").mkdir(parents=True)
    (passes / "pass_plugin" / "__init__.py").write_text(PASS_PLUGIN)
    (passes / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.24"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "pass-plugin"\nversion = "0.1.0"\ndependencies = ["warpwizard"]\n\n'
        '[project.entry-points."warpwizard.passes"]\nmemcpy-count = "pass_plugin:PASS"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["pass_plugin"]\n'
    )
    for project in (REPO, PLUGIN, passes):
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), project],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    wheels = sorted(str(w) for w in dist.glob("*.whl"))
    assert len(wheels) == 3
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", *wheels],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # dependencies from here
    env = cli_env(WARPWIZARD_REPORT_DIR=str(tmp_path / "report"), XDG_STATE_HOME=str(tmp_path / "state"))
    warpwizard = str(venv / "bin" / "warpwizard")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([warpwizard, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)

    probes = run("probes", "disk.free_space")
    assert probes.returncode == 0 and "from: plugin warpwizard-example-plugin 0.1.0" in probes.stdout, probes.stderr
    listed = run("list")
    assert listed.returncode == 0 and "trace-disk-space" in listed.stdout, listed.stderr
    ran = run("run", "trace-disk-space", "--set", f"trace_dir={tmp_path}", "--json")
    assert ran.returncode == 0, ran.stderr
    assert strict_json(ran.stdout)["conclusion"]["diagnosis"] == _expected(tmp_path)
    assert not os.path.exists(tmp_path / "PWNED")
    inspected = run("trace", "inspect", "--json", str(_memcpy_trace(tmp_path / "t.json")))
    assert inspected.returncode == 0, inspected.stderr  # the pass, from its wheel's entry point
    written = {"memcpys": 2, "kernels_checked": 3, "max_launches": 100}
    assert strict_json(inspected.stdout)["reports"][0]["passes"] == {"memcpy-count": written}


# -- trace passes (warpwizard.passes) ---------------------------------------------------------------

PASS_PLUGIN = """
from dataclasses import dataclass

from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import TracePass


@dataclass
class MemcpyCount:
    memcpys: int
    kernels_checked: int
    max_launches: int


class Counting:
    def __init__(self, options):
        self.options = options
        self.fed = 0

    def feed(self, contents):
        self.fed += 1

    def finish(self, contents, before):
        checked = before.get(METRICS_PASS).kernels_checked  # the flagship's result, typed
        return MemcpyCount(len(contents.timeline.gpu_ops), checked, self.options.max_launches)


def write(result):
    return {"memcpys": result.memcpys, "kernels_checked": result.kernels_checked, "max_launches": result.max_launches}


PASS = TracePass("memcpy-count", MemcpyCount, Counting, write, needs=(METRICS_PASS,))
"""


def _pass_plugin(site: Path, body: str = PASS_PLUGIN, entry: str = "pass_plugin:PASS") -> None:
    (site / "pass_plugin.py").write_text(body)
    installed(site, "pass-plugin", f"[warpwizard.passes]\nmemcpy-count = {entry}\n")


def _memcpy_trace(path: Path) -> Path:
    from wizard.testing.traces import KernelSpec, TraceBuilder

    b = TraceBuilder()
    for i in range(3):
        b.add(KernelSpec(f"healthy_{i}", (64, 1, 1), (128, 1, 1)))
    b.add_memcpy()
    b.add_memcpy()
    return b.write(path)


def test_an_installed_pass_shows_its_result_in_json(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    """A pass from an installed package runs in the same read, gets the options whole and the flagship's result
    typed, and its written result is ``reports[].passes[name]``; the built-in passes' JSON is what it was."""
    trace = _memcpy_trace(tmp_path / "t.json")
    before = inspect_json(run_cli, trace, "--max-launches", "7")
    _pass_plugin(site)
    after = inspect_json(run_cli, trace, "--max-launches", "7", status=0)
    (report,) = after["reports"]
    assert report.pop("passes") == {"memcpy-count": {"memcpys": 2, "kernels_checked": 3, "max_launches": 7}}
    for document in (before, after):
        document.pop("host")
        for one in document["reports"]:
            one.pop("timing")
    assert after == before  # the built-in passes' fields, where they were
    assert "passes" not in before["reports"][0]


def test_an_installed_pass_feeds_a_playbook_fact(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    trace = _memcpy_trace(tmp_path / "t.json")
    _pass_plugin(site)
    probe = run_cli("probe", "trace.inspect", "--param", f"paths={trace}", "--json")
    assert probe.status == 0, probe.stderr
    (entry,) = strict_json(probe.stdout)["entries"]
    assert entry["facts"]["passes"] == {"memcpy-count": {"memcpys": 2, "kernels_checked": 3, "max_launches": 100}}
    playbook = tmp_path / "copies.yaml"
    playbook.write_text(
        "id: copies\ntitle: Copies\nversion: '1'\nnodes:\n"
        f"  - {{id: inspect, kind: probe, probe: trace.inspect, params: {{paths: {json.dumps(str(trace))}}}, "
        "next: route}\n"
        "  - {id: route, kind: decision, branches: "
        "[{when: \"facts.inspect.passes['memcpy-count']['memcpys'] == 2\", goto: two}], default: other}\n"
        "  - {id: two, kind: conclusion, diagnosis: two-copies, summary: two}\n"
        "  - {id: other, kind: conclusion, diagnosis: other, summary: other}\n"
    )
    ran = run_cli("run", str(playbook), "--json")
    assert ran.status == 0, ran.stderr
    assert strict_json(ran.stdout)["conclusion"]["diagnosis"] == "two-copies"


@pytest.mark.parametrize(
    ("body", "entry", "line"),
    [
        (
            "broken = 1 / 0\n",
            "pass_plugin:PASS",
            "trace pass plugin 'memcpy-count' (plugin pass-plugin 0.1.0, pass_plugin:PASS) could not load: "
            "ZeroDivisionError: division by zero",
        ),
        (
            "PASS = {'name': 'memcpy-count'}\n",
            "pass_plugin:PASS",
            "trace pass plugin 'memcpy-count' (plugin pass-plugin 0.1.0) is a dict, not a "
            "wizard.trace.passes.TracePass",
        ),
        (
            PASS_PLUGIN.replace('TracePass("memcpy-count"', 'TracePass("health"'),
            "pass_plugin:PASS",
            "trace pass plugin 'memcpy-count' (plugin pass-plugin 0.1.0) is named 'health', which builtin already "
            "registers",
        ),
        (
            PASS_PLUGIN.replace("return MemcpyCount(", "return 1 / 0, MemcpyCount("),
            "pass_plugin:PASS",
            "trace pass 'memcpy-count' (plugin pass-plugin 0.1.0) raised ZeroDivisionError when it finished: "
            "division by zero",
        ),
        (
            PASS_PLUGIN.replace("return MemcpyCount(", "return len, MemcpyCount("),
            "pass_plugin:PASS",
            "trace pass 'memcpy-count' (plugin pass-plugin 0.1.0) returned tuple, not its declared MemcpyCount",
        ),
        (
            PASS_PLUGIN.replace('"memcpys": result.memcpys', '"memcpys": {result.memcpys}'),
            "pass_plugin:PASS",
            "trace pass 'memcpy-count' (plugin pass-plugin 0.1.0) wrote set at passes.memcpy-count.memcpys: a "
            "written result is JSON data (dict, list, str, int, float, bool or None)",
        ),
        (  # its start returns no run: finish is looked up inside the guard, so this is the plugin's line, not 70
            PASS_PLUGIN.replace("MemcpyCount, Counting, write", "MemcpyCount, lambda options: None, write"),
            "pass_plugin:PASS",
            "trace pass 'memcpy-count' (plugin pass-plugin 0.1.0) raised AttributeError when it finished: 'NoneType' "
            "object has no attribute 'finish'",
        ),
        (  # a needs entry whose name cannot be hashed: the contract's line, not a TypeError
            PASS_PLUGIN.replace("needs=(METRICS_PASS,)", "needs=(TracePass(['x'], MemcpyCount, Counting, write),)"),
            "pass_plugin:PASS",
            "trace pass plugin 'memcpy-count' (plugin pass-plugin 0.1.0) needs ['x'], which is not a pass that runs "
            "before it",
        ),
    ],
    ids=["import-fails", "not-a-pass", "clashes", "finish-raises", "wrong-type", "not-json", "no-run", "bad-needs"],
)
def test_a_broken_or_clashing_pass_plugin_is_one_line(
    site: Path, run_cli: RunCli, tmp_path: Path, body: str, entry: str, line: str
) -> None:
    trace = _memcpy_trace(tmp_path / "t.json")
    _pass_plugin(site, body, entry)
    result = run_cli("trace", "inspect", "--json", str(trace))
    assert result.status == 5, result.stderr  # ExitStatus.PROBE_FAILURE, as a broken probe plugin; never 70
    assert result.stderr == f"warpwizard: error: {line}\n"
    assert strict_json(result.stdout)["error"] == line  # --json: the error as JSON too


def test_a_pass_result_that_cannot_leave_a_worker_is_one_line(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    """A directory's traces come back from worker processes pickled: a result holding a lock is the plugin's
    one line (exit 5), found in the worker, never a TypeError at the pool (exit 70)."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        _memcpy_trace(ranks / f"rank{rank}.json")
    _pass_plugin(
        site,
        PASS_PLUGIN.replace("    max_launches: int\n", "    max_launches: object\n").replace(
            "self.options.max_launches)", "__import__('threading').Lock())"
        ),
    )
    shown = run_cli("trace", "inspect", "--json", "--jobs", "2", str(ranks))
    assert shown.status == 5, shown.stderr
    assert shown.stderr == (
        "warpwizard: error: trace pass 'memcpy-count' (plugin pass-plugin 0.1.0) raised TypeError when it returned a "
        "result that cannot be sent between processes: cannot pickle '_thread.lock' object\n"
    )


def test_an_installed_pass_runs_in_each_worker(site: Path, run_cli: RunCli, tmp_path: Path) -> None:
    """Per-rank files are inspected in worker processes (one file each); each finds the installed pass itself."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        _memcpy_trace(ranks / f"rank{rank}.json")
    _pass_plugin(site)
    reports = inspect_json(run_cli, ranks, "--jobs", "2", "--fail-on", "never", status=0)["reports"]
    written = [report["passes"] for report in reports]
    assert written == [{"memcpy-count": {"memcpys": 2, "kernels_checked": 3, "max_launches": 100}}] * 2


# -- a plugin probe's facts checked against its declaration when it runs ----------------------------------------

DECLARED = """\
from typing import Annotated, TypedDict

from wizard.probes.base import ParamSpec, ProbeResult, Status, declared_facts


class _Optional(TypedDict, total=False):
    free_gb: Annotated[float | None, "free space, in GB"]


class SpaceFacts(_Optional):
    path: Annotated[str, "the directory checked (always there when it ran)"]


class Probe:
    name = "odd.space"
    summary = "says how much space is free, sometimes wrongly"
    params = (ParamSpec("how", "str", "what to return", default="right"),)
    facts = declared_facts(SpaceFacts)
    runs_programs = ""

    def run(self, env, params, *, timeout=600.0):
        facts = {
            "right": {"path": "/scratch", "free_gb": 2.5},
            "mistyped": {"path": "/scratch", "free_gb": "lots\\x1b[2J"},
            "undeclared": {"path": "/scratch", "free_gb": 2.5, "fre_gb": 3},
            "missing": {"free_gb": 2.5},
        }[params["how"]]
        return ProbeResult(Status.PASS, "space looked at", facts=facts)
"""

SPACE_PLAYBOOK = """\
id: odd-space
title: Odd space
version: "1"
nodes:
  - {id: how, kind: question, type: text, prompt: How?, default: right, next: space}
  - {id: space, kind: probe, probe: odd.space, params: {how: "{{ answers.how }}"}, next: done}
  - {id: done, kind: conclusion, diagnosis: looked, summary: "looked at {{ facts.space.path }}"}
"""

WARNINGS = {
    "right": [],
    "mistyped": ["probe 'odd.space': fact 'free_gb' is declared float | None, produced str: 'lots\\x1b[2J'"],
    "undeclared": ["probe 'odd.space': fact 'fre_gb' is not declared (produced int: 3)"],
    "missing": ["probe 'odd.space': fact 'path' is declared required (str), produced nothing"],
}


def _space_plugin(site: Path) -> None:
    (site / "hostile_plugin_space").mkdir()
    (site / "hostile_plugin_space" / "__init__.py").write_text(DECLARED)
    (site / "hostile_plugin_space" / "odd-space.yaml").write_text(SPACE_PLAYBOOK)
    installed(
        site,
        "hostile-plugin-space",
        "[warpwizard.probes]\nspace = hostile_plugin_space:Probe\n\n"
        "[warpwizard.playbooks]\nspace = hostile_plugin_space\n",
    )


@pytest.mark.parametrize("how", list(WARNINGS))
def test_facts_breaking_the_declaration_are_one_warning_each_in_the_json(
    site: Path, run_cli: RunCli, tmp_path: Path, how: str
) -> None:
    """The result is kept (status, facts), and each break of the declaration is one line naming the probe, the
    fact, the declared type and what came: in --json, the terminal and the report, never silence."""
    _space_plugin(site)
    ran = run_cli("run", "odd-space", "--set", f"how={how}", "--json")
    assert ran.status == 0, ran.stderr
    space = next(e for e in strict_json(ran.stdout)["entries"] if e["node"] == "space")
    assert space["status"] == "pass"
    assert space.get("warnings", []) == WARNINGS[how]


def test_a_fact_warning_reaches_the_terminal_and_the_report_escaped(
    site: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    _space_plugin(site)
    report = tmp_path / "run.md"
    ran = run_cli("run", "odd-space", "--set", "how=mistyped", "--report", str(report))
    assert ran.status == 0, ran.stderr
    shown = " ".join((ran.stdout + ran.stderr).split())
    assert "warning: probe 'odd.space': fact 'free_gb' is declared float | None, produced str: 'lots\\x1b[2J'" in shown
    assert "\x1b[2J" not in ran.stdout + ran.stderr
    written = report.read_text(encoding="utf-8")
    warning = (
        "- **warning**: probe 'odd.space': fact 'free_gb' is declared float \\| None, produced str: 'lots\\\\x1b\\[2J'"
    )
    assert warning in written.splitlines()
    probe = run_cli("probe", "odd.space", "--param", "how=undeclared")
    assert probe.status == 0, probe.stderr
    assert "  warning: probe 'odd.space': fact 'fre_gb' is not declared (produced int: 3)" in probe.stdout.splitlines()
