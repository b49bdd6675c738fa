"""`warpwizard diff`: two profiles of one workload, comparable first, then what changed (issue 50).

Each expected number is computed here from the launches the test planted (durations known exactly), never through
wizard/diff.py or the profile pass: the median, its relative change, and which factors differ.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from tests.helpers import ADD, GEMM, GEMM_US
from tests.helpers import diff_trace as _trace
from wizard.testing.nsys import Call, Kernel, write_export
from wizard.testing.traces import KernelSpec, TraceBuilder


def _diff(run_cli: RunCli, before: Path, after: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli("diff", str(before), str(after), "--json", *extra)
    assert result.returncode in (0, 1, 10), result.stderr
    return result.returncode, strict_json(result.stdout)


def _factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["factors"] if f["name"] == name)


def test_a_trace_against_itself_is_comparable_and_nothing_changed(run_cli: RunCli, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "a.json")
    code, data = _diff(run_cli, trace, trace)
    assert (code, data["verdict"], data["regressions"]) == (0, "comparable", 0)
    assert data["schema"] == "warpwizard.diff/1"
    assert {f["status"] for f in data["factors"]} <= {"same", "unknown"}
    assert all(c["change"] == 0 for c in data["changes"]) and len(data["changes"]) == 2
    assert (data["only_before"], data["only_after"], data["mechanisms"]) == ([], [], [])


def test_a_planted_20_percent_slowdown_is_found_and_exits_1(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    code, data = _diff(run_cli, before, after)
    assert (code, data["verdict"], data["regressions"]) == (1, "comparable", 1)
    (gemm,) = [c for c in data["changes"] if c["regression"]]
    expected_before = statistics.median(GEMM_US * 3)
    expected_after = statistics.median([d * 1.2 for d in GEMM_US] * 3)
    assert gemm["name"] == GEMM and (gemm["before_launches"], gemm["after_launches"]) == (24, 24)
    assert gemm["before_median_us"] == pytest.approx(expected_before)
    assert gemm["after_median_us"] == pytest.approx(expected_after)
    assert gemm["change"] == pytest.approx(expected_after / expected_before - 1)
    add = next(c for c in data["changes"] if c["name"] == ADD)
    assert (add["regression"], add["change"]) == (False, 0)
    text = run_cli("diff", str(before), str(after))
    assert text.returncode == 1 and "+20.0%" in text.stdout and "1 regression beyond 10%" in text.stdout


def test_a_slowdown_inside_the_threshold_or_the_noise_is_no_regression(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.05)
    assert _diff(run_cli, before, after)[0] == 0  # 5% < the 10% default
    code, data = _diff(run_cli, before, after, "--threshold", "3")
    assert (code, data["regressions"]) == (1, 1)  # 5% > 3%, and beyond the noise of 24 launches within 2.5%
    noisy = TraceBuilder()
    for dur in [10.0, 30.0] * 4:  # a median of 20 µs with a MAD of 10 µs: a 25% move is inside its noise
        noisy.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=dur))
    slower = TraceBuilder()
    for dur in [12.5, 37.5] * 4:
        slower.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=dur))
    code, data = _diff(run_cli, noisy.write(tmp_path / "n.json"), slower.write(tmp_path / "s.json"))
    (gemm,) = data["changes"]
    assert (code, gemm["regression"], gemm["change"]) == (0, False, pytest.approx(0.25))
    # three standard errors of two medians of 8, sigma = 1.4826 MAD: the threshold the change had to pass
    se = 1.2533 * 1.4826 * 10.0 / 8**0.5, 1.2533 * 1.4826 * 12.5 / 8**0.5
    assert gemm["noise"] == pytest.approx(3 * (se[0] ** 2 + se[1] ** 2) ** 0.5 / 20.0)


def test_other_gpu_counts_or_world_sizes_are_not_comparable(run_cli: RunCli, tmp_path: Path) -> None:
    one = _trace(tmp_path / "one.json", world=8)
    two = _trace(tmp_path / "two.json", devices=2, world=8)
    code, data = _diff(run_cli, one, two)
    assert (code, data["verdict"], data["changes"]) == (10, "not comparable", [])
    assert (_factor(data, "GPU count")["status"], _factor(data, "GPU count")["effect"]) == ("differs", "blocks")
    other = _trace(tmp_path / "world16.json", world=16)
    code, data = _diff(run_cli, one, other)
    world = _factor(data, "world size")
    assert (code, world["before"], world["after"], world["effect"]) == (10, "8", "16", "blocks")
    assert [f["name"] for f in data["factors"] if f["effect"] == "blocks"] == ["world size"]
    text = run_cli("diff", str(one), str(other))
    assert text.returncode == 10 and "No changes are shown" in text.stdout


def test_another_gpu_model_is_comparable_with_the_hardware_named(run_cli: RunCli, tmp_path: Path) -> None:
    code, data = _diff(run_cli, _trace(tmp_path / "h.json"), _trace(tmp_path / "a.json", gpu="A100"))
    gpu = _factor(data, "GPU model")
    assert (data["verdict"], gpu["status"], gpu["effect"]) == ("comparable with caveats", "differs", "caveat")
    assert "hardware" in gpu["meaning"] and code == 0


def test_a_profiler_bug_present_on_one_side_only_is_the_profilers(run_cli: RunCli, tmp_path: Path) -> None:
    """Mechanism A in BEFORE; AFTER is the same launches as an exporter without the int32 product writes them
    (`trace fix`'s true values): the diff says it is the profiler, not the kernel."""
    b = TraceBuilder()
    b.add(KernelSpec("index_kernel", (100000, 30000, 1), (256, 1, 1)))
    b.add(KernelSpec(ADD, (64, 1, 1), (128, 1, 1)))
    before = b.write(tmp_path / "torch-2.11.json")
    after = tmp_path / "fixed.json"
    assert run_cli("trace", "fix", str(before), str(after)).returncode == 0
    code, data = _diff(run_cli, before, after)
    caveats = [f["name"] for f in data["factors"] if f["status"] == "differs"]
    assert (code, data["verdict"], caveats) == (0, "comparable with caveats", ["health (before)"])
    health = _factor(data, "health (before)")
    assert "impossible-metrics" in health["meaning"]
    assert (health["before"], health["after"]) == ("warning", "")  # the before side's verdict, in its column
    assert (_factor(data, "health (after)")["before"], _factor(data, "health (after)")["after"]) == ("ok", "ok")
    (said,) = data["mechanisms"]
    assert said.startswith("mechanism A in BEFORE (torch-2.11.json) on 1 launch of index_kernel")
    assert said.endswith("the profiler, not your kernel")


def test_a_cut_after_side_blocks_and_the_headline_names_it(run_cli: RunCli, tmp_path: Path) -> None:
    """What blocks the comparison leads the verdict's line (it once named only what was unknown), and the after
    side's error sits in the after column."""
    before = _trace(tmp_path / "before.json")
    text = before.read_text()
    after = tmp_path / "after.json"
    after.write_text(text[: text.index('"cat": "kernel"', len(text) // 2)])  # cut inside the event list
    code, data = _diff(run_cli, before, after)
    health = _factor(data, "health (after)")
    assert (code, data["verdict"], health["before"], health["after"]) == (10, "not comparable", "", "error")
    blocking = [f["name"] for f in data["factors"] if f["status"] == "differs" and f["effect"] == "blocks"]
    assert blocking == ["health (after)"]
    first = run_cli("diff", str(before), str(after)).stdout.splitlines()[0]
    assert first.startswith("before.json → after.json: not comparable (blocked by health (after)")


def test_the_same_launches_as_kineto_json_and_nsys_sqlite_all_match(run_cli: RunCli, tmp_path: Path) -> None:
    b = TraceBuilder()
    kernels, calls = [], []
    for i, dur in enumerate(GEMM_US):
        b.add(KernelSpec(GEMM, (108, 1, 1), (256, 1, 1), dur=dur))
        start = 10_000 * (i + 1)
        calls.append(Call(start, start + 300, 100 + i))
        kernels.append(Kernel(start + 500, start + 500 + int(dur * 1000), 100 + i))
    json_side = b.write(tmp_path / "kineto.json")
    sqlite_side = write_export(tmp_path / "nsys.sqlite", kernels, calls)
    code, data = _diff(run_cli, json_side, sqlite_side)
    assert _factor(data, "profiler")["status"] == "differs"  # two tools, named as a caveat
    (gemm,) = data["changes"]
    assert (gemm["before_launches"], gemm["after_launches"]) == (8, 8)
    assert gemm["before_median_us"] == pytest.approx(gemm["after_median_us"])
    assert (data["only_before"], data["only_after"], code) == ([], [], 0)


def test_two_json_reports_diff_as_their_traces_do(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    reports = []
    for trace in (before, after):
        out = tmp_path / f"{trace.stem}.report.json"
        out.write_text(run_cli("trace", "inspect", "--json", str(trace)).stdout)
        reports.append(out)
    from_traces = _diff(run_cli, before, after)[1]
    from_reports = _diff(run_cli, reports[0], reports[1])[1]
    assert from_reports["changes"] == from_traces["changes"] and from_reports["regressions"] == 1
    stale = tmp_path / "old.json"
    stale.write_text('{"schema": "warpwizard.trace-report/2", "reports": [{"path": "x"}]}')
    result = run_cli("diff", str(stale), str(reports[1]))
    assert result.returncode == 6 and "without profile summaries" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_markdown_is_short_and_escapes_kernel_names(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    out = tmp_path / "summary.md"
    assert run_cli("diff", str(before), str(after), "--markdown", str(out)).returncode == 1
    text = out.read_text()
    assert text.startswith("## before.json → after.json: comparable (unknown: world size)\n")
    assert r"| `void gemm_kernel<128>(float*)` | \[132, 1, 1\] / \[256, 1, 1\] | 24 → 24 |" in text
    assert len(text) < 2000


@needs_shared
def test_the_shared_pairs_get_their_verdicts(run_cli: RunCli) -> None:
    """H100 against MI300X: other vendors' kernels, 15% of the GPU time shared: not comparable. The nsys pair (one
    job before and after a change): comparable, with the before side's overlap warning as a caveat."""
    pairs = TRACES / "pairs"
    code, data = _diff(run_cli, pairs / "h100-vs-mi300-bert-small/h100.json.gz",
                       pairs / "h100-vs-mi300-bert-small/mi300.json.gz")  # fmt: skip
    assert (code, data["verdict"]) == (10, "not comparable")
    assert (_factor(data, "GPU vendor")["before"], _factor(data, "GPU vendor")["after"]) == ("NVIDIA", "AMD")
    assert _factor(data, "shared kernels")["effect"] == "blocks"
    code, data = _diff(run_cli, pairs / "nsys-mfu-2gpu-before-after/before.sqlite",
                       pairs / "nsys-mfu-2gpu-before-after/after.sqlite")  # fmt: skip
    assert data["verdict"] in ("comparable", "comparable with caveats") and code in (0, 1)
    assert _factor(data, "GPU count")["before"] == _factor(data, "GPU count")["after"] == "2"


def test_the_flagship_decides_step_1_with_a_profile_the_user_has(run_cli: RunCli, tmp_path: Path) -> None:
    """Issue 50 item 7: values no mechanism explains (planted '?'), and a profile of the same launches from another
    build where they read right: step 1 concludes the profiler's, through the comparison, without running anything.
    The same pair reversed (wrong in the other profile too) persists and goes on to the kernel's code."""
    import yaml

    wrong, right = TraceBuilder(), TraceBuilder()
    for b, plant in ((wrong, "garbled"), (right, None)):
        for _ in range(3):
            b.add(
                KernelSpec("void at::native::vectorized_elementwise_kernel<4>", (132, 1, 1), (128, 1, 1), plant=plant)
            )
    here, other = wrong.write(tmp_path / "torch-2.11.json"), right.write(tmp_path / "torch-2.13.json")
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(here), "other_profile": str(other)}))
    result = run_cli("run", "negative-warps-per-sm", "--answers", str(answers), "--json")
    data = strict_json(result.stdout)
    assert data["conclusion"]["diagnosis"] == "profiler-bug-other-profile", data["conclusion"]
    entry = next(e for e in data["entries"] if e["node"] == "compare_profiles")
    assert (entry["status"], entry["facts"]["outcome"], entry["facts"]["disappearing"]) == ("fail", "disappears", ["?"])
    assert "read right in torch-2.13.json" in " ".join(data["conclusion"]["summary"].split())
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump({"have": "trace", "trace_path": str(here), "other_profile": str(here),
                                    "custom_kernel": False}))  # fmt: skip
    again = strict_json(run_cli("run", "negative-warps-per-sm", "--answers", str(both), "--json").stdout)
    entry = next(e for e in again["entries"] if e["node"] == "compare_profiles")
    assert (entry["status"], entry["facts"]["outcome"], entry["facts"]["persisting"]) == ("pass", "persists", ["?"])
    assert [e["node"] for e in again["entries"]].index("custom_kernel") == [e["node"] for e in again["entries"]].index(
        "compare_profiles"
    ) + 1


def test_two_directories_of_per_rank_reports_diff_without_reading_a_trace(run_cli: RunCli, tmp_path: Path) -> None:
    """A job's nodes each wrote `trace inspect --json`; a diff of two such directories reads the reports' profiles
    (no trace is opened: the traces are deleted first) and equals the diff of the rank directories."""
    sides = {}
    for side, scale in (("before", 1.0), ("after", 1.2)):
        traces, reports = tmp_path / f"{side}-traces", tmp_path / f"{side}-reports"
        traces.mkdir()
        reports.mkdir()
        for rank in range(4):
            b = TraceBuilder()
            b.set_metadata("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": 4})
            for dur in GEMM_US:
                b.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=dur * scale))
            trace = b.write(traces / f"rank{rank}.json")
            (reports / f"rank{rank}.json").write_text(run_cli("trace", "inspect", "--json", str(trace)).stdout)
        sides[side] = (traces, reports)
    from_traces = _diff(run_cli, sides["before"][0], sides["after"][0])
    for traces, _ in sides.values():
        for trace in traces.iterdir():
            trace.unlink()
    from_reports = _diff(run_cli, sides["before"][1], sides["after"][1])
    assert from_reports[0] == from_traces[0] == 1
    assert from_reports[1]["changes"] == from_traces[1]["changes"]
    (gemm,) = from_reports[1]["changes"]
    assert (gemm["before_launches"], gemm["after_launches"]) == (32, 32)  # four ranks' launches summed
    assert _factor(from_reports[1], "world size")["before"] == "4"


@pytest.mark.parametrize(
    "profile",
    [
        {"health": [{}]},  # a health note without its fields
        {"devices": [{"name": 5}]},  # a device name that is no text
        {"kernels": [{"key": "k"}]},  # a kernel group without its numbers
        {"steps": "many"},
    ],
)
def test_a_hostile_report_is_one_line_never_a_traceback(
    run_cli: RunCli, tmp_path: Path, profile: dict[str, Any]
) -> None:
    """A report comes from someone else: a profile that is not of the declared shape is refused whole (msgspec
    checks every field's type), one line and exit 6, where a missing key was a KeyError (exit 70)."""
    import json

    good = tmp_path / "good.json"
    good.write_text(run_cli("trace", "inspect", "--json", str(_trace(tmp_path / "t.json"))).stdout)
    document = json.loads(good.read_text())
    document["reports"][0]["profile"].update(profile)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    result = run_cli("diff", str(good), str(bad))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 6 and len(lines) == 1 and "bad.json: not a warpwizard trace report" in lines[0]
