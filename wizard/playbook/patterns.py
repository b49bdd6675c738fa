"""Validation patterns of playbook questions, matched in linear time.

A playbook comes from someone else, and Python's ``re`` backtracks: ``(a+)+$`` against a
long answer (or against the playbook's own default, which the loader checks) never ends.
RE2 (google-re2, Google's own binding) guarantees time linear in the input and refuses the
features that need backtracking (backreferences, lookaround), so a pattern either compiles
and matches fast or is reported as a problem when the playbook loads.
"""

from __future__ import annotations

import functools
from typing import Any

MAX_PATTERN_CHARS = 2000


class PatternError(ValueError):
    """The pattern is not valid RE2 syntax (or too large)."""


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    import re2

    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern of {len(pattern)} characters is too long (at most {MAX_PATTERN_CHARS})")
    options = re2.Options()
    options.log_errors = False  # RE2 otherwise writes its own copy of the error to stderr
    options.max_mem = 8 << 20
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"{reason} (RE2 syntax: no backreferences or lookaround)") from None


def check(pattern: str) -> None:
    """Raise PatternError when the pattern cannot be used."""
    _compiled(pattern)


def fullmatch(pattern: str, text: str) -> bool:
    return _compiled(pattern).fullmatch(text) is not None
