"""A rank read from a trace or a report (``distributedInfo.rank``, ``collectives.rank``, a number in a file name):
untrusted, so an int in [0, MAX_RANK), from ASCII digits only (``rank٣.json`` is no rank 3, nor is -1, 10^300 or a
200-digit number in a name). Apart from ``wizard.cluster`` (where a process stands in its launcher's job, which
reads none of them): a trace's reader and checks read ranks without loading the launcher's side (its ``Rank``
dataclass, ``platform``, the workspace's names)."""

from __future__ import annotations

import re

MAX_RANK = 1 << 20
_FIRST_DIGITS = re.compile(r"[0-9]+")


def rank_value(value: object) -> int | None:
    """A rank a trace or report declares, or None: an int (not a bool) in [0, MAX_RANK)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_RANK:
        return value
    return None


def rank_in_name(name: str) -> int | None:
    """The rank a file name gives: its first run of ASCII digits, when that is a rank (else None)."""
    found = _FIRST_DIGITS.search(name)
    if found is None or len(found.group()) > len(str(MAX_RANK)):
        return None
    return rank_value(int(found.group()))
