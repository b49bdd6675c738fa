"""trace-incomplete (issue 45 item 1): a trace cut short, noise after the header, a GPU with not one GPU event.

Each planted case goes through the real CLI and exits 1; what the check says (where the cut lies, the events read,
the GPUs and calls) is compared with a second reading written here from the JSON itself (json's own decoder,
event by event), sharing no code with the reader. The evidence for the rule (Kineto closes the event list only in
``finalizeTrace``, with a "Record Window End" event; it lists the GPUs whatever it records) is cited in
wizard/trace/health/checks/trace_incomplete.py: pytorch/kineto@114171df libkineto/src/output_json.cpp:445-478
(the list opened), 1066-1108 (closed, then renamed from NAME.tmp), GenericActivityProfiler.cpp:163-178.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REAL_TRACES, TRACES, RunCli, needs_shared, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

CHECK = "trace-incomplete"
# Kineto's category names (libkineto/src/ActivityType.cpp) and PyTorch 1.8's older ones, written out here
# and the CUPTI range profiler's event per kernel (libkineto/src/CuptiRangeProfiler.cpp:182-195 at b5d29fc073)
GPU_CATEGORIES = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset", "cuda_profiler_range"}
API_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime"}


# -- the second reading ------------------------------------------------------------------------------------------


def read_events(data: bytes) -> dict[str, Any]:
    """Events read one by one from the event list with json's decoder, stopping at the first that does not
    decode: how many, where the undecodable rest starts (a byte of ``data``), the last one's ts, and whether the
    list closed."""
    text = data.decode("utf-8")
    if text.lstrip().startswith("["):
        at = text.index("[") + 1
    else:
        key = text.index('"traceEvents"')
        at = text.index("[", key) + 1
    decoder = json.JSONDecoder()
    events: list[Any] = []
    closed = False
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at < len(text) and text[at] == "]":
            closed = True
            break
        try:
            event, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        events.append(event)
        at = end
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float)) and not isinstance(e["ts"], bool)]
    return {
        "events": len(events),
        "at_byte": len(text[:at].encode("utf-8")),
        "rest": len(text.encode("utf-8")) - len(text[:at].encode("utf-8")),
        "last_ts": float(stamps[-1]) if stamps else None,
        "closed": closed,
        "list": events,
    }


def inspect(run_cli: RunCli, path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli("trace", "inspect", "--json", str(path), *extra)
    assert result.returncode in (0, 1), result.stderr
    (report,) = strict_json(result.stdout)["reports"]
    (check,) = [c for c in report["health"] if c["check"] == CHECK]
    return result.returncode, check


def bert_json() -> bytes:
    return gzip.decompress((TRACES / "h100-bert-small.json.gz").read_bytes())


# -- a trace cut short -------------------------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("fail_on", ["warning", "info"])
def test_a_real_trace_cut_at_600_kb_is_an_error_saying_where(run_cli: RunCli, tmp_path: Path, fail_on: str) -> None:
    """The issue's case: h100-bert-small's 1.0 MB of JSON cut at 600 KB, all 60 kernels lost: exit 1, not "no
    problem found"; the byte, the events read and the last timestamp as the second reading finds them."""
    data = bert_json()[: 600 * 1024]
    path = tmp_path / "cut.json"
    path.write_bytes(data)
    code, check = inspect(run_cli, path, "--fail-on", fail_on)
    want = read_events(data)
    assert not want["closed"] and want["rest"] > 0
    assert (code, check["status"], check["events_lost"]) == (1, "error", True)
    assert (check["at_byte"], check["events_read"], check["count"]) == (want["at_byte"], want["events"], want["events"])
    assert check["partial_event_bytes"] == want["rest"]
    assert check["last_ts"] == want["last_ts"]
    assert check["gpu_events"] == sum(e.get("cat") in GPU_CATEGORIES for e in want["list"]) == 0
    assert f"byte {want['at_byte']:,}" in check["summary"] and f"{want['events']} events read" in check["summary"]
    assert "not one GPU event in the part read" in check["summary"]
    assert "full disk" in check["meaning"] and ".tmp" in check["meaning"]


def test_noise_after_the_header_is_an_error_with_nothing_read(run_cli: RunCli, tmp_path: Path) -> None:
    data = b'{"traceEvents": [ \x01garbage%%% not json'
    path = tmp_path / "noise.json"
    path.write_bytes(data)
    code, check = inspect(run_cli, path)
    header = len(b'{"traceEvents": [ ')
    assert (code, check["status"], check["events_read"], check["at_byte"]) == (1, "error", 0, header)
    assert check["partial_event_bytes"] == len(data) - header


def test_a_list_cut_between_two_events_lost_the_rest(run_cli: RunCli, tmp_path: Path) -> None:
    """No event cut in half, but the list never closed: Kineto's closing "Record Window End" event, and every
    event after the cut, are missing."""
    b = TraceBuilder()
    for i in range(5):
        b.add(KernelSpec(f"k{i}", (64, 1, 1), (128, 1, 1)))
    text = b.text()
    cut = text[: text.rindex("}", 0, text.rindex("]")) + 1]  # after the last whole event, before the ']'
    path = tmp_path / "unclosed.json"
    path.write_text(cut)
    code, check = inspect(run_cli, path)
    want = read_events(cut.encode())
    assert (code, check["status"], check["events_lost"], check["partial_event_bytes"]) == (1, "error", True, 0)
    assert check["events_read"] == want["events"] == len(json.loads(text)["traceEvents"])


@pytest.mark.parametrize("compressed", [False, True])
def test_a_cut_after_the_event_list_read_every_event_and_is_info(
    run_cli: RunCli, tmp_path: Path, compressed: bool
) -> None:
    """Cut inside the metadata Kineto writes after the list (traceName), or in the gzip trailer: nothing lost."""
    b = TraceBuilder()
    for i in range(3):
        b.add(KernelSpec(f"k{i}", (64, 1, 1), (128, 1, 1)))
    text = b.text()
    if compressed:
        path = tmp_path / "cut.json.gz"
        path.write_bytes(gzip.compress(text.encode())[:-12])
    else:
        assert '"traceName"' in text
        path = tmp_path / "cut.json"
        path.write_text(text[: text.index('"traceName"') + 16])
    code, check = inspect(run_cli, path)
    assert (check["status"], check["cut"], check["events_lost"]) == ("info", True, False)
    assert check["events_read"] == len(json.loads(text)["traceEvents"])
    assert code == 0  # info is below the default gate
    assert run_cli("trace", "inspect", "--fail-on", "info", str(path)).returncode == 1


# -- a GPU and not one GPU event -----------------------------------------------------------------------------------


def test_a_gpu_with_launches_and_no_gpu_event_is_a_warning(run_cli: RunCli, tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(KernelSpec("never_recorded", (64, 1, 1), (128, 1, 1), kernel=False, repeat=3))
    path = b.write(tmp_path / "no-gpu-events.json")
    doc = json.loads(path.read_text())
    code, check = inspect(run_cli, path)
    gpus = len(doc["deviceProperties"])
    calls = sum(e.get("cat") in API_CATEGORIES for e in doc["traceEvents"])
    assert gpus >= 1 and calls == 3
    assert (code, check["status"], check["count"]) == (1, "warning", calls)
    assert (check["gpus"], check["gpu_api_calls"], check["gpu_events"]) == (gpus, calls, 0)
    assert check["summary"] == (
        f"deviceProperties lists {gpus} GPU and 3 CUDA/HIP API calls were recorded, but not one GPU event "
        "(kernel, copy or set)"
    )


def test_a_gpu_listed_and_cpu_ops_only_is_a_warning_naming_the_cpu_only_profile(
    run_cli: RunCli, tmp_path: Path
) -> None:
    b = TraceBuilder()
    for name in ("aten::empty", "aten::mm"):
        b.add_cpu_op(name)
    path = b.write(tmp_path / "cpu.json")
    doc = json.loads(path.read_text())
    code, check = inspect(run_cli, path)
    assert (code, check["status"], check["count"], check["gpu_api_calls"]) == (1, "warning", 1, 0)
    assert check["gpus"] == len(doc["deviceProperties"]) == 1
    assert "activities=[ProfilerActivity.CPU]" in check["meaning"]


def test_a_range_profiler_trace_recorded_its_gpu(run_cli: RunCli, tmp_path: Path) -> None:
    """The range profiler writes a cuda_profiler_range event per kernel and no kernel event: the GPU was recorded."""
    b = TraceBuilder()
    b.add_ranged(KernelSpec("gemm", (64, 1, 1), (128, 1, 1), repeat=3))
    path = b.write(tmp_path / "ranges.json")
    doc = json.loads(path.read_text())
    code, check = inspect(run_cli, path)
    ranges = sum(e.get("cat") == "cuda_profiler_range" for e in doc["traceEvents"])
    assert ranges == 3 and not any(e.get("cat") == "kernel" for e in doc["traceEvents"])
    assert (code, check["status"], check["gpu_events"]) == (0, "ok", ranges)


def test_a_cpu_only_machine_is_ok(run_cli: RunCli, tmp_path: Path) -> None:
    doc = {"deviceProperties": [], "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                                                    "tid": 1, "ts": 1.0, "dur": 2.0}]}  # fmt: skip
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(doc))
    code, check = inspect(run_cli, path)
    assert (code, check["status"], check["count"], check["events_read"]) == (0, "ok", 0, 1)


# -- the second computation over the shared traces -----------------------------------------------------------------


def _load(path: Path) -> Any:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


@needs_shared
@pytest.mark.parametrize("name", sorted(REAL_TRACES))
def test_trace_incomplete_second_computation_on_every_shared_trace(run_cli: RunCli, name: str) -> None:
    """No shared trace is cut, and each that has a GPU has GPU events: ok, with the events, GPUs, calls and GPU
    events the JSON itself holds."""
    path = TRACES / name
    doc = _load(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    props = [] if isinstance(doc, list) else doc.get("deviceProperties", doc.get("computeProperties", []))
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float)) and math.isfinite(e["ts"])]
    code, check = inspect(run_cli, path)
    assert (check["status"], check["cut"], check["events_lost"], check["at_byte"]) == ("ok", False, False, None)
    assert (check["events_read"], check["count"]) == (len(events), 0)
    assert check["gpus"] == len([p for p in props if isinstance(p, dict)])
    assert check["gpu_api_calls"] == sum(e.get("cat") in API_CATEGORIES for e in events)
    assert check["gpu_events"] == sum(e.get("cat") in GPU_CATEGORIES for e in events)
    assert check["last_ts"] == float(stamps[-1])
    assert code in (0, 1)  # the other checks decide the exit here
