"""`warpwizard diff`: CPU ops matched by name and input shapes (issue 50, "ops by name and shapes").

Each expected number is computed here from the events themselves (plain ``json.load`` and ``statistics.median``),
never through wizard/diff.py or the profile pass. torch.profiler writes an op's shapes as ``Input Dims`` when
``record_shapes=True`` (PyTorch's torch/csrc/autograd/profiler_kineto.cpp, ``addMetadata("Input Dims", ...)``;
Kineto traces of 2021 spell it ``Input dims``), and nothing where it is off: a side without shapes is matched on
the op's name alone, and the output says so.
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

MM = "aten::mm"
SMALL, LARGE = [[64, 64], [64, 64]], [[4096, 4096], [4096, 4096]]
LARGE_US = [500.0, 505.0, 498.0, 502.0, 500.0, 497.0, 503.0, 501.0]
SMALL_US = [20.0, 20.5, 19.5, 20.0, 20.2, 19.8, 20.1, 19.9]


def _trace(path: Path, *, large_scale: float = 1.0, shapes: bool = True) -> Path:
    """One GEMM kernel a step, and sixteen ``aten::mm`` ops: eight large (scaled), eight small (unchanged)."""
    b = TraceBuilder(gpu="H100")
    for _ in range(3):
        b.add(KernelSpec("void gemm_kernel<128>(float*)", (132, 1, 1), (256, 1, 1), dur=40.0))
    doc = b.document()
    ts = 10_000.0
    for dims, durations, scale in ((LARGE, LARGE_US, large_scale), (SMALL, SMALL_US, 1.0)):
        for dur in durations:
            args: dict[str, Any] = {"External id": 9000}
            if shapes:
                args["Input Dims"] = dims
            event = {"ph": "X", "cat": "cpu_op", "name": MM, "pid": 1, "tid": 1, "ts": ts, "dur": dur * scale}
            doc["traceEvents"].append({**event, "args": args})
            ts += 1000.0
    path.write_text(json.dumps(doc))
    return path


def _diff(run_cli: RunCli, before: Path, after: Path) -> tuple[int, dict[str, Any]]:
    result = run_cli("diff", str(before), str(after), "--json")
    assert result.returncode in (0, 1, 10), result.stderr
    return result.returncode, strict_json(result.stdout)


def _op(data: dict[str, Any], name: str, shapes: str | None) -> dict[str, Any]:
    return next(o for o in data["ops"] if o["name"] == name and o["shapes"] == shapes)


def test_an_op_slower_on_one_shape_is_found_and_the_other_shape_is_not(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", large_scale=1.3)
    code, data = _diff(run_cli, before, after)
    assert (code, data["verdict"], data["regressions"], data["op_regressions"]) == (1, "comparable", 0, 1)
    assert data["ops_matched_on"] == "name and shapes"
    large = _op(data, MM, json.dumps(LARGE, separators=(",", ":")))
    small = _op(data, MM, json.dumps(SMALL, separators=(",", ":")))
    expected = statistics.median(d * 1.3 for d in LARGE_US) / statistics.median(LARGE_US) - 1
    assert large["regression"] and large["change"] == pytest.approx(expected, rel=1e-6)
    assert (large["before_calls"], large["after_calls"]) == (8, 8)
    assert not small["regression"] and small["change"] == 0


def test_a_side_without_shapes_is_matched_by_name_and_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    """Sixteen calls of one name: the large ones' slowdown moves the name's median; matched on the name alone."""
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", large_scale=1.3, shapes=False)
    code, data = _diff(run_cli, before, after)
    assert data["ops_matched_on"] == "name"
    mm = _op(data, MM, None)
    all_before, all_after = LARGE_US + SMALL_US, [d * 1.3 for d in LARGE_US] + SMALL_US
    assert (mm["before_calls"], mm["after_calls"]) == (16, 16)
    # durations are end - start, so the last bits of a float may differ from the planted value
    assert mm["before_median_us"] == pytest.approx(statistics.median(all_before), rel=1e-9)
    assert mm["after_median_us"] == pytest.approx(statistics.median(all_after), rel=1e-9)
    # Blended, the two shapes' calls spread the name's durations over 20-650 µs: the +29% is inside the noise
    # (three standard errors of the medians, from their MAD), so no regression is called, as the shapes would.
    assert (code, mm["regression"]) == (0, False) and mm["noise"] > abs(mm["change"])
    result = run_cli("diff", str(before), str(after))
    assert "matched by name alone (a side has no shapes)" in " ".join(result.stdout.split())


def test_a_trace_against_itself_moves_no_op(run_cli: RunCli, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "a.json")
    code, data = _diff(run_cli, trace, trace)
    assert (code, data["op_regressions"], data["ops_only_before"], data["ops_only_after"]) == (0, 0, 0, 0)
    # the two aten::mm shapes and the aten::add the builder writes for each kernel launch (no shapes)
    assert len(data["ops"]) == 3 and all(o["change"] == 0 for o in data["ops"])


def _plain_ops(path: Path) -> dict[tuple[str, str], list[float]]:
    """(name, compact Input Dims) -> durations, from the trace's cpu_op events read with json.load."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    out: dict[tuple[str, str], list[float]] = {}
    for e in events:
        if e.get("cat") not in ("cpu_op", "Operator") or e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        dims = args.get("Input Dims", args.get("Input dims"))
        if dims is None:
            continue
        out.setdefault((e["name"], json.dumps(dims, separators=(",", ":"))), []).append(float(e.get("dur", 0)))
    return out


@needs_shared
def test_the_v100_pair_matches_ops_by_shapes_as_json_load_counts_them(run_cli: RunCli) -> None:
    """ResNet-50 on a V100, January against June 2021: both record shapes (``Input dims`` then ``Input Dims``)."""
    pair = TRACES / "pairs/v100-resnet50-jan2021-vs-jun2021"
    jan, jun = pair / "jan2021.pt.trace.json.gz", pair / "jun2021.pt.trace.json.gz"
    code, data = _diff(run_cli, jan, jun)
    assert data["ops_matched_on"] == "name and shapes" and code == 1
    before, after = _plain_ops(jan), _plain_ops(jun)
    checked = 0
    for op in data["ops"][:20]:
        b, a = before[(op["name"], op["shapes"])], after[(op["name"], op["shapes"])]
        assert (op["before_calls"], op["after_calls"]) == (len(b), len(a))
        assert op["before_median_us"] == pytest.approx(statistics.median(b), rel=1e-9)
        assert op["after_median_us"] == pytest.approx(statistics.median(a), rel=1e-9)
        assert abs(op["before_total_us"] - sum(b)) < 1e-6 and abs(op["after_total_us"] - sum(a)) < 1e-6
        checked += 1
    assert checked == 20
    to = _op(data, "aten::to", "[[3,224,224],[],[],[],[]]")
    assert to["regression"] and to["change"] > 0.5


@needs_shared
def test_the_h100_mi300_pair_shows_no_ops_because_it_is_not_comparable(run_cli: RunCli) -> None:
    pair = TRACES / "pairs/h100-vs-mi300-bert-small"
    code, data = _diff(run_cli, pair / "h100.json.gz", pair / "mi300.json.gz")
    assert (code, data["ops"], data["ops_matched_on"]) == (10, [], "none")


def _nvtx_ops(path: Path, name: str) -> list[float]:
    """Durations (µs) of PyTorch's emit_nvtx ranges of one op in an Nsight Systems export, read with sqlite3: push/pop
    and start/end ranges (eventType 59, 60, 70, 71: NVIDIA's Nsight Systems Analysis Guide, "NVTX Event Type
    Values") whose text is the op's name followed by `, seq = `, `, op_id = ` or `, sizes = [`."""
    import sqlite3

    query = (
        "SELECT e.start, e.end, coalesce(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s "
        "ON e.textId = s.id WHERE e.eventType IN (59, 60, 70, 71) AND e.end IS NOT NULL"
    )
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute(query).fetchall()
    fields = (", seq = ", ", op_id = ", ", sizes = [")
    return [
        (end - start) / 1000 for start, end, text in rows if text and any(text.startswith(name + f) for f in fields)
    ]


@needs_shared
def test_the_nsys_pair_matches_its_nvtx_ops_by_name_as_sqlite_counts_them(run_cli: RunCli) -> None:
    """An Nsight Systems export carries no Input Dims: its ops are matched by name, and said so."""
    pair = TRACES / "pairs/nsys-mfu-2gpu-before-after"
    before, after = pair / "before.sqlite", pair / "after.sqlite"
    code, data = _diff(run_cli, before, after)
    assert (code, data["verdict"], data["regressions"], data["ops_matched_on"]) == (1, "comparable", 0, "name")
    copy = _op(data, "aten::copy_", None)
    b, a = _nvtx_ops(before, "aten::copy_"), _nvtx_ops(after, "aten::copy_")
    assert (copy["before_calls"], copy["after_calls"]) == (len(b), len(a))
    assert copy["before_median_us"] == pytest.approx(statistics.median(b), rel=1e-9)
    assert copy["after_median_us"] == pytest.approx(statistics.median(a), rel=1e-9)
    assert copy["regression"] and data["op_regressions"] >= 1
