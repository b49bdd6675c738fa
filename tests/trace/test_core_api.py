"""A compiled core built from other sources than the Python's (an editable install not rebuilt after a pull) is not
used: its functions may take other arguments (a TypeError at import stopped every trace command) or do less (the
block's categories, counted in C since the JSON core's last step, silently missing). wizard/compiled_core.py binds
the core only where its API is the one the Python was written against; otherwise every reader runs its twins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from wizard import compiled_core as core
from wizard.trace.read import collector, perfetto, protobuf

STALE = """
import sys, types
stale = types.ModuleType("wizard._core")
stale.API = {api}
def refuse(*args, **kwargs):
    raise AssertionError("a function of a core of another API was called")
for name in ("bind", "fields", "varint", "packed_varints", "packet_head", "track_event_fields", "bind_events",
             "event_args", "split_run", "track_event", "json_bind", "collect_events", "clean"):
    setattr(stale, name, refuse)
sys.modules["wizard._core"] = stale
from wizard.trace.read import collector, perfetto, protobuf
from wizard.trace.read.reader import read_trace
from wizard.testing.traces import TraceBuilder, demo_launches
b = TraceBuilder()
for s in demo_launches():
    b.add(s)
contents = read_trace(b.write(sys.argv[1]))
print(protobuf.COMPILED, perfetto.COMPILED_EVENTS, collector.COMPILED, len(contents.kernels) == len(demo_launches()))
"""


@pytest.mark.skipif(not protobuf.COMPILED, reason="the compiled core is not built here")
def test_the_built_core_is_the_api_the_python_binds() -> None:
    from wizard import _core

    assert _core.API == core.API
    assert core.compiled() is _core
    assert protobuf.COMPILED and perfetto.COMPILED_EVENTS and collector.COMPILED


@pytest.mark.parametrize("api", [core.API - 1, core.API + 1, "None"])
def test_a_core_of_another_api_is_not_used(tmp_path: Path, api: object) -> None:
    code = STALE.replace("{api}", str(api))
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t.json")], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "True"]


def test_warpwizard_pure_refuses_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARPWIZARD_PURE", "1")
    assert core.compiled() is None
