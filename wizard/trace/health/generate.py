"""docs/health.schema.json and the table of checks in docs/health.md, written from the checks' declarations
(``CHECKS``: each module's ``CHECK`` in wizard/trace/health/checks/): a check is declared once, and the docs
cannot drift from it.

``python -m wizard.trace.health.generate`` rewrites both from a checkout; tests/health/test_check_declarations.py fails
when either is stale (``stale()`` names them).
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from wizard.compat import NotRequired
from wizard.serialize import dumps
from wizard.trace.health.checks import CHECK_IDS, CHECKS
from wizard.trace.health.spec import EXAMPLES, STATUSES, Bounds, CheckSpec

DOCS = Path(__file__).resolve().parents[3] / "docs"
SCHEMA = DOCS / "health.schema.json"
PAGE = DOCS / "health.md"
TABLE_START = (
    "<!-- The table is generated from the checks' declarations (each CHECK in wizard/trace/health/checks/) by "
    "`python -m wizard.trace.health.generate` (or `bash scripts/generate`): edit the declarations, not the table. -->"
)
TABLE_END = "<!-- end of the generated table -->"
_SCALARS = {int: "integer", float: "number", bool: "boolean", str: "string", type(None): "null"}


def json_schema(hint: Any) -> dict[str, Any]:
    """A detail's type (``Annotated[type, "meaning", Bounds(...)]``) as JSON Schema."""
    if typing.get_origin(hint) is Annotated:
        base, meaning, *extras = typing.get_args(hint)
        out = {**json_schema(base), "description": str(meaning)}
        for bounds in (e for e in extras if isinstance(e, Bounds)):
            named = {
                "minimum": bounds.minimum,
                "maximum": bounds.maximum,
                "maxItems": bounds.max_items,
                "maxProperties": bounds.max_properties,
            }
            out.update({k: v for k, v in named.items() if v is not None})
        return out
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, types.UnionType) or origin is typing.Union:
        if all(a in _SCALARS for a in args):
            return {"type": [_SCALARS[a] for a in args]}
        return {"anyOf": [json_schema(a) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": json_schema(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": json_schema(args[1])}
    if typing.is_typeddict(hint):
        return object_schema(hint)
    raise TypeError(f"a check's detail is int, float, bool, str, None, a Literal, list, dict or a TypedDict: {hint!r}")


def object_schema(declaration: type) -> dict[str, Any]:
    """A TypedDict of details as an object: every field required but those declared ``NotRequired``."""
    hints = typing.get_type_hints(declaration, include_extras=True)
    fields = {n: typing.get_args(h)[0] if typing.get_origin(h) is NotRequired else h for n, h in hints.items()}
    required = [n for n, h in hints.items() if typing.get_origin(h) is not NotRequired]
    return {"type": "object", "required": required, "properties": {n: json_schema(h) for n, h in fields.items()}}


def _check_rule(spec: CheckSpec) -> dict[str, Any]:
    details = object_schema(spec.details)
    return {
        "if": {"properties": {"check": {"const": spec.id}}},
        "then": {"required": details["required"], "properties": details["properties"]},
    }


def schema() -> dict[str, Any]:
    """docs/health.schema.json: a report's health verdicts, each check's details as declared."""
    health = {"type": "array", "items": {"$ref": "#/$defs/check"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://warpwizard.dev/schemas/health.schema.json",
        "title": "warpwizard trace health check (in warpwizard.trace-report/2: reports[].health and health)",
        "type": "object",
        "required": ["health", "health_status", "reports"],
        "properties": {
            "health_status": {"$ref": "#/$defs/status"},
            "health": health,
            "reports": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["health", "health_status", "collectives"],
                    "properties": {
                        "health": health,
                        "health_status": {"$ref": "#/$defs/status"},
                        "collectives": _collectives_schema(),
                    },
                },
            },
        },
        "$defs": {"status": {"enum": list(STATUSES)}, "check": _check_schema(), "example": _example_schema()},
    }


def _collectives_schema() -> dict[str, Any]:
    """Each report's rank and its collectives' start times by name, kept apart from the verdicts they feed."""
    return {
        "type": "object",
        "required": ["rank", "starts"],
        "properties": {
            "rank": {"type": ["integer", "null"]},
            "starts": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"}}},
            "world_size": {"type": ["integer", "null"]},
            "backend": {"type": ["string", "null"]},
        },
    }


def _check_schema() -> dict[str, Any]:
    """One verdict: the fields every check has, then each check's own details by its id (one rule per check)."""
    nullable = {"type": ["string", "null"]}
    return {
        "type": "object",
        "required": ["check", "status", "count", "playbook", "summary", "meaning", "reason", "examples"],
        "properties": {
            "check": {"enum": list(CHECK_IDS)},
            "status": {"$ref": "#/$defs/status"},
            "count": {"type": "integer", "minimum": 0},
            "playbook": nullable,
            "summary": {"type": "string"},
            "meaning": {"type": "string"},
            "reason": nullable,
            "examples": {"type": "array", "maxItems": EXAMPLES, "items": {"$ref": "#/$defs/example"}},
        },
        "allOf": [
            *(_check_rule(spec) for spec in CHECKS),
            {
                "if": {"properties": {"status": {"const": "not_applicable"}}},
                "then": {"properties": {"reason": {"type": "string"}, "count": {"const": 0}}},
            },
        ],
    }


def _example_schema() -> dict[str, Any]:
    """One example event a verdict points at, so a reader can find it in the trace."""
    example_fields = ("name", "ts", "dur", "stream", "device", "correlation", "pid", "tid", "detail")
    return {
        "type": "object",
        "required": list(example_fields),
        "properties": {
            "name": {"type": "string"},
            "ts": {"type": "number"},
            "dur": {"type": ["number", "null"]},
            "device": {"type": ["integer", "null"]},
            "correlation": {"type": ["integer", "null"]},
            "detail": {"type": "string"},
        },
    }


def schema_text() -> str:
    return dumps(schema(), indent=2) + "\n"


def table() -> str:
    """The table of checks in docs/health.md: each check's declared row."""
    rows = [
        "| id | counts (`count`) and its other fields | status when `count` > 0, and when not applicable | playbook |",
        "|---|---|---|---|",
    ]
    for spec in CHECKS:
        name = f"`{spec.id}`" + (" (the job's)" if spec.scope == "job" else "")
        playbook = f"`{spec.playbook}`" if spec.playbook else "—"
        rows.append(f"| {name} | {spec.counts} | {spec.status_rule} | {playbook} |")
    return "\n".join(rows)


def page_text(page: str) -> str:
    """docs/health.md with the table between its markers replaced by the declarations' (the rest as written)."""
    if page.count(TABLE_START) != 1 or page.count(TABLE_END) != 1:
        raise ValueError(f"{PAGE}: the generated table's markers are missing or repeated")
    head, rest = page.split(TABLE_START)
    _, tail = rest.split(TABLE_END)
    return f"{head}{TABLE_START}\n{table()}\n{TABLE_END}{tail}"


def wanted() -> dict[Path, str]:
    """Each generated file's text, from the declarations."""
    return {SCHEMA: schema_text(), PAGE: page_text(PAGE.read_text(encoding="utf-8"))}


def stale() -> list[Path]:
    """The generated files that differ from what the declarations give."""
    return [path for path, text in wanted().items() if path.read_text(encoding="utf-8") != text]


def main() -> None:
    from wizard.outputs import write_text

    for path, text in wanted().items():
        if path.read_text(encoding="utf-8") != text:
            write_text(path, text, force=True, what="generated doc")


if __name__ == "__main__":
    main()
