"""Issue 44 (the first hour, round 3): words that misled, checked through the real entry point."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_inprocess
from wizard.testing.traces import KernelSpec, TraceBuilder


def _e_trace(tmp_path: Path) -> Path:
    """Mechanism E on an H100: 168 registers and 226 KB of shared memory, so Kineto's calculator, given the
    default 48 KB per block, prints occupancy 0; its blocks per SM (128 blocks / 132 SMs) and warps per SM are
    right, printed as float32 to six decimals (0.969696999, where the truth is 0.96969696...)."""
    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("e_kernel", (8, 16, 1), (384, 1, 1), 168, 231424))
    return builder.write(tmp_path / "e.json")


def test_a_right_value_is_said_right_not_as_a_change_over_its_sixth_decimal(tmp_path: Path) -> None:
    """Issue 44 item 11: E's rows read "blocks/SM 0.969697 → 0.969697", a disagreement where the trace is right."""
    trace = _e_trace(tmp_path)
    shown = run_inprocess("trace", "inspect", str(trace), environ={"COLUMNS": "140"})
    table = [line for line in shown.stdout.splitlines() if line.startswith("│E")]
    assert len(table) == 1
    assert "occupancy % 0 → 18.1818" in table[0]  # 128 * 384 threads / 132 SMs / 2048 threads per SM, in %
    assert "blocks/SM" not in shown.stdout and "warps/SM" not in shown.stdout
    report = tmp_path / "e.md"
    assert run_inprocess("trace", "inspect", str(trace), "--report", str(report)).status in (0, 1)
    row = next(line for line in report.read_text().splitlines() if line.startswith("| E |"))
    assert "| blocks per SM right; warps per SM right; est. achieved occupancy % 18.1818 |" in row

    from wizard.report.view import value_cells

    truth: dict[str, float | None] = {
        "blocks per SM": 128 / 132,
        "warps per SM": 128 * 12 / 132,
        "est. achieved occupancy %": 18.181818,
    }
    cells = value_cells(
        {"blocks per SM": 0.969696999, "warps per SM": 11.636364, "est. achieved occupancy %": 0.0}, truth
    )
    assert [c.said() for c in cells] == ["0.969697 (right)", "11.6364 (right)", "0 → 18.1818"]


def test_the_glossary_has_the_words_a_newcomer_asked_about() -> None:
    """Issue 44 item 10: PDL (kernels-hidden's prompt) and python_function (trace-size's evidence) were not
    defined by --teach; each is found in the text that uses it."""
    from wizard.playbook.glossary import Glossary

    said = "Are the kernels launched with programmatic stream serialization (PDL)? most events are python_function"
    assert {"PDL", "python_function"} <= {t.word for t in Glossary().new_words(said)}
    mechanism = next(t for t in Glossary().new_words("mechanism E") if t.word == "mechanism")
    assert "E occupancy judged with the default 48 KB shared-memory limit" in mechanism.definition


def test_the_examples_list_says_what_its_columns_are() -> None:
    """Issue 44 item 10: `warpwizard examples` printed two columns with no header."""
    import yaml

    from tests.conftest import EXAMPLES

    listed = run_inprocess("examples", environ={"COLUMNS": "200"})
    assert listed.status == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:4] == ["EXAMPLE", "DIAGNOSIS", "IT", "REACHES"]
    manifest = yaml.safe_load((EXAMPLES / "manifest.yaml").read_text())["examples"]
    rows = [line.split()[:2] for line in lines[1 : 1 + len(manifest)]]
    assert rows == [[e["name"], e["diagnosis"]] for e in manifest]


def test_the_markdown_of_eight_alike_ranks_says_each_thing_once_and_folds_what_is_ok(tmp_path: Path) -> None:
    """Issue 44 item 5: `--markdown` for 8 ranks was 36.7 KB: 88 mostly-ok health rows (one per rank and check),
    8 full key_averages() tables and 8 findings tables, nothing folded."""
    from tests.helpers import eight_ranks
    from wizard.trace.health.checks import CHECKS

    ranks = eight_ranks(tmp_path / "ranks")
    out = tmp_path / "r.md"
    assert run_inprocess("trace", "inspect", str(ranks), "--markdown", str(out)).status in (0, 1)
    text = out.read_text()
    trace_checks = [c.id for c in CHECKS if c.scope == "trace"]
    # one row per check: said for all 8 ranks at once, the ok ones inside <details>
    rows = [line for line in text.splitlines() if line.startswith("| all 8 ranks |")]
    assert sorted(line.split("`")[1] for line in rows) == sorted(trace_checks)
    folded = text[text.index("<details>") : text.index("</details>")]
    assert "| all 8 ranks | ok | `kernels-missing` |" in folded
    assert "| all 8 ranks | info | `impossible-metrics` |" not in folded  # info is shown, not folded
    assert text.count("## key_averages(), reported and counted once") == 1
    assert "The same table for 7 other files:" in text
    assert text.count("| E | `e_kernel_0` |") == 1  # rank 0's table; ranks 1-7 say they are the same
    assert text.count("The same as rank 0: the same kernels, values and notes.") == 7
    assert text.count("the default per-block limit Kineto passes") == 1
    assert "- **E**: the same for 2 other kernels of the table" in text
    assert len(text.encode()) < 8000
