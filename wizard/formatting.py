"""How values are written for people: one module, each precision chosen on purpose.

- ``exact``: evidence lines. Integral values as integers, others with 9 significant digits,
  which is what a C ``float`` holds, so a reported value reads as the profiler printed it.
- ``compact``: table cells and Markdown: 6 significant digits, 4 past ten million, where a
  column must stay narrow and the evidence line beside it has the exact value.
- ``rounded``: a playbook template's ``fmt(x, digits)``: ``digits`` decimals (3 by default), or
  significant digits for very large or very small values.
- ``count``: a number another tool printed as a float although it counts things (ncu's grid sizes).
- ``shown``: any value quoted in a message: its repr, cut to what one terminal line can hold.
- ``plural``: a count and its noun, "1 launch", "4 launches" (never "launch(es)"); ``verb``: the
  verb that agrees with that count, "1 kernel was", "2 kernels were".

Non-finite values read ``inf``, ``-inf``, ``nan`` everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def non_finite_text(value: float) -> str:
    """How inf, -inf and nan read everywhere: in text, and as JSON strings (serialize.py)."""
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def exact(value: float | int | None, missing: str = "missing") -> str:
    if value is None:
        return missing
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite_text(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.9g}"


def compact(value: Any, missing: str = "—") -> str:
    if value is None:
        return missing
    if isinstance(value, float):
        if not math.isfinite(value):
            return non_finite_text(value)
        return f"{value:.6g}" if abs(value) < 1e7 else f"{value:.4g}"
    return str(value)


def rounded(value: Any, digits: Any = 3) -> str:
    digits = min(max(int(digits), 0), 17) if isinstance(digits, (int, float)) and math.isfinite(digits) else 3
    if isinstance(value, float):
        if not math.isfinite(value):
            return non_finite_text(value)
        if abs(value) >= 1e6 or (value and abs(value) < 1e-3):
            return f"{value:.{digits}g}"
        return f"{round(value, digits):g}"
    return "" if value is None else str(value)


def count(value: float | str | None, missing: str = "?") -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return missing if value is None else str(value)


def shown(value: Any, width: int = 120) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= width else text[: width - 20] + f"... ({len(text)} characters)"


def plural(number: float, noun: str) -> str:
    """``number`` and ``noun`` as a person says them: "1 launch", "4 launches", "0 files" (the
    last word takes the plural: "2 kernel launches")."""
    words = noun.rsplit(" ", 1)
    last = words[-1]
    if number != 1:
        if last.endswith(("s", "x", "ch", "sh")):
            last += "es"
        elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
            last = last[:-1] + "ies"
        else:
            last += "s"
    return f"{exact(number)} {' '.join([*words[:-1], last])}"


def article(name: str) -> str:
    """'an' before a name read with a vowel sound, else 'a': a capital is read as its letter (an A100, an H100, an
    Nsight Systems export, an RTX), a lower-case word as a word (a rocpd database, an unknown format)."""
    first = name[:1]
    if first.islower():
        return "an" if first in "aeiou" else "a"
    return "an" if first.upper() in "AEFHILMNORSX" else "a"


def verb(number: float, one: str, many: str) -> str:
    """The verb form that agrees with ``number`` things: ``one`` for exactly 1, else ``many``."""
    return one if number == 1 else many


def wrap_words(text: str, width: int, *, hang: str = "", room: int = 0) -> list[str]:
    """``text`` broken between words into lines of at most ``width`` columns (a terminal breaks a long line
    mid-word), lines after the first starting with ``hang``, the last keeping ``room`` columns free (for
    what follows it on its line); a word longer than a line stays whole. The first line keeps its indent."""
    import textwrap

    def wrap(part: str, columns: int) -> list[str]:
        return textwrap.wrap(
            part, max(10, columns), subsequent_indent=hang, break_long_words=False, break_on_hyphens=False
        )

    lines = wrap(text, width)
    if lines and room and len(lines[-1]) + room > width:
        lines[-1:] = wrap(lines[-1], width - room)
    return lines


DEVICE_KINDS = 4  # the kinds of GPU a line names; the rest counted
NAMED_IDS = 3  # devices of one kind whose SM count has another source named by id; more are counted


def devices_said(devices: Sequence[Mapping[str, Any]], name: Callable[[str], str] = str) -> str:
    """A trace's devices as a line says them: alike ones (name and SM count) once with their count, and where a
    device's SM count is not the trace's description of it, where it is from: ``inferred`` from the launches,
    ``given`` by --sms, or ``assumed`` (a device the trace does not describe taken to be the one it does: "2 x AMD
    Instinct MI300X VF (304 SMs, device 2 assumed)", its deviceProperties describing device 0, its kernels run on 2).
    ``name``: how a GPU's name is escaped for the medium."""
    kinds: dict[tuple[str, Any], list[Mapping[str, Any]]] = {}
    for d in devices:
        kinds.setdefault((str(d["name"] or "unnamed GPU"), d["num_sms"]), []).append(d)
    said = []
    for (gpu, sms), alike in list(kinds.items())[:DEVICE_KINDS]:
        marks = [f"{sms} SMs" if sms is not None else "SM count unknown"]
        by_source: dict[str, list[Any]] = {}
        for d in alike:
            if d.get("source") not in (None, "deviceProperties", "unknown"):  # the description, or no SM count
                by_source.setdefault(str(d["source"]), []).append(d["id"])
        for source, ids in by_source.items():
            if len(ids) == len(alike):
                marks.append(source)
            elif len(ids) <= NAMED_IDS:
                marks.append(f"{'device' if len(ids) == 1 else 'devices'} {', '.join(map(str, ids))} {source}")
            else:
                marks.append(f"{len(ids)} {source}")
        said.append(f"{f'{len(alike)} x ' if len(alike) > 1 else ''}{name(gpu)} ({', '.join(marks)})")
    more = len(kinds) - DEVICE_KINDS
    return ", ".join(said + [plural(more, "more kind")] * (more > 0)) or "unknown"
