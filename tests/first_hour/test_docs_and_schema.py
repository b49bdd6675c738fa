"""Artefacts that must stay current: the JSON Schema, the committed graph, the explain text."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPO
from wizard.playbook.graph import dot, explain, mermaid
from wizard.playbook.loader import load_playbook
from wizard.playbook.model import ConclusionNode
from wizard.playbook.schema import SCHEMA_PATH, build_schema
from wizard.playbook.yaml_source import load_located
from wizard.probes.registry import catalog

FLAGSHIP = REPO / "playbooks" / "negative-warps-per-sm.yaml"


def _stringify_keys(value: object) -> object:
    if isinstance(value, dict):
        return {str(k).lower() if isinstance(k, bool) else str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    return value


def test_schema_file_is_current() -> None:
    assert json.loads(SCHEMA_PATH.read_text()) == build_schema(catalog()), "run: python -m wizard.playbook.schema"


def test_every_shipped_playbook_matches_the_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    for path in [*(REPO / "playbooks").glob("*.yaml"), *(REPO / "examples" / "playbooks").glob("*.yaml")]:
        jsonschema.validate(_stringify_keys(load_located(path.read_text()).data), schema)


def test_schema_rejects_a_misspelt_field() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    doc = {
        "id": "x",
        "title": "t",
        "version": 1,
        "nodes": [{"id": "a", "kind": "conclusion", "diagnosis": "d", "summry": "s"}],
    }
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError:
        return
    raise AssertionError("the schema accepted 'summry'")


def test_committed_graph_is_current() -> None:
    pb = load_playbook(FLAGSHIP, catalog())
    committed = (REPO / "docs" / "flagship-graph.md").read_text()
    assert "```mermaid\n" + mermaid(pb) + "```" in committed, "run: bash scripts/update-graph"


def test_graph_formats_and_explain() -> None:
    pb = load_playbook(FLAGSHIP, catalog())
    picture = mermaid(pb)
    assert picture.startswith("flowchart TD") and 'subgraph verify_profiler["1. Verify' in picture
    # trace.inspect's status is the health verdict (issue 45 item 4): the flagship goes on from the kernel facts
    assert 'inspected -->|"facts.inspect.impossible"| route_mechanism' in picture
    assert dot(pb).startswith('digraph "negative-warps-per-sm"')
    words = explain(pb)
    for i, step in enumerate(pb.steps, 1):
        assert f"## Step {i} of 6: {step.title}" in words
    assert "profiler-bug-grid-overflow" in words


SHIPPED = sorted((REPO / "playbooks").glob("*.yaml")) + sorted((REPO / "examples" / "playbooks").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_playbook_is_drawn_and_explained(path: Path) -> None:
    """The graph page shows every shipped playbook as it is now; each draws and explains itself whole."""
    pb = load_playbook(path, catalog())
    committed = (REPO / "docs" / "flagship-graph.md").read_text()
    assert f"## {pb.id}: {pb.title}\n" in committed, "run: bash scripts/update-graph"
    assert "```mermaid\n" + mermaid(pb) + "```" in committed, "run: bash scripts/update-graph"
    assert dot(pb).startswith(f'digraph "{pb.id}"')
    words = explain(pb)
    for i, step in enumerate(pb.steps, 1):
        assert f"## Step {i} of {len(pb.steps)}: {step.title}" in words
    assert all(n.diagnosis in words for n in pb.nodes.values() if isinstance(n, ConclusionNode))


def test_readme_exit_codes_are_the_enum() -> None:
    """The README's table, the --help epilog and the enum say the same thing."""
    import re

    from tests.conftest import run_inprocess
    from wizard.exit_status import MEANING, ExitStatus

    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("### Exit codes") :].split("\n\n")[1]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", table, re.M))
    assert rows == {str(int(s)): MEANING[s] for s in ExitStatus}
    help_text = run_inprocess("--help").stdout
    for status in ExitStatus:
        assert f"{int(status):>3}  {MEANING[status].replace('`', '')}" in help_text


# The broken-playbook catalogue: which cases the JSON Schema itself rejects (shape), and which only the
# loader can (they need the graph, the probe registry, the expression language or YAML's own rules).
SCHEMA_REJECTS = {
    "bad-node-id.yaml",  # id pattern
    "bad-param-type.yaml",  # jobs: many is not an integer
    "bad-question.yaml",  # unknown question type
    "many-problems.yaml",
    "missing-nodes.yaml",  # no title, no nodes, id pattern
    "unknown-field.yaml",
    "unknown-probe.yaml",  # probe name not in the enum
    "unknown-param.yaml",  # no such parameter for that probe
}
LOADER_ONLY = {
    "code-in-condition.yaml": "the expression language",
    "cycle.yaml": "the graph",
    "dead-end-probe.yaml": "the graph",
    "duplicate-id.yaml": "uniqueness across nodes",
    "duplicate-key.yaml": "YAML keys (JSON cannot hold a duplicate)",
    "lambda-in-template.yaml": "the expression language",
    "python-tag.yaml": "YAML tags (refused before any schema applies)",
    "select-dead-end.yaml": "the graph",
    "unknown-answer.yaml": "references",
    "unknown-fact.yaml": "the probe registry's facts",
    "unknown-target.yaml": "the graph",
    "unreachable.yaml": "the graph",
    "wrong-fact-type.yaml": "the probe registry's fact types, against the conditions' literals",
    "yaml-syntax.yaml": "YAML syntax",
}


def test_the_schema_rejects_every_shape_error_in_the_broken_catalogue() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    broken = {p.name: p for p in (REPO / "tests" / "data" / "broken").glob("*.yaml")}
    assert set(broken) == SCHEMA_REJECTS | set(LOADER_ONLY)  # every case is accounted for
    for name in sorted(SCHEMA_REJECTS):
        doc = _stringify_keys(load_located(broken[name].read_text()).data)
        assert not jsonschema.Draft202012Validator(schema).is_valid(doc), name


def test_every_parameter_type_has_its_json_schema() -> None:
    from wizard.playbook.grammar import PARAM_SCHEMAS
    from wizard.probes.base import PARAM_TYPES

    assert set(PARAM_SCHEMAS) == set(PARAM_TYPES)


def test_the_readme_s_thirty_seconds_are_the_command_s_output() -> None:
    """Every line of the README's "Thirty seconds" block is a line of the command's real output at 100 columns, in
    order, but the lines it shortens (holding "...") and the fix's two paths (absolute in a real run): the block
    once showed evidence the diagnosis box no longer prints (a newcomer's walk found it)."""
    import os
    import re
    import subprocess
    import sys

    text = (REPO / "README.md").read_text()
    block = text.split("## Thirty seconds", 1)[1].split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    command = block[0].removeprefix("$ warpwizard ").split()
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    run = subprocess.run([sys.executable, "-m", "wizard", *command], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr

    def plain(line: str) -> str:
        return re.sub(r"\(\d+\.\d s\)", "(N s)", line.rstrip())  # a step's time: the run's own

    output = [plain(line) for line in run.stdout.splitlines()]
    paths = ("│ examples/traces/grid-overflow.json", "│ them, for Perfetto, TensorBoard or HTA.")
    at = 0
    for line in block[1:]:
        if "..." in line or line.startswith(paths):
            continue
        assert plain(line) in output[at:], line
        at = output.index(plain(line), at) + 1


def test_the_readme_s_command_table_names_every_option_of_trace_inspect_and_trace_fix() -> None:
    """A newcomer's walk: the README's table left out `trace fix --split-overlaps` and `inspect --verbose`,
    `--fail-on`, `--checks`. Each option the parser has is in the table's rows for the command."""
    import argparse

    from wizard.cli.parser import build_parser

    parser = build_parser()
    rows = [line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `warpwizard trace ")]
    for command in ("inspect", "fix"):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["trace"]
        chosen = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        said = " ".join(row for row in rows if row.startswith(f"| `warpwizard trace {command} "))
        options = [o for a in chosen._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        assert options and [o for o in options if o not in said] == [], command
