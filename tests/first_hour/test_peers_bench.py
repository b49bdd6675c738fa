"""The peers' harness of benchmarks/speed_series.py: what it runs for HTA and TraceLens, and that it says which is
skipped. The figures themselves are the benchmark's (docs/performance.md), never a test's."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO


def _series() -> ModuleType:
    spec = importlib.util.spec_from_file_location("speed_series", REPO / "benchmarks" / "speed_series.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["speed_series"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _args(tmp_path: Path, **given: Path | None) -> argparse.Namespace:
    return argparse.Namespace(work=tmp_path, hta_python=given.get("hta"), tracelens_python=given.get("lens"))


def test_a_peer_not_installed_is_a_skipped_line(tmp_path: Path) -> None:
    series, said = _series(), list[str]()
    trace = tmp_path / "t.json"
    trace.write_text("[]")
    assert importlib.util.find_spec("hta") is None and importlib.util.find_spec("TraceLens") is None
    assert series.peer_commands(_args(tmp_path), trace, said.append) == []
    assert said == [
        "  Holistic Trace Analysis: skipped (no --hta-python, and module 'hta' is not installed here)",
        "  TraceLens: skipped (no --tracelens-python, and module 'TraceLens' is not installed here)",
    ]


def test_each_peer_reads_only_the_trace_in_its_interpreter(tmp_path: Path) -> None:
    series, said = _series(), list[str]()
    trace = tmp_path / "h800-100mb-lines.json"
    trace.write_text("[]")
    hta, lens = Path("/opt/hta/bin/python"), Path("/opt/lens/bin/python")
    commands = series.peer_commands(_args(tmp_path, hta=hta, lens=lens), trace, said.append)
    assert said == [] and [label for label, _, _ in commands] == ["HTA", "TraceLens"]
    (_, hta_argv, _), (_, lens_argv, _) = commands
    folder = tmp_path / "hta-h800-100mb-lines"
    # HTA's TraceAnalysis reads every trace file in trace_dir: the folder it gets holds a link to this one only
    assert hta_argv == [str(hta), "-c", series.HTA_SCRIPT, str(folder)]
    assert [p.name for p in folder.iterdir()] == [trace.name] and (folder / trace.name).resolve() == trace
    out = tmp_path / "tracelens-h800-100mb-lines"
    assert lens_argv == [str(lens), "-m", "TraceLens.Reporting.generate_perf_report_pytorch",
                         "--profile_json_path", str(trace), "--output_csvs_dir", str(out)]  # fmt: skip
    # a second round finds the link made
    assert series.peer_commands(_args(tmp_path, hta=hta, lens=lens), trace, said.append) == commands
