"""The compiled core's interface (wizard/_core.c): protobuf.py's twins, bound to its error and fallbacks (five
arguments bind the wire format's three, seven the two .pftrace loops as well)."""

from collections.abc import Callable
from typing import Any

def fields(b: bytes, start: int = 0, end: int | None = None, /) -> list[tuple[int, int, Any]]: ...
def varint(b: bytes, i: int, /) -> tuple[int, int]: ...
def packed_varints(b: bytes, wire: int, value: Any, /) -> list[int]: ...
def packet_head(
    b: bytes, /
) -> tuple[int | None, int, int, int, tuple[int, int], tuple[int, int] | None, tuple[int, int] | None, bool, bool]: ...
def track_event_fields(
    b: bytes, start: int, end: int | None, /
) -> tuple[int, int, tuple[int, int] | None, int | None, list[tuple[int, int]], list[tuple[int, int, Any]] | None]: ...
def bind(
    damaged: type[Exception],
    max_fields: int,
    fields: Callable[..., list[tuple[int, int, Any]]],
    varint: Callable[[bytes, int], tuple[int, int]],
    packed_varints: Callable[[bytes, int, Any], list[int]],
    packet_head: Callable[..., Any] = ...,
    track_event_fields: Callable[..., Any] = ...,
    /,
) -> None: ...
