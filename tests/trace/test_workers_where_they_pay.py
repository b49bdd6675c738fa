"""One big file's workers only where they pay: the cores less the parent's, and at least two of them. On this
project's two cores one process read every size from 101 MB to 1 GB faster than two workers beside the parent
(benchmarks/results-2026-12-02-series.md), so a big file there is read in one process unless --jobs asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from wizard.trace.read import reader
from wizard.trace.read.reader import ReaderConfig, _parallel_workers


def _sized(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)  # sparse: the size is all the choice reads
    return path


@pytest.mark.parametrize(("cores", "expected"), [(1, 0), (2, 0), (3, 2), (4, 3), (16, 15)])
def test_a_big_file_takes_the_cores_less_the_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, expected: int
) -> None:
    monkeypatch.setattr(reader, "usable_cores", lambda: cores)
    big = _sized(tmp_path / "t.json", 200 << 20)
    assert _parallel_workers(big, ReaderConfig()) == expected


def test_a_small_file_and_an_asked_number_are_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "usable_cores", lambda: 16)
    assert _parallel_workers(_sized(tmp_path / "small.json", 95 << 20), ReaderConfig()) == 0
    assert _parallel_workers(_sized(tmp_path / "s.json.gz", 13 << 20), ReaderConfig()) == 15  # 8x: a gzip's guess
    big = _sized(tmp_path / "big.json", 200 << 20)
    assert _parallel_workers(big, ReaderConfig(workers=2)) == 2  # --jobs 2: two workers, even beside the parent
    assert _parallel_workers(big, ReaderConfig(workers=0)) == 0
    monkeypatch.setattr(reader, "usable_cores", lambda: 2)
    assert _parallel_workers(big, ReaderConfig(workers=2)) == 2
