"""Step 5 ("run on different hardware") decided by a profile of another GPU, through `warpwizard diff`'s comparison.

The pairs are builder-made: the same launches on an H100 and on an A100, the trace's launches planted with values no
mechanism explains (``garbled``: the '?' group), the other GPU's written right or planted the same. Which outcome each
pair must give is set by how the test planted it, never read back from wizard/diff.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import RunCli, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

KERNEL = "void at::native::vectorized_elementwise_kernel<4>"


def _trace(path: Path, gpu: str, *, wrong: bool, devices: int = 1) -> Path:
    b = TraceBuilder(gpu=gpu, devices=devices)
    for i in range(3):
        b.add(KernelSpec(KERNEL, (132, 1, 1), (128, 1, 1), plant="garbled" if wrong else None, device=i % devices))
    return b.write(path)


def _probe(run_cli: RunCli, trace: Path, other: Path) -> dict[str, Any]:
    result = run_cli(
        "probe", "hardware.compare", "--param", f"trace={trace}", "--param", f"other={other}", "--json"
    )  # fmt: skip
    data = strict_json(result.stdout)
    (entry,) = data["entries"]
    return dict(entry)


def test_wrong_on_one_gpu_only_is_hardware_specific(run_cli: RunCli, tmp_path: Path) -> None:
    here, other = (
        _trace(tmp_path / "h100.json", "H100", wrong=True),
        _trace(tmp_path / "a100.json", "A100", wrong=False),
    )
    entry = _probe(run_cli, here, other)
    facts = entry["facts"]
    assert (entry["status"], facts["outcome"], facts["hardware_specific"]) == ("fail", "disappears", True)
    assert facts["comparability"] == "comparable with caveats"  # another GPU model is a caveat, not a block
    assert "H100" in facts["reproduces_on"][0] and "A100" in facts["clean_on"][0]
    assert entry["evidence"][0] == "comparability: comparable with caveats"


def test_wrong_on_both_gpus_is_not_the_hardware(run_cli: RunCli, tmp_path: Path) -> None:
    here, other = _trace(tmp_path / "h100.json", "H100", wrong=True), _trace(tmp_path / "a100.json", "A100", wrong=True)
    entry = _probe(run_cli, here, other)
    assert (entry["status"], entry["facts"]["outcome"], entry["facts"]["hardware_specific"]) == (
        "pass",
        "persists",
        False,
    )
    assert "not the hardware" in entry["summary"]


def test_the_same_gpu_or_a_pair_that_cannot_be_compared_decides_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    """No repro here and no other machine's report: the probe skips as it did without the profile, and its evidence
    says what the comparison found and why it decided nothing."""
    here = _trace(tmp_path / "h100.json", "H100", wrong=True)
    same = _probe(run_cli, here, _trace(tmp_path / "h100-b.json", "H100", wrong=False))
    assert (same["status"], same["facts"]["outcome"]) == ("skip", "cannot tell")
    assert "the other profile decides nothing for step 5 (the same GPU model)" in same["evidence"]
    two = _probe(run_cli, here, _trace(tmp_path / "a100x2.json", "A100", wrong=False, devices=2))
    assert (two["status"], two["facts"]["comparability"], two["facts"]["outcome"]) == (
        "skip",
        "not comparable",
        "cannot tell",
    )
    assert any(e.startswith("GPU count: the work is split differently") for e in two["evidence"])


def test_the_flagship_reaches_step_5_and_decides_it_from_the_other_gpus_profile(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """Wrong on the H100 and on the A100: step 1 says the values persist (not the profiler's version), and step 5,
    with the same profile, says they are not the hardware's either."""
    here, other = _trace(tmp_path / "h100.json", "H100", wrong=True), _trace(tmp_path / "a100.json", "A100", wrong=True)
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(here), "other_profile": str(other),
                                       "custom_kernel": False}))  # fmt: skip
    data = strict_json(run_cli("run", "negative-warps-per-sm", "--answers", str(answers), "--json").stdout)
    nodes = {e["node"]: e for e in data["entries"]}
    assert nodes["compare_profiles"]["facts"]["outcome"] == "persists"
    assert (nodes["hardware"]["status"], nodes["hardware"]["facts"]["outcome"]) == ("pass", "persists")
