"""The one JSON writer: every document warpwizard writes (transcript, trace report, compare,
``env --json``) goes through ``dumps``.

JSON has no infinity and no NaN. Python's ``json`` writes them as the bare tokens ``Infinity``
and ``NaN`` by default, which jq, JavaScript and every strict parser reject: the very bug (C')
warpwizard diagnoses in profiler traces. Here non-finite numbers become the strings ``"inf"``,
``"-inf"`` and ``"nan"`` (docs/json-output.md), and ``allow_nan=False`` makes any that slip
through an error instead of invalid output.
"""

from __future__ import annotations

import json
import math
from typing import Any

from wizard.formatting import non_finite_text


def clean(value: Any) -> Any:
    """Plain JSON data: non-finite floats spelled as strings, tuples and sets as lists, keys as strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else non_finite_text(value)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [clean(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def dumps(data: Any, *, indent: int | None = 1) -> str:
    return json.dumps(clean(data), indent=indent, allow_nan=False)  # ASCII: undecodable bytes stay writable
