"""What a probe is: a registered name, typed parameters, typed facts, and a run method.

A playbook can only name probes that are registered here; its parameters and the facts
its conditions read are checked against these declarations when the playbook loads.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from wizard.environment import Environment


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


OUTCOMES = tuple(s.value for s in Status)

PARAM_TYPES: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "path": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "list[str]": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
    "paths": lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(i, str) for i in v)),
}


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """A probe parameter. ``runs``: its value names a program, an interpreter or a script to
    execute, so only the user may set it (their command line, or an answer they typed), unless
    they pass ``--allow-commands`` (docs/security.md)."""

    name: str
    type: str
    help: str
    required: bool = False
    default: Any = None
    runs: bool = False


@dataclass(frozen=True, slots=True)
class FactSpec:
    name: str
    type: str
    help: str


# Facts any probe node may carry, whatever its probe: why it did not run.
COMMON_FACTS = (
    FactSpec("reason", "str", "why the probe did not run or skipped (no workload, program not allowed, ...)"),
    FactSpec("refused", "str", "what the engine refused to run, and where that came from"),
)


@dataclass(slots=True)
class ProbeResult:
    """What one probe run found. ``facts`` are what playbook conditions read."""

    status: Status
    summary: str
    facts: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    duration_s: float = 0.0


class Probe(Protocol):
    name: str
    summary: str
    params: tuple[ParamSpec, ...]
    facts: tuple[FactSpec, ...]
    runs_programs: str  # what it executes, in words ("" for none): `validate` lists such nodes

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        """Run with ``timeout`` seconds for each program the probe starts."""
        ...


@dataclass(frozen=True, slots=True)
class ProbeInfo:
    """A probe's declaration only: what the loader checks playbooks against."""

    name: str
    summary: str
    params: tuple[ParamSpec, ...]
    facts: tuple[FactSpec, ...]
    runs_programs: str = ""

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """What ``warpwizard probes --json`` prints: everything a playbook author types, whole."""
        from dataclasses import asdict

        return {
            "name": self.name,
            "summary": self.summary,
            "runs_programs": self.runs_programs or None,
            "params": [asdict(p) for p in self.params],
            "facts": [asdict(f) for f in self.facts],
        }

    def fact(self, name: str) -> FactSpec | None:
        return next((f for f in (*self.facts, *COMMON_FACTS) if f.name == name), None)


def with_defaults(specs: tuple[ParamSpec, ...], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each declared default filled in where the caller gave none."""
    return {**{p.name: p.default for p in specs if p.default is not None}, **params}


def info(probe: Probe) -> ProbeInfo:
    return ProbeInfo(probe.name, probe.summary, probe.params, probe.facts, getattr(probe, "runs_programs", ""))


def ensure_dir(path: Path) -> Path:
    """A directory of the workspace, created private or refused (wizard/workspace.py): probes run
    what they write there."""
    from wizard.workspace import private_dir

    return private_dir(path)
