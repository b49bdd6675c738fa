"""Every shipped example reaches its expected diagnosis through the real CLI; the traces are current."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, HANG_GUARD_S, REPO, RunCli, needs_torch, strict_json

MANIFEST = yaml.safe_load((EXAMPLES / "manifest.yaml").read_text())


def test_manifest_covers_every_answers_file() -> None:
    listed = {e["answers"] for e in MANIFEST["examples"]}
    assert listed == {f"examples/answers/{p.name}" for p in (EXAMPLES / "answers").glob("*.yaml")}


@pytest.mark.parametrize("example", MANIFEST["examples"], ids=lambda e: e["name"])
def test_example_reaches_its_diagnosis(run_cli: RunCli, example: dict[str, Any]) -> None:
    extra = example.get("args", [])
    playbook = example.get("playbook", MANIFEST["playbook"])
    result = run_cli("run", playbook, "--answers", example["answers"], "--json", *extra)
    assert result.returncode == 0, result.stderr
    data = strict_json(result.stdout)
    conclusion = data["conclusion"]
    assert conclusion["diagnosis"] == example["diagnosis"]
    assert [w for e in data["entries"] for w in e.get("warnings") or []] == []  # facts as declared (engine.run_probe)
    shown = " ".join(
        [
            conclusion["summary"],
            *conclusion["evidence"],
            *[line for e in data["entries"] for line in (e.get("evidence") or [])],
            *[str(e.get("summary")) for e in data["entries"]],
        ]
    )
    assert example["evidence"] in shown, shown


def test_the_console_script_and_the_in_process_cli_agree(run_cli: RunCli, run_process: RunCli) -> None:
    """Most CLI tests run main() in-process; the installed console script must give the same."""
    example = next(e for e in MANIFEST["examples"] if e["name"] == "grid-overflow")
    args = ("run", MANIFEST["playbook"], "--answers", example["answers"], "--json")
    inproc, process = run_cli(*args), run_process(*args)
    assert process.returncode == inproc.returncode == 0
    timing = re.compile(r"\(\d+\.\d s\)")  # --json: the progress goes to stderr, with times
    assert timing.sub("", process.stderr) == timing.sub("", inproc.stderr)
    first, second = strict_json(inproc.stdout), strict_json(process.stdout)
    assert first["conclusion"] == second["conclusion"]
    assert [(e["node"], e.get("status")) for e in first["entries"]] == [
        (e["node"], e.get("status")) for e in second["entries"]
    ]


def test_example_traces_are_what_the_builder_makes() -> None:
    result = subprocess.run(
        [sys.executable, "examples/build.py", "--check"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dataframe_example_compares_reported_with_true_values() -> None:
    pytest.importorskip("pandas")
    result = subprocess.run(
        [sys.executable, "examples/python/dataframe.py"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "2 of 4 launches carry a wrong value; mechanisms A (1), E (1), F (1)"


def test_the_dataframe_example_draws_its_plot(tmp_path: Path) -> None:
    """The plot path (it once crashed: 'slope' cannot be used with non-linear scales): the negative A value
    on a strip of its own, the others on log axes, one HTML file."""
    pytest.importorskip("pandas")
    pytest.importorskip("plotly")
    out = tmp_path / "plot.html"
    trace = str(REPO / "examples" / "traces" / "grid-overflow.json")
    result = subprocess.run(
        [sys.executable, "examples/python/dataframe.py", trace, str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"plot written to {out}"
    assert "Plotly.newPlot(" in out.read_text()
    example = runpy.run_path(str(REPO / "examples" / "python" / "dataframe.py"))
    import wizard

    fig = example["figure"](wizard.inspect_traces(trace).to_dataframe())
    assert [(t.name, len(t.x)) for t in fig.data] == [("reported", 3), ("impossible", 1), ("reported = true", 2)]
    assert list(fig.data[1].y) == ["negative, 0 or not finite"]  # the A launch, apart from the log axes


@needs_torch
def test_the_profiler_example_on_the_cpu_finds_nothing_and_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "examples/python/profile_with_handler.py", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    (trace,) = tmp_path.iterdir()
    assert lines[-2:] == [
        f"trace: {trace}",
        "no GPU kernels in this profile (no CUDA device here), so no kernel metrics to check",
    ]
    assert re.fullmatch(r"example\.\d+\.pt\.trace\.json", trace.name)


def test_every_example_names_its_playbook_and_the_copy_says_to_run_it(tmp_path: Path) -> None:
    """examples/manifest.yaml names each example's playbook; `warpwizard examples NAME` prints that one."""
    from tests.conftest import run_inprocess
    from wizard.examples import list_examples
    from wizard.runs import found_playbooks

    shipped = {f.name for f in found_playbooks()}
    examples = list_examples()
    assert all(e.playbook in shipped for e in examples) and len(examples) == len(MANIFEST["examples"])
    assert all("playbook" in e for e in MANIFEST["examples"])
    chosen = examples[-1]
    copied = run_inprocess("examples", chosen.name, "--to", str(tmp_path / "copy"))
    assert copied.status == 0, copied.stderr
    assert f"try it: warpwizard run {chosen.playbook} --answers {tmp_path / 'copy' / 'answers.yaml'}" in copied.stdout


def test_the_examples_readme_names_the_diagnosis_each_example_reaches() -> None:
    """The README's table against the manifest, whose every entry test_example_reaches_its_diagnosis runs:
    the README once named kernel-launch-configuration for an example that reaches trace-sm-count-mismatch."""
    text = (EXAMPLES / "README.md").read_text()
    named = dict(re.findall(r"^\| \[`[^`]+`\]\((answers/[^)]+)\) \| `([a-z0-9-]+)` \|", text, re.M))
    reached = {e["answers"].removeprefix("examples/"): e["diagnosis"] for e in MANIFEST["examples"]}
    assert named == reached


def test_the_dataframe_example_refuses_to_write_a_page_into_a_png(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    out = tmp_path / "plot.png"
    trace = str(REPO / "examples" / "traces" / "grid-overflow.json")
    result = subprocess.run(
        [sys.executable, "examples/python/dataframe.py", trace, str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert result.returncode == 1 and "the plot is an HTML page; name it PLOT.html" in result.stderr
    assert not out.exists()
    readme = (EXAMPLES / "README.md").read_text()
    assert "plot.html" in readme and "matplotlib" not in readme
