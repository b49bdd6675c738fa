"""One read, many passes: the contract of a pass over one read trace (``TracePass``), which every room that has a
pass declares its own with (the flagship's kernel-metric checks in ``metrics/classify.py``, the health check in
``health/checker.py``), and an installed package's passes too (``warpwizard.passes``, docs/plugins.md).

Holistic Trace Analysis's shape (one analysis, one module per analyzer), with one difference that matters at a
gigabyte: a pass may also look at the trace while it is being read (``feed``, called between blocks), so the
kernel checks overlap with decoding. A pass declares its name, the options it takes (the inspection's
``InspectOptions``, whole), its result's type, the passes whose results it reads (``needs``: it gets them typed,
through ``Results.get``) and how its result is written (``write``: what ``--json`` shows under its name). It
imports only the reader's contents, so every room may declare a pass with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from msgspec import Struct

from wizard.inspect_options import InspectOptions
from wizard.trace.read.collector import TraceContents

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*")  # a pass's name: a key in --json and in facts.passes
MAX_NAME = 64


class PassRun(Protocol[R_co]):
    """One pass's work over one trace: started with the inspection's options, fed as blocks arrive, finished once
    the whole trace is read."""

    def feed(self, contents: TraceContents) -> None:
        """What has been read so far (called between blocks; a pass that needs the whole trace waits)."""

    def finish(self, contents: TraceContents, before: Results) -> R_co:
        """The pass's result, from the whole trace and the results of the passes it ``needs``."""


class TracePass(Struct, Generic[R], frozen=True, eq=False):
    """A pass, declared once: what the inspection runs, in what order it may read what, and how it is written."""

    name: str
    result: type[R]  # what ``finish`` returns (checked when it returns)
    start: Callable[[InspectOptions], PassRun[R]]  # one run per trace, given the inspection's options whole
    write: Callable[[R], Any]  # the result as --json writes it: JSON data (dict, list, str, int, float, bool, None)
    needs: tuple[TracePass[Any], ...] = ()  # passes whose results ``finish`` reads (``before.get(THAT_PASS)``)
    origin: str = "builtin"  # "builtin", "registered" (register_pass), or "plugin <package> <version>"

    @property
    def who(self) -> str:
        """How messages name it: ``trace pass 'x' (plugin pkg 1.0)``."""
        return f"trace pass {self.name!r} ({self.origin})"


class Results:
    """The results of the passes that ran before one, as that pass may read them: only those it declared in
    ``needs``, each as its declared type (a pass reads another's result typed, never through ``getattr``)."""

    def __init__(self, done: Mapping[str, object], reader: TracePass[Any]) -> None:
        self._done = done
        self._reader = reader

    def get(self, wanted: TracePass[R]) -> R:
        if wanted.name not in {need.name for need in self._reader.needs}:
            raise LookupError(f"{self._reader.who} reads {wanted.name!r}'s result without naming it in its needs")
        value = self._done[wanted.name]  # needs run first: contract_problem checks the order
        if not isinstance(value, wanted.result):
            raise TypeError(f"{wanted.who} returned {type(value).__name__}, not {wanted.result.__name__}")
        return value


def contract_problem(value: object, before: Mapping[str, TracePass[Any]]) -> str | None:
    """What keeps ``value`` from being a pass the inspection can run after the passes ``before`` (name -> pass),
    in words, or None: checked when a plugin's pass is loaded and when one is registered."""
    if not isinstance(value, TracePass):
        return f"is a {type(value).__name__}, not a wizard.trace.passes.TracePass"
    name = value.name
    if not isinstance(name, str) or len(name) > MAX_NAME or not NAME.fullmatch(name):
        return f"is named {name!r:.80}: a pass's name is lowercase letters, digits, '-', '_' or '.', at most {MAX_NAME}"
    if name in before:
        return f"is named {name!r}, which {before[name].origin} already registers"
    if not isinstance(value.result, type):
        return f"declares a result that is not a type ({value.result!r:.60})"
    for what in ("start", "write"):
        if not callable(getattr(value, what)):
            return f"has a {what} that cannot be called"
    needs = value.needs
    if not isinstance(needs, tuple):
        return "declares needs that are not a tuple of passes"
    for need in needs:
        if not isinstance(need, TracePass) or not isinstance(need.name, str) or need.name not in before:
            named = need.name if isinstance(need, TracePass) else need
            return f"needs {named!r:.60}, which is not a pass that runs before it"
    return None
