"""A check declares the options it reads and gets them (issue 46): a check asks for its inputs by its parameters'
names, as a flake8 plugin does, in both scopes; the registry checks the signature when it registers the module (as
pluggy checks a hook's), and a name it may not ask for is a ContractError naming the module and the parameter. The
scratch modules here take the one path every check takes into the registry (``checks.collect``)."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any

import msgspec
import pytest

import wizard
from wizard.inspect_options import InspectOptions
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.health import checks
from wizard.trace.health.checks import CHECKS, INPUTS, JOB_RUNS, RUNS, SPEC, ContractError, collect
from wizard.trace.health.spec import CheckSpec, HealthCheck, Scope

WHERE = "wizard/trace/health/checks/scratch_share.py"


def _spec(scope: Scope = "trace", **changes: Any) -> CheckSpec:
    """A declaration of this test's own (no playbook, no facts: nothing else reads it)."""
    return msgspec.structs.replace(
        SPEC["stacks-missing"], id="scratch-share", order=999, playbook=None, triage_rank=None, facts=(),
        scope=scope, **changes,
    )  # fmt: skip


def _module(spec: CheckSpec, **functions: Any) -> list[tuple[str, types.ModuleType]]:
    module = types.ModuleType("scratch_share")
    module.CHECK = spec  # type: ignore[attr-defined]
    for name, function in functions.items():
        setattr(module, name, function)
    return [("scratch_share", module)]


def _trace(tmp_path: Path, kernels: int) -> Path:
    b = TraceBuilder()
    for i in range(kernels):
        b.add(KernelSpec(f"k{i}", (64, 1, 1), (128, 1, 1)))
    return b.write(tmp_path / "t.json")


def _registered(monkeypatch: pytest.MonkeyPatch, modules: list[tuple[str, types.ModuleType]]) -> None:
    """The scratch check beside the shipped ones, as if its module were in the package."""
    found, runs, job_runs = collect(modules)
    monkeypatch.setattr(checks, "CHECKS", (*CHECKS, *found))
    monkeypatch.setattr(checks, "RUNS", {**RUNS, **runs})
    monkeypatch.setattr(checks, "JOB_RUNS", {**JOB_RUNS, **job_runs})


def test_an_option_a_check_declares_reaches_it_with_the_inspections_parts_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, Any, Any]] = []
    spec = _spec(options=("max_launches",))

    def run(tables: Any, metrics: Any, max_launches: int) -> HealthCheck:
        seen.append((tables.contents.path, metrics.kernels_checked, max_launches))
        return spec.verdict(0, "ok", "looked", "")

    _registered(monkeypatch, _module(spec, run=run))
    trace = _trace(tmp_path, 3)
    inspection = wizard.inspect_traces(trace, InspectOptions(max_launches=7, jobs=1))
    assert [c.check for c in inspection.health if c.check == "scratch-share"] == ["scratch-share"]
    assert seen == [(str(trace), 3, 7)]  # the KernelMetrics whole (its count of checked launches: 3 kernels built)
    seen.clear()
    wizard.inspect_traces(trace, InspectOptions(jobs=1))
    assert seen == [(str(trace), 3, 100)]  # the option's own default when not given


def test_a_job_check_gets_its_declared_option_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, Any]] = []
    spec = _spec("job", options=("rank_skew_floor_us",))

    def run_job(reports: Any, rank_skew_floor_us: float | None) -> HealthCheck:
        seen.append((len(reports), rank_skew_floor_us))
        return spec.verdict(0, "ok", "looked", "")

    _registered(monkeypatch, _module(spec, run_job=run_job))
    inspection = wizard.inspect_traces(_trace(tmp_path, 1), InspectOptions(rank_skew_floor_us=12, jobs=1))
    assert [c.check for c in inspection.job_health][-1] == "scratch-share"
    assert seen == [(1, 12.0)]


def _refused(modules: list[tuple[str, types.ModuleType]]) -> str:
    with pytest.raises(ContractError) as raised:
        collect(modules)
    return str(raised.value)


def test_a_parameter_the_check_may_not_ask_for_is_refused_naming_the_module() -> None:
    def misspelt(table: Any) -> HealthCheck:
        raise AssertionError("never run")

    assert _refused(_module(_spec(), run=misspelt)) == (
        f"{WHERE}: run() asks for 'table', which a per-trace check is not given; it may ask for tables, metrics"
    )

    def undeclared(tables: Any, max_launches: int) -> HealthCheck:
        raise AssertionError("never run")

    assert _refused(_module(_spec(), run=undeclared)) == (
        f"{WHERE}: run() asks for 'max_launches', which a per-trace check is not given; it may ask for tables, "
        "metrics (an option reaches a check whose CHECK declares it: options=('max_launches',))"
    )

    def options_whole(reports: Any, options: Any) -> HealthCheck:  # what a job's check was handed before
        raise AssertionError("never run")

    assert _refused(_module(_spec("job"), run_job=options_whole)) == (
        f"{WHERE}: run_job() asks for 'options', which a job's check is not given; it may ask for reports"
    )


def test_a_declaration_that_does_not_hold_is_refused_naming_the_module() -> None:
    def reads_nothing(tables: Any) -> HealthCheck:
        raise AssertionError("never run")

    assert _refused(_module(_spec(options=("sms",)), run=reads_nothing)) == (
        f"{WHERE}: declares option 'sms', which run() does not ask for"
    )
    known = ", ".join(f.name for f in dataclasses.fields(InspectOptions))
    assert _refused(_module(_spec(options=("margin",)), run=reads_nothing)) == (
        f"{WHERE}: declares option 'margin', which is no InspectOptions field ({known})"
    )

    def anything(*inputs: Any) -> HealthCheck:
        raise AssertionError("never run")

    assert _refused(_module(_spec(), run=anything)) == (
        f"{WHERE}: run() takes *inputs: a check asks for each input by its name"
    )


def test_each_shipped_check_asks_for_its_scopes_inputs_and_the_options_it_declares() -> None:
    """Derived from the registry, not a list: what a check is handed beyond its scope's inputs is exactly the options
    it declares, so an option no check declares reaches none."""
    for registered in (*RUNS.values(), *JOB_RUNS.values()):
        spec = registered.spec
        assert set(registered.asks) - set(INPUTS[spec.scope]) == set(spec.options), spec.id
    for option in dataclasses.fields(InspectOptions):
        handed = {r.spec.id for r in (*RUNS.values(), *JOB_RUNS.values()) if option.name in r.asks}
        assert handed == {c.id for c in CHECKS if option.name in c.options}, option.name
    assert JOB_RUNS["rank-skew"].asks == ("reports", "rank_skew_floor_us")  # the floor, and nothing else of options
