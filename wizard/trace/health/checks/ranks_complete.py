"""ranks-complete: whether a rank directory holds one job's ranks, each once (a job's check, not a trace's).

A rank directory is read as one job: rank-skew compares its ranks and a reader takes "[8 ranks]" as the job. A
crashed or unprofiled rank, a rank's trace written twice (every file saying rank 1) or a trace of another run
mixed in changes what every cross-rank number means, and nothing else says so. What each trace declares is
PyTorch's ``distributedInfo`` (torch/profiler/profiler.py ``_get_distributed_info``: ``backend``, ``rank``,
``world_size``, ``pg_count``, ``pg_config`` = ``distributed_c10d._get_all_pg_configs()``, one entry per process
group this rank is a member of: ``pg_name``, ``pg_desc``, ``backend_config``, ``pg_size``, ``ranks``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Annotated, Any, TypedDict

import msgspec

from wizard.formatting import plural
from wizard.ranks import rank_value
from wizard.trace.health.spec import Bounds, CheckFact, CheckSpec, HealthCheck, rank_of
from wizard.untrusted import cut, visible

NAMED = 64  # ranks and traces named in the details (the counts say how many in all)
SAID = 8  # duplicated ranks, foreign and unplaced traces named in the summary line, each
GROUPS = 256  # process groups read from one trace's pg_config
GROUP_RANKS = 4096  # ranks of one process group read (a larger group is not compared)
TEXT = 64  # characters kept of a backend's name


class RanksCompleteDetails(TypedDict):
    world_size: Annotated[int | None, "the job's world size (distributedInfo.world_size), None when no trace says"]
    ranks: Annotated[list[int], "the job's ranks present", Bounds(max_items=NAMED)]
    missing: Annotated[list[int], "ranks of the world with no trace (the first 64)", Bounds(max_items=NAMED)]
    missing_count: Annotated[int, "ranks of the world with no trace", Bounds(minimum=0)]
    duplicated: Annotated[dict[str, int], "ranks in more than one trace: how many", Bounds(max_properties=NAMED)]
    foreign: Annotated[list[str], "traces of another job, each with why", Bounds(max_items=NAMED)]
    groups_disagree: Annotated[
        list[str],
        "traces listing a process group a member rank present does not list, each with which",
        Bounds(max_items=NAMED),
    ]
    unplaced: Annotated[list[str], "traces whose rank is unknown", Bounds(max_items=NAMED)]


CHECK = CheckSpec(
    "ranks-complete",
    "rank-skew",
    "a rank directory's ranks add up to one job",
    RanksCompleteDetails,
    order=115,
    triage_rank=50,  # the rank-skew playbook's: it says what a job that does not add up means for the skew
    counts=(
        "for a rank directory: the job is the `distributedInfo.world_size` and `backend` most of its traces "
        "declare (`world_size`); a trace declaring another, or a rank outside the world, is `foreign`; of the "
        "rest, each rank (`distributedInfo.rank`, else a rank-like file name: `rank3`, `rank_3`, `rank-3`, `worker3`,"
        " a last word `r3`, `3.json`; never another number, such as the GPU's in `h100-bert-small.json` or the"
        " step's in `step_100.json`) once is"
        " `ranks`, a rank"
        " in several traces `duplicated` (rank: traces), a rank of the world with no trace `missing` "
        "(`missing_count`), a trace with no rank `unplaced`, a trace listing a process group (`pg_config[].ranks`"
        ") that a member rank present lists none of `groups_disagree` (both sides named: which is another run's "
        "is not known); `count` = missing ranks + extra traces of duplicated ranks + foreign + unplaced + "
        "disagreeing traces"
    ),
    status_rule=(
        "`warning` when `count` > 0: the cross-rank numbers leave out or mix in ranks; `ok` when every rank of "
        "the world is there once; `not_applicable` for what is not a rank directory, or where no trace says its "
        "world size and no rank repeats"
    ),
    scope="job",
    facts=(
        CheckFact(
            "ranks_complete_status",
            str,
            "the ranks-complete check's status: warning when a rank directory is not one job's ranks, each once",
            "status",
            "first",
            "not_applicable",
        ),
        CheckFact(
            "ranks_missing_count",
            int,
            "ranks of the job's world with no trace (ranks-complete)",
            "missing_count",
            "first",
            0,
        ),
        CheckFact("ranks_world_size", int | None, "the job's world size its traces declare", "world_size", "first"),
    ),
)


class JobPlace(msgspec.Struct, frozen=True):
    """Where one trace says it stands in its job (its ``distributedInfo``), bounded: what this check needs
    from each rank, small enough to travel in a per-rank summary."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    groups: tuple[tuple[int, ...], ...] = ()  # process groups other than the world that list this rank, by ranks

    @property
    def job(self) -> tuple[int | None, str | None]:
        """What the ranks of one job share."""
        return self.world_size, self.backend


def job_place(metadata: Mapping[str, Any]) -> JobPlace:
    """A trace's ``distributedInfo`` as a ``JobPlace``: an untrusted value that is not what PyTorch writes (a
    world size outside [1, MAX_RANK], a rank list with a non-rank) is left out, never guessed."""
    info = metadata.get("distributedInfo")
    if not isinstance(info, dict):
        return JobPlace()
    rank = rank_value(info.get("rank"))
    world = rank_value(info.get("world_size"))
    world = world if world else None
    backend = info.get("backend")
    text = visible(cut(backend, TEXT)) if isinstance(backend, str) else None
    return JobPlace(rank, world, text, _groups(info.get("pg_config"), rank, world))


def _groups(config: object, rank: int | None, world: int | None) -> tuple[tuple[int, ...], ...]:
    """The process groups smaller than the world that list ``rank``, each as its sorted ranks."""
    if not isinstance(config, list) or rank is None or world is None:
        return ()
    found: set[tuple[int, ...]] = set()
    for entry in config[:GROUPS]:
        members = entry.get("ranks") if isinstance(entry, dict) else None
        if not isinstance(members, list) or not 1 < len(members) < min(world, GROUP_RANKS + 1):
            continue
        ranks = [rank_value(r) for r in members]
        if all(r is not None and r < world for r in ranks) and rank in ranks:
            found.add(tuple(sorted(r for r in ranks if r is not None)))
    return tuple(sorted(found))


class Trace(msgspec.Struct, frozen=True, eq=False):
    """One trace of the directory: its file's name, its rank (declared, else from the name) and its place."""

    name: str
    rank: int | None
    place: JobPlace


def _spans(ranks: Sequence[int]) -> str:
    """Sorted ranks as a person writes them: "0, 2-7"."""
    runs: list[list[int]] = []
    for r in ranks:
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _job(traces: Sequence[Trace]) -> tuple[int | None, str | None] | None:
    """The world size and backend most traces declare (the first trace's on a tie), None when none does."""
    declared = [t.place.job for t in traces if t.place.world_size is not None]
    if not declared:
        return None
    counts = Counter(declared)
    top = max(counts.values())
    return next(j for j in declared if counts[j] == top)


def _foreign_reason(trace: Trace, job: tuple[int | None, str | None] | None) -> str | None:
    """Why a trace is not of the job's world, or None."""
    if job is None:
        return None
    world, backend = job
    place = trace.place
    if place.world_size is not None and place.world_size != world:
        return f"world size {place.world_size}, not {world}"
    if place.world_size is not None and place.backend != backend:
        return f"backend {place.backend}, not {backend}"
    if world is not None and trace.rank is not None and trace.rank >= world:
        return f"rank {trace.rank} outside a world of {world}"
    return None


def _disagreeing(members: Mapping[int, Trace]) -> dict[str, str]:
    """Traces listing a process group that a member present does not list: each group of a job is the same set
    of ranks on every member (``new_group`` is called by every rank), so where rank 3 lists [1, 3] and rank 1
    lists [0, 1], the two traces are not of one run (which one is another run's, the traces cannot say)."""
    out: dict[str, str] = {}
    for rank, trace in sorted(members.items()):
        for group in trace.place.groups:
            other = next(
                (s for s in group if s != rank and s in members and members[s].place.groups
                 and group not in members[s].place.groups),
                None,
            )  # fmt: skip
            if other is not None:
                out[trace.name] = f"its process group of ranks {_spans(group)} is not rank {other}'s"
                break
    return out


class Tally(msgspec.Struct, eq=False):
    """The job's ranks sorted out: what the verdict says."""

    world: int | None
    present: list[int]
    missing: list[int]  # the first NAMED
    missing_count: int
    duplicated: dict[int, int]
    foreign: dict[str, str]
    unplaced: list[str]
    disagree: dict[str, str]

    @property
    def count(self) -> int:
        extra = sum(n - 1 for n in self.duplicated.values())
        return self.missing_count + extra + len(self.foreign) + len(self.unplaced) + len(self.disagree)


def tally(traces: Sequence[Trace]) -> Tally:
    """Each trace as the job's rank, a repeat, another job's or unplaced, and the world's ranks with none."""
    job = _job(traces)
    foreign = {t.name: why for t in traces if (why := _foreign_reason(t, job)) is not None}
    mine = [t for t in traces if t.name not in foreign]
    unplaced = [t.name for t in mine if t.rank is None]
    seen = Counter(t.rank for t in mine if t.rank is not None)
    once = {t.rank: t for t in mine if t.rank is not None and seen[t.rank] == 1}
    present = sorted({t.rank for t in traces if t.rank is not None and t.name not in foreign})
    world = job[0] if job is not None else None
    here = set(present)
    missing = [] if world is None else list(islice((r for r in range(world) if r not in here), NAMED))
    missing_count = 0 if world is None else world - len(here)  # every present rank is inside the world (else foreign)
    duplicated = {r: n for r, n in sorted(seen.items()) if n > 1}
    return Tally(world, present, missing, missing_count, duplicated, foreign, unplaced, _disagreeing(once))


def _said(t: Tally) -> list[str]:
    """Each kind of problem in words."""
    parts: list[str] = []
    if t.missing:
        more = t.missing_count - len(t.missing)
        spans = _spans(t.missing) + (f" and {more} more" if more else "")
        parts.append(f"{'rank' if t.missing_count == 1 else 'ranks'} {spans} missing")
    parts.extend(_few([f"rank {r} in {n} traces" for r, n in t.duplicated.items()]))
    parts.extend(_few([f"{name} is another job's ({why})" for name, why in t.foreign.items()]))
    parts.extend(_few([f"{name}: process groups disagree ({why})" for name, why in t.disagree.items()]))
    if t.unplaced:
        names = ", ".join(_few(t.unplaced))
        parts.append(f"{names}: no rank (no distributedInfo.rank, no rank in the file name)")
    return parts


def _few(items: list[str], shown: int = SAID) -> list[str]:
    """The first ``shown`` items, then how many more: a summary line stays a line (the details hold NAMED)."""
    return items if len(items) <= shown else [*items[:shown], f"{len(items) - shown} more"]


def ranks_complete(traces: Sequence[Trace]) -> HealthCheck:
    """The verdict over a rank directory's traces."""
    t = tally(traces)
    details = {
        "world_size": t.world,
        "ranks": t.present[:NAMED],
        "missing": t.missing[:NAMED],
        "missing_count": t.missing_count,
        "duplicated": {str(r): n for r, n in list(t.duplicated.items())[:NAMED]},
        "foreign": [f"{name}: {why}" for name, why in list(t.foreign.items())[:NAMED]],
        "unplaced": t.unplaced[:NAMED],
        "groups_disagree": [f"{name}: {why}" for name, why in list(t.disagree.items())[:NAMED]],
    }
    if len(traces) < 2:  # one trace: no job to count, so nothing of it (its name) is said either
        empty: dict[str, Any] = {k: [] if isinstance(v, list) else {} if isinstance(v, dict) else v
                                 for k, v in details.items()}  # fmt: skip
        empty["missing_count"] = 0  # nothing counted: '7 missing' beside an empty list of them read as a fault
        return CHECK.not_applicable("not a rank directory: one job's traces, a trace per rank", **empty)
    if not t.count:
        if t.world is None:
            return CHECK.not_applicable(
                "no trace says its job's world size (distributedInfo.world_size): missing ranks cannot be told",
                **details,
            )
        return CHECK.verdict(0, "ok", f"all {plural(t.world, 'rank')} of the job, each once", "", details=details)
    of = f"{len(t.present)} of {t.world} ranks" if t.world is not None else plural(len(t.present), "rank")
    return CHECK.verdict(
        t.count,
        "warning",
        f"{of}: " + "; ".join(_said(t)),
        "the directory is not one job's ranks, each once: rank-skew and every number across ranks leave out or "
        "mix in ranks (a crashed or unprofiled rank, a trace written twice, another run's trace). Put each rank's "
        "trace of one run in the directory once; where only some ranks were profiled on purpose, "
        "--skip-checks ranks-complete",
        details=details,
    )


def run_job(reports: Sequence[Any]) -> HealthCheck:
    """The job's verdict from every rank's report: each carries its ``JobPlace`` (``health_result.place``)."""
    traces = [
        Trace(visible(cut(os.path.basename(r.path), 120)), rank_of(r.health_result.place.rank, r.path),
              r.health_result.place)
        for r in reports
    ]  # fmt: skip
    return ranks_complete(traces)
