"""What ``trace inspect --json`` on a small trace no longer pays for as it starts (issue 48's start-up, round 4,
branch startup4), read from the real entry point's own process.

- **The control characters' pattern** (``wizard.untrusted``): its ranges of surrogates and tag characters cost the
  regular expression compiler 5 M instructions. It is compiled where text that is not printable ASCII is first
  shown; printable ASCII (U+0020-U+007E) holds nothing to escape and is returned as it is.
- **The launcher's side** (``wizard.cluster``: its ``Rank`` dataclass, ``platform``, the workspace's names) is
  loaded where an output path is given ({rank} and the rest filled in); the rank read from a trace is
  ``wizard.ranks``'.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import demo_trace, recorded_run
from wizard import untrusted

RUNNER = """

def _audit(event, args):
    pass

def _write():
    untrusted = sys.modules["wizard.untrusted"]
    json.dump({"control_compiled": untrusted._control.cache_info().currsize,
               "modules": sorted(sys.modules)}, open(out, "w"))
"""


@pytest.fixture(scope="module")
def inspection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("startup-lazy")
    small = demo_trace(tmp_path / "small.json")
    return recorded_run(tmp_path, RUNNER, "trace", "inspect", "--json", "--fail-on", "never", str(small))


def test_a_small_inspection_compiles_no_control_pattern(inspection: dict[str, Any], tmp_path: Path) -> None:
    assert "wizard.trace.health.checks.ranks_complete" in inspection["modules"]  # it shows the traces' names
    assert inspection["control_compiled"] == 0
    # the check can fail: a trace whose name is not printable ASCII compiles it
    named = demo_trace(tmp_path / "rank\u200b0.json")
    shown = recorded_run(tmp_path, RUNNER, "trace", "inspect", "--json", "--fail-on", "never", str(named))
    assert shown["control_compiled"] == 1


TEXTS = [chr(c) for c in range(0x300)] + [
    "\u200b", "\u202e", "\ud800", "\U000e0041", "\ufeff", "a\tb\nc", "kernel<float>[i]", "", " ", "~\x7f",
]  # fmt: skip


@pytest.mark.parametrize("newlines", [False, True])
def test_visible_escapes_what_the_pattern_names_and_returns_printable_ascii_as_it_is(newlines: bool) -> None:
    pattern = re.compile(untrusted._CONTROL_CLASS)  # the second computation: the pattern over every text
    for text in TEXTS:
        expected = pattern.sub(untrusted._escape, text)
        if not newlines:
            expected = expected.replace("\n", "\\n").replace("\t", " ")
        assert untrusted.visible(text, newlines=newlines) == expected, repr(text)
    assert untrusted.visible("\x1b[31m") == "\\x1b[31m" and untrusted.visible("a\nb") == "a\\nb"


def test_a_small_inspection_on_stdout_loads_no_launcher_side(inspection: dict[str, Any], tmp_path: Path) -> None:
    assert "wizard.ranks" in inspection["modules"]  # the trace's rank was read
    assert "wizard.cluster" not in inspection["modules"]
    # the check can fail: an output path is placed by the launcher's side, {rank} filled in
    small = demo_trace(tmp_path / "small.json")
    report = tmp_path / "r{rank}.json"
    argv = ["trace", "inspect", "--report", str(report), "--fail-on", "never", str(small)]
    placed = recorded_run(tmp_path, RUNNER, *argv)
    assert "wizard.cluster" in placed["modules"]
    assert (tmp_path / "r0.json").is_file() and not report.exists()
