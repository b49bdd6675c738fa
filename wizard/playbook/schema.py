"""The playbook JSON Schema, shipped as ``playbook.schema.json`` for editors.

The YAML language server completes and checks a playbook that starts with
``# yaml-language-server: $schema=<path or URL of playbook.schema.json>``. The loader
remains the authority (it also checks targets, references and the graph); the schema
catches shape errors as you type. Regenerate with ``python -m wizard.playbook.schema``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.playbook.grammar import json_schema
from wizard.probes.base import ProbeInfo

SCHEMA_PATH = Path(__file__).with_name("playbook.schema.json")


def build_schema(probes: Mapping[str, ProbeInfo]) -> dict[str, Any]:
    """The JSON Schema, from the grammar the loader checks against (one declaration of each shape)."""
    return json_schema(probes)


def main() -> None:
    from wizard.outputs import write_text
    from wizard.probes.registry import catalog

    write_text(SCHEMA_PATH, json.dumps(build_schema(catalog()), indent=2) + "\n", force=True)


if __name__ == "__main__":
    main()
