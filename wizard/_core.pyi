"""The compiled core's interface (wizard/_core.c): protobuf.py's twins, bound to its error and fallbacks (five
arguments bind the wire format's three, seven the two .pftrace loops as well)."""

from collections.abc import Callable, Iterator, Sequence
from typing import Any

API: int  # the version wizard/compiled_core.py binds

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

# .pftrace events (pfcore): perfetto.py's twins, bound by bind_events
def event_args(
    b: bytes, notes: list[tuple[int, int]], seq: Any, args: dict[str, Any], entries: int, /
) -> tuple[int, int]: ...

# the packets perfetto.pure_split_packets finds, lying in the buffer: run[k] makes packet k's bytes; Slices.packets
# reads them there
class Run:
    def __len__(self) -> int: ...
    def __getitem__(self, k: int, /) -> bytes: ...

def split_run(buf: bytes, pos: int, limit: int, max_packet: int, /) -> tuple[Run | list[bytes], Sequence[int], int]: ...
def track_event(
    b: bytes, start: int, end: int | None, seq: Any, /
) -> tuple[int, int, str, str | None, list[tuple[int, int]], list[tuple[int, int, Any]] | None]: ...
def bind_events(
    pure_event_args: Callable[..., tuple[int, int]],
    decode_annotation: Callable[..., tuple[str | None, Any]],
    json_decode: Callable[..., Any],
    json_errors: tuple[type[BaseException], ...],
    raw: Callable[[Any], Any],
    arg_fields: dict[str, str],
    arg_fields_bytes: dict[bytes, str],
    raw_args: frozenset[str],
    memo_bytes: int,
    memo_entries: int,
    pure_split_packets: Callable[..., tuple[list[bytes], list[int], int]],
    pure_track_event: Callable[..., Any],
    name_bytes: int,
    max_name: int,
    /,
) -> None: ...

# a sequence's memo of annotations by their bytes (perfetto._Sequence.memo where the core is bound): a mapping
class Memo:
    @property
    def spilled(self) -> bool: ...  # its entries went to a dict: a key lay too far from its slot
    def get(self, key: bytes, default: Any = None, /) -> Any: ...
    def __getitem__(self, key: bytes, /) -> Any: ...
    def __setitem__(self, key: bytes, value: Any, /) -> None: ...
    def __delitem__(self, key: bytes, /) -> None: ...
    def __contains__(self, key: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def clear(self) -> None: ...
    def keys(self) -> list[bytes]: ...
    def values(self) -> list[Any]: ...
    def items(self) -> list[tuple[bytes, Any]]: ...

# a .pftrace's slices (pfcore): perfetto.PureSlices compiled, the type bind_slices returns
class Slices:
    base: int
    track_events: int
    memo_entries: int
    @property
    def open_count(self) -> int: ...
    @property
    def open_bytes(self) -> int: ...
    @property
    def batch_bytes(self) -> int: ...
    @property
    def at(self) -> int: ...
    @property
    def pending(self) -> list[Any]: ...
    @property
    def stacks(self) -> dict[int, list[Any]]: ...
    @property
    def batch(self) -> list[Any]: ...
    @property
    def tracks(self) -> dict[int, Any]: ...
    @property
    def exact(self) -> Any: ...
    @property
    def ends(self) -> dict[bytes, int]: ...
    def __init__(
        self, tracks: dict[int, Any], exact: Any, ends: dict[bytes, int], bounds: tuple[int, ...], /
    ) -> None: ...
    def open(self, track: int, began: tuple[Any, ...], /) -> None: ...
    def close(self, track: int, ts: int, /) -> bool: ...
    def emit(
        self, track: int, ts: int, dur: int, name: str, cat: str | None, args: dict[str, Any], links: Any, size: int, /
    ) -> bool: ...
    def event(
        self, cat: str | None, name: str, pid: Any, tid: Any, ts: int, dur: int, args: dict[str, Any],
        us: float | None = ..., /,
    ) -> bool: ...  # fmt: skip
    def take(self) -> list[Any]: ...
    def slice(
        self, b: bytes, start: int, end: int, ts: int, seq: Any, fields: tuple[Any, ...], links: Any, legacy: Any, /
    ) -> bool: ...
    def sink(self, collector: Any, /) -> bool: ...
    def packets(self, batch: Sequence[bytes], k: int, last: tuple[int, Any] | None, /) -> tuple[int, bool]: ...

def bind_slices(
    event_type: type,
    args_type: type,
    no_args: Any,
    categories: tuple[frozenset[str], ...],
    tables: tuple[int, int, int],
    args_read: frozenset[str],
    track_type: type[tuple[Any, ...]],
    /,
) -> type[Slices]: ...

# JSON events (jsoncore): collector.py's twin, bound by json_bind
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
    event_keys: tuple[tuple[str, str], ...],
    args_keys: tuple[tuple[str, str], ...],
    /,
) -> None: ...
def scan_events(collector: Any, buf: bytes, start: int, end: int, ahead: ScanAhead | None = None, /) -> bool: ...
def scan_release() -> int: ...  # the arrays scan_events keeps from one block for the next, freed: their bytes

class ScanAhead:
    """The first pass of the reader's next blocks, on a thread of its own (scan_events takes it)."""

    def start(self, buf: bytes, start: int, end: int, /) -> bool: ...  # False: taken nothing
    def close(self) -> None: ...
    @property
    def threaded(self) -> bool: ...  # this process runs its thread
    @property
    def pending(self) -> list[tuple[bytes, int, int]]: ...  # the blocks held, oldest first
    @property
    def taken(self) -> tuple[int, int]: ...  # blocks taken from the thread, blocks scanned again here

def int64_array(text: str, /) -> bytes | None: ...
def quote_counts(buf: bytes, start: int, end: int, /) -> tuple[int, int]: ...
def parents(starts: bytes, ends: bytes, first: int, stack: bytearray, tops: bytearray, /) -> bytes: ...
def up_the_tree(parents: bytes, first: int, total: bytearray, true_total: bytearray, /) -> None: ...
def innermost(
    starts: bytes,
    ends: bytes,
    base: int,
    times: bytes,
    lasts: bytes,
    stack: bytearray,
    tops: bytearray,
    pushed: int,
    /,
) -> tuple[int, int, bytes]: ...
def clean(value: Any, other: Callable[[Any], Any], non_finite: Callable[[float], str], /) -> Any: ...
