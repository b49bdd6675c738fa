"""``trace.inspect``: the trace doctor as a probe, its findings as facts for conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.errors import InputFileError, OutputFileError
from wizard.outputs import write_own
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status
from wizard.serialize import dumps
from wizard.trace.analysis import Mechanism, is_wrong
from wizard.trace.inspect import FindingGroup, Inspection, inspect_paths, launched_by
from wizard.untrusted import cut


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _worst(inspection: Inspection) -> FindingGroup | None:
    bugs = [g for r in inspection.reports for g in r.groups if g.severity == "error"]
    if not bugs:
        return None
    order = {m.value: i for i, m in enumerate(Mechanism)}
    return sorted(bugs, key=lambda g: (order.get(g.mechanism, 99), -g.count))[0]


def inspection_facts(inspection: Inspection) -> dict[str, Any]:
    """Facts a playbook can branch on, from a finished inspection."""
    mechanisms = inspection.mechanisms
    bug_ids = sorted(m for m in mechanisms if is_wrong(m))
    worst = _worst(inspection)
    reports = inspection.reports
    devices = {d["name"] for r in reports for d in r.devices if d.get("name")}
    facts: dict[str, Any] = {
        "mechanisms": bug_ids,
        "mechanism_counts": {m: mechanisms[m] for m in sorted(mechanisms)},
        "impossible": inspection.impossible,
        "negative_values": any(m in ("A", "A'", "B") for m in bug_ids),
        "non_finite_values": "C" in bug_ids,
        "kernels": sum(r.kernels for r in reports),
        "kernels_checked": sum(r.kernels_checked for r in reports),
        "flagged_kernels": sum(r.wrong_launches for r in reports),  # a launch with C and C' is one launch
        "large_by_design": mechanisms.get("F", 0),
        "max_true_warps_per_sm": max((r.max_true_warps_per_sm or 0.0 for r in reports), default=0.0),
        "rocm": any(r.rocm for r in reports),
        "cpu_only": all(r.kernels == 0 for r in reports),
        "truncated": any(r.truncation is not None for r in reports),
        "gpus": sorted(devices),
        "files": [r.path for r in reports],
        "workload": inspection.workload,
        "ranks": [r.rank for r in reports if r.rank is not None],
        "notes": [n for r in reports for n in r.notes],
        "worst_mechanism": worst.mechanism if worst else None,
        "worst_title": worst.title if worst else None,
        "worst_kernel": worst.kernel if worst else None,
        "worst_count": worst.count if worst else 0,
        "worst_evidence": worst.worst.evidence if worst else None,
        "worst_grid": list(worst.worst.grid) if worst and worst.worst.grid else None,
        "worst_block": list(worst.worst.block) if worst and worst.worst.block else None,
        "worst_reported": worst.worst.reported if worst else None,
        "worst_true": worst.worst.true if worst else None,
        "worst_op": worst.op.op if worst and worst.op else None,
        "worst_op_dims": worst.op.input_dims if worst and worst.op else None,
        "worst_op_types": worst.op.input_types if worst and worst.op else None,
        "worst_python_frame": worst.op.user_frame if worst and worst.op else None,
        "worst_file": next((r.path for r in reports for g in r.groups if g is worst), None),
        "non_finite_spelling": (
            "bare"
            if any(r.non_finite.get("bare") for r in reports)
            else "quoted"
            if any(r.non_finite.get("quoted") for r in reports)
            else None
        ),
    }
    return facts


FACT_HELP = {
    "mechanisms": "profiler-bug mechanism ids found (A, A', B, C, C', D, E, ?)",
    "mechanism_counts": "kernels per mechanism id, F (by design) included",
    "impossible": "whether any value is impossible or wrong",
    "negative_values": "whether any blocks/warps per SM came out negative (A, A', B)",
    "non_finite_values": "whether any value was inf or nan (C)",
    "kernels": "GPU kernels in the trace(s)",
    "kernels_checked": "kernels with launch dimensions that were recomputed",
    "flagged_kernels": "kernels with a profiler-bug finding",
    "large_by_design": "kernels whose large warps per SM are correct (F)",
    "max_true_warps_per_sm": "largest recomputed warps per SM",
    "rocm": "whether the trace came from an AMD GPU (no such metrics recorded)",
    "cpu_only": "whether no GPU kernel was recorded at all",
    "truncated": "whether a trace file was cut off",
    "gpus": "GPU names from the trace's device properties",
    "files": "trace files read",
    "workload": "fingerprint of the work recorded (kernel names, grids, blocks): compare's 'same work?'",
    "ranks": "distributed ranks found",
    "notes": "notes from the reader (inferred SM counts, truncation, ...)",
    "worst_mechanism": "mechanism of the most serious finding",
    "worst_title": "what that mechanism is",
    "worst_kernel": "kernel name of the most serious finding",
    "worst_count": "how many launches of that kernel share the finding",
    "worst_evidence": "the evidence line, with reported and true values",
    "worst_grid": "its grid [x, y, z]",
    "worst_block": "its block [x, y, z]",
    "worst_reported": "metric -> value the trace shows",
    "worst_true": "metric -> true value",
    "worst_op": "the PyTorch op that launched it",
    "worst_op_dims": "that op's input shapes, when recorded",
    "worst_op_types": "that op's input dtypes, when recorded",
    "worst_python_frame": "innermost Python frame outside torch (the user's launch site), when recorded",
    "worst_file": "the trace file it is in",
    "error": "why the trace could not be read (when the probe errs)",
    "non_finite_spelling": "bare (invalid JSON) | quoted | None: how inf/nan were written",
}


class TraceInspectProbe:
    name = "trace.inspect"
    summary = "Recompute every kernel's blocks/warps per SM and occupancy; name each impossible value's mechanism"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (
        ParamSpec("paths", "paths", "trace file(s) or a per-rank directory", required=True),
        ParamSpec("jobs", "int", "parallel processes for several files", default=None),
    )
    facts: tuple[FactSpec, ...] = tuple(FactSpec(k, "any", v) for k, v in FACT_HELP.items())

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        paths = [p for p in _paths(params.get("paths")) if p]
        if not paths:
            return ProbeResult(Status.SKIP, "no trace file given", facts={"mechanisms": [], "impossible": False})
        try:
            inspection = inspect_paths(paths, params.get("jobs"))
        except InputFileError as exc:
            return ProbeResult(Status.ERROR, str(exc), facts={"mechanisms": [], "impossible": False, "error": str(exc)})
        facts = inspection_facts(inspection)
        report_path = env.settings.report_dir / "trace-inspect.json"
        files: list[str] = []
        try:
            write_own(report_path, dumps(inspection.to_dict()))
            files.append(str(report_path))
        except OutputFileError:
            pass  # the report file is a convenience; the facts are in the transcript
        evidence = [
            f"{g.mechanism} x{g.count} {cut(g.kernel, 4000)}: {g.worst.evidence}"  # whole: files keep it
            + (f" [launched by {launched_by(g.op)}]" if g.op else "")
            for r in inspection.reports
            for g in r.groups
            if g.severity == "error"
        ][:12]
        evidence += facts["notes"][:4]
        if facts["impossible"]:
            status = Status.FAIL
            summary = (
                f"{facts['flagged_kernels']} kernel launch(es) with wrong values; mechanisms "
                f"{', '.join(facts['mechanisms'])}"
            )
        elif facts["rocm"] or facts["cpu_only"]:
            status = Status.SKIP
            summary = "nothing to check: " + (
                "ROCm trace (no such metrics recorded)" if facts["rocm"] else "no GPU kernels in the trace"
            )
        else:
            status = Status.PASS
            summary = f"all {facts['kernels_checked']} kernels agree with the recomputation"
            if facts["large_by_design"]:
                summary += f"; {facts['large_by_design']} have large warps per SM, which is by design (F)"
        return ProbeResult(status, summary, facts=facts, evidence=evidence, files=files)
