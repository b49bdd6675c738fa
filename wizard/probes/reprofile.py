"""``profiler.reprofile``: run the workload again under torch.profiler, then under every
other profiler or profiler version available, and say whether the anomaly follows the
profiler or the kernel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import WORKLOAD, FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.common import (
    HarnessRun,
    profile_once,
    run_harness,
    shown_command,
)
from wizard.probes.cuda_errors import find_cuda_failure
from wizard.probes.external_profilers import (
    NCU_METRICS,
    ExternalKernel,
    NcuPermissionError,
    ncu_evidence,
    parse_ncu_csv,
    read_nsys_sqlite,
)
from wizard.probes.inspections import inspection
from wizard.probes.trace_inspect import inspection_facts
from wizard.probes.verdicts import Reprofiled, reprofile_verdict
from wizard.progress import task


def _nsys(env: Environment, argv: list[str], out_dir: Path, timeout: float) -> tuple[list[ExternalKernel], str]:
    nsys = env.system.which("nsys")
    if nsys is None:
        return [], "nsys not installed"
    base = out_dir / "nsys-report"
    from wizard.probes.common import HARNESS

    cmd = [
        nsys,
        "profile",
        "--trace=cuda,nvtx",
        "--sample=none",
        "-f",
        "true",
        "-o",
        str(base),
        "--export=sqlite",
        env.settings.python,
        str(HARNESS),
        "run",
        "--",
        *argv,
    ]
    with task(env.system.progress, "", doing=f"profiling `{shown_command(['python', *argv])}` under Nsight Systems"):
        result = env.system.runner.run(cmd, timeout=timeout, env=env.child_env(), log_path=out_dir / "nsys.log")
    db = base.with_suffix(".sqlite")
    if not db.exists():
        return [], f"nsys ran (exit {result.returncode}) but wrote no SQLite export"
    return read_nsys_sqlite(db), "ok"


def _ncu(
    env: Environment, argv: list[str], out_dir: Path, timeout: float, kernel: str
) -> tuple[list[dict[str, Any]], str]:
    """Nsight Compute's authoritative launch and occupancy numbers for the flagged kernel."""
    ncu = env.system.which("ncu")
    if ncu is None:
        return [], "ncu not installed"
    from wizard.probes.common import HARNESS

    name = re.escape(kernel.split("(", maxsplit=1)[0].split("<", maxsplit=1)[0].replace("void ", "").strip()[:60])
    log = out_dir / "ncu.csv"
    cmd = [
        ncu,
        "--target-processes",
        "all",
        "-k",
        f"regex:{name}",
        "-c",
        "3",
        "--metrics",
        NCU_METRICS,
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--clock-control",
        "none",
        "--log-file",
        str(log),
        env.settings.python,
        str(HARNESS),
        "run",
        "--",
        *argv,
    ]
    with task(env.system.progress, "", doing=f"profiling `{shown_command(['python', *argv])}` under Nsight Compute"):
        result = env.system.runner.run(cmd, timeout=timeout * 4, env=env.child_env(), log_path=out_dir / "ncu-run.log")
    text = (log.read_text(encoding="utf-8", errors="replace") if log.exists() else "") + result.output
    try:
        rows = parse_ncu_csv(text)
    except NcuPermissionError as exc:
        return [], str(exc)
    return rows, "ok" if rows else f"ncu profiled no kernel matching {name!r} (exit {result.returncode})"


def _workload_failed(run: HarnessRun, cuda: bool) -> ProbeResult | None:
    """The workload did not run to its end under the profiler: a CUDA error, or any other failure.

    Seen on an H200: after a device-side assert even torch.profiler's own stop raises the error.
    Either way the run's metrics mean nothing, and the failure is the finding.
    """
    assert run.result is not None
    exit_code = run.result.get("exit_code")
    profiler_error = run.result.get("profiler_error")
    if not profiler_error and exit_code in (0, None):
        return None
    failure = find_cuda_failure(run.output)
    facts: dict[str, Any] = {
        "cuda_available": cuda,
        "workload_failed": True,
        "exit_code": exit_code,
        "workload_error": failure.message if failure else None,
        "timed_out": False,
    }
    evidence = [f"profiler stop: {profiler_error}"] if profiler_error else []
    if failure is not None:
        if failure.python_frame:
            evidence.append(f"the workload failed at {failure.python_frame}")
        summary = (
            f"the workload hit a CUDA error under the profiler ({failure.message})"
            + (", so torch.profiler could not finish its trace" if profiler_error else "")
            + ": a kernel failed, and the metrics of a failed run mean nothing; CUDA_LAUNCH_BLOCKING=1 "
            "(step 4) finds which kernel"
        )
    else:
        tail = [line for line in run.output.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
        facts["output_tail"] = str(run.result.get("failure") or tail[0])[:300]
        evidence.append(f"it ended with: {facts['output_tail']}")
        summary = f"the workload failed (exit {exit_code}) before it finished; fix it so it runs to the end, then rerun"
    return ProbeResult(Status.ERROR, summary, facts=facts, evidence=evidence, files=[run.command.log_path or ""])


class ReprofileFacts(TypedDict, total=False):
    """The facts ReprofileProbe declares once (help, ``probes``, the schema and the loader read them)."""

    trace: Annotated[str, "the fresh torch.profiler trace"]
    cuda_available: Annotated[bool, "whether the workload saw a CUDA device"]
    reproduced: Annotated[bool, "whether the fresh trace shows impossible values again"]
    mechanisms: Annotated[list[str], "mechanisms in the fresh trace"]
    follows: Annotated[str, "profiler | kernel | not reproduced | unknown"]
    profilers_run: Annotated[list[str], "what ran"]
    profilers_skipped: Annotated[dict[str, str], "what could not run, and why"]
    versions: Annotated[dict[str, list[str]], "interpreter -> mechanisms found with its torch"]
    comparisons: Annotated[
        dict[str, dict[str, str]], "another torch's trace beside this run's: comparability and outcome"
    ]
    workload_failed: Annotated[bool, "whether the workload failed (a non-zero exit or a CUDA error)"]
    exit_code: Annotated[int | None, "the workload's exit code under the profiler"]
    output_tail: Annotated[str, "how a failed workload ended: its exception, or its last line of output"]
    workload_error: Annotated[str | None, "the CUDA error that stopped the workload under the profiler, or None"]
    ncu: Annotated[dict[str, float | str | None], "Nsight Compute's launch and occupancy metrics of the worst kernel"]


class ReprofileProbe:
    name = "profiler.reprofile"
    summary = "Re-run the workload under torch.profiler and every other available profiler; compare"
    runs_programs = "the workload under torch.profiler, the legacy profiler, nsys and ncu"
    params: tuple[ParamSpec, ...] = (
        WORKLOAD,
        ParamSpec(
            "other_python",
            "list[str]",
            "interpreters of other environments (other torch versions)",
            default=None,
            runs=True,
        ),
    )
    facts: tuple[FactSpec, ...] = declared_facts(ReprofileFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        profiled = profile_once(
            env, self.name, dict(params), folder="reprofile", trace_name="torch-profiler.json", timeout=timeout
        )
        if isinstance(profiled, ProbeResult):
            return profiled
        argv, out_dir, trace, run, cuda = profiled.argv, profiled.out_dir, profiled.trace, profiled.run, profiled.cuda
        failed = _workload_failed(run, cuda)
        if failed is not None:
            return failed
        if not trace.exists():
            return ProbeResult(
                Status.ERROR,
                f"the profiler wrote no trace (workload exit {profiled.result.get('exit_code')})",
                facts={"cuda_available": cuda},
                files=[run.command.log_path or ""],
            )
        gathered = _Gathered(trace, cuda, inspection_facts(inspection(env, [str(trace)], keep_contents=True)))
        gathered.ran.append(f"torch.profiler ({profiled.result.get('torch_version')})")
        gathered.files += [str(trace), run.command.log_path or ""]
        others = list(params.get("other_python") or env.settings.compare_pythons)
        _other_versions(env, others, argv, out_dir, timeout=timeout, found=gathered)
        if cuda:
            _legacy_control(env, argv, out_dir, timeout, gathered)
            _external_profilers(env, argv, out_dir, timeout, gathered)
        else:  # no kernel ran: nothing a second profiler could count differently (and a torch start saved)
            gathered.skipped["legacy"] = gathered.skipped["nsys"] = gathered.skipped["ncu"] = "no CUDA device"
        fresh = gathered.fresh
        status, follows, summary = reprofile_verdict(
            Reprofiled(
                cuda, bool(fresh["impossible"]), tuple(fresh["mechanisms"]), gathered.versions, gathered.nsys_ran
            )
        )
        evidence = gathered.evidence if cuda else [f"ran: {', '.join(gathered.ran)}", skipped_words(gathered.skipped)]
        return ProbeResult(status, summary, facts=gathered.facts(follows), evidence=evidence, files=gathered.files)


def skipped_words(skipped: dict[str, str]) -> str:
    """The profilers that did not run, grouped by why, in words (a Python dict was printed as evidence):
    ``skipped (no CUDA device): legacy, nsys, ncu``."""
    reasons: dict[str, list[str]] = {}
    for name, why in skipped.items():
        reasons.setdefault(why, []).append(name)
    return "; ".join(f"skipped ({why}): {', '.join(names)}" for why, names in reasons.items()) or "skipped: none"


@dataclass
class _Gathered:
    """What re-profiling produced, as it comes in."""

    trace: Path
    cuda: bool
    fresh: dict[str, Any]
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    versions: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    nsys_ran: bool = False
    ncu: dict[str, Any] | None = None
    comparisons: dict[str, dict[str, str]] = field(default_factory=dict)

    def facts(self, follows: str) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "trace": str(self.trace),
            "workload_error": None,
            "workload_failed": False,
            "exit_code": 0,
            "cuda_available": self.cuda,
            "mechanisms": self.fresh["mechanisms"],
            "reproduced": bool(self.fresh["impossible"]),
            "follows": follows,
            "profilers_run": self.ran,
            "profilers_skipped": self.skipped,
            "versions": self.versions,
            "comparisons": self.comparisons,
        }
        if self.ncu is not None:
            facts["ncu"] = self.ncu
        return facts


def _legacy_control(env: Environment, argv: list[str], out_dir: Path, timeout: float, found: _Gathered) -> None:
    legacy = out_dir / "legacy-profiler.txt"
    control = run_harness(env, "legacy", [str(legacy), "--", *argv], timeout=timeout, log_name="reprofile-legacy")
    if control.result is not None and legacy.exists():
        found.ran.append("legacy autograd profiler (control: no Kineto arithmetic)")
        found.files.append(str(legacy))
    else:
        found.skipped["legacy"] = "the legacy profiler did not complete"


def _other_versions(
    env: Environment, others: list[str], argv: list[str], out_dir: Path, *, timeout: float, found: _Gathered
) -> None:
    """The same workload under each other interpreter (another torch version)."""
    for other in others:
        other_trace = out_dir / f"torch-profiler-{Path(other).parent.parent.name or 'other'}.json"
        other_run = run_harness(
            env, "profile", [str(other_trace), "--", *argv], timeout=timeout, log_name="reprofile-other", python=other
        )
        if other_run.result is None or not other_trace.exists():
            found.skipped[other] = "did not produce a trace"
            continue
        version = str(other_run.result.get("torch_version"))
        if not _beside(env, found, other_trace, f"torch {version} ({other})"):
            found.skipped[other] = f"torch {version}'s trace cannot be compared with this one (evidence)"
            continue
        found.versions[version] = inspection_facts(inspection(env, [str(other_trace)]))["mechanisms"]
        found.ran.append(f"torch.profiler ({version}, {other})")
        found.files.append(str(other_trace))


def _beside(env: Environment, found: _Gathered, other_trace: Path, label: str) -> bool:
    """Another version's trace beside this run's, by ``warpwizard diff``'s comparison (comparable first): its verdict
    and what became of the flagged launches go in the evidence; a pair that cannot be compared decides nothing
    (issue 50: "a comparison that could not be made has not shown the absence of a regression")."""
    from wizard.errors import InputFileError, MissingDependency, UsageError
    from wizard.probes.profile_compare import compare, decide

    try:
        diff = compare(env, str(found.trace), str(other_trace))
    except (InputFileError, UsageError, MissingDependency) as exc:
        found.evidence.append(f"{label}: cannot compare ({exc})")
        return False
    outcome, gone, kept = decide(diff)
    blocks = [f.name for f in diff.factors if f.status == "differs" and f.effect == "blocks"]
    found.comparisons[label] = {"comparability": diff.verdict, "outcome": outcome}
    found.evidence.append(
        f"{label} beside this run: {diff.verdict}"
        + (f" ({', '.join(blocks)} differ)" if blocks else f"; the flagged launches: {outcome}")
        + (f" ({', '.join(gone)} gone)" if gone else "")
        + (f" ({', '.join(kept)} kept)" if kept else "")
    )
    return bool(diff.verdict != "not comparable")


def _external_profilers(env: Environment, argv: list[str], out_dir: Path, timeout: float, found: _Gathered) -> None:
    """Nsight Systems' raw launch dimensions and Nsight Compute's occupancy for the flagged kernel."""
    fresh = found.fresh
    found.evidence.append(f"fresh torch.profiler trace: mechanisms {fresh['mechanisms'] or 'none'}")
    kernels, nsys_status = _nsys(env, argv, out_dir, timeout)
    found.nsys_ran = nsys_status == "ok"
    if found.nsys_ran:
        found.ran.append("Nsight Systems (raw CUPTI launch dimensions)")
    else:
        found.skipped["nsys"] = nsys_status
    worst = fresh["worst_kernel"]
    if not worst:
        return
    match = [k for k in kernels if worst[:40] in k.name or k.name[:40] in worst]
    if match:
        k = match[0]
        found.evidence.append(
            f"nsys: {k.name[:60]} grid {k.grid} block {k.block} on {k.num_sms} SMs -> "
            f"true blocks per SM {k.blocks_per_sm}, warps per SM {k.warps_per_sm}"
        )
    rows, ncu_status = _ncu(env, argv, out_dir, timeout, worst)
    if ncu_status == "ok" and rows:
        found.ran.append("Nsight Compute (launch and occupancy metrics)")
        found.evidence.append(ncu_evidence(rows[0]))
        found.ncu = rows[0]
    else:
        found.skipped["ncu"] = ncu_status
