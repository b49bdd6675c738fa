"""Fragments: a playbook's ``uses:`` inserts the nodes of ``fragments/ID.yaml`` from the search path, so the
health playbooks share their first nodes without copying them (docs/playbook-format.md, "Fragments")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, strict_json
from tests.playbook_models import FROZEN, models, plain
from wizard.errors import PlaybookError
from wizard.playbook.loader import load_playbook, load_playbook_text
from wizard.probes.registry import catalog

PLAYBOOKS = REPO / "playbooks"
TRACE_START = PLAYBOOKS / "fragments" / "trace-start.yaml"
USING = ("cuda-graphs", "impossible-timing", "kernels-hidden", "kernels-missing", "rank-skew")
START_NODES = ("have", "trace_path", "workload_cmd", "reprofile", "inspect")


def test_every_shipped_playbook_loads_exactly_as_frozen_before_fragments() -> None:
    """The models frozen from main before the preamble moved into a fragment (tests/playbook_models.py):
    every node, prompt, choice, target, parameter and text the same; only where a node is written moved."""
    frozen = json.loads(FROZEN.read_text(encoding="utf-8"))
    now = models()
    assert sorted(now) == sorted(frozen)
    for name in frozen:
        assert now[name] == frozen[name], f"{name}: regenerate with python -m tests.playbook_models --write"


def _inlined(name: str) -> str:
    """The playbook's text with its ``uses: trace-start`` item replaced by the fragment's node text, each
    ``$need`` written as the node its ``with`` names: what a person copying the preamble by hand writes."""
    text = (PLAYBOOKS / f"{name}.yaml").read_text(encoding="utf-8")
    use = re.search(r"^  - uses: trace-start\n    with: \{(?P<with>[^}]*)\}\n", text, re.M)
    assert use is not None, name
    given = dict(pair.split(": ") for pair in use["with"].split(", "))
    fragment = TRACE_START.read_text(encoding="utf-8").split("\nnodes:\n", 1)[1]
    for need, node in given.items():
        fragment = fragment.replace(f"${need}", node)
    return text[: use.start()] + fragment + "\n" + text[use.end() :]


@pytest.mark.parametrize("name", USING)
def test_a_fragment_loads_as_its_nodes_copied_in_by_hand(name: str) -> None:
    probes = catalog()
    used = load_playbook(PLAYBOOKS / f"{name}.yaml", probes)
    copied = load_playbook_text(_inlined(name), str(PLAYBOOKS / f"{name}.yaml"), probes)
    assert plain(used) == plain(copied)
    assert list(used.nodes)[:5] == list(START_NODES)


def test_inserted_nodes_are_placed_in_the_fragment_file() -> None:
    pb = load_playbook(PLAYBOOKS / "rank-skew.yaml", catalog())
    lines = TRACE_START.read_text(encoding="utf-8").splitlines()
    for node_id in START_NODES:
        node = pb.nodes[node_id]
        assert node.origin == str(TRACE_START)
        assert lines[node.line - 1] == f"  - id: {node_id}"
    route = pb.nodes["route"]
    assert route.origin is None
    assert (PLAYBOOKS / "rank-skew.yaml").read_text(encoding="utf-8").splitlines()[route.line - 1] == "  - id: route"


# -- problems, each at its own file's line and column ------------------------------------------------------

HEAD = "id: uses-test\ntitle: Uses\nversion: '1'\nsteps:\n  - {id: verify_profiler, title: Verify}\nnodes:\n"
TAIL = (
    "  - {id: route, kind: decision, branches: [{when: 'true', goto: done}], default: done}\n"
    "  - {id: symptom, kind: conclusion, diagnosis: s, summary: s}\n"
    "  - {id: trace_unreadable, kind: conclusion, diagnosis: u, summary: u}\n"
    "  - {id: done, kind: conclusion, diagnosis: d, summary: d}\n"
)
WITH = "{without_trace: symptom, unreadable: trace_unreadable, after_inspect: route}"


def _problems(tmp_path: Path, uses: str, fragments: dict[str, str] | None = None) -> list[str]:
    directory = tmp_path / "fragments"
    directory.mkdir(exist_ok=True)
    for name, text in (fragments or {}).items():
        (directory / f"{name}.yaml").write_text(text)
    path = tmp_path / "uses-test.yaml"
    path.write_text(HEAD + uses + TAIL)
    with pytest.raises(PlaybookError) as raised:
        load_playbook(path, catalog(), search=[tmp_path, PLAYBOOKS])
    return list(raised.value.problems)


def test_the_shipped_fragment_loads_from_a_users_playbook(tmp_path: Path) -> None:
    path = tmp_path / "uses-test.yaml"
    path.write_text(HEAD + f"  - uses: trace-start\n    with: {WITH}\n" + TAIL)
    pb = load_playbook(path, catalog())  # no search path given: warpwizard's own fragments
    assert list(pb.nodes) == [*START_NODES, "route", "symptom", "trace_unreadable", "done"]


def test_an_unknown_fragment_is_named_with_a_suggestion(tmp_path: Path) -> None:
    problems = _problems(tmp_path, f"  - uses: trace-strat\n    with: {WITH}\n")
    assert problems[0] == (
        f"{tmp_path}/uses-test.yaml:7:11: no fragment named 'trace-strat' (did you mean 'trace-start'?) in the "
        "search path's fragments/ directories; fragments: trace-start"
    )


def test_a_fragment_is_named_by_id_never_by_a_path(tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text("fragment: outside\nnodes:\n  - {id: x, kind: conclusion}\n")
    problems = _problems(tmp_path, "  - uses: ../outside\n")
    assert problems[0] == (
        f"{tmp_path}/uses-test.yaml:7:11: 'uses' names a fragment by its id (lower-case letters, digits, '-', '_'), "
        "not '../outside'"
    )


def test_needs_missing_and_unknown_are_each_one_line(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        "  - uses: trace-start\n    with: {without_trace: symptom, unreadable: trace_unreadable, then: route}\n",
    )
    assert (
        f"{tmp_path}/uses-test.yaml:7:5: fragment 'trace-start' needs 'with: {{after_inspect: NODE}}': "
        in (problems[0])
    )
    assert problems[0].endswith("the node that routes on the inspection's facts")
    assert problems[1] == (
        f"{tmp_path}/uses-test.yaml:8:66: fragment 'trace-start' needs no 'then'; "
        "it needs: without_trace, unreadable, after_inspect"
    )


def test_a_with_value_that_is_no_node_id_is_the_playbooks_one_problem(tmp_path: Path) -> None:
    """Said once, where it is written: the value is bound to nothing, so the shipped fragment is not blamed for
    an "unknown node" the user never wrote there."""
    problems = _problems(
        tmp_path,
        "  - uses: trace-start\n"
        "    with: {without_trace: [symptom], unreadable: trace_unreadable, after_inspect: route}\n",
    )
    assert problems == [
        f"{tmp_path}/uses-test.yaml:8:27: 'with: without_trace' must be a node id, not list",
        f"{tmp_path}/uses-test.yaml:10:5: node 'symptom' is unreachable from the start node 'have'",
    ]  # before: also "trace-start.yaml:30:68: unknown node '$without_trace'", in a file the user never wrote


def test_a_problem_inside_a_fragment_names_the_fragment_file(tmp_path: Path) -> None:
    broken = (
        "fragment: broken\nneeds: {then: where to go}\nnodes:\n"
        "  - id: ask\n    kind: question\n    prompt: Which?\n    next: $then\n"
        "  - id: look\n    kind: probe\n    probe: trace.inspekt\n    next: $than\n"
    )
    problems = _problems(tmp_path, "  - uses: broken\n    with: {then: look}\n", {"broken": broken})
    fragment = tmp_path / "fragments" / "broken.yaml"
    assert f"{fragment}:10:12: unknown probe 'trace.inspekt' (did you mean 'trace.inspect'?); registered: " in (
        "\n".join(problems)
    )
    assert f"{fragment}:11:11: '$than' is none of this fragment's needs ($then); declare it under 'needs'" in problems


def test_a_fragment_that_uses_itself_is_refused(tmp_path: Path) -> None:
    loop_a = "fragment: loop-a\nnodes:\n  - uses: loop-b\n"
    loop_b = "fragment: loop-b\nnodes:\n  - uses: loop-a\n"
    problems = _problems(tmp_path, "  - uses: loop-a\n", {"loop-a": loop_a, "loop-b": loop_b})
    assert f"{tmp_path}/fragments/loop-b.yaml:3:11: fragment 'loop-a' uses itself: loop-a -> loop-b -> loop-a" in (
        problems
    )


def test_fragments_nest_at_most_four_deep(tmp_path: Path) -> None:
    chain = {f"d{i}": f"fragment: d{i}\nnodes:\n  - uses: d{i + 1}\n" for i in range(5)}
    chain["d5"] = "fragment: d5\nnodes:\n  - {id: deep, kind: conclusion, diagnosis: d, summary: d}\n"
    problems = _problems(tmp_path, "  - uses: d0\n", chain)
    assert f"{tmp_path}/fragments/d3.yaml:3:11: fragments nested deeper than 4: d0 -> d1 -> d2 -> d3 -> d4" in (
        problems
    )


def test_the_fragments_bound_counts_characters(tmp_path: Path) -> None:
    """A fragment of 3 million 'é' (6 MB, 3 M characters) after one of 2 million: the bound (4 Mi characters in
    all) is said; counted in bytes, the read cut the second mid-way and loaded it cut, or failed to decode."""
    from wizard.playbook.yaml_source import MAX_YAML_CHARS

    big = "fragment: {name}\nnodes:\n  - {{id: x_{name}, kind: conclusion, diagnosis: d, summary: d}}\n# {pad}\n"
    fragments = {
        "first": big.format(name="first", pad="é" * 2_000_000),
        "second": big.format(name="second", pad="é" * 3_000_000),
    }
    problems = _problems(tmp_path, "  - uses: first\n  - uses: second\n", fragments)
    assert (
        f"{tmp_path}/fragments/second.yaml:1:1: the fragments of one playbook are at most {MAX_YAML_CHARS} "
        "characters in all" in problems
    )


def test_a_fragment_is_safe_yaml_like_a_playbook(tmp_path: Path) -> None:
    tagged = "fragment: tagged\nnodes:\n  - !!python/object:os.system {id: x}\n"
    problems = _problems(tmp_path, "  - uses: tagged\n", {"tagged": tagged})
    (refused,) = [p for p in problems if p.startswith(f"{tmp_path}/fragments/tagged.yaml:")]
    assert refused.startswith(f"{tmp_path}/fragments/tagged.yaml:3:5: ") and "python/object" in refused


def test_a_fragment_names_itself(tmp_path: Path) -> None:
    other = "fragment: other\nnodes:\n  - {id: x, kind: conclusion, diagnosis: d, summary: d}\n"
    problems = _problems(tmp_path, "  - uses: renamed\n", {"renamed": other})
    assert (
        f"{tmp_path}/fragments/renamed.yaml:1:11: a fragment names itself: 'fragment: renamed' (its file's name)"
        in (problems)
    )


# -- the commands see the inserted nodes --------------------------------------------------------------------


def test_validate_graph_explain_and_completion_see_the_inserted_nodes(run_cli: RunCli) -> None:
    checked = run_cli("validate", "rank-skew")
    assert checked.status == 0, checked.stderr
    assert f"{PLAYBOOKS / 'rank-skew.yaml'}: ok (20 nodes, 3 steps)" in checked.stdout
    graph = run_cli("graph", "rank-skew")
    assert graph.status == 0 and '  have -->|"description"| one_rank' in graph.stdout.splitlines()
    explained = run_cli("explain", "rank-skew")
    assert explained.status == 0 and "- **Probe `inspect`**" in explained.stdout
    from wizard.runs import completion_names

    assert set(START_NODES) <= set(completion_names("nodes", playbook="rank-skew"))


def test_a_plugins_playbook_uses_a_shipped_fragment(site: Path, run_cli: RunCli) -> None:
    from tests.helpers import installed

    (site / "hostile_plugin_fragments").mkdir()
    (site / "hostile_plugin_fragments" / "__init__.py").write_text("")
    (site / "hostile_plugin_fragments" / "my-health.yaml").write_text(
        HEAD.replace("uses-test", "my-health") + f"  - uses: trace-start\n    with: {WITH}\n" + TAIL
    )
    installed(site, "hostile-plugin-fragments", "[warpwizard.playbooks]\nmine = hostile_plugin_fragments\n")
    checked = run_cli("validate", "my-health")
    assert checked.status == 0, checked.stderr
    assert "my-health.yaml: ok (9 nodes, 1 step)" in checked.stdout
    plan = run_cli("run", "my-health", "--set", "have=description", "--dry-run", "--json")
    assert plan.status == 0, plan.stderr
    assert [step["node"] for step in strict_json(plan.stdout)["steps"]] == ["have", "symptom"]


def test_from_and_teach_walk_the_inserted_nodes(run_cli: RunCli, tmp_path: Path) -> None:
    answers = str(REPO / "examples" / "answers" / "cuda-graphs.yaml")
    first = run_cli("run", "cuda-graphs", "--answers", answers, "--json")
    assert first.status == 0, first.stderr
    recorded = tmp_path / "first.json"
    recorded.write_text(first.stdout)
    again = run_cli("run", "cuda-graphs", "--answers", str(recorded), "--from", "route", "--json")
    assert again.status == 0, again.stderr
    data = strict_json(again.stdout)
    inspect = next(e for e in data["entries"] if e["node"] == "inspect")
    assert inspect["reused_from"] == str(recorded)  # the fragment's probe node, reused by its id
    assert data["conclusion"]["diagnosis"] == strict_json(first.stdout)["conclusion"]["diagnosis"]
    taught = run_cli("run", "cuda-graphs", "--answers", answers, "--teach")
    assert taught.status == 0, taught.stderr
    said = " ".join((taught.stdout + taught.stderr).split())
    assert "The same first question as every warpwizard playbook, so one answers file starts any of them" in said


def test_validate_warns_where_a_comment_cuts_a_fragments_text(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "fragments").mkdir()
    (tmp_path / "fragments" / "cut.yaml").write_text(
        "fragment: cut\nnodes:\n  - id: done\n    kind: conclusion\n    diagnosis: d\n"
        "    summary: d\n    fix:\n      - Upgrade (kineto issue #325)\n"
    )
    (tmp_path / "uses-cut.yaml").write_text("id: uses-cut\ntitle: Cut\nversion: '1'\nnodes:\n  - uses: cut\n")
    checked = run_cli("--playbook-dir", str(tmp_path), "validate", "uses-cut")
    assert checked.status == 0, checked.stdout + checked.stderr
    assert (
        f"{tmp_path / 'fragments' / 'cut.yaml'}:8:31: warning: the 'fix' text ends here: ' #' starts a YAML comment"
        in checked.stdout
    )
