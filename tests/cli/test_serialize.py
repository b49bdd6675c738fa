"""The one JSON writer (wizard/serialize.py) against Python's own ``json.dumps(..., indent=...)`` over the rules
written here a second time: its C-encoder-then-re-space path must give the same bytes on every kind of value a
report holds, subclasses and the fallback to ``str`` included."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from msgspec.structs import asdict

from tests.helpers import DOCUMENTS
from wizard.serialize import clean, dumps
from wizard.trace.metrics.detectors import Finding
from wizard.trace.metrics.findings import FindingGroup, Launch, OpLink
from wizard.trace.metrics.mechanisms import Mechanism


def reference_clean(value: Any) -> Any:
    """docs/json-output.md's rules, by isinstance: non-finite floats as strings, sequences and sets as lists,
    keys as strings, anything else its ``str``."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): reference_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [reference_clean(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


@pytest.mark.parametrize("indent", [1, 2, 4, None, 0])
@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_dumps_writes_what_json_dumps_writes(document: Any, indent: int | None) -> None:
    expected = json.dumps(reference_clean(document), indent=indent, allow_nan=False)
    assert dumps(document, indent=indent) == expected
    assert clean(document) == reference_clean(document) or _nan_inside(document)


def _nan_inside(document: Any) -> bool:
    """NaN is never equal to itself; such documents are held to the bytes above only."""
    return "nan" in json.dumps(reference_clean(document), allow_nan=False).lower()


def test_a_finding_groups_launches_and_op_are_what_asdict_gave() -> None:
    """FindingGroup.to_dict reads its launches' and op's fields by name instead of ``asdict``'s deep copy."""
    reported: dict[str, float | None] = {"warps_per_sm": -3.5, "blocks_per_sm": math.inf}
    launch = Launch(1.0, 0, "7", 42, (1, 2, 3), (128, 1, 1), reported, {"warps_per_sm": 4.0, "blocks_per_sm": None})
    finding = Finding(next(iter(Mechanism)), 0, "k", 0, 1.0, (1, 2, 3), (128, 1, 1), reported, {}, "evidence")
    op = OpLink("aten::mm", "cudaLaunchKernel", "tid 1", "[[2, 3]]", None, ["a.py(1): f"])
    group = FindingGroup("A", "title", "error", "k", 1, 1.0, finding, op=op, launches=[launch, launch])
    written = group.to_dict()
    assert written["launches"] == [reference_clean(asdict(launch))] * 2
    assert written["op"] == reference_clean(asdict(op))


def _twin(record: Any) -> Any:
    """The record rebuilt as the dataclass it was (same name, fields and values, nested records twinned too)."""
    import dataclasses

    import msgspec

    if isinstance(record, msgspec.Struct):
        names = record.__struct_fields__
        cls = dataclasses.make_dataclass(type(record).__name__, names)
        return cls(*(_twin(getattr(record, name)) for name in names))
    if isinstance(record, (list, tuple)):
        return type(record)(_twin(v) for v in record)
    if isinstance(record, dict):
        return {k: _twin(v) for k, v in record.items()}
    return record


def test_record_dict_is_what_asdict_gave_the_dataclasses() -> None:
    """A profile's ``to_dict`` (``record_dict``) against ``dataclasses.asdict`` of the same records as dataclasses:
    nested records, lists, tuples, dicts and their values, in order."""
    import dataclasses

    from wizard.serialize import record_dict
    from wizard.trace.profile.summary import HealthNote, KernelGroup, OpGroup, ProfileDevice, ProfileSummary

    kernels = [KernelGroup("k", "void k()", [1, 2, 3], None, 4, 5.5, 1.0, 0.0, {"A": 2}, 32, 0, {"x": math.nan})]
    summary = ProfileSummary(
        "kineto-json", "PyTorch", 0, 8, "nccl", "NVIDIA", [ProfileDevice(0, "H100", 132, "9.0")],
        {"torch": "2.5"}, {"shapes": True}, "eager", "warning", [HealthNote("c", "warning", 3)], {"A": 1},
        [1.5, 2.5], 4, 10.0, kernels, {"groups": 0.0}, ops=[OpGroup("aten::mm", "[[2]]", 1, 2.0, 2.0, 0.0)],
    )  # fmt: skip
    assert json.dumps(summary.to_dict()) == json.dumps(dataclasses.asdict(_twin(summary)))
    point = OrderedDict(a=(1, [2, (3,)]))
    assert record_dict(OpGroup("n", None, 1, 1.0, 1.0, point)) == dataclasses.asdict(  # type: ignore[arg-type]
        _twin(OpGroup("n", None, 1, 1.0, 1.0, point))  # type: ignore[arg-type]
    )
