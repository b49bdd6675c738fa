"""The playbook JSON Schema, shipped as ``playbook.schema.json`` for editors.

The YAML language server completes and checks a playbook that starts with
``# yaml-language-server: $schema=<path or URL of playbook.schema.json>``. The loader
remains the authority (it also checks targets, references and the graph); the schema
catches shape errors as you type. Regenerate with ``python -m wizard.playbook.schema``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wizard.playbook.model import QUESTION_TYPES, SEVERITIES
from wizard.probes.base import OUTCOMES

SCHEMA_PATH = Path(__file__).with_name("playbook.schema.json")
_ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}
_TEXT = {"type": "string"}


def build_schema(probe_names: list[str]) -> dict[str, Any]:
    common = {
        "id": {**_ID, "description": "snake_case id; conditions name nodes by it"},
        "step": {**_ID, "description": "the step this node belongs to (for progress and grouping)"},
        "explain": {**_TEXT, "description": "why this node matters; shown with --teach"},
    }
    target = {**_ID, "description": "id of the node to go to"}
    question = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "kind", "prompt"],
        "properties": {
            **common,
            "kind": {"const": "question"},
            "type": {"enum": list(QUESTION_TYPES), "default": "text"},
            "prompt": {**_TEXT, "description": "may contain {{ expressions }}"},
            "help": _TEXT,
            "default": {"description": "answer used by --defaults and offered at the prompt"},
            "choices": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "oneOf": [
                        {"type": ["string", "number", "boolean"]},
                        {
                            "type": "object",
                            "required": ["value"],
                            "additionalProperties": False,
                            "properties": {"value": {}, "label": _TEXT},
                        },
                    ]
                },
            },
            "validate": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "pattern": _TEXT,
                    "min": {"type": "number"},
                    "max": {"type": "number"},
                    "exists": {"type": "boolean"},
                },
            },
            "next": {
                "oneOf": [
                    target,
                    {
                        "type": "object",
                        "additionalProperties": target,
                        "description": "answer value -> node id; '*' for any other",
                    },
                ]
            },
        },
    }
    probe = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "kind", "probe"],
        "properties": {
            **common,
            "kind": {"const": "probe"},
            "probe": {"enum": probe_names, "description": "a registered probe (warpwizard probes lists them)"},
            "params": {"type": "object", "description": "values, or {{ expressions }} over answers and facts"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 600},
            "on": {"type": "object", "additionalProperties": False, "properties": {o: target for o in OUTCOMES}},
            "next": target,
        },
    }
    decision = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "kind", "branches", "default"],
        "properties": {
            **common,
            "kind": {"const": "decision"},
            "branches": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["when", "goto"],
                    "additionalProperties": False,
                    "properties": {
                        "when": {**_TEXT, "description": "condition over answers., facts., status."},
                        "goto": target,
                    },
                },
            },
            "default": target,
        },
    }
    conclusion = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "kind", "diagnosis", "summary"],
        "properties": {
            **common,
            "kind": {"const": "conclusion"},
            "diagnosis": {**_TEXT, "description": "stable id of the diagnosis, for scripts"},
            "severity": {"enum": list(SEVERITIES), "default": "info"},
            "summary": _TEXT,
            "evidence": {"type": "array", "items": _TEXT},
            "fix": {"type": "array", "items": _TEXT},
            "links": {"type": "array", "items": _TEXT},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://warpwizard.dev/schema/playbook.schema.json",
        "title": "warpwizard playbook",
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "title", "version", "nodes"],
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"},
            "title": _TEXT,
            "description": _TEXT,
            "version": {"type": ["string", "number"]},
            "start": target,
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "title"],
                    "additionalProperties": False,
                    "properties": {"id": _ID, "title": _TEXT, "explain": _TEXT},
                },
            },
            "nodes": {"type": "array", "minItems": 1, "items": {"oneOf": [question, probe, decision, conclusion]}},
        },
    }


def main() -> None:
    from wizard.outputs import write_text
    from wizard.probes.registry import catalog

    write_text(SCHEMA_PATH, json.dumps(build_schema(sorted(catalog())), indent=2) + "\n", force=True)


if __name__ == "__main__":
    main()
