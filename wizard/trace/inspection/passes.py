"""One read, many passes: the reader reads a trace once and every registered pass takes what it kept.

Holistic Trace Analysis's shape (one ``TraceAnalysis``, one module per analyzer), with one
difference that matters at a gigabyte: a pass may also look at the trace while it is being read
(``feed``, called between blocks), so the kernel checks overlap with decoding. A pass is one module
and one line in ``PASSES``; its result is its own typed record, found by the pass's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from wizard.trace.read.collector import TraceContents


@dataclass(frozen=True, slots=True)
class PassOptions:
    """What the caller asked of an inspection, for every pass to read."""

    sms: int | None = None
    max_launches: int = 100
    keep: str = "none"
    plots: bool = False
    checks: frozenset[str] | None = None  # health checks to run (None: all)


class TracePass(Protocol):
    """A pass over one read trace."""

    name: str

    def feed(self, contents: TraceContents) -> None:
        """What has been read so far (called between blocks; a pass that needs the whole trace waits)."""

    def finish(self, contents: TraceContents, results: Mapping[str, Any]) -> Any:
        """The pass's result, from the whole trace and the results of the passes before it."""


PassFactory = Callable[[PassOptions], TracePass]

# Registered passes beyond the built-in ones, name -> factory, run in this order after them.
PASSES: dict[str, PassFactory] = {}


def register_pass(name: str, factory: PassFactory) -> None:
    """Add a pass (a plugin's, or a test's); its result is ``TraceReport.passes[name]``."""
    if name in BUILTIN:
        raise ValueError(f"{name!r} is a built-in pass")
    PASSES[name] = factory


def unregister_pass(name: str) -> None:
    PASSES.pop(name, None)


BUILTIN = ("mechanisms", "health")  # the kernel-metric checks, then the health check (which reads their count)


def make_passes(options: PassOptions, builtin: tuple[PassFactory, ...]) -> list[TracePass]:
    """The built-in passes the inspection gives (the kernel checks, then the health check, which reads their
    count), then the registered ones, in registration order."""
    return [factory(options) for factory in (*builtin, *PASSES.values())]
