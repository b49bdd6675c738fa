"""The registered probes. A playbook can run these and nothing else."""

from __future__ import annotations

from wizard.probes.base import Probe, ProbeInfo, info


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
    ]
    return {p.name: p for p in probes}


def catalog(probes: dict[str, Probe] | None = None) -> dict[str, ProbeInfo]:
    return {name: info(p) for name, p in (probes or builtin_probes()).items()}
