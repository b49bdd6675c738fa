"""The record of a run: every node visited, what went in, what came out, where it went.

Serialised as JSON with a versioned schema (``warpwizard.transcript/1``, documented in
docs/json-output.md); the Markdown report and the terminal summary render from it.
"""

from __future__ import annotations

import datetime as _dt
import platform
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from wizard import __version__
from wizard.playbook.model import Playbook
from wizard.probes.base import ProbeResult
from wizard.rendering import render
from wizard.schemas import TRANSCRIPT

if TYPE_CHECKING:
    from wizard.environment import RunInspections
    from wizard.trace.inspection.results import Inspection

ENV_PROBE = "env"  # whose facts say which machine ran (torch, driver, GPUs)
TRACE_PROBE = "trace.inspect"  # whose facts name the traces a run read


@dataclass(slots=True)
class TranscriptEntry:
    node: str
    kind: str
    step: str | None
    started: str
    duration_s: float
    probe: str | None = None  # the probe a probe node ran: consumers find its facts by this name
    prompt: str | None = None
    answer: Any = None
    answer_origin: str | None = None
    inputs: dict[str, Any] | None = None
    status: str | None = None
    summary: str | None = None
    facts: dict[str, Any] | None = None
    evidence: list[str] | None = None
    files: list[str] | None = None
    next: str | None = None
    reused_from: str | None = None  # the transcript this probe's result was taken from (--from)
    not_reused: str | None = None  # why --from ran this probe again instead (inputs or files changed)
    input_files: dict[str, Any] | None = None  # fingerprints of the files its inputs name (for --from)
    carried_from: str | None = None  # chained run: "playbook:node" whose answer or probe result this reuses
    playbook: str | None = None  # chained run: the playbook this entry belongs to
    warnings: list[str] | None = None  # where the probe's facts break its declaration (wizard.probes.base)

    def record(self, result: ProbeResult) -> None:
        """What a probe found, as the transcript keeps it."""
        self.status, self.summary = result.status.value, result.summary
        self.facts, self.evidence, self.files = result.facts, result.evidence, result.files
        self.warnings = list(result.warnings) or None


@dataclass(slots=True)
class Conclusion:
    node: str
    diagnosis: str
    severity: str
    summary: str
    evidence: list[str]
    fix: list[str]
    links: list[str]


@dataclass(slots=True)
class ChainLink:
    """One playbook of a chained run: which, how many entries it added, its conclusion, where it went on."""

    playbook: dict[str, str]
    entries: int
    conclusion: Conclusion | None
    continued_to: str | None = None
    also: list[str] = field(default_factory=list)  # other playbooks the conclusion says are worth running


@dataclass(slots=True)
class Transcript:
    playbook: dict[str, str]
    started: str
    finished: str | None = None
    entries: list[TranscriptEntry] = field(default_factory=list)
    conclusion: Conclusion | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    tool: dict[str, str] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    chain: list[ChainLink] = field(default_factory=list)  # empty unless a conclusion continued

    @property
    def diagnosis(self) -> str | None:
        """The conclusion's diagnosis id, or None if the run reached none."""
        return self.conclusion.diagnosis if self.conclusion else None

    @property
    def evidence(self) -> list[str]:
        """The conclusion's evidence lines (empty without a conclusion)."""
        return list(self.conclusion.evidence) if self.conclusion else []

    def at_least(self, severity: str) -> bool:
        """Whether the diagnosis is ``severity`` or worse (``--fail-on``): no conclusion is never."""
        from wizard.playbook.model import at_least

        return at_least(self.conclusion.severity if self.conclusion else None, severity)

    @classmethod
    def start(cls, playbook: Playbook, now: _dt.datetime) -> Transcript:
        about = {"id": playbook.id, "title": playbook.title, "version": playbook.version, "path": playbook.path}
        return cls.begin(about, now)

    @classmethod
    def begin(cls, about: dict[str, str], now: _dt.datetime) -> Transcript:
        """A transcript of something other than a playbook run (``warpwizard probe``: one probe)."""
        return cls(
            playbook=about,
            started=now.isoformat(),
            tool={"name": "warpwizard", "version": __version__, "python": platform.python_version()},
            host={"hostname": platform.node()},
        )

    def finish(self, now: _dt.datetime, answers: dict[str, Any]) -> None:
        self.finished = now.isoformat()
        self.answers = dict(answers)
        for entry in self.entries:  # what the env probe learnt identifies the machine for `compare`
            facts = entry.facts or {}
            if entry.probe == ENV_PROBE and "torch_version" in facts:  # a skipped env probe has no versions
                self.host.update(
                    torch=facts.get("torch_version"),
                    driver=facts.get("driver_version"),
                    gpus=facts.get("gpu_names") or [],
                )

    def trace_inspection(self, inspections: RunInspections | None = None) -> Inspection | None:
        """The traces this run's trace doctor read, with what pictures need (the transcript keeps facts, not
        launches): the run's own inspection (``inspections``, made with plots when the run writes a page), else
        the files inspected again (a transcript rendered after its run, or a file rewritten since); None when
        the run read none or they are gone."""
        import os

        from wizard.inspect_options import InspectOptions
        from wizard.probes.inspections import page_inspection
        from wizard.trace.inspection.run import inspect_paths

        for entry in self.entries:
            files = (entry.facts or {}).get("files")
            if entry.probe == TRACE_PROBE and isinstance(files, list):
                present = [f for f in files if isinstance(f, str) and os.path.isfile(f)]
                if present:
                    found = page_inspection(inspections, present) if inspections is not None else None
                    return found if found is not None else inspect_paths(present, InspectOptions(plots=True))
        return None

    def render(self, suffix: str, inspections: RunInspections | None = None) -> str:
        """This record in the format a report file's suffix names (``.md``, ``.html``, ``.json``): what
        ``run --report FILE`` writes. The HTML page draws the trace the run read (``trace_inspection``: the
        run's ``inspections`` where it hands them over, so no file is read again)."""
        return render("transcript", self, suffix, lambda: self.trace_inspection(inspections))

    def to_markdown(self) -> str:
        """The Markdown report ``warpwizard run --report FILE.md`` writes (for a bug report)."""
        return self.render(".md")

    def to_html(self) -> str:
        """One self-contained HTML page: the diagnosis, the trace's pictures and findings, the path taken,
        the machine (needs ``warpwizard[html]``)."""
        return self.render(".html")

    def _repr_html_(self) -> str:
        """In a notebook: the diagnosis and the path as HTML, every text escaped (no plots: no plotly needed)."""
        from wizard.untrusted import html_text

        c = self.conclusion
        head = (
            f"<b>{html_text(c.diagnosis, 120)}</b> ({html_text(c.severity, 20)}): {html_text(c.summary, 2000)}"
            if c
            else "<b>no diagnosis</b>"
        )
        steps = "".join(
            f"<li>{html_text(e.node, 80)}: {html_text(e.summary or e.answer or '', 400)}</li>" for e in self.entries
        )
        return f"<div>{head}<ol>{steps}</ol></div>"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entries"] = [{k: v for k, v in e.items() if v is not None} for e in data["entries"]]
        if not self.chain:  # the shape of a one-playbook run is unchanged
            del data["chain"]
        return {"schema": TRANSCRIPT, **data}  # schema first, for people reading the file
