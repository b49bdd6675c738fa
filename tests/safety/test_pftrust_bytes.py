"""Bytes are bounded where counts are (issue 47 item 1): names of a megabyte, never used or never ended, cost what a
long real name costs, in every place a read keeps one, and what a read keeps for the whole file is bounded.

Each of the issue's four shapes is generated here, scaled from 1,500 names of 1 MB to ``COUNT`` (the same shape),
and read as ``trace inspect`` reads it; the peak of what Python allocated during the read (tracemalloc) is compared
with the same file's of 8-character names. Before the fix each name cost its megabyte: 304 MB (interned, never
used), 606 MB (tracks: name and merge key, kept again as pid and tid), 304 MB (slices never ended), 303 MB (kernels,
.pftrace.gz) and 319 MB (kernels, .json.gz) for 300 names. The bounds asserted (``GROWTH_MB``):

- ``.pftrace.gz``, 40 MB: each name kept at most ``MAX_NAME`` (16,384) characters, two per track, so ``COUNT`` tracks
  hold 10 MB, plus the packet being read (a megabyte), the read's megabyte chunks and the 64 KB decoded of each name
  before its cut (measured 10-19 MB; 600 tracks 30 MB: it grows by the cut names only).
- ``.json.gz``, 96 MB: the JSON reader's 8 MB blocks (one in the buffer, the next read into it) and the events
  decoded from a block, whose names are whole until the collector cuts them: the same 62 MB for 150, 300 and 600
  names, so it does not grow with the names, only with the block size.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import IO

import pytest

from wizard.errors import InputFileError
from wizard.testing import hostile
from wizard.testing.hostile import name as _name
from wizard.testing.hostile import packet as _packet
from wizard.testing.hostile import seq as _seq
from wizard.testing.hostile import vfield as _vfield
from wizard.testing.pftrace import field
from wizard.trace.read import perfetto
from wizard.trace.read.collector import MAX_NAME, TraceContents
from wizard.trace.read.reader import read_trace

COUNT = 300  # names of NAME_MB each: 300 MB of names before the fix, in a file of a few hundred KB of gzip
NAME_MB = 1
GROWTH_MB = {".pftrace.gz": 40, ".json.gz": 96}


def _peak_mb(path: Path) -> tuple[float, TraceContents]:
    """The file read as ``trace inspect`` reads it (``read_trace``): the peak of the memory Python allocated while
    reading it, in MB (tracemalloc: every object the read made and kept or dropped, whatever the process held
    before), and what it read."""
    gc.collect()
    tracemalloc.start()
    try:
        contents = read_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 2**20, contents


SHAPES = hostile.shapes(COUNT)
_write = hostile.write
_kernels, _json_kernels = SHAPES["kernels-pftrace"][0], SHAPES["kernels-json"][0]
_interned_never_used, _never_ended = SHAPES["interned-never-used"][0], SHAPES["slices-never-ended"][0]
_track_descriptors = SHAPES["track-descriptors"][0]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_names_of_a_megabyte_cost_what_a_long_name_costs(shape: str, tmp_path: Path) -> None:
    make, suffix = SHAPES[shape]
    base_mb, base = _peak_mb(_write(tmp_path / f"small{suffix}", make, 8))
    peak_mb, read = _peak_mb(_write(tmp_path / f"big{suffix}", make, NAME_MB << 20))
    assert peak_mb - base_mb < GROWTH_MB[suffix], (shape, base_mb, peak_mb)
    assert read.events == base.events  # the same events read, whatever their names
    assert len(read.kernels) == len(base.kernels) == (COUNT if shape.startswith("kernels") else 1)


@pytest.mark.parametrize("suffix", [".pftrace.gz", ".json.gz"])
def test_a_long_name_is_its_first_max_name_characters(suffix: str, tmp_path: Path) -> None:
    """Cut where it is read, in both formats: each kernel keeps its own first MAX_NAME characters (the names differ
    in their first characters, so none merge)."""
    make = _kernels if suffix == ".pftrace.gz" else _json_kernels
    path = _write(tmp_path / f"k{suffix}", make, 3 * MAX_NAME)
    contents = read_trace(path)
    names = sorted({shape[0] for shape in contents.kernels.columns()[4]})
    assert names == [_name(i, 3 * MAX_NAME)[:MAX_NAME].decode() for i in range(COUNT)]


def test_interned_names_and_track_names_held_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the read keeps for the whole file is bounded in characters (MAX_HELD_CHARS): past it, one line naming
    the file; a sequence cleared frees its own."""
    monkeypatch.setattr(perfetto, "MAX_HELD_CHARS", 1 << 20)  # COUNT names of MAX_NAME are more
    path = _write(tmp_path / "names.pftrace.gz", _interned_never_used, 2 * MAX_NAME)
    with pytest.raises(InputFileError, match=r"names\.pftrace\.gz: not a readable Perfetto trace at inflated byte \d+: "
                       r"more than 1 Mi characters of interned strings and track names"):  # fmt: skip
        perfetto.read_perfetto(path)
    tracks = _write(tmp_path / "tracks.pftrace.gz", _track_descriptors, 2 * MAX_NAME)
    with pytest.raises(InputFileError, match="characters of interned strings and track names"):
        perfetto.read_perfetto(tracks)
    monkeypatch.setattr(perfetto, "MAX_HELD_CHARS", 2 * COUNT * MAX_NAME)  # just enough: name and merge key each
    assert perfetto.read_perfetto(tracks).kernels.columns()[4][0][0] == "one_real_kernel"


def test_slices_open_at_once_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(perfetto, "MAX_OPEN_BYTES", 1 << 20)  # COUNT names of MAX_NAME are more
    path = _write(tmp_path / "open.pftrace.gz", _never_ended, 2 * MAX_NAME)
    with pytest.raises(InputFileError, match="slices open at once holding more than 1 MiB"):
        perfetto.read_perfetto(path)


def _kernels_with_megabyte_args(out: IO[bytes], size: int) -> None:
    """Kernels whose one debug annotation (a "Call stack", an arg the event keeps) is ``size`` bytes."""
    out.write(_packet(_seq(True)))
    for i in range(COUNT):
        note = field(4, field(10, b"Call stack") + field(6, _name(i, size)))  # DebugAnnotation: name, string_value
        begin = field(11, _vfield(9, 1) + _vfield(11, 1) + field(22, b"kernel") + field(23, b"k") + note)
        end = field(11, _vfield(9, 2) + _vfield(11, 1))
        out.write(_packet(_vfield(8, 1000 + 10 * i), _seq(False), begin))
        out.write(_packet(_vfield(8, 1005 + 10 * i), _seq(False), end))


def test_a_batch_of_events_is_bounded_in_bytes_too(tmp_path: Path) -> None:
    """Events wait in batches of 50,000 for the collector; megabyte args made a batch hold each one (300 MB here):
    a batch is handed over once its names and annotations reach BATCH_BYTES (16 MB), so the read holds about one
    batch's worth, plus the packet being read."""
    base_mb, base = _peak_mb(_write(tmp_path / "small.pftrace.gz", _kernels_with_megabyte_args, 8))
    peak_mb, read = _peak_mb(_write(tmp_path / "big.pftrace.gz", _kernels_with_megabyte_args, NAME_MB << 20))
    assert peak_mb - base_mb < (perfetto.BATCH_BYTES >> 20) + GROWTH_MB[".pftrace.gz"], (base_mb, peak_mb)
    assert len(read.kernels) == len(base.kernels) == COUNT
