"""Step 1's re-profile under another torch (``--compare-python``): the other version's trace is put beside this
run's by ``warpwizard diff``'s comparison (issue 50 item 7), so a pair that cannot be compared decides nothing and
the comparability verdict is in the evidence. The pairs are builder-made; each outcome is set by how the test
planted it (values no mechanism explains, the '?' group, in one version's trace only, in both, or another GPU
count), never read from wizard/diff.py.
"""

from __future__ import annotations

from pathlib import Path

from wizard.environment import Environment
from wizard.probes.reprofile import _beside, _Gathered
from wizard.testing.traces import KernelSpec, TraceBuilder

KERNEL = "void at::native::index_select_kernel<float>"


def _trace(path: Path, *, wrong: bool, devices: int = 1) -> Path:
    """Three launches of one kernel, the same in every version; ``wrong``: written with garbled metrics."""
    b = TraceBuilder(gpu="H100", devices=devices)
    for i in range(3):
        b.add(KernelSpec(KERNEL, (132, 1, 1), (256, 1, 1), plant="garbled" if wrong else None, device=i % devices))
    return b.write(path)


def _beside_this(tmp_path: Path, other: Path) -> tuple[bool, _Gathered]:
    env = Environment.of(report_dir=tmp_path / "report")
    found = _Gathered(_trace(tmp_path / "this.json", wrong=True), True, {})
    return _beside(env, found, other, "torch 2.99"), found


def test_another_version_that_reads_the_same_launches_right_counts(tmp_path: Path) -> None:
    counts, found = _beside_this(tmp_path, _trace(tmp_path / "other.json", wrong=False))
    assert counts
    assert found.comparisons["torch 2.99"]["outcome"] == "disappears"
    assert found.comparisons["torch 2.99"]["comparability"] != "not comparable"
    assert found.evidence[-1].startswith("torch 2.99 beside this run: comparable")
    assert "the flagged launches: disappears (? gone)" in found.evidence[-1]


def test_another_version_with_the_same_wrong_values_persists(tmp_path: Path) -> None:
    counts, found = _beside_this(tmp_path, _trace(tmp_path / "other.json", wrong=True))
    assert counts and found.comparisons["torch 2.99"]["outcome"] == "persists"
    assert "(? kept)" in found.evidence[-1]


def test_a_pair_that_cannot_be_compared_decides_nothing(tmp_path: Path) -> None:
    """Another GPU count: the work is split differently, so a clean trace there says nothing of this one."""
    counts, found = _beside_this(tmp_path, _trace(tmp_path / "other.json", wrong=False, devices=2))
    assert not counts
    assert found.comparisons["torch 2.99"] == {"comparability": "not comparable", "outcome": "cannot tell"}
    assert found.evidence[-1] == "torch 2.99 beside this run: not comparable (GPU count differ)"


def test_an_unreadable_other_trace_is_one_line_of_evidence(tmp_path: Path) -> None:
    broken = tmp_path / "other.json"
    broken.write_text("{not json")
    counts, found = _beside_this(tmp_path, broken)
    assert not counts and found.comparisons == {}
    assert found.evidence[-1].startswith("torch 2.99: cannot compare (")
