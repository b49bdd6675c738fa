"""Rerun from a node: a previous run's recorded probe results stand in for the probes before it.

A re-profile or an isolate can take minutes; after changing an answer late in the tree, or to
retry a failed step, ``warpwizard run PLAYBOOK --answers previous.json --from NODE`` (or
``--from-step N``) takes the answers and the results of every probe the previous run reached
before NODE from its ``--json`` transcript, and runs from NODE on (as Ansible's
``--start-at-task`` and ``gh run rerun --failed`` do). Each reused entry says where it came from.

A recorded result stands in only for the same work: the probe's inputs, rendered from this run's
answers, equal the recorded ones, and every file or directory they name is unchanged since the
recorded run (its ``input_files`` fingerprint: size and modification time before the probe ran, and a
hash of the first and last MiB of what they describe, taken from the run's own read of the file where
it read one, so a trace is opened once: wizard/file_ends.py). Otherwise the probe runs again and its
entry says why (``not_reused``): a transcript recorded for one trace never diagnoses another.

The transcript is data like a trace: read with the bounds and shape checks of any untrusted input
(size, nesting, the type of every field used), its facts steer decisions, and a program named by
them is refused exactly as in a fresh run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard import schemas
from wizard.engine.answers import MAX_NESTING, too_deep
from wizard.environment import file_identity
from wizard.errors import InputFileError, UsageError
from wizard.file_ends import FileIdentity, identity, opened_ends
from wizard.playbook.model import Playbook
from wizard.probes.base import ParamSpec, ProbeResult, Status
from wizard.serialize import clean
from wizard.untrusted import visible

MAX_TRANSCRIPT_BYTES = 64 << 20
MAX_ENTRIES = 10_000  # a run stops after 500 nodes (engine.MAX_VISITS); a file with more is no run's
MAX_LISTED = 10_000  # a directory's fingerprint covers at most this many entries
CHANGED = "changed"  # the kind of a file's fingerprint when it changed while its probe ran: it matches none
STREAM = "stream"  # a pipe, a FIFO, a device: read once by its reader, never opened here; it matches none either


@dataclass(slots=True)
class Recorded:
    """One probe's result as the previous run recorded it, with what it was given and what it read."""

    result: ProbeResult
    inputs: dict[str, Any] | None
    files: dict[str, Any] | None


@dataclass(slots=True)
class Reuse:
    source: str
    start: str  # the node the run really starts working from
    results: dict[str, Recorded] = field(default_factory=dict)  # probe node -> recorded result

    def take(
        self, node: str, inputs: Mapping[str, Any], specs: Sequence[ParamSpec]
    ) -> tuple[ProbeResult | None, str, dict[str, dict[str, Any]]]:
        """The recorded result for ``node`` when it was given ``inputs`` (this run's, defaults filled)
        and the files they name are unchanged, else None and why the probe runs again; with the fingerprints
        it compared (the reused entry's ``input_files``: the files are not fingerprinted twice). Used once."""
        recorded = self.results.pop(node, None)
        if recorded is None:
            return None, "", {}
        now = clean(dict(inputs))
        if recorded.inputs != now:
            changed = sorted(
                k for k in {*now, *(recorded.inputs or {})} if now.get(k) != (recorded.inputs or {}).get(k)
            )
            shown = ", ".join(
                f"{k} {visible(now.get(k))[:200]!r} (recorded: {visible((recorded.inputs or {}).get(k))[:200]!r})"
                for k in changed
            )
            return None, f"run again: its inputs differ from the recorded run's: {shown}", {}
        read = input_files(specs, inputs)
        for path, mark in read.items():
            was = (recorded.files or {}).get(path)
            shown = repr(visible(path)[:200])
            if was is None:
                return None, f"run again: the recorded run kept no fingerprint of {shown}", read
            if isinstance(was, dict) and was.get("kind") == CHANGED:
                return None, f"run again: {shown} changed while the recorded run's probe ran", read
            if isinstance(was, dict) and was.get("kind") == STREAM:
                return None, f"run again: {shown} is a pipe: what it held then cannot be compared", read
            if was != mark:
                return None, f"run again: {shown} changed since the recorded run ({_difference(was, mark)})", read
        return recorded.result, "", read


def _difference(was: Any, now: Mapping[str, Any]) -> str:
    if not isinstance(was, dict):
        return "its recorded fingerprint is not one"
    for key in ("kind", "size", "mtime_ns", "sha256_ends", "entries_sha256"):
        if was.get(key) != now.get(key):
            return f"{key.replace('_', ' ')} {visible(was.get(key))[:80]} then, {now.get(key)} now"
    return "fingerprint differs"


@dataclass(frozen=True, slots=True)
class Stat:
    """A path a probe names, as it was before the probe ran: a regular file's size and time (``mark``) and its
    identity, whose hash ``fingerprints`` fills after the probe; anything else's whole fingerprint, taken then."""

    mark: dict[str, Any]
    identity: FileIdentity | None = None


def stat_inputs(specs: Sequence[ParamSpec], params: Mapping[str, Any]) -> dict[str, Stat]:
    """Every path a probe's path parameters name, stat'ed before it runs (a stat opens nothing)."""
    return {path: _stat(path) for path in _named(specs, params)}


def _stat(path: str) -> Stat:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return Stat({"kind": "missing"})
    if not stat.S_ISREG(info.st_mode):
        return Stat(fingerprint(path))  # a directory's listing as before; a pipe's kind
    return Stat({"kind": "file", "size": info.st_size, "mtime_ns": info.st_mtime_ns}, identity(path, info))


def fingerprints(before: Mapping[str, Stat], read: Callable[[FileIdentity], str | None]) -> dict[str, dict[str, Any]]:
    """The transcript's ``input_files`` after the probe ran, each file as its stat before found it: the hash of
    its ends that this run's read of that very file took (``read``: by identity; no second open), else one taken
    now by opening it. A file that is no longer what its stat found (the probe, or anyone, changed it while the
    probe ran) gets a fingerprint that no later one equals (kind ``changed``): ``--from`` runs its probe again,
    saying so, and no hash describes contents other than those the stat describes."""
    out: dict[str, dict[str, Any]] = {}
    for path, was in before.items():
        if was.identity is None:
            out[path] = was.mark
        elif file_identity(path) != was.identity:
            out[path] = {**was.mark, "kind": CHANGED}
        elif (found := read(was.identity)) is not None:
            out[path] = {**was.mark, "sha256_ends": found}
        else:
            out[path] = _hashed(path, was)
    return out


def _hashed(path: str, was: Stat) -> dict[str, Any]:
    """The fingerprint of a file no read of this run took one of (a script, an output, a probe that failed first)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # no wait, should a pipe be there now
    except (OSError, ValueError) as exc:  # it was there a moment ago: it cannot be opened (its permissions)
        error = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return {**was.mark, "kind": "unreadable", "error": error}
    try:
        found = opened_ends(path, fd)
    except OSError as exc:  # opened, and cannot be read (EIO, EISDIR on an odd mount): unreadable, with why
        return {**was.mark, "kind": "unreadable", "error": exc.strerror or str(exc)}
    finally:
        os.close(fd)
    if found is None or found.identity != was.identity:
        return {**was.mark, "kind": CHANGED}
    return {**was.mark, "sha256_ends": found.sha256_ends}


def fingerprint(path: str) -> dict[str, Any]:
    """What identifies the content of ``path`` cheaply: a file's size, modification time and a hash of
    its first and last MiB; a directory's listing (names, sizes, times of what is directly in it);
    ``{"kind": "missing"}`` when nothing is there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return {"kind": "missing"}
    if stat.S_ISDIR(info.st_mode):
        digest = hashlib.sha256()
        try:
            with os.scandir(path) as listing:
                names = sorted(entry.name for _, entry in zip(range(MAX_LISTED + 1), listing, strict=False))
            for name in names:
                try:
                    child = os.stat(os.path.join(path, name))
                    digest.update(f"{name}\0{child.st_size}\0{child.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
                except OSError:
                    digest.update(f"{name}\0?\n".encode("utf-8", "surrogateescape"))
        except OSError as exc:
            return {"kind": "unreadable", "error": exc.strerror or str(exc)}
        return {"kind": "directory", "mtime_ns": info.st_mtime_ns, "entries_sha256": digest.hexdigest()}
    if not stat.S_ISREG(info.st_mode):  # opening a FIFO waits for a writer, and reading it takes its reader's bytes
        return {"kind": STREAM}
    mark: dict[str, Any] = {"kind": "file", "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    return _hashed(path, Stat(mark, identity(path, info)))  # opened without waiting, should a pipe be there now


def _named(specs: Sequence[ParamSpec], params: Mapping[str, Any]) -> list[str]:
    """The paths a probe's path parameters name, each once, in order."""
    out: dict[str, None] = {}
    for spec in specs:
        if spec.type not in ("path", "paths"):
            continue
        value = params.get(spec.name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                out.setdefault(item)
    return list(out)


def input_files(specs: Sequence[ParamSpec], params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The fingerprint of every file a probe's path parameters name, now (what ``--from`` compares with the
    recorded ones before it reuses the probe's result)."""
    return {path: fingerprint(path) for path in _named(specs, params)}


def _bad(path: str, what: str) -> InputFileError:
    return InputFileError(f"--from: {path}: {what}; give a transcript a run wrote with --json")


def _document(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TRANSCRIPT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--from: cannot read {path} ({exc.strerror or exc})") from None
    if len(raw) > MAX_TRANSCRIPT_BYTES:
        raise _bad(path, f"over {MAX_TRANSCRIPT_BYTES >> 20} MiB, larger than any run's transcript")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise _bad(path, f"nested deeper than {MAX_NESTING} levels") from None
    except ValueError:
        data = None
    if not isinstance(data, dict) or schemas.kind(data.get("schema")) != "warpwizard.transcript":
        raise UsageError(f"--from needs --answers to be a previous run's --json transcript; {path} is not one")
    if too_deep(data, MAX_NESTING + 3):  # the document, its entries, an entry: then facts as deep as answers
        raise _bad(path, f"nested deeper than {MAX_NESTING} levels")
    return data


def _entries(path: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The transcript's entries, each field this module reads of the type a run writes, or one line why."""
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise _bad(path, f"'entries' must be a list, not {type(entries).__name__}")
    if len(entries) > MAX_ENTRIES:
        raise _bad(path, f"{len(entries)} entries, more than any run records ({MAX_ENTRIES})")
    shapes: dict[str, tuple[type, ...]] = {
        "node": (str,), "kind": (str,), "step": (str, type(None)), "status": (str, type(None)),
        "summary": (str, type(None)), "facts": (dict, type(None)), "evidence": (list, type(None)),
        "files": (list, type(None)), "inputs": (dict, type(None)), "input_files": (dict, type(None)),
    }  # fmt: skip
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _bad(path, f"entries[{i}] must be a mapping, not {type(entry).__name__}")
        for key, types in shapes.items():
            if key in entry and not isinstance(entry[key], types):
                raise _bad(path, f"entries[{i}].{key} must be {types[0].__name__}, not {type(entry[key]).__name__}")
        if not isinstance(entry.get("node"), str):
            raise _bad(path, f"entries[{i}] needs 'node', a node id")
    return entries


def _result(entry: dict[str, Any]) -> Recorded | None:
    try:
        status = Status(entry.get("status"))
    except ValueError:
        return None
    result = ProbeResult(
        status,
        str(entry.get("summary") or ""),
        facts=dict(entry.get("facts") or {}),
        evidence=[str(x) for x in entry.get("evidence") or []],
        files=[str(x) for x in entry.get("files") or []],
    )
    return Recorded(result, entry.get("inputs"), entry.get("input_files"))


def _start(pb: Playbook, nodes: list[str], entries: list[dict[str, Any]], node: str | None, step: int | None) -> str:
    if step is not None:
        if not 1 <= step <= len(pb.steps):
            raise UsageError(f"--from-step {step}: playbook {pb.id} has steps 1 to {len(pb.steps)}")
        wanted = pb.steps[step - 1].id
        found = next((e.get("node") for e in entries if e.get("step") == wanted), None)
        if not isinstance(found, str):
            raise UsageError(f"--from-step {step}: the previous run never reached step {step} ({wanted})")
        return found
    assert node is not None
    if node not in pb.nodes:
        raise UsageError(f"--from {node}: playbook {pb.id} has no such node")
    if node not in nodes:
        shown = visible(", ".join(nodes))[:2000]
        raise UsageError(f"--from {node}: the previous run did not reach it; it visited: {shown}")
    return node


def recorded(pb: Playbook, path: str, *, node: str | None = None, step: int | None = None) -> Reuse:
    """The probe results of ``path`` (a ``--json`` transcript of ``pb``) before ``node`` or step ``step``."""
    data = _document(path)
    about = data.get("playbook")
    if not isinstance(about, dict) or about.get("id") != pb.id:
        found = about.get("id") if isinstance(about, dict) else None
        shown = repr(visible(found)[:80]) if isinstance(found, str) else visible(repr(found))[:80]
        raise UsageError(f"--from: {path} is a transcript of playbook {shown}, not {pb.id}")
    # a chained run's entries of later playbooks are theirs: --from reruns the playbook the run started with
    entries = [e for e in _entries(path, data) if e.get("playbook") in (None, pb.id)]
    nodes = [e["node"] for e in entries]
    start = _start(pb, nodes, entries, node, step)
    reuse = Reuse(path, start)
    for entry in entries[: nodes.index(start)]:
        name = entry["node"]
        if entry.get("kind") == "probe" and name not in reuse.results:
            result = _result(entry)
            if result is not None:
                reuse.results[name] = result
    return reuse
