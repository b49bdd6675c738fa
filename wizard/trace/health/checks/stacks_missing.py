"""stacks-missing: CPU ops recorded without Python stacks: said with its count (``ok``), never a finding, since
``with_stack`` is off by default and a finding on every trace recorded so would fail ``--fail-on info`` on each
(issue 44 item 12); its fact ``python_stacks`` tells a playbook whether a Python line can be named."""

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
    status_rule=(
        "`ok` with its count: recording stacks is a setting (`with_stack`, off by default), not a problem in the "
        "trace, so every trace without them would be a finding; `not_applicable` without CPU ops"
    ),
    facts=(
        CheckFact("python_stacks", bool, "whether Python stacks were recorded (python_function events)", how="none"),
    ),
)


def run(tables: Tables) -> HealthCheck:
    categories = tables.contents.timeline.categories
    cpu_ops = categories.get("cpu_op", 0) + categories.get("Operator", 0)
    if not cpu_ops:
        return CHECK.not_applicable("no CPU ops in this trace", cpu_ops=0)
    if categories.get("python_function", 0):
        return CHECK.verdict(0, "ok", "Python stacks were recorded", "", details={"cpu_ops": cpu_ops})
    return CHECK.verdict(
        cpu_ops,
        "ok",
        f"{plural(cpu_ops, 'CPU op')} without Python stacks (with_stack=False): findings name the op and shapes "
        "that launched a kernel, not the Python line (with_stack=True records it)",
        "",
        details={"cpu_ops": cpu_ops},
    )
