"""``hardware.compare``: run the repro on each visible GPU and merge reports from other
machines, to see whether the anomaly belongs to one GPU model, machine or driver.

Step 5 of the method ("run on different hardware"). Where the user already has a profile of the same workload from
another GPU (``other``, beside the ``trace`` that shows the wrong values), that pair decides first, through
``warpwizard diff``'s comparison (wizard/diff.py): comparable, on another GPU model, and the flagged launches read
wrong on one GPU only (**hardware-specific**, FAIL) or on both (**not the hardware**, PASS). A pair that cannot be
compared, on the same GPU, or with none of the flagged launches decides nothing: the probe goes on as without it,
the comparison's verdict in its evidence.
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
    comparability: Annotated[str, "the other GPU's profile beside the trace: comparable, with caveats, or not"]
    outcome: Annotated[str, "disappears, persists, or cannot tell: the flagged launches on the other GPU"]


class HardwareCompareProbe:
    name = "hardware.compare"
    summary = "Run the repro on every visible GPU and compare with reports from other machines"
    runs_programs = "op.isolate's repro script on each visible GPU"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("repro", "path", "repro script (default: the one op.isolate wrote)", default=None, runs=True),
        ParamSpec("reports", "list[str]", "JSON reports from other machines (default: --compare)", default=None),
        ParamSpec("trace", "path", "the trace that shows the wrong values (compared with `other`)", default=""),
        ParamSpec(
            "other", "path", "a profile of the same workload from another GPU (any format diff reads)", default=""
        ),
    )
    facts: tuple[FactSpec, ...] = declared_facts(HardwareCompareFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        decided, said = _other_gpu(env, str(params.get("trace") or ""), str(params.get("other") or ""))
        if decided is not None:
            return decided
        result = self._machines(env, params, timeout)
        if said:
            result.evidence[:0] = said
            result.facts.update({"comparability": said[0].split(": ", 1)[1], "outcome": "cannot tell"})
        return result

    def _machines(self, env: Environment, params: Mapping[str, Any], timeout: float) -> ProbeResult:
        """The repro on each local GPU, and the reports of other machines, merged (wizard.compare)."""
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


def _other_gpu(env: Environment, trace: str, other: str) -> tuple[ProbeResult | None, list[str]]:
    """Step 5 from a profile the user has of another GPU: a result where the comparison decides; else none, and
    what the comparison said (its verdict first) for the evidence."""
    if not trace or not other:
        return None, []
    from wizard.errors import MissingDependency, UsageError
    from wizard.probes.profile_compare import compare, decide

    try:
        diff = compare(env, trace, other)  # step 1's comparison, through the run's one read
    except (InputFileError, UsageError, MissingDependency) as exc:
        return None, [f"comparability: cannot compare ({exc})"]
    model = next(f for f in diff.factors if f.name == "GPU model")
    outcome, gone, kept = decide(diff)
    said = [f"comparability: {diff.verdict}", f"GPU model: {model.before} here, {model.after} in {Path(other).name}"]
    said += [f"{f.name}: {f.meaning}" for f in diff.factors if f.status == "differs" and f.effect == "blocks"]
    if model.status != "differs" or outcome == "cannot tell":
        why = {"same": "the same GPU model", "unknown": "the GPU model is not known on both sides"}.get(
            model.status, "the flagged launches decide nothing there"
        )
        return None, [*said, f"the other profile decides nothing for step 5 ({why})"]
    facts = {
        "comparability": diff.verdict, "outcome": outcome, "hardware_specific": outcome == "disappears",
        "reproduces_on": [model.before, *([model.after] if kept else [])],
        "clean_on": [model.after] if outcome == "disappears" else [], "machines": 2, "gpus_tested": [],
    }  # fmt: skip
    if outcome == "disappears":
        facts["verdict"] = f"{', '.join(gone)} on {model.before} only: the same launches read right on {model.after}"
        return ProbeResult(Status.FAIL, str(facts["verdict"]), facts=facts, evidence=said + diff.mechanisms[:8]), said
    facts["verdict"] = f"{', '.join(kept)} on both {model.before} and {model.after}: not the hardware"
    return ProbeResult(Status.PASS, str(facts["verdict"]), facts=facts, evidence=said), said


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
