"""``summary.normalise``, the name two profiles match a kernel on: its blanks beside punctuation are removed by a
pattern that matches the blanks alone (no replacement template to expand in Python for every comma); it must remove
exactly what ``re.sub(r"\\s*([<>,()*&])\\s*", r"\\1", ...)``, the rule it replaced, removed: on random text and on
every kernel name of the shared traces."""

from __future__ import annotations

import random
import re

import pytest

from tests.conftest import TRACES, load_json_trace, needs_shared
from wizard.trace.profile.summary import normalise

_REFERENCE = re.compile(r"\s*([<>,()*&])\s*")


def _reference(name: str) -> str:
    """normalise with its blanks rule written as before (the other rules are the same calls)."""
    text = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    text = text.replace("(bool)0", "false").replace("(bool)1", "true")
    text = re.sub(r"\((?:unsigned )?(?:int|long|long long|short|char|signed char)\)(?=-?\d)", "", text)
    text = _REFERENCE.sub(r"\1", text.strip())
    text = re.sub(r"\b(\d+)(?:ull|ul|ll|u|l)\b", r"\1", text, flags=re.IGNORECASE)
    return re.sub(r"_v\d+$", "", text)


def test_blanks_beside_punctuation_go_as_before_on_random_text() -> None:
    rnd = random.Random(48)
    alphabet = "ab1 <>,()*&\t\n\u3000"  # \u3000: a blank \s matches in str patterns, as before
    for _ in range(20000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        assert normalise(text) == _reference(text), repr(text)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("void f<128, (bool)0, 4096ul>(int *, float const &)", "void f<128,false,4096>(int*,float const&)"),
        ("  k < (int)3 , (anonymous namespace)::T >  ", "k<3,T>"),
        ("triton_red_fused_add_0_v1234", "triton_red_fused_add_0"),
        ("a  b", "a  b"),  # blanks between words stay
    ],
)
def test_normalised_names(name: str, expected: str) -> None:
    assert normalise(name) == expected


@needs_shared
def test_every_shared_kernel_name_as_before() -> None:
    names: set[str] = set()
    for path in sorted(TRACES.glob("*.json*")):
        doc = load_json_trace(path)
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        names.update(e["name"] for e in events if isinstance(e, dict) and e.get("cat") == "kernel")
    assert len(names) > 100  # the traces' kernels: real templates, with blanks after every comma
    for name in names:
        assert normalise(name) == _reference(name), name
