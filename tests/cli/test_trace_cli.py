"""`warpwizard trace inspect|fix` through the real entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REAL_TRACES, TRACES, RunCli, needs_shared, strict_json
from tests.helpers import inspect_json
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches


def test_inspect_exit_codes_and_text(run_cli: RunCli) -> None:
    bad = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "grid-overflow.json"))
    assert bad.returncode == 1
    assert "Impossible or wrong values found" in bad.stdout
    assert "-9810358" in bad.stdout and "aten::index_select" in bad.stdout
    good = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "large-by-design.json"))
    assert good.returncode == 0 and "No impossible values" in good.stdout
    assert "correct by design (F)" in good.stdout


def test_inspect_json_schema(run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", "--json", str(EXAMPLES / "traces" / "unknown-device-bare-inf.json"))
    data = strict_json(result.stdout)
    assert data["schema"] == "warpwizard.trace-report/2" and data["impossible"] is True
    report = data["reports"][0]
    assert {"path", "devices", "groups", "mechanisms", "notes", "timing", "truncation"} <= set(report)
    c = next(g for g in report["groups"] if g["mechanism"] == "C")
    assert c["worst"]["reported"]["blocks per SM"] == "inf"  # JSON has no inf: spelled as a string
    assert c["op"]["op"] == "aten::sum"


def test_inspect_markdown(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    run_cli("trace", "inspect", str(EXAMPLES / "traces" / "shared-memory-over-48k.json"), "--markdown", str(out))
    text = out.read_text()
    assert "| mechanism | kernel | launches | reported | true | op |" in text
    assert "| E |" in text


@needs_shared
def test_inspect_every_real_trace_through_the_cli(run_cli: RunCli) -> None:
    paths = [str(p) for p in sorted(TRACES.glob("*.json*"))] + [str(TRACES / "dlrm-2ranks")]
    result = run_cli("trace", "inspect", "--json", *paths, timeout=300)
    assert result.returncode == 0  # E alone and b200-eager's PDL overlaps are info (issue 33)
    data = strict_json(result.stdout)
    assert len(data["reports"]) == len(REAL_TRACES)
    assert set(data["mechanisms"]) <= {"E", "F"}


def test_truncated_trace_through_the_cli(run_cli: RunCli, tmp_path: Path) -> None:
    b = TraceBuilder()
    for spec in demo_launches() * 30:
        b.add(spec)
    text = b.text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    result = run_cli("trace", "inspect", str(path))
    # the cut lost half the events: trace-incomplete's error exits 1 (issue 45 item 1; it exited 0); the GEMM's 0%
    # occupancy (E, info: issue 33) is still found in the half that was read
    assert result.returncode == 1
    assert "✗ error    trace-incomplete  the file ends inside its event list at byte" in result.stdout
    assert "E    │ sm90_xmma_gemm" in result.stdout and "│    15 │" in result.stdout
    assert "truncated: the file ends inside an event at byte" in " ".join(result.stdout.split())


def test_a_file_cut_before_its_event_list_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    """Cut between the trace object's first keys, before traceEvents: the check said "the file ends inside its event
    list" of a list that never began, under a note that said it was never read. Cut inside the list, as before."""
    path = tmp_path / "cut.json"
    path.write_text('{"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms"')
    result = run_cli("trace", "inspect", str(path))
    said = " ".join(result.stdout.split())
    assert result.returncode == 1
    assert (
        "✗ error trace-incomplete the file ends at byte 68, before its event list (traceEvents) began: not one "
        "event was read" in said
    )
    assert "inside its event list" not in said


def test_unreadable_trace_is_one_line(run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "corrupt.json"))
    assert result.returncode == 6
    assert result.stderr.strip() == (
        f"warpwizard: error: {EXAMPLES / 'traces' / 'corrupt.json'}: byte 767: "
        "invalid JSON in traceEvents (Expecting value)"
    )


def test_fix_writes_true_values_and_keeps_the_originals(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "fixed.json.gz"
    source = EXAMPLES / "traces" / "unknown-device-bare-inf.json"
    result = run_cli("trace", "fix", str(source), str(out))
    assert result.returncode == 0 and "corrected 1 of 3 kernels" in result.stdout
    import gzip

    doc = strict_json(gzip.decompress(out.read_bytes()))  # valid JSON now: the bare inf is gone
    fixed = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "warpwizard original" in e["args"])
    assert fixed["args"]["blocks per SM"] == 16.0
    assert fixed["args"]["warpwizard original"]["blocks per SM"] == "inf"
    assert fixed["args"]["warpwizard mechanism"] == "C+C'"
    again = run_cli("trace", "inspect", str(out))
    assert again.returncode == 0 and "already corrected" in " ".join(again.stdout.split())


def test_fix_copies_untouched_events_byte_for_byte(tmp_path: Path, run_cli: RunCli) -> None:
    b = TraceBuilder()
    for spec in demo_launches()[:2]:
        b.add(spec)
    b.add(KernelSpec("wrapped", (100000, 30000, 1), (256, 1, 1)))
    source = b.write(tmp_path / "in.json")
    out = tmp_path / "out.json"
    assert run_cli("trace", "fix", str(source), str(out)).returncode == 0
    original_lines = [line for line in source.read_text().splitlines() if '"wrapped"' not in line]
    fixed_text = out.read_text()
    for line in original_lines:
        event = line.strip().rstrip(",")
        if event.startswith('{"ph"'):
            assert event in fixed_text
    same = run_cli("trace", "fix", str(source), str(source), "--force")
    assert same.returncode == 7 and "is an input of this run" in same.stderr  # never its input, even with --force


@needs_shared
def test_fix_a_real_array_format_trace(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "pt18.json"
    result = run_cli("trace", "fix", str(TRACES / "v100-resnet50-pt18-array-format.pt.trace.json.gz"), str(out))
    assert result.returncode == 0
    assert isinstance(strict_json(out.read_text()), list)


def test_sms_gives_true_values_to_a_pytorch_18_trace(run_cli: RunCli) -> None:
    path = str(EXAMPLES / "traces" / "old-sm-count.json")
    without = inspect_json(run_cli, path)["reports"][0]
    assert without["groups"][0]["worst"]["true"]["blocks per SM"] is None  # every value negative: nothing to infer from
    given = inspect_json(run_cli, path, "--sms", "68")["reports"][0]
    assert given["groups"][0]["worst"]["true"]["blocks per SM"] == pytest.approx(99 / 68)
    assert given["devices"][0]["source"] == "given"
    bad = run_cli("trace", "inspect", "--sms", "0", path)
    assert bad.returncode == 2 and "--sms must be a positive number" in bad.stderr


@pytest.mark.skipif(not (TRACES / "a100-alexnet.json.gz").exists(), reason="needs ../shared/traces")
def test_markdown_counts_alike_devices_as_the_terminal_does(run_cli: RunCli) -> None:
    """The Markdown listed a device a line item each and cut the list at four: an eight-GPU trace read as four
    A100s; an unnamed device was "? (None SMs)". Alike devices are now counted, as the terminal says them."""
    eight = run_cli("trace", "inspect", str(TRACES / "a100-alexnet.json.gz"), "--markdown", "-").stdout
    assert "devices: 8 x NVIDIA A100\\-PG509\\-200 (108 SMs)\n" in eight
    nsys = run_cli("trace", "inspect", str(TRACES / "nsys-mfu_2gpu_before.sqlite"), "--markdown", "-").stdout
    assert "devices: 2 x unnamed GPU (SM count unknown)\n" in nsys
    assumed = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "unknown-device-bare-inf.json"), "--markdown", "-")
    assert "devices: 3 x NVIDIA A100\\-SXM4\\-80GB (108 SMs, device 5 assumed)\n" in assumed.stdout
    # and the terminal says them alike (it once listed the assumed device apart, with no id: a newcomer's walk)
    shown = run_cli("trace", "inspect", str(EXAMPLES / "traces" / "unknown-device-bare-inf.json")).stdout
    assert "; 3 x NVIDIA A100-SXM4-80GB (108 SMs, device 5 assumed)\n" in shown


def test_devices_are_said_by_kind_with_where_an_sm_count_came_from() -> None:
    from wizard.formatting import devices_said

    def gpu(i: int, source: str, name: str | None = "H100", sms: int | None = 132) -> dict[str, object]:
        return {"id": i, "name": name, "num_sms": sms, "source": source}

    assert devices_said([gpu(0, "deviceProperties"), gpu(2, "assumed")]) == "2 x H100 (132 SMs, device 2 assumed)"
    assert devices_said([gpu(0, "inferred")]) == "H100 (132 SMs, inferred)"  # all of the kind: the source alone
    assert devices_said([gpu(i, "assumed") for i in range(1, 5)] + [gpu(0, "deviceProperties")]) == (
        "5 x H100 (132 SMs, 4 assumed)"  # past three ids, counted
    )
    assert devices_said([gpu(0, "unknown", None, None), gpu(1, "unknown", None, None)]) == (
        "2 x unnamed GPU (SM count unknown)"
    )
    kinds = [gpu(i, "deviceProperties", f"GPU{i}") for i in range(6)]
    assert devices_said(kinds) == "GPU0 (132 SMs), GPU1 (132 SMs), GPU2 (132 SMs), GPU3 (132 SMs), 2 more kinds"
    assert devices_said([]) == "unknown"
