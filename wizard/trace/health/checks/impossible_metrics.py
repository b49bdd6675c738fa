"""impossible-metrics: the flagship's kernel checks' wrong launches, as one health verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, TypedDict

from wizard.formatting import plural
from wizard.trace.health.spec import (
    RANK,
    CheckSpec,
    HealthCheck,
)
from wizard.trace.metrics.mechanisms import BY_ID, is_wrong

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables
    from wizard.trace.metrics.classify import KernelMetrics


class ImpossibleMetricsDetails(TypedDict):
    wrong_launches: Annotated[int, "launches with a wrong blocks/warps per SM or occupancy"]
    mechanisms: Annotated[dict[str, int], "launches per wrong mechanism id"]


CHECK = CheckSpec(
    "impossible-metrics",
    "negative-warps-per-sm",
    "impossible kernel metrics",
    ImpossibleMetricsDetails,
    order=10,
    triage_rank=70,
    counts=(
        "launches with a wrong blocks/warps per SM or occupancy (`wrong_launches`): the kernel checks' "
        "findings; `mechanisms` (launches per wrong mechanism)"
    ),
    status_rule=(
        "the worst severity the flagship playbook's conclusions give the mechanisms found "
        "(`Mechanism.verdict`, the table below): `info` for E alone; `not_applicable` with no kernel whose metrics "
        "can be checked"
    ),
)


def metrics_status(mechanisms: Mapping[str, int]) -> str:
    """The worst severity the flagship's conclusions give the wrong mechanisms found (``Mechanism.verdict``,
    the one table both read): E alone is the flagship's ``info``; an id no table knows is an ``error``."""
    worst: str | None = None
    for mechanism_id, n in mechanisms.items():
        found = BY_ID.get(mechanism_id)
        if not n or (found is not None and not found.wrong):
            continue
        verdict = found.verdict if found is not None else "error"
        worst = verdict if worst is None or RANK[verdict] > RANK[worst] else worst
    return worst or "error"  # wrong launches with no mechanism named: nothing says they are benign


def run(tables: Tables, metrics: KernelMetrics) -> HealthCheck:
    contents, wrong_launches, checked, mechanisms = (
        tables.contents, metrics.wrong_launches, metrics.kernels_checked, metrics.mechanisms,
    )  # fmt: skip
    if not checked:
        reason = "no kernel carries blocks or warps per SM to check" if len(contents.kernels) else "no GPU kernels"
        return CHECK.not_applicable(reason, wrong_launches=0, mechanisms={})
    wrong = {m: n for m, n in sorted(mechanisms.items()) if n and is_wrong(m)}
    details = {"wrong_launches": wrong_launches, "mechanisms": wrong}
    if not wrong_launches:
        return CHECK.verdict(
            0, "ok", f"every one of {plural(checked, 'checked launch')} "
            "holds possible values", "", details=details,
        )  # fmt: skip
    status = metrics_status(wrong)
    named = "; ".join(f"{m} ({n}), {BY_ID[m].summary}" if m in BY_ID else f"{m} ({n})" for m, n in wrong.items())
    meaning = (
        "the profiler judged occupancy with the default 48 KB shared-memory limit (mechanism E): the kernels "
        "ran as they should; read the true occupancy in the findings, not the trace's 0%"
        if status == "info"
        else "the profiler computed these values wrongly; read the true values in the findings, not the trace's"
    )
    what = (
        "a wrong value that is the profiler's and harmless"
        if status == "info"
        else "an impossible or wrong blocks/warps per SM or occupancy"
    )
    return CHECK.verdict(
        wrong_launches,
        status,
        f"{plural(wrong_launches, 'launch')} with {what}: {named}",
        meaning,
        details=details,
    )
