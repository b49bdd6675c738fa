"""stacks-missing: CPU ops recorded without Python stacks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypedDict

from wizard.formatting import plural
from wizard.trace.health.spec import (
    CheckFact,
    CheckSpec,
    HealthCheck,
)

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


class StacksMissingDetails(TypedDict):
    cpu_ops: Annotated[int, "CPU ops"]


CHECK = CheckSpec(
    "stacks-missing",
    None,
    "Python stacks not recorded",
    StacksMissingDetails,
    order=90,
    counts=("CPU ops (`cpu_op`, `Operator`) of a trace with no `python_function` event; `cpu_ops`"),
    status_rule=("`info`; `not_applicable` without CPU ops"),
    facts=(
        CheckFact("python_stacks", bool, "whether Python stacks were recorded (python_function events)", how="none"),
    ),
)


def run(t: Tables) -> HealthCheck:
    categories = t.contents.timeline.categories
    cpu_ops = categories.get("cpu_op", 0) + categories.get("Operator", 0)
    if not cpu_ops:
        return CHECK.not_applicable("no CPU ops in this trace", cpu_ops=0)
    if categories.get("python_function", 0):
        return CHECK.verdict(0, "ok", "Python stacks were recorded", "", details={"cpu_ops": cpu_ops})
    return CHECK.verdict(
        cpu_ops,
        "info",
        f"{plural(cpu_ops, 'CPU op')} without Python stacks (no python_function events)",
        "findings name the op and shapes that launched a kernel but not the Python line; profile with "
        "with_stack=True to get it",
        details={"cpu_ops": cpu_ops},
    )
