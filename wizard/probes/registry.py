"""The registered probes: warpwizard's own, then those installed packages add (entry point
``warpwizard.probes``, wizard/plugins.py). A playbook can run these and nothing else."""

from __future__ import annotations

from wizard.errors import ProbeInfrastructureError
from wizard.probes.base import FactSpec, ParamSpec, Probe, ProbeInfo, info

BUILTIN = "builtin"


def builtin_probes() -> dict[str, Probe]:
    # Probe modules import only light things at module level; torch, pynvml and
    # subprocesses are touched inside run().
    from wizard.probes.command import CommandProbe
    from wizard.probes.cupti_env import CuptiEnvProbe
    from wizard.probes.env import EnvProbe
    from wizard.probes.hardware_compare import HardwareCompareProbe
    from wizard.probes.kineto_log import KinetoLogProbe
    from wizard.probes.launch_blocking import LaunchBlockingProbe
    from wizard.probes.metrics_sanity import MetricsSanityProbe
    from wizard.probes.op_isolate import OpIsolateProbe
    from wizard.probes.profiler_overhead import ProfilerOverheadProbe
    from wizard.probes.rank_baseline import RankBaselineProbe
    from wizard.probes.reprofile import ReprofileProbe
    from wizard.probes.trace_inspect import TraceInspectProbe

    probes: list[Probe] = [
        TraceInspectProbe(),
        EnvProbe(),
        ReprofileProbe(),
        LaunchBlockingProbe(),
        OpIsolateProbe(),
        HardwareCompareProbe(),
        MetricsSanityProbe(),
        CommandProbe(),
        CuptiEnvProbe(),
        KinetoLogProbe(),
        RankBaselineProbe(),
        ProfilerOverheadProbe(),
    ]
    return {p.name: p for p in probes}


def _shape_problem(probe: object) -> str | None:
    """What an installed probe lacks of the Probe shape (base.py), or None."""
    name = getattr(probe, "name", None)
    if not isinstance(name, str) or not name:
        return "has no name (a str)"
    if not isinstance(getattr(probe, "summary", None), str):
        return "has no summary (a str)"
    params, facts = getattr(probe, "params", None), getattr(probe, "facts", None)
    if not isinstance(params, tuple) or not all(isinstance(p, ParamSpec) for p in params):
        return "params is not a tuple of ParamSpec"
    if not isinstance(facts, tuple) or not facts or not all(isinstance(f, FactSpec) for f in facts):
        return "facts is not a tuple of FactSpec (declared_facts(YourFacts))"
    return None if callable(getattr(probe, "run", None)) else "has no run method"


def registered_probes() -> dict[str, Probe]:
    """Every probe a playbook may name: warpwizard's, then each installed plugin's (which may not take a
    name already registered)."""
    return {name: probe for name, (probe, _) in _with_origins().items()}


def _with_origins() -> dict[str, tuple[Probe, str]]:
    from wizard.plugins import installed_probes

    probes = {name: (probe, BUILTIN) for name, probe in builtin_probes().items()}
    for plugin in installed_probes():
        problem = _shape_problem(plugin.value)
        if problem is not None:
            raise ProbeInfrastructureError(f"probe plugin {plugin.name!r} ({plugin.origin}) {problem}")
        probe: Probe = plugin.value
        if probe.name in probes:
            raise ProbeInfrastructureError(
                f"probe plugin {plugin.name!r} ({plugin.origin}) is named {probe.name!r}, "
                f"which {probes[probe.name][1]} already registers"
            )
        probes[probe.name] = (probe, plugin.origin)
    return probes


def catalog(probes: dict[str, Probe] | None = None) -> dict[str, ProbeInfo]:
    """Each probe's declaration, and where it came from (``builtin``, or ``plugin <package> <version>``)."""
    if probes is not None:
        return {name: info(p) for name, p in probes.items()}
    return {name: info(p, origin) for name, (p, origin) in _with_origins().items()}
