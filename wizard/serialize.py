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
from collections.abc import Callable
from typing import Any

from wizard.compiled_core import compiled
from wizard.formatting import non_finite_text


def pure_clean(value: Any) -> Any:
    """Plain JSON data: non-finite floats spelled as strings, tuples and sets as lists, keys as strings (``clean``'s
    twin, where the compiled core is not: wizard/_core.c's ``clean``)."""
    kind = type(value)  # the exact built-in types first: most of a report's values, one comparison each
    if kind is str or kind is int or value is None or kind is bool:
        return value
    if kind is float:
        return value if math.isfinite(value) else non_finite_text(value)
    if kind is dict:
        return {k if type(k) is str else str(k): pure_clean(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [pure_clean(v) for v in value]
    return _clean_other(value, pure_clean)


def _clean_other(value: Any, again: Callable[[Any], Any]) -> Any:
    """``clean`` for subclasses of the built-in types and everything else (the same rules, by ``isinstance``), what
    they hold cleaned by ``again``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else non_finite_text(value)
    if isinstance(value, dict):
        return {str(k): again(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [again(v) for v in value]
    if isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _compiled_other(value: Any) -> Any:
    return _clean_other(value, clean)


_core = compiled()
_compiled_clean: Callable[[Any, Callable[[Any], Any], Callable[[float], str]], Any] | None = (
    None if _core is None else _core.clean
)


def clean(value: Any) -> Any:
    """Plain JSON data: non-finite floats spelled as strings, tuples and sets as lists, keys as strings; every
    container copied. Compiled where the core is (a report's 100,000 values, three times: 19 ms of a 101 MB
    inspection in Python), else ``pure_clean``: the same data."""
    if _compiled_clean is None:
        return pure_clean(value)
    return _compiled_clean(value, _compiled_other, non_finite_text)


def record_dict(record: Any) -> dict[str, Any]:
    """``dataclasses.asdict`` for a record that is a ``msgspec.Struct``: its fields by name, in order, the records,
    lists, tuples and dicts inside copied the same way and every other value deep-copied (CPython's
    ``_asdict_inner``, whose results the reports were written from when their records were dataclasses)."""
    return {name: _copied(getattr(record, name)) for name in record.__struct_fields__}


def _copied(value: Any) -> Any:
    from msgspec import Struct

    if isinstance(value, Struct):
        return record_dict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple: built from its fields again
        return type(value)(*[_copied(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_copied(k), _copied(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)


def dumps(data: Any, *, indent: int | None = 1) -> str:
    """``json.dumps(clean(data), indent=indent, allow_nan=False)``, byte for byte. With an indent, Python's ``json``
    takes its pure-Python encoder (a big trace report: 49 ms of 1.7 s); here its C encoder writes the document in
    one line and msgspec re-spaces it, copying every string and number as written (tests/cli/test_serialize.py)."""
    plain = clean(data)
    if indent is not None and indent < 1:  # msgspec's 0 means no whitespace at all, json's a newline per item
        return json.dumps(plain, indent=indent, allow_nan=False)
    compact = json.dumps(plain, allow_nan=False)  # ASCII: undecodable bytes stay writable
    if indent is None:
        return compact
    import msgspec  # loaded here: a command that writes no document need not pay its import

    try:
        return msgspec.json.format(compact, indent=indent)
    except msgspec.DecodeError:  # a lone surrogate (an undecodable byte kept by surrogateescape): msgspec refuses it
        return json.dumps(plain, indent=indent, allow_nan=False)
