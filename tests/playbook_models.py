"""Each shipped playbook's loaded model as plain data, frozen in tests/data/shipped-playbooks.json.

A playbook-grammar change (fragments, a derived list) must load every shipped playbook exactly as before:
tests/playbook/test_fragments.py compares the loaded models with this frozen dump. Where a node was written (its line,
the fragment file) is left out: moving a node into a fragment moves its line. A playbook added or changed on
purpose:

    python -m tests.playbook_models --write
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FROZEN = REPO / "tests" / "data" / "shipped-playbooks.json"
WHERE = frozenset({"line", "origin", "fragments"})  # where nodes were written (files), not what they are


def plain(value: Any) -> Any:
    """Records as dicts, templates and conditions by their source, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in WHERE and f.name != "tree"
        }
    if hasattr(value, "parts") and hasattr(value, "render"):  # a Template
        return {"template": [plain(p) for p in value.parts]}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def models() -> dict[str, Any]:
    from wizard.playbook.loader import load_playbook
    from wizard.probes.registry import catalog

    probes = catalog()
    out = {}
    for path in sorted((REPO / "playbooks").glob("*.yaml")):
        pb = load_playbook(path, probes)
        data = plain(pb)
        data["path"] = path.name
        out[path.stem] = data
    return out


def frozen_text(dumped: dict[str, Any]) -> str:
    """One line per playbook (a deliberate change of one rewrites its line), keys sorted."""
    lines = [f"{json.dumps(name)}: {json.dumps(data, sort_keys=True)}" for name, data in sorted(dumped.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.playbook_models --write")
    FROZEN.write_text(frozen_text(models()), encoding="utf-8")
