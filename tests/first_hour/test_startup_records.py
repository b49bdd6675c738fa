"""What ``trace inspect --json`` on a small trace no longer pays for as it starts (issue 48's start-up, fourth round),
read from the real entry point's own process.

- **Internal records.** A frozen dataclass compiles three methods from source text when its module loads (CPython
  3.11 ``Lib/dataclasses.py``, ``_create_fn``: ``__init__``, ``__setattr__``, ``__delattr__``, one ``exec`` each),
  3 M instructions a class measured alone, a plain one about 1.5 M. The records nothing compares or shows (the
  checks' declarations, the readers', classifier's and checks' working records) are ``msgspec.Struct`` s declared
  ``eq=False``: made in C with no source compiled, the same fields, defaults, identity comparison and, where
  frozen, the same refusal to be assigned. ``RECORDS`` lists them; a new lean record goes there.
- **The worker pool's reader** (``wizard.trace.read.parallel``) is loaded where a file is read by workers, not when
  the reader loads.
- **Young collections.** The console script raises the first generation's threshold to 50,000 new objects (CPython's
  is 700), so the start-up's long-lived objects are not walked by collection after collection; a library caller's
  process keeps Python's own.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.helpers import demo_trace, recorded_run

# module: the records it declares as lean Structs, each with whether it is frozen
RECORDS: dict[str, dict[str, bool]] = {
    "wizard.trace.health.spec": {
        "LaunchApi": True,
        "StatusWord": True,
        "Bounds": True,
        "CheckFact": True,
        "CheckFix": True,
        "CheckSpec": True,
    },
    "wizard.trace.health.checks": {"Registered": True},
    "wizard.trace.health.key_averages": {
        "SummaryRow": True,
        "SummaryTable": False,
        "_Events": False,
        "_Thread": False,
        "_Spans": False,
        "PrintedRow": True,
    },
    "wizard.trace.health.tables": {"Calls": False, "Kernels": False},
    "wizard.trace.health.nesting": {"RowEvents": False, "Moves": False},
    "wizard.trace.health.checks.kernels_overlap": {"_Hidden": False, "_Kinds": False},
    "wizard.trace.health.checks.rank_skew": {"_Measured": False},
    "wizard.trace.health.checks.ranks_complete": {"Trace": True, "Tally": False},
    "wizard.trace.metrics.detectors": {"KernelCheck": False, "LaunchContext": False, "_OccupancyReading": True},
    "wizard.trace.metrics.classify": {"_Named": True},
    "wizard.trace.read.records": {"RuntimeCall": True, "_ThreadIntervals": False},
    "wizard.trace.read.collector": {"PieceResult": False},
    "wizard.trace.read.formats": {"TraceFormat": True},
    "wizard.trace.read.reader": {"ReaderConfig": True},
    "wizard.trace.read.remote": {"UrlIdentity": True, "_guarded": False},
    "wizard.trace.read.cuspy": {"Clamped": True},
    "wizard.trace.read.inflate": {"GzipBounds": True},
    "wizard.plugins": {"Plugin": True},
    "wizard.trace.passes": {"TracePass": True},  # the plugin API's declaration: its repr kept, never compared
}

# module: the library's results (and what is compared or hashed by value) declared as Structs compared by value,
# each with whether it is frozen (round 4: a dataclass's generated methods were 135 M instructions of 722 M)
VALUES: dict[str, dict[str, bool]] = {
    "wizard.trace.metrics.findings": {
        "OpLink": False,
        "Launch": True,
        "KernelLaunch": True,
        "FindingGroup": False,
        "PlotData": False,
        "KernelMetrics": False,
    },
    "wizard.trace.read.collector": {
        "Truncation": False,
        "ExactTimes": False,
        "Timeline": False,
        "TraceContents": False,
    },
    "wizard.trace.read.counters": {"Series": False, "Counters": False},
    "wizard.file_ends": {"OpenedEnds": True},
    "wizard.trace.inspection.results": {"TraceInspection": False, "HealthLine": False, "Inspection": False},
    "wizard.trace.health.spec": {"HealthExample": True, "HealthCheck": False},
    "wizard.trace.health.checker": {"HealthResult": False},
    "wizard.trace.health.checks.ranks_complete": {"JobPlace": True},
    "wizard.trace.metrics.detectors": {"Finding": False},
    "wizard.trace.profile.summary": {
        "KernelGroup": False,
        "OpGroup": False,
        "ProfileDevice": False,
        "HealthNote": False,
        "ProfileSummary": False,
    },
    # compared and hashed by value: one GPU's limits for all its kernels, an op's descriptor as a dict key
    "wizard.trace.metrics.occupancy": {"Architecture": True, "DeviceLimits": True, "Occupancy": True},
    "wizard.trace.metrics.devices": {"DeviceInfo": True},
    "wizard.trace.read.records": {"OpInfo": True},
}

# the hooks only: tests/helpers.recorded_run starts the process around them
RUNNER = """

def _audit(event, args):
    if event == "compile" and sys._getframe(1).f_code.co_name == "_create_fn":
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "_process_class":
            frame = frame.f_back
        if frame is not None:
            cls = frame.f_locals["cls"]
            compiled[f"{cls.__module__}.{cls.__qualname__}"] += 1

def _write():
    json.dump({"compiled": dict(compiled), "modules": sorted(sys.modules), "threshold": gc.get_threshold(),
               "collections": [s["collections"] for s in gc.get_stats()]}, open(out, "w"))
"""


def _run(tmp_path: Path, *args: str, library: bool = False) -> dict[str, Any]:
    """The real entry point (or the library's inspect_traces) on ``args``, and what its process recorded."""
    return recorded_run(tmp_path, RUNNER, *args, library=library)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_trace(tmp_path_factory.mktemp("startup-records") / "small.json")


@pytest.fixture(scope="module")
def inspection(tmp_path_factory: pytest.TempPathFactory, small: Path) -> dict[str, Any]:
    return _run(tmp_path_factory.mktemp("cli"), "trace", "inspect", "--json", "--fail-on", "never", str(small))


def test_a_small_inspection_loads_every_lean_record_and_compiles_no_method_for_one(
    inspection: dict[str, Any],
) -> None:
    assert set(RECORDS) <= set(inspection["modules"])  # each record's module was loaded by the run
    assert inspection["compiled"]  # the audit saw the dataclasses that remain (the check can fail)
    lean = {f"{module}.{name}" for tables in (RECORDS, VALUES) for module, names in tables.items() for name in names}
    assert set(VALUES) <= set(inspection["modules"])
    assert lean.isdisjoint(inspection["compiled"])


def _structs(module: str, declared: dict[str, bool]) -> Iterator[tuple[str, Any, bool, Any]]:
    """Each class ``declared`` in ``module`` (name -> frozen), checked to be a Struct and no dataclass, with its
    Struct configuration."""
    loaded = importlib.import_module(module)
    for name, frozen in declared.items():
        cls = getattr(loaded, name)
        assert issubclass(cls, msgspec.Struct) and not dataclasses.is_dataclass(cls), name
        yield name, cls, frozen, cls.__struct_config__


@pytest.mark.parametrize("module", sorted(RECORDS))
def test_each_lean_record_is_a_struct_compared_by_identity_and_frozen_as_declared(module: str) -> None:
    for name, cls, frozen, config in _structs(module, RECORDS[module]):
        assert (config.eq, config.frozen) == (False, frozen), name
        assert "__eq__" not in vars(cls), name  # object's: two records with the same fields are two records


@pytest.mark.parametrize("module", sorted(VALUES))
def test_each_result_is_a_struct_compared_by_value_and_frozen_as_declared(module: str) -> None:
    """A dataclass's semantics, kept: equal when every field is, hashed by value where frozen, unhashable where not."""
    for name, cls, frozen, config in _structs(module, VALUES[module]):
        assert (config.eq, config.frozen, config.order) == (True, frozen, False), name
        values = [None] * len(cls.__struct_fields__)
        one, two = cls(*values), cls(*values)
        assert one == two and one is not two, name
        assert one != cls(0, *values[1:]), name  # one field apart
        if frozen:
            assert hash(one) == hash(two), name
        else:
            with pytest.raises(TypeError):
                hash(one)


def test_a_frozen_record_refuses_assignment_and_a_plain_one_takes_it() -> None:
    from wizard.trace.health.spec import Bounds
    from wizard.trace.health.tables import Calls

    bounds = Bounds(0, 10)
    with pytest.raises(AttributeError):
        bounds.minimum = 3  # type: ignore[misc]
    assert (bounds.minimum, bounds.maximum, bounds.max_items) == (0, 10, None)
    assert bounds != Bounds(0, 10) and bounds in [bounds]
    calls = Calls(*([None] * len(msgspec.structs.fields(Calls))))  # type: ignore[arg-type]
    calls.names = ["cudaLaunchKernel"]
    assert calls.names == ["cudaLaunchKernel"]


def test_the_console_script_collects_no_old_generation_while_a_small_inspection_starts(
    inspection: dict[str, Any], small: Path, tmp_path: Path
) -> None:
    assert inspection["threshold"][0] == 50_000
    # the collections left are the console script's own imports', before entry() raised the threshold
    assert inspection["collections"][2] == 0  # no full collection while the run was alive
    # a library caller's process keeps Python's threshold, and the same inspection collects there (can fail)
    library = _run(tmp_path, str(small), library=True)
    assert library["threshold"][0] == 700
    assert library["collections"][0] > 2 * inspection["collections"][0], library["collections"]
    assert library["collections"][1] > inspection["collections"][1], library["collections"]


def test_the_worker_pools_module_loads_only_where_workers_read(
    inspection: dict[str, Any], small: Path, tmp_path: Path
) -> None:
    assert "wizard.trace.read.reader" in inspection["modules"]
    assert "wizard.trace.read.parallel" not in inspection["modules"]
    # two files with --jobs 2: a worker inspects each, and the parent loads the pool's module (the check can fail)
    other = demo_trace(tmp_path / "other.json")
    both = _run(tmp_path, "trace", "inspect", "--json", "--fail-on", "never", "--jobs", "2", str(small), str(other))
    assert "wizard.trace.read.parallel" in both["modules"]
