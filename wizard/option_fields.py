"""One declaration per option, for every set of options: ``option(...)`` is a dataclass field's metadata, its flag,
help, metavar, the kind of value it takes and its bounds, and everything else is read from it: the argparse
arguments (``add_arguments``, one function for every set), the check of a value (``check_fields``: a whole number
or a finite real number within its bounds, the same for a command line and a library call) and the flag a field is
(``flag_of``). ``wizard.options.Options`` (what probes may do), ``wizard.inspect_options.InspectOptions`` (what
an inspection is asked) and ``wizard.run_request.RunRequest`` (what a playbook run is asked) are declared with it.

A light module: ``--help`` imports it (dataclasses and math, nothing of argparse, which the parser passes in)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from wizard.errors import UsageError

T = TypeVar("T")


def option(
    help: str,
    *,
    flag: str | None = None,
    metavar: str | None = None,
    kind: Callable[[str], Any] | type = str,
    least: float | None = None,
    most: float | None = None,
    finite: bool | None = None,
    says: str | None = None,
    unit: str | None = None,
    choices: tuple[str, ...] | None = None,
    group: str | None = None,
) -> dict[str, Any]:
    """A field's declaration as an option (its ``metadata``). ``flag``: when it is not ``--`` and the name with
    dashes. ``kind``: ``str``; ``int`` (a whole number) or ``float`` (a real number: finite unless
    ``finite=False``), each within ``least`` and ``most``; ``bool`` (a switch); ``list`` (given again for each
    item); or a function from the text to the value (``id_list``). ``says``: how the check's message words the
    valid values when the bounds alone say it badly ("a positive number of SMs"); ``unit``: what a real number
    counts ("µs": "a finite number of µs, 0 or more"); ``choices``: the words a text option takes (checked on the
    command line and in Python alike); ``group``: mutually exclusive with the other options of that group."""
    if (least is not None or most is not None or finite is not None or unit is not None) and kind not in (int, float):
        raise TypeError(f"bounds declared for a {getattr(kind, '__name__', kind)} option: only int and float have them")
    return {
        "help": help, "flag": flag, "metavar": metavar, "kind": kind, "least": least, "most": most,
        "finite": (kind is float) if finite is None else finite, "says": says, "unit": unit, "choices": choices,
        "group": group,
    }  # fmt: skip


def shared(name: str) -> dict[str, Any]:
    """A field whose argument several commands declare alike (``report``: the one ``--report``): ``add_arguments``
    hands its place in the order to the function its caller names for it."""
    return {"shared": name}


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Declared:
    """An option's declaration, read back from its field (what ``option`` wrote)."""

    name: str
    help: str
    flag: str
    metavar: str | None
    kind: Callable[[str], Any] | type
    least: float | None
    most: float | None
    finite: bool
    says: str | None
    unit: str | None
    default: Any
    choices: tuple[str, ...] | None = None
    group: str | None = None

    @property
    def bounded(self) -> bool:
        return self.kind in (int, float)

    def valid(self) -> str:
        """The values it takes, in words, for the check's one line."""
        if self.says is not None:
            return self.says
        span = _span(self.least, self.most)
        if self.kind is int:
            return span or "a whole number"
        what = ("a finite number" if self.finite else "a number") + (f" of {self.unit}" if self.unit else "")
        return f"{what}, {span}" if span else what


def _span(least: float | None, most: float | None) -> str:
    if least is not None and most is not None:
        return f"from {least:g} to {most:g}"
    if least is not None:
        return f"{least:g} or more"
    return f"{most:g} or less" if most is not None else ""


def declared(cls: type) -> Iterator[Declared]:
    """The fields of an option set declared as options (those with ``help``), in declaration order."""
    for spec in dataclasses.fields(cls):
        meta = spec.metadata
        if "help" not in meta:
            continue
        if spec.default is not dataclasses.MISSING:
            default = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            default = spec.default_factory()
        else:
            default = None
        yield Declared(
            spec.name, meta["help"], meta["flag"] or "--" + spec.name.replace("_", "-"), meta["metavar"],
            meta["kind"], meta["least"], meta["most"], meta["finite"], meta["says"], meta["unit"], default,
            meta.get("choices"), meta.get("group"),
        )  # fmt: skip


def flag_of(cls: type, name: str) -> str:
    """The flag a field of ``cls`` is on the command line (its declared one, else ``--`` and the name with dashes;
    a field that is no option is spelt the same way)."""
    return next((d.flag for d in declared(cls) if d.name == name), "--" + name.replace("_", "-"))


def add_arguments(parser: Any, cls: type, shared: Mapping[str, Callable[[Any], None]] | None = None) -> None:
    """One argparse argument per declared field of ``cls`` (its flag, help, metavar and kind), its value under the
    field's name, in declaration order (the ``--help`` order): the one wiring of every option set. A field declared
    ``shared(name)`` is ``shared[name](parser)``, in its place."""
    groups: dict[str, Any] = {}
    by_name = {one.name: one for one in declared(cls)}
    for spec in dataclasses.fields(cls):
        if "shared" in spec.metadata:
            (shared or {})[spec.metadata["shared"]](parser)
        elif spec.name in by_name:
            one = by_name[spec.name]
            if one.group is not None and one.group not in groups:
                groups[one.group] = parser.add_mutually_exclusive_group()
            target = parser if one.group is None else groups[one.group]
            target.add_argument(one.flag, dest=one.name, default=_parser_default(one), help=one.help, **_kind(one))


def _kind(one: Declared) -> dict[str, Any]:
    if one.kind is bool:
        return {"action": "store_true"}
    if one.kind is list:
        return {"action": "append", "metavar": one.metavar}
    kind = {"metavar": one.metavar, **({} if one.kind is str else {"type": one.kind})}
    return kind if one.choices is None else {**kind, "choices": one.choices}


def _parser_default(one: Declared) -> Any:
    """argparse's ``append`` adds to a copy of the default: a list, whatever sequence the field holds."""
    return list(one.default or ()) if one.kind is list else one.default


def check_fields(value: T, *, spell: Callable[[str], str] = str) -> T:
    """Each bounded field of an option set checked against its declaration: a whole number (not a bool) for an
    ``int``, a real number for a ``float``, finite where declared, within its bounds; a UsageError in one line
    naming the option as ``spell`` does (``--rank-skew-floor-us`` on a command line, ``rank_skew_floor_us`` in
    Python) and the values it takes. ``None`` is an option's "not given". Returns the set with each real number a
    float (``25`` given in Python is ``25.0``, as the command line's is)."""
    reals: dict[str, float] = {}
    for one in declared(type(value)):
        given = getattr(value, one.name)
        if one.bounded and given is not None:
            reals.update(_checked(one, given, spell))
        elif one.choices is not None and given is not None and given not in one.choices:
            raise UsageError(f"{spell(one.name)} must be one of {', '.join(one.choices)}, not {given!r:.40}")
    return dataclasses.replace(value, **reals) if reals else value  # type: ignore[type-var]


def _checked(one: Declared, given: object, spell: Callable[[str], str]) -> dict[str, float]:
    real = one.kind is float
    if isinstance(given, bool) or not isinstance(given, (int, float) if real else int):
        what = "a number" + (f" of {one.unit}" if one.unit else "") if real else "a whole number"
        raise UsageError(f"{spell(one.name)} must be {what}, not {type(given).__name__} {given!r:.40}")
    bounds = one.least is not None or one.most is not None
    outside = (one.least is not None and given < one.least) or (one.most is not None and given > one.most)
    if (real and one.finite and not math.isfinite(given)) or outside or (bounds and math.isnan(given)):
        raise UsageError(f"{spell(one.name)} must be {one.valid()}, not {given}")
    return {one.name: float(given)} if real and not isinstance(given, float) else {}
