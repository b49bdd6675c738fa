"""The health checks' registry: every module of this package is one check, its declaration and its function.

A module declares ``CHECK`` (a ``CheckSpec``) and its function: ``run`` for a per-trace check, ``run_job`` for a
job's check (over every rank's trace). A check asks for its inputs by its parameters' names, as a flake8 plugin
does, the same way in both scopes (``INPUTS``): a per-trace check for ``tables`` (the trace's arrays) and
``metrics`` (the flagship's ``KernelMetrics``, whole), a job's check for ``reports`` (every rank's report), and
either for each option its ``CheckSpec.options`` declares, by the option's name (an ``InspectOptions`` field); an
option no check declares reaches none. The registry imports the modules by name (a test holds that list to the
package's files), holds each to that contract when it registers it (its name is its id's, its place and id its own,
the one function its scope needs, every parameter one it may ask for and every declared option a field it asks for,
a triage rank exactly where it names a playbook, one rank per playbook: a ``ContractError`` naming the module, as
pluggy names a plugin whose hook's signature is wrong), and orders them by ``CheckSpec.order``. A module imports
numpy only inside its functions, so loading the registry costs no numpy (tested).

What everything else reads is derived here: ``CHECKS`` (what the runner runs, the docs and the schema are
generated from, the reports draw), ``CHECK_FACTS`` (trace.inspect's per-check facts, ``check_facts`` sums them over
a job's traces), ``TRIAGE_ORDER`` (where a triage continues when several checks find problems, from each check's
``triage_rank``) and ``check_selection`` (``--checks`` / ``--skip-checks``); ``check_trace`` and ``check_job`` run
them, each handed what it asked for.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec

from wizard.trace.health.spec import CheckFact, CheckSpec, HealthCheck

if TYPE_CHECKING:
    from wizard.inspect_options import InspectOptions
    from wizard.trace.metrics.classify import KernelMetrics
    from wizard.trace.read.collector import TraceContents

# What a check may ask for, by scope: its parameter's name and what it is handed (and the options its CheckSpec
# declares, each by its name, in either scope).
INPUTS: dict[str, dict[str, str]] = {
    "trace": {
        "tables": "the trace's arrays (Tables: contents, calls, kernels, window), each made when first read",
        "metrics": "the kernel-metric checks' result whole (KernelMetrics: wrong_launches, kernels_checked, "
        "mechanisms, ...)",
    },
    "job": {"reports": "every trace's report (TraceInspection), in order: its path, health_result, truncation, ..."},
}


class ContractError(TypeError):
    """A module of the checks' package that breaks the contract above: a programming error, raised on import."""


def _module_name(check_id: str) -> str:
    return check_id.replace("-", "_")


# a scope: (the function it needs, how the contract says it, what its check is called)
_FUNCTION = {
    "trace": ("run", "run(tables)", "a per-trace check"),
    "job": ("run_job", "run_job(reports)", "a job's check"),
}


class Registered(msgspec.Struct, frozen=True, eq=False):
    """A check's function as the registry holds it: what it asks for, by name, checked when it was registered."""

    spec: CheckSpec
    function: Callable[..., HealthCheck]
    asks: tuple[str, ...]

    def __call__(self, given: dict[str, Any], options: InspectOptions) -> HealthCheck:
        """The check run with what it asked for: each input of its scope from ``given``, each option it declares
        from ``options``."""
        return self.function(
            **{name: getattr(options, name) if name in self.spec.options else given[name] for name in self.asks}
        )


def _asks(where: str, spec: CheckSpec, function: Callable[..., HealthCheck]) -> tuple[str, ...]:
    """The names a check's function asks for, each one it may: an input of its scope or an option its CHECK
    declares; every declared option an ``InspectOptions`` field it asks for (a declaration that is not read lies)."""
    from wizard.inspect_options import InspectOptions  # light: the declaration alone

    needed = _FUNCTION[spec.scope][0]
    known = [f.name for f in dataclasses.fields(InspectOptions)]
    for option in spec.options:
        if option not in known:
            raise ContractError(
                f"{where}: declares option {option!r}, which is no InspectOptions field ({', '.join(known)})"
            )
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin or an odd callable: nothing to read its names from
        raise ContractError(f"{where}: {needed}'s parameters cannot be read") from None
    may = [*INPUTS[spec.scope], *spec.options]
    for parameter in parameters:
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            n, kind = parameter.name, parameter.kind
            shown = (
                f"*{n}"
                if kind is parameter.VAR_POSITIONAL
                else f"**{n}"
                if kind is parameter.VAR_KEYWORD
                else f"{n}, /"
            )
            raise ContractError(f"{where}: {needed}() takes {shown}: a check asks for each input by its name")
        if parameter.name not in may:
            declared = (
                f" (an option reaches a check whose CHECK declares it: options=({parameter.name!r},))"
                if parameter.name in known
                else ""
            )
            raise ContractError(
                f"{where}: {needed}() asks for {parameter.name!r}, which {_FUNCTION[spec.scope][2]} is not given; "
                f"it may ask for {', '.join(may)}{declared}"
            )
    asks = tuple(p.name for p in parameters)
    for option in spec.options:
        if option not in asks:
            raise ContractError(f"{where}: declares option {option!r}, which {needed}() does not ask for")
    return asks


def _contract(module: ModuleType, name: str) -> Registered:
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
    return Registered(spec, function, _asks(where, spec, function))


def collect(
    modules: Iterable[tuple[str, ModuleType]],
) -> tuple[tuple[CheckSpec, ...], dict[str, Registered], dict[str, Registered]]:
    """The checks of these (name, module) pairs, in order, and the per-trace and the job's functions by id: the one
    path a check takes into the registry (this package's modules, and a test's own)."""
    found: list[CheckSpec] = []
    runs: dict[str, Registered] = {}
    job_runs: dict[str, Registered] = {}
    for name, module in modules:
        registered = _contract(module, name)
        spec = registered.spec
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
        (runs if spec.scope == "trace" else job_runs)[spec.id] = registered
    return tuple(sorted(found, key=lambda s: s.order)), runs, job_runs


def _package_modules() -> list[tuple[str, ModuleType]]:
    """This package's checks, each imported by its name here, where the import rules see them (a test holds this
    list to the package's files: a check's module that is not named here fails it)."""
    from wizard.trace.health.checks import (
        clock_skew,
        durations,
        graph_launches,
        impossible_metrics,
        kernels_missing,
        kernels_overlap,
        profiler_overhead,
        rank_skew,
        ranks_complete,
        stacks_missing,
        summary_table,
        trace_incomplete,
        trace_size,
        unlinked_kernels,
    )

    modules = (clock_skew, durations, graph_launches, impossible_metrics, kernels_missing, kernels_overlap,
               profiler_overhead, rank_skew, ranks_complete, stacks_missing, summary_table, trace_incomplete,
               trace_size, unlinked_kernels)  # fmt: skip
    return [(module.__name__.rsplit(".", 1)[1], module) for module in modules]


CHECKS, RUNS, JOB_RUNS = collect(_package_modules())
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
SPEC = {c.id: c for c in CHECKS}
CHECK_FACTS: tuple[CheckFact, ...] = tuple(f for c in CHECKS for f in c.facts)


def _triage_order(checks: Sequence[CheckSpec]) -> tuple[str, ...]:
    """The checks' playbooks by their rank (one per playbook, each its own: the contract above)."""
    rank = {c.playbook: c.triage_rank for c in checks if c.playbook is not None and c.triage_rank is not None}
    return tuple(sorted(rank, key=rank.__getitem__))


TRIAGE_ORDER = _triage_order(CHECKS)


def check_trace(contents: TraceContents, metrics: KernelMetrics, options: InspectOptions) -> list[HealthCheck]:
    """Every selected per-trace check (``options.checks``, resolved: None for all), in ``CHECKS``' order, each handed
    what it asks for: the trace's ``tables``, the ``metrics`` whole, the options its declaration names."""
    from wizard import heap, numpy_threads

    numpy_threads.load()
    import numpy as np

    from wizard.trace.health.tables import Tables

    given: dict[str, Any] = {"tables": Tables(contents), "metrics": metrics}
    done: list[HealthCheck] = []
    # times near 1e308 overflow to inf: each check counts what it cannot measure; numpy prints nothing
    with np.errstate(over="ignore", invalid="ignore"):
        for check in _chosen("trace", options):
            heap.release(contents.bytes_read)  # what the checks before freed: not resident in this one's peak
            done.append(RUNS[check.id](given, options))
    return done


def check_job(reports: Sequence[Any], options: InspectOptions) -> list[HealthCheck]:
    """The checks over a job's traces (today ranks-complete, rank-skew), each selected one in order, handed what it
    asks for: every rank's ``reports`` (so no process has to read every rank's trace), the options it declares."""
    given: dict[str, Any] = {"reports": reports}
    return [JOB_RUNS[c.id](given, options) for c in _chosen("job", options)]


def _chosen(scope: str, options: InspectOptions) -> list[CheckSpec]:
    return [c for c in CHECKS if c.scope == scope and (options.checks is None or c.id in options.checks)]


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
