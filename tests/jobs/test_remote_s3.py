"""Traces read where they live (issue 51): a real S3 API on 127.0.0.1 (moto's server, started and stopped here)
holds a job's rank traces; ``trace inspect s3://...`` (a prefix, a glob, one object) gives the verdicts the same
files give on disk; a missing object and a refused credential are each one line and exit 6; the secret key never
appears in what the command prints or writes; an object is read in ranged requests of a bounded size, never
fetched whole."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli, strict_json
from tests.helpers import inspect_json
from wizard.testing.ranks import RankPlan, write_rank_directory

HAVE_REMOTE = all(importlib.util.find_spec(m) is not None for m in ("fsspec", "s3fs", "moto", "boto3"))
pytestmark = pytest.mark.skipif(
    not HAVE_REMOTE, reason="the remote extra and moto[server] are not installed (pip install '.[test]')"
)

BUCKET = "warpwizard-traces"
KEY_ID = "AKIAWARPWIZARDTEST01"
SECRET = "wWiz/secret+NeverPrinted0123456789abcdefXYZ"  # a fake, asserted never to be shown
PLAN = RankPlan(world_size=5, straggler=1, missing=(3,), cut=(2,))


@pytest.fixture(scope="module")
def local_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("s3") / "ranks"
    write_rank_directory(directory, PLAN)
    return directory


@pytest.fixture(scope="module")
def s3(local_ranks: Path) -> Iterator[str]:
    """moto's server on 127.0.0.1 (a free port), the bucket filled with the rank traces; its endpoint."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines in the test output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        with pytest.MonkeyPatch.context() as mp:
            _credentials(mp, endpoint)
            import boto3

            client = boto3.client("s3")
            client.create_bucket(Bucket=BUCKET)
            for path in sorted(local_ranks.iterdir()):
                client.upload_file(str(path), BUCKET, f"run/{path.name}")
            client.put_object(Bucket=BUCKET, Key="run/notes.txt", Body=b"not a trace")
        yield endpoint
    finally:
        server.stop()


def _credentials(mp: pytest.MonkeyPatch, endpoint: str) -> None:
    """S3's own standard configuration, and nothing from this machine's ~/.aws."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    mp.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    mp.setenv("AWS_ENDPOINT_URL", endpoint)
    mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
    mp.setenv("AWS_CONFIG_FILE", os.devnull)
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


@pytest.fixture
def store(s3: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's environment pointing at the server; s3fs's cached filesystems forgotten (their credentials)."""
    import s3fs

    _credentials(monkeypatch, s3)
    s3fs.S3FileSystem.clear_instance_cache()
    return s3


def _verdicts(doc: dict[str, Any]) -> tuple[Any, Any]:
    """Each trace's checks by file name, and the job's checks: what must not depend on where the files lie."""
    per_trace = {
        os.path.basename(r["path"]): [(c["check"], c["status"], c["count"], c["summary"]) for c in r["health"]]
        for r in doc["reports"]
    }
    return per_trace, [(c["check"], c["status"], c["count"], c["summary"]) for c in doc["health"]]


@pytest.mark.parametrize("url", [f"s3://{BUCKET}/run", f"s3://{BUCKET}/run/", f"s3://{BUCKET}/run/rank*.json"])
def test_an_s3_rank_directory_gives_the_local_verdicts(
    store: str, local_ranks: Path, run_cli: RunCli, url: str
) -> None:
    local = run_cli("trace", "inspect", "--json", "--jobs", "1", str(local_ranks))
    remote = run_cli("trace", "inspect", "--json", "--jobs", "1", url)
    assert (remote.returncode, remote.stderr) == (local.returncode, local.stderr)
    doc = strict_json(remote.stdout)
    mine, theirs = _verdicts(doc), _verdicts(strict_json(local.stdout))
    for name in theirs[0]:
        assert mine[0][name] == theirs[0][name], name
    assert mine[1] == theirs[1]
    names = sorted(p.name for p in local_ranks.iterdir())
    assert [r["path"] for r in doc["reports"]] == [f"s3://{BUCKET}/run/{n}" for n in names]  # notes.txt left out
    complete = next(c for c in doc["health"] if c["check"] == "ranks-complete")
    assert complete["missing"] == list(PLAN.missing)


def test_summaries_of_objects_carry_their_etag_and_are_reused(
    store: str, run_cli: RunCli, tmp_path: Path, local_ranks: Path
) -> None:
    summaries = tmp_path / "summaries"
    args = ("trace", "inspect", "--engine", "none", "--summaries", str(summaries), "--json", f"s3://{BUCKET}/run")
    first = strict_json(run_cli(*args).stdout)
    again = strict_json(run_cli(*args).stdout)
    assert (first["reused"], again["reused"]) == (0, len(list(local_ranks.iterdir())))
    assert first["health"] == again["health"]
    written = [json.loads(p.read_text()) for p in summaries.iterdir()]
    assert all(doc["source"]["etag"] and doc["source"]["path"].startswith("s3://") for doc in written)
    import hashlib

    rank0 = next(doc for doc in written if doc["source"]["path"].endswith("/rank0.json"))
    assert (
        rank0["source"]["etag"] == hashlib.md5((local_ranks / "rank0.json").read_bytes()).hexdigest()
    )  # S3: a single-part upload's ETag
    local = inspect_json(run_cli, local_ranks, "--engine", "none")
    assert first["health"] == local["health"]


def test_a_missing_object_is_one_line_and_exit_6(store: str, run_cli: RunCli) -> None:
    result = run_cli("trace", "inspect", f"s3://{BUCKET}/run/rank9.json")
    assert result.returncode == 6
    (line,) = result.stderr.strip().splitlines()
    assert line.endswith(f"s3://{BUCKET}/run/rank9.json: no such object")


def test_a_refused_credential_is_one_line_exit_6_and_never_shows_the_secret(
    store: str, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from moto import settings

    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # moto now checks every request's signature
    for args in (
        ("trace", "inspect", f"s3://{BUCKET}/run/rank0.json"),
        ("trace", "inspect", "--json", f"s3://{BUCKET}/run"),
        ("trace", "inspect", "--engine", "none", "--summaries", str(tmp_path / "s"), "--json", f"s3://{BUCKET}/run"),
    ):
        result = run_cli(*args)
        assert result.returncode == 6, (args, result.stdout, result.stderr)
        assert "access refused" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        for text in (result.stdout, result.stderr):
            assert SECRET not in text and SECRET[:12] not in text and KEY_ID not in text


@pytest.mark.parametrize("ahead", [False, True], ids=["one-thread", "scanner-thread"])
def test_an_object_is_streamed_in_bounded_ranges(
    store: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ahead: bool
) -> None:
    """Each request is at most what the reader reads at a time plus fsspec's read-ahead (remote.BLOCK_BYTES, 8 MiB;
    64 KiB here): the reader's block (512 KiB by default; 64 KiB here), or AHEAD_READS blocks where the scanner's
    thread runs (ReaderConfig.ahead, on two cores or more, with the compiled core). A 1 GB object is read in pieces
    of a few MiB, never whole."""
    import boto3
    import s3fs

    from wizard.trace.inspection.run import inspect_trace
    from wizard.trace.read import collector, reader, remote
    from wizard.trace.read.reader import ReaderConfig

    monkeypatch.setattr(reader, "usable_cores", lambda: 2)
    big = write_rank_directory(tmp_path / "big", RankPlan(world_size=1, steps=40, kernels=40))[0]
    size = big.stat().st_size
    boto3.client("s3").upload_file(str(big), BUCKET, "big/rank0.json")
    block = 64 * 1024
    monkeypatch.setattr(remote, "BLOCK_BYTES", block)
    ranges: list[tuple[int, int]] = []
    original = s3fs.core.S3File._fetch_range

    def spied(self: Any, start: int, end: int) -> Any:
        ranges.append((start, end))
        return original(self, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", spied)
    config = ReaderConfig(block_size=block, workers=0, ahead=ahead)
    from_s3 = inspect_trace(f"s3://{BUCKET}/big/rank0.json", config=config)
    from_disk = inspect_trace(big, config=config)
    read = block * (reader.AHEAD_READS if ahead and collector.scan_events is not None else 1)
    assert size > 6 * read
    assert len(ranges) >= size // (read + block)  # many requests ...
    assert max(end - start for start, end in ranges) <= read + block  # ... none near the object's size
    assert max(end for _, end in ranges) >= size  # and the whole object was read through them
    assert [(c.check, c.status, c.count, c.summary) for c in from_s3.health_result.checks] == [
        (c.check, c.status, c.count, c.summary) for c in from_disk.health_result.checks
    ]
    assert (from_s3.bytes_read, from_s3.events) == (from_disk.bytes_read, from_disk.events)


def test_a_url_without_the_remote_extra_is_exit_9(store: str, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec: ImportError, as when it is not installed
    result = run_cli("trace", "inspect", f"s3://{BUCKET}/run")
    assert result.returncode == 9
    assert "[remote]" in result.stderr and "pip install" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_file_url_and_an_unknown_protocol(local_ranks: Path, run_cli: RunCli) -> None:
    local = run_cli("trace", "inspect", "--json", "--jobs", "1", str(local_ranks))
    by_url = run_cli("trace", "inspect", "--json", "--jobs", "1", local_ranks.as_uri())
    assert _verdicts(strict_json(by_url.stdout)) == _verdicts(strict_json(local.stdout))
    for url in ("nosuchproto://bucket/rank0.json", "ssh://host/run/rank0.json", "memory://rank0.json",
                "zip://rank0.json::file:///tmp/x.zip"):  # fmt: skip
        refused = run_cli("trace", "inspect", url)
        (line,) = refused.stderr.strip().splitlines()
        assert refused.returncode == 6, url
        assert "not a store warpwizard reads a trace from: one of s3://, s3a://, gs://" in line, line
    cached = run_cli("trace", "inspect", "simplecache::s3://bucket/rank0.json")  # no scheme first: a local name
    assert cached.returncode == 6 and cached.stderr.strip().endswith("no such file")


def test_a_signed_url_is_refused_and_its_token_never_shown(run_cli: RunCli) -> None:
    token = "X-Amz-Signature=0123456789abcdeftoken"
    result = run_cli("trace", "inspect", "--json", f"https://bucket.example/run/rank0.json?{token}")
    assert result.returncode == 6
    assert "a URL with a query string is not taken" in result.stderr
    assert token not in result.stderr and token not in result.stdout


def test_diff_takes_urls_and_trace_fix_refuses_one_in_a_line(
    local_ranks: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    a, b = local_ranks / "rank0.json", local_ranks / "rank1.json"
    by_path = run_cli("diff", "--json", str(a), str(b))
    by_url = run_cli("diff", "--json", a.as_uri(), b.as_uri())
    assert by_url.returncode == by_path.returncode
    mine, theirs = strict_json(by_url.stdout), strict_json(by_path.stdout)
    assert (mine["verdict"], mine["factors"]) == (theirs["verdict"], theirs["factors"])
    fixed = run_cli("trace", "fix", a.as_uri(), str(tmp_path / "out.json"))
    assert fixed.returncode == 6
    (line,) = fixed.stderr.strip().splitlines()
    assert line.endswith(f"{a.as_uri()}: trace fix rewrites a local file: copy the object here first")
