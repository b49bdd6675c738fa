"""Which passes an inspection runs, in order: the built-in ones (the flagship's kernel-metric checks, then the
health check, which reads their result), then those registered in this process (``register_pass``: a test's, a
notebook's), then each installed package's (``warpwizard.passes`` entry points, docs/plugins.md), each checked
against the contract of wizard/trace/passes.py when it is added."""

from __future__ import annotations

from typing import Any

from wizard.errors import PluginError, UsageError
from wizard.trace.health.checker import HEALTH_PASS
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import TracePass, contract_problem
from wizard.trace.profile.summary import PROFILE_PASS

BUILTIN: tuple[TracePass[Any], ...] = (METRICS_PASS, HEALTH_PASS, PROFILE_PASS)

# Passes registered in this process beyond the built-in ones, name -> pass, run in this order after them.
REGISTERED: dict[str, TracePass[Any]] = {}


def register_pass(declared: TracePass[Any]) -> None:
    """Add a pass to every inspection in this process (after the built-in ones); its result is
    ``TraceInspection.passes[name]`` and ``--json``'s ``reports[].passes[name]``. A pass that breaks the
    contract (or takes a name already registered) is a UsageError saying how."""
    known = {p.name: p for p in (*BUILTIN, *REGISTERED.values())}
    if isinstance(declared, TracePass) and declared.origin == "builtin":
        declared = TracePass(
            declared.name, declared.result, declared.start, declared.write, declared.needs, origin="registered"
        )
    problem = contract_problem(declared, known)
    if problem is not None:
        raise UsageError(f"register_pass: the pass {problem}")
    REGISTERED[declared.name] = declared


def unregister_pass(name: str) -> None:
    REGISTERED.pop(name, None)


def passes_to_run() -> tuple[TracePass[Any], ...]:
    """Every pass an inspection runs, in order; an installed pass that cannot load or breaks the contract is a
    PluginError naming it and its package (one line, as a probe plugin's is)."""
    from wizard.plugins import installed_passes

    chosen: dict[str, TracePass[Any]] = {p.name: p for p in (*BUILTIN, *REGISTERED.values())}
    for plugin in installed_passes():
        problem = contract_problem(plugin.value, chosen)
        if problem is not None:
            raise PluginError(f"trace pass plugin {plugin.name!r} ({plugin.origin}) {problem}")
        found: TracePass[Any] = plugin.value
        chosen[found.name] = TracePass(found.name, found.result, found.start, found.write, found.needs, plugin.origin)
    return tuple(chosen.values())
