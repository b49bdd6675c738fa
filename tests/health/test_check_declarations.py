"""A health check declared once (issue 34): ``CHECKS`` (each module of wizard/trace/health/checks/, found by its
registry) is what the runner runs, what the generated docs say, what trace.inspect's facts are read from and what
the reports draw; each playbook a check names is shipped and reached by the triage.
"""

from __future__ import annotations

import json
import pkgutil
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import msgspec
import pytest

from tests.conftest import REPO, TRACES, RunCli, needs_shared, strict_json
from tests.frozen_facts import FROZEN, TARGETS, health_facts_of
from tests.helpers import inspect_json
from wizard.probes.base import fact_matches, type_text
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health import generate
from wizard.trace.health.checks import CHECK_FACTS, CHECKS, SPEC, TRIAGE_ORDER, check_facts
from wizard.trace.health.spec import CheckSpec, HealthCheck

PLAYBOOKS = REPO / "playbooks"


def declared(spec: CheckSpec) -> tuple[set[str], set[str]]:
    """A check's details as declared: the fields every verdict has, and every field it may have."""
    hints = typing.get_type_hints(spec.details, include_extras=True)
    return {n for n, h in hints.items() if typing.get_origin(h) is not NotRequired}, set(hints)


COMMON = {"check", "status", "count", "playbook", "summary", "meaning", "reason", "examples"}


def assert_as_declared(check: dict[str, Any]) -> None:
    required, every = declared(SPEC[check["check"]])
    fields = set(check) - COMMON
    assert required <= fields <= every, (check["check"], sorted(fields ^ every))


# -- the facts: exactly what the code before the declarations gave --------------------------------


@needs_shared
@pytest.mark.parametrize("target", TARGETS)
def test_the_facts_of_real_traces_are_the_frozen_ones(target: str) -> None:
    """tests/data/health_facts_frozen.json was written by ``python -m tests.frozen_facts`` with the code before
    the checks were declared once (main at af1b766): every fact, its value and its JSON type, unchanged. A check
    declared since is left out of it (its facts, its line of ``health_checks``: tests/frozen_facts.py
    FROZEN_CHECKS); a change that means to change what the frozen checks or the triage say rewrites the file with
    that command, and says so."""
    if not (TRACES / target).exists():
        pytest.skip(f"{target} is not among the shared traces")
    frozen = json.loads(FROZEN.read_text())[target]
    now = json.loads(json.dumps(health_facts_of(target), allow_nan=False))
    assert now == frozen
    assert {k: type(v).__name__ for k, v in now.items()} == {k: type(v).__name__ for k, v in frozen.items()}


def test_the_frozen_facts_hold_no_piece_of_a_trace() -> None:
    """Counts, ids and the tool's own words only: every fact that can quote a trace is a digest."""
    from tests.frozen_facts import VOCABULARY

    for facts in json.loads(FROZEN.read_text()).values():
        for name, value in facts.items():
            if name not in VOCABULARY and isinstance(value, str):
                assert value.startswith("sha256:"), name


@needs_shared
def test_the_declared_facts_have_their_declared_types_on_real_traces(tmp_path: Path) -> None:
    from wizard.environment import Environment
    from wizard.probes.trace_inspect import TraceInspectProbe

    types = {f.name: f.type for f in TraceInspectProbe.facts}
    for target in ("b200-eager.json.gz", "dlrm-2ranks", "cpu-only-rank34.json.gz"):
        facts = TraceInspectProbe().run(Environment.of(report_dir=tmp_path), {"paths": str(TRACES / target)}).facts
        for fact in CHECK_FACTS:
            assert fact_matches(types[fact.name], facts[fact.name]), (target, fact.name, facts[fact.name])


def test_every_check_fact_is_one_of_the_probes_facts_with_its_declared_type() -> None:
    from wizard.probes.trace_inspect import TraceInspectProbe

    facts = {f.name: (f.type, f.help) for f in TraceInspectProbe.facts}
    assert len(facts) == len(TraceInspectProbe.facts)  # no fact declared twice
    for fact in CHECK_FACTS:
        assert facts[fact.name] == (type_text(fact.type), fact.meaning)


def test_each_fact_reads_a_detail_its_check_declares() -> None:
    """A fact naming a detail its check does not have would read its default on every trace, silently."""
    for check in CHECKS:
        _, every = declared(check)
        for fact in check.facts:
            assert fact.detail in every | {"count", "status"}, (check.id, fact.name, fact.detail)
            if fact.how == "worst":  # the last of the detail's declared words: a Literal
                hint = typing.get_type_hints(check.details, include_extras=True)[fact.detail]
                assert typing.get_origin(typing.get_args(hint)[0]) is Literal, (check.id, fact.name)


def test_a_facts_sum_over_ranks_follows_its_declaration() -> None:
    """Two ranks' verdicts: totals add, ``first`` is the first rank's, ``max``/``largest`` the extreme one,
    ``worst`` the last declared word any rank has, ``none`` false once one rank counts."""

    def verdict(check: str, count: int, **details: Any) -> HealthCheck:
        return HealthCheck(check, "info", count, SPEC[check].playbook, "", "", details=details)

    trace_checks = [
        verdict("kernels-missing", 3, launches=10, apis={"cudaLaunchKernel": 10}),
        verdict("kernels-missing", 4, launches=20, apis={"cuLaunchKernelEx": 2, "cudaLaunchKernel": 18}),
        verdict("graph-launches", 1, mode="mixed"),
        verdict("graph-launches", 0, mode="eager"),
        verdict("clock-skew", 0, min_us=-2.0, trend="growing"),
        verdict("clock-skew", 0, min_us=-9.0, trend="constant"),
        verdict("stacks-missing", 0),
        verdict("stacks-missing", 7),
        verdict("profiler-overhead", 1, share=0.05, drift=0.2),
        verdict("profiler-overhead", 1, share=0.15, drift=-0.3),
        verdict("summary-table", 0, table_self_us=1.5, over_wall_clock=False),
        verdict("summary-table", 0, table_self_us=2.0, over_wall_clock=True),
    ]
    job = [verdict("rank-skew", 5, last_by_rank={"0": 2, "1": 3, "2": 3}, max_us=9.0)]
    facts = check_facts(trace_checks, job)
    assert {
        k: facts[k]
        for k in (
            "missing_kernels", "launch_calls", "launch_apis", "graph_mode", "launch_offset_min_us",
            "launch_offset_trend", "python_stacks", "overhead_share", "step_drift", "summary_self_us",
            "summary_over_wall_clock", "rank_skew_collectives", "rank_skew_max_us", "rank_skew_floor_us",
            "rank_skew_status", "straggler_rank", "graph_unrecorded",
        )
    } == {
        "missing_kernels": 7, "launch_calls": 30, "launch_apis": ["cuLaunchKernelEx", "cudaLaunchKernel"],
        "graph_mode": "mixed", "launch_offset_min_us": -2.0, "launch_offset_trend": "growing",
        "python_stacks": False, "overhead_share": 0.15, "step_drift": -0.3, "summary_self_us": 3.5,
        "summary_over_wall_clock": True, "rank_skew_collectives": 5, "rank_skew_max_us": 9.0,
        "rank_skew_floor_us": 100.0, "rank_skew_status": "info", "straggler_rank": 1, "graph_unrecorded": 0,
    }  # fmt: skip
    none = check_facts([], [])
    assert (none["graph_mode"], none["python_stacks"], none["rank_skew_status"], none["summary_self_us"]) == (
        "eager",
        True,
        "not_applicable",
        0,
    )
    assert none["rank_skew_floor_us"] == 100.0 and none["straggler_rank"] is None and none["launch_apis"] == []


# -- the runner: one function per declared per-trace check, no other table -------------------------


def test_the_registry_names_every_module_of_its_package() -> None:
    """The registry imports its checks by name (wizard/trace/health/checks/__init__.py, _package_modules), so the
    import rules see each; the list is the package's files, read here by pkgutil: a check added without its name
    there, or a name left after its file went, fails here."""
    from wizard.trace.health import checks

    files = sorted(info.name for info in pkgutil.iter_modules(checks.__path__) if not info.name.startswith("_"))
    assert [name for name, _ in checks._package_modules()] == files
    assert sorted(spec.id.replace("-", "_") for spec in CHECKS) == files


def test_each_per_trace_check_has_its_function_and_only_those_do() -> None:
    from wizard.trace.health.checks import RUNS

    assert sorted(RUNS) == sorted(c.id for c in CHECKS if c.scope == "trace")


def _module(name: str, **attributes: Any) -> tuple[str, types.ModuleType]:
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return name, module


def _declaring(check_id: str, order: int, **changes: Any) -> CheckSpec:
    return msgspec.structs.replace(SPEC["stacks-missing"], id=check_id, order=order, **changes)


def _run(tables: Any) -> HealthCheck:  # a check asks for its inputs by name (the registry's contract)
    raise AssertionError("never run")


def _run_job(reports: Any) -> HealthCheck:
    raise AssertionError("never run")


def test_a_module_that_breaks_the_checks_contract_is_refused_by_name() -> None:
    """The registry finds the modules of wizard/trace/health/checks/ itself: each is held to the contract, and a
    broken one names its file and what it lacks (``collect`` is what the package's own modules go through)."""
    from wizard.trace.health.checks import ContractError, collect

    where = "wizard/trace/health/checks/gpu_idle.py"
    refused = {
        "declares no CHECK (a CheckSpec)": [_module("gpu_idle", run=_run)],
        "declares 'gpu-busy'; its module is named gpu_busy.py": [_module("gpu_idle", CHECK=_declaring("gpu-busy", 5))],
        "a per-trace check without run(tables)": [_module("gpu_idle", CHECK=_declaring("gpu-idle", 5))],
        "a job's check without run_job(reports)": [
            _module("gpu_idle", CHECK=_declaring("gpu-idle", 5, scope="job"), run=_run)
        ],
        "a job's check with run(tables), which never runs": [
            _module("gpu_idle", CHECK=_declaring("gpu-idle", 5, scope="job"), run=_run, run_job=_run_job)
        ],
        "a per-trace check with run_job(reports), which never runs": [
            _module("gpu_idle", CHECK=_declaring("gpu-idle", 5), run=_run, run_job=_run_job)
        ],
        "names playbook 'kernels-missing' without a triage_rank": [
            _module("gpu_idle", CHECK=_declaring("gpu-idle", 5, playbook="kernels-missing"), run=_run)
        ],
        "a triage_rank without a playbook to continue into": [
            _module("gpu_idle", CHECK=_declaring("gpu-idle", 5, triage_rank=15), run=_run)
        ],
    }
    for message, modules in refused.items():
        with pytest.raises(ContractError) as raised:
            collect(modules)
        assert str(raised.value) == f"{where}: {message}"
    with pytest.raises(ContractError) as twice:
        collect(
            [_module("a_b", CHECK=_declaring("a-b", 5), run=_run), _module("c", CHECK=_declaring("c", 5), run=_run)]
        )
    assert str(twice.value) == "c and a-b both declare order=5"
    ranked = {"run": _run}
    with pytest.raises(ContractError) as tied:
        collect([_module("a", CHECK=_declaring("a", 5, playbook="x", triage_rank=15), **ranked),
                 _module("b", CHECK=_declaring("b", 6, playbook="y", triage_rank=15), **ranked)])  # fmt: skip
    assert str(tied.value) == (
        "b and a both declare triage_rank=15 for two playbooks (y, x): the triage could not say which comes first"
    )
    with pytest.raises(ContractError) as split:
        collect([_module("a", CHECK=_declaring("a", 5, playbook="x", triage_rank=15), **ranked),
                 _module("b", CHECK=_declaring("b", 6, playbook="x", triage_rank=25), **ranked)])  # fmt: skip
    assert str(split.value) == "b and a continue into x at two ranks (25, 15): a playbook has one place in the triage"
    checks, runs, job_runs = collect(
        [
            _module("late", CHECK=_declaring("late", 20), run=_run),
            _module("early", CHECK=_declaring("early", 10), run=_run),
            _module("job", CHECK=_declaring("job", 30, scope="job"), run_job=_run_job),
        ]
    )
    assert [c.id for c in checks] == ["early", "late", "job"]  # by order, not by the modules' names or their finding
    assert {i: r.function for i, r in runs.items()} == {"late": _run, "early": _run}
    assert {i: r.function for i, r in job_runs.items()} == {"job": _run_job}


def test_a_job_check_runs_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """job_health runs each selected job's check by its module's run_job (one declared after rank-skew ran too,
    where rank-skew's wiring was written into job_health), registered the way every check is (``collect``)."""
    from wizard.inspect_options import InspectOptions
    from wizard.trace.health import checker, checks

    seen: list[int] = []

    def spread(reports: Any) -> HealthCheck:
        seen.append(len(reports))
        return HealthCheck("rank-spread", "info", len(reports), None, "looked", "")

    found, _, job_runs = checks.collect(
        [_module("rank_spread", CHECK=_declaring("rank-spread", 130, scope="job"), run_job=spread)]
    )
    monkeypatch.setattr(checks, "CHECKS", (*CHECKS, *found))
    monkeypatch.setattr(checks, "JOB_RUNS", {**checks.JOB_RUNS, **job_runs})
    options = InspectOptions(checks=("rank-spread",))
    assert [(c.check, c.count) for c in checker.job_health([object(), object()], options)] == [("rank-spread", 2)]
    assert seen == [2]
    both = checker.job_health([], InspectOptions())
    assert [c.check for c in both] == ["ranks-complete", "rank-skew", "rank-spread"]
    assert both[0].status == "not_applicable"


def test_the_triage_order_is_derived_from_the_checks_triage_ranks() -> None:
    """Missing data first, because every other number depends on it; the kernel metrics last: the order the
    triage had as a hand-written list before the checks declared it (a playbook added since goes where its
    checks' rank puts it, between these), and each playbook at its most urgent check's rank."""
    before = (
        "kernels-missing",
        "impossible-timing",
        "cuda-graphs",
        "kernels-hidden",
        "rank-skew",
        "summary-table",
        "negative-warps-per-sm",
    )
    assert tuple(p for p in TRIAGE_ORDER if p in before) == before
    rank = {p: min(c.triage_rank or 0 for c in CHECKS if c.playbook == p) for p in TRIAGE_ORDER}
    assert [rank[p] for p in TRIAGE_ORDER] == sorted(rank.values())
    assert set(TRIAGE_ORDER) == {c.playbook for c in CHECKS if c.playbook is not None}


def test_each_checks_own_test_module_names_a_declared_check() -> None:
    """tests/health/test_<module>_check.py holds a check's unit tests and its second computation, so the shared oracle
    (tests/health_oracle.py) leaves that check to it: a file named for no check would leave nothing checked, and
    one without a test of its second computation (a test named ``test_..._second_computation...``) would let the
    oracle skip a check nothing else computes."""
    from tests import health_oracle

    for check_id, path in health_oracle.own_test_modules().items():
        assert check_id in SPEC, f"{path.name}: no check {check_id!r} is declared"
        assert own_test_module_problems(path.read_text(encoding="utf-8"), check_id) == [], path.name


def own_test_module_problems(text: str, check_id: str) -> list[str]:
    """What a check's own test module lacks: a test of its second computation, and the check's id."""
    import ast

    names = [n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)]
    problems = []
    if not any(n.startswith("test_") and "second_computation" in n for n in names):
        problems.append("no test_..._second_computation_... function")
    if f'"{check_id}"' not in text:
        problems.append(f"never names {check_id!r}")
    return problems


def test_an_empty_or_bare_own_test_module_is_refused() -> None:
    """The guard above on modules that would have dropped a check from the oracle: empty, and a test of no second
    computation (found by a review: touching tests/health/test_durations_check.py dropped durations from the oracle)."""
    assert own_test_module_problems("", "durations") == [
        "no test_..._second_computation_... function",
        "never names 'durations'",
    ]
    bare = 'CHECK = "durations"\n\ndef test_it_runs() -> None:\n    pass\n'
    assert own_test_module_problems(bare, "durations") == ["no test_..._second_computation_... function"]
    whole = bare + "\n\ndef test_it_agrees_with_a_second_computation_on_the_shared_traces() -> None:\n    pass\n"
    assert own_test_module_problems(whole, "durations") == []


def test_loading_every_checks_declaration_imports_no_numpy() -> None:
    """The CLI, the probes' facts and the docs read the declarations; numpy comes with a check's function only."""
    import subprocess
    import sys

    code = "import sys, wizard.trace.health.checks as c; assert c.CHECKS; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert done.stdout.strip() == "False"


# -- the generated docs: current, and stale the moment a declaration changes -------------------------


def test_the_schema_and_the_table_are_generated_from_the_declarations() -> None:
    assert generate.SCHEMA.read_text(encoding="utf-8") == generate.schema_text(), (
        "run: python -m wizard.trace.health.generate"
    )
    page = generate.PAGE.read_text(encoding="utf-8")
    assert generate.page_text(page) == page, "run: python -m wizard.trace.health.generate"
    assert generate.stale() == []


def test_a_changed_declaration_makes_the_docs_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = tuple(
        msgspec.structs.replace(c, status_rule="`error` always") if c.id == "durations" else c for c in CHECKS
    )
    monkeypatch.setattr(generate, "CHECKS", changed)
    page = generate.PAGE.read_text(encoding="utf-8")
    assert generate.page_text(page) != page
    row = (
        "| `durations` | GPU events with `dur < 0`; `zero` (kernels with `dur == 0`), `gpu_events` | `error` always | "
        "`impossible-timing` |"
    )
    assert row in generate.page_text(page).splitlines()
    assert generate.stale() == [generate.PAGE]


class Wider(TypedDict):
    """stacks-missing's details with one more field, optional and nullable."""

    cpu_ops: Annotated[int, "CPU ops"]
    threads: NotRequired[Annotated[int | None, "threads with ops"]]


def test_a_new_detail_reaches_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = tuple(msgspec.structs.replace(c, details=Wider) if c.id == "stacks-missing" else c for c in CHECKS)
    monkeypatch.setattr(generate, "CHECKS", changed)
    (rule,) = [r for r in generate.schema()["$defs"]["check"]["allOf"] if r["if"] == _is("stacks-missing")]
    assert rule["then"] == {
        "required": ["cpu_ops"],
        "properties": {
            "cpu_ops": {"type": "integer", "description": "CPU ops"},
            "threads": {"type": ["integer", "null"], "description": "threads with ops"},
        },
    }
    assert generate.SCHEMA.read_text(encoding="utf-8") != generate.schema_text()


def _is(check: str) -> dict[str, Any]:
    return {"properties": {"check": {"const": check}}}


def test_the_docs_table_is_the_declarations_row_for_row() -> None:
    page = generate.PAGE.read_text(encoding="utf-8")
    table = page.split(generate.TABLE_START)[1].split(generate.TABLE_END)[0].strip().splitlines()
    assert [row.split("`")[1] for row in table[2:]] == [c.id for c in CHECKS]


# -- what the checks give: their details as declared ----------------------------------------------


def _planted(tmp_path: Path) -> list[Path]:
    b = TraceBuilder()
    for i in range(3):
        b.add(KernelSpec(f"k{i}", (64, 1, 1), (128, 1, 1)))
    b.add(KernelSpec("early", (64, 1, 1), (128, 1, 1), kernel_delay=-4.0))
    b.add(KernelSpec("dropped", (64, 1, 1), (128, 1, 1), kernel=False))
    b.add_graph([KernelSpec("node", (64, 1, 1), (128, 1, 1))])
    b.add_memcpy(dur=-1.0)
    b.add_overhead("Activity Buffer Request", 5.0)
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        r = TraceBuilder()
        r.set_metadata("distributedInfo", {"rank": rank, "world_size": 2})
        r.wait(10.0 * rank)
        r.add(KernelSpec("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (64, 1, 1), (128, 1, 1)))
        r.write(ranks / f"rank{rank}.json")
    empty = TraceBuilder()
    return [b.write(tmp_path / "t.json"), ranks, empty.write(tmp_path / "empty.json")]


def test_every_verdict_carries_its_declared_details_and_fits_the_schema(tmp_path: Path, run_cli: RunCli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = strict_json(generate.SCHEMA.read_text(encoding="utf-8"))
    seen: set[tuple[str, str]] = set()
    for target in _planted(tmp_path):
        doc = inspect_json(run_cli, target, "--fail-on", "never")
        jsonschema.validate(doc, schema)
        for check in [*doc["health"], *(c for r in doc["reports"] for c in r["health"])]:
            assert_as_declared(check)
            seen.add((check["check"], check["status"]))
    assert {c for c, _ in seen} == set(SPEC)
    assert {s for c, s in seen if c == "durations"} == {"error", "ok", "not_applicable"}  # planted, ranks, empty


@needs_shared
def test_the_real_traces_verdicts_carry_their_declared_details(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from wizard.environment import Environment
    from wizard.probes.trace_inspect import TraceInspectProbe

    schema = strict_json(generate.SCHEMA.read_text(encoding="utf-8"))
    for target in TARGETS:
        if not (TRACES / target).exists():
            continue
        result = TraceInspectProbe().run(Environment.of(report_dir=tmp_path), {"paths": str(TRACES / target)})
        (written,) = result.files
        doc = strict_json(Path(written).read_text())
        jsonschema.validate(doc, schema)
        for check in [*doc["health"], *(c for r in doc["reports"] for c in r["health"])]:
            assert_as_declared(check)


# -- the playbooks a check names: shipped, and where the triage continues ------------------------------


def test_each_checks_playbook_is_shipped() -> None:
    from wizard.playbook.discovery import list_playbooks

    shipped = {f.name: f.path for f in list_playbooks()}
    for check in CHECKS:
        if check.playbook is None:
            continue
        assert (PLAYBOOKS / f"{check.playbook}.yaml").is_file(), check.id
        assert check.playbook in shipped, check.id


def test_each_checks_playbook_is_reachable_from_the_triage() -> None:
    """The triage's health conclusion continues into ``facts.inspect.health_next`` (the first of the problems'
    playbooks in TRIAGE_ORDER): a check's playbook must be in that order and among the conclusion's choices,
    and the conclusion reachable from the triage's start."""
    from wizard.playbook.loader import load_playbook
    from wizard.playbook.model import ConclusionNode
    from wizard.probes.registry import catalog

    triage = load_playbook(PLAYBOOKS / "triage.yaml", catalog())
    (health,) = [
        n
        for n in triage.nodes.values()
        if isinstance(n, ConclusionNode) and n.continues and "health_next" in n.continues.playbook.source
    ]
    assert health.id in triage.reachable_from(triage.start)
    assert health.continues is not None
    named = {c.playbook for c in CHECKS if c.playbook is not None}
    assert named <= set(TRIAGE_ORDER)
    assert named <= set(health.continues.choices)
    assert set(TRIAGE_ORDER) <= set(triage.continuations())


# -- the renderers: no check of their own ----------------------------------------------------------------


RENDERERS = sorted([*(REPO / "wizard" / "report").glob("*.py"), *(REPO / "wizard" / "ui").glob("*.py")])
# The report's key_averages() section is the summary-table check's corrected table, drawn from its rows: the one
# renderer written for one check (docs/architecture.md, "What a change costs").
WRITTEN_FOR_ONE_CHECK = {("view.py", "summary-table")}


@pytest.mark.parametrize("path", RENDERERS, ids=lambda p: p.name)
def test_no_renderer_names_a_check(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = {c.id for c in CHECKS if f'"{c.id}"' in text or f"'{c.id}'" in text}
    assert named == {c for f, c in WRITTEN_FOR_ONE_CHECK if f == path.name}


def test_the_picture_colours_and_the_fix_are_the_declarations() -> None:
    """What plots.py and html.py used to spell per check, now each check's declaration."""
    colours = {c.id: c.colour for c in CHECKS if c.colour}
    assert (
        colours.items()
        >= {  # the pictures as they were drawn: a check given a colour since joins them
            "kernels-missing": "#cf222e",
            "kernels-overlap": "#bf8700",
            "unlinked-kernels": "#8250df",
            "durations": "#0550ae",
            "clock-skew": "#1a7f37",
        }.items()
    )
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours.values())
    assert len(set(colours.values())) == len(colours)  # one check's marks never look like another's
    (fixed,) = [c for c in CHECKS if c.fix]
    assert fixed.fix is not None
    assert (fixed.id, fixed.fix.option, fixed.fix.output, fixed.fix.rows) == (
        "kernels-overlap",
        "--split-overlaps",
        "lanes",
        "lanes",
    )
