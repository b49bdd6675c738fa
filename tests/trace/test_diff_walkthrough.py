"""`warpwizard diff` as a newcomer met it: what is not known is said (never `same`), a GPU name guessed from the
SM count is not compared as a fact, `--markdown -` is stdout, `--threshold` speaks the percent that was typed, the
shared-kernel shares and the Markdown's launch configurations read without a contradiction, and a kernel's device
the trace does not describe is listed as the one GPU it does describe (inspect and diff agree).

Each expectation is from the launches planted here or from what the shared pairs' files hold (SOURCES.tsv), never
from wizard/diff.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from tests.helpers import ADD, GEMM
from tests.helpers import diff_trace as _trace
from wizard.testing.traces import KernelSpec, TraceBuilder

PAIRS = TRACES / "pairs"
NSYS = (PAIRS / "nsys-mfu-2gpu-before-after/before.sqlite", PAIRS / "nsys-mfu-2gpu-before-after/after.sqlite")
V100 = (
    PAIRS / "v100-resnet50-jan2021-vs-jun2021/jan2021.pt.trace.json.gz",
    PAIRS / "v100-resnet50-jan2021-vs-jun2021/jun2021.pt.trace.json.gz",
)


def _json(run_cli: RunCli, *args: Any) -> tuple[int, dict[str, Any]]:
    result = run_cli(*map(str, args), "--json")
    assert result.returncode in (0, 1, 10), result.stderr
    return result.returncode, strict_json(result.stdout)


def _factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["factors"] if f["name"] == name)


def _built(path: Path, *, device_properties: bool = True, device: int = 0, extra: float = 0.0) -> Path:
    """Three steps of a GEMM and an add on ``device``; ``extra`` µs of a kernel only this side runs, per step."""
    b = TraceBuilder(gpu="H100", device_properties=device_properties)
    for _ in range(3):
        b.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=40.0, device=device))
        b.add(KernelSpec(ADD, (64, 1, 1), (128, 1, 1), dur=6.0, device=device))
        if extra:
            b.add(KernelSpec("only_after_kernel", (132, 1, 1), (128, 1, 1), dur=extra, device=device))
    return b.write(path)


# -- 1. unknown is unknown; a guessed GPU name is not a fact -------------------------------------------------


@needs_shared
def test_gpu_models_neither_export_names_are_unknown_and_the_verdict_says_so(run_cli: RunCli) -> None:
    """Neither export of the nsys pair has a GPU table (SOURCES.tsv: the after run used other GPUs)."""
    _, data = _json(run_cli, "diff", *NSYS)
    model = _factor(data, "GPU model")
    assert (model["before"], model["after"], model["status"]) == ("unknown", "unknown", "unknown")
    assert "GPU model" in data["unknown"] and "SMs per GPU" in data["unknown"]
    shown = run_cli("diff", *map(str, NSYS)).stdout
    assert "unknown: GPU model" in " ".join(shown.split()[:20])
    assert "GPU model" not in shown.split("the same on both sides:")[-1]


@needs_shared
def test_a_gpu_name_guessed_from_the_sm_count_is_not_compared_with_a_name_read(run_cli: RunCli) -> None:
    """jan2021 has no deviceProperties: its 'Tesla V100' is the GPU with its 80 SMs; jun2021 names its device."""
    _, data = _json(run_cli, "diff", *V100)
    model, sms = _factor(data, "GPU model"), _factor(data, "SMs per GPU")
    assert model["status"] == "unknown" and model["effect"] == "none"
    assert model["before"] == "Tesla V100 (inferred from 80 SMs)" and model["after"] == "Tesla V100-DGXS-32GB"
    assert "guess" in model["meaning"]
    assert (sms["before"], sms["after"], sms["status"]) == ("80", "80", "same")


def test_a_builder_trace_without_device_properties_names_its_gpu_as_a_guess(run_cli: RunCli, tmp_path: Path) -> None:
    bare = _built(tmp_path / "bare.json", device_properties=False)
    described = _built(tmp_path / "described.json")
    _, data = _json(run_cli, "diff", bare, described)
    model = _factor(data, "GPU model")
    assert model["status"] == "unknown" and model["before"].endswith("(inferred from 132 SMs)")
    assert _factor(data, "SMs per GPU")["status"] == "same"
    _, same = _json(run_cli, "diff", described, _built(tmp_path / "again.json"))
    assert _factor(same, "GPU model")["status"] == "same" and "GPU model" not in same["unknown"]


# -- 5. a kernel's device the trace does not describe -------------------------------------------------------


def test_a_device_only_the_kernels_name_is_listed_and_compared_as_the_described_gpu(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """deviceProperties describes device 0; every kernel ran on device 2 (as the MI300 bert-small trace)."""
    on_two = _built(tmp_path / "on-two.json", device=2)
    result = run_cli("trace", "inspect", str(on_two), "--json", "--fail-on", "never")
    report = strict_json(result.stdout)["reports"][0]
    assert [(d["id"], d["source"]) for d in report["devices"]] == [(0, "deviceProperties"), (2, "assumed")]
    assert report["devices"][1]["num_sms"] == 132
    assert [(d["id"], d["num_sms"], d["name_source"]) for d in report["profile"]["devices"]] == [(2, 132, "assumed")]
    _, data = _json(run_cli, "diff", on_two, _built(tmp_path / "on-zero.json"))
    assert _factor(data, "GPU model")["status"] == _factor(data, "SMs per GPU")["status"] == "same"


@needs_shared
def test_the_mi300_trace_lists_the_device_its_kernels_ran_on_and_diff_names_it(run_cli: RunCli) -> None:
    mi300 = TRACES / "mi300-bert-small.json.gz"
    report = strict_json(run_cli("trace", "inspect", str(mi300), "--json", "--fail-on", "never").stdout)["reports"][0]
    listed = {d["id"]: d for d in report["devices"]}
    assert 2 in listed and listed[2]["source"] == "assumed" and listed[2]["num_sms"] == 304
    _, data = _json(run_cli, "diff", PAIRS / "h100-vs-mi300-bert-small/h100.json.gz", mi300)
    assert _factor(data, "GPU model")["after"] == listed[0]["name"] == "AMD Instinct MI300X VF"
    assert _factor(data, "SMs per GPU")["after"] == "304"


# -- 2. --markdown - is stdout ---------------------------------------------------------------------------------


def test_markdown_dash_is_stdout_and_no_file_named_dash(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    work = tmp_path / "cwd"
    work.mkdir()
    result = run_cli("diff", str(before), str(after), "--markdown", "-", cwd=work)
    assert result.returncode == 1 and result.stdout.startswith("## before.json → after.json: ")
    assert "comparability" not in result.stdout  # the Markdown alone, not the terminal's tables beside it
    assert list(work.iterdir()) == []


def test_two_outputs_on_stdout_are_refused_in_diff_and_trace_inspect(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json")
    for argv in (["diff", str(before), str(after)], ["trace", "inspect", str(before)]):
        result = run_cli(*argv, "--json", "--markdown", "-", cwd=tmp_path)
        assert result.returncode == 2
        assert "--json and --markdown -: both would write to stdout" in result.stdout + result.stderr


# -- 3. --threshold in the percent typed ---------------------------------------------------------------------


def test_a_threshold_out_of_bounds_is_refused_in_the_words_typed(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json")
    for typed in ("1000", "0", "-5", "abc", "nan", "inf"):
        result = run_cli("diff", str(before), str(after), "--threshold", typed)
        assert result.returncode == 2, typed
        line = result.stderr.strip()
        assert f"--threshold {typed}: " in line and "above 0 and below 1000" in line, line
        assert "fraction" not in line and "10.0" not in line


def test_the_threshold_shown_is_the_one_given(run_cli: RunCli, tmp_path: Path) -> None:
    before, after = _trace(tmp_path / "before.json"), _trace(tmp_path / "after.json", gemm_scale=1.2)
    for typed, shown in (("0.5", "0.5%"), ("12.5", "12.5%"), ("50", "50%"), ("10%", "10%")):
        assert f"beyond {shown} and the noise" in run_cli("diff", str(before), str(after), "--threshold", typed).stdout
        md = run_cli("diff", str(before), str(after), "--threshold", typed, "--markdown", "-", cwd=tmp_path).stdout
        assert f"beyond {shown} and the noise" in md
    _, data = _json(run_cli, "diff", before, after, "--threshold", "0.5")
    assert data["threshold"] == 0.005


# -- 4. readable shares and launch configurations -----------------------------------------------------------


def test_shared_kernels_show_each_sides_own_share(run_cli: RunCli, tmp_path: Path) -> None:
    """AFTER adds 10 µs a step of a kernel BEFORE never ran: BEFORE 100% shared, AFTER 46/56, the pair 92/102."""
    before, after = _built(tmp_path / "before.json"), _built(tmp_path / "after.json", extra=10.0)
    _, data = _json(run_cli, "diff", before, after)
    shared = _factor(data, "shared kernels")
    assert (shared["before"], shared["after"]) == ("100%", f"{46 / 56:.1%}")
    assert shared["status"] == "same" and f"{92 / 102:.1%}" in shared["meaning"]
    after = _built(tmp_path / "after2.json", extra=30.0)
    _, data = _json(run_cli, "diff", before, after)
    shared = _factor(data, "shared kernels")
    assert (shared["before"], shared["after"], shared["status"]) == ("100%", f"{46 / 76:.1%}", "differs")


def test_the_markdown_names_each_rows_grid_and_block(run_cli: RunCli, tmp_path: Path) -> None:
    """One kernel name at two launch configurations, both slower: two rows that differ by grid."""

    def two_shapes(path: Path, scale: float) -> Path:
        b = TraceBuilder(gpu="H100")
        for _ in range(8):
            b.add(KernelSpec(GEMM, (132, 1, 1), (256, 1, 1), dur=40.0 * scale))
            b.add(KernelSpec(GEMM, (66, 1, 1), (256, 1, 1), dur=30.0 * scale))
        return b.write(path)

    before, after = two_shapes(tmp_path / "before.json", 1.0), two_shapes(tmp_path / "after.json", 1.5)
    md = run_cli("diff", str(before), str(after), "--markdown", "-", cwd=tmp_path).stdout
    assert "| kernel | grid / block | launches | median µs | change |" in md
    rows = [line for line in md.splitlines() if line.startswith("| `void gemm_kernel")]
    assert len(rows) == 2 and len(set(rows)) == 2
    assert any(r"\[132, 1, 1\] / \[256, 1, 1\]" in r for r in rows)
    assert any(r"\[66, 1, 1\] / \[256, 1, 1\]" in r for r in rows)
