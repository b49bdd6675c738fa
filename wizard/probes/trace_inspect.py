"""``trace.inspect``: the trace doctor as a probe, its findings as facts for conditions."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Generic, TypedDict, TypeVar

from wizard.environment import Environment
from wizard.errors import InputFileError, OutputFileError
from wizard.formatting import plural, verb
from wizard.outputs import write_own
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts, type_text
from wizard.probes.inspections import inspection as run_inspection
from wizard.progress import NO_PROGRESS, task
from wizard.serialize import dumps
from wizard.threads import start
from wizard.trace.inspection.results import Inspection, TraceInspection
from wizard.trace.kineto_math import INT32_MAX
from wizard.trace.metrics.findings import FindingGroup, launched_by
from wizard.trace.metrics.mechanisms import BY_ID, NEGATIVE, NON_FINITE, ORDER, WRONG, Mechanism, is_wrong
from wizard.trace.read.formats import KINETO_JSON, detect
from wizard.trace.read.reader import iter_trace_files
from wizard.untrusted import cut


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _worst(inspection: Inspection) -> FindingGroup | None:
    bugs = [g for r in inspection.reports for g in r.metrics.groups if g.wrong]
    if not bugs:
        return None
    return sorted(bugs, key=lambda g: (ORDER.get(g.mechanism, 99), -g.count))[0]


def _where(inspection: Inspection, mechanism: str) -> str:
    """'ranks 0, 3' (or the files) where a mechanism was found, for a multi-file inspection."""
    reports = [r for r in inspection.reports if mechanism in r.metrics.mechanisms]
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


class _CalculatorFailure(TypedDict):
    d_capability: str | None
    d_cause: str | None
    d_header: str | None


def _calculator_failure(inspection: Inspection) -> _CalculatorFailure:
    """Mechanism D's capability, and whether an older CUDA header explains it: a capability every header
    knows (7.0) failed for its inputs, and a newer PyTorch would not change that."""
    from wizard.trace.metrics.occupancy import ARCHITECTURES, MIN_CUDA_HEADER

    groups = [
        (r, g)
        for r in inspection.reports
        for g in r.metrics.groups
        if g.mechanism == Mechanism.OCCUPANCY_CALCULATOR.value
    ]
    if not groups:
        return {"d_capability": None, "d_cause": None, "d_header": None}
    report, group = max(groups, key=lambda pair: pair[1].count)
    cc = next((d["compute_capability"] for d in report.metrics.devices if d["id"] == group.worst.device), None)
    major, _, minor = str(cc).partition(".")
    digits = major.isascii() and minor.isascii() and major.isdigit() and minor.isdigit()  # '²' is a digit to isdigit
    key = (int(major), int(minor)) if digits else None
    header = MIN_CUDA_HEADER.get(key) if key else None
    every_header = key in ARCHITECTURES and header is None
    return {"d_capability": cc, "d_cause": "inputs" if every_header else "header", "d_header": header}


def _metric_values(values: Mapping[str, float | None]) -> dict[str, float | str | None]:
    """A launch's metric values as the fact declares them."""
    return {name: value for name, value in values.items()}


def inspection_facts(inspection: Inspection) -> dict[str, Any]:
    """Facts a playbook can branch on, from a finished inspection: those declared here built as their declared
    type (``TraceInspectFacts``, which mypy checks), and each health check's as its declaration says
    (``CheckSpec.facts``)."""
    mechanisms = inspection.mechanisms
    bug_ids = sorted(m for m in mechanisms if is_wrong(m))
    worst = _worst(inspection)
    found, also = _found(inspection, bug_ids, worst.mechanism if worst else None)
    reports = inspection.reports
    devices = {d["name"] for r in reports for d in r.metrics.devices if d.get("name")}
    failure = _calculator_failure(inspection)
    facts: TraceInspectFacts = {
        "mechanisms": bug_ids,
        "mechanism_counts": {m: mechanisms[m] for m in sorted(mechanisms)},
        "impossible": inspection.impossible,
        "negative_values": any(m in NEGATIVE for m in bug_ids),
        "non_finite_values": any(m in NON_FINITE for m in bug_ids),
        "kernels": sum(r.kernels for r in reports),
        "kernels_checked": sum(r.metrics.kernels_checked for r in reports),
        "flagged_kernels": sum(r.metrics.wrong_launches for r in reports),  # a launch with C and C' is one launch
        "large_by_design": mechanisms.get(Mechanism.BY_DESIGN.value, 0),
        "resident_warps": sorted({limit for r in reports for limit in r.metrics.resident_warps}),
        "max_true_warps_per_sm": max((r.metrics.max_true_warps_per_sm or 0.0 for r in reports), default=0.0),
        "rocm": any(r.metrics.rocm for r in reports),
        "rocm_metrics": sum(r.metrics.rocm_metrics for r in reports),
        "cpu_only": all(r.kernels == 0 for r in reports),
        "truncated": any(r.truncation is not None for r in reports),
        "gpus": sorted(devices),
        "files": [r.path for r in reports],
        "workload": inspection.workload,
        "passes": dict(reports[0].written) if reports else {},  # the first trace's: a rank directory's rank 0
        "ranks": [r.rank for r in reports if r.rank is not None],
        "notes": list(dict.fromkeys(n for r in reports for n in r.metrics.notes)),  # each once, not once a rank
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
        "worst_reported": _metric_values(worst.worst.reported) if worst else None,
        "worst_true": _metric_values(worst.worst.true) if worst else None,
        "worst_op": worst.op.op if worst and worst.op else None,
        "worst_op_dims": worst.op.input_dims if worst and worst.op else None,
        "worst_op_types": worst.op.input_types if worst and worst.op else None,
        "worst_python_frame": worst.op.user_frame if worst and worst.op else None,
        "worst_file": next((r.path for r in reports for g in r.metrics.groups if g is worst), None),
        "d_capability": failure["d_capability"],
        "d_cause": failure["d_cause"],
        "d_header": failure["d_header"],
        "non_finite_spelling": _non_finite_spelling(reports),
    }
    return {**facts, **health_facts(inspection)}


def _non_finite_spelling(reports: Sequence[TraceInspection]) -> str | None:
    """How the traces wrote a non-finite value: ``bare`` (``inf``) where any did, else ``quoted``, else None."""
    if any(r.non_finite.get("bare") for r in reports):
        return "bare"
    return "quoted" if any(r.non_finite.get("quoted") for r in reports) else None


def _fix_format(inspection: Inspection) -> tuple[str | None, bool]:
    """The format of the file the fix commands name (the worst of a rank directory, else the first), and whether
    ``trace fix`` can write a copy of it: advice is per format (issue 45 item 11)."""
    from wizard.trace.read.formats import BY_ID

    worst = next(
        (r for r in inspection.reports if r.metrics.groups), inspection.reports[0] if inspection.reports else None
    )
    if worst is None:
        return None, True
    known = BY_ID.get(worst.format)
    return worst.format, known is None or known.rewritable


def _fix_commands(inspection: Inspection) -> dict[str, str]:
    """``trace fix`` with the trace's own path and an output named beside it (a conclusion said
    ``warpwizard trace fix TRACE OUT.json``): the worst file of a rank directory, else the first."""
    import shlex
    from pathlib import Path

    from wizard.profiler import split_trace_name

    worst = next(
        (r for r in inspection.reports if r.metrics.groups), inspection.reports[0] if inspection.reports else None
    )
    if worst is None:
        return {
            "fix_command": "warpwizard trace fix TRACE OUT.json",
            "split_command": "warpwizard trace fix --split-overlaps TRACE OUT.json",
        }
    source = Path(worst.path)
    stem = split_trace_name(source.name)[0] or "trace"
    fixed, lanes = (shlex.quote(str(source.with_name(f"{stem}-{tag}.json"))) for tag in ("fixed", "lanes"))
    path = shlex.quote(str(source))
    return {
        "fix_command": f"warpwizard trace fix {path} {fixed}",
        "split_command": f"warpwizard trace fix --split-overlaps {path} {lanes}",
    }


def _graph_call(inspection: Inspection) -> str:
    """The graph launch call a conclusion names: the trace's own (a ROCm trace's is hipGraphLaunch)."""
    from wizard.trace.health.spec import GRAPH_LAUNCH_CALLS

    found = sorted(
        {e.name for c in inspection.health if c.check == "graph-launches" for e in c.examples} & GRAPH_LAUNCH_CALLS
    )
    if found:
        return " / ".join(found)
    return "hipGraphLaunch" if any(r.metrics.rocm for r in inspection.reports) else "cudaGraphLaunch"


def _ranks_label(where: list[str], total: int) -> str:
    """ "all 8 ranks", "rank 3", "rank 1, rank 2", or "5 ranks": the traces a folded line holds for."""
    noun = "rank" if all(w.startswith("rank ") for w in where) else "trace"
    if len(where) == total:
        return f"both {noun}s" if total == 2 else f"all {plural(total, noun)}"
    return ", ".join(where) if len(where) <= 4 else plural(len(where), noun)


QUIET = ("ok", "not_applicable")


def checked_lines(inspection: Inspection) -> list[str]:
    """Each check once, "id (status): what it found": for one trace as it always was. For several, a check at info
    or worse is a line for each thing it says, labelled with the ranks it says it of; the checks that are ok or not
    applicable, whose numbers differ from rank to rank, are named on one line per status and ranks: 8 ranks' 96
    unlabelled lines made a 7,000-character "checked:" paragraph (issue 44 item 5)."""
    if len(inspection.reports) <= 1:
        return [f"{c.check} ({c.status}): {c.found}" for c in inspection.health]
    total = len(inspection.reports)
    said: dict[tuple[str, str, str], list[str]] = {}
    quiet: dict[tuple[str, str], list[str]] = {}
    for r in inspection.reports:
        for c in r.health_result.checks:
            if c.status in QUIET:
                quiet.setdefault((c.check, c.status), []).append(r.label)
            else:
                said.setdefault((c.check, c.status, c.summary), []).append(r.label)
    lines = [
        f"{check} ({status}) [{_ranks_label(w, total)}]: {summary}" for (check, status, summary), w in said.items()
    ]
    order = {
        c: i for i, c in enumerate(dict.fromkeys(c.check for r in inspection.reports for c in r.health_result.checks))
    }
    lines.sort(key=lambda line: order[line.split(" ", 1)[0]])  # stable: each check's lines together
    folded: dict[tuple[str, str], list[str]] = {}  # (status, where) -> checks
    for (check, status), where in quiet.items():
        folded.setdefault((status, _ranks_label(where, total)), []).append(check)
    lines += [f"{status} [{where}]: {', '.join(checks)}" for (status, where), checks in folded.items()]
    return lines + [f"{c.check} ({c.status}) [all ranks]: {c.found}" for c in inspection.job_health]


def health_facts(inspection: Inspection) -> dict[str, Any]:
    """The health check's verdicts as facts: which problems, where a triage continues, and each check's
    declared facts (``CheckSpec.facts``: its counts summed over a rank directory's traces as it says)."""
    from wizard.trace.health.checks import CHECK_IDS, TRIAGE_ORDER, check_facts
    from wizard.trace.health.spec import RANK

    checks = inspection.health
    problems = [c for c in checks if c.problem]
    ids = [i for i in CHECK_IDS if any(c.check == i for c in problems)]
    playbooks = [p for p in TRIAGE_ORDER if any(c.playbook == p for c in problems)]
    chosen = next(
        (c for c in sorted(problems, key=lambda c: -RANK[c.status]) if playbooks and c.playbook == playbooks[0]), None
    )
    commands = _fix_commands(inspection)
    trace_format, rewritable = _fix_format(inspection)
    facts: TraceInspectFacts = {
        "health_status": inspection.health_status,
        "health_problems": ids,
        "health_playbooks": playbooks,
        "health_next": playbooks[0] if playbooks else None,
        "health_summary": [f"{c.check}: {c.summary}" for c in sorted(problems, key=lambda c: ids.index(c.check))],
        "health_checks": checked_lines(inspection),
        "health_lines": [line.plain() for line in inspection.health_summary()],
        "health_chosen_by": f"{chosen.check} ({chosen.status}): {chosen.summary}" if chosen else None,
        "fix_command": commands["fix_command"],
        "split_command": commands["split_command"],
        "trace_format": trace_format,
        "fix_rewritable": rewritable,
        "graph_call": _graph_call(inspection),
    }
    return {**facts, **check_facts(checks, inspection.job_health)}


def verdict(facts: Mapping[str, Any]) -> tuple[Status, str]:
    """The probe's status is the health verdict's, as the gate's (``trace inspect`` exits 1 at a check at warning
    or worse): FAIL with the checks that found a problem, else SKIP where no kernel could be checked, else PASS; a
    harmless wrong value (E alone: impossible-metrics is ``info``) is said, and fails nothing."""
    problems = list(facts["health_problems"])
    metrics = _metrics_said(facts)
    if problems:
        found = f"{plural(len(problems), 'health problem')} ({facts['health_status']}): {', '.join(problems)}"
        return Status.FAIL, (f"{metrics}; " if facts["impossible"] else "") + found
    if facts["impossible"]:
        return Status.PASS, metrics
    if facts["rocm"] or facts["cpu_only"]:
        return Status.SKIP, _nothing_checked(facts)
    checked, large = facts["kernels_checked"], facts["large_by_design"]
    summary = (
        f"{verb(checked, 'the', 'all')} {plural(checked, 'kernel')} {verb(checked, 'agrees', 'agree')} "
        "with the recomputation"
        if checked
        else f"none of the {plural(facts['kernels'], 'kernel')} carries blocks/warps per SM or occupancy: "
        "nothing to recompute"
    )
    if large:
        summary += f"; {large} {verb(large, 'has', 'have')} large warps per SM, which is by design (F)"
    return Status.PASS, summary


def _metrics_said(facts: Mapping[str, Any]) -> str:
    """The wrong kernel values found, and whether they are harmless (E alone is the profiler's and harmless)."""
    mechanisms = facts["mechanisms"]
    harmless = all(BY_ID[m].verdict == "info" for m in mechanisms if m in BY_ID) and all(m in BY_ID for m in mechanisms)
    what = "a wrong value that is the profiler's and harmless" if harmless else "wrong values"
    return f"{plural(facts['flagged_kernels'], 'kernel launch')} with {what}; mechanisms {', '.join(mechanisms)}"


def _nothing_checked(facts: Mapping[str, Any]) -> str:
    if not facts["rocm"]:
        return "nothing to check: no GPU kernels in the trace"
    if not facts["rocm_metrics"]:
        return "nothing to check: ROCm trace (no such metrics recorded)"
    n = facts["rocm_metrics"]
    return (
        f"nothing checked: ROCm trace ({plural(n, 'kernel')} {verb(n, 'carries', 'carry')} blocks/warps per SM; "
        "warpwizard does not check AMD values)"
    )


_WRONG_IDS = ", ".join(sorted(WRONG, key=ORDER.__getitem__))


class TraceInspectFacts(TypedDict, total=False):
    """What trace.inspect finds, declared once: the help, ``probes``, the schema and the loader read it."""

    mechanisms: Annotated[list[str], f"ids of the wrong mechanisms found ({_WRONG_IDS})"]
    mechanism_counts: Annotated[dict[str, int], "kernels per mechanism id, F (by design) included"]
    impossible: Annotated[bool, "whether any value is impossible or wrong"]
    negative_values: Annotated[
        bool, f"whether any blocks/warps per SM came out negative ({', '.join(sorted(NEGATIVE))})"
    ]
    non_finite_values: Annotated[bool, f"whether any value was inf or nan ({', '.join(sorted(NON_FINITE))})"]
    kernels: Annotated[int, "GPU kernels in the traces"]
    kernels_checked: Annotated[int, "kernels with launch dimensions that were recomputed"]
    flagged_kernels: Annotated[int, "kernels with a profiler-bug finding"]
    large_by_design: Annotated[int, "kernels whose large warps per SM are correct (F)"]
    max_true_warps_per_sm: Annotated[float, "largest recomputed warps per SM"]
    rocm: Annotated[bool, "whether the trace came from an AMD GPU (no such metrics recorded)"]
    cpu_only: Annotated[bool, "whether no GPU kernel was recorded at all"]
    truncated: Annotated[bool, "whether a trace file was cut off"]
    gpus: Annotated[list[str], "GPU names from the trace's device properties"]
    files: Annotated[list[str], "trace files read"]
    workload: Annotated[str, "fingerprint of the work recorded (kernel names, grids, blocks): compare's 'same work?'"]
    passes: Annotated[
        dict[str, Any], "each other trace pass's written result (an installed one's), by its name; the first trace's"
    ]
    ranks: Annotated[list[int], "distributed ranks found"]
    notes: Annotated[list[str], "notes from the reader (inferred SM counts, truncation, ...)"]
    worst_mechanism: Annotated[str | None, "mechanism of the most serious finding"]
    worst_title: Annotated[str | None, "what that mechanism is"]
    worst_kernel: Annotated[str | None, "kernel name of the most serious finding"]
    worst_count: Annotated[int, "how many launches of that kernel share the finding"]
    worst_evidence: Annotated[str | None, "the evidence line, with reported and true values"]
    worst_grid: Annotated[list[int] | None, "its grid [x, y, z]"]
    worst_grid_suspect: Annotated[
        bool, "whether that grid is one no legal launch has (x > 2^31-1, y or z > 65535, or <= 0)"
    ]
    found_by_rank: Annotated[
        list[str], "each wrong mechanism with its summary and, for several files, the ranks it was found on"
    ]
    also_do: Annotated[list[str], "what to do for each wrong mechanism other than the worst one"]
    torch_validator: Annotated[
        list[str], "what the probed interpreter's torch.profiler._trace_validator says of each file"
    ]
    worst_block: Annotated[list[int] | None, "its block [x, y, z]"]
    worst_reported: Annotated[dict[str, float | str | None] | None, "metric -> value the trace shows"]
    worst_true: Annotated[dict[str, float | str | None] | None, "metric -> true value"]
    worst_op: Annotated[str | None, "the PyTorch op that launched it"]
    worst_op_dims: Annotated[str | None, "that op's input shapes, when recorded"]
    worst_op_types: Annotated[str | None, "that op's input dtypes, when recorded"]
    worst_python_frame: Annotated[
        str | None, "innermost Python frame outside torch (the user's launch site), when recorded"
    ]
    worst_file: Annotated[str | None, "the trace file it is in"]
    error: Annotated[str, "why the trace could not be read (when the probe errs)"]
    non_finite_spelling: Annotated[str | None, "bare (invalid JSON) | quoted | None: how inf/nan were written"]
    health_status: Annotated[str, "the worst health-check status: ok, not_applicable, info, warning or error"]
    health_problems: Annotated[list[str], "ids of the health checks at warning or worse (docs/health.md)"]
    health_playbooks: Annotated[
        list[str], "the playbooks those problems continue into, in triage order (missing data first)"
    ]
    health_next: Annotated[str | None, "the first of them: where a triage continues (None when the trace is healthy)"]
    health_summary: Annotated[list[str], "one line per problem: check id and what it found"]
    health_checks: Annotated[
        list[str],
        "one line per check run, problem or not: check id, status and what it found (several traces: each line "
        "once, with the traces it holds for; the checks ok or not applicable named on one line per status)",
    ]
    health_lines: Annotated[
        list[str], "the health summary as `trace inspect` prints it: the checks not ok, worst first, ranks alike once"
    ]
    health_chosen_by: Annotated[
        str | None, "the check whose problem chose health_next, with what it found (None when healthy)"
    ]
    fix_command: Annotated[
        str, "the `trace fix` command that writes a corrected copy of this trace, its path filled in"
    ]
    split_command: Annotated[str, "the `trace fix --split-overlaps` command for this trace, its path filled in"]
    trace_format: Annotated[
        str | None, "the format of the trace those commands name: kineto-json, nsys-sqlite or perfetto-proto"
    ]
    fix_rewritable: Annotated[bool, "whether `trace fix` can write a copy of that trace (Chrome trace JSON only)"]
    graph_call: Annotated[str, "the graph launch call the trace has: cudaGraphLaunch, hipGraphLaunch (ROCm) or both"]
    resident_warps: Annotated[
        list[int],
        "the most warps an SM of the trace's GPUs holds at once (maxThreadsPerMultiprocessor / 32: 32 on cc 7.5, "
        "48 on most consumer GPUs, 64 on data-centre ones), each once",
    ]
    rocm_metrics: Annotated[
        int, "kernels of ROCm traces that carry blocks/warps per SM (0: the profiler recorded none)"
    ]
    d_capability: Annotated[str | None, "the compute capability of mechanism D's launches (e.g. '7.0'), None without D"]
    d_cause: Annotated[
        str | None,
        "header (a CUDA header older than the GPU) | inputs (every CUDA header knows the capability: the "
        "calculator rejected the launch's inputs) | None without D",
    ]
    d_header: Annotated[
        str | None,
        "the first CUDA release whose cuda_occupancy.h knows D's capability (e.g. '11.8'); None when every "
        "header knows it, or none warpwizard knows of does",
    ]


T = TypeVar("T")

MAX_VALIDATED = 8  # files given to torch's checker: each is a json.load in the probed interpreter


def _torch_validator(env: Environment, path: str, timeout: float) -> str:
    """PyTorch's own timeline checker on one file, in the probed interpreter (warpwizard never imports
    torch), in one line of evidence beside ours."""
    from wizard.probes.common import run_harness

    name = cut(path.rsplit("/", 1)[-1], 80)
    fmt = detect(Path(path))
    if fmt is not KINETO_JSON:  # it json.loads the file: another format would only fail to decode
        return f"PyTorch's trace validator not run on {name}: it reads Chrome JSON; this is {fmt.name_with_article}"
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
        f"{cut(str(v.get('rule')), 80)}: {cut(str(v.get('message')), 500)}"
        for v in violations[:3]
        if isinstance(v, dict)
    )
    total = data.get("violations_total")
    total = total if isinstance(total, int) and not isinstance(total, bool) else len(violations)
    # What the validator is, in its own words (torch/profiler/_trace_validator.py, lines 2-3, torch 2.13.0:
    # "Validates Chrome traces emitted by torch.profiler against rules derived from production issues"), and
    # that it decides nothing here: a raw "13 violations: _check_nccl_metadata: ..." said neither.
    return (
        f"PyTorch's trace validator ({torch}), PyTorch's own rules for a well-formed trace taken from production "
        f"issues, finds {plural(total, 'violation')} in {name}: {shown}. Each names events a tool that trusts "
        "those rules may misread; it is a second opinion beside the health checks, which decide the diagnosis"
    )


def _torch_validators(env: Environment, paths: list[str], timeout: float) -> list[str]:
    """The validator's line for each of the first files the inspection reads (the same files, in its order)."""
    files = list(iter_trace_files(paths))[:MAX_VALIDATED]
    lines = [_torch_validator(env, str(f), timeout) for f in files]
    names = [cut(str(f).rsplit("/", 1)[-1], 80) for f in files]
    return fold_alike(lines, names)


def fold_alike(lines: list[str], names: list[str]) -> list[str]:
    """Lines that say the same of different files, said once with the files they are about: every rank's "its
    timeline rules all pass" was a line a rank (issue 44 item 5); "each of the 8 files" where all agree."""
    groups: dict[str, list[str]] = {}
    for line, name in zip(lines, names, strict=True):
        groups.setdefault(line.replace(f" {name}", " {files}"), []).append(name)
    if len(groups) == len(lines):
        return lines
    out = []
    for template, files in groups.items():
        said = f"each of the {len(files)} files" if len(files) == len(lines) else ", ".join(files)
        out.append(template.replace("{files}", said if len(files) > 1 else files[0]))
    return out


def finding_evidence(inspection: Inspection, limit: int = 12) -> list[str]:
    """The wrong findings' evidence, each mechanism's paragraph once (for its first kernel, with the rank), then
    how many other kernels it holds for: the E paragraph was said for each kernel of each rank (issue 44 item 5);
    the report has each one's numbers."""
    several = len(inspection.reports) > 1
    said: list[str] = []
    others: dict[str, list[str]] = {}
    for r in inspection.reports:
        for g in (g for g in r.metrics.groups if g.wrong):
            if g.mechanism in others:
                others[g.mechanism].append(r.label)
                continue
            others[g.mechanism] = []
            where = f" [{r.label}]" if several else ""
            said.append(
                f"{g.mechanism} x{g.count} {cut(g.kernel, 4000)}{where}: {g.worst.evidence}"  # whole: files keep it
                + (f" [launched by {launched_by(g.op)}]" if g.op else "")
            )
    for mechanism, labels in others.items():
        if labels:
            ranks = sorted(set(labels), key=labels.index)
            on = f", on {plural(len(ranks), 'rank' if all(x.startswith('rank ') for x in ranks) else 'trace')}"
            said.append(
                f"{mechanism}: the same for {plural(len(labels), 'other kernel')}{on if several else ''} "
                "(the report has each one's numbers)"
            )
    return said[:limit]


class _Beside(Generic[T]):
    """Work started in a thread beside the caller's (PyTorch's validator is a fresh interpreter that
    imports torch: seconds the inspection need not wait for). A daemon thread: Ctrl-C does not wait
    for it, and its program dies with this process (wizard/runner.py)."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="beside", daemon=True)
        start(self._thread)

    def _run(self) -> None:
        try:
            self._value = self._work()
        except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it as its own
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


def _facts() -> tuple[FactSpec, ...]:
    """The probe's facts: ``TraceInspectFacts``, each health check's declared facts after ``graph_call``."""
    from wizard.trace.health.checks import CHECK_FACTS

    declared = declared_facts(TraceInspectFacts)
    at = next(n for n, f in enumerate(declared) if f.name == "graph_call") + 1
    checks = tuple(FactSpec(f.name, type_text(f.type), f.meaning) for f in CHECK_FACTS)
    return declared[:at] + checks + declared[at:]


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
    facts: tuple[FactSpec, ...] = _facts()

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        paths = [p for p in _paths(params.get("paths")) if p]
        if not paths:
            return ProbeResult(Status.SKIP, "no trace file given", facts={"mechanisms": [], "impossible": False})
        progress = env.system.progress
        validate = params.get("torch_validator") is True
        # The validator's thread reports nothing itself: this probe's line says it runs, and nothing of it
        # stays on the screen when the inspection fails and the validator is left to finish on its own.
        silent = dataclasses.replace(env, system=env.system.replace(progress=NO_PROGRESS))
        try:
            validator = _Beside(lambda: _torch_validators(silent, paths, timeout)) if validate else None
            doing = "reading the trace and running PyTorch's trace validator" if validate else "reading the trace"
            with task(progress, self.name, doing=doing):
                inspection = run_inspection(env, paths, params.get("jobs"), progress=progress, keep_contents=True)
        except InputFileError as exc:
            return ProbeResult(Status.ERROR, str(exc), facts={"mechanisms": [], "impossible": False, "error": str(exc)})
        facts = inspection_facts(inspection)
        facts["torch_validator"] = []
        if validator is not None:
            with task(progress, self.name, doing="running PyTorch's trace validator"):
                facts["torch_validator"] = validator.result()
        report_path = env.settings.report_dir / "trace-inspect.json"
        files: list[str] = []
        try:
            write_own(report_path, dumps(inspection.to_dict()))
            files.append(str(report_path))
        except OutputFileError:
            pass  # the report file is a convenience; the facts are in the transcript
        evidence = finding_evidence(inspection)
        evidence += facts["notes"][:4]
        evidence += facts["torch_validator"]
        status, summary = verdict(facts)
        return ProbeResult(status, summary, facts=facts, evidence=evidence, files=files)
