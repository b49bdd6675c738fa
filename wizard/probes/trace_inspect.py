"""``trace.inspect``: the trace doctor as a probe, its findings as facts for conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.errors import InputFileError, OutputFileError
from wizard.formatting import plural
from wizard.outputs import write_own
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status
from wizard.serialize import dumps
from wizard.trace.inspect import FindingGroup, Inspection, inspect_paths, launched_by
from wizard.trace.kineto_math import INT32_MAX
from wizard.trace.mechanisms import BY_ID, NEGATIVE, NON_FINITE, ORDER, WRONG, Mechanism, is_wrong
from wizard.untrusted import cut


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _worst(inspection: Inspection) -> FindingGroup | None:
    bugs = [g for r in inspection.reports for g in r.groups if g.wrong]
    if not bugs:
        return None
    return sorted(bugs, key=lambda g: (ORDER.get(g.mechanism, 99), -g.count))[0]


def _where(inspection: Inspection, mechanism: str) -> str:
    """'ranks 0, 3' (or the files) where a mechanism was found, for a multi-file inspection."""
    reports = [r for r in inspection.reports if mechanism in r.mechanisms]
    if len(inspection.reports) < 2 or not reports:
        return ""
    ranks = [r.rank for r in reports if r.rank is not None]
    if len(ranks) == len(reports):
        return f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, sorted(ranks)))}"
    return " in " + ", ".join(cut(r.path.rsplit("/", 1)[-1], 80) for r in reports)


def _found(inspection: Inspection, bug_ids: list[str], worst: str | None) -> tuple[list[str], list[str]]:
    """Every wrong mechanism with where it was found, and what to do for each but the one concluded on:
    a rank directory with A, B and C needs all three named, not the most specific alone."""
    ordered = sorted(bug_ids, key=lambda m: ORDER.get(m, 99))
    found, also = [], []
    for m in ordered:
        known = BY_ID.get(m)
        summary = known.summary if known else "unknown mechanism"
        found.append(f"{m} ({summary}){_where(inspection, m)}")
        if m != worst and known is not None:
            also.append(f"Also {m}{_where(inspection, m)}: {known.remedy}.")
    return found, also


def _suspect_grid(grid: list[int] | None) -> bool:
    """A grid no legal launch has (x above 2^31-1, y or z above 65535, or not positive): the launch's own
    configuration, or its record, is at fault."""
    if not grid:
        return False
    x, y, z = grid
    return x > INT32_MAX or y > 65535 or z > 65535 or min(grid) <= 0


def inspection_facts(inspection: Inspection) -> dict[str, Any]:
    """Facts a playbook can branch on, from a finished inspection."""
    mechanisms = inspection.mechanisms
    bug_ids = sorted(m for m in mechanisms if is_wrong(m))
    worst = _worst(inspection)
    found, also = _found(inspection, bug_ids, worst.mechanism if worst else None)
    reports = inspection.reports
    devices = {d["name"] for r in reports for d in r.devices if d.get("name")}
    facts: dict[str, Any] = {
        "mechanisms": bug_ids,
        "mechanism_counts": {m: mechanisms[m] for m in sorted(mechanisms)},
        "impossible": inspection.impossible,
        "negative_values": any(m in NEGATIVE for m in bug_ids),
        "non_finite_values": any(m in NON_FINITE for m in bug_ids),
        "kernels": sum(r.kernels for r in reports),
        "kernels_checked": sum(r.kernels_checked for r in reports),
        "flagged_kernels": sum(r.wrong_launches for r in reports),  # a launch with C and C' is one launch
        "large_by_design": mechanisms.get(Mechanism.BY_DESIGN.value, 0),
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
        "worst_grid_suspect": _suspect_grid(list(worst.worst.grid) if worst and worst.worst.grid else None),
        "found_by_rank": found,
        "also_do": also,
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
    "mechanisms": f"ids of the wrong mechanisms found ({', '.join(sorted(WRONG, key=ORDER.__getitem__))})",
    "mechanism_counts": "kernels per mechanism id, F (by design) included",
    "impossible": "whether any value is impossible or wrong",
    "negative_values": f"whether any blocks/warps per SM came out negative ({', '.join(sorted(NEGATIVE))})",
    "non_finite_values": f"whether any value was inf or nan ({', '.join(sorted(NON_FINITE))})",
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
    "worst_grid_suspect": "whether that grid is one no legal launch has (x > 2^31-1, y or z > 65535, or <= 0)",
    "found_by_rank": "each wrong mechanism with its summary and, for several files, the ranks it was found on",
    "also_do": "what to do for each wrong mechanism other than the worst one",
    "torch_validator": "what the probed interpreter's torch.profiler._trace_validator says of each file",
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


MAX_VALIDATED = 8  # files given to torch's checker: each is a json.load in the probed interpreter


def _torch_validator(env: Environment, path: str, timeout: float) -> str:
    """PyTorch's own timeline checker on one file, in the probed interpreter (warpwizard never imports
    torch), in one line of evidence beside ours."""
    from wizard.probes.common import run_harness

    name = cut(path.rsplit("/", 1)[-1], 80)
    run = run_harness(env, "validate", [path], timeout=min(timeout, 300.0), log_name="trace-validator")
    data = run.result or {}
    torch = f"torch {cut(str(data.get('torch')), 40)}" if data.get("torch") else "torch"
    if not data.get("available"):
        return f"PyTorch's trace validator not run on {name}: {cut(str(data.get('reason', 'no result')), 200)}"
    if data.get("error"):
        return f"PyTorch's trace validator ({torch}) could not read {name}: {cut(str(data['error']), 300)}"
    violations = data.get("violations") or []
    if data.get("passed"):
        return f"PyTorch's trace validator ({torch}) on {name}: its timeline rules all pass"
    shown = "; ".join(
        f"{cut(str(v.get('rule')), 80)}: {cut(str(v.get('message')), 200)}"
        for v in violations[:3]
        if isinstance(v, dict)
    )
    total = data.get("violations_total", len(violations))
    return f"PyTorch's trace validator ({torch}) on {name}: {total} violation(s): {shown}"


class TraceInspectProbe:
    name = "trace.inspect"
    summary = "Recompute every kernel's blocks/warps per SM and occupancy; name each impossible value's mechanism"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (
        ParamSpec("paths", "paths", "trace files or a per-rank directory", required=True),
        ParamSpec("jobs", "int", "parallel processes for several files", default=None),
        ParamSpec(
            "torch_validator",
            "bool",
            "also run the probed interpreter's torch.profiler._trace_validator on each file (PyTorch 2.12+)",
            default=False,
        ),
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
        facts["torch_validator"] = (
            [_torch_validator(env, r.path, timeout) for r in inspection.reports[:MAX_VALIDATED]]
            if params.get("torch_validator") is True
            else []
        )
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
            if g.wrong
        ][:12]
        evidence += facts["notes"][:4]
        evidence += facts["torch_validator"]
        if facts["impossible"]:
            status = Status.FAIL
            summary = (
                f"{plural(facts['flagged_kernels'], 'kernel launch')} with wrong values; mechanisms "
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
