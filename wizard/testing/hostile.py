"""The hostile shapes of issue 47 item 1, generated: ``count`` names of ``size`` bytes each, never used (interned),
held by tracks (name and ``sibling_merge_key``), held by slices never ended, or each a kernel's (``.pftrace`` or
Kineto JSON). Written gzipped by tests/safety/test_pftrust_bytes.py (300 names of 1 MB) and by
benchmarks/memory_formats.py (the issue's 1,500), plain or gzipped.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, cast

from wizard.outputs import atomic_file
from wizard.testing.pftrace import field, varint

Shape = Callable[[IO[bytes], int, int], None]  # (out, name size in bytes, count)


def name(i: int, size: int) -> bytes:
    """A distinct name of ``size`` bytes (its number first, so no two share a prefix of MAX_NAME)."""
    head = f"void hostile_{i:06d}_".encode()
    return head + b"a" * (size - len(head))


def packet(*parts: bytes) -> bytes:
    return field(1, b"".join(parts))


def vfield(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def seq(first: bool) -> bytes:
    """Sequence 1, its incremental state cleared by the first packet (as a writer starts one)."""
    return vfield(10, 1) + (vfield(13, 1) if first else b"")


def kernel_pair(i: int, text: bytes) -> bytes:
    """A kernel slice (category ``kernel``, an inline name), begun and ended, on track 1."""
    begin = field(11, vfield(9, 1) + vfield(11, 1) + field(22, b"kernel") + field(23, text))
    end = field(11, vfield(9, 2) + vfield(11, 1))
    return packet(vfield(8, 1000 + 10 * i), seq(False), begin) + packet(vfield(8, 1005 + 10 * i), seq(False), end)


def interned_never_used(out: IO[bytes], size: int, count: int) -> None:
    for i in range(count):
        names = field(2, vfield(1, i + 1) + field(2, name(i, size)))  # InternedData.event_names
        out.write(packet(seq(i == 0), field(12, names)))
    out.write(kernel_pair(0, b"one_real_kernel"))


def track_descriptors(out: IO[bytes], size: int, count: int) -> None:
    out.write(packet(seq(True)))
    for i in range(count):
        track = vfield(1, 100 + i) + field(2, name(i, size)) + field(16, name(i, size))  # name, sibling_merge_key
        out.write(packet(seq(False), field(60, track)))
    out.write(kernel_pair(0, b"one_real_kernel"))


def never_ended(out: IO[bytes], size: int, count: int) -> None:
    out.write(kernel_pair(0, b"one_real_kernel"))
    for i in range(count):
        begin = field(11, vfield(9, 1) + vfield(11, 1) + field(22, b"cpu_op") + field(23, name(i, size)))
        out.write(packet(vfield(8, 10**6 + i), seq(i == 0), begin))


def kernels(out: IO[bytes], size: int, count: int) -> None:
    out.write(packet(seq(True)))
    for i in range(count):
        out.write(kernel_pair(i, name(i, size)))


def json_kernels(out: IO[bytes], size: int, count: int) -> None:
    out.write(b'{"traceEvents": [')
    for i in range(count):
        event = {"ph": "X", "cat": "kernel", "name": "NAME", "pid": 0, "tid": 7, "ts": 1000.0 + 10 * i, "dur": 5.0,
                 "args": {"device": 0, "stream": 7, "correlation": i + 1}}  # fmt: skip
        head, tail = json.dumps(event).encode().split(b"NAME")
        out.write((b", " if i else b"") + head + name(i, size) + tail)
    out.write(b"]}")


def shapes(count: int) -> dict[str, tuple[Callable[[IO[bytes], int], None], str]]:
    """Each shape of ``count`` names (``(out, size)`` writers) with the suffix the issue gave it."""
    made: dict[str, tuple[Shape, str]] = {
        "interned-never-used": (interned_never_used, ".pftrace.gz"),
        "track-descriptors": (track_descriptors, ".pftrace.gz"),
        "slices-never-ended": (never_ended, ".pftrace.gz"),
        "kernels-pftrace": (kernels, ".pftrace.gz"),
        "kernels-json": (json_kernels, ".json.gz"),
    }
    return {key: (partial(_counted, shape, count=count), suffix) for key, (shape, suffix) in made.items()}


def _counted(shape: Shape, out: IO[bytes], size: int, *, count: int) -> None:
    shape(out, size, count)


def write(path: Path, shape: Callable[[IO[bytes], int], None], size: int) -> Path:
    """The shape at ``path``: gzipped where the name ends in ``.gz``."""
    with atomic_file(path, force=True, what="hostile trace") as raw:  # a temporary file, then the rename
        if path.name.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as out:
                shape(cast("IO[bytes]", out), size)
        else:
            shape(raw, size)
    return path
