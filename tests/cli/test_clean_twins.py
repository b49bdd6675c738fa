"""``clean`` (wizard/serialize.py), which every document warpwizard writes goes through, is compiled where the core is
(wizard/_core.c ``clean``) and ``pure_clean`` elsewhere: the two must give the same data, of the same types, with
the same containers copied, on every document, and fail the same way where Python's comprehensions fail (a dict
changed while it is read, nesting past the recursion limit, an error from a value's ``str``)."""

from __future__ import annotations

import enum
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DOCUMENTS, call_outcome
from wizard import serialize

needs_core = pytest.mark.skipif(serialize._compiled_clean is None, reason="the compiled core is not built here")


def typed(value: Any) -> Any:
    """The value as comparable data that tells 1 from 1.0 and True, and NaN from None."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))


def both(value: Any) -> tuple[Any, Any]:
    compiled, pure = call_outcome(serialize.clean, value), call_outcome(serialize.pure_clean, value)
    return (
        (compiled[0], typed(compiled[1]) if compiled[0] == "value" else compiled[1]),
        (pure[0], typed(pure[1]) if pure[0] == "value" else pure[1]),
    )


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


class Table(dict[Any, Any]):
    pass


class Row(list[Any]):
    pass


def random_value(rng: random.Random, depth: int = 0) -> Any:
    leaves: list[Any] = [
        0, -7, 2**70, True, False, None, "", "é☃", 1.5, -0.0, math.inf, -math.inf, math.nan, Level.HIGH,
        Ratio(2.5), Ratio("nan"), Path("/x"), b"\xff", 3 + 4j,
    ]  # fmt: skip
    if depth > 4 or rng.random() < 0.4:
        return rng.choice(leaves)
    kind = rng.randrange(6)
    items = [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 0:
        keys: list[Any] = ["a", 1, None, 2.5, (1, 2), Level.HIGH, True, "b", frozenset({1})]
        return {rng.choice(keys): v for v in items}
    if kind == 1:
        return Table(enumerate(items))
    if kind == 2:
        return tuple(items)
    if kind == 3:
        return Row(items)
    if kind == 4:
        return set(x for x in items if isinstance(x, (int, str)))
    return items


@needs_core
@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_the_twins_clean_each_document_alike(document: Any) -> None:
    compiled, pure = both(document)
    assert compiled == pure


@needs_core
@pytest.mark.parametrize("seed", range(20))
def test_the_twins_clean_random_documents_alike(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        document = random_value(rng)
        compiled, pure = both(document)
        assert compiled == pure, document


@needs_core
def test_containers_are_copied_and_strings_kept() -> None:
    inner = [1, "s"]
    document = {"a": inner, "t": (inner,)}
    cleaned = serialize.clean(document)
    assert cleaned == {"a": [1, "s"], "t": [[1, "s"]]}
    assert cleaned is not document and cleaned["a"] is not inner and cleaned["t"][0] is not inner
    assert cleaned["a"][1] is inner[1]


class Changer:
    """A key whose ``str`` adds to the dict being cleaned."""

    def __init__(self, target: dict[Any, Any]) -> None:
        self.target = target

    def __str__(self) -> str:
        self.target[len(self.target) + 100] = 1
        return "changer"


class Shrinker:
    """A list item whose ``str`` empties the list being cleaned."""

    def __init__(self, target: list[Any]) -> None:
        self.target = target

    def __str__(self) -> str:
        self.target.clear()
        return "shrinker"


class Swapper:
    """A key whose ``str`` takes a key out of the dict being cleaned and puts another in: the same size."""

    def __init__(self, target: dict[Any, Any]) -> None:
        self.target = target

    def __str__(self) -> str:
        del self.target["a"]
        self.target["c"] = 3
        return "swapper"


class Refuser:
    def __str__(self) -> str:
        raise ValueError("no words")


def each_twin(make: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """Both twins' outcomes, each on a document of its own (one a twin changed is no longer the other's)."""
    return call_outcome(serialize.clean, make()), call_outcome(serialize.pure_clean, make())


def keyed_by(kind: Callable[[dict[Any, Any]], object]) -> dict[Any, Any]:
    document: dict[Any, Any] = {"a": 1}
    document[kind(document)] = 2
    return document


def shrunk() -> list[Any]:
    document: list[Any] = [1, 2]
    document.insert(1, Shrinker(document))
    return document


@needs_core
def test_the_twins_fail_where_python_fails() -> None:
    compiled, pure = each_twin(lambda: keyed_by(Changer))
    assert compiled == pure == ("RuntimeError", "dictionary changed size during iteration")
    compiled, pure = each_twin(lambda: keyed_by(Swapper))
    assert compiled == pure == ("RuntimeError", "dictionary keys changed during iteration")
    compiled, pure = each_twin(shrunk)
    assert typed(compiled[1]) == typed(pure[1]) == typed([1, "shrinker"])
    assert both({"x": [Refuser()]}) == (("ValueError", "no words"),) * 2


def nested(depth: int) -> Any:
    deep: Any = []
    for _ in range(depth):
        deep = {"x": [deep]}
    return deep


@needs_core
def test_nesting_past_the_recursion_limit_is_a_recursion_error_either_way() -> None:
    """The core counts a level a container, the twin two frames (Python 3.11: the function and its comprehension):
    both clean a document nested a fifth of the limit deep (a report nests a few levels), and both refuse one
    nested past the limit."""
    compiled, pure = both(nested(sys.getrecursionlimit() // 10))
    assert compiled == pure and compiled[0] == "value"
    compiled, pure = both(nested(sys.getrecursionlimit() + 100))
    assert compiled[0] == pure[0] == "RecursionError"
