"""warpwizard as a library, for traces: inspect them, fix them (playbooks and probes: wizard.runs).

The command line is a thin layer over these same functions, so the two cannot drift. Nothing here
prints or exits; every error is one of ``wizard.errors``' types (docs/api.md lists which function
raises which). This module loads only the trace doctor: ``trace inspect`` and the torch.profiler
hooks start no faster than that. The fixer and ``compare`` load when called (tests/first_hour/test_speed_imports.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from wizard.errors import UsageError
from wizard.inspect_options import DEFAULT_MAX_LAUNCHES, InspectOptions, Keep
from wizard.progress import NO_PROGRESS, Progress
from wizard.trace.health.spec import RANK_SKEW_FLOOR_US, HealthCheck
from wizard.trace.inspection.results import Inspection
from wizard.trace.inspection.run import check_options as _check_options
from wizard.trace.inspection.run import inspect_paths
from wizard.trace.read.formats import refuse_unwritable

if TYPE_CHECKING:  # loaded where used (trace fix, compare): trace inspect does not pay for them at start-up
    from wizard.compare import MachineReport
    from wizard.trace.fix import FixSummary

PathLike = str | os.PathLike[str]


# -- traces ---------------------------------------------------------------------------------------


def inspect_traces(
    paths: PathLike | Iterable[PathLike],
    options: InspectOptions | None = None,
    *,
    sms: int | None = None,
    jobs: int | None = None,
    launches: Keep = "all",
    max_launches: int | None = DEFAULT_MAX_LAUNCHES,
    plots: bool = True,
    progress: Progress = NO_PROGRESS,
    checks: Iterable[str] | None = None,
    skip_checks: Iterable[str] | None = None,
    rank_skew_floor_us: float | None = None,
    spell: Callable[[str], str] = str,
) -> Inspection:
    """Check every kernel launch of one or more traces (Kineto or Cuspy JSON, ``.json.gz``, Perfetto ``.pftrace``,
    Nsight Systems ``.sqlite``, or per-rank directories of them) and explain each impossible value.

    ``options``: everything below but ``progress`` as one ``wizard.InspectOptions`` (what ``trace inspect`` builds
    from its command line), taken whole; the keywords are then left out. ``sms``: the SM count for traces without
    device properties (PyTorch 1.8). ``jobs``: processes to use (default: the cores for several files, the cores
    but one for one big file and none under three, where a thread of the core's scans the next block beside the
    reader on two cores; 1: all in this process, on one core).
    ``launches``: which per-launch records the report keeps: ``"all"`` checked launches (for a DataFrame),
    ``"wrong"`` ones, or ``"none"``. ``max_launches``: wrong launches listed per finding group in ``to_dict()``
    (None: the default). ``plots``: also gather what ``to_html()``'s pictures need (distinct points, wrong
    launches' times; small). ``progress``: told each file's bytes as read (wizard.progress; by default nothing is
    reported or printed). ``checks`` / ``skip_checks``: the health checks to run (ids in
    ``wizard.trace.health.checks.CHECK_IDS``; default all), each trace's in ``report.health_result.checks``, all in
    ``Inspection.health``. ``rank_skew_floor_us``: the median start skew across ranks at which ``rank-skew`` is a
    warning (default ``wizard.trace.health.spec.RANK_SKEW_FLOOR_US``, 100 µs; below it, launch jitter: ``info``).
    Raises InputFileError / TraceReadError for a file that cannot be read, UsageError for bad numbers or ids.
    """
    asked: dict[str, Any] = {
        "sms": sms, "jobs": jobs, "launches": launches, "max_launches": max_launches, "plots": plots,
        "checks": checks, "skip_checks": skip_checks, "rank_skew_floor_us": rank_skew_floor_us,
    }  # fmt: skip
    if options is None:
        options = InspectOptions(
            **{name: value for name, value in asked.items() if value is not None},  # None: the option's default
        )
    else:
        defaults = inspect_traces.__kwdefaults__ or {}
        given = [name for name, value in asked.items() if value != defaults[name]]
        if given:
            raise UsageError(f"give {spell('options')} or the keywords, not both (also given: {', '.join(given)})")
    return inspect_paths(path_names(paths), _check_options(options, spell=spell), progress=progress)


def check_options(options: InspectOptions, *, spell: Callable[[str], str] = str) -> InspectOptions:
    """The options checked before any work (the CLI does it before writing anything; ``spell`` names each as the
    caller knows it, e.g. ``--max-launches``), with the health checks resolved: a UsageError names what is wrong."""
    return _check_options(options, spell=spell)


def path_names(paths: PathLike | Iterable[PathLike]) -> list[str]:
    """One path or several, as text; bytes and other types are a UsageError, not a TypeError."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    if isinstance(items, (bytes, bytearray)) or not isinstance(items, Iterable):
        raise UsageError(f"paths must be a path or a list of paths (str or os.PathLike), not {type(paths).__name__}")
    return [path_text(item, "a path") for item in items]


def path_text(value: object, what: str, expected: str = "a str or os.PathLike of str") -> str:
    """A name or path the caller gave, as text: a str or an os.PathLike of str; anything else (bytes
    included) is a UsageError naming ``what``, never a TypeError."""
    name = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(name, str):
        raise UsageError(f"{what} must be {expected}, not {type(value).__name__} {value!r:.60}")
    return name


def fix_trace(
    source: PathLike,
    output: PathLike,
    *,
    force: bool = False,
    split_overlaps: bool = False,
    progress: Progress = NO_PROGRESS,
) -> FixSummary:
    """Write a copy of ``source`` whose wrong kernel metrics hold their true values (originals kept
    under ``args["warpwizard original"]``); gzip when ``output`` ends in ``.gz``. ``split_overlaps``: the
    kernels (and copies, syncs, annotations) Perfetto cannot nest on their row go to extra rows named after the
    stream, each with its own launch arrow, so Perfetto shows them all where they belong (the original tid kept
    under ``args["warpwizard original tid"]``; docs/health.md). Never writes over the
    input, nor over an existing file unless ``force``. Raises InputFileError, OutputFileError, and UsageError for a
    format it cannot rewrite (an Nsight Systems export: it reads, but is not Chrome JSON)."""
    from wizard.trace.fix import fix_trace as _fix_trace

    (source_name,), (output_name,) = path_names(source), path_names(output)
    refuse_unwritable(source_name)
    return _fix_trace(source_name, output_name, force=force, split_overlaps=split_overlaps, progress=progress)


def rank_skew_of(machines: Iterable[MachineReport]) -> HealthCheck | None:
    """The cross-rank check over per-rank trace reports (each node's ``trace inspect --json``): None when
    the reports carry fewer than two ranks' collectives; not applicable when a rank appears twice."""
    reports = list(machines)
    if sum(len(m.collectives) for m in reports) < 2:
        return None
    from wizard.compare import ranks_of
    from wizard.trace.health.checks.rank_skew import rank_skew

    ranks = ranks_of(reports)
    if ranks is None:
        return HealthCheck(
            "rank-skew", "not_applicable", 0, "rank-skew", "not applicable: a rank appears in two reports", "",
            reason="a rank appears in two reports: they are not one job's",
            details={"ranks": [], "median_us": None, "max_us": None, "last_by_rank": {},
                     "floor_us": RANK_SKEW_FLOOR_US, "unmeasured": 0, "left_out": {}, "short": {}},
        )  # fmt: skip
    return rank_skew(ranks)
