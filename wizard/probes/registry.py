"""The registered probes: warpwizard's own, then those installed packages add (entry point
``warpwizard.probes``, wizard/plugins.py). A playbook can run these and nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wizard.errors import PluginError, WizardError
from wizard.probes.base import FactSpec, ParamSpec, Probe, ProbeInfo, ProbeResult, Status, info

if TYPE_CHECKING:
    from wizard.environment import Environment

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
    from wizard.probes.profile_compare import ProfileCompareProbe
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
        ProfileCompareProbe(),
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
            raise PluginError(f"probe plugin {plugin.name!r} ({plugin.origin}) {problem}")
        probe: Probe = plugin.value
        if probe.name in probes:
            raise PluginError(
                f"probe plugin {plugin.name!r} ({plugin.origin}) is named {probe.name!r}, "
                f"which {probes[probe.name][1]} already registers"
            )
        probes[probe.name] = (PluginProbe(probe, plugin.name, plugin.origin), plugin.origin)
    return probes


class PluginProbe:
    """An installed probe, as the engine runs it: what its ``run`` raises (but warpwizard's own errors and
    interrupts) or returns that is not a ProbeResult is that probe's ERROR result naming the plugin and its
    package, never an internal error (exit 70); facts that break its declaration are warnings (engine.run_probe)."""

    def __init__(self, probe: Probe, entry: str, origin: str) -> None:
        self.probe, self.entry, self.origin = probe, entry, origin
        self.name, self.summary, self.params, self.facts = probe.name, probe.summary, probe.params, probe.facts
        self.runs_programs = str(getattr(probe, "runs_programs", "") or "")

    def __getattr__(self, attribute: str) -> Any:  # anything else the plugin's class declares
        return getattr(self.probe, attribute)

    def _error(self, what: str) -> ProbeResult:
        return ProbeResult(Status.ERROR, f"probe plugin {self.entry!r} ({self.origin}) {what}")

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        try:
            result = self.probe.run(env, params, timeout=timeout)
        except (WizardError, OSError):
            raise  # the engine's own handling: a domain error is the result, an OS error could not run
        except (Exception, SystemExit) as exc:  # noqa: BLE001 (a third party's code: say whose, no traceback)
            return self._error(f"raised {type(exc).__name__}: {exc}")
        problem = _result_problem(result)
        return result if problem is None else self._error(problem)


def _result_problem(result: object) -> str | None:
    """What a plugin's return value lacks of a ProbeResult, or None."""
    if not isinstance(result, ProbeResult):
        return f"returned {type(result).__name__}, not a ProbeResult"
    if not isinstance(result.status, Status) or not isinstance(result.summary, str):
        return "returned a ProbeResult whose status is not a Status or whose summary is not a str"
    lists = (result.evidence, result.files)
    if not all(isinstance(items, list) and all(isinstance(i, str) for i in items) for items in lists):
        return "returned evidence or files that are not lists of str"
    if not isinstance(result.facts, dict) or not all(isinstance(k, str) for k in result.facts):
        return "returned facts that are not a dict keyed by str"
    return None  # facts that break the declaration are warnings on the transcript (engine.run_probe)


def catalog(probes: dict[str, Probe] | None = None) -> dict[str, ProbeInfo]:
    """Each probe's declaration, and where it came from (``builtin``, or ``plugin <package> <version>``)."""
    if probes is not None:
        return {name: info(p) for name, p in probes.items()}
    return {name: info(p, origin) for name, (p, origin) in _with_origins().items()}
