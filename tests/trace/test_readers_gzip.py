"""The one gzip inflater (wizard/trace/read/inflate.py) every reader uses: bounded output (a ratio past a floor, and
in all), chunked, concatenated members, and what a cut or damaged stream gives first."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import pytest

from wizard.trace.read import inflate


def _reader(data: bytes, bounds: inflate.GzipBounds = inflate.STREAMING, strict: bool = True) -> inflate.Inflater:
    return inflate.Inflater(io.BytesIO(data).read, bounds, strict=strict)


def _all(inflater: inflate.Inflater, size: int = 1000) -> bytes:
    out = b""
    while data := inflater.read(size):
        assert len(data) <= size  # never more than asked for: a bomb costs one read's worth
        out += data
    return out


def test_concatenated_members_are_one_stream() -> None:
    data = gzip.compress(b"a" * 5000) + gzip.compress(b"b" * 3000)
    assert _all(_reader(data)) == b"a" * 5000 + b"b" * 3000


def test_a_cut_stream_gives_what_came_before_then_says_so() -> None:
    whole = gzip.compress(bytes(range(256)) * 400)
    inflater = _reader(whole[: len(whole) // 2])
    got = inflater.read(1 << 20)
    assert got and (bytes(range(256)) * 400).startswith(got)
    with pytest.raises(inflate.GzipCut, match="ended before the end-of-stream marker"):
        inflater.read(1 << 20)


def test_damage_gives_what_came_before_then_says_so() -> None:
    body = b"".join(str(i).encode() for i in range(20_000))
    first = gzip.compress(body)
    inflater = _reader(first + b"\x1f\x8b\x08\x00garbage-not-deflate")
    assert inflater.read(1 << 20) == body
    with pytest.raises(inflate.GzipDamaged):
        inflater.read(1 << 20)


def test_bytes_after_the_last_member_are_damage_or_the_end() -> None:
    data = gzip.compress(b"x" * 100) + b"\x00" * 16
    with pytest.raises(inflate.GzipDamaged):
        _all(_reader(data, strict=True))
    assert _all(_reader(data, strict=False)) == b"x" * 100  # padding, the Perfetto reader's reading


def test_the_ratio_bound_counts_past_its_floor() -> None:
    """Zeros deflate about 1000:1; a bound of 100:1 past a 1 MB floor refuses them once past the floor, and a file
    under the floor is never refused for its ratio."""
    bomb = gzip.compress(bytes(8 << 20))
    assert len(bomb) < (8 << 20) / 500
    bounds = inflate.GzipBounds(max_ratio=100.0, ratio_floor=1 << 20)
    with pytest.raises(inflate.GzipTooBig, match="more than 100 times its compressed size"):
        _all(_reader(bomb, bounds), 1 << 16)
    small = gzip.compress(bytes(512 << 10))
    assert _all(_reader(small, bounds), 1 << 16) == bytes(512 << 10)


def test_the_absolute_bound() -> None:
    data = gzip.compress(b"".join(i.to_bytes(4, "big") for i in range(1 << 18)))  # 1 MiB, barely compressible
    bounds = inflate.GzipBounds(max_bytes=500_000)
    with pytest.raises(inflate.GzipTooBig, match="inflates past 500,000 bytes"):
        inflate.inflate_all(io.BytesIO(data).read, bounds)


def test_a_gzipped_database_over_its_bound_is_one_line(tmp_path: Path) -> None:
    """A ``.sqlite.gz`` is inflated into memory, so its bound is what keeps memory: past it, one line naming the
    file, before SQLite is handed anything."""
    import sqlite3

    from wizard.errors import InputFileError
    from wizard.trace.read.source import open_input
    from wizard.trace.read.sqlite import SqliteBounds, open_database

    db_path = tmp_path / "zeros.sqlite"
    db = sqlite3.connect(db_path)
    with db:
        db.execute("CREATE TABLE StringIds (id, value)")
        db.execute("INSERT INTO StringIds VALUES (1, zeroblob(4000000))")
    db.close()
    packed = tmp_path / "zeros.sqlite.gz"
    packed.write_bytes(gzip.compress(db_path.read_bytes(), 9))
    tight = SqliteBounds(gzip_bounds=inflate.GzipBounds(max_bytes=8 << 30, max_ratio=50.0, ratio_floor=1 << 20))
    with open_input(packed)[0] as fh, pytest.raises(InputFileError) as caught:
        open_database(packed, fh, tight)
    assert str(caught.value).startswith(f"{packed}: a gzipped database too big to unpack in memory: ")
    assert "more than 50 times its compressed size" in str(caught.value)
    with open_input(packed)[0] as fh, open_database(packed, fh, SqliteBounds()) as found:  # the default bound reads it
        assert found.compressed and found.schema.tables == {"StringIds"}


@pytest.mark.parametrize("suffix", [".json.gz", ".pftrace.gz"])
def test_a_second_member_reads_as_one_stream_in_every_reader(run_cli: Any, tmp_path: Path, suffix: str) -> None:
    """``gzip -c a >> b`` writes two members. The Perfetto reader's own inflater looped for ever on one (past a
    member's end, zlib leaves what follows in ``unconsumed_tail``, which it inflated again and again to nothing);
    the shared one reads the same kernels as the one-member file, in the JSON and Perfetto readers alike."""
    import json

    from tests.conftest import strict_json
    from wizard.testing.pftrace import convert
    from wizard.testing.traces import KernelSpec, TraceBuilder

    b = TraceBuilder()
    for i in range(40):
        b.add(KernelSpec(f"void k{i}", (64, 1, 1), (128, 1, 1)))
    text = b.text()
    raw = text.encode() if suffix == ".json.gz" else convert(json.loads(text))
    one, two = tmp_path / f"one{suffix}", tmp_path / f"two{suffix}"
    one.write_bytes(gzip.compress(raw))
    half = len(raw) // 2 if suffix == ".json.gz" else len(raw)  # JSON may split anywhere; packets whole
    two.write_bytes(gzip.compress(raw[:half]) + gzip.compress(raw[half:]))
    reports = []
    for path in (one, two):
        result = run_cli("trace", "inspect", str(path), "--json", "--fail-on", "never")
        assert result.status == 0, result.stderr
        (report,) = strict_json(result.stdout)["reports"]
        reports.append(report)
    assert reports[0]["kernels"] == reports[1]["kernels"] == 40
