"""``hardware.compare``: run the repro on each visible GPU and merge reports from other
machines, to see whether the anomaly belongs to one GPU model, machine or driver.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

from wizard.compare import MachineReport, compare, load_report
from wizard.environment import Environment
from wizard.errors import InputFileError
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts, ensure_dir
from wizard.probes.common import parse_result, run_harness
from wizard.probes.inspections import inspection
from wizard.probes.trace_inspect import inspection_facts


class HardwareCompareFacts(TypedDict, total=False):
    """The facts HardwareCompareProbe declares once (help, ``probes``, the schema and the loader read them)."""

    gpus_tested: Annotated[list[str], "local GPUs the repro ran on"]
    reproduces_on: Annotated[list[str], "machines/GPUs that show impossible values"]
    clean_on: Annotated[list[str], "machines/GPUs that do not"]
    hardware_specific: Annotated[bool, "whether it depends on the GPU model, machine or driver"]
    verdict: Annotated[str, "the comparison in words"]
    machines: Annotated[int, "how many data points were compared"]


class HardwareCompareProbe:
    name = "hardware.compare"
    summary = "Run the repro on every visible GPU and compare with reports from other machines"
    runs_programs = "op.isolate's repro script on each visible GPU"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("repro", "path", "repro script (default: the one op.isolate wrote)", default=None, runs=True),
        ParamSpec("reports", "list[str]", "JSON reports from other machines (default: --compare)", default=None),
    )
    facts: tuple[FactSpec, ...] = declared_facts(HardwareCompareFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        reports, problems = _load_reports(params.get("reports") or env.settings.compare_reports)
        repro = params.get("repro") or env.artifacts.get("repro") or ""
        has_repro = bool(repro) and Path(repro).is_file()
        # Listing GPUs starts a torch process: only worth it with a repro to run on them, and not
        # when that very repro just ran on the CPU here (torch saw no CUDA device).
        ran_on_cpu = repro == env.artifacts.get("repro") and env.artifacts.get("repro_device") == "cpu"
        info: dict[str, Any] = {}
        if has_repro and not ran_on_cpu:
            info = run_harness(env, "env", [], timeout=120, log_name="hardware-env").result or {}
        devices = info.get("devices") or []
        tested: list[str] = []
        if devices and has_repro:
            for dev in devices:
                report = _run_on_gpu(env, repro, dev, info.get("torch_version"), timeout)
                if report is None:
                    problems.append(f"GPU {dev['index']}: the repro did not finish")
                    continue
                tested.append(f"{dev['index']}: {dev['name']}")
                reports.append(report)
        result = compare(reports)
        facts_out = {
            "gpus_tested": tested,
            "reproduces_on": result.reproduces_on,
            "clean_on": result.clean_on,
            "hardware_specific": result.hardware_specific,
            "verdict": result.verdict,
            "machines": len(reports),
        }
        evidence = [
            f"{m.key}: {'impossible values ' + ', '.join(m.mechanisms) if m.impossible else 'clean'}" for m in reports
        ] + problems
        if len(reports) < 2:
            why = (
                "no repro to run here"
                if not has_repro
                else "no CUDA device here"
                if not devices
                else "fewer than two data points"
            )
            return ProbeResult(
                Status.SKIP,
                f"nothing to compare ({why}); pass reports from other machines with --compare REPORT.json",
                facts=facts_out,
                evidence=evidence,
            )
        status = Status.FAIL if result.hardware_specific else Status.PASS
        return ProbeResult(status, result.verdict, facts=facts_out, evidence=evidence)


def _load_reports(paths: Iterable[Any]) -> tuple[list[MachineReport], list[str]]:
    """Other machines' reports, and one problem line for each file that could not be read."""
    reports: list[MachineReport] = []
    problems: list[str] = []
    for path in paths:
        try:
            reports.append(load_report(str(path)))
        except InputFileError as exc:
            problems.append(str(exc))
    return reports, problems


def _run_on_gpu(
    env: Environment, repro: str, dev: Mapping[str, Any], torch_version: Any, timeout: float
) -> MachineReport | None:
    """The repro on one local GPU (CUDA_VISIBLE_DEVICES), its trace inspected; None if it did not finish."""
    out_dir = ensure_dir(env.settings.report_dir / "hardware")
    trace = out_dir / f"gpu{dev['index']}-trace.json"
    run = env.system.runner.run(
        [env.settings.python, repro, str(trace)],
        timeout=timeout,
        env=env.child_env(CUDA_VISIBLE_DEVICES=str(dev["index"])),
        log_path=out_dir / f"gpu{dev['index']}.log",
    )
    if parse_result(run.output) is None or not trace.exists():
        return None
    facts = inspection_facts(inspection(env, [str(trace)]))
    host = socket.gethostname()
    return MachineReport(
        str(trace),
        f"{host} GPU {dev['index']}",
        [str(dev["name"])],
        torch_version,
        None,
        facts["mechanisms"],
        facts["impossible"],
    )
