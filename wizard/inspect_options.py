"""What an inspection is asked (``InspectOptions``), declared once: each option is one field declared with
``wizard.option_fields.option`` (help, metavar, kind, bounds), from which ``trace inspect``'s arguments are built
(wizard/cli/parser.py) and the run checks it (``check_options``); ``wizard.inspect_traces`` and the inspection's
run take it whole, every pass over a trace receives it whole, and a health check gets the options its declaration
names (``CheckSpec.options``). A light module (``--help`` imports it): it names no layer, so the command line may
read it without loading the trace doctor."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from wizard import option_fields
from wizard.option_fields import option

DEFAULT_MAX_LAUNCHES = 100  # wrong launches listed per finding group in --json (the rest are counted)
# Per-launch records for the library: none (the CLI, the profiler hook), the wrong ones, or every
# checked launch (a notebook plotting reported against true values).
Keep = Literal["none", "wrong", "all"]
KEEP_CHOICES: tuple[str, ...] = ("none", "wrong", "all")
ENGINES: tuple[str, ...] = ("none", "local", "dask")  # where the per-rank step runs (wizard/jobs/engines.py)


def id_list(text: str) -> tuple[str, ...]:
    """``--checks a,b``: the ids, blanks dropped (``--checks ''`` is an empty selection, which the check refuses)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class InspectOptions:
    """What the caller asked of an inspection, for the run and every pass to read.

    Each field with ``help`` metadata is a ``trace inspect`` option (``--`` and the name with dashes); the
    others (``launches``, ``plots``) are the library's alone, set by ``inspect_traces`` or by the CLI from what
    it writes. ``None`` means the default of what reads it (all checks; the SM count from the trace; the cores;
    the rank-skew check's floor)."""

    sms: int | None = field(
        default=None,
        metadata=option(
            "SM count of the GPU, for traces without deviceProperties (PyTorch 1.8): 80 for a V100, "
            "68 for an RTX 2080 Ti, 108 for an A100, 132 for an H100",
            metavar="N",
            kind=int,
            least=1,
            says="a positive number of SMs",
        ),
    )
    jobs: int | None = field(
        default=None,
        metadata=option(
            "processes to use: one per file for several files (default: the cores); the decoding workers for one "
            "big file (default: the cores but one, none under three); 1: everything in one process, on one core",
            metavar="N",
            kind=int,
            least=1,
            says="a positive number",
        ),
    )
    max_launches: int = field(
        default=DEFAULT_MAX_LAUNCHES,
        metadata=option(
            f"--json lists up to N launches with wrong values per group (default {DEFAULT_MAX_LAUNCHES}; "
            "the rest are counted)",
            metavar="N",
            kind=int,
            least=0,
        ),
    )
    checks: tuple[str, ...] | None = field(
        default=None,
        metadata=option(
            "run only these health checks (default: all; see docs/health.md for the ids)",
            metavar="ID,...",
            kind=id_list,
        ),
    )
    skip_checks: tuple[str, ...] = field(
        default=(), metadata=option("leave out these health checks", metavar="ID,...", kind=id_list)
    )
    rank_skew_floor_us: float | None = field(
        default=None,
        metadata=option(
            "median start skew across ranks at which rank-skew is a warning (default 100 µs; below: info)",
            metavar="US",
            kind=float,
            least=0,
            unit="µs",
        ),
    )
    summaries: str | None = field(
        default=None,
        metadata=option(
            "directory of per-rank summaries (KB each): each rank's is written there and reused when the same file "
            "is inspected again; the job is judged from them (docs/clusters.md)",
            metavar="DIR",
        ),
    )
    engine: Literal["none", "local", "dask"] | None = field(
        default=None,
        metadata=option(
            "run the per-rank step in this process (none), in local worker processes (local, --jobs N) or on a "
            "Dask cluster (dask: --scheduler, DASK_SCHEDULER_ADDRESS, else a LocalCluster); judges the job from "
            "per-rank summaries (docs/clusters.md)",
            metavar="none|local|dask",
            choices=ENGINES,
        ),
    )
    scheduler: str | None = field(
        default=None,
        metadata=option(
            "the Dask scheduler for --engine dask: an address (tcp://host:8786) or a scheduler file (.json); "
            "default: Dask's own configuration (DASK_SCHEDULER_ADDRESS), else a LocalCluster",
            metavar="ADDRESS",
        ),
    )
    launches: Keep = "none"  # per-launch records kept: none, the wrong ones, or all (Inspection.to_dataframe)
    plots: bool = False  # also gather what a picture needs (the HTML report)

    @classmethod
    def parsed(cls, args: Any) -> InspectOptions:
        """The options a parsed ``trace inspect`` command line holds (its arguments are the fields with help; the
        library's own keep their defaults)."""
        return cls(**{spec.name: getattr(args, spec.name) for spec in command_line_fields()})


DEFAULT_OPTIONS = InspectOptions()  # nothing asked: every default


def command_line_fields() -> tuple[dataclasses.Field[Any], ...]:
    """The fields ``trace inspect`` takes as options (those declared with ``option``), in declaration order."""
    return tuple(spec for spec in dataclasses.fields(InspectOptions) if "help" in spec.metadata)


def flag_of(name: str) -> str:
    """The flag an ``InspectOptions`` field is on the command line: ``max_launches`` is ``--max-launches``."""
    return option_fields.flag_of(InspectOptions, name)
