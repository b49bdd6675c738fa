"""`warpwizard probe` and the cluster recipe of docs/clusters.md: one report per process, then compare."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, RunCli, cli_command, cli_env, needs_torch, strict_json
from wizard.cluster import Rank, device_for_rank, launcher_place, launcher_rank, output_name
from wizard.errors import UsageError

TRACES = EXAMPLES / "traces"


def test_probe_prints_a_report_that_compare_reads(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("probe", "trace.inspect", "--param", f"paths={TRACES / 'grid-overflow.json'}", "--json")
    assert result.returncode == 1  # the probe failed: it found wrong values
    report = strict_json(result.stdout)
    assert report["schema"] == "warpwizard.transcript/1" and report["playbook"]["id"] == "probe:trace.inspect"
    (entry,) = report["entries"]
    assert (entry["node"], entry["status"], entry["facts"]["mechanisms"]) == ("trace.inspect", "fail", ["A", "E"])
    assert report["host"]["hostname"] == platform.node() and "rank" not in report["host"]


def test_probe_words_and_errors(run_cli: RunCli) -> None:
    healthy = run_cli("probe", "trace.inspect", "--param", f"paths={TRACES / 'healthy-small.json'}")
    assert healthy.returncode == 0
    assert healthy.stdout.startswith("trace.inspect: PASS  the 1 kernel agrees with the recomputation\n")
    cases = [
        (["probe", "nope"], "warpwizard: error: unknown probe 'nope'; registered: command.run, cuda.launch_blocking"),
        (["probe", "trace.inspect"], "warpwizard: error: probe trace.inspect: missing required parameter: paths"),
        (
            ["probe", "trace.inspect", "--param", "bogus=1"],
            "warpwizard: error: probe trace.inspect has no parameter 'bogus'; its parameters: paths, jobs",
        ),
        (
            ["probe", "trace.inspect", "--param", "paths=x", "--param", "jobs=many"],
            "warpwizard: error: --param jobs='many': probe trace.inspect expects a int",
        ),
        (["probe", "trace.inspect", "--param", "paths"], "warpwizard: error: --param 'paths': expected KEY=VALUE"),
    ]
    for args, message in cases:
        result = run_cli(*args)
        assert (result.returncode, result.stderr.splitlines()[0][: len(message)]) == (2, message)


def test_command_run_keeps_its_opt_in_under_probe(run_cli: RunCli) -> None:
    refused = strict_json(run_cli("probe", "command.run", "--param", "argv=true", "--json").stdout)
    assert refused["entries"][0]["status"] == "skip" and "--allow-commands" in refused["entries"][0]["summary"]
    allowed = run_cli("probe", "command.run", "--param", "argv=true", "--json", "--allow-commands")
    assert strict_json(allowed.stdout)["entries"][0]["status"] == "pass"


def test_ranks_from_each_launcher() -> None:
    assert launcher_rank({"RANK": "3", "LOCAL_RANK": "1"}, hostname="n1") == Rank(3, 1, "n1")
    assert launcher_rank({"SLURM_PROCID": "9", "SLURM_LOCALID": "2"}, hostname="n/2") == Rank(9, 2, "n_2")
    assert launcher_rank({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}, "h") == Rank(5, 0, "h")
    for bad in ("x; rm -rf /", "²", "①", "٣", "1" * 12):  # only ASCII digits: '٣' is no silent 3, '²' no exit 70
        with pytest.raises(UsageError, match=r"^RANK=.*: expected a rank, a number of ASCII digits"):
            launcher_rank({"RANK": bad}, hostname="h")
    assert launcher_rank({}, hostname="..") == Rank(0, 0, "host")  # {host} never leaves the directory
    assert launcher_rank({}, hostname="../../etc") == Rank(0, 0, "_.._etc")
    assert launcher_place({}) == {} and launcher_place({"SLURM_PROCID": "4"}) == {"rank": 4, "local_rank": 0}
    assert output_name("r/{host}-{rank}-{local_rank}-{other}.json", Rank(3, 1, "n1")) == "r/n1-3-1-{other}.json"


def test_the_gpu_of_a_local_rank() -> None:
    assert device_for_rank({}, 3) == "3"
    assert device_for_rank({"CUDA_VISIBLE_DEVICES": "4,5,6,7"}, 1) == "5"  # the launcher narrowed the list
    with pytest.raises(UsageError, match="local rank 1, but CUDA_VISIBLE_DEVICES lists 1 device"):
        device_for_rank({"CUDA_VISIBLE_DEVICES": "GPU-abc"}, 1)


def test_several_processes_standing_in_for_nodes_then_compare(tmp_path: Path) -> None:
    """The recipe's shape: N processes started at once, as a launcher would (each with its RANK and
    LOCAL_RANK), each writes its own report; `compare` merges them."""
    traces = ["grid-overflow.json", "healthy-small.json", "grid-overflow.json"]
    out = tmp_path / "reports"
    procs = []
    for rank, trace in enumerate(traces):
        env = cli_env(RANK=str(rank), LOCAL_RANK=str(rank), WARPWIZARD_REPORT_DIR=str(tmp_path / f"work{rank}"))
        argv = [*cli_command(), "probe", "trace.inspect", "--param", f"paths={TRACES / trace}"]
        argv += ["--output", str(out / "{host}-{rank}.json"), "--device-from-rank"]
        procs.append(subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    out.mkdir()
    codes = [p.wait(timeout=120) for p in procs]
    assert codes == [1, 0, 1]
    host = launcher_rank({}).host
    assert sorted(p.name for p in out.iterdir()) == [f"{host}-{r}.json" for r in range(3)]
    first = strict_json((out / f"{host}-0.json").read_text())
    assert (first["host"]["rank"], first["host"]["local_rank"]) == (0, 0)
    merged = subprocess.run(
        [*cli_command(), "compare", *sorted(str(p) for p in out.iterdir()), "--json"],
        capture_output=True, text=True, env=cli_env(), cwd=REPO, timeout=60,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    summary = strict_json(merged.stdout)
    name = platform.node()
    keys = [f"{name} rank {r} (NVIDIA H100 80GB HBM3)" for r in range(3)]  # no NVML here: the traces' GPU
    assert summary["by_mechanism"] == {"A": [keys[0], keys[2]], "E": [keys[0], keys[2]]}
    assert [m["impossible"] for m in summary["machines"]] == [True, False, True]


def test_a_cpu_only_rerun_is_not_counted_clean(tmp_path: Path) -> None:
    """profiler.reprofile without CUDA ran no kernel: compare must not call that machine clean."""
    from wizard.compare import load_report

    report = tmp_path / "cpu.json"
    entry = {"node": "reprofile", "facts": {"reproduced": False, "mechanisms": [], "cuda_available": False}}
    report.write_text(
        '{"schema": "warpwizard.transcript/1", "host": {"hostname": "n"}, "entries": [' + _json(entry) + "]}"
    )
    assert load_report(str(report)).impossible is None


def _json(value: object) -> str:
    import json

    return json.dumps(value)


@pytest.mark.skipif(os.name != "posix", reason="a POSIX shell runs the recipe")
def test_the_docs_recipe_names_real_options() -> None:
    """Every option docs/clusters.md passes to warpwizard exists in --help."""
    doc = (REPO / "docs" / "clusters.md").read_text()
    probe_help = subprocess.run([*cli_command(), "probe", "--help"], capture_output=True, text=True).stdout
    for option in ("--param", "--output", "--device-from-rank", "--json"):
        assert option in doc and option in probe_help


def test_probe_output_never_replaces_an_input_or_an_existing_report(run_cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes((TRACES / "grid-overflow.json").read_bytes())
    onto_input = run_cli("probe", "trace.inspect", "--param", f"paths={trace}", "--output", str(trace), "--force")
    assert onto_input.returncode == 7 and "is an input of this run" in onto_input.stderr
    report = tmp_path / "r.json"
    report.write_text("mine\n")
    exists = run_cli("probe", "trace.inspect", "--param", f"paths={trace}", "--output", str(report))
    assert exists.returncode == 7 and report.read_text() == "mine\n"
    replaced = run_cli("probe", "trace.inspect", "--param", f"paths={trace}", "--output", str(report), "--force")
    assert replaced.returncode == 1 and strict_json(report.read_text())["entries"][0]["status"] == "fail"


def _docs_block(title: str) -> str:
    """The code block under a heading of docs/clusters.md, with its line continuations joined."""
    text = (REPO / "docs" / "clusters.md").read_text()
    section = text[text.index(f"## {title}") :]
    block = section[section.index("```\n") + 4 :]
    return block[: block.index("```")].replace("\\\n", " ")


@needs_torch
@pytest.mark.slow
def test_the_torchrun_recipe_verbatim_on_one_machine_with_two_processes(tmp_path: Path) -> None:
    """docs/clusters.md's one-machine torchrun command word for word (it once gave only the two-node
    form, which on one machine waits for a second node and ends in a C++ stack trace); only the
    programs' paths are this environment's. No reports/ exists beforehand."""
    import shlex

    words = shlex.split(_docs_block("torchrun"))
    assert words[:7] == ["torchrun", "--standalone", "--nnodes", "1", "--nproc-per-node", "2", "--no-python"]
    recipe = words[words.index("--no-python") + 1 :]
    assert recipe[:3] == ["warpwizard", "probe", "op.isolate"] and recipe[-2:] == [
        "--output",
        "reports/{host}-{rank}.json",
    ]
    torchrun = Path(sys.executable).with_name("torchrun")
    warpwizard = cli_command()
    argv = [str(torchrun), *words[1:7], *warpwizard, *recipe[1:]]
    env = cli_env()
    env.pop("WARPWIZARD_REPORT_DIR", None)  # each rank its own workspace, as a user's would be
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    host = launcher_rank({}).host
    reports = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert reports == [f"{host}-0.json", f"{host}-1.json"]
    workspaces = {
        strict_json((tmp_path / "reports" / r).read_text())["entries"][0]["facts"]["repro_script"] for r in reports
    }
    assert len(workspaces) == 2  # the ranks never share a repro.py
    merged = subprocess.run(
        [*warpwizard, "compare", *(f"reports/{r}" for r in reports), "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert merged.returncode == 0, merged.stderr
    machines = strict_json(merged.stdout)["machines"]
    assert sorted(m["host"] for m in machines) == [f"{host} rank 0", f"{host} rank 1"]


def test_every_output_path_takes_the_place_placeholders(tmp_path: Path) -> None:
    from tests.conftest import run_inprocess

    trace = EXAMPLES / "traces" / "grid-overflow.json"
    env = {"RANK": "3", "LOCAL_RANK": "1"}
    result = run_inprocess(
        "trace", "inspect", str(trace), "--markdown", str(tmp_path / "r{rank}-{local_rank}.md"), environ=env
    )
    assert result.status == 1, result.stderr
    fixed = run_inprocess("trace", "fix", str(trace), str(tmp_path / "fixed-{rank}.json"), environ=env)
    assert fixed.status == 0, fixed.stderr
    probe = run_inprocess(
        "probe", "trace.inspect", "--param", f"paths={trace}", "--report-dir", str(tmp_path / "wr-{rank}"),
        "--output", str(tmp_path / "deep" / "er" / "{rank}.json"), environ=env,
    )  # fmt: skip
    assert probe.status == 1, probe.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep", "fixed-3.json", "r3-1.md", "wr-3"]
    assert (tmp_path / "deep" / "er" / "3.json").is_file()


@pytest.mark.parametrize(
    ("launcher", "variables"),
    [
        ("srun", [{"SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, {"SLURM_PROCID": "1", "SLURM_LOCALID": "1"}]),
        (
            "mpirun",
            [
                {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
                {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
            ],
        ),
    ],
)
def test_srun_and_mpirun_recipes_with_stand_ins(tmp_path: Path, launcher: str, variables: list[dict[str, str]]) -> None:
    """The recipes' shape, each process as the launcher would start it (its variables set), from a
    directory where reports/ does not exist yet: one report per rank, one workspace each."""
    from tests.conftest import run_inprocess

    trace = EXAMPLES / "traces" / "grid-overflow.json"
    for env in variables:
        result = run_inprocess(
            "probe", "trace.inspect", "--param", f"paths={trace}", "--output", "reports/{host}-{rank}.json",
            environ={**env, "WARPWIZARD_REPORT_DIR": ""}, cwd=tmp_path,
        )  # fmt: skip
        assert result.status == 1, result.stderr
    host = launcher_rank({}).host
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [f"{host}-0.json", f"{host}-1.json"]
    merged = run_inprocess("compare", *(str(p) for p in sorted((tmp_path / "reports").iterdir())), "--json")
    assert merged.json["same_work"] is True
    assert sorted(m["host"] for m in merged.json["machines"]) == [f"{host} rank 0", f"{host} rank 1"]


def test_the_several_node_torchrun_form_says_what_it_needs() -> None:
    text = (REPO / "docs" / "clusters.md").read_text()
    section = text[text.index("## torchrun") : text.index("## Open MPI")]
    several = section[section.index("On several nodes") :]
    assert "--rdzv-endpoint head:29500" in several
    for need in ("start the same command on every node", "`head` is that node's host name", "waits for the other"):
        assert need in " ".join(several.split()), need
