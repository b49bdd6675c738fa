"""wizard.profiler inside torch.profiler: PyTorch writes the trace, warpwizard checks it and warns."""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import needs_torch, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches


class StandIn:
    """A profiler whose export writes a trace from the project's builder: the GEMM above 48 KB (E)
    and an index kernel whose grid overflows int32 (A)."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.exported: list[str] = []

    def export_chrome_trace(self, path: str, *args: Any, **kwargs: Any) -> None:
        self.exported.append(path)
        if self.text is not None:
            Path(path).write_text(self.text)
            return
        b = TraceBuilder()
        for spec in demo_launches():
            b.add(spec)
        b.add(KernelSpec("index_kernel", (100000, 30000, 1), (256, 1, 1), op="aten::index_select"))
        b.write(path)


def test_one_warning_per_mechanism_with_the_true_value(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="warpwizard")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = wizard.profiler.export_chrome_trace(StandIn(), tmp_path / "t.json")
    messages = [str(w.message) for w in caught if issubclass(w.category, wizard.WarpWizardWarning)]
    assert messages == [
        "warpwizard: mechanism A in 1 launch, e.g. index_kernel: blocks per SM -9810358 (true 22727272.7); "
        "warps per SM -78482864 (true 181818182); est. achieved occupancy % -122629474 (true 100): "
        "grid size overflows int32 (gridX*gridY*gridZ > 2^31-1)",
        "warpwizard: mechanism E in 1 launch, e.g. sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
        "warpgroupsize1x1x1: est. achieved occupancy % 0 (true 18.1818182): "
        "occupancy judged with the default 48 KB shared-memory limit",
    ]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == messages
    assert check.warnings == messages and check.inspection.impossible
    assert check.fixed is None and check.report is None


def test_the_fixed_copy_and_the_report_go_beside_the_trace(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wizard.WarpWizardWarning)
        check = wizard.profiler.export_chrome_trace(StandIn(), tmp_path / "w.1.pt.trace.json", fix=True, report=True)
    assert check.fixed == str(tmp_path / "w.1.warpwizard-fixed.pt.trace.json")
    assert check.report == str(tmp_path / "w.1.warpwizard.json")
    assert not wizard.inspect_traces(check.fixed).impossible  # valid JSON, true values
    assert strict_json(Path(check.report).read_text())["mechanisms"] == {"A": 1, "E": 1, "F": 1}


def test_an_error_inside_the_check_is_a_warning_and_training_goes_on(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check = wizard.profiler.export_chrome_trace(StandIn("{not a trace"), tmp_path / "t.json")
    assert check.inspection is None
    assert [str(w.message) for w in caught] == [
        f"warpwizard could not check {tmp_path / 't.json'}: TraceReadError: {tmp_path / 't.json'}: byte 1: "
        "expected a key, found 'n'"
    ]


@needs_torch
def test_the_handler_is_pytorchs_own_then_a_check(tmp_path: Path) -> None:
    """Given a stand-in profiler, torch's handler names the file; the check warns once per mechanism."""
    handler = wizard.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="rank0", use_gzip=True)
    prof = StandIn()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler(prof)
    (path,) = prof.exported
    assert re.fullmatch(re.escape(str(tmp_path / "tb" / "rank0.")) + r"\d+\.pt\.trace\.json\.gz", path)
    assert [str(w.message)[:36] for w in caught] == [
        "warpwizard: mechanism A in 1 launch,",
        "warpwizard: mechanism E in 1 launch,",
    ]


@needs_torch
def test_a_real_cpu_profile_is_written_as_pytorch_writes_it_and_raises_nothing(tmp_path: Path) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    handler = wizard.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    written: dict[str, bytes] = {}

    class Watch:
        """The real profiler, noting the bytes PyTorch wrote before warpwizard reads them."""

        def __init__(self, prof: Any) -> None:
            self.prof = prof

        def export_chrome_trace(self, path: str, *args: Any, **kwargs: Any) -> None:
            self.prof.export_chrome_trace(path, *args, **kwargs)
            written[path] = Path(path).read_bytes()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with profile(activities=[ProfilerActivity.CPU], on_trace_ready=lambda p: handler(Watch(p))):
            torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    assert [w for w in caught if issubclass(w.category, wizard.WarpWizardWarning)] == []
    ((path, data),) = written.items()
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(path).name]  # nothing else written
    assert Path(path).read_bytes() == data  # untouched by the check
    check = handler.checker.last  # type: ignore[attr-defined]
    assert check.inspection.reports[0].kernels == 0 and not check.inspection.impossible
    assert any(e.get("name") == "aten::mm" for e in strict_json(data)["traceEvents"])
