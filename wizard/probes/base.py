"""What a probe is: a registered name, typed parameters, typed facts, and a run method.

A playbook can only name probes that are registered here; its parameters and the facts
its conditions read are checked against these declarations when the playbook loads.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypedDict

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


# The user's program, as every probe that runs it declares it: the engine asks for it at a terminal when a
# probe with this parameter is about to run and nothing gave it (wizard/engine/engine.py).
WORKLOAD = ParamSpec("workload", "str", "command to run (default: --workload)", default=None, runs=True)


@dataclass(frozen=True, slots=True)
class FactSpec:
    """One fact as the help, ``probes --json`` and the playbook schema show it; derived from a probe's
    declaration (``declared_facts``), never written by hand. ``type`` is Python's spelling
    (``str | None``, ``list[str]``, ``dict[str, int]``), which ``fact_matches`` reads."""

    name: str
    type: str
    help: str
    required: bool = False  # a TypedDict's required key: a result that ran (not skip, not error) must carry it


def type_text(hint: Any) -> str:
    """A fact's type as people and the loader read it: ``int | None``, ``list[str]``, ``dict[str, any]``."""
    if hint is Any:
        return "any"
    if hint is None or hint is type(None):
        return "None"
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return " | ".join(type_text(a) for a in args)
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(type_text(a) for a in args)}]" if args else origin.__name__
    if isinstance(hint, type) and hint in (str, int, float, bool, list, dict):
        return hint.__name__
    raise TypeError(f"a fact's type is str, int, float, bool, None, list[...], dict[...] or a union, not {hint!r}")


def declared_facts(declaration: type) -> tuple[FactSpec, ...]:
    """A probe's facts from its one declaration: a TypedDict whose fields read ``Annotated[type, "help"]``."""
    hints = typing.get_type_hints(declaration, include_extras=True)
    required: frozenset[str] = getattr(declaration, "__required_keys__", frozenset())
    specs = []
    for name, hint in hints.items():
        if typing.get_origin(hint) is not Annotated:
            raise TypeError(f"{declaration.__name__}.{name}: declare it as Annotated[type, 'what it means']")
        kind, help_text = typing.get_args(hint)[:2]
        specs.append(FactSpec(name, type_text(kind), str(help_text), name in required))
    return tuple(specs)


def _split(text: str, sep: str) -> list[str]:
    """``a | list[b | c]`` at ``|`` -> ``['a', 'list[b | c]']``: split at the top level only."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


_SCALARS: dict[str, Callable[[Any], bool]] = {
    "any": lambda v: True,
    "None": lambda v: v is None,
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}


def fact_matches(type_: str, value: Any) -> bool:
    """Whether a produced value has its declared type (``FactSpec.type``)."""
    for alt in _split(type_, "|"):
        head, _, rest = alt.partition("[")
        if not rest:
            if _SCALARS[alt](value):
                return True
            continue
        inner = _split(rest[:-1], ",")
        if head == "list" and isinstance(value, list) and all(fact_matches(inner[0], v) for v in value):
            return True
        if head == "dict" and isinstance(value, dict):
            key, item = inner
            if all(fact_matches(key, k) and fact_matches(item, v) for k, v in value.items()):
                return True
    return False


def fact_kinds(type_: str) -> set[str]:
    """The outer kinds a fact may have (``{'list', 'None'}`` for ``list[str] | None``): what the loader
    checks a condition's comparison and ``in`` against."""
    return {alt.partition("[")[0] for alt in _split(type_, "|")}


def fact_problems(specs: tuple[FactSpec, ...], facts: Mapping[str, Any]) -> list[str]:
    """Where produced facts break their declaration: a name not declared, a value of another type."""
    declared = {f.name: f for f in (*specs, *COMMON_FACTS)}
    problems = []
    for name, value in facts.items():
        spec = declared.get(name)
        if spec is None:
            problems.append(f"fact {name!r} is not declared (produced {type(value).__name__}: {value!r:.80})")
        elif not fact_matches(spec.type, value):
            problems.append(f"fact {name!r} is declared {spec.type}, produced {type(value).__name__}: {value!r:.80}")
    return problems


def fact_warnings(probe: str, specs: tuple[FactSpec, ...], status: str, facts: Mapping[str, Any]) -> list[str]:
    """One line per way a result breaks its probe's declaration, naming the probe, the fact, the declared type
    and what came: the engine puts them on the transcript (a playbook reading such a fact could take a
    default branch for the wrong reason), it never drops the result."""
    lines = [f"probe {probe!r}: {problem}" for problem in fact_problems(specs, facts)]
    if status not in (Status.SKIP.value, Status.ERROR.value):
        lines += [
            f"probe {probe!r}: fact {f.name!r} is declared required ({f.type}), produced nothing"
            for f in specs
            if f.required and f.name not in facts
        ]
    return lines


class CommonFacts(TypedDict, total=False):
    """Facts any probe node may carry, whatever its probe: why it did not run."""

    reason: Annotated[str, "why the probe did not run or skipped (no workload, program not allowed, ...)"]
    refused: Annotated[str, "what the engine refused to run, and where that came from"]
    timed_out: Annotated[bool, "whether a program the probe started ran past its timeout and was killed"]


COMMON_FACTS = declared_facts(CommonFacts)


@dataclass(slots=True)
class ProbeResult:
    """What one probe run found. ``facts`` are what playbook conditions read."""

    status: Status
    summary: str
    facts: dict[str, Any] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    warnings: list[str] = field(default_factory=list)  # where its facts break the declaration (fact_warnings)


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
    origin: str = "builtin"  # or "plugin <package> <version>": an installed package's entry point

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """What ``warpwizard probes --json`` prints: everything a playbook author types, whole."""
        from dataclasses import asdict

        return {
            "name": self.name,
            "summary": self.summary,
            "runs_programs": self.runs_programs or None,
            "origin": self.origin,
            "params": [asdict(p) for p in self.params],
            "facts": [{k: v for k, v in asdict(f).items() if k != "required" or v} for f in self.facts],
        }

    def fact(self, name: str) -> FactSpec | None:
        return next((f for f in (*self.facts, *COMMON_FACTS) if f.name == name), None)


def with_defaults(specs: tuple[ParamSpec, ...], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each declared default filled in where the caller gave none."""
    return {**{p.name: p.default for p in specs if p.default is not None}, **params}


def info(probe: Probe, origin: str = "builtin") -> ProbeInfo:
    return ProbeInfo(probe.name, probe.summary, probe.params, probe.facts, getattr(probe, "runs_programs", ""), origin)


def ensure_dir(path: Path) -> Path:
    """A directory of the workspace, created private or refused (wizard/workspace.py): probes run
    what they write there."""
    from wizard.workspace import private_dir

    return private_dir(path)
