"""A rank's summary (schema ``warpwizard.rank-summary/1``): what the job's checks and a comparison need of one
trace, a few KB where the trace is hundreds of MB, so a job of 10,000 ranks is judged from summaries alone.

It holds the file's identity (path or URL, size, mtime or ETag: a summary is reused only for the very file it
was made from), where the trace says it stands (rank, world size, backend, process groups: ranks-complete),
whether its read was cut short and each NCCL collective's starts (rank-skew), its devices and steps, and each
health check's verdict (status, count, one line). A summary read back is input like a trace: it is decoded by
msgspec into the typed ``RankSummary`` below (a wrong type or a list past its bound is refused), its size is
bounded before it is read, and one written by another schema or another warpwizard is made again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated, Any

import msgspec

from wizard import __version__
from wizard.schemas import RANK_SUMMARY

TEXT = 512  # characters of a line or a name kept
CHECKS = 64  # health verdicts kept (the registry has fewer)
NAMES = 64  # NCCL names, as rank-skew keeps (COLLECTIVE_NAMES)
STARTS = 10_000  # starts per name, as rank-skew keeps (COLLECTIVE_INSTANCES)
STEPS = 1000  # step durations, as the profile keeps (MAX_STEPS)
DEVICES = 64
GROUPS = 256  # process groups of one rank, as ranks-complete reads (GROUPS)
GROUP_RANKS = 4096
# A summary is KB in practice (a few collectives x a few hundred steps); its bound is what the fields above allow,
# 64 names x 10,000 starts at most: a file past it is not read.
MAX_BYTES = 24 << 20

Text = Annotated[str, msgspec.Meta(max_length=TEXT)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class Source(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which file a summary was made from: a local file by its resolved path, size and mtime (ns); an object by
    its URL, size, ETag and modification time."""

    path: Annotated[str, msgspec.Meta(max_length=4096)]
    size: Count | None
    mtime: Annotated[str, msgspec.Meta(max_length=64)] | None
    etag: Annotated[str, msgspec.Meta(max_length=128)] | None


class Place(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The trace's ``distributedInfo`` as ranks-complete reads it (``JobPlace``)."""

    rank: Count | None = None
    world_size: Count | None = None
    backend: Text | None = None
    groups: Annotated[
        list[Annotated[list[Count], msgspec.Meta(max_length=GROUP_RANKS)]], msgspec.Meta(max_length=GROUPS)
    ] = []


class Verdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One health check's verdict on this rank: what the job's table folds."""

    check: Text
    status: Text
    count: Count
    summary: Text
    playbook: Text | None = None


class Device(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: int | None
    name: Text | None
    num_sms: Count | None
    compute_capability: Text | None


class RankSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One rank's trace summed up for the job (module docstring)."""

    schema: Text
    warpwizard: Text
    checks: Annotated[list[Text], msgspec.Meta(max_length=CHECKS)] | None  # the selection it was made with
    source: Source
    rank: int | None  # distributedInfo.rank (rank-skew's; a rank directory falls back to the file name)
    place: Place
    truncated: bool
    truncation: Text | None
    format: Text
    writer: Text
    bytes_read: Count
    events: Count
    kernels: Count
    devices: Annotated[list[Device], msgspec.Meta(max_length=DEVICES)]
    steps: Annotated[list[float], msgspec.Meta(max_length=STEPS)]
    collectives: Annotated[
        dict[Text, Annotated[list[float], msgspec.Meta(max_length=STARTS)]], msgspec.Meta(max_length=NAMES)
    ]
    health: Annotated[list[Verdict], msgspec.Meta(max_length=CHECKS)]
    health_status: Text
    seconds: float  # the read and every pass, on the machine that made it

    @property
    def path(self) -> str:
        return self.source.path


def _text(value: object, limit: int = TEXT) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def of_report(report: Any, source: Source, checks: tuple[str, ...] | None) -> RankSummary:
    """The summary of one ``TraceInspection`` (the run's per-trace record): every field bounded as declared."""
    health = report.health_result
    place = health.place
    profile = report.profile
    return RankSummary(
        schema=RANK_SUMMARY,
        warpwizard=__version__,
        checks=list(checks) if checks is not None else None,
        source=source,
        rank=health.rank,
        place=Place(place.rank, place.world_size, place.backend, [list(g) for g in place.groups[:GROUPS]]),
        truncated=report.truncation is not None,
        truncation=_text(report.truncation.detail) if report.truncation is not None else None,
        format=_text(report.format),
        writer=_text(report.writer),
        bytes_read=report.bytes_read,
        events=report.events,
        kernels=report.kernels,
        devices=[Device(d.id, _opt(d.name), d.num_sms, _opt(d.compute_capability)) for d in profile.devices[:DEVICES]],
        steps=[float(s) for s in profile.steps[:STEPS]],
        collectives={_text(k): list(v[:STARTS]) for k, v in list(health.collectives.items())[:NAMES]},
        health=[
            Verdict(_text(c.check), c.status, max(0, int(c.count)), _text(c.summary), c.playbook)
            for c in health.checks[:CHECKS]
        ],
        health_status=_worst(health.checks),
        seconds=float(report.timing.get("read_s", 0.0) + report.timing.get("passes_s", 0.0)),
    )


def _opt(value: object) -> str | None:
    return None if value is None else _text(value)


def _worst(checks: Any) -> str:
    from wizard.trace.health.checker import worst_status

    return worst_status(checks)


def local_source(path: str) -> Source:
    """A local file's identity, by its stat (its resolved path: two spellings of one file are one summary)."""
    info = os.stat(path)
    return Source(os.path.realpath(path), info.st_size, str(info.st_mtime_ns), None)


def source_of(path: str) -> Source:
    """The identity of a local file or a URL's object (a metadata request: no byte of it read)."""
    from wizard.trace.read.remote import identity, is_url

    if not is_url(path):
        return local_source(path)
    found = identity(path)
    return Source(found.url, found.size, found.mtime, found.etag)


def file_name(source: Source) -> str:
    """Where a file's summary lies in the summaries directory: named by its path's hash (one name per file, so a
    changed file's new summary replaces its old one)."""
    digest = hashlib.sha256(source.path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return f"{digest}.rank-summary.json"


def encode(summary: RankSummary) -> str:
    """The document as JSON, through the one writer (non-finite starts spelled as strings)."""
    from wizard.serialize import dumps

    return dumps(msgspec.to_builtins(summary), indent=None)


def decode(data: bytes) -> RankSummary | None:
    """A summary read back, checked against its schema; None for one that is not ours to reuse (another schema
    version, another warpwizard, a wrong type, a bound passed): it is made again from the trace."""
    if len(data) > MAX_BYTES:
        return None
    try:
        raw = msgspec.json.decode(data)
        if not isinstance(raw, dict) or raw.get("schema") != RANK_SUMMARY or raw.get("warpwizard") != __version__:
            return None
        return msgspec.convert(_finite(raw), RankSummary)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _finite(raw: dict[str, Any]) -> dict[str, Any]:
    """The starts as numbers: ``dumps`` spells a non-finite one "inf"/"-inf"/"nan" (rank-skew counts such a skew
    as unmeasured, so it must come back as the float it was)."""
    spelled = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}
    steps = raw.get("steps")
    if isinstance(steps, list):
        raw["steps"] = [spelled.get(x, x) if isinstance(x, str) else x for x in steps]
    starts = raw.get("collectives")
    if isinstance(starts, dict):
        raw["collectives"] = {
            k: [spelled.get(x, x) if isinstance(x, str) else x for x in v] if isinstance(v, list) else v
            for k, v in starts.items()
        }
    return raw


def load(directory: Path, source: Source, checks: tuple[str, ...] | None) -> RankSummary | None:
    """The summary of ``source`` in ``directory`` when it is of that very file, made with the same checks; else
    None (none there, another file's, another version's, unreadable)."""
    target = directory / file_name(source)
    try:
        with open(target, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    found = decode(data)
    if found is None or found.source != source:
        return None
    return found if found.checks == (list(checks) if checks is not None else None) else None


def save(directory: Path, summary: RankSummary) -> Path:
    """Written through ``outputs`` (never half-written; a newer one replaces an older)."""
    from wizard.outputs import write_text

    return write_text(directory / file_name(summary.source), encode(summary), force=True, what="rank summary")
