"""A rank read from a trace or a report (``distributedInfo.rank``, ``collectives.rank``, a rank-like file name):
untrusted, so an int in [0, MAX_RANK), from ASCII digits only (``rank٣.json`` is no rank 3, nor is -1, 10^300 or a
200-digit number in a name). Apart from ``wizard.cluster`` (where a process stands in its launcher's job, which
reads none of them): a trace's reader and checks read ranks without loading the launcher's side (its ``Rank``
dataclass, ``platform``, the workspace's names)."""

from __future__ import annotations

import re

MAX_RANK = 1 << 20
# A tensorboard_trace_handler file's name: {worker_name}.{time}.pt.trace.json(.gz), its worker name before the time
_HANDLER_TIME = re.compile(r"[0-9]+\.", re.ASCII)
# A word that says rank: rank3, rank_3, rank-3, worker3 (the worker names HTA and launchers give), a word of its
# own, not inside a longer one (no "rank0of8"); r3 only as the stem's last word (job-r3: "faster_rcnn_r50_fpn" is
# ResNet-50, not rank 50).
_RANK_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:rank|worker)[_-]?(?P<long>[0-9]+)(?![A-Za-z0-9])|r(?P<short>[0-9]+)\Z)",
    re.ASCII | re.I,
)
# A stem that is a number and nothing else (3.json): "_3" at a stem's end is a step, a size or a model as often
# as a rank (step_100, bert_seq_512, resnet_50), so it is none
_NUMBER = re.compile(r"(?P<digits>[0-9]+)\Z", re.ASCII)


def rank_value(value: object) -> int | None:
    """A rank a trace or report declares, or None: an int (not a bool) in [0, MAX_RANK)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_RANK:
        return value
    return None


def rank_in_name(name: str) -> int | None:
    """The rank a rank-like file name gives, else None: a word that says rank (``rank3``, ``rank_3``, ``rank-3``,
    ``worker3``; ``r3`` as the stem's last word) in its stem (the name up to its first dot), else a stem that is a
    number (``3.json``).
    Never any other number: ``h100-bert-small``, ``rtx2080ti`` or ``mi250`` name a GPU, not rank 100, 2080 or 250;
    ``step_100``, ``bert_seq_512`` or ``resnet_50`` a step, a length or a model; a tensorboard_trace_handler file's
    ``{worker_name}.{time}`` ends its default worker name (hostname_pid) in the pid, so there only a word that says
    rank counts."""
    stem, _, extensions = name.partition(".")
    word = _RANK_WORD.search(stem)
    if word is not None:
        return _digits_rank(word.group("long") or word.group("short"))
    number = _NUMBER.match(stem)
    if number is None or _HANDLER_TIME.match(extensions):
        return None
    return _digits_rank(number.group("digits"))


def _digits_rank(digits: str) -> int | None:
    """A run of ASCII digits as a rank, or None where it is too long or outside [0, MAX_RANK)."""
    return None if len(digits) > len(str(MAX_RANK)) else rank_value(int(digits))
