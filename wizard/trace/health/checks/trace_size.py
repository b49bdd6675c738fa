"""trace-size: a trace too large for a viewer to open, or one mostly Python stacks."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, TypedDict

from wizard.formatting import plural
from wizard.trace.health.spec import (
    Bounds,
    CheckFact,
    CheckSpec,
    HealthCheck,
)

if TYPE_CHECKING:
    from wizard.trace.health.tables import Tables


# trace-size is worth a word (info) from this size: the unpacked JSON a viewer must hold (Perfetto's UI and
# TensorBoard load the whole text in a browser tab). Below it the size is a statistic every trace has, said with its
# numbers (ok): a with_stack trace is mostly python_function events by design (h100-bert-small's 56%, b200-eager's
# 62%), so their share is a word only where it makes the trace too big to open (issue 44 item 12)
SIZE_WORTH_A_WORD = 256 << 20
PYTHON_SHARE_WORTH_A_WORD = 0.4  # past the size, the share from which dropping with_stack is the advice
SIZE_CATEGORIES = 20  # trace-size's categories: the largest, the rest counted


class TraceSizeDetails(TypedDict):
    categories: Annotated[dict[str, int], "events per category, the largest", Bounds(max_properties=SIZE_CATEGORIES)]
    bytes: Annotated[int, "the file's size on disk"]
    python_share: Annotated[float, "python_function events' share of the events", Bounds(minimum=0, maximum=1)]
    largest: Annotated[str | None, "the category with the most events"]
    other_categories: Annotated[int, "categories left out"]
    other_events: Annotated[int, "their events"]
    unpacked_bytes: Annotated[int, "the JSON's size"]
    compressed: Annotated[bool, "whether the file is compressed"]


CHECK = CheckSpec(
    "trace-size",
    None,
    "trace size",
    TraceSizeDetails,
    order=80,
    counts=(
        f"events with a `cat`; `categories` (the {SIZE_CATEGORIES} largest, most events first, then by name), "
        "`other_categories` and `other_events` (the categories left out, and their events), `bytes` (the file"
        " on disk: compressed for a `.gz`), `unpacked_bytes` (the JSON itself), `compressed`, `python_share`,"
        " `largest`"
    ),
    status_rule=(
        f"`ok` with its numbers; `info` when the unpacked JSON is {SIZE_WORTH_A_WORD >> 20} MiB or more (a viewer"
        " holds the whole text: Perfetto's UI and TensorBoard may not open it), advising to drop `with_stack` where"
        f" `python_share` is {PYTHON_SHARE_WORTH_A_WORD:g} or more"
    ),
    facts=(CheckFact("trace_events", int, "events with a category in the traces"),),
)


def _size_on_disk(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def run(tables: Tables) -> HealthCheck:
    contents = tables.contents
    ranked = sorted(contents.timeline.categories.items(), key=lambda kv: (-kv[1], str(kv[0])))
    count = sum(n for _, n in ranked)
    categories = dict(ranked[:SIZE_CATEGORIES])
    other = ranked[SIZE_CATEGORIES:]
    unpacked = contents.bytes_read
    size = _size_on_disk(contents.path) if contents.path else unpacked
    size = contents.stored_bytes if contents.stored_bytes is not None else size  # an object read from its URL
    python = contents.timeline.categories.get("python_function", 0)
    share = python / count if count else 0.0
    largest = ranked[0][0] if ranked else None
    details = {
        "categories": categories,
        "other_categories": len(other),
        "other_events": sum(n for _, n in other),
        "bytes": size,
        "unpacked_bytes": unpacked,
        "compressed": contents.compressed,
        "python_share": share,
        "largest": largest,
    }
    packed = f"{_bytes(size)} ({_bytes(unpacked)} unpacked)" if contents.compressed else _bytes(size)
    if not count:
        return CHECK.verdict(0, "ok", f"no categorised events in {packed}", "", details=details)
    said = f"{plural(count, 'event')} in {packed}; most events are {largest!s:.40} ({ranked[0][1]})"
    big, stacks = unpacked >= SIZE_WORTH_A_WORD, share >= PYTHON_SHARE_WORTH_A_WORD
    if stacks:
        said += f"; python_function events are {share:.0%} of them"
    if not big:
        return CHECK.verdict(count, "ok", said, "", details=details)
    why = [
        f"{_bytes(unpacked)} of JSON may not open in Perfetto or TensorBoard (the browser holds the whole "
        "text): profile fewer active steps"
    ]
    if stacks:
        why.append(
            f"python_function events are {share:.0%} of the events (with_stack=True): drop with_stack where the "
            "Python line is not needed"
        )
    return CHECK.verdict(count, "info", said, "; ".join(why), details=details)


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
