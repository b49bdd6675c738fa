"""The playbook language's shapes, declared once.

The loader reads its allowed keys from here (and reports a misspelt one with the list), and the
JSON Schema editors use (``playbook.schema.json``) is built from the same declarations, so the two
cannot drift. The loader stays the authority on what a schema cannot say: targets, references,
reachability, templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wizard.playbook.model import QUESTION_TYPES, SEVERITIES
from wizard.probes.base import OUTCOMES, ProbeInfo

ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}
TEXT = {"type": "string"}
TARGET = {**ID, "description": "id of the node to go to"}
PLAYBOOK_ID = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"}
# How many playbooks one run may walk when conclusions continue into others (each at most once).
MAX_CHAIN = 8
# Fragments (``uses:``): how deep one may use another, and how many one playbook may insert in all.
MAX_FRAGMENT_DEPTH = 4
MAX_FRAGMENTS = 32
# A fragment's id is a file's name (ID.yaml): longer than a file system takes, the lookup itself failed (exit 70).
MAX_FRAGMENT_ID_CHARS = 200
FRAGMENT_DIR = "fragments"  # beside the playbooks of each directory of the search path
# The list ``choices: {from: health-playbooks}`` names: the playbooks on the search path that declare ``triage``
# (a question offers them by their ``offered``; a ``continue`` takes the health check's TRIAGE_ORDER first).
HEALTH_PLAYBOOKS = "health-playbooks"
# A target a fragment leaves to the playbook that uses it: ``$name``, never a node id (ids start with a-z).
NEED = {"type": "string", "pattern": "^\\$[a-z][a-z0-9_]*$", "description": "a node the using playbook names"}


@dataclass(frozen=True, slots=True)
class Field:
    """One key of a mapping in a playbook: its name, its JSON Schema, whether it must be there."""

    name: str
    schema: dict[str, Any]
    required: bool = False


def names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    return tuple(f.name for f in fields)


def _object(fields: tuple[Field, ...], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [f.name for f in fields if f.required],
        "properties": {f.name: f.schema for f in fields},
        **extra,
    }


STEP = (Field("id", ID, True), Field("title", TEXT, True), Field("explain", TEXT))
DERIVED = (
    Field(
        "from",
        {"enum": [HEALTH_PLAYBOOKS], "description": "the playbooks on the search path that declare 'triage'"},
        True,
    ),
)
TRIAGE = (
    Field("label", {**TEXT, "description": "how the triage's 'What did you see?' offers this playbook"}, True),
    Field("offered", {"type": "integer", "minimum": 1, "description": "its place in that list"}, True),
)
CHOICE = (Field("value", {}, True), Field("label", TEXT))
VALIDATE = (
    Field("pattern", {**TEXT, "description": "RE2 syntax: no backreferences or lookaround"}),
    Field("min", {"type": "number"}),
    Field("max", {"type": "number"}),
    Field("exists", {"type": "boolean"}),
)
BRANCH = (
    Field("when", {**TEXT, "description": "condition over answers., facts., status."}, True),
    Field("goto", TARGET, True),
    Field("because", {**TEXT, "description": "the condition in words, for --teach: 'the trace has no kernel'"}),
)
CONTINUE = (
    Field(
        "playbook",
        {**TEXT, "description": "the playbook to continue into: an id, or a {{ template }} naming one"},
        True,
    ),
    Field(
        "choices",
        {
            "oneOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": PLAYBOOK_ID,
                    "description": "every id it may name",
                },
                _object(DERIVED),
            ]
        },
        True,
    ),
    Field("also", {**TEXT, "description": "a {{ template }} for a list of other choices worth running afterwards"}),
)
COMMON = (
    Field("id", {**ID, "description": "snake_case id; conditions name nodes by it"}, True),
    Field("kind", {"enum": ["question", "probe", "decision", "conclusion"]}, True),
    Field("step", {**ID, "description": "the step this node belongs to (for progress and grouping)"}),
    Field("explain", {**TEXT, "description": "why this node matters; shown with --teach"}),
)
KINDS: dict[str, tuple[Field, ...]] = {
    "question": (
        Field("type", {"enum": list(QUESTION_TYPES), "default": "text"}),
        Field("prompt", {**TEXT, "description": "may contain {{ expressions }}"}, True),
        Field("help", TEXT),
        Field("default", {"description": "answer used by --defaults and offered at the prompt"}),
        Field(
            "choices",
            {
                "oneOf": [
                    {
                        "type": "array",
                        "minItems": 1,
                        "items": {"oneOf": [{"type": ["string", "number", "boolean"]}, _object(CHOICE)]},
                    },
                    _object(DERIVED),
                ]
            },
        ),
        Field("validate", _object(VALIDATE)),
        Field(
            "next",
            {
                "oneOf": [
                    TARGET,
                    {
                        "type": "object",
                        "additionalProperties": TARGET,
                        "description": "answer -> node id; '*' for any other",
                    },
                ]
            },
        ),
    ),
    "probe": (
        Field("probe", {"type": "string", "description": "a registered probe (warpwizard probes lists them)"}, True),
        Field("params", {"type": "object", "description": "values, or {{ expressions }} over answers and facts"}),
        Field("timeout", {"type": "number", "exclusiveMinimum": 0, "default": 600}),
        Field("on", {"type": "object", "additionalProperties": False, "properties": dict.fromkeys(OUTCOMES, TARGET)}),
        Field("next", TARGET),
    ),
    "decision": (
        Field("branches", {"type": "array", "minItems": 1, "items": _object(BRANCH)}, True),
        Field("default", TARGET, True),
        Field("default_because", {**TEXT, "description": "in words, why the default is taken, for --teach"}),
    ),
    "conclusion": (
        Field("diagnosis", {**TEXT, "description": "stable id of the diagnosis, for scripts"}, True),
        Field("severity", {"enum": list(SEVERITIES), "default": "info"}),
        Field("summary", TEXT, True),
        Field("evidence", {"type": "array", "items": TEXT}),
        Field("fix", {"type": "array", "items": TEXT}),
        Field("links", {"type": "array", "items": TEXT}),
        Field(
            "continue",
            _object(
                CONTINUE, description="after this conclusion, walk another playbook with the same answers and facts"
            ),
        ),
    ),
}
USES = (
    Field(
        "uses",
        {**PLAYBOOK_ID, "description": "a fragment on the search path (fragments/ID.yaml): its nodes, inserted here"},
        True,
    ),
    Field(
        "with",
        {
            "type": "object",
            "additionalProperties": TARGET,
            "description": "each of the fragment's needs -> the node of this playbook it goes to",
        },
    ),
)
FRAGMENT = (
    Field("fragment", {**PLAYBOOK_ID, "description": "its id: the file's name without .yaml"}, True),
    Field("description", TEXT),
    Field(
        "needs",
        {
            "type": "object",
            "additionalProperties": TEXT,
            "description": "name -> what it is: the nodes a using playbook names in 'with', written $name here",
        },
    ),
    Field("nodes", {"type": "array", "minItems": 1}, True),
)
TOP = (
    Field("id", PLAYBOOK_ID, True),
    Field("title", TEXT, True),
    Field("description", TEXT),
    Field("version", {"type": ["string", "number"]}, True),
    Field(
        "triage",
        _object(
            TRIAGE, description="a health playbook: how the triage offers it ('choices: {from: health-playbooks}')"
        ),
    ),
    Field("start", TARGET),
    Field("steps", {"type": "array", "items": _object(STEP)}),
    Field("nodes", {"type": "array", "minItems": 1}, True),
)


# A probe parameter's type as JSON Schema; any parameter may also be a {{ template }} string.
PARAM_SCHEMAS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "path": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list[str]": {"type": "array", "items": {"type": "string"}},
    "paths": {"type": ["string", "array"], "items": {"type": "string"}},
}
_TEMPLATE = {"type": "string", "pattern": "\\{\\{"}


def _params_schema(info: ProbeInfo) -> dict[str, Any]:
    """A probe's parameters, and (as an annotation editors show) the facts its conditions may read."""
    return {
        "if": {"properties": {"probe": {"const": info.name}}},
        "then": {
            "x-facts": {f.name: {"type": f.type, "description": f.help} for f in info.facts},
            "properties": {
                "params": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": [p.name for p in info.params if p.required],
                    "properties": {p.name: {"anyOf": [PARAM_SCHEMAS[p.type], _TEMPLATE]} for p in info.params},
                }
            },
        },
    }


def node_schema(kind: str, probes: Mapping[str, ProbeInfo]) -> dict[str, Any]:
    fields = tuple(f for f in COMMON if f.name != "kind") + KINDS[kind]
    schema = _object(fields)
    schema["required"] = ["id", "kind", *[f.name for f in KINDS[kind] if f.required]]
    schema["properties"]["kind"] = {"const": kind}
    if kind == "probe":
        schema["properties"]["probe"] = {**schema["properties"]["probe"], "enum": sorted(probes)}
        schema["allOf"] = [_params_schema(probes[name]) for name in sorted(probes)]
    return schema


def json_schema(probes: Mapping[str, ProbeInfo]) -> dict[str, Any]:
    schema = _object(TOP)
    schema["properties"]["nodes"] = {
        "type": "array",
        "minItems": 1,
        "items": {"oneOf": [*(node_schema(kind, probes) for kind in KINDS), _object(USES)]},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://warpwizard.dev/schema/playbook.schema.json",
        "title": "warpwizard playbook",
        **schema,
    }
