"""The trace doctor's vocabulary, in one place: each mechanism's id, title, kind and remedy.

A new mechanism is one member here; every list of ids in code and docs derives from (or is
checked against, in tests) this enum. "Wrong" has one meaning everywhere: a value the trace
should not hold, whoever is to blame (a profiler bug, a trace that contradicts itself, or a
disagreement no known mechanism explains). F, large values by design, is the only mechanism
that is not wrong.
"""

from __future__ import annotations

from enum import Enum

# The per-block shared-memory limit Kineto passes to CUDA's occupancy calculator (mechanism E).
SMEM_DEFAULT_LIMIT = 48 * 1024


class Kind(str, Enum):
    """Who is to blame, which decides what ``trace fix`` may do."""

    PROFILER_BUG = "profiler bug"  # the profiler computed or wrote the value wrongly: fix corrects it
    TRACE_INPUT = "trace input"  # the trace contradicts itself: no single value to correct
    UNEXPLAINED = "unexplained"  # a disagreement no known mechanism explains
    BY_DESIGN = "by design"  # the value is right; what it means surprises people


class Mechanism(str, Enum):
    """Ids as in the README's mechanism table; each member carries its summary (a report's title), kind
    and remedy (``title`` would shadow ``str.title``)."""

    summary: str
    kind: Kind
    remedy: str
    conclusion: str
    verdict: str

    def __new__(  # noqa: PLR0917 - an Enum member's value tuple arrives positionally
        cls, value: str, summary: str, kind: Kind, remedy: str, conclusion: str, verdict: str
    ) -> Mechanism:
        member = str.__new__(cls, value)
        member._value_ = value
        member.summary = summary
        member.kind = kind
        member.remedy = remedy
        member.conclusion = conclusion  # the flagship's conclusion node for it (negative-warps-per-sm.yaml)
        member.verdict = verdict  # that conclusion's severity: the health check's impossible-metrics status too
        return member

    GRID_OVERFLOW = (
        "A",
        "grid size overflows int32 (gridX*gridY*gridZ > 2^31-1)",
        Kind.PROFILER_BUG,
        "nothing to change in the model: read the true values (`warpwizard trace fix` writes them); the int32 "
        "product is still in PyTorch's Kineto, report it against pytorch/pytorch",
        "grid_overflow",
        "warning",
    )
    EARLY_OVERFLOW = (
        "A'",
        "early Kineto multiplied grid and block in int32",
        Kind.PROFILER_BUG,
        "upgrade PyTorch (this is PyTorch 1.8's Kineto); `warpwizard trace fix` writes the true values",
        "early_overflow",
        "warning",
    )
    OLD_SM_COUNT = (
        "B",
        "SM count read as -1 (PyTorch 1.8/1.9 on Turing and later)",
        Kind.PROFILER_BUG,
        "upgrade to PyTorch 1.10 or later (kineto #325)",
        "old_sm_count",
        "warning",
    )
    UNKNOWN_DEVICE = (
        "C",
        "SM count unknown for the kernel's device (x/0)",
        Kind.PROFILER_BUG,
        "check which devices the process saw when profiling started (CUDA_VISIBLE_DEVICES changed after CUDA "
        "initialised is the usual cause)",
        "unknown_device",
        "warning",
    )
    NON_FINITE_JSON = (
        "C'",
        "non-finite value written as a bare token or a string",
        Kind.PROFILER_BUG,
        "`warpwizard trace fix` writes a copy other tools can load",
        "unknown_device",
        "warning",
    )
    OCCUPANCY_CALCULATOR = (
        "D",
        "occupancy calculator failed (-99/-100): an architecture its CUDA header does not know, or inputs it rejects",
        Kind.PROFILER_BUG,
        "install a PyTorch built with a CUDA whose header knows the GPU, where the evidence names one (a capability "
        "every header knows failed on its inputs instead)",
        "occupancy_calculator",
        "warning",
    )
    SHARED_MEMORY_LIMIT = (
        "E",
        "occupancy judged with the default 48 KB shared-memory limit",
        Kind.PROFILER_BUG,
        "ignore the 0%: the kernel opted in to more shared memory; the true occupancy is in the report",
        "shared_memory_limit",
        "info",
    )
    SM_COUNT_MISMATCH = (
        "G",
        "values computed with another SM count than the trace's deviceProperties declares",
        Kind.TRACE_INPUT,
        "the trace's device table is not the profiled GPU's (a merged, edited or re-stamped trace): take the "
        "trace as the profiler wrote it, in one process",
        "sm_count_mismatch",
        "warning",
    )
    BY_DESIGN = (
        "F",
        "large values are by design: the metric counts the whole grid",
        Kind.BY_DESIGN,
        "nothing: for resident warps use Nsight Compute's sm__warps_active.avg.per_cycle_active",
        "by_design",
        "info",
    )
    UNEXPLAINED = (
        "?",
        "value disagrees with the recomputation; no known mechanism explains it",
        Kind.UNEXPLAINED,
        "follow the flagship's later steps (isolate the op, CUDA_LAUNCH_BLOCKING, other hardware)",
        "unresolved",
        "warning",
    )

    @property
    def wrong(self) -> bool:
        """Whether the trace holds a value it should not (everything but F)."""
        return self.kind is not Kind.BY_DESIGN

    @property
    def correctable(self) -> bool:
        """Whether ``trace fix`` replaces the value: a profiler bug with a known true value."""
        return self.kind is Kind.PROFILER_BUG

    @property
    def severity(self) -> str:
        """The JSON report's word for it (``groups[].severity``): the verdict the flagship's conclusion and the
        impossible-metrics check give it, so a group and the check agree (E is ``info``: the profiler's and
        harmless; issue 45 item 12)."""
        return self.verdict


BY_ID: dict[str, Mechanism] = {m.value: m for m in Mechanism}  # ids from other machines' reports: .get()
# The named sets conditions and docs speak of; each derived from the members, never listed twice.
WRONG: frozenset[str] = frozenset(m.value for m in Mechanism if m.wrong)
NEGATIVE: frozenset[str] = frozenset(
    m.value for m in (Mechanism.GRID_OVERFLOW, Mechanism.EARLY_OVERFLOW, Mechanism.OLD_SM_COUNT)
)  # values go below zero
NON_FINITE: frozenset[str] = frozenset(m.value for m in (Mechanism.UNKNOWN_DEVICE, Mechanism.NON_FINITE_JSON))
ORDER: dict[str, int] = {m.value: i for i, m in enumerate(Mechanism)}  # most specific first


def is_wrong(mechanism_id: str) -> bool:
    """Whether a mechanism id (from a report, possibly another machine's) means a wrong value."""
    return mechanism_id in WRONG
