"""``trace fix`` writes corrected copies of Chrome trace JSON only (the fixer writes the profiler's own JSON events;
docs/trace-formats.md): every other format the reader takes is refused through the real CLI with its one line
and exit code, the input file unchanged and nothing written beside it.

The formats are the reader's table (``FORMATS``) less Chrome JSON, each under every name it usually has (its
suffixes, gzipped where the suffix says so) and under none (recognised by its bytes), so a new format is tried
without editing this file's list of names, and a mutation making one of them rewritable fails here (it was caught
only by an error message's wording before). Cuspy's own .pftrace.gz is tried too; Cuspy's JSON is Chrome JSON and
is fixed like any (the positive control below).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from wizard.exit_status import ExitStatus
from wizard.testing.nsys import Call, Kernel, write_export
from wizard.testing.pftrace import convert, cuspy
from wizard.testing.rocpd import write_rocpd
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.read.formats import FORMATS, KINETO_JSON, SQLITE_GZ, TraceFormat

REFUSED = [f for f in FORMATS if f is not KINETO_JSON]


def _chrome(tmp_path: Path) -> Path:
    (tmp_path / "source").mkdir(exist_ok=True)
    b = TraceBuilder()
    b.add(KernelSpec("grid_overflow", (100_000, 30_000, 1), (256, 1, 1)))  # mechanism A: a negative value
    return b.write(tmp_path / "source" / "k.json")


def _perfetto(tmp_path: Path) -> bytes:
    """The Chrome trace above as TrackEvent slices, converted by Perfetto's own Python package."""
    return convert(json.loads(_chrome(tmp_path).read_text()))


def _nsys(tmp_path: Path) -> bytes:
    """An Nsight Systems export: two launches and their kernels."""
    (tmp_path / "source").mkdir(exist_ok=True)
    calls = [Call(1_000 * i, 1_000 * i + 300, 100 + i) for i in (1, 2)]
    kernels = [Kernel(1_000 * i + 500, 1_000 * i + 900, 100 + i) for i in (1, 2)]
    return write_export(tmp_path / "source" / "x.sqlite", kernels, calls).read_bytes()


def _rocpd(tmp_path: Path) -> bytes:
    """A rocpd database with rocprofiler-sdk's schema and four dispatches."""
    (tmp_path / "source").mkdir(exist_ok=True)
    return write_rocpd(tmp_path / "source" / "r.db").read_bytes()


# A format's bytes, by its id: a format the reader learns and trace fix refuses needs its maker here.
SAMPLES: dict[str, Callable[[Path], bytes]] = {
    "perfetto-proto": _perfetto,
    "nsys-sqlite": _nsys,
    "rocpd-sqlite": _rocpd,
}


def _named(fmt: TraceFormat) -> list[str]:
    return [*fmt.suffixes, ""]


CASES = [(fmt, suffix) for fmt in REFUSED for suffix in _named(fmt)]


def _state(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file of the directory: its SHA-256 and mtime."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())
    }


def _refused(run_cli: Any, path: Path) -> CliResult:
    """``trace fix PATH OUT``, asserted refused: one line naming the input, the usage-error exit code (the file
    reads; the command does not take its format), the directory as it was (the input's bytes and mtime, no output,
    no temporary file left)."""
    before = _state(path.parent)
    result: CliResult = run_cli("trace", "fix", str(path), str(path.parent / "fixed.json"))
    assert result.status == ExitStatus.USAGE, (result.status, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warpwizard: error: {path}: "), result.stderr
    assert result.stdout == ""
    assert _state(path.parent) == before
    return result


def test_every_format_but_chrome_json_has_a_sample() -> None:
    assert {f.id for f in REFUSED} == set(SAMPLES), "a format trace fix refuses has no sample to try it on"
    assert KINETO_JSON.rewritable and REFUSED  # the one format fixed, and at least one refused


@pytest.mark.parametrize(("fmt", "suffix"), CASES, ids=[f"{f.id}{s or '-no-suffix'}" for f, s in CASES])
def test_trace_fix_refuses_every_format_it_cannot_write(
    run_cli: Any, tmp_path: Path, fmt: TraceFormat, suffix: str
) -> None:
    data = SAMPLES[fmt.id](tmp_path)
    path = tmp_path / "in" / f"trace{suffix}"
    path.parent.mkdir()
    path.write_bytes(gzip.compress(data, mtime=0) if suffix.endswith(".gz") else data)
    line = _refused(run_cli, path).stderr.strip()
    named = SQLITE_GZ if suffix == ".sqlite.gz" else fmt  # the container names what it holds
    assert f"{named.name_with_article}; `trace fix` writes corrected copies of {KINETO_JSON.name} only" in line
    assert line.endswith("only (.json, .json.gz; nothing was written; `trace inspect` reads this file)")


def test_trace_fix_refuses_cuspys_own_pftrace(run_cli: Any, tmp_path: Path) -> None:
    """What PyTorch 2.15's Cuspy collector writes (gzipped protobuf, its render stages) is a Perfetto trace."""
    (tmp_path / "in").mkdir()
    stage = {"name": "void g", "grid": (1, 1, 1), "block": (32, 1, 1), "ts": 1_000, "dur": 400, "correlation": 101}
    path = cuspy(
        tmp_path / "in" / "cuspy.pftrace.gz", stages=[stage], launches=[{"ts": 600, "correlation": 101, "links": [1]}]
    )
    line = _refused(run_cli, path).stderr
    assert "a Perfetto protobuf trace; `trace fix` writes corrected copies of Chrome trace JSON only" in line


def test_a_gzipped_sqlite_export_is_refused(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "x.sqlite.gz"
    path.write_bytes(gzip.compress(_nsys(tmp_path), mtime=0))
    _refused(run_cli, path)


def test_the_chrome_json_of_the_same_kernels_is_fixed(run_cli: Any, tmp_path: Path) -> None:
    """The positive control: the path the refusals take writes a copy of Chrome JSON, the input unchanged."""
    source = _chrome(tmp_path)
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    out = tmp_path / "fixed.json"
    result = run_cli("trace", "fix", str(source), str(out))
    assert result.status == 0, result.stderr
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before
    (was,) = [e for e in json.loads(source.read_text())["traceEvents"] if e.get("cat") == "kernel"]
    (kernel,) = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "kernel"]
    assert was["args"]["blocks per SM"] < 0 <= kernel["args"]["blocks per SM"]  # mechanism A's value, corrected
