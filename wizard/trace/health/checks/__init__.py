"""The health checks' registry: every module of this package is one check, its declaration and its function.

A module declares ``CHECK`` (a ``CheckSpec``) and its function: for a per-trace check ``run(tables) ->
HealthCheck``, for a job's check (over every rank's trace) ``run_job(reports, options) -> HealthCheck``, from
what each trace's report carries; the registry finds the modules (no list of them to keep), holds each to that
contract (its name is its id's, its place and id its own, the one function its scope needs, a triage rank exactly
where it names a playbook, one rank per playbook), and orders them by ``CheckSpec.order``. A
module imports numpy only inside its functions, so loading the registry costs no numpy (tested).

What everything else reads is derived here: ``CHECKS`` (what the runner runs, the docs and the schema are
generated from, the reports draw), ``CHECK_FACTS`` (trace.inspect's per-check facts, ``check_facts`` sums them over
a job's traces), ``TRIAGE_ORDER`` (where a triage continues when several checks find problems, from each check's
``triage_rank``) and ``check_selection`` (``--check`` / ``--skip-check``).
"""

from __future__ import annotations

import importlib
import pkgutil
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from wizard.trace.health.spec import CheckFact, CheckSpec, HealthCheck

if TYPE_CHECKING:
    from wizard.inspect_options import InspectOptions
    from wizard.trace.health.tables import Tables
    from wizard.trace.read.collector import TraceContents

Check = Callable[["Tables"], HealthCheck]
JobCheck = Callable[[Sequence[Any], "InspectOptions"], HealthCheck]  # the job's reports (TraceInspection) and options


class ContractError(TypeError):
    """A module of the checks' package that breaks the contract above: a programming error, raised on import."""


def _module_name(check_id: str) -> str:
    return check_id.replace("-", "_")


# a scope: (the function it needs, how the contract says it, what its check is called)
_FUNCTION = {
    "trace": ("run", "run(tables)", "a per-trace check"),
    "job": ("run_job", "run_job(reports, options)", "a job's check"),
}


def _contract(module: ModuleType, name: str) -> tuple[CheckSpec, Callable[..., HealthCheck]]:
    where = f"wizard/trace/health/checks/{name}.py"
    spec = getattr(module, "CHECK", None)
    if not isinstance(spec, CheckSpec):
        raise ContractError(f"{where}: declares no CHECK (a CheckSpec)")
    if _module_name(spec.id) != name:
        raise ContractError(f"{where}: declares {spec.id!r}; its module is named {_module_name(spec.id)}.py")
    needed, said, kind = _FUNCTION[spec.scope]
    other, other_said, _ = _FUNCTION["job" if spec.scope == "trace" else "trace"]
    function = getattr(module, needed, None)
    if not callable(function):
        raise ContractError(f"{where}: {kind} without {said}")
    if getattr(module, other, None) is not None:
        raise ContractError(f"{where}: {kind} with {other_said}, which never runs")
    if spec.playbook is not None and spec.triage_rank is None:
        raise ContractError(f"{where}: names playbook {spec.playbook!r} without a triage_rank")
    if spec.playbook is None and spec.triage_rank is not None:
        raise ContractError(f"{where}: a triage_rank without a playbook to continue into")
    return spec, function


def collect(
    modules: Iterable[tuple[str, ModuleType]],
) -> tuple[tuple[CheckSpec, ...], dict[str, Check], dict[str, JobCheck]]:
    """The checks of these (name, module) pairs, in order, and the per-trace and the job's functions by id."""
    found: list[CheckSpec] = []
    runs: dict[str, Check] = {}
    job_runs: dict[str, JobCheck] = {}
    for name, module in modules:
        spec, function = _contract(module, name)
        for other in found:
            if other.order == spec.order:
                raise ContractError(f"{spec.id} and {other.id} both declare order={spec.order}")
            if (
                spec.triage_rank is not None
                and other.triage_rank == spec.triage_rank
                and other.playbook != spec.playbook
            ):
                raise ContractError(
                    f"{spec.id} and {other.id} both declare triage_rank={spec.triage_rank} for two playbooks "
                    f"({spec.playbook}, {other.playbook}): the triage could not say which comes first"
                )
            if spec.playbook is not None and other.playbook == spec.playbook and other.triage_rank != spec.triage_rank:
                raise ContractError(
                    f"{spec.id} and {other.id} continue into {spec.playbook} at two ranks "
                    f"({spec.triage_rank}, {other.triage_rank}): a playbook has one place in the triage"
                )
        found.append(spec)
        (runs if spec.scope == "trace" else job_runs)[spec.id] = function
    return tuple(sorted(found, key=lambda s: s.order)), runs, job_runs


def _package_modules() -> list[tuple[str, ModuleType]]:
    return [
        (info.name, importlib.import_module(f"{__name__}.{info.name}"))
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    ]


CHECKS, RUNS, JOB_RUNS = collect(_package_modules())
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
SPEC = {c.id: c for c in CHECKS}
CHECK_FACTS: tuple[CheckFact, ...] = tuple(f for c in CHECKS for f in c.facts)


def _triage_order(checks: Sequence[CheckSpec]) -> tuple[str, ...]:
    """The checks' playbooks by their rank (one per playbook, each its own: the contract above)."""
    rank = {c.playbook: c.triage_rank for c in checks if c.playbook is not None and c.triage_rank is not None}
    return tuple(sorted(rank, key=rank.__getitem__))


TRIAGE_ORDER = _triage_order(CHECKS)


def check_trace(
    contents: TraceContents,
    *,
    wrong_launches: int,
    checked: int,
    mechanisms: Mapping[str, int] | None = None,
    selected: frozenset[str] | None = None,
) -> list[HealthCheck]:
    """Every selected per-trace check, in ``CHECKS``' order, each by its module's function."""
    import numpy as np

    from wizard.trace.health.tables import Tables

    chosen = set(CHECK_IDS) if selected is None else selected
    tables = Tables(contents, wrong_launches, checked, mechanisms)
    # times near 1e308 overflow to inf: each check counts what it cannot measure; numpy prints nothing
    with np.errstate(over="ignore", invalid="ignore"):
        return [RUNS[c.id](tables) for c in CHECKS if c.scope == "trace" and c.id in chosen]


def check_selection(only: Iterable[str] | None, skip: Iterable[str] | None) -> frozenset[str]:
    """The checks to run: ``only`` (all when None) less ``skip``; an unknown id is a ValueError naming
    the valid ones (the CLI and the API turn it into their usage error)."""
    chosen = set(CHECK_IDS if only is None else only)
    skipped = set(skip or ())
    unknown = sorted((chosen | skipped) - set(CHECK_IDS))
    if unknown:
        raise ValueError(f"unknown health check {', '.join(unknown)}; the checks are {', '.join(CHECK_IDS)}")
    return frozenset(chosen - skipped)


def check_facts(trace_checks: Sequence[HealthCheck], job_checks: Sequence[HealthCheck]) -> dict[str, Any]:
    """Every check's declared facts, each summed over the traces as it says (a job's check over the job)."""
    return {
        fact.name: _sum_fact(
            spec, fact, [c for c in (job_checks if spec.scope == "job" else trace_checks) if c.check == spec.id]
        )
        for spec in CHECKS
        for fact in spec.facts
    }


def _value(check: HealthCheck, fact: CheckFact) -> Any:
    if fact.detail == "count":
        return check.count
    if fact.detail == "status":
        return check.status
    return check.details.get(fact.detail, fact.default) if fact.how == "first" else check.details.get(fact.detail)


def _sum_fact(spec: CheckSpec, fact: CheckFact, checks: list[HealthCheck]) -> Any:
    values = [_value(c, fact) for c in checks]
    if fact.how == "total":
        return sum(float(v or 0) for v in values) if fact.type is float else sum(int(v or 0) for v in values)
    if fact.how == "any":
        return any(values)
    if fact.how == "none":
        return not any(values)
    if fact.how == "first":
        return values[0] if values else fact.default
    if fact.how == "max":
        return max((float(v) for v in values if v is not None), default=fact.default)
    if fact.how == "largest":
        return max((v for v in values if v is not None), key=abs, default=fact.default)
    if fact.how == "keys":
        return sorted({name for v in values for name in (v or {})})
    if fact.how == "worst":
        words = _words(spec.details, fact.detail)
        return next((w for w in reversed(words) if w in values), words[0])
    counts = (values[0] or {}) if values else {}  # most
    return int(max(counts, key=lambda r: (counts[r], -int(r)))) if counts else fact.default


def _words(details: type, field: str) -> tuple[str, ...]:
    """A detail's declared words (its Literal's), mildest first."""
    hint = typing.get_type_hints(details, include_extras=True)[field]
    return tuple(typing.get_args(typing.get_args(hint)[0]))
