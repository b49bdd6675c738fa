"""Text that came from outside (a trace, a playbook, an answers file, another machine's report),
made safe to show. Kernel names hold brackets (``float[i]``), which rich would read as markup;
anything can hold escape sequences, which a terminal would obey. One place decides how such
text reaches a terminal and Markdown, so that no caller has to remember.
"""

from __future__ import annotations

import re
from functools import cache
from os.path import commonprefix
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.text import Text

# C0 and C1 controls (tab and newline are handled by the callers that allow them), DEL, lone
# surrogates (undecodable bytes), and the characters that reorder, hide or fake text: bidirectional
# marks, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9), zero-width and invisible
# ones (U+00AD, U+034F, U+180E, U+200B-D, U+2060-4, U+206A-F, the BOM U+FEFF), line and paragraph
# separators, Hangul fillers that render as blanks (U+115F, U+1160, U+3164, U+FFA0), and the tag
# characters U+E0000-E007F ("ASCII smuggling"). Two kernel names that differ only by one of these
# must look different.
_CONTROL_CLASS = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ud800-\udfff\U000e0000-\U000e007f]"
)


@cache
def _control() -> re.Pattern[str]:
    """The pattern of ``_CONTROL_CLASS``, compiled where text that is not printable ASCII is first shown: its
    ranges of surrogates and tag characters cost the regular expression compiler 5 M instructions, which a
    command showing only printable ASCII (``trace inspect --json`` on most traces) need not pay."""
    return re.compile(_CONTROL_CLASS)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: object, *, newlines: bool = False) -> str:
    """Control characters as ``\\xNN`` / ``\\uNNNN``; a newline too unless ``newlines``."""
    value = str(text)
    if value.isascii() and value.isprintable():  # U+0020-U+007E: nothing to escape, no newline or tab
        return value
    value = _control().sub(_escape, value)
    if not newlines:
        value = value.replace("\n", "\\n").replace("\t", " ")
    return value


def rich_text(text: object, style: str = "", *, newlines: bool = False) -> Text:
    """A rich Text, never parsed as markup."""
    from rich.text import Text

    return Text(visible(text, newlines=newlines), style=style)


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")


def markdown(text: object) -> str:
    """Plain Markdown text: every character Markdown could read as syntax is escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))


_PROSE_SPECIAL = re.compile(r"([\\<>\[\]!|])")


def markdown_prose(text: object) -> str:
    """A playbook's rendered sentence (which may quote trace text): no link, image, HTML or table
    cell can come out of it; the author's `code` and *emphasis* still read as meant."""
    value = _PROSE_SPECIAL.sub(r"\\\1", visible(text))
    return re.sub(r"^(\s*)#", r"\1\\#", value)


def markdown_code(text: object, *, table: bool = False) -> str:
    """An inline code span that holds any text, backticks included (CommonMark's rule); in a
    table cell a pipe is escaped too (GitHub splits cells on it even inside code)."""
    value = visible(text)
    if table:
        value = value.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


CUT_HEAD = 16  # of a name cut apart from its kin past APART_LIMITS: its start, before the part that tells it apart
CUT_LEAD = 8  # characters kept before the first one that differs there: what the difference is part of
APART_CONTEXT = 12  # characters shown past the first one that tells a name from its kin
APART_LIMITS = 4  # a name cut apart from its kin is at most this many limits long (a table folds it over lines)


def cuts_apart(texts: Sequence[str], limit: int) -> list[str]:
    """Each text ``cut`` to ``limit`` characters, except where distinct texts would be cut alike (three CUTLASS
    kernels of one template read as one in a table): those are cut further on, just past the first character that
    tells each from the nearest of them, so every one shows where it differs from every other; where that lies past
    ``APART_LIMITS`` limits, their first ``CUT_HEAD`` characters, then the part from just before it."""
    cuts = [cut(text, limit) for text in texts]
    alike: dict[str, set[str]] = {}
    for text, short in zip(texts, cuts, strict=True):
        alike.setdefault(short, set()).add(text)
    longest = APART_LIMITS * limit
    out = []
    for text, short in zip(texts, cuts, strict=True):
        kin = alike[short] - {text}
        if not kin:
            out.append(short)
            continue
        # character by character is what is wanted here: where the two names part
        parts = max(len(commonprefix((text, other))) for other in kin)  # noqa: RUF071
        through = parts + APART_CONTEXT + 2  # that character, the context after it, the ellipsis
        if through <= longest or longest <= CUT_HEAD + CUT_LEAD + 2:
            out.append(cut(text, max(limit, through)))
        else:
            out.append(text[:CUT_HEAD] + "…" + cut(text[parts - CUT_LEAD :], longest - CUT_HEAD - 1))
    return out


def script_json(text: str) -> str:
    """JSON to embed in an HTML ``<script>`` element: ``<``, ``>`` and ``&`` (and the two JavaScript line
    separators) as JSON escapes, so no string inside can end the element or open a comment."""
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def html_prose(text: object, limit: int = 400) -> str:
    """``html_text`` of a playbook's sentence, its `code spans` drawn as code (a page showed the backticks)."""
    import re

    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html_text(text, limit))


def html_text(text: object, limit: int = 400) -> str:
    """Text for an HTML page or a notebook cell: controls shown as escapes (ESC, C1, bidi overrides
    and invisible characters cannot act or hide), cut to ``limit`` characters, then HTML-escaped."""
    from html import escape

    return escape(cut(visible(text), limit), quote=True)
