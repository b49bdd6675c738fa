"""The stack as it is (issue 17): every capability CUDA's calculator knows, PyTorch 2.12-2.15 trace
formats, a trace whose device table contradicts its values, rank directories with several mechanisms."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import EXAMPLES, REPO, run_inprocess, strict_json
from tests.helpers import GUIDE, inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder


def _one_launch_trace(tmp_path: Path, cc: tuple[int, int], occupancy: int, smem: int) -> Path:
    """One launch of 32-thread blocks with 16 registers on a GPU of capability ``cc``, its occupancy as
    the test computed it (the trace's other values come from the builder's Kineto arithmetic)."""
    threads, _, smem_kb = GUIDE[cc]
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("k", (32 * 132, 1, 1), (32, 1, 1), registers=16, shared_memory=smem))  # 32 warps per SM
    doc: dict[str, Any] = builder.document()
    props = doc["deviceProperties"][0]
    props.update(
        computeMajor=cc[0],
        computeMinor=cc[1],
        maxThreadsPerMultiprocessor=threads,
        sharedMemPerMultiprocessor=smem_kb * 1024,
        sharedMemPerBlockOptin=max(48, smem_kb - 1) * 1024,
        regsPerMultiprocessor=131072 if cc == (3, 7) else 65536,
    )
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"]["est. achieved occupancy %"] = occupancy
    path = tmp_path / f"cc{cc[0]}{cc[1]}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("cc", sorted(GUIDE), ids=[f"cc{m}.{n}" for m, n in sorted(GUIDE)])
def test_every_capability_in_the_table_agrees_with_the_guide(tmp_path: Path, cc: tuple[int, int]) -> None:
    """One-warp blocks are limited by the resident-blocks table (registers allow 128 warps); 20,000 B blocks
    by shared memory: floor(SM's shared memory / roundUp(20000 + reserved, granularity)), reserved 1 KB and
    granularity 128 B from cc 8.0, 0 and 256 B before. The printed value the guide implies is no finding,
    and the true occupancy is that value."""
    threads, blocks, smem_kb = GUIDE[cc]
    by_blocks = min(threads // 32, blocks)
    reserved, granularity = (1024, 128) if cc >= (8, 0) else (0, 256)
    per_block = -(-(20000 + reserved) // granularity) * granularity
    by_smem = min(by_blocks, smem_kb * 1024 // per_block)
    for smem, active in ((0, by_blocks), (20000, by_smem)):
        expected = active * 32 * 100 / threads
        path = _one_launch_trace(tmp_path, cc, round(expected), smem)
        report = wizard.inspect_traces(path)
        assert report.mechanisms == {}, (cc, smem, report.reports[0].metrics.groups[0].worst.evidence)
        (launch,) = report.launches
        assert launch.true_est_occupancy == pytest.approx(expected)
        assert not [n for n in report.reports[0].metrics.notes if "could not be verified" in n]


def _typed_pair(tmp_path: Path) -> tuple[Path, Path]:
    """The same launches written by a classic Kineto and by PyTorch 2.14 (typed, occupancy object)."""
    launches = [
        KernelSpec("idx", (100_000, 30_000, 1), (128, 1, 1)),  # A
        KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424),  # E
        KernelSpec("c", (99, 1, 1), (128, 1, 1), plant="C"),  # C
        KernelSpec("ok", (1000, 1, 1), (256, 1, 1), 40),
    ]
    paths = []
    for kineto in ("classic", "2.14"):
        builder = TraceBuilder(gpu="H100", kineto=kineto, nonfinite="quoted", rounding="lround")
        for spec in launches:
            builder.add(spec)
        paths.append(builder.write(tmp_path / f"{kineto}.json"))
    return paths[0], paths[1]


def test_a_typed_trace_gives_the_same_findings_and_true_values_as_the_classic_spelling(tmp_path: Path) -> None:
    classic, typed = _typed_pair(tmp_path)
    text = typed.read_text()
    assert '"occupancy": {"activeBlocksPerMultiprocessor": 0, "limitingFactors": "SMEM"' in text
    assert '"blocks per SM": 31.030303955078125' in text  # full precision, as 2.14 writes it
    old, new = wizard.inspect_traces(classic), wizard.inspect_traces(typed)
    assert old.mechanisms == {"A": 1, "E": 1, "C": 1, "C'": 1, "F": 1}  # quoted inf in a classic trace: C'
    assert new.mechanisms == {"A": 1, "E": 1, "C": 1, "F": 1}  # the legal 2.14 spelling is not a defect
    true = {(r.s_name, r.true_blocks_per_sm, r.true_warps_per_sm, r.true_est_occupancy) for r in new.launches}
    assert true == {(r.s_name, r.true_blocks_per_sm, r.true_warps_per_sm, r.true_est_occupancy) for r in old.launches}
    (e_group,) = [g for g in new.reports[0].metrics.groups if g.mechanism == "E"]
    assert e_group.worst.evidence.endswith("Kineto's own calculator says 0 blocks per SM, limited by SMEM")


def test_fix_keeps_the_typed_spelling(tmp_path: Path) -> None:
    _, typed = _typed_pair(tmp_path)
    out = tmp_path / "fixed.json"
    assert run_inprocess("trace", "fix", str(typed), str(out)).status == 0
    fixed = {e["name"]: e["args"] for e in strict_json(out.read_text())["traceEvents"] if e.get("cat") == "kernel"}
    assert fixed["c"]["warps per SM"] == 3 and isinstance(fixed["c"]["warps per SM"], int)  # 1.0 is written 1
    assert fixed["c"]["warpwizard original"] == {
        "blocks per SM": "inf",
        "warps per SM": "inf",
        "est. achieved occupancy %": -100,
    }
    assert fixed["idx"]["blocks per SM"] == 3_000_000_000 / 132  # a double at full precision, not 6 decimals
    assert "warpwizard original" not in fixed["ok"]
    assert fixed["gemm"]["occupancy"]["limitingFactors"] == "SMEM"  # the profiler's own object is kept as written


def test_an_unknown_capability_uses_the_profilers_own_calculator(tmp_path: Path) -> None:
    """cc 13.0 (newer than this release): the trace's occupancy objects stand in for the missing table,
    so E is still found, with its true value, and no note says the occupancy went unverified."""
    builder = TraceBuilder(gpu="H100", kineto="2.14")
    builder.add(KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424))
    builder.add(KernelSpec("ok", (1000, 1, 1), (256, 1, 1), 40))
    doc = builder.document()
    doc["deviceProperties"][0].update(computeMajor=13, computeMinor=0)
    path = tmp_path / "cc13.json"
    path.write_text(json.dumps(doc).replace("Infinity", '"inf"'))
    report = wizard.inspect_traces(path)
    assert report.mechanisms == {"E": 1, "F": 1}
    (gemm,) = [r for r in report.launches if r.s_name == "gemm"]
    assert gemm.true_est_occupancy == pytest.approx(18.75)  # 1 block of 384 threads of 2048, as on cc 9.0
    assert not [n for n in report.reports[0].metrics.notes if "could not be verified" in n]


def test_the_profilers_calculator_disagreeing_with_ours_is_a_note_not_a_finding(tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100", kineto="2.12")
    builder.add(KernelSpec("ok", (1000, 1, 1), (256, 1, 1), 40, repeat=3))
    doc = builder.document()
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["args"]["occupancy"]["activeBlocksPerMultiprocessor"] = 5
    path = tmp_path / "disagree.json"
    path.write_text(json.dumps(doc))
    report = wizard.inspect_traces(path)
    assert report.mechanisms == {}
    (note,) = [n for n in report.reports[0].metrics.notes if n.startswith("Kineto's own occupancy calculator")]
    assert note.startswith("Kineto's own occupancy calculator gives 5 blocks per SM, limited by REGS where ")
    assert note.endswith(
        "warpwizard's gives 6 (registers) on compute capability 9.0 (256 threads, 40 registers, 0 B "
        "shared memory): one of the two calculators' tables is not this GPU's (3 launches)"
    )


def test_pm_sampling_counters_are_read_and_shown_beside_the_computed_value(tmp_path: Path) -> None:
    builder = TraceBuilder(gpu="H100", kineto="2.14")
    builder.add(KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424, dur=3000))
    ((start, _),) = builder.kernel_spans
    for i, value in enumerate((11.0, 12.0, 13.0)):
        builder.add_counter("sm__warps_active.avg.per_cycle_active", start + 1000 * i, value)
    builder.add_counter("sm__warps_active.avg.per_cycle_active", start + 9000, 99.0)  # after the kernel
    path = builder.write(tmp_path / "pm.json")
    inspected = run_inprocess("trace", "inspect", str(path), "--json")
    # E alone is the flagship's info (issue 33): the gate passes
    assert inspected.status == 0 and strict_json(inspected.stdout)["mechanisms"] == {"E": 1, "F": 1}
    result = run_inprocess("probe", "metrics.sanity", "--param", f"trace={path}", "--json")
    facts = strict_json(result.stdout)["entries"][0]["facts"]
    assert facts["counters"] == ["sm__warps_active.avg.per_cycle_active"]
    assert facts["measured"] == [
        "gemm: sm__warps_active.avg.per_cycle_active measured 12 (mean of 3 samples while it ran), computed at "
        "most 12 resident warps per SM"
    ]


def test_an_sm_count_the_device_table_contradicts_is_named_and_a_kept(tmp_path: Path) -> None:
    """Values computed on 144 SMs in a trace whose deviceProperties says 132: G on each launch (not a '?'
    storm), the values on both counts in the evidence, and the planted A still found."""
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("ok", (4096, 1, 1), (256, 1, 1), plant="wrong-sms", repeat=20))
    builder.add(KernelSpec("idx", (100_000, 30_000, 1), (128, 1, 1), plant="wrong-sms"))
    path = builder.write(tmp_path / "merged.json")
    report = inspect_json(run_inprocess, path)
    assert report["mechanisms"] == {"G": 21, "A": 1, "F": 20}  # F: 227 warps per SM, right on 144 SMs
    assert report["reports"][0]["wrong_launches"] == 21
    (g,) = [g for g in report["reports"][0]["groups"] if g["mechanism"] == "G" and g["kernel"] == "ok"]
    assert "are Kineto's values on 144 SMs, but the trace's deviceProperties says 132 SMs" in g["worst"]["evidence"]
    assert "on 132 SMs they would be 31.030303 and 248.242424" in g["worst"]["evidence"]


def test_the_flagship_routes_an_sm_count_mismatch_on_the_facts_not_the_engineers_suspicion() -> None:
    answers = EXAMPLES / "answers" / "unexplained-custom-kernel.yaml"
    result = run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--json")
    transcript = strict_json(result.stdout)
    assert transcript["conclusion"]["diagnosis"] == "trace-sm-count-mismatch"
    assert "custom_kernel" not in [e["node"] for e in transcript["entries"]]


def test_a_yes_to_32_bit_grid_math_concludes_launch_configuration_only_for_a_grid_no_launch_has(tmp_path: Path) -> None:
    """'?' values on a 4096-block grid: the engineer's yes no longer concludes kernel-launch-configuration."""
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("void my_ext::k<float>", (4096, 1, 1), (256, 1, 1), plant="garbled"))
    trace = builder.write(tmp_path / "garbled.json")
    answers = tmp_path / "a.yaml"
    answers.write_text(f"have: trace\ntrace_path: {trace}\nother_profile: ''\ncustom_kernel: true\nlaunch_math: true\n")
    transcript = strict_json(run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--json").stdout)
    nodes = [e["node"] for e in transcript["entries"]]
    assert nodes[nodes.index("launch_math") + 1 :][:2] == ["launch_math_facts", "isolate"]
    assert transcript["conclusion"]["diagnosis"] == "unresolved"


def _rank(builder: TraceBuilder, rank: int, directory: Path) -> None:
    doc = builder.document()
    doc["distributedInfo"] = {"rank": rank, "world_size": 4}
    (directory / f"rank{rank}.json").write_text(json.dumps(doc).replace("Infinity", '"inf"'))


def test_a_rank_directory_with_several_mechanisms_names_each_with_its_ranks(tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 3):  # A (and E) on ranks 0 and 3
        builder = TraceBuilder(gpu="H100")
        builder.add(KernelSpec("idx", (100_000, 30_000, 1), (128, 1, 1)))
        builder.add(KernelSpec("gemm", (4096, 1, 1), (384, 1, 1), 168, 231424))
        _rank(builder, rank, ranks)
    builder = TraceBuilder(gpu="RTX2080Ti")
    builder.add(KernelSpec("mm", (99, 1, 1), (128, 1, 1), plant="B"))
    _rank(builder, 1, ranks)
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("add", (99, 1, 1), (128, 1, 1), plant="C"))
    _rank(builder, 2, ranks)
    answers = tmp_path / "a.yaml"
    answers.write_text(f"have: trace\ntrace_path: {ranks}\n")
    transcript = strict_json(run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--json").stdout)
    conclusion = transcript["conclusion"]
    assert conclusion["diagnosis"] == "profiler-bug-grid-overflow"
    (found,) = [e for e in conclusion["evidence"] if e.startswith("mechanisms found: ")]
    assert found == (
        "mechanisms found: A (grid size overflows int32 (gridX*gridY*gridZ > 2^31-1)) on ranks 0, 3; "
        "B (SM count read as -1 (PyTorch 1.8/1.9 on Turing and later)) on rank 1; "
        "C (SM count unknown for the kernel's device (x/0)) on rank 2; "
        "C' (non-finite value written as a bare token or a string) on rank 2; "
        "E (occupancy judged with the default 48 KB shared-memory limit) on ranks 0, 3"
    )
    (also,) = [f for f in conclusion["fix"] if f.startswith("Also ")]
    assert also.startswith("Also B on rank 1: upgrade to PyTorch 1.10 or later (kineto #325). Also C on rank 2: check")
    assert "Also E on ranks 0, 3: ignore the 0%" in also


def test_step_one_reports_pytorchs_own_validator_beside_ours(tmp_path: Path) -> None:
    """The probed interpreter's torch (this venv's, when it has torch) checks the file's timeline; without
    torch the line says why it did not run. Either way, warpwizard itself never imports torch."""
    answers = EXAMPLES / "answers" / "grid-overflow.yaml"
    transcript = strict_json(run_inprocess("run", "negative-warps-per-sm", "--answers", str(answers), "--json").stdout)
    (inspect,) = [e for e in transcript["entries"] if e["node"] == "inspect"]
    (line,) = [e for e in inspect["evidence"] if e.startswith("PyTorch's trace validator")]
    torch_dir = importlib.util.find_spec("torch")  # found, not imported
    if torch_dir is None or not torch_dir.submodule_search_locations:
        assert line.startswith("PyTorch's trace validator not run on grid-overflow.json: ")
    else:
        assert line.endswith("on grid-overflow.json: its timeline rules all pass")


def test_pytorchs_validator_is_loaded_without_importing_torch() -> None:
    """Issue 27: the flagship ran 8x slower than trace inspect once torch was installed. The harness meant to
    load the stdlib-only checker from torch's directory, but the load always failed (its dataclasses look up
    their module in sys.modules) and fell back to importing torch: 2.7 s a run instead of 0.1 s."""
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in this interpreter")
    harness = REPO / "wizard" / "probes" / "harness.py"
    # run as the probes run it: the script in a fresh interpreter
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(harness), "validate", str(EXAMPLES / "traces" / "grid-overflow.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("WARPWIZARD_RESULT ")]
    result = json.loads(line.removeprefix("WARPWIZARD_RESULT "))
    assert (result["passed"], result["loaded"]) == (True, "standalone")
    imported = {row.split("|")[-1].strip() for row in done.stderr.splitlines() if row.startswith("import time:")}
    assert "torch" not in imported


def test_fixed_output_still_passes_pytorchs_validator(tmp_path: Path) -> None:
    pytest.importorskip("torch.profiler._trace_validator")
    from torch.profiler._trace_validator import validate_trace

    out = tmp_path / "fixed.json"
    assert run_inprocess("trace", "fix", str(EXAMPLES / "traces" / "grid-overflow.json"), str(out)).status == 0
    assert validate_trace(str(out)) == (True, [])


def test_the_docs_mechanism_lists_match_the_vocabulary() -> None:
    from wizard.trace.metrics.mechanisms import ORDER, WRONG, Mechanism

    ids = ", ".join(m.value for m in Mechanism if m.wrong)
    for doc in ("docs/json-output.md", "docs/api.md"):
        assert f"({ids})" in (REPO / doc).read_text(), doc
    readme = (REPO / "README.md").read_text()
    for m in Mechanism:
        assert f"| {m.value} |" in readme, m
    assert sorted(WRONG, key=ORDER.__getitem__) == [m.value for m in Mechanism if m.wrong]
    from wizard import compare
    from wizard.report.plots import PALETTE

    assert Mechanism.BY_DESIGN.value == compare.BY_DESIGN
    assert {m.value for m in Mechanism if m.wrong and m.verdict == "info"} == compare.HARMLESS
    assert set(PALETTE) == {m.value for m in Mechanism} | {"ok"}  # every mechanism has its colour
