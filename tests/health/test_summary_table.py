"""The summary-table and profiler-overhead checks (issue 38): each count planted by the builder and compared with
tests/summary_oracle.py, a second computation from the raw events that shares no code; the real traces.

What PyTorch 2.13 does, read in the installed wheel (torch==2.13.0, the venv's site-packages):
- torch/autograd/profiler.py:747-751: a device event goes into ``device_corr_map`` under its
  ``linked_correlation_id``; 758-775: every CPU event whose ``id`` (its correlation id) is a key there gets those
  events as ``kernels`` (``append_kernel``), whatever it is: an OVERHEAD record is a CPU event (kineto_shim.cpp's
  ``deviceTypeFromActivity`` maps ``ActivityType::OVERHEAD`` to ``c10::DeviceType::CPU``), so one carrying the id
  claims the same kernels again.
- torch/autograd/profiler_util.py:142-199 ``_populate_cpu_children``: children by time on their thread, sorted by
  (start, -end), a span is not a child where it starts at or after the parent's end or ends after it;
  917-935 ``device_time_total``: a CPU event's kernels plus its children's totals; 951-960
  ``self_device_time_total``: the total less the children's; a device event's is its own duration.
- profiler_util.py:1387-1404 (``_build_table``): "Self CUDA time total" sums the device-type rows' self time and
  leaves out ``is_user_annotation`` rows (gpu_user_annotation), the fix for pytorch#130730.
- Kineto's names for overhead records: libkineto/src/cupti_strings.cpp:68-96 (pytorch/kineto
  114171dfba6867d2a898634670d9a3197dbb9595: "Activity Buffer Request", "Lazy Function Loading", "Buffer Flush",
  ...); CuptiActivity.h:56-58 gives CUDA's records correlation id 0 (so real CUDA traces carry none; the check
  counts the ones that do), ActivityType.h:93 the category "overhead".
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import wizard
from tests.conftest import TRACES, RunCli, needs_torch, strict_json
from tests.health_oracle import load_events
from tests.summary_oracle import key_averages
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.key_averages import PrintedRow, printed_total


def spec(name: str, op: str = "aten::add", **kw: Any) -> KernelSpec:
    return KernelSpec(name, (64, 1, 1), (128, 1, 1), op=op, **kw)


def inspect(path: Path, checks: str = "summary-table,profiler-overhead") -> dict[str, Any]:
    from tests.conftest import run_inprocess

    result = run_inprocess("trace", "inspect", "--json", "--fail-on", "never", "--checks", checks, str(path))
    assert result.returncode == 0, result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    return {c["check"]: c for c in report["health"]}


def rows(check: dict[str, Any]) -> dict[tuple[str, str], tuple[int, float, float, float, float]]:
    return {
        (r["name"], r["kind"]): (
            r["calls"], r["reported_self_us"], r["reported_total_us"], r["true_self_us"], r["true_total_us"],
        )
        for r in check["rows"]
    }  # fmt: skip


def agrees_with_oracle(check: dict[str, Any], path: Path, link: str) -> None:
    """Every row and sum the check reports, as the oracle computes them from the raw events."""
    events, _ = load_events(path)
    want = key_averages(events, link)
    assert check["table_self_us"] == pytest.approx(want["table_self_us"], abs=1e-6)
    assert check["busy_us"] == pytest.approx(want["busy_us"], abs=1e-3)
    assert check["claiming"] == want["claiming"]
    for (name, kind), (calls, r_self, r_total, t_self, t_total) in rows(check).items():
        if kind == "op":
            assert [calls, r_self, r_total, t_self, t_total] == pytest.approx(want["ops"][name], abs=1e-3), name
        elif kind == "gpu":
            assert [calls, r_self] == pytest.approx(want["gpu"][name], abs=1e-6), name
        elif kind == "gpu_annotation":
            assert r_self == pytest.approx(want["annotations"][name], abs=1e-3), name
        else:
            assert r_self == pytest.approx(want["overhead"][name], abs=1e-6), name


def test_a_plain_trace_reports_what_its_kernels_ran(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("k_add", dur=8.0))
    b.span("outer", [spec("k_mul", "aten::mul", dur=5.0), spec("k_add", dur=8.0)])
    b.add_memcpy(dur=4.0)
    path = b.write(tmp_path / "t.json")
    found = inspect(path)["summary-table"]
    assert (found["status"], found["count"]) == ("ok", 0)
    assert rows(found) == {
        ("aten::add", "op"): (2, 16.0, 16.0, 16.0, 16.0),
        ("aten::mul", "op"): (1, 5.0, 5.0, 5.0, 5.0),
        ("outer", "op"): (1, 0.0, 13.0, 0.0, 13.0),  # its children's kernels: total, not self
        ("k_add", "gpu"): (2, 16.0, 16.0, 16.0, 16.0),
        ("k_mul", "gpu"): (1, 5.0, 5.0, 5.0, 5.0),
        ("Memcpy HtoD (Pageable -> Device)", "gpu"): (1, 4.0, 4.0, 4.0, 4.0),
    }
    assert (found["table_self_us"], found["busy_us"], found["linked"], found["gpu_events"]) == (25.0, 25.0, 3, 4)
    agrees_with_oracle(found, path, "call")


def test_overhead_records_carrying_a_launch_id_double_the_ops_device_time(tmp_path: Path) -> None:
    """The A100 report of pytorch PR #193392: aten::add showed 16.8 µs against 8.1 µs real (one claim doubles)."""
    b = TraceBuilder()
    b.span("ProfilerStep#3", [spec("k_add", dur=8.1)], cat="user_annotation")
    claimed = b.last_correlation
    b.add_overhead("Activity Buffer Request", 30.0, correlation=claimed)
    b.add_overhead("Lazy Function Loading", 10.0)  # no id: claims nothing
    b.add(spec("k_mul", "aten::mul", dur=5.0))
    path = b.write(tmp_path / "t.json")
    found = inspect(path)["summary-table"]
    assert (found["status"], found["count"], found["inflated_ops"]) == ("warning", 3, 2)
    assert (found["overhead_events"], found["claiming"], found["claimed_us"]) == (2, 1, 8.1)
    table = rows(found)
    assert table[("aten::add", "op")] == (1, 8.1, 16.2, 8.1, 8.1)
    assert table[("ProfilerStep#3", "op")] == (1, 0.0, 16.2, 0.0, 8.1)
    assert table[("Activity Buffer Request", "overhead")] == (1, 8.1, 8.1, 0.0, 0.0)
    assert table[("aten::mul", "op")] == (1, 5.0, 5.0, 5.0, 5.0)
    assert found["table_self_us"] == pytest.approx(13.1)  # overhead rows are CPU rows: not in the total
    assert (
        "2 ops report more device time than their GPU events ran (1 overhead record claims 8.1 µs" in (found["summary"])
    )
    agrees_with_oracle(found, path, "external")
    agrees_with_oracle(found, path, "call")


def test_a_claim_below_the_margin_does_not_fire(tmp_path: Path) -> None:
    """A claim adds to a total of 100 µs a kernel of 9 µs: 9% < the documented 10% margin."""
    b = TraceBuilder()
    b.span("outer", [spec("big", dur=91.0), spec("small", dur=9.0)])
    b.add_overhead("Buffer Flush", 2.0, correlation=b.last_correlation)
    found = inspect(b.write(tmp_path / "t.json"))["summary-table"]
    # aten::add's own total (100) grows by 9 (9%): not a row that misleads; the overhead row itself does
    assert rows(found)[("aten::add", "op")] == (2, 100.0, 109.0, 100.0, 100.0)
    assert (found["status"], found["count"], found["inflated_ops"]) == ("warning", 1, 0)


def test_kernels_on_concurrent_streams_add_up_past_the_wall_clock(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("long", dur=150.0, stream=7))  # starts at +30, ends at +180
    b.add(spec("side", dur=60.0, stream=9))  # starts at +130 on another stream: 50 µs run concurrently
    path = b.write(tmp_path / "t.json")
    found = inspect(path)["summary-table"]
    assert (found["table_self_us"], found["busy_us"]) == (210.0, 160.0)
    assert (found["status"], found["count"], found["over_wall_clock"]) == ("info", 1, True)  # a reading, not a bug
    assert found["summary"] == "Self CUDA total 210.0 µs is 1.31x the 160.0 µs the GPU was busy"
    agrees_with_oracle(found, path, "external")


def test_ten_percent_over_the_wall_clock_is_inside_the_margin(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("long", dur=100.0, stream=7))  # +30 to +130
    b.add(spec("side", dur=10.0, stream=9))  # +130 to +140: touching, no overlap
    b.add(spec("third", dur=100.0, stream=7))  # +230 to +330
    b.add(spec("over", dur=20.0, stream=9))  # +330: no overlap either
    found = inspect(b.write(tmp_path / "t.json"))["summary-table"]
    assert (found["table_self_us"], found["busy_us"], found["status"]) == (230.0, 230.0, "ok")


def test_gpu_annotations_are_rows_but_not_in_the_total(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("k", dur=20.0))
    b.add_gpu_annotation("ProfilerStep#1", at=0.0, dur=95.0)  # from the builder's start, over the kernel
    path = b.write(tmp_path / "t.json")
    found = inspect(path)["summary-table"]
    assert rows(found)[("ProfilerStep#1", "gpu_annotation")] == (1, 95.0, 95.0, 0.0, 0.0)
    assert (found["status"], found["annotation_us"], found["table_self_us"]) == ("ok", 95.0, 20.0)
    assert found["summary"].endswith("; 95.0 µs of GPU annotations shown as Self CUDA rows, left out of the total")
    agrees_with_oracle(found, path, "external")


def test_a_trace_without_gpu_events_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add_cpu_op("aten::add")
    found = inspect(b.write(tmp_path / "t.json"))
    assert found["summary-table"]["status"] == "not_applicable"
    assert found["summary-table"]["reason"] == "no GPU events: key_averages() reports no device time for this trace"
    assert found["profiler-overhead"]["status"] == "not_applicable"


def test_profiler_overhead_share_of_the_window_and_step_drift(tmp_path: Path) -> None:
    b = TraceBuilder()
    for n, dur in enumerate((10.0, 10.0, 10.0, 10.0, 10.0, 10.0)):
        b.span(f"ProfilerStep#{n}", [spec("k", dur=dur)], cat="user_annotation")
    start = b.clock  # the steps are 100 µs each, the first at the builder's start
    b.add_overhead("Activity Buffer Request", 40.0, ts=start - 600 + 50)
    b.add_overhead("Lazy Function Loading", 25.0, ts=start - 600 + 250)
    found = inspect(b.write(tmp_path / "t.json"))["profiler-overhead"]
    assert (found["status"], found["count"]) == ("warning", 2)  # 65 of 600 µs: 10.8% > 10%
    assert found["overhead_us"] == 65.0 and found["window_us"] == 600.0
    assert found["share"] == pytest.approx(65 / 600)
    assert found["kinds"] == {"Activity Buffer Request": 40.0, "Lazy Function Loading": 25.0}
    assert (found["steps"], found["step_us"], found["drift"]) == (6, [100.0] * 6, 0.0)
    assert found["summary"] == (
        "2 profiler-overhead records (Activity Buffer Request, Lazy Function Loading) took 65.0 µs, 10.8% of the "
        "window; 6 steps, the last third +0% against the first"
    )


def test_profiler_overhead_below_the_threshold_is_info_and_none_is_ok(tmp_path: Path) -> None:
    b = TraceBuilder()
    for _ in range(3):
        b.add(spec("k"))
    b.add_overhead("Lazy Function Loading", 20.0)  # 20 of 319 µs (the first op starts 1 µs in): 6.3%
    found = inspect(b.write(tmp_path / "t.json"))["profiler-overhead"]
    assert (found["status"], found["count"], found["overhead_us"], found["window_us"]) == ("info", 1, 20.0, 319.0)
    b = TraceBuilder()
    b.add(spec("k"))
    found = inspect(b.write(tmp_path / "u.json"))["profiler-overhead"]
    assert (found["status"], found["count"]) == ("ok", 0)


def test_steps_that_slow_down_drift(tmp_path: Path) -> None:
    b = TraceBuilder()
    for n in range(3):
        b.span(f"ProfilerStep#{n}", [spec("k")] * (n + 1), cat="user_annotation")  # 100, 200, 300 µs
    found = inspect(b.write(tmp_path / "t.json"))["profiler-overhead"]
    assert (found["step_us"], found["drift"], found["median_step_us"]) == ([100.0, 200.0, 300.0], 2.0, 200.0)


# What each shared trace shows (docs/health.md, "Real traces"): status, count, and the sums.
REAL = {
    "a100-alexnet.json.gz": ("ok", 0, "ok"),
    "b200-eager.json.gz": ("ok", 0, "info"),
    "cpu-only-rank34.json.gz": ("not_applicable", 0, "not_applicable"),
    "h100-bert-small.json.gz": ("ok", 0, "ok"),
    "h800-deepseek-train-rank0.json.gz": ("info", 1, "ok"),
    "mi250-rocm-minitoy.json.gz": ("ok", 0, "ok"),
    "mi300-bert-small.json.gz": ("ok", 0, "ok"),
    "rtx2080ti-linear.json.gz": ("ok", 0, "ok"),
    "trimmed-no-device-properties.json": ("ok", 0, "ok"),
    "v100-df-index-resolver.json.gz": ("ok", 0, "ok"),
    "v100-old-keys-gpu-metrics.json": ("ok", 0, "ok"),
    "v100-resnet50-2021.pt.trace.json.gz": ("ok", 0, "ok"),
    "v100-resnet50-pt18-array-format.pt.trace.json.gz": ("ok", 0, "ok"),
    "dlrm-2ranks/worker0_step_12.1694128201545.pt.trace.json": ("ok", 0, "ok"),
    "dlrm-2ranks/worker1_step_12.1694128201556.pt.trace.json": ("ok", 0, "ok"),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_traces(name: str) -> None:
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{path} is not here (../shared/traces)")
    found = inspect(path)
    table, overhead = found["summary-table"], found["profiler-overhead"]
    assert (table["status"], table["count"], overhead["status"]) == REAL[name]
    agrees_with_oracle(table, path, "call")


def test_what_the_b200_and_h800_traces_show() -> None:
    """The numbers docs/health.md gives for them."""
    b200, h800 = TRACES / "b200-eager.json.gz", TRACES / "h800-deepseek-train-rank0.json.gz"
    if not b200.exists() or not h800.exists():
        pytest.skip("the shared traces are not here")
    found = inspect(b200)
    assert found["profiler-overhead"]["kinds"] == pytest.approx(
        {"Activity Buffer Request": 1526.826, "Lazy Function Loading": 440.887}, abs=1e-3
    )
    assert round(found["profiler-overhead"]["share"], 4) == 0.0225
    assert round(found["summary-table"]["annotation_us"], 1) == 84068.1
    table = inspect(h800)["summary-table"]
    assert (table["table_self_us"], table["busy_us"]) == (244069.0, 128515.0)


# -- the profiler hook: the table the user printed ----------------------------------------------------------


@needs_torch
def test_the_hook_reads_the_real_key_averages_table_of_a_cpu_run(tmp_path: Path) -> None:
    """A real torch.profiler run on CPU (torch 2.13 CPU has no kernels): the hook reads every row of the real
    ``key_averages()``, with the table's own numbers, and finds nothing to say (no GPU events to compare)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.mm(torch.ones(64, 64), torch.ones(64, 64)).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error", wizard.WarpWizardWarning)  # a finding would raise here
        check = wizard.profiler.export_chrome_trace(prof, tmp_path / "cpu.json")
    table = prof.key_averages()
    assert [(r.name, r.calls, r.self_us, r.total_us, r.device) for r in check.printed] == [
        (e.key, e.count, e.self_device_time_total, e.device_time_total, False) for e in table
    ]
    assert {"aten::mm", "aten::sum"} <= {r.name for r in check.printed}
    assert printed_total(check.printed) == 0.0
    assert check.warnings == []
    summary = next(c for c in check.inspection.health if c.check == "summary-table")
    assert summary.status == "not_applicable"


def printed_as_pytorch(path: Path) -> list[PrintedRow]:
    """The rows ``key_averages()`` would print for a builder trace, from the oracle (no warpwizard code)."""
    events, _ = load_events(path)
    want = key_averages(events, "external")
    rows = [PrintedRow(n, int(v[0]), v[1], v[2], False, False) for n, v in want["ops"].items()]
    rows += [PrintedRow(n, int(v[0]), v[1], v[1], True, False) for n, v in want["gpu"].items()]
    return rows + [PrintedRow(n, 1, us, us, True, True) for n, us in want["annotations"].items()]


class Planted:
    """A profiler whose trace is a builder's and whose table is the one PyTorch would print for it."""

    def __init__(self, b: TraceBuilder) -> None:
        self.b = b
        self.rows: list[PrintedRow] = []

    def export_chrome_trace(self, path: str) -> None:
        self.b.write(path)
        self.rows = printed_as_pytorch(Path(path))

    def key_averages(self) -> list[Any]:
        device = {True: "DeviceType.CUDA", False: "DeviceType.CPU"}
        return [
            SimpleNamespace(
                key=r.name, count=r.calls, self_device_time_total=r.self_us, device_time_total=r.total_us,
                device_type=device[r.device], is_user_annotation=r.annotation,
            )
            for r in self.rows
        ]  # fmt: skip


def test_the_hook_warns_where_the_printed_table_claims_more_than_the_kernels_ran(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("k_add", dur=8.5))  # a quarter µs: what a float holds at the builder's clock
    b.add_overhead("Activity Buffer Request", 30.0, correlation=b.last_correlation)
    b.add(spec("long", "aten::mm", dur=150.0, stream=7))
    b.add(spec("side", "aten::mm", dur=60.0, stream=9))
    path = tmp_path / "t.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = wizard.profiler.export_chrome_trace(Planted(b), path)
    hook = [str(w.message) for w in caught if "key_averages()" in str(w.message)]
    assert hook == [
        f"warpwizard: key_averages() row aten::add reports 17.0 µs of device time in 1 call; its GPU events ran "
        f"8.5 µs (trace {path})",
        "warpwizard: key_averages() Self CUDA time total 218.5 µs is 1.30x the 168.5 µs the GPU was busy: each "
        f"Self CUDA % is a share of summed kernel time, not of GPU time (trace {path})",
    ]
    assert [line for line in check.warnings if "key_averages()" in line] == hook
    with warnings.catch_warnings():
        warnings.simplefilter("error", wizard.WarpWizardWarning)
        with pytest.raises(wizard.WarpWizardWarning, match="trace health warning: summary-table"):
            wizard.profiler.export_chrome_trace(Planted(b), tmp_path / "u.json")
        b2 = TraceBuilder()
        b2.add(spec("k_add", dur=8.1))
        b2.add_overhead("Activity Buffer Request", 30.0, correlation=b2.last_correlation)
        planted = Planted(b2)
        with pytest.raises(wizard.WarpWizardWarning, match=r"key_averages\(\) row aten::add reports 16.2 µs"):
            wizard.profiler.TraceChecker().compare_table(planted, _checked_quietly(planted, tmp_path / "v.json"))


def _checked_quietly(prof: Planted, path: Path) -> Any:
    prof.export_chrome_trace(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wizard.WarpWizardWarning)
        return wizard.profiler.TraceChecker().check(path)


# -- the report: the corrected table beside the reported one ------------------------------------------------


def test_the_report_prints_the_corrected_table_beside_the_reported_one(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    b.add(spec("k_add", dur=8.0))
    b.add_overhead("Activity Buffer Request", 30.0, correlation=b.last_correlation)
    trace = b.write(tmp_path / "t.json")
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    assert run_cli("trace", "inspect", "--fail-on", "never", "--report", str(md), str(trace)).returncode == 0
    assert run_cli("trace", "inspect", "--fail-on", "never", "--report", str(page), str(trace)).returncode == 0
    text = md.read_text()
    assert f"## key_averages(), reported and counted once: `{trace}` (warning)" in text
    assert "| `aten::add` | op | 1 | 8.0 | 8.0 | **16.0** | 8.0 |" in text
    assert "| `Activity Buffer Request` | profiler overhead | 1 | 8.0 | 0.0 | **8.0** | 0.0 |" in text
    assert "| `k_add` | GPU event | 1 | 8.0 | 8.0 | 8.0 | 8.0 |" in text
    html = page.read_text()
    assert '<section id="ww-summary-table"><h2>key_averages(), reported and counted once</h2>' in html
    assert (
        '<tr class="health warning"><td data-label="row"><code>aten::add</code></td><td data-label="kind">op</td>'
        '<td data-label="calls" class="num">1</td><td data-label="Self CUDA reported" class="num">8.0</td>'
        '<td data-label="counted once" class="num">8.0</td><td data-label="CUDA total reported" class="num">16.0</td>'
        '<td data-label="counted once" class="num">8.0</td></tr>'
    ) in html


def test_a_trace_without_gpu_events_has_no_table_section(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    b.add_cpu_op("aten::add")
    trace, md = b.write(tmp_path / "t.json"), tmp_path / "r.md"
    assert run_cli("trace", "inspect", "--fail-on", "never", "--report", str(md), str(trace)).returncode == 0
    assert "key_averages(), reported and counted once" not in md.read_text()


# -- the profiler.overhead probe ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plain", "profiled", "status", "inflation"),
    [
        ([1.0, 1.0, 1.0], [1.09, 1.09, 1.09], "pass", 0.09),  # under 10%: within
        ([1.0, 2.0, 1.0], [1.15, 1.0, 1.2], "warn", 0.15),  # medians 1.0 and 1.15
        ([1.0], [1.25], "fail", 0.25),
        ([1.0, 1.0], [0.9, 0.9], "pass", -0.1),
    ],
)
def test_overhead_verdict(plain: list[float], profiled: list[float], status: str, inflation: float) -> None:
    from wizard.probes.profiler_overhead import overhead_verdict

    found, summary, value = overhead_verdict(plain, profiled)
    assert found.value == status
    assert value == pytest.approx(inflation)
    assert summary.startswith("under torch.profiler the workload took ")


def test_overhead_verdict_without_runs_skips() -> None:
    from wizard.probes.profiler_overhead import overhead_verdict

    assert [s.value for s, _, _ in (overhead_verdict([], [1.0]), overhead_verdict([0.0], [1.0]))] == ["skip", "skip"]


@needs_torch
def test_the_overhead_probe_times_a_real_cpu_workload(tmp_path: Path, run_cli: RunCli) -> None:
    """A real run on CPU: two plain and two profiled timings after the warm-ups, the inflation their medians'."""
    script = tmp_path / "steps.py"
    script.write_text("import torch\nx = torch.ones(32, 32)\nfor _ in range(20):\n    x = (x @ x).tanh()\n")
    result = run_cli("probe", "profiler.overhead", "--workload", f"python {script}", "--param", "runs=2", "--json")
    (entry,) = [e for e in strict_json(result.stdout)["entries"] if e["kind"] == "probe"]
    facts = entry["facts"]
    assert (facts["runs"], len(facts["plain_s"]), len(facts["profiled_s"]), facts["exit_code"]) == (2, 2, 2, 0)
    assert facts["plain_median_s"] == pytest.approx(sum(facts["plain_s"]) / 2)
    assert facts["inflation"] == pytest.approx(facts["profiled_median_s"] / facts["plain_median_s"] - 1)
    assert (
        entry["status"]
        == {True: "fail", False: "warn" if facts["inflation"] > 0.1 else "pass"}[facts["inflation"] > 0.2]
    )
    assert facts["cuda_available"] is False


def test_the_overhead_probe_refuses_a_bad_run_count(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("probe", "profiler.overhead", "--workload", "python x.py", "--param", "runs=0", "--json")
    (entry,) = [e for e in strict_json(result.stdout)["entries"] if e["kind"] == "probe"]
    assert (entry["status"], entry["facts"]["reason"]) == ("error", "runs must be a whole number from 1 to 50, not 0")


def test_kernel_busy_beside_measured_sm_active(tmp_path: Path) -> None:
    """PM sampling (PyTorch 2.15+): a kernel runs half of the sampled 400 µs, the SMs were active 20% on average."""
    b = TraceBuilder()
    b.add(spec("k", dur=100.0))  # +30 to +130
    b.add(spec("k", dur=100.0))  # +130 to +230
    first = b.kernel_spans[0][0]
    for i, value in enumerate((10.0, 30.0, 20.0, 20.0, 20.0)):
        b.add_counter("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", first - 100 + 100 * i, value)
    b.add_counter("sm__warps_active.avg.per_cycle_active", first, 3.0)  # not SM-active: not read
    found = inspect(b.write(tmp_path / "t.json"))["summary-table"]
    assert found["sm_active"] == [
        {
            "device": 0,
            "counter": "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
            "samples": 5,
            "span_us": 400.0,
            "kernel_busy_pct": 50.0,
            "sm_active_pct": 20.0,
        }
    ]
    assert found["status"] == "ok"
    assert (
        "; device 0: a kernel ran 50.0% of the sampled time, the SMs were active 20.0% "
        "(sm__cycles_active.avg.pct_of_peak_sustained_elapsed); kernel-busy is time with any kernel running, "
        "SM-active the share of SM cycles with work"
    ) in found["summary"]


def test_no_counters_no_sm_active(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(spec("k"))
    assert inspect(b.write(tmp_path / "t.json"))["summary-table"]["sm_active"] == []


def test_hostile_overhead_and_annotation_records_are_read_within_bounds(tmp_path: Path) -> None:
    """An id past int64, a word as an id, a list as a name, a missing duration: one clear reading, no crash."""
    b = TraceBuilder()
    b.add(spec("k", dur=10.0))
    doc = b.document()
    op_ts = next(e["ts"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    doc["traceEvents"] += [
        {"ph": "X", "cat": "overhead", "name": "Resource", "pid": -1, "tid": 0, "ts": 1.0, "dur": 2.0,
         "args": {"correlation": 10**30}},
        {"ph": "X", "cat": "overhead", "name": "Buffer Flush", "pid": -1, "tid": 0, "ts": 1.0, "dur": 3.0,
         "args": {"correlation": "many"}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": 7, "pid": 0, "tid": 7, "ts": 2.0, "dur": 4.0},
        {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 4242, "tid": 4242, "ts": str(op_ts - 1),
         "dur": 1e9},
    ]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    found = inspect(path)
    assert (found["summary-table"]["claiming"], found["summary-table"]["annotation_us"]) == (0, 4.0)
    assert rows(found["summary-table"])[("7", "gpu_annotation")] == (1, 4.0, 4.0, 0.0, 0.0)
    assert rows(found["summary-table"])[("step", "op")] == (1, 0.0, 10.0, 0.0, 10.0)
    assert found["profiler-overhead"]["kinds"] == {"Buffer Flush": 3.0, "Resource": 2.0}


def test_two_gpus_busy_at_once_are_busy_twice(tmp_path: Path) -> None:
    """The table sums both GPUs' kernels, so GPU busy is each device's union, summed (an nsys export of two GPUs
    read 1.88x before)."""
    b = TraceBuilder(devices=2)
    b.add(spec("on0", dur=150.0, device=0))  # +30 to +180 on GPU 0
    b.add(spec("on1", dur=60.0, device=1))  # +130 to +190 on GPU 1: at the same time, another device
    path = b.write(tmp_path / "t.json")
    found = inspect(path)["summary-table"]
    assert (found["table_self_us"], found["busy_us"], found["status"]) == (210.0, 210.0, "ok")


@pytest.mark.skipif(not (TRACES / "b200-eager.json.gz").exists(), reason="needs ../shared/traces")
def test_the_reports_mark_the_rows_the_check_holds_against_the_table_and_no_others() -> None:
    """A newcomer's walk: the HTML report said "(ok): 1 row misleads by more than the check's margin" on b200-eager,
    whose check says ok. The row was a GPU annotation (84 ms shown as Self CUDA), which the check leaves out of the
    total and says beside it; the reports marked it by a rule of their own. They now mark by the check's."""
    from wizard.report.view import summary_table_views

    inspection = wizard.inspect_traces(TRACES / "b200-eager.json.gz")
    (view,) = summary_table_views(inspection)
    check = next(c for c in inspection.reports[0].health_result.checks if c.check == "summary-table")
    assert view.status == check.status == "ok"
    marked = [(name, kind) for name, kind, *_, off in view.rows if off]
    assert marked == [] and check.details["inflated_ops"] == 0
    annotations = [row for row in view.rows if row[1] == "GPU annotation"]
    assert annotations and float(annotations[0][3].replace(",", "")) > 80_000  # the 84 ms row, shown, not marked
