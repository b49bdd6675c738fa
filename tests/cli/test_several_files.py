"""Several files in one ``trace inspect``, and its stdout: a health line said once for several traces sums
their counts and names each trace's (one trace's "6 launches" stood for three traces' 197), and a trace whose rank
is unknown or declared by another trace too is named by its file ("kernels-overlap [rank 0]" was one of two rank-0
traces); ``--json --markdown -`` is a usage error, not two documents on stdout."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TRACES, RunCli, needs_shared, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

THREE = ("a100-alexnet.json.gz", "b200-eager.json.gz", "h100-bert-small.json.gz")  # E: 6, 182 and 9 launches


def _line(stdout: str, check: str) -> str:
    """The health summary's line of ``check``, unwrapped."""
    flat = " ".join(stdout.split())
    start = flat.index(f" {check} [")
    ends = [flat.find(m, start + 1) for m in (" i info ", " ! warning ", " more checks ok")]
    return flat[start : min(e for e in ends if e > 0)]


@needs_shared
def test_a_combined_line_sums_the_counts_and_names_each_file(run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", "--quiet", *(str(TRACES / name) for name in THREE))
    assert result.returncode == 0, result.stderr
    line = _line(result.stdout, "impossible-metrics")
    assert "[3 traces]" in line and "197 in all" in line
    assert "a100-alexnet.json.gz: 6, b200-eager.json.gz: 182, h100-bert-small.json.gz: 9" in line
    # two traces say rank 0: each is named by its file, never "rank 0"
    assert "rank 0" not in result.stdout.split("\n\n")[0]
    assert "kernels-overlap [b200-eager.json.gz]" in " ".join(result.stdout.split())


def _ranked(path: Path, rank: int, gpu: str) -> Path:
    path.parent.mkdir(exist_ok=True)
    b = TraceBuilder(gpu=gpu)
    b.set_metadata("distributedInfo", {"rank": rank})
    b.add(KernelSpec("k", (1, 1, 1), (32, 1, 1)))
    return b.write(path)


def test_traces_of_one_rank_are_named_by_file_and_a_rank_of_its_own_by_rank(tmp_path: Path, run_cli: RunCli) -> None:
    """Two files named t.json that both say rank 0 are each named by their path; a third, rank 5, stays rank 5."""
    one, two = _ranked(tmp_path / "a" / "t.json", 0, "A100"), _ranked(tmp_path / "b" / "t.json", 0, "H100")
    five = _ranked(tmp_path / "five.json", 5, "H100")
    result = run_cli("trace", "inspect", "--verbose", str(one), str(two), str(five))
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stdout.split())
    assert "[rank 0]" not in flat
    assert f"impossible-metrics [{one}]" in flat and f"impossible-metrics [{two}]" in flat
    assert "impossible-metrics [rank 5]" in flat


def test_json_and_markdown_both_on_stdout_is_a_usage_error(
    tmp_path: Path, run_cli: RunCli, run_process: RunCli
) -> None:
    """``--json --markdown -`` printed the JSON then the Markdown on stdout, exit 0 (json.load: "Extra data"):
    stdout is one document, so two are a usage error naming both options; stdout holds the error document."""
    trace = _ranked(tmp_path / "t.json", 0, "H100")
    for run in (run_cli, run_process):  # in-process, and the installed console script
        result = run("trace", "inspect", str(trace), "--json", "--markdown", "-")
        assert result.returncode == 2
        assert "--json" in result.stderr and "--markdown -" in result.stderr
        error = strict_json(result.stdout)
        assert (error["schema"], error["exit"]) == ("warpwizard.error/1", "usage")
    # each alone still writes its document
    assert strict_json(run_cli("trace", "inspect", str(trace), "--json").stdout)["schema"].startswith("warpwizard.")
    assert run_cli("trace", "inspect", str(trace), "--markdown", "-").stdout.startswith("# warpwizard trace inspection")
