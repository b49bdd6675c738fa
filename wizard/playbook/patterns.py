"""Validation patterns of playbook questions, matched in bounded time.

A playbook comes from someone else, and Python's ``re`` backtracks: ``(a+)+$`` against a
long answer (or against the playbook's own default, which the loader checks) never ends.
Where google-re2 has a wheel (CPython 3.10 to 3.14) patterns run on RE2, which guarantees
time linear in the input. Elsewhere (Python 3.15, where re2 has no wheel and would need a
C++ build) they run on ``regex``, which backtracks but stops after ``MATCH_SECONDS``. Both
accept the same patterns: the features RE2 refuses because they need backtracking
(backreferences, lookaround, atomic groups, possessive quantifiers, conditionals) and counts
over RE2's 1000 are refused on the fallback too, so a playbook that loads on one Python loads on every other.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

MAX_PATTERN_CHARS = 2000
MATCH_SECONDS = 0.5  # the fallback's bound; a sane pattern on a 64 KB answer takes microseconds
SYNTAX = "RE2 syntax: no backreferences or lookaround"

Engine = Literal["re2", "regex"]


class PatternError(ValueError):
    """The pattern is not valid RE2 syntax (or too large, or too slow on the fallback)."""


def _available_engine() -> Engine:
    try:
        import re2  # noqa: F401
    except ImportError:
        return "regex"
    return "re2"


ENGINE: Engine = _available_engine()


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, engine: Engine) -> Any:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"a pattern of {len(pattern)} characters is too long (at most {MAX_PATTERN_CHARS})")
    return _compile_re2(pattern) if engine == "re2" else _compile_regex(pattern)


def _compile_re2(pattern: str) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 otherwise writes its own copy of the error to stderr
    options.max_mem = 8 << 20
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"{reason} ({SYNTAX})") from None


def _compile_regex(pattern: str) -> Any:
    import re

    import regex

    sre_parse = _parser()
    try:
        tree = sre_parse.parse(pattern)
    except re.error as exc:
        raise PatternError(f"{exc} ({SYNTAX})") from None
    refused = _backtracking_feature(tree)
    if refused:
        raise PatternError(f"the pattern uses {refused} ({SYNTAX})")
    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except regex.error as exc:
        raise PatternError(f"{exc} ({SYNTAX})") from None


# The parse tree's opcodes RE2 refuses, with what a playbook author calls them.
_REFUSED = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "lookaround",
    "ASSERT_NOT": "lookaround",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive quantifier",
}


_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
MAX_REPEAT = 1000  # RE2's own limit on {n,m}


def _over(bounds: tuple[Any, ...]) -> bool:
    """Whether a repeat's explicit bounds pass RE2's limit (an unbounded repeat, like '+', is not explicit)."""
    unbounded = _parser().MAXREPEAT
    return any(b != unbounded and b > MAX_REPEAT for b in bounds)


def _parser() -> Any:
    """The standard library's own regular-expression parser: the tree tells which features a pattern uses."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined,unused-ignore]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10, where re2 has a wheel anyway
        import sre_parse
    return sre_parse


def _backtracking_feature(tree: Any) -> str | None:
    """The first feature of the parsed pattern that RE2 would refuse, iteratively (depth is bounded by re)."""
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)) or type(item).__name__ == "SubPattern":
            items = list(item)
            if len(items) == 2 and str(items[0]) in _REFUSED:
                return _REFUSED[str(items[0])]
            if len(items) == 2 and str(items[0]) in _REPEATS and _over(items[1][:2]):
                return f"a repetition count over {MAX_REPEAT}"
            stack.extend(items)
    return None


def check(pattern: str) -> None:
    """Raise PatternError when the pattern cannot be used."""
    _compiled(pattern, ENGINE)


def fullmatch(pattern: str, text: str) -> bool:
    compiled = _compiled(pattern, ENGINE)
    if ENGINE == "re2":
        return compiled.fullmatch(text) is not None
    try:
        return compiled.fullmatch(text, timeout=MATCH_SECONDS) is not None
    except TimeoutError:
        raise PatternError(
            f"matching took longer than {MATCH_SECONDS:g} s (the pattern backtracks; {SYNTAX})"
        ) from None
