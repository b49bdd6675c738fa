"""Each mechanism, planted into copies of real traces and into built ones, is named with its true value."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLES, REAL_TRACES, TRACES, kernels_of, load_json_trace, needs_shared, write_trace
from wizard.inspect_options import InspectOptions
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches
from wizard.trace.inspection.run import inspect_paths, inspect_trace

UNTOUCHED_ALLOWED = {"E", "F"}  # real traces really contain E (0% above 48 KB) and F (large by design)


@needs_shared
@pytest.mark.parametrize("name", sorted(REAL_TRACES))
def test_untouched_real_traces_raise_no_false_alarm(name: str) -> None:
    report = inspect_trace(TRACES / name)
    assert set(report.metrics.mechanisms) <= UNTOUCHED_ALLOWED, report.metrics.mechanisms
    assert "?" not in report.metrics.mechanisms


@needs_shared
def test_e_in_real_traces_gives_the_opt_in_value() -> None:
    report = inspect_trace(TRACES / "h100-bert-small.json.gz")
    e = next(g for g in report.metrics.groups if g.mechanism == "E" and g.kernel.startswith("sm90_xmma"))
    assert e.worst.reported["est. achieved occupancy %"] == 0
    true = e.worst.true["est. achieved occupancy %"]
    assert true is not None and 0 < true < 100
    assert "sharedMemPerBlockOptin = 232448" in e.worst.evidence


def plant(source: Path, target: Path, change: Any, *, bare: dict[str, str] | None = None) -> Path:
    doc = load_json_trace(source)
    change(doc)
    return write_trace(doc, target, bare=bare)


def first_kernel(doc: Any) -> dict[str, Any]:
    return kernels_of(doc)[0]


@needs_shared
@pytest.mark.skipif(not ORACLES.exists(), reason="../shared/oracles is not beside this checkout")
def test_a_planted_from_the_oracle_vectors(tmp_path: Path) -> None:
    vectors = [
        v
        for v in json.loads(ORACLES.read_text())
        if v["num_sms"] == 132 and v["grid"][0] * v["grid"][1] * v["grid"][2] > 2**31 - 1
    ]
    assert vectors
    for i, v in enumerate(vectors):

        def change(doc: Any, v: dict[str, Any] = v) -> None:
            args = first_kernel(doc)["args"]
            args.update(
                {
                    "grid": v["grid"],
                    "block": v["block"],
                    "blocks per SM": v["kineto_blocks_per_sm"],
                    "warps per SM": v["kineto_warps_per_sm"],
                }
            )
            args.pop("est. achieved occupancy %", None)

        report = inspect_trace(plant(TRACES / "h800-deepseek-train-rank0.json.gz", tmp_path / f"a{i}.json", change))
        group = next(g for g in report.metrics.groups if g.mechanism == "A")
        assert group.count == 1
        true_bps, true_wps = group.worst.true["blocks per SM"], group.worst.true["warps per SM"]
        assert true_bps is not None and math.isclose(true_bps, v["true_blocks_per_sm"], rel_tol=1e-12)
        assert true_wps is not None and math.isclose(true_wps, v["true_warps_per_sm"], rel_tol=1e-12)
        assert "wraps to" in group.worst.evidence


@needs_shared
def test_b_as_pytorch_18_printed_it(tmp_path: Path) -> None:
    def change(doc: Any) -> None:
        for k in kernels_of(doc)[:5]:
            k["args"].update(
                {
                    "grid": [99, 1, 1],
                    "block": [128, 1, 1],
                    "blocks per SM": -99,
                    "warps per SM": -396,
                    "est. achieved occupancy %": -1237,
                }
            )

    report = inspect_trace(plant(TRACES / "rtx2080ti-linear.json.gz", tmp_path / "b.json", change))
    assert report.metrics.mechanisms.get("B") == 5
    b = next(g for g in report.metrics.groups if g.mechanism == "B")
    assert b.worst.true["blocks per SM"] == pytest.approx(99 / 68)
    assert "SM count of -1 instead of 68" in b.worst.evidence


@needs_shared
@pytest.mark.parametrize(
    ("tokens", "spelling"),
    [({"__INF__": "inf", "__NAN__": "nan"}, "bare"), ({"__INF__": '"inf"', "__NAN__": "nan"}, "quoted")],
)
def test_c_with_bare_and_quoted_infinities(tmp_path: Path, tokens: dict[str, str], spelling: str) -> None:
    def change(doc: Any) -> None:
        k = first_kernel(doc)["args"]
        k.update({"device": 7, "blocks per SM": "__INF__", "warps per SM": "__INF__", "est. achieved occupancy %": -99})

    path = plant(TRACES / "a100-alexnet.json.gz", tmp_path / "c.json", change, bare=tokens)
    report = inspect_trace(path)
    assert report.metrics.mechanisms.get("C") == 1 and report.metrics.mechanisms.get("C'") == 1
    c = next(g for g in report.metrics.groups if g.mechanism == "C")
    assert c.worst.true["blocks per SM"] is not None  # devices 0-7 are identical A100s: assumed
    assert report.non_finite.get(spelling)


@needs_shared
def test_d_occupancy_calculator(tmp_path: Path) -> None:
    def change(doc: Any) -> None:
        first_kernel(doc)["args"]["est. achieved occupancy %"] = -99

    report = inspect_trace(plant(TRACES / "h100-bert-small.json.gz", tmp_path / "d.json.gz", change))
    assert report.metrics.mechanisms.get("D") == 1
    assert "compute capability 9.0" in next(g for g in report.metrics.groups if g.mechanism == "D").worst.evidence


@needs_shared
def test_mismatch_is_its_own_finding(tmp_path: Path) -> None:
    def change(doc: Any) -> None:
        first_kernel(doc)["args"]["blocks per SM"] = 1234.5

    report = inspect_trace(plant(TRACES / "v100-df-index-resolver.json.gz", tmp_path / "q.json", change))
    assert report.metrics.mechanisms.get("?") == 1


@needs_shared
def test_per_rank_directory_in_parallel() -> None:
    inspection = inspect_paths([str(TRACES / "dlrm-2ranks")], InspectOptions(jobs=2))
    assert [r.rank for r in inspection.reports] == [0, 1]
    assert not inspection.impossible


@needs_shared
def test_inferred_sm_count_without_device_properties() -> None:
    report = inspect_trace(TRACES / "trimmed-no-device-properties.json")
    assert report.metrics.devices[0]["num_sms"] == 108 and report.metrics.devices[0]["source"] == "inferred"
    assert report.metrics.mechanisms == {"E": 1}
    pt18 = inspect_trace(TRACES / "v100-resnet50-pt18-array-format.pt.trace.json.gz")
    assert pt18.metrics.devices[0]["num_sms"] == 80


# ---- the same paths with the project's own traces (meaningful without ../shared) -------------


@pytest.mark.parametrize(
    ("spec", "era", "gpu", "mechanism", "true_bps"),
    [
        (KernelSpec("a", (100000, 30000, 1), (256, 1, 1)), "2024", "H100", "A", 3e9 / 132),
        (KernelSpec("a'", (2097152, 1, 1), (1024, 1, 1), plant="A'"), "2021", "V100", "A'", 2097152 / 80),
        (KernelSpec("b", (99, 1, 1), (128, 1, 1), plant="B"), "2021", "RTX2080Ti", "B", 99 / 68),
        (KernelSpec("c", (99, 1, 1), (128, 1, 1), plant="C"), "2024", "A100", "C", 99 / 108),
        (KernelSpec("d", (99, 1, 1), (128, 1, 1), plant="D"), "2024", "B200", "D", 99 / 148),
        (KernelSpec("e", (8, 16, 1), (384, 1, 1), 168, 231424), "2024", "H100", "E", 128 / 132),
        (KernelSpec("?", (4096, 1, 1), (256, 1, 1), plant="wrong-sms"), "2024", "H100", "?", 4096 / 132),
    ],
)
def test_builder_planted_mechanisms(
    tmp_path: Path, spec: KernelSpec, era: str, gpu: str, mechanism: str, true_bps: float
) -> None:
    b = TraceBuilder(gpu=gpu, era=era)
    for healthy in demo_launches()[:2]:
        b.add(healthy)
    b.add(spec)
    report = inspect_trace(b.write(tmp_path / "t.json"))
    group = next(g for g in report.metrics.groups if g.mechanism == mechanism)
    assert group.kernel == spec.name
    assert group.worst.true["blocks per SM"] == pytest.approx(true_bps)
    assert report.metrics.impossible


def test_healthy_builder_trace_is_quiet(tmp_path: Path) -> None:
    b = TraceBuilder(gpu="A100")
    for spec in demo_launches()[:2]:
        b.add(spec)
    report = inspect_trace(b.write(tmp_path / "ok.json"))
    assert not report.metrics.impossible and report.metrics.kernels_checked == 2


def test_f_is_explained_not_flagged(tmp_path: Path) -> None:
    b = TraceBuilder(gpu="V100")
    b.add(KernelSpec("big", (100352, 1, 1), (256, 1, 1)))
    report = inspect_trace(b.write(tmp_path / "f.json"))
    assert report.metrics.mechanisms == {"F": 1} and not report.metrics.impossible
    assert report.metrics.max_true_warps_per_sm == pytest.approx(100352 * 8 / 80)


def test_rocm_is_not_invented(tmp_path: Path) -> None:
    b = TraceBuilder(gpu="MI300X")
    b.add(demo_launches()[0])
    report = inspect_trace(b.write(tmp_path / "r.json"))
    assert (
        report.metrics.rocm
        and report.kernels == 1
        and report.metrics.kernels_checked == 0
        and not report.metrics.groups
    )
    assert any("ROCm" in n for n in report.metrics.notes)


def test_c_as_the_2021_placeholders(tmp_path: Path) -> None:
    """2021-22 Kineto wrote -1 for both values when it had no SM count."""
    b = TraceBuilder(gpu="A100", era="2021")
    b.add(KernelSpec("k", (4096, 1, 1), (256, 1, 1)))
    path = b.write(tmp_path / "p.json")
    path.write_text(
        path.read_text()
        .replace('"blocks per SM": 37.9259262', '"blocks per SM": -1')
        .replace('"warps per SM": 303.40741', '"warps per SM": -1')
    )
    report = inspect_trace(path)
    c = next(g for g in report.metrics.groups if g.mechanism == "C")
    assert "placeholders" in c.worst.evidence and c.worst.true["blocks per SM"] == pytest.approx(4096 / 108)


# -- the detectors, one at a time -----------------------------------------------------------------


def _record(grid: tuple[int, int, int], bps: float, wps: float, occ: float | None = None, **kw: Any) -> Any:
    from wizard.trace.read.events import reported
    from wizard.trace.read.records import KernelRecord

    fields: dict[str, Any] = dict(registers=32, shared_memory=0, device=0, occupancy_key="est. achieved occupancy %")
    fields.update(kw)
    return KernelRecord(
        "k", 1.0, 1.0, 1, 1, fields["device"], 7, 100, grid, (256, 1, 1), fields["registers"], fields["shared_memory"],
        reported(bps), reported(wps), reported(occ), fields["occupancy_key"], 0,
    )  # fmt: skip


def _h100() -> Any:
    from wizard.trace.metrics.devices import KNOWN_GPUS, DeviceInfo

    return DeviceInfo(0, 132, KNOWN_GPUS[132], "deviceProperties", "H100")


@pytest.mark.parametrize(
    ("detector", "record", "stops", "mechanisms"),
    [
        ("_non_finite", _record((99, 1, 1), math.inf, math.inf), True, ["C", "C'"]),
        ("_non_finite", _record((99, 1, 1), 0.75, 6.0), False, []),
        ("_placeholders", _record((99, 1, 1), -1, -1), True, ["C"]),
        ("_grid_arithmetic", _record((100000, 30000, 1), -9810358.0, -78482864.0), False, ["A"]),
        ("_grid_arithmetic", _record((99, 1, 1), -99.0, -792.0), False, ["B"]),
        ("_grid_arithmetic", _record((2048, 1, 1), 14.2222223, 113.777779), False, ["?"]),
        ("_occupancy", _record((132, 1, 1), 1.0, 8.0, 0, shared_memory=231424, registers=168), True, ["E"]),
        ("_occupancy", _record((132, 1, 1), 1.0, 8.0, -99), True, ["D"]),
    ],
)
def test_each_detector_alone(detector: str, record: Any, stops: bool, mechanisms: list[str]) -> None:
    from wizard.trace.metrics import detectors as analysis

    ctx = analysis._context(record, _h100(), record.grid, record.block)
    registered = {d.__name__: d for d in analysis.DETECTORS}  # the detectors the checker runs, by name
    assert registered[detector](ctx) is stops
    assert [f.mechanism.value for f in ctx.result.findings] == mechanisms


def test_without_an_sm_count_the_bad_fact_is_named() -> None:
    from wizard.trace.metrics import detectors as analysis
    from wizard.trace.metrics.devices import DeviceInfo

    record = _record((100000, 30000, 1), -9810358.0, -78482864.0)
    device = DeviceInfo(0, None, None, "deviceProperties", "H100", "numSms is '132' (str), not a number")
    ctx = analysis._context(record, device, record.grid, record.block)
    assert analysis._without_sm_count(ctx) is True
    (finding,) = ctx.result.findings
    assert finding.mechanism.value == "?" and "the trace's numSms is '132' (str), not a number" in finding.evidence
