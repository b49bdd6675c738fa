"""The general record wears no pass's fields: a trace's ``TraceInspection`` holds what was read and each pass's
result by name, read through one accessor per built-in pass (``metrics``, ``health_result``, ``profile``); the
six names docs/api.md listed on it warn for one release; and the run's one-read store is typed (shelves and keys,
not strings)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import msgspec
import pytest

from tests.conftest import REPO
from wizard.environment import RunInspections, Shelf, file_identity
from wizard.probes.inspections import CONTENTS, INSPECTION, InspectionKey
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health.checker import HEALTH_PASS, HealthResult
from wizard.trace.inspection.results import DEPRECATED_NAMES, Inspection, TraceInspection
from wizard.trace.inspection.run import inspect_trace
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.metrics.findings import KernelMetrics
from wizard.trace.profile.summary import ProfileSummary


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.add(KernelSpec("void ok", (64, 1, 1), (128, 1, 1)))
    b.add(KernelSpec("grid_overflow", (100_000, 30_000, 1), (256, 1, 1)))  # mechanism A: a negative value
    return b.write(tmp_path / "t.json")


def _fields(record: type[msgspec.Struct]) -> set[str]:
    return set(record.__struct_fields__)


def test_the_record_forwards_no_pass_field_but_the_deprecated_names() -> None:
    """A name of the metrics or health result on the record, beyond its own fields, is one of the six kept a
    release; everything else is read on the pass's result."""
    public = {n for n in dir(TraceInspection) if not n.startswith("_")} - _fields(TraceInspection)
    assert public & (_fields(KernelMetrics) | _fields(HealthResult)) == set(DEPRECATED_NAMES)
    assert len(DEPRECATED_NAMES) == 6 and {"metrics", "health_result", "profile"} <= public


def test_each_pass_is_read_by_its_accessor_as_its_type(tmp_path: Path) -> None:
    report = inspect_trace(_trace(tmp_path))
    assert isinstance(report.metrics, KernelMetrics) and report.metrics is report.results[METRICS_PASS.name]
    assert isinstance(report.health_result, HealthResult) and report.health_result is report.results[HEALTH_PASS.name]
    assert isinstance(report.profile, ProfileSummary)
    assert report.metrics.mechanisms == {"A": 1} and report.metrics.kernels_checked == 2
    assert report.health_result.checks[0].check == "impossible-metrics"


@pytest.mark.parametrize("name", DEPRECATED_NAMES)
def test_a_deprecated_name_warns_and_gives_the_metrics_value(tmp_path: Path, name: str) -> None:
    report = inspect_trace(_trace(tmp_path))
    with pytest.warns(DeprecationWarning, match=rf"TraceInspection\.{name} is deprecated.*\.metrics\.{name}") as seen:
        value = getattr(report, name)
    assert value is getattr(report.metrics, name)
    assert seen[0].filename == __file__  # the warning points at the caller's line, not the record's


def test_the_deprecated_names_are_documented() -> None:
    doc = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = re.search(r"^### Deprecated names\n(.*?)^### ", doc, re.M | re.S)
    assert section is not None
    assert set(re.findall(r"`\.?(?:TraceInspection\.)?(\w+)`", section.group(1))) >= set(DEPRECATED_NAMES)
    assert "DeprecationWarning" in section.group(1)


def test_the_job_record_reads_the_passes_without_a_warning(tmp_path: Path) -> None:
    """Inspection's own totals (mechanisms, findings, launches) read each trace's metrics, never a deprecated name."""
    report = inspect_trace(_trace(tmp_path))
    job = Inspection([report, report])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert job.mechanisms == {"A": 2} and len(job.findings) == 2 * len(report.metrics.groups)
        assert [c.check for c in job.health] == [c.check for c in report.health_result.checks] * 2
        assert job.to_dict()["reports"][0] == report.to_dict()


def test_the_store_is_typed_shelves(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    store = RunInspections()
    file = file_identity(str(path))
    assert file is not None
    key = InspectionKey((str(path),), (file,), False, False)
    made = Inspection([inspect_trace(path)])
    store.keep(INSPECTION, key, made)
    assert store.find(INSPECTION, InspectionKey((str(path),), (file,), False, False)) is made  # keys by value
    assert store.find(INSPECTION, InspectionKey((str(path),), (file,), False, True)) is None  # a page's: another
    assert store.find(CONTENTS, file) is None  # another shelf, the same file
    other: Shelf[InspectionKey, Inspection] = Shelf("inspection", Inspection)
    assert store.find(other, key) is None  # two shelves are two, whatever their names
    store.release(CONTENTS)
    assert store.find(INSPECTION, key) is made
    store.release(INSPECTION)
    assert store.find(INSPECTION, key) is None


def test_a_shelf_gives_back_only_its_type() -> None:
    """A value of another type kept on a shelf (a programming error) is never handed out as the shelf's type."""
    store = RunInspections()
    numbers: Shelf[str, int] = Shelf("numbers", int)
    store.keep(numbers, "a", 1)
    store._shelves[numbers]["b"] = "not a number"
    assert store.find(numbers, "a") == 1 and store.find(numbers, "b") is None
