"""``profile.compare``: step 1 and step 5 of the method with a second profile the user already has.

"Profile with another profiler or PyTorch: if the anomaly disappears, it is the profiler"; "run on other hardware".
Given the trace that shows wrong values and a profile of the same workload from another version, profiler or GPU,
this decides **disappears** (the launches that read wrong here read right there: the profiler's), **persists**
(they read wrong there too) or **cannot tell** (the two are not comparable, or the other profile has none of the
flagged launches), through `warpwizard diff`'s comparison (wizard/diff.py), its comparability verdict in the
evidence. A comparison that could not be made decides nothing: the probe skips with the factors that block it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from wizard.environment import Environment
from wizard.errors import InputFileError, MissingDependency, UsageError
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts

Outcome = Literal["disappears", "persists", "cannot tell"]


class ProfileCompareFacts(TypedDict, total=False):
    """The facts ProfileCompareProbe declares once."""

    verdict: Annotated[str, "comparable, comparable with caveats, or not comparable"]
    outcome: Annotated[str, "disappears, persists, or cannot tell"]
    disappearing: Annotated[list[str], "mechanisms wrong here that read right in the other profile"]
    persisting: Annotated[list[str], "mechanisms wrong in both"]
    blocking: Annotated[list[str], "the factors that make the two not comparable"]
    other: Annotated[str, "the other profile compared with"]


def decide(diff: Any) -> tuple[Outcome, list[str], list[str]]:
    """The outcome from a ProfileDiff: which mechanisms disappear, which persist (BEFORE is this trace)."""
    if diff.verdict == "not comparable":
        return "cannot tell", [], []
    gone = sorted({m for w in diff.wrong for m in w.before if not w.after})
    kept = sorted({m for w in diff.wrong for m in w.before if w.after})
    if kept:
        return "persists", gone, kept
    if gone:
        return "disappears", gone, kept
    return "cannot tell", gone, kept


def compare(env: Environment, trace: str, other: str) -> Any:
    """The comparison through the run's inspections: the trace the flagship read is not read again (and the other
    profile, once read here, is the run's too); an Nsight Compute report on the other side is joined instead."""
    from wizard.diff import Side, compare_sides, load_side, ncu_beside
    from wizard.ncu import is_ncu, read_ncu
    from wizard.probes.inspections import inspection

    def profiles(path: str) -> list[Any]:
        return [r.profile for r in inspection(env, [path]).reports]

    here = Side(Path(trace).name, profiles(trace))
    if is_ncu(Path(other)):
        return ncu_beside(here, Path(other).name, read_ncu(other, env.system.runner))
    return compare_sides(here, load_side(other, profiles))


class ProfileCompareProbe:
    name = "profile.compare"
    summary = "Compare the trace with a profile of the same workload from another PyTorch, profiler or GPU"
    runs_programs = ""  # reads two files; an .ncu-rep through warpwizard's own bounded reader process
    params: tuple[ParamSpec, ...] = (
        ParamSpec("trace", "path", "the trace that shows the wrong values", required=True),
        ParamSpec("other", "path", "a profile of the same workload: another version, profiler or GPU", default=""),
    )
    facts: tuple[FactSpec, ...] = declared_facts(ProfileCompareFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        trace, other = str(params.get("trace") or ""), str(params.get("other") or "")
        if not other:
            return ProbeResult(Status.SKIP, "no second profile given: nothing to compare", facts={"other": ""})
        try:
            diff = compare(env, trace, other)
        except (InputFileError, UsageError, MissingDependency) as exc:
            return ProbeResult(Status.SKIP, f"cannot compare: {exc}", facts={"other": other, "outcome": "cannot tell"})
        outcome, gone, kept = decide(diff)
        blocking = [f.name for f in diff.factors if f.effect == "blocks" and f.status == "differs"]
        facts = {
            "verdict": diff.verdict, "outcome": outcome, "disappearing": gone, "persisting": kept,
            "blocking": blocking, "other": Path(other).name,
        }  # fmt: skip
        evidence = [f"comparability: {diff.verdict}"] + [
            f"{f.name}: {f.before} here, {f.after} there ({f.meaning})" for f in diff.factors if f.status == "differs"
        ]
        evidence += diff.mechanisms[:8]
        if outcome == "disappears":
            summary = f"{', '.join(gone)} disappear in {Path(other).name}: the profiler's, not the kernel's"
            return ProbeResult(Status.FAIL, summary, facts=facts, evidence=evidence)
        if outcome == "persists":
            summary = f"{', '.join(kept)} persist in {Path(other).name}: the same launches read wrong there too"
            return ProbeResult(Status.PASS, summary, facts=facts, evidence=evidence)
        why = (
            f"not comparable ({', '.join(blocking)})"
            if blocking
            else "the other profile has none of the flagged launches, or neither side has wrong values"
        )
        return ProbeResult(Status.SKIP, f"cannot tell: {why}", facts=facts, evidence=evidence)
