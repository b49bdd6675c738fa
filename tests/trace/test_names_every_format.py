"""A kernel's name is kept to the same length whatever format carries it: MAX_NAME (16,384) characters, in Kineto
JSON, an Nsight Systems export, a rocpd database and a .pftrace. Nsight's and rocpd's readers cut names at 4,096 in
SQL while JSON kept 16,384, so the same kernel had two names: the longest real name in the shared traces is 5,123
characters (a100-alexnet's, a template holding lambdas), and comparing that workload's nsys profile with its Kineto
one (the method's step 1) matched nothing for it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import TRACES, needs_shared
from wizard.testing.nsys import Call, Kernel, write_export
from wizard.testing.pftrace import convert
from wizard.testing.rocpd import UUID, write_rocpd
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.read.collector import MAX_NAME
from wizard.trace.read.nsys import read_nsys
from wizard.trace.read.reader import read_trace
from wizard.trace.read.rocpd import read_rocpd

WHOLE = "void k<" + "a" * 9_990 + ">()"  # past the old 4,096, within MAX_NAME: kept whole everywhere
LONG = "void j<" + "b" * 20_000 + ">()"  # past MAX_NAME: its first 16,384 characters everywhere


def _nsys(path: Path, names: list[str]) -> set[str]:
    kernels = [Kernel(1000 * (i + 1), 1000 * (i + 1) + 500, i + 1, name=n) for i, n in enumerate(names)]
    calls = [Call(1000 * (i + 1) - 400, 1000 * (i + 1) - 100, i + 1) for i in range(len(names))]
    write_export(path, kernels, calls)
    return {k.name for k in read_nsys(path).kernels}


def _rocpd(path: Path, name: str) -> set[str]:
    """The builder's database with symbol 1 (dispatched twice, testing/rocpd.py's DISPATCHES) named ``name``."""
    write_rocpd(path)
    with sqlite3.connect(path) as db:
        db.execute(f'UPDATE "rocpd_info_kernel_symbol{UUID}" SET display_name = ? WHERE id = 1', (name,))
    return {k.name for k in read_rocpd(path).kernels} - {"softmax(float*)"}


def _json_and_pftrace(tmp_path: Path, names: list[str]) -> tuple[set[str], set[str]]:
    b = TraceBuilder()
    for n in names:
        b.add(KernelSpec(n, (1, 1, 1), (32, 1, 1)))
    source = b.write(tmp_path / "t.json")
    proto = tmp_path / "t.pftrace"
    proto.write_bytes(convert(json.loads(source.read_text())))
    return {k.name for k in read_trace(source).kernels}, {k.name for k in read_trace(proto).kernels}


def test_every_format_keeps_a_name_to_max_name(tmp_path: Path) -> None:
    expected = {WHOLE, LONG[:MAX_NAME]}
    assert MAX_NAME == 16_384 and len(WHOLE) == 10_000
    from_json, from_pftrace = _json_and_pftrace(tmp_path, [WHOLE, LONG])
    assert from_json == expected
    assert from_pftrace == expected
    assert _nsys(tmp_path / "t.sqlite", [WHOLE, LONG]) == expected
    assert _rocpd(tmp_path / "whole.db", WHOLE) == {WHOLE}
    assert _rocpd(tmp_path / "long.db", LONG) == {LONG[:MAX_NAME]}


@needs_shared
def test_the_longest_real_kernel_name_is_one_name_in_json_and_nsys(tmp_path: Path) -> None:
    names = {k.name for k in read_trace(TRACES / "a100-alexnet.json.gz").kernels}
    longest = max(names, key=len)
    assert len(longest) == 5_123  # the longest real name, as collector.py's MAX_NAME comment says
    assert _nsys(tmp_path / "alexnet.sqlite", [longest]) == {longest}
    assert _rocpd(tmp_path / "alexnet.db", longest) == {longest}
