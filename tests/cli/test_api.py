"""The Python API: light to import, typed surface, one record per launch with the right values."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wizard
from tests.conftest import EXAMPLES, REPO, strict_json
from wizard.trace.metrics.findings import LAUNCH_COLUMNS

TRACES = EXAMPLES / "traces"
HEAVY = ("torch", "rich", "questionary", "pandas", "prompt_toolkit")


def _heavy_modules_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout.replace("'", '"')))


def test_import_wizard_is_light() -> None:
    assert _heavy_modules_after("import wizard") == []


def test_the_api_and_the_profiler_hook_load_without_torch_rich_or_pandas() -> None:
    code = "import wizard\nwizard.inspect_traces\nwizard.run_playbook\nwizard.profiler.tensorboard_trace_handler"
    assert _heavy_modules_after(code) == []


def test_every_public_name_is_listed_typed_and_loads() -> None:
    """``_MODULES`` (what loads), ``__all__`` and the TYPE_CHECKING imports name the same things."""
    exported = set(wizard._EXPORTS)
    assert set(wizard.__all__) == exported | {"__version__", "profiler"}
    tree = ast.parse((REPO / "wizard" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    typed = {a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert typed == exported | {"profiler"}
    for name in wizard.__all__:
        assert getattr(wizard, name) is not None
    assert (REPO / "wizard" / "py.typed").exists()


# (example, its record with a wrong value: name start, grid, mechanisms, reported, true, op)
WRONG = [
    (
        "grid-overflow",
        "void at::native::index_elementwise_kernel",
        (100000, 30000, 1),
        ("A",),
        (-9810358.0, -78482864.0, -122629474.0),
        (3e9 / 132, 3e9 * 8 / 132, 100.0),
        "aten::index_select",
    ),
    (
        "early-overflow",
        "void at::native::vectorized_elementwise_kernel",
        (2097152, 1, 1),
        ("A'",),
        (26214.4004, -838860.812, 100.0),
        (2097152 / 80, 2097152 * 32 / 80, 100.0),
        "aten::add",
    ),
    (
        "unknown-device-bare-inf",
        "void at::native::reduce_kernel",
        (1728, 1, 1),
        ("C", "C'"),
        (float("inf"), float("inf"), -99.0),
        (16.0, 256.0, 100.0),
        "aten::sum",
    ),
    (
        "occupancy-calculator",
        "void at::native::vectorized_elementwise_kernel",
        (2048, 1, 1),
        ("D",),
        (15.515152, 62.0606079, -99.0),
        (2048 / 132, 2048 * 4 / 132, 96.96969696969697),
        "aten::gelu",
    ),
    (
        "shared-memory-over-48k",
        "sm90_xmma_gemm",
        (8, 16, 1),
        ("E",),
        (0.969696999, 11.636364, 0.0),
        (128 / 132, 128 * 12 / 132, 100 * 12 / 66),
        "aten::mm",
    ),
    (
        "unexplained-custom-kernel",
        "void my_ext::scatter_rows_kernel<float>",
        (4096, 1, 1),
        ("G", "F"),  # computed on 144 SMs while deviceProperties says 132: true on the profiler's count
        (28.4444447, 227.555557, 75.0),
        (4096 / 144, 4096 * 8 / 144, 75.0),
        "my_ext::scatter_rows",
    ),
]


@pytest.mark.parametrize(
    ("example", "name", "grid", "mechanisms", "reported", "true", "op"), WRONG, ids=[w[0] for w in WRONG]
)
def test_each_mechanism_gives_a_record_with_the_true_values(
    example: str,
    name: str,
    grid: tuple[int, int, int],
    mechanisms: tuple[str, ...],
    reported: tuple[float, float, float],
    true: tuple[float, float, float],
    op: str,
) -> None:
    report = wizard.inspect_traces(TRACES / f"{example}.json")
    launch = next(r for r in report.launches if r.mechanism == mechanisms[0])
    assert launch.s_name.startswith(name) and launch.grid == grid
    assert launch.mechanisms == mechanisms and launch.mechanism == mechanisms[0]
    assert (launch.blocks_per_sm, launch.warps_per_sm, launch.est_occupancy) == reported
    got = (launch.true_blocks_per_sm, launch.true_warps_per_sm, launch.true_est_occupancy)
    assert got == pytest.approx(true, rel=1e-12)
    assert launch.op == op and launch.trace == str(TRACES / f"{example}.json") and launch.rank is None


def test_old_sm_count_records_get_true_values_once_the_sm_count_is_known() -> None:
    """B: the profiler divided by -1; without deviceProperties the true values need --sms."""
    unknown = wizard.inspect_traces(TRACES / "old-sm-count.json")
    assert [(r.mechanism, r.true_warps_per_sm) for r in unknown.launches] == [("B", None)] * 4
    known = wizard.inspect_traces(TRACES / "old-sm-count.json", sms=68)
    gemm = known.launches[0]
    assert (gemm.s_name, gemm.warps_per_sm, gemm.mechanism) == ("volta_sgemm_128x64_nn", -396.0, "B")
    assert gemm.true_blocks_per_sm == pytest.approx(99 / 68) and gemm.true_warps_per_sm == pytest.approx(99 * 4 / 68)


def test_a_record_for_every_checked_launch_or_only_the_wrong_ones() -> None:
    path = TRACES / "grid-overflow.json"
    every = wizard.inspect_traces(path)
    assert [(r.op, r.mechanism) for r in every.launches] == [
        ("aten::add", "F"),  # large by design, not wrong
        ("aten::sum", None),
        ("aten::mm", "E"),
        ("aten::index_select", "A"),
    ]
    healthy = every.launches[1]
    assert (healthy.warps_per_sm, healthy.true_warps_per_sm, healthy.est_occupancy) == (32.0, 32.0, 50.0)
    assert (healthy.registers_per_thread, healthy.shared_memory, healthy.block) == (32, 16, (32, 16, 1))
    wrong = wizard.inspect_traces(path, launches="wrong")
    assert [r.mechanism for r in wrong.launches] == ["E", "A"]
    assert wizard.inspect_traces(path, launches="none").launches == []
    assert wizard.inspect_traces(TRACES / "rocm-mi300x.json").launches == []  # nothing recorded to check


def test_bad_arguments_are_the_package_errors() -> None:
    with pytest.raises(wizard.UsageError, match="launches must be one of none, wrong, all, not 'some'"):
        wizard.inspect_traces(TRACES / "grid-overflow.json", launches="some")  # type: ignore[arg-type]
    with pytest.raises(wizard.UsageError, match="sms must be a positive number of SMs, not 0"):
        wizard.inspect_traces(TRACES / "grid-overflow.json", sms=0)
    with pytest.raises(wizard.TraceReadError, match=r"corrupt\.json: byte 767"):
        wizard.inspect_traces(TRACES / "corrupt.json")
    with pytest.raises(wizard.InputFileError, match=r"no-such\.json: no such file"):
        wizard.inspect_traces(TRACES / "no-such.json")


def test_to_dataframe_has_hta_columns_and_the_values() -> None:
    pytest.importorskip("pandas")
    frame = wizard.inspect_traces(TRACES / "grid-overflow.json").to_dataframe()
    assert list(frame.columns) == list(LAUNCH_COLUMNS)
    for hta in ("s_name", "ts", "dur", "stream", "correlation", "blocks_per_sm", "warps_per_sm", "est_occupancy"):
        assert hta in frame.columns
    row = frame[frame["mechanism"] == "A"].iloc[0]
    assert row["warps_per_sm"] == -78482864.0 and row["true_warps_per_sm"] == pytest.approx(3e9 * 8 / 132)
    assert row["op"] == "aten::index_select" and row["correlation"] == 103


def test_to_dataframe_without_pandas_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an interpreter without pandas does on import
    report = wizard.inspect_traces(TRACES / "grid-overflow.json")
    with pytest.raises(wizard.MissingDependency, match=r"to_dataframe\(\) needs pandas: pip install pandas"):
        report.to_dataframe()


def test_html_in_a_notebook_escapes_the_trace_text() -> None:
    html = wizard.inspect_traces(TRACES / "grid-overflow.json")._repr_html_()
    assert "index_elementwise_kernel&lt;128, 4, at::native::gpu_index_kernel&lt;float&gt; &gt;" in html
    assert "<float>" not in html and "2 launches with wrong values: grid size overflows int32" in html


def test_fix_trace_through_the_api(tmp_path: Path) -> None:
    out = tmp_path / "fixed.json"
    summary = wizard.fix_trace(TRACES / "grid-overflow.json", out)
    assert (summary.corrected, summary.mechanisms) == (2, {"A": 1, "E": 1})
    assert not wizard.inspect_traces(out).impossible
    with pytest.raises(wizard.OutputFileError, match="already exists"):
        wizard.fix_trace(TRACES / "grid-overflow.json", out)


def test_playbooks_through_the_api(tmp_path: Path) -> None:
    answers = {"have": "trace", "trace_path": str(TRACES / "grid-overflow.json")}
    request = wizard.RunRequest(answers=answers, options=wizard.Options(report_dir=tmp_path))
    transcript = wizard.run_playbook("negative-warps-per-sm", request)
    assert transcript.diagnosis == "profiler-bug-grid-overflow"
    assert transcript.evidence[0].startswith("grid 100000x30000x1 = 3000000000 blocks, block 256x1x1")
    strict_json(json.dumps(transcript.to_dict(), allow_nan=False))
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\ntitle: t\nversion: 1\nnodes: []\n")
    assert wizard.validate_playbook(bad) == [
        f"{bad}:4:8: the playbook needs 'nodes': a list of question, probe, decision and conclusion nodes"
    ]
    assert wizard.validate_playbook(REPO / "playbooks" / "negative-warps-per-sm.yaml") == []
    with pytest.raises(
        wizard.AnswersError, match="unknown question id 'nope'; playbook 'negative-warps-per-sm' asks: have, trace_path"
    ):
        wizard.run_playbook("negative-warps-per-sm", {"nope": 1})


def test_answers_from_the_api_cannot_name_a_program(tmp_path: Path) -> None:
    """Answers are data, as if from a file: a workload they name runs only with allow_commands."""
    answers: dict[str, Any] = {"have": "workload", "workload_cmd": "python -c \"open('PWNED','w')\""}
    transcript = wizard.run_playbook(
        "negative-warps-per-sm",
        wizard.RunRequest(answers=answers, options=wizard.Options(report_dir=tmp_path / "r"), defaults=True),
    )
    refused = [e for e in transcript.entries if e.facts and e.facts.get("reason") == "program not allowed"]
    assert refused and not Path("PWNED").exists()


class _StopsAt:
    """An answer source that answers from a mapping and is interrupted (Ctrl-C) at one question."""

    def __init__(self, values: dict[str, Any], stop: str) -> None:
        self.values, self.stop = values, stop

    def answer(self, question: Any, prompt: str) -> tuple[Any, str]:
        if question.id == self.stop:
            raise KeyboardInterrupt
        return self.values[question.id], "file"

    def confirm(self, question: Any, value: Any, what: str) -> bool:
        return False


def test_the_library_run_is_the_commands_run_interrupt_resume_and_from(tmp_path: Path) -> None:
    """wizard.run_playbook is the one run ``warpwizard run`` calls: a Ctrl-C saves the session and says
    how to continue in the library's terms, ``resume=True`` continues it, ``from_node`` reuses a transcript."""
    from wizard.system import System

    system = System(environ={"XDG_STATE_HOME": str(tmp_path / "state")})
    options = wizard.Options(report_dir=tmp_path / "r")
    trace = str(EXAMPLES / "traces" / "grid-overflow.json")
    with pytest.raises(wizard.errors.Interrupted) as stopped:
        wizard.run_playbook(
            "negative-warps-per-sm",
            wizard.RunRequest(options=options),
            system=system,
            answer_source=lambda pb, given: _StopsAt({"have": "trace"}, "trace_path"),
        )
    session = Path(str(stopped.value.saved_to))
    assert session.parent == tmp_path / "state" / "warpwizard" / "sessions"
    assert stopped.value.resume == (
        "continue with: wizard.run_playbook('negative-warps-per-sm', wizard.RunRequest(resume=True))"
    )

    heard: list[tuple[str, str]] = []
    resumed = wizard.run_playbook(
        "negative-warps-per-sm",
        wizard.RunRequest(sets=[f"trace_path={trace}"], resume=True, options=options),
        system=system,
        notify=lambda kind, text: heard.append((kind, text)),
    )
    assert resumed.answers == {"have": "trace", "trace_path": trace}
    assert resumed.diagnosis == "profiler-bug-grid-overflow"
    assert ("resumed", f"resuming from {session}") in heard

    previous = tmp_path / "previous.json"
    previous.write_text(json.dumps(resumed.to_dict()))
    heard.clear()
    again = wizard.run_playbook(
        "negative-warps-per-sm",
        wizard.RunRequest(answers=previous, from_node="route_mechanism", options=options),
        system=system,
        notify=lambda kind, text: heard.append((kind, text)),
    )
    inspect = next(e for e in again.entries if e.node == "inspect")
    assert inspect.reused_from == str(previous) and inspect.probe == "trace.inspect"
    assert again.diagnosis == "profiler-bug-grid-overflow"
    assert (
        "rerun",
        "rerunning from route_mechanism; reusing the recorded results of: inspect (each only where its inputs and "
        "the files they name are unchanged; the transcript says why any ran again)",
    ) in heard

    with pytest.raises(wizard.UsageError, match=r"^resume= continues a saved session; give it or answers=, not both"):
        wizard.run_playbook("negative-warps-per-sm", wizard.RunRequest(answers=previous, resume=True), system=system)
    plan = wizard.plan_playbook("negative-warps-per-sm", {"have": "trace"}, system=system)
    assert plan.to_dict()["schema"] == "warpwizard.plan/1"


def test_the_library_names_its_own_keywords_and_the_cli_its_flags(run_cli: Any) -> None:
    """A Python caller who passed ``sets=`` is told about ``sets=``, never ``--set``; the CLI, which passes
    ``spell=``, about ``--set``: one message, two spellings."""
    with pytest.raises(wizard.AnswersError) as library:
        wizard.run_playbook("negative-warps-per-sm", wizard.RunRequest(sets=["have"]))
    assert library.value.problems == ["sets= 'have': expected QUESTION=VALUE"]
    with pytest.raises(wizard.UsageError, match=r"^from_node= and from_step= rerun a previous run: .* as answers=$"):
        wizard.run_playbook("negative-warps-per-sm", wizard.RunRequest(answers={"have": "trace"}, from_node="inspect"))
    with pytest.raises(wizard.AnswersError) as missing:
        wizard.run_playbook("negative-warps-per-sm", {"have": "trace"})
    assert missing.value.problems[0].endswith("answer them with answers= or sets=, or use defaults=")
    assert "--" not in missing.value.problems[0]
    cli = run_cli("run", "negative-warps-per-sm", "--set", "have")
    assert cli.status != 0 and "--set 'have': expected QUESTION=VALUE" in cli.stderr
