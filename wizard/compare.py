"""Merge warpwizard JSON reports from several machines or GPUs and say where the anomaly
appears: the same everywhere, or only on some GPU models, drivers or torch builds.

Accepts run transcripts (``warpwizard run --json``) and trace reports
(``warpwizard trace inspect --json``), so a cluster's nodes can each run warpwizard from
their scheduler (``srun``, ``torchrun``) and the files be compared in one place.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wizard import schemas
from wizard.cluster import rank_in_name, rank_value
from wizard.errors import InputFileError
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
    collectives: dict[int, dict[str, list[float]]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.host} ({', '.join(sorted(set(self.gpus))) or 'unknown GPU'})"


# Another machine's report is untrusted: what is kept of it is bounded, so a hostile one (a 1 MB
# host name, 100,000 mechanism names) costs no more to compare and print than an honest one.
MAX_TEXT = 160  # characters of one name (host, GPU, torch, driver)
MAX_ITEMS = 64  # names of one list (GPUs, mechanisms)
MAX_MECHANISM = 8  # characters of a mechanism id ("A'", "?")
MAX_RANKS = 4096  # per-rank reports kept from one document
MAX_STARTS = 10_000  # collective starts kept per name (trace.health keeps as many)
BY_DESIGN = "F"  # trace.mechanisms.Mechanism.BY_DESIGN: this module imports no layer; a test checks they agree


def _cut(text: str) -> str:
    return cut(text, MAX_TEXT)


def _texts(value: Any) -> list[str]:
    """A list of names from another machine's report: strings only, whatever else is there; bounded."""
    if not isinstance(value, list):
        return []
    names = (_text(v) for v in value[: MAX_ITEMS * 4])
    return [n for n in names if n is not None][:MAX_ITEMS]


def _text(value: Any) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _cut(value if isinstance(value, str) else repr(value)[:MAX_TEXT])
    return None


def _mechanisms(names: Any) -> set[str]:
    """Mechanism ids as a set: short names only, at most MAX_ITEMS."""
    found = {n for n in names if isinstance(n, str) and 0 < len(n) <= MAX_MECHANISM} if names else set()
    return set(sorted(found)[:MAX_ITEMS])


# The probes whose facts say which mechanisms a run saw (trace.inspect in a trace, the others in a re-run).
SHOW_MECHANISMS = {"trace.inspect", "profiler.reprofile", "op.isolate"}


def _probe(entry: dict[str, Any], facts: dict[str, Any]) -> str | None:
    """The probe an entry ran, by its name; a transcript written before entries carried it is told by its
    facts (the env probe's torch version, a mechanism probe's mechanisms)."""
    name = entry.get("probe")
    if "probe" in entry:
        return name if isinstance(name, str) else None
    if "torch_version" in facts:
        return "env"
    return "trace.inspect" if "mechanisms" in facts else None


def _from_transcript(data: dict[str, Any], source: str) -> MachineReport:
    host: dict[str, Any] = data["host"] if isinstance(data.get("host"), dict) else {}
    mechanisms: set[str] = set()
    impossible: bool | None = None
    gpus = _texts(host.get("gpus"))
    torch, driver = _text(host.get("torch")), _text(host.get("driver"))
    entries: list[Any] = data["entries"] if isinstance(data.get("entries"), list) else []
    work: str | None = None
    for entry in entries:
        facts = entry.get("facts") if isinstance(entry, dict) else None
        if not isinstance(facts, dict):
            continue
        probe = _probe(entry, facts)
        # trace.inspect says "impossible"; a probe that re-ran the workload or a repro, "reproduced"
        shown = facts.get("impossible", facts.get("reproduced"))
        ran_kernels = facts.get("cuda_available") is not False  # a CPU-only re-run shows nothing either way
        if probe in SHOW_MECHANISMS and isinstance(shown, bool) and ran_kernels:
            mechanisms |= _mechanisms(facts.get("mechanisms") if isinstance(facts.get("mechanisms"), list) else ())
            impossible = bool(impossible) or shown
            work = work or _text(facts.get("workload"))
            gpus = gpus or _texts(facts.get("gpus"))
        if probe == "env":
            torch = torch or _text(facts.get("torch_version"))
            driver = driver or _text(facts.get("driver_version"))
            gpus = gpus or _texts(facts.get("gpu_names"))
    hostname = _text(host.get("hostname")) or "?"
    rank = rank_value(host.get("rank"))
    if rank is not None:  # one report per process of a launcher's job
        hostname = f"{hostname} rank {rank}"
    mechanisms_found = sorted(_mechanisms(mechanisms - {BY_DESIGN}))
    return MachineReport(source, hostname, gpus, torch, driver, mechanisms_found, impossible, work)


def _from_trace_report(data: dict[str, Any], source: str) -> MachineReport:
    reports: list[Any] = data["reports"] if isinstance(data.get("reports"), list) else []
    gpus = sorted(
        {
            _cut(d["name"])
            for r in reports[:MAX_ITEMS]
            if isinstance(r, dict) and isinstance(r.get("devices"), list)
            for d in r["devices"][:MAX_ITEMS]
            if isinstance(d, dict) and isinstance(d.get("name"), str) and d["name"]
        }
    )[:MAX_ITEMS]
    found = data.get("mechanisms")
    mechanisms = sorted(_mechanisms(m for m in found if m != BY_DESIGN)) if isinstance(found, dict) else []
    host = data.get("host")
    hostname = _text(host.get("hostname")) if isinstance(host, dict) else None
    return MachineReport(
        source,
        hostname or _cut(Path(source).stem),
        gpus,
        None,
        None,
        mechanisms,
        data.get("impossible") is True,
        _text(data.get("workload")),
        _collectives(reports),
    )


def _collectives(reports: list[Any]) -> dict[int, dict[str, list[float]]]:
    """Each per-rank report's ``collectives`` (rank, NCCL kernel starts per name), bounded and typed."""
    out: dict[int, dict[str, list[float]]] = {}
    for r in reports[:MAX_RANKS]:
        found = r.get("collectives") if isinstance(r, dict) else None
        if not isinstance(found, dict):
            continue
        declared, starts = found.get("rank"), found.get("starts")
        rank = rank_value(declared)
        if declared is None and isinstance(r.get("path"), str):  # no distributedInfo: the trace file's number
            rank = rank_in_name(r["path"].rsplit("/", 1)[-1])
        if rank is None or not isinstance(starts, dict):
            continue
        out[rank] = {
            _cut(name): [
                float(v)
                for v in values[:MAX_STARTS]
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            ]
            for name, values in list(starts.items())[:MAX_ITEMS]
            if isinstance(name, str) and isinstance(values, list)
        }
    return out


MAX_REPORT_BYTES = 64 << 20


def load_report(path: str) -> MachineReport:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            raise InputFileError(f"{path}: too large for a warpwizard report (over {MAX_REPORT_BYTES} bytes)")
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such report") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, not a report") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise InputFileError(f"{path}: not a warpwizard JSON report ({reason})") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    document = schemas.kind(schema)
    if document == "warpwizard.transcript":
        return _from_transcript(data, path)
    if document == "warpwizard.trace-report":
        return _from_trace_report(data, path)
    found = visible(schema)[:80] if isinstance(schema, str) and schema else "none"
    raise InputFileError(
        f"{path}: not a warpwizard JSON report (expected schema {schemas.readable_text()}, found {found})"
    )


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
            "machines": [{k: v for k, v in asdict(m).items() if k != "collectives"} for m in self.machines],
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
        silent = [m for m in self.machines if m.impossible is None]
        if len(self.machines) < 2:
            return "cannot compare: one report; give two or more, from different machines or runs"
        names = ", ".join(Path(m.source).name for m in silent[:8]) + (", ..." if len(silent) > 8 else "")
        whose = "its" if len(silent) == 1 else "their"
        return (
            f"cannot compare: {len(self.known)} of {len(self.machines)} reports say whether impossible values "
            f"showed; {names} inspected no trace and reran nothing on a GPU ({whose} probes skipped or ran on the "
            "CPU); compare reports from runs that inspected a trace or ran the workload or a repro on a GPU"
        )

    @property
    def verdict(self) -> str:
        if len(self.known) < 2:
            return self._why_not()
        if not self.by_mechanism:
            return "no machine shows impossible values"
        # Mechanisms seen on the same machines, the same way, share one sentence ("A, E on every
        # machine"): the verdict grows with the distinct patterns, not with the mechanisms.
        patterns: dict[tuple[tuple[str, ...], bool], list[str]] = {}
        for mechanism, machines in self.by_mechanism.items():
            patterns.setdefault((tuple(machines), self._specific(mechanism)), []).append(mechanism)
        parts = []
        for (keys, specific), mechanisms in patterns.items():
            names = ", ".join(mechanisms)
            showing = set(keys)
            others = [m.key for m in self.known if m.key not in showing]
            if not others:
                parts.append(f"{names} on every machine")
            elif specific:
                parts.append(f"{names} only on {', '.join(keys)}, not on {', '.join(others)}")
            else:
                parts.append(
                    f"{names} on {', '.join(keys)} but not on {', '.join(others)}, with the same GPU model "
                    "on both sides: look at software differences (torch, driver)"
                )
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


def ranks_of(reports: list[MachineReport]) -> dict[int, dict[str, list[float]]] | None:
    """Every rank's collectives across the reports, or None when a rank appears twice (not one job)."""
    out: dict[int, dict[str, list[float]]] = {}
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
