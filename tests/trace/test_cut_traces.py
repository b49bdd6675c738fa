"""Traces cut after their events (issue 17): what the reader keeps and says."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_inprocess, strict_json
from tests.helpers import inspect_json

GRID = EXAMPLES / "traces" / "grid-overflow.json"


@pytest.mark.parametrize("compressed", [False, True])
def test_a_trace_cut_inside_its_trailing_metadata_is_read_like_any_cut_trace(tmp_path: Path, compressed: bool) -> None:
    """Kineto writes "traceName" after the events; a file cut inside it kept every event but was
    refused whole (exit 6). Now: the same findings as the whole file, and a truncation note."""
    text = GRID.read_text()
    cut = text[: text.index('"traceName": "') + 20]
    path = tmp_path / ("cut.json.gz" if compressed else "cut.json")
    if compressed:
        path.write_bytes(gzip.compress(text.encode())[:-12])  # the gzip stream cut in its trailer
    else:
        path.write_text(cut)
    whole = inspect_json(run_inprocess, GRID)
    report = inspect_json(run_inprocess, path, status=1)
    assert report["mechanisms"] == whole["mechanisms"] == {"A": 1, "E": 1, "F": 1}
    assert report["reports"][0]["kernels"] == whole["reports"][0]["kernels"] == 4
    assert report["reports"][0]["truncation"] is not None
    fixed = tmp_path / "fixed.json"
    done = run_inprocess("trace", "fix", str(path), str(fixed))
    assert done.status == 0, done.stderr
    kernels = [e for e in strict_json(fixed.read_text())["traceEvents"] if e.get("cat") == "kernel"]
    assert sum("warpwizard original" in k["args"] for k in kernels) == 2  # A and E corrected, as in the whole file


def test_damage_before_the_events_end_is_still_refused(tmp_path: Path) -> None:
    text = GRID.read_text()
    at = text.index('"traceEvents"')
    path = tmp_path / "bad.json"
    path.write_text(text[:at] + '"traceName": "unterminated\n' + text[at:])
    result = run_inprocess("trace", "inspect", str(path))
    assert result.status == 6
    assert "invalid JSON" in result.stderr


def _edited(tmp_path: Path, **changes: object) -> Path:
    """grid-overflow.json with its healthy elementwise kernel's reported values replaced."""
    doc = json.loads(GRID.read_text())
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "elementwise" in e["name"])
    kernel["args"].update(changes)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_launch_with_two_unexplained_values_is_one_launch(tmp_path: Path) -> None:
    path = _edited(tmp_path, **{"blocks per SM": 1.5, "est. achieved occupancy %": 37})
    report = inspect_json(run_inprocess, path)["reports"][0]
    assert report["mechanisms"]["?"] == 1
    (group,) = [g for g in report["groups"] if g["mechanism"] == "?"]
    assert group["count"] == 1 and len(group["launches"]) == 1
    assert report["wrong_launches"] == 3  # A, E and this one: three launches, whatever their findings


def test_c_and_c_prime_on_one_launch_count_one_wrong_launch() -> None:
    trace = EXAMPLES / "traces" / "unknown-device-bare-inf.json"
    report = inspect_json(run_inprocess, trace)
    assert report["mechanisms"] == {"C": 1, "C'": 1, "F": 1}
    assert report["reports"][0]["wrong_launches"] == 1
    run = run_inprocess("probe", "trace.inspect", "--param", f"paths={trace}", "--json")
    entry = run.json["entries"][0]
    assert entry["facts"]["flagged_kernels"] == 1
    assert entry["summary"].startswith("1 kernel launch with wrong values")


def test_a_contradicting_sms_gives_way_to_the_count_the_trace_proves(tmp_path: Path) -> None:
    """--sms 80 on a trace whose kernels fit 108 SMs: no '?' storm with "true" values on 80 SMs; the
    proven count is used and a note names both."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder(gpu="A100", device_properties=False)
    builder.add(KernelSpec("k", (4096, 1, 1), (256, 1, 1)))
    builder.add(KernelSpec("overflow", (100000, 30000, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "a100.json")
    report = inspect_json(run_inprocess, trace, "--sms", "80")["reports"][0]
    assert report["mechanisms"] == {"A": 1, "F": 1}  # the overflow, and k's large grid by design; no '?'
    assert report["notes"][0] == (
        "the SM count given with --sms (80) does not fit this trace: its kernels' blocks per SM fit 108 SMs "
        "exactly (an A100), so 108 was used"
    )
    assert report["devices"][0]["num_sms"] == 108


def test_fix_says_originals_are_kept_only_when_something_was_corrected(tmp_path: Path) -> None:
    healthy = run_inprocess("trace", "fix", str(EXAMPLES / "traces" / "healthy-small.json"), str(tmp_path / "f.json"))
    assert healthy.status == 0
    assert "corrected 0 of" in healthy.stdout and "originals kept" not in healthy.stdout


def test_unexplained_evidence_names_where_the_sm_count_came_from() -> None:
    from wizard.trace.metrics.detectors import _sm_source
    from wizard.trace.metrics.devices import DeviceInfo

    def device(source: str) -> DeviceInfo:
        return DeviceInfo(0, 80, None, source)

    assert _sm_source(device("given"), 80) == "--sms gives 80"
    assert _sm_source(device("inferred"), 80) == "80 were inferred from the kernels"
    assert _sm_source(device("deviceProperties"), 132) == "the trace says 132"


def test_a_rocm_trace_that_carries_the_metrics_is_not_said_to_carry_none(tmp_path: Path) -> None:
    from wizard.testing.traces import KernelSpec, TraceBuilder

    plain = run_inprocess("trace", "inspect", str(EXAMPLES / "traces" / "rocm-mi300x.json"), "--json")
    assert "records no blocks/warps per SM" in plain.json["reports"][0]["notes"][0]
    builder = TraceBuilder(gpu="MI300X")
    builder.add(KernelSpec("k", (4096, 1, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "rocm.json")
    doc = json.loads(trace.read_text())
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event["args"].update({"blocks per SM": 13.5, "warps per SM": 108.0})
    trace.write_text(json.dumps(doc))
    note = run_inprocess("trace", "inspect", str(trace), "--json").json["reports"][0]["notes"][0]
    assert note.startswith("ROCm trace: 1 kernel carries blocks/warps per SM, but warpwizard does not check")


@pytest.mark.parametrize("cc", [(13, 0), (12, 9)])
def test_a_gpu_outside_the_occupancy_table_gets_no_false_alarm(tmp_path: Path, cc: tuple[int, int]) -> None:
    """A GPU newer than this release (GB10, Thor, K80 and M60 once came out '?' on every launch because
    the calculator had no table). Blocks/warps per SM are still checked (the planted A stays); the
    occupancy values are taken as printed, with one note saying so."""
    doc = json.loads(GRID.read_text())
    for props in doc["deviceProperties"]:
        props["computeMajor"], props["computeMinor"] = cc
    path = tmp_path / "unknown-cc.json"
    path.write_text(json.dumps(doc))
    report = inspect_json(run_inprocess, path)["reports"][0]
    assert "?" not in report["mechanisms"] and report["mechanisms"]["A"] == 1
    notes = [n for n in report["notes"] if n.startswith("the occupancy could not be verified")]
    assert notes == [
        f"the occupancy could not be verified for compute capability {cc[0]}.{cc[1]} (warpwizard's calculator has "
        "no table for it yet); blocks and warps per SM were checked, occupancy values are shown as printed"
    ]


@pytest.mark.parametrize(("gpu", "resident"), [("H100", "64"), ("RTX2080Ti", "32")])
def test_the_by_design_note_names_this_gpus_resident_warps(tmp_path: Path, gpu: str, resident: str) -> None:
    """'not comparable to 64' was wrong on a cc 7.5 GPU, whose SMs hold at most 32 warps."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder(gpu=gpu)
    builder.add(KernelSpec("big_elementwise", (1_000_000, 1, 1), (256, 1, 1)))
    trace = builder.write(tmp_path / "f.json")
    notes = run_inprocess("trace", "inspect", str(trace), "--json").json["reports"][0]["notes"]
    (note,) = [n for n in notes if n.startswith("large warps-per-SM values are by design")]
    assert note.endswith(f"not comparable to the at most {resident} warps an SM of this GPU holds at once")


def test_d_on_a_capability_every_header_knows_blames_no_header(tmp_path: Path) -> None:
    from wizard.testing.traces import KernelSpec, TraceBuilder

    for gpu, blamed in (("V100", False), ("H100", True)):
        builder = TraceBuilder(gpu=gpu)
        builder.add(KernelSpec("gemm", (64, 8, 1), (256, 1, 1), plant="D"))
        trace = builder.write(tmp_path / f"{gpu}.json")
        report = run_inprocess("trace", "inspect", str(trace), "--json").json["reports"][0]
        (group,) = [g for g in report["groups"] if g["mechanism"] == "D"]
        evidence = group["worst"]["evidence"]
        assert ("CUDA header older than" in evidence) is blamed
        assert ("every CUDA header knows compute capability 7.0" in evidence) is not blamed


def test_a_printed_zero_that_is_the_true_occupancy_rounded_is_not_e(tmp_path: Path) -> None:
    """Two 96-thread blocks above 48 KB on 132 SMs: the true occupancy is about 0.07%, so the printed 0 is
    right; a big grid with the same kernel is E (its true occupancy is far from 0)."""
    from wizard.testing.traces import KernelSpec, TraceBuilder

    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("nccl_small", (2, 1, 1), (96, 1, 1), shared_memory=64 * 1024))
    builder.add(KernelSpec("gemm_big", (4096, 1, 1), (96, 1, 1), shared_memory=64 * 1024))
    trace = builder.write(tmp_path / "zero.json")
    report = run_inprocess("trace", "inspect", str(trace), "--json").json["reports"][0]
    assert [(g["mechanism"], g["kernel"]) for g in report["groups"] if g["mechanism"] == "E"] == [("E", "gemm_big")]
