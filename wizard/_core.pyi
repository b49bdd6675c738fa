"""The compiled core's interface (wizard/_core.c): protobuf.py's twins, bound to its error and fallbacks."""

from collections.abc import Callable
from typing import Any

def fields(b: bytes, start: int = 0, end: int | None = None, /) -> list[tuple[int, int, Any]]: ...
def varint(b: bytes, i: int, /) -> tuple[int, int]: ...
def packed_varints(b: bytes, wire: int, value: Any, /) -> list[int]: ...
def bind(
    damaged: type[Exception],
    max_fields: int,
    fields: Callable[..., list[tuple[int, int, Any]]],
    varint: Callable[[bytes, int], tuple[int, int]],
    packed_varints: Callable[[bytes, int, Any], list[int]],
    /,
) -> None: ...
