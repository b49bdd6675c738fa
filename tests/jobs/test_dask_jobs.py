"""A job judged from per-rank summaries (wizard/jobs/, issue 51): the three engines (in process, local workers, a
real dask.distributed LocalCluster on 127.0.0.1) on a rank directory the builder writes with planted problems (a
straggler, a missing rank, a cut rank, an unreadable file) give the verdicts the full local inspection gives;
summaries are small, versioned, reused for the same file and remade for a changed one or another version."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, RunCli, strict_json
from wizard.inspect_options import InspectOptions
from wizard.jobs.reduce import WORST, JobInspection, reduce
from wizard.jobs.run import inspect_job
from wizard.jobs.step import Outcome
from wizard.jobs.summary import MAX_BYTES, RankSummary, decode, file_name, local_source
from wizard.schemas import RANK_SUMMARY
from wizard.testing.ranks import RankPlan, write_rank_directory
from wizard.trace.inspection.run import inspect_paths

HAVE_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask[distributed] is not installed (pip install '.[dask]')")

PLAN = RankPlan(world_size=6, straggler=2, missing=(4,), cut=(3,), unreadable=(5,))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("job") / "ranks"
    write_rank_directory(directory, PLAN)
    return directory


@pytest.fixture(scope="module")
def readable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same job without the unreadable file: what today's whole-directory inspection can read."""
    directory = tmp_path_factory.mktemp("job") / "ranks"
    write_rank_directory(directory, PLAN)
    (directory / "rank5.json").unlink()
    return directory


@pytest.fixture(scope="module")
def local_run(readable: Path) -> Any:
    return inspect_paths([str(readable)], InspectOptions(jobs=1))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A real LocalCluster: two worker processes of one thread each (this machine has two cores), on 127.0.0.1."""
    if not HAVE_DASK:
        pytest.skip("dask[distributed] is not installed")
    from distributed import LocalCluster

    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=50
    ) as made:
        yield made


def _job_verdicts(checks: Any) -> list[tuple[str, str, int, str]]:
    return [(c.check, c.status, c.count, c.summary) for c in checks]


def _rank_verdicts(job: JobInspection) -> dict[str, list[tuple[str, str, int]]]:
    return {os.path.basename(s.path): [(v.check, v.status, v.count) for v in s.health] for s in job.summaries}


def _same_as_local(job: JobInspection, local: Any) -> None:
    """The job's checks and every readable rank's verdicts as the full inspection of the readable ranks says;
    the unreadable file one failure."""
    assert _job_verdicts(job.job_health) == _job_verdicts(local.job_health)
    expected = {
        os.path.basename(r.path): [(c.check, c.status, c.count) for c in r.health_result.checks] for r in local.reports
    }
    assert _rank_verdicts(job) == expected
    assert [(os.path.basename(f.path), f.kind) for f in job.failures] == [("rank5.json", "unreadable")]


def test_the_planted_problems_are_what_the_job_checks_find(ranks: Path) -> None:
    job = inspect_job([str(ranks)], InspectOptions(engine="none"))
    complete, skew = job.job_health
    # counted here from the plan, independently: the world's ranks minus those with a readable trace
    readable = set(range(PLAN.world_size)) - set(PLAN.missing) - set(PLAN.unreadable)
    assert complete.details["missing"] == sorted(set(range(PLAN.world_size)) - readable) == [4, 5]
    assert skew.status == "warning"
    assert skew.details["left_out"] == {"3": "its trace is cut short"}
    assert max(skew.details["last_by_rank"], key=skew.details["last_by_rank"].__getitem__) == str(PLAN.straggler)
    assert [r.label for r in job.worst() if r.problems] == ["rank 3"]  # the cut rank: trace-incomplete
    assert job.health_status == "error"


@pytest.mark.parametrize("engine", ["none", "local"])
def test_in_process_and_local_workers_give_the_local_runs_verdicts(ranks: Path, local_run: Any, engine: str) -> None:
    job = inspect_job([str(ranks)], InspectOptions(engine=engine, jobs=2))  # type: ignore[arg-type]
    _same_as_local(job, local_run)


@needs_dask
def test_a_dask_local_cluster_gives_the_local_runs_verdicts(ranks: Path, local_run: Any, cluster: Any) -> None:
    job = inspect_job([str(ranks)], InspectOptions(engine="dask", scheduler=cluster.scheduler_address))
    _same_as_local(job, local_run)
    assert job.engine == "dask"


@needs_dask
def test_the_scheduler_comes_from_dasks_own_configuration(
    ranks: Path, local_run: Any, cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask

    from wizard.jobs.engines import scheduler_of

    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    dask.config.refresh()
    try:
        assert scheduler_of(InspectOptions(engine="dask")) == {"address": cluster.scheduler_address}
        assert scheduler_of(InspectOptions(scheduler="/s/scheduler.json")) == {"scheduler_file": "/s/scheduler.json"}
        _same_as_local(inspect_job([str(ranks)], InspectOptions(engine="dask")), local_run)
    finally:
        monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
        dask.config.refresh()


class _KillOnFirst:
    """A progress hook that kills one worker process when the first rank is done: the rest are mid-run."""

    def __init__(self, pid: int) -> None:
        self.pid, self.killed = pid, False

    def task(self, label: str, **kw: Any) -> _KillOnFirst:
        return self

    def update(self, completed: float | None = None, **kw: Any) -> None:
        if not self.killed:
            os.kill(self.pid, signal.SIGKILL)
            self.killed = True

    def close(self) -> None:
        pass


@needs_dask
def test_a_worker_killed_mid_run_costs_only_its_retry(tmp_path: Path, cluster: Any) -> None:
    from distributed import Client

    directory = tmp_path / "ranks"
    plan = RankPlan(world_size=8, steps=20, kernels=200, straggler=1)
    write_rank_directory(directory, plan)
    expected = inspect_paths([str(directory)], InspectOptions(jobs=1))
    with Client(cluster.scheduler_address, set_as_default=False) as client:  # type: ignore[no-untyped-call]
        pid = next(iter(client.run(os.getpid).values()))
    hook = _KillOnFirst(pid)
    job = inspect_job(
        [str(directory)], InspectOptions(engine="dask", scheduler=cluster.scheduler_address), progress=hook
    )
    assert hook.killed
    assert job.failures == []
    assert _job_verdicts(job.job_health) == _job_verdicts(expected.job_health)
    assert len(job.summaries) == plan.world_size


def test_summaries_are_small_versioned_and_reused_for_the_same_file(tmp_path: Path, ranks: Path) -> None:
    from wizard.trace.read.source import STATS

    store = tmp_path / "summaries"
    first = inspect_job([str(ranks)], InspectOptions(engine="none", summaries=str(store)))
    written = sorted(store.iterdir())
    assert len(written) == len(first.summaries) == 4  # the unreadable rank has none
    for path in written:
        assert path.stat().st_size < 8 * 1024  # KB, not MB
        assert json.loads(path.read_text())["schema"] == RANK_SUMMARY
    before = sum(STATS.opened.values())
    again = inspect_job([str(ranks)], InspectOptions(engine="none", summaries=str(store)))
    assert again.reused == 4
    assert sum(STATS.opened.values()) - before == 1  # only the unreadable file was opened again
    assert _job_verdicts(again.job_health) == _job_verdicts(first.job_health)


def test_a_changed_file_or_another_version_is_summarised_again(tmp_path: Path) -> None:
    directory, store = tmp_path / "ranks", tmp_path / "summaries"
    write_rank_directory(directory, RankPlan(world_size=3))
    inspect_job([str(directory)], InspectOptions(engine="none", summaries=str(store)))
    changed = directory / "rank1.json"
    os.utime(changed, ns=(1, 1))  # another mtime: another file, as far as its identity says
    older = store / file_name(local_source(str(directory / "rank2.json")))
    doc = json.loads(older.read_text())
    older.write_text(json.dumps({**doc, "schema": "warpwizard.rank-summary/0"}))
    job = inspect_job([str(directory)], InspectOptions(engine="none", summaries=str(store)))
    assert job.reused == 1  # rank0 only
    assert json.loads(older.read_text())["schema"] == RANK_SUMMARY  # remade
    assert json.loads((store / file_name(local_source(str(changed)))).read_text())["source"]["mtime"] == "1"


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: b"\x00not json",
        lambda doc: json.dumps({**doc, "steps": "many"}).encode(),
        lambda doc: json.dumps({**doc, "health": [{"check": "x"}]}).encode(),
        lambda doc: json.dumps({**doc, "steps": [1.0] * 1001}).encode(),
        lambda doc: json.dumps({**doc, "extra": 1}).encode(),
        lambda doc: b" " * (MAX_BYTES + 1),
    ],
    ids=["not-json", "wrong-type", "missing-fields", "past-its-bound", "unknown-field", "too-big"],
)
def test_a_summary_read_back_is_untrusted_input(tmp_path: Path, damage: Any) -> None:
    directory, store = tmp_path / "ranks", tmp_path / "summaries"
    write_rank_directory(directory, RankPlan(world_size=2))
    inspect_job([str(directory)], InspectOptions(engine="none", summaries=str(store)))
    target = store / file_name(local_source(str(directory / "rank0.json")))
    good = json.loads(target.read_text())
    target.write_bytes(damage(good))
    assert decode(target.read_bytes()) is None
    job = inspect_job([str(directory)], InspectOptions(engine="none", summaries=str(store)))
    assert job.reused == 1  # rank1's; rank0's remade
    assert json.loads(target.read_text()) == {**good, "seconds": json.loads(target.read_text())["seconds"]}


def _synthetic(n: int, rng_seed: int = 7) -> list[Outcome]:
    import random

    rng = random.Random(rng_seed)
    template = {
        "schema": RANK_SUMMARY, "warpwizard": __import__("wizard").__version__, "checks": None,
        "place": {"world_size": n, "backend": "nccl", "groups": []}, "truncated": False, "truncation": None,
        "format": "kineto-json", "writer": "", "bytes_read": 1, "events": 1, "kernels": 1, "devices": [],
        "steps": [1.0], "seconds": 0.1,
    }  # fmt: skip
    out = []
    for rank in range(n):
        status = rng.choice(["ok", "ok", "ok", "info", "warning", "error"])
        doc = {
            **template, "rank": rank, "source": {"path": f"/r/rank{rank:05d}.json", "size": 1, "mtime": "1",
                                                 "etag": None},
            "place": {**template["place"], "rank": rank},
            "collectives": {"nccl:all_reduce": [1000.0 * i + rng.random() * 50 for i in range(20)]},
            "health": [{"check": "trace-incomplete", "status": status, "count": rng.randrange(5), "summary": "s"},
                       {"check": "clock-skew", "status": "ok", "count": 0, "summary": "s"}],
            "health_status": status,
        }  # fmt: skip
        summary = decode(json.dumps(doc).encode())
        assert summary is not None
        out.append(Outcome(summary))
    return out


def test_the_job_table_is_worst_first_and_bounded_at_ten_thousand_ranks() -> None:
    from wizard.trace.health.spec import RANK

    outcomes = _synthetic(10_000)
    job = reduce(outcomes, InspectOptions())
    rows = job.worst()
    assert len(rows) == WORST
    assert all(r.status == "error" for r in rows)  # a tenth-odd of the ranks is at error: the first rows are
    # the fold counted a second way: every summary's statuses by check
    counted: dict[str, Counter[str]] = {}
    for o in outcomes:
        assert o.summary is not None
        for v in o.summary.health:
            counted.setdefault(v.check, Counter())[v.status] += 1
    assert job.folded == {k: dict(c) for k, c in counted.items()}
    assert [c.check for c in job.job_health] == ["ranks-complete", "rank-skew"]
    assert job.job_health[0].status == "ok"  # every rank of a world of 10,000, once
    doc = job.to_dict()
    assert len(doc["worst_ranks"]) == WORST and doc["ranks"] == 10_000
    assert len(json.dumps(doc)) < 64 * 1024  # readable at 10,000 ranks: aggregates and outliers
    from wizard.report.job import job_html, job_markdown

    markdown, page = job_markdown(job), job_html(job)
    assert len(markdown) < 16 * 1024  # no row per rank: the worst ranks, no more
    assert sum(bool(re.match(r"\| rank \d", line)) for line in markdown.splitlines()) == WORST
    assert markdown.splitlines()[2].startswith("10000 ranks, 10000 summarised (0 reused), 0 failed")
    assert page.count("<tr>") == WORST + len(job.folded) + len(job.job_health) + 3  # 3 header rows
    assert max(RANK[r.status] for r in rows) == RANK["error"]


def test_trace_inspect_engine_through_the_command_line(run_cli: RunCli, ranks: Path, tmp_path: Path) -> None:
    store = tmp_path / "summaries"
    result = run_cli("trace", "inspect", "--engine", "local", "--jobs", "2", "--summaries", str(store), "--json",
                     str(ranks))  # fmt: skip
    assert result.returncode == 1, result.stderr  # a failed rank and the job's warnings: findings
    doc = strict_json(result.stdout)
    assert doc["schema"] == "warpwizard.job-report/1"
    assert (doc["ranks"], doc["summarised"], doc["failed_count"]) == (5, 4, 1)
    complete = next(c for c in doc["health"] if c["check"] == "ranks-complete")
    assert complete["missing"] == [4, 5]
    text = run_cli("trace", "inspect", "--summaries", str(store), "--fail-on", "never", str(ranks))
    assert text.returncode == 0
    assert "4 summarised (4 reused), 1 failed" in text.stdout
    assert "unreadable: " in text.stdout and "rank5.json" in text.stdout


def test_an_engine_asked_for_without_its_extra_is_exit_9(
    run_cli: RunCli, ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError, as when not installed
    result = run_cli("trace", "inspect", "--engine", "dask", str(ranks))
    assert result.returncode == 9
    assert "dask.distributed" in result.stderr and "pip install" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_imports_neither_dask_nor_fsspec() -> None:
    code = (
        "import sys\nfrom wizard.cli.app import main\nfrom wizard.system import System\n"
        "for argv in (['--help'], ['trace', 'inspect', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'fsspec', 's3fs',"
        " 'msgspec', 'wizard') and (m.split('.')[0] != 'wizard' or m.startswith('wizard.jobs')))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_rank_summary_round_trips_through_its_schema(ranks: Path) -> None:
    from wizard.jobs.summary import encode

    job = inspect_job([str(ranks / "rank0.json"), str(ranks / "rank1.json")], InspectOptions(engine="none"))
    for summary in job.summaries:
        again = decode(encode(summary).encode())
        assert isinstance(again, RankSummary) and again == summary


class _Recorded:
    """A progress hook that keeps every task and update."""

    def __init__(self) -> None:
        self.tasks: list[tuple[str, float | None, str]] = []
        self.updates: list[tuple[float | None, str | None]] = []

    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: str = "") -> _Recorded:
        self.tasks.append((label, total, unit))
        return self

    def update(self, completed: float | None = None, *, total: float | None = None, doing: str | None = None) -> None:
        self.updates.append((completed, doing))

    def close(self) -> None:
        pass


def test_progress_says_ranks_done_of_all_and_the_failures_so_far(ranks: Path) -> None:
    hook = _Recorded()
    inspect_job([str(ranks)], InspectOptions(engine="none"), progress=hook)
    assert ("ranks", 5, "files") in hook.tasks
    ours = [u for u in hook.updates if u[1] is None or (u[1] or "").startswith("summarising")]
    assert [c for c, _ in ours][-5:] == [1, 2, 3, 4, 5]
    # rank5.json (the unreadable one) is the last file: the failures so far appear with it
    assert ours[-1] == (5, "summarising, 1 failed")
    assert all(doing is None for _, doing in ours[-5:-1])


@needs_dask
def test_a_scheduler_that_cannot_be_reached_is_one_line(run_cli: RunCli, ranks: Path) -> None:
    import socket

    import dask

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    # distributed imported before the set: a section dask.config.set inserts is deleted whole when the block ends, so
    # a first import inside it lost all of distributed's defaults for the rest of this process (LocalCluster: KeyError
    # 'distributed' in a later test of the same xdist worker)
    import distributed  # noqa: F401

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        result = run_cli("trace", "inspect", "--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}", str(ranks))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "--engine dask: cannot reach the scheduler" in line


def test_a_job_run_writes_its_report_files(run_cli: RunCli, ranks: Path, tmp_path: Path) -> None:
    """--markdown FILE, --markdown - and --report .html/.json: the same job, aggregates and outliers."""
    md, page, doc = tmp_path / "job.md", tmp_path / "job.html", tmp_path / "job.json"
    result = run_cli("trace", "inspect", "--engine", "none", "--markdown", str(md), "--report", str(page),
                     "--fail-on", "never", str(ranks))  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# warpwizard job report\n") and "5 ranks, 4 summarised (0 reused), 1 failed" in text
    assert "| warning | `ranks-complete` |" in text and "missing" in text
    assert "## Failed ranks (1; the job was judged without them)" in text and "rank5.json" in text
    html = page.read_text(encoding="utf-8")
    assert "<h2>Failed ranks (1)</h2>" in html and "<script>" in html and "rank5.json" in html
    stdout = run_cli("trace", "inspect", "--engine", "none", "--markdown", "-", "--fail-on", "never", str(ranks))
    assert stdout.stdout == text
    written = run_cli("trace", "inspect", "--engine", "none", "--report", str(doc), "--fail-on", "never", str(ranks))
    assert written.returncode == 0
    assert strict_json(doc.read_text(encoding="utf-8"))["schema"] == "warpwizard.job-report/1"
    again = run_cli("trace", "inspect", "--engine", "none", "--markdown", str(md), str(ranks))
    assert again.returncode == 7 and "already exists" in again.stderr  # never over a user's file without --force


def test_a_jobs_page_needs_no_plotting_library(
    run_cli: RunCli, ranks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's page is static tables (no picture per rank): it is written where plotly is not installed."""
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # import fails as if not installed
    page = tmp_path / "job.html"
    result = run_cli("trace", "inspect", "--engine", "none", "--report", str(page), "--fail-on", "never", str(ranks))
    assert result.returncode == 0, result.stderr
    assert "<h2>Checks over the ranks</h2>" in page.read_text(encoding="utf-8")
