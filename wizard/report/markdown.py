"""Markdown fit to paste into a bug report: a run's transcript, or a trace inspection."""

from __future__ import annotations

import json
from typing import Any

from wizard.engine.transcript import Transcript
from wizard.trace.inspect import Inspection, launched_by


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "—" if value is None else str(value)


def transcript_markdown(t: Transcript) -> str:
    out = [f"# warpwizard: {t.playbook['title']}", ""]
    out.append(
        f"Playbook `{t.playbook['id']}` v{t.playbook['version']}, run {t.started} "
        f"(warpwizard {t.tool.get('version')}, Python {t.tool.get('python')})"
    )
    out.append("")
    if t.conclusion is not None:
        c = t.conclusion
        out += [f"## Diagnosis: `{c.diagnosis}` ({c.severity})", "", c.summary, ""]
        if c.evidence:
            out += ["### Evidence", ""] + [f"- {e}" for e in c.evidence] + [""]
        if c.fix:
            out += ["### What to do", ""] + [f"{i}. {f}" for i, f in enumerate(c.fix, 1)] + [""]
        if c.links:
            out += ["### Links", ""] + [f"- {link}" for link in c.links] + [""]
    out += ["## Steps taken", "", "| # | node | kind | result | next |", "|---|---|---|---|---|"]
    for i, e in enumerate(t.entries, 1):
        if e.kind == "question":
            result = f"{e.prompt} → **{e.answer}** ({e.answer_origin})"
        elif e.kind == "probe":
            result = f"**{e.status}**: {e.summary}"
        elif e.kind == "decision":
            result = f"because `{e.summary}`"
        else:
            result = "diagnosis"
        out.append(f"| {i} | `{e.node}` | {e.kind} | {_cell(result)} | {e.next or ''} |")
    out.append("")
    probes = [e for e in t.entries if e.kind == "probe" and (e.evidence or e.files)]
    if probes:
        out += ["## Probe evidence", ""]
        for e in probes:
            out.append(f"### `{e.node}` ({e.status})")
            out += [f"- {_cell(line)}" for line in (e.evidence or [])]
            out += [f"- file: `{f}`" for f in (e.files or []) if f]
            out.append("")
    out += ["## Answers (replay with `--answers`)", "", "```yaml"]
    out += [f"{k}: {json.dumps(v)}" for k, v in t.answers.items()] + ["```", ""]
    return "\n".join(out)


def inspection_markdown(inspection: Inspection) -> str:
    out = ["# warpwizard trace inspection", ""]
    for r in inspection.reports:
        out.append(f"## `{r.path}`" + (f" (rank {r.rank})" if r.rank is not None else ""))
        out.append("")
        devices = ", ".join(f"{d['name'] or '?'} ({d['num_sms']} SMs)" for d in r.devices[:4]) or "unknown"
        out.append(f"{r.events} events, {r.kernels} kernels ({r.kernels_checked} checked); devices: {devices}")
        out.append("")
        bugs = [g for g in r.groups if g.severity == "error"]
        if not bugs:
            out += ["No impossible values.", ""]
        else:
            out += ["| mechanism | kernel | launches | reported | true | op |", "|---|---|---|---|---|---|"]
            for g in bugs:
                rep = "; ".join(f"{k} {_value(v)}" for k, v in g.worst.reported.items())
                tru = "; ".join(f"{k} {_value(v)}" for k, v in g.worst.true.items())
                op = launched_by(g.op)
                cells = [g.mechanism, f"`{_cell(g.kernel[:80])}`", str(g.count), _cell(rep), _cell(tru), _cell(op)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
            out += ["### Evidence", ""] + [
                f"- **{g.mechanism}** `{_cell(g.kernel[:60])}`: {g.worst.evidence}" for g in bugs[:20]
            ]
            out.append("")
        for note in r.notes:
            out.append(f"> {note}")
        out.append("")
    return "\n".join(out)
