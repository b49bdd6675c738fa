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
def collect_events(collector: Any, events: list[Any], /) -> None: ...
def json_bind(
    op_categories: frozenset[str],
    runtime_categories: frozenset[str],
    kernel_categories: frozenset[str],
    python_categories: frozenset[str],
    gpu_op_categories: frozenset[str],
    max_name: int,
    number: Callable[[Any], float | None],
    as_int: Callable[[Any], int | None],
    thread_intervals: type,
    no_args: Any,
    occupancy_key: str,
    theoretical_key: str,
    missing: Any,
    pure_collect_events: Callable[[Any, list[Any]], None],
    event_type: type,
    args_type: type,
    /,
) -> None: ...
