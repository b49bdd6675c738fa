"""Merge warpwizard JSON reports from several machines or GPUs and say where the anomaly
appears: the same everywhere, or only on some GPU models, drivers or torch builds.

Accepts run transcripts (``warpwizard run --json``) and trace reports
(``warpwizard trace inspect --json``), so a cluster's nodes can each run warpwizard from
their scheduler (``srun``, ``torchrun``) and the files be compared in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import InputFileError


@dataclass(slots=True)
class MachineReport:
    source: str
    host: str
    gpus: list[str]
    torch: str | None
    driver: str | None
    mechanisms: list[str]
    impossible: bool | None

    @property
    def key(self) -> str:
        return f"{self.host} ({', '.join(sorted(set(self.gpus))) or 'unknown GPU'})"


def _from_transcript(data: dict[str, Any], source: str) -> MachineReport:
    host = data.get("host") or {}
    facts_by_node: dict[str, dict[str, Any]] = {}
    for entry in data.get("entries", []):
        if entry.get("facts"):
            facts_by_node[entry["node"]] = entry["facts"]
    mechanisms: list[str] = []
    impossible: bool | None = None
    gpus: list[str] = list(host.get("gpus") or [])
    torch = host.get("torch")
    driver = host.get("driver")
    for facts in facts_by_node.values():
        if "impossible" in facts and "mechanisms" in facts:
            mechanisms = sorted(set(mechanisms) | set(facts.get("mechanisms") or []))
            impossible = bool(impossible) or bool(facts["impossible"])
            gpus = gpus or list(facts.get("gpus") or [])
        if "torch_version" in facts:
            torch = torch or facts.get("torch_version")
            driver = driver or facts.get("driver_version")
            gpus = gpus or list(facts.get("gpu_names") or [])
    return MachineReport(source, str(host.get("hostname", "?")), gpus, torch, driver, mechanisms, impossible)


def _from_trace_report(data: dict[str, Any], source: str) -> MachineReport:
    gpus = sorted({d.get("name", "") for r in data.get("reports", []) for d in r.get("devices", []) if d.get("name")})
    mechanisms = sorted({m for m in data.get("mechanisms", {}) if m != "F"})
    host = data.get("host", {}).get("hostname") if isinstance(data.get("host"), dict) else None
    return MachineReport(source, host or Path(source).stem, gpus, None, None, mechanisms, bool(data.get("impossible")))


def load_report(path: str) -> MachineReport:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(f"{path}: not a warpwizard JSON report ({exc})") from None
    schema = str(data.get("schema", "")) if isinstance(data, dict) else ""
    if schema.startswith("warpwizard.transcript/"):
        return _from_transcript(data, path)
    if schema.startswith("warpwizard.trace-report/"):
        return _from_trace_report(data, path)
    raise InputFileError(
        f"{path}: not a warpwizard JSON report (expected schema warpwizard.transcript/1 "
        f"or warpwizard.trace-report/1, found {schema or 'none'})"
    )


@dataclass(slots=True)
class Comparison:
    machines: list[MachineReport]
    reproduces_on: list[str] = field(default_factory=list)
    clean_on: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def hardware_specific(self) -> bool:
        """Some GPU models show it and others do not, and no model is on both sides."""
        if not self.reproduces_on or not self.clean_on:
            return False
        bad = {g for m in self.machines if m.impossible for g in m.gpus}
        good = {g for m in self.machines if m.impossible is False for g in m.gpus}
        return not (bad & good) or len({m.driver for m in self.machines}) > 1

    @property
    def verdict(self) -> str:
        if len(self.machines) - len(self.unknown) < 2:
            return "not enough reports to compare"
        if self.hardware_specific:
            return (
                "hardware or driver specific: appears on "
                + ", ".join(self.reproduces_on)
                + "; not on "
                + ", ".join(self.clean_on)
            )
        if self.reproduces_on and not self.clean_on:
            return "the same on every machine: not hardware specific"
        if self.clean_on and not self.reproduces_on:
            return "no machine shows impossible values"
        return "mixed, but the same GPU model appears on both sides: look at software differences (torch, driver)"


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
