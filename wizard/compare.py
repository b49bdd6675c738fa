"""Merge warpwizard JSON reports from several machines or GPUs and say where the anomaly
appears: the same everywhere, or only on some GPU models, drivers or torch builds.

Accepts run transcripts (``warpwizard run --json``) and trace reports
(``warpwizard trace inspect --json``), so a cluster's nodes can each run warpwizard from
their scheduler (``srun``, ``torchrun``) and the files be compared in one place.
"""

from __future__ import annotations

import math
import re
import shlex
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from wizard import schemas
from wizard.errors import InputFileError
from wizard.ranks import rank_in_name, rank_value
from wizard.untrusted import cut, visible


@dataclass(slots=True)
class MachineReport:
    source: str
    host: str
    gpus: list[str]
    torch: str | None
    driver: str | None
    mechanisms: list[str]
    impossible: bool | None
    work: str | None = None  # fingerprint of what ran (a trace's kernels and shapes, a repro's op and shapes)
    # rank -> NCCL kernel name -> starts: what a trace report carries for the cross-rank check
    collectives: dict[int, dict[str, Sequence[float]]] = field(default_factory=dict)
    # why a trace report checked no kernel ("not checked (ROCm trace: ...)"): its impossible is then None, not "clean"
    unchecked: str | None = None

    @property
    def key(self) -> str:
        return f"{self.host} ({', '.join(sorted(set(self.gpus))) or 'unknown GPU'})"

    @property
    def wrong(self) -> list[str]:
        """The mechanisms behind values a user would misread (every one but the harmless)."""
        return [m for m in self.mechanisms if m not in HARMLESS]

    @property
    def harmless(self) -> list[str]:
        return [m for m in self.mechanisms if m in HARMLESS]


# Another machine's report is untrusted: what is kept of it is bounded, so a hostile one (a 1 MB
# host name, 100,000 mechanism names) costs no more to compare and print than an honest one.
MAX_TEXT = 160  # characters of one name (host, GPU, torch, driver)
MAX_ITEMS = 64  # names of one list (GPUs, mechanisms)
MAX_MECHANISM = 8  # characters of a mechanism id ("A'", "?")
MAX_RANKS = 4096  # per-rank reports kept from one document
MAX_STARTS = 10_000  # collective starts kept per name (trace.health keeps as many)
BY_DESIGN = "F"  # trace.mechanisms.Mechanism.BY_DESIGN: this module imports no layer; a test checks they agree
# The wrong values that change nothing a user reads (E: a 0% for a kernel that ran, judged with the 48 KB default):
# the mechanisms whose verdict is ``info``. Shown apart, never as "impossible values"; a test checks they agree.
HARMLESS = frozenset({"E"})


MAX_DOCUMENT_STARTS = 1_000_000  # collective starts kept from one document (8 MB as arrays), whatever it holds
MAX_ENTRIES = 10_000  # a transcript's entries read (as --from reads transcripts)
_SMALL_LIST = 32 * MAX_STARTS  # bytes of a list decoded whole; a longer one is read item by item, up to the cap


def _cut(text: str) -> str:
    return cut(text, MAX_TEXT)


# -- reading another machine's report without building it ------------------------------------------
# json.loads of a report built every value of it: 25 bytes of memory per byte of `[{}, {}, ...]`, 1.5 GB
# for one 61 MB report. The document is checked once by msgspec without building anything (a Raw), and
# only the fields compare uses are decoded, each into the type it must have (anything else: absent),
# lists and objects item by item up to their bound.

_NOTHING = msgspec.Raw(b"")
_TRAILING = re.compile(r"trailing characters \(byte ([0-9]+)\)")
_BLANKS = frozenset(b" \t\r\n")
_Scalar = str | int | float | None


def _end(view: memoryview) -> int:
    """Where the first JSON value in ``view`` ends, blanks after it included (the document was checked whole
    already): msgspec reads one value and names the 1-based byte of what follows it."""
    try:
        msgspec.json.decode(view, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        found = _TRAILING.search(str(exc))
        if found is None:
            raise
        return int(found.group(1)) - 1
    return len(view)


def _skip(view: memoryview, at: int) -> int:
    while at < len(view) and view[at] in _BLANKS:
        at += 1
    return at


def _items(raw: bytes | memoryview, limit: int) -> Iterator[memoryview]:
    """The first ``limit`` items of a JSON array (nothing when it is not one), none built."""
    view = memoryview(raw)
    at = _skip(view, 0)
    if at >= len(view) or view[at] != ord("["):
        return
    at, taken = _skip(view, at + 1), 0
    while at < len(view) and view[at] != ord("]") and taken < limit:
        end = at + _end(view[at:])
        yield view[at:end]
        taken += 1
        at = _skip(view, end)
        if at < len(view) and view[at] == ord(","):
            at = _skip(view, at + 1)


def _members(raw: bytes | memoryview, limit: int) -> Iterator[tuple[str, memoryview]]:
    """The first ``limit`` members of a JSON object (nothing when it is not one), values not built."""
    view = memoryview(raw)
    at = _skip(view, 0)
    if at >= len(view) or view[at] != ord("{"):
        return
    at, taken = _skip(view, at + 1), 0
    while at < len(view) and view[at] != ord("}") and taken < limit:
        key_end = at + _end(view[at:])
        key = msgspec.json.decode(view[at:key_end], type=str)
        at = _skip(view, _skip(view, key_end) + 1)  # past the colon
        end = at + _end(view[at:])
        yield key, view[at:end]
        taken += 1
        at = _skip(view, end)
        if at < len(view) and view[at] == ord(","):
            at = _skip(view, at + 1)


T = TypeVar("T")


def _as(raw: bytes | memoryview, kind: type[T]) -> T | None:
    """``raw`` decoded as ``kind``, or None when absent or of another type (a struct of Raws skips every
    field it does not name; a scalar type refuses an array before building it)."""
    if not len(raw):
        return None
    try:
        return msgspec.json.decode(raw, type=kind)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def _value(raw: bytes | memoryview) -> Any:
    """A scalar (str, int, float, bool, null) as it is; an array or object (not built): None."""
    value: Any = _as(raw, _Scalar | bool)  # type: ignore[arg-type]
    return value


class _Host(msgspec.Struct):
    hostname: msgspec.Raw = _NOTHING
    rank: msgspec.Raw = _NOTHING
    gpus: msgspec.Raw = _NOTHING
    torch: msgspec.Raw = _NOTHING
    driver: msgspec.Raw = _NOTHING


class _Facts(msgspec.Struct):
    impossible: msgspec.Raw = _NOTHING
    reproduced: msgspec.Raw = _NOTHING
    cuda_available: msgspec.Raw = _NOTHING
    mechanisms: msgspec.Raw = _NOTHING
    workload: msgspec.Raw = _NOTHING
    gpus: msgspec.Raw = _NOTHING
    torch_version: msgspec.Raw = _NOTHING
    driver_version: msgspec.Raw = _NOTHING
    gpu_names: msgspec.Raw = _NOTHING


class _Entry(msgspec.Struct):
    probe: msgspec.Raw = _NOTHING
    facts: msgspec.Raw = _NOTHING


class _Report(msgspec.Struct):
    path: msgspec.Raw = _NOTHING
    devices: msgspec.Raw = _NOTHING
    collectives: msgspec.Raw = _NOTHING
    kernels: msgspec.Raw = _NOTHING
    kernels_checked: msgspec.Raw = _NOTHING
    rocm: msgspec.Raw = _NOTHING


class _Device(msgspec.Struct):
    name: msgspec.Raw = _NOTHING


class _Collectives(msgspec.Struct):
    rank: msgspec.Raw = _NOTHING
    starts: msgspec.Raw = _NOTHING


class _Document(msgspec.Struct):
    schema: msgspec.Raw = _NOTHING
    host: msgspec.Raw = _NOTHING
    entries: msgspec.Raw = _NOTHING
    reports: msgspec.Raw = _NOTHING
    mechanisms: msgspec.Raw = _NOTHING
    impossible: msgspec.Raw = _NOTHING
    workload: msgspec.Raw = _NOTHING
    traceEvents: msgspec.Raw = _NOTHING  # a trace's own key: a trace given where a report is wanted


def _texts(raw: bytes | memoryview) -> list[str]:
    """A list of names from another machine's report: strings only, whatever else is there; bounded."""
    names = (_text(_value(item)) for item in _items(raw, MAX_ITEMS * 4))
    return [n for n in names if n is not None][:MAX_ITEMS]


def _text(value: Any) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _cut(value if isinstance(value, str) else repr(value)[:MAX_TEXT])
    return None


def _mechanisms(names: Iterable[Any]) -> set[str]:
    """Mechanism ids as a set: short names only, at most MAX_ITEMS."""
    found = {n for n in names if isinstance(n, str) and 0 < len(n) <= MAX_MECHANISM}
    return set(sorted(found)[:MAX_ITEMS])


def _names(raw: bytes | memoryview) -> list[Any]:
    """The first items of a list of mechanism ids, each a scalar or None."""
    return [_value(item) for item in _items(raw, MAX_ITEMS * 64)]


# The probes whose facts say which mechanisms a run saw (trace.inspect in a trace, the others in a re-run).
SHOW_MECHANISMS = {"trace.inspect", "profiler.reprofile", "op.isolate"}


def _probe(entry: _Entry, facts: _Facts) -> str | None:
    """The probe an entry ran, by its name; a transcript written before entries carried it is told by its
    facts (the env probe's torch version, a mechanism probe's mechanisms)."""
    if len(entry.probe):
        name = _value(entry.probe)
        return name if isinstance(name, str) else None
    if len(facts.torch_version):
        return "env"
    return "trace.inspect" if len(facts.mechanisms) else None


def _from_transcript(data: _Document, source: str) -> MachineReport:
    host = _as(data.host, _Host) or _Host()
    mechanisms: set[str] = set()
    impossible: bool | None = None
    gpus = _texts(host.gpus)
    torch, driver = _text(_value(host.torch)), _text(_value(host.driver))
    work: str | None = None
    for item in _items(data.entries, MAX_ENTRIES):
        entry = _as(item, _Entry)
        facts = _as(entry.facts, _Facts) if entry is not None else None
        if entry is None or facts is None:
            continue
        probe = _probe(entry, facts)
        # trace.inspect says "impossible"; a probe that re-ran the workload or a repro, "reproduced"
        shown = _value(facts.impossible) if len(facts.impossible) else _value(facts.reproduced)
        ran_kernels = _value(facts.cuda_available) is not False  # a CPU-only re-run shows nothing either way
        if probe in SHOW_MECHANISMS and isinstance(shown, bool) and ran_kernels:
            mechanisms |= _mechanisms(_names(facts.mechanisms))
            impossible = bool(impossible) or shown
            work = work or _text(_value(facts.workload))
            gpus = gpus or _texts(facts.gpus)
        if probe == "env":
            torch = torch or _text(_value(facts.torch_version))
            driver = driver or _text(_value(facts.driver_version))
            gpus = gpus or _texts(facts.gpu_names)
    hostname = _text(_value(host.hostname)) or "?"
    rank = rank_value(_value(host.rank))
    if rank is not None:  # one report per process of a launcher's job
        hostname = f"{hostname} rank {rank}"
    mechanisms_found = sorted(_mechanisms(mechanisms - {BY_DESIGN}))
    return MachineReport(source, hostname, gpus, torch, driver, mechanisms_found, impossible, work)


def _from_trace_report(data: _Document, source: str) -> MachineReport:
    reports = [r for item in _items(data.reports, MAX_RANKS) if (r := _as(item, _Report)) is not None]
    gpus = sorted(
        {
            _cut(name)
            for r in reports[:MAX_ITEMS]
            for item in _items(r.devices, MAX_ITEMS)
            if (d := _as(item, _Device)) is not None and isinstance(name := _value(d.name), str) and name
        }
    )[:MAX_ITEMS]
    found = [key for key, _ in _members(data.mechanisms, MAX_ITEMS * 64)]
    mechanisms = sorted(_mechanisms(m for m in found if m != BY_DESIGN))
    unchecked = _unchecked(reports)
    return MachineReport(
        source,
        _trace_label(reports, source),
        gpus,
        None,
        None,
        mechanisms,
        None if unchecked else _value(data.impossible) is True,
        _text(_value(data.workload)),
        _collectives(reports),
        unchecked,
    )


def _count(raw: bytes | memoryview) -> int | None:
    value = _value(raw)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _unchecked(reports: list[_Report]) -> str | None:
    """Why a trace report checked no kernel at all (a ROCm trace, an Nsight Systems export, no kernel), or None
    where it checked some, or does not say (a report from before ``kernels_checked``): such a report can show
    no impossible value, so it is no machine where a mechanism is absent."""
    checked = [_count(r.kernels_checked) for r in reports]
    if not reports or any(n is None or n > 0 for n in checked):
        return None
    kernels = sum(n for r in reports if (n := _count(r.kernels)) is not None)
    if not kernels:
        return "not checked (no GPU kernel in the trace)"
    if any(_value(r.rocm) is True for r in reports):
        return "not checked (ROCm trace: the profiler records no blocks/warps per SM or occupancy on AMD GPUs)"
    return f"not checked (none of its {kernels:,} kernels carries blocks/warps per SM or occupancy)"


def _trace_label(reports: list[_Report], source: str) -> str:
    """What a trace report is called in a comparison: its trace (file, or rank directory), never the report's
    ``host``, which is the machine that ran warpwizard, not the one that ran the workload."""
    paths = [p for r in reports[:MAX_ITEMS] if isinstance(p := _value(r.path), str) and p]
    if not paths:
        return _cut(Path(source).stem)
    if len(paths) == 1:
        return _cut(paths[0].rsplit("/", 1)[-1])
    folders = {p.rsplit("/", 2)[-2] if p.count("/") else "." for p in paths}
    where = folders.pop() if len(folders) == 1 else Path(source).stem
    return _cut(f"{where}/ ({len(reports)} ranks)")


def _starts(raw: memoryview, room: int) -> array[float]:
    """One NCCL name's starts: finite numbers, at most MAX_STARTS and ``room``, kept as an array of doubles."""
    limit = min(MAX_STARTS, room)
    values: list[Any] | None = _as(raw, list[Any]) if len(raw) <= _SMALL_LIST else None
    if values is None:  # a long list, or one holding what msgspec refuses (1e400): item by item, never whole
        values = [_value(item) for item in _items(raw, limit + 64)]
    numbers = (v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
    kept = array("d")
    for v in numbers:
        try:
            number = float(v)
        except OverflowError:  # a 400-digit integer is no time
            continue
        if math.isfinite(number):
            kept.append(number)
            if len(kept) >= limit:
                break
    return kept


def _collectives(reports: list[_Report]) -> dict[int, dict[str, Sequence[float]]]:
    """Each per-rank report's ``collectives`` (rank, NCCL kernel starts per name), bounded and typed: at most
    MAX_DOCUMENT_STARTS starts in all from one document."""
    out: dict[int, dict[str, Sequence[float]]] = {}
    room = MAX_DOCUMENT_STARTS
    for r in reports:
        found = _as(r.collectives, _Collectives)
        if found is None:
            continue
        rank, path = rank_value(_value(found.rank)), _value(r.path)
        absent = not len(found.rank) or bytes(found.rank).strip() == b"null"
        if absent and isinstance(path, str):  # no distributedInfo: the trace file's number
            rank = rank_in_name(path.rsplit("/", 1)[-1])
        if rank is None or not _is_object(found.starts) or next(_members(found.starts, 1), None) is None:
            continue  # no collective: nothing for the cross-rank check (and a name's digits are no rank then)
        kept: dict[str, Sequence[float]] = {}
        for name, values in _members(found.starts, MAX_ITEMS):
            if room <= 0:
                break
            if _is_array(values):
                kept[_cut(name)] = starts = _starts(values, room)
                room -= len(starts)
        out[rank] = kept
    return out


def _is_object(raw: bytes | memoryview) -> bool:
    view = memoryview(raw)
    at = _skip(view, 0)
    return at < len(view) and view[at] == ord("{")


def _is_array(raw: bytes | memoryview) -> bool:
    view = memoryview(raw)
    at = _skip(view, 0)
    return at < len(view) and view[at] == ord("[")


MAX_REPORT_BYTES = 64 << 20


def _read(path: str) -> bytearray:
    """The report's bytes, at most MAX_REPORT_BYTES, in blocks: ``read(64 MB)`` would take 64 MB at once."""
    data = bytearray()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            data += block
            if len(data) > MAX_REPORT_BYTES:
                raise InputFileError(f"{path}: too large for a warpwizard report (over {MAX_REPORT_BYTES} bytes)")
    return data


def load_report(path: str) -> MachineReport:
    try:
        raw = _read(path)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such report") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, not a report") from None
    except OSError as exc:
        raise InputFileError(f"{path}: not a warpwizard JSON report ({exc.strerror or exc})") from None
    try:
        data = msgspec.json.decode(raw, type=_Document)  # checked whole (UTF-8 too), nothing built but the top
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # msgspec's errors too (not an object: one)
        reason = str(exc) or type(exc).__name__
        raise _not_a_report(path, raw, f"not a warpwizard JSON report ({reason})") from None
    schema = _value(data.schema)
    document = schemas.kind(schema)
    if document == "warpwizard.transcript":
        return _from_transcript(data, path)
    if document == "warpwizard.trace-report":
        return _from_trace_report(data, path)
    found = visible(schema)[:80] if isinstance(schema, str) and schema else "none"
    said = f"not a warpwizard JSON report (expected schema {schemas.readable_text()}, found {found})"
    raise _not_a_report(path, raw, said, has_events=data.traceEvents is not _NOTHING)


def _not_a_report(path: str, raw: bytearray, said: str, *, has_events: bool = False) -> InputFileError:
    """The refusal of a file that is no report: a profiler trace is named, with the command that writes its report
    (``trace inspect --json``); any other gzip file as one (compare reads reports as ``--json`` writes them);
    anything else as ``said``."""
    gzipped = raw[:2] == _GZIP_MAGIC
    trace = _a_trace(bytes(raw[: _HEAD << 4 if gzipped else _HEAD]), has_events=has_events)
    if trace is not None:
        return InputFileError(
            f"{path}: {trace}, not a warpwizard JSON report: `warpwizard trace inspect {shlex.quote(path)} --json > "
            "REPORT.json` "
            "writes its report, which compare reads"
        )
    if gzipped:
        return InputFileError(
            f"{path}: a gzip file, not a warpwizard JSON report (compare reads a report as `--json` writes it: "
            "gunzip it first)"
        )
    return InputFileError(f"{path}: {said}")


_HEAD = 64 << 10  # of the file (of what its gzip stream inflates to): a Kineto trace's traceEvents key lies in it
_GZIP_MAGIC = b"\x1f\x8b"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _a_trace(head: bytes, *, has_events: bool) -> str | None:
    """What kind of trace the first bytes are, in words, or None: a JSON trace by its ``traceEvents`` key or PyTorch
    1.8's bare array of objects, an export by SQLite's header, a gzipped one inflated first. By the bytes alone, with
    the standard library: this foundation module imports no trace layer (a Perfetto trace goes unnamed)."""
    import zlib

    gzipped = head.startswith(_GZIP_MAGIC)
    if gzipped:
        try:
            head = zlib.decompressobj(31).decompress(head, _HEAD)
        except zlib.error:
            return None
    packed = "a gzipped " if gzipped else "a "
    if head.startswith(_SQLITE_MAGIC):
        return f"{packed}SQLite database (a profiler export)"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    array_of_objects = text.startswith(b"[") and text[1:].lstrip(b" \t\r\n").startswith(b"{")
    if has_events or array_of_objects or (text.startswith(b"{") and b'"traceEvents"' in head):
        return f"{packed}profiler trace (Chrome trace JSON)"
    return None


@dataclass(slots=True)
class Comparison:
    machines: list[MachineReport]
    reproduces_on: list[str] = field(default_factory=list)
    clean_on: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def known(self) -> list[MachineReport]:
        return [m for m in self.machines if m.impossible is not None]

    @property
    def by_mechanism(self) -> dict[str, list[str]]:
        """Each mechanism found anywhere -> the machines that show it."""
        out: dict[str, list[str]] = {}
        for m in self.known:
            for mechanism in m.mechanisms:
                out.setdefault(mechanism, []).append(m.key)
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        """What ``warpwizard compare --json`` prints."""
        return {
            "machines": [  # every field but the collectives (never copied: they can be 8 MB a report)
                {f.name: getattr(m, f.name) for f in fields(m) if f.name != "collectives"} for m in self.machines
            ],
            "verdict": self.verdict,
            "hardware_specific": self.hardware_specific,
            "same_work": self.same_work,
            "by_mechanism": self.by_mechanism,
        }

    def _specific(self, mechanism: str) -> bool:
        """Some machines show it and others not, and no GPU model (or one driver) is on both sides."""
        showing = [m for m in self.known if mechanism in m.mechanisms]
        lacking = [m for m in self.known if mechanism not in m.mechanisms]
        if not showing or not lacking:
            return False
        bad = {g for m in showing for g in m.gpus}
        good = {g for m in lacking for g in m.gpus}
        return not (bad & good) or len({m.driver for m in self.known}) > 1

    @property
    def same_work(self) -> bool:
        """Whether every report that says what it ran ran the same: only then can a difference between
        machines be the hardware's (a report from before fingerprints says nothing, and is believed)."""
        return len({m.work for m in self.known if m.work}) <= 1

    @property
    def hardware_specific(self) -> bool:
        return self.same_work and any(self._specific(m) for m in self.by_mechanism)

    def _why_not(self) -> str:
        """Why there is nothing to compare, said so that the next run can fix it (it once said only
        "not enough reports" of two reports that both skipped)."""
        silent = [m for m in self.machines if m.impossible is None and not m.unchecked]
        if len(self.machines) < 2:
            return "cannot compare: one report; give two or more, from different machines or runs"
        head = f"cannot compare: {len(self.known)} of {len(self.machines)} reports say whether impossible values showed"
        parts = [head, *self._unchecked_parts()]
        if silent:
            names = ", ".join(Path(m.source).name for m in silent[:8]) + (", ..." if len(silent) > 8 else "")
            whose = "its" if len(silent) == 1 else "their"
            parts.append(
                f"{names} inspected no trace and reran nothing on a GPU ({whose} probes skipped or ran on the CPU); "
                "compare reports from runs that inspected a trace or ran the workload or a repro on a GPU"
            )
        return "; ".join(parts)

    def _unchecked_parts(self) -> list[str]:
        """Each trace report that checked no kernel, with why: "mi300.json.gz (AMD ...): not checked (ROCm ...)"."""
        unchecked = [m for m in self.machines if m.unchecked]
        said = [f"{m.key}: {m.unchecked}" for m in unchecked[:8]]
        return said + ([f"{len(unchecked) - 8} more not checked"] if len(unchecked) > 8 else [])

    def _pattern(self, keys: tuple[str, ...], specific: bool, mechanisms: list[str]) -> str:
        """One sentence for mechanisms seen on the same machines; a harmless one says so."""
        names = ", ".join(f"{m} (harmless)" if m in HARMLESS else m for m in mechanisms)
        showing = set(keys)
        others = [m.key for m in self.known if m.key not in showing]
        if not others:
            return f"{names} on every machine"
        if specific:
            return f"{names} only on {', '.join(keys)}, not on {', '.join(others)}"
        return (
            f"{names} on {', '.join(keys)} but not on {', '.join(others)}, with the same GPU model "
            "on both sides: look at software differences (torch, driver)"
        )

    @property
    def verdict(self) -> str:
        """What the comparison concludes over the machines that checked kernels; the others named with why."""
        if len(self.known) < 2:
            return self._why_not()
        return "; ".join([self._known_verdict(), *self._unchecked_parts()])

    def _known_verdict(self) -> str:
        if not self.by_mechanism:
            return "no machine shows impossible values"
        # Mechanisms seen on the same machines, the same way, share one sentence ("A, E on every
        # machine"): the verdict grows with the distinct patterns, not with the mechanisms.
        patterns: dict[tuple[tuple[str, ...], bool], list[str]] = {}
        for mechanism, machines in self.by_mechanism.items():
            patterns.setdefault((tuple(machines), self._specific(mechanism)), []).append(mechanism)
        parts = [self._pattern(keys, specific, mechanisms) for (keys, specific), mechanisms in patterns.items()]
        if not any(m not in HARMLESS for m in self.by_mechanism):
            return "no machine shows impossible values; " + "; ".join(parts)
        if not self.same_work:
            head = (
                "not comparable as hardware: the reports ran different work (other kernels or shapes), so a "
                "difference may be the workload's: "
            )
            return head + "; ".join(parts)
        head = (
            "hardware or driver specific: "
            if self.hardware_specific
            else (
                "the same on every machine: not hardware specific: "
                if all(len(k) == len(self.known) for k in self.by_mechanism.values())
                else "mixed: "
            )
        )
        return head + "; ".join(parts)


def ranks_of(reports: list[MachineReport]) -> dict[int, dict[str, Sequence[float]]] | None:
    """Every rank's collectives across the reports, or None when a rank appears twice (not one job)."""
    out: dict[int, dict[str, Sequence[float]]] = {}
    for m in reports:
        for rank, starts in m.collectives.items():
            if rank in out:
                return None
            out[rank] = starts
    return out


def compare(reports: list[MachineReport]) -> Comparison:
    result = Comparison(reports)
    for m in reports:
        if m.impossible is None:
            result.unknown.append(m.key)
        elif m.impossible:
            result.reproduces_on.append(m.key)
        else:
            result.clean_on.append(m.key)
    return result
