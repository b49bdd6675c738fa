"""Markdown fit to paste into a bug report: a run's transcript, or a trace inspection."""

from __future__ import annotations

from collections import Counter
from typing import Any

from wizard.engine.transcript import Transcript, TranscriptEntry
from wizard.formatting import devices_said, plural
from wizard.report.view import FindingRow, SummaryTableView, summary_table_views, wrong_rows
from wizard.trace.health.spec import HealthCheck
from wizard.trace.inspection.results import Inspection, TraceInspection
from wizard.trace.metrics.findings import MAX_GROUPS
from wizard.untrusted import markdown, markdown_code, markdown_prose


def transcript_markdown(t: Transcript) -> str:
    out = [f"# warpwizard: {markdown(t.playbook['title'])}", ""]
    out.append(
        f"Playbook {markdown_code(t.playbook['id'])} v{markdown(t.playbook['version'])}, run {t.started} "
        f"(warpwizard {t.tool.get('version')}, Python {t.tool.get('python')})"
    )
    out.append("")
    if t.conclusion is not None:
        c = t.conclusion
        out += [
            f"## Diagnosis: {markdown_code(c.diagnosis)} ({markdown(c.severity)})",
            "",
            markdown_prose(c.summary),
            "",
        ]
        if c.evidence:
            out += ["### Evidence", ""] + [f"- {markdown_prose(e)}" for e in c.evidence] + [""]
        if c.fix:
            out += ["### What to do", ""] + [f"{i}. {markdown_prose(f)}" for i, f in enumerate(c.fix, 1)] + [""]
        if c.links:
            out += ["### Links", ""] + [f"- {markdown_prose(link)}" for link in c.links] + [""]
    out += chain_markdown(t)
    for n, (playbook, entries) in enumerate(by_playbook(t), 1):
        out += _steps_table(n, playbook, entries) if playbook else _steps_table(0, "", entries)
    probes = [
        e for e in t.entries if e.kind == "probe" and not e.carried_from and (e.evidence or e.files or e.warnings)
    ]
    if probes:
        out += ["## Probe evidence", ""]
        for e in probes:
            out.append(f"### {markdown_code(e.node)} ({e.status})")
            out += [f"- **warning**: {markdown_prose(line)}" for line in (e.warnings or [])]
            out += [f"- {markdown_prose(line)}" for line in (e.evidence or [])]
            out += [f"- file: {markdown_code(f)}" for f in (e.files or []) if f]
            out.append("")
    out += ["## Answers (replay with `--answers`)", "", "```yaml", dump_answers_text(t.answers).rstrip("\n"), "```", ""]
    return "\n".join(out)


def by_playbook(t: Transcript) -> list[tuple[str, list[TranscriptEntry]]]:
    """The entries in runs of one playbook each (one run of all of them when the run did not continue)."""
    groups: list[tuple[str, list[TranscriptEntry]]] = []
    for e in t.entries:
        if not groups or groups[-1][0] != (e.playbook or ""):
            groups.append((e.playbook or "", []))
        groups[-1][1].append(e)
    return groups


def chain_markdown(t: Transcript) -> list[str]:
    """A chained run: each playbook walked, its conclusion, and where it continued."""
    if not t.chain:
        return []
    out = ["## Playbooks walked", ""]
    for i, link in enumerate(t.chain, 1):
        c = link.conclusion
        line = f"{i}. {markdown_code(link.playbook['id'])} ({markdown(link.playbook['title'])})"
        if c is not None:
            line += f": {markdown_code(c.diagnosis)}, {markdown_prose(c.summary)}"
        if link.continued_to:
            line += f" Continued into {markdown_code(link.continued_to)}."
        if link.also:
            line += f" Also worth running: {', '.join(markdown_code(a) for a in link.also)}."
        out.append(line)
    return [*out, ""]


def _steps_table(n: int, playbook: str, entries: list[TranscriptEntry]) -> list[str]:
    title = f"## Steps taken in {markdown_code(playbook)}" if playbook else "## Steps taken"
    out = [title, "", "| # | node | kind | result | next |", "|---|---|---|---|---|"]
    for i, e in enumerate(entries, 1):
        if e.kind == "question":
            result = f"{markdown_prose(e.prompt)} → **{markdown(e.answer)}** ({e.answer_origin})"
        elif e.kind == "probe":
            result = f"**{e.status}**: {markdown_prose(e.summary)}"
        elif e.kind == "decision":
            result = f"because {markdown_code(e.summary, table=True)}"
        else:
            result = "diagnosis"
        if e.carried_from:
            result += f" (from {markdown_code(e.carried_from, table=True)})"
        out.append(f"| {i} | {markdown_code(e.node, table=True)} | {e.kind} | {result} | {markdown(e.next or '')} |")
    return [*out, ""]


def dump_answers_text(answers: dict[str, Any]) -> str:
    """The answers as YAML inside a fenced block: a fence inside a value cannot end the block early."""
    import yaml

    text = yaml.safe_dump(dict(answers), sort_keys=False, allow_unicode=False, default_flow_style=False)
    return text.replace("```", "`\u200b``")


def _where(labels: list[str], total: int) -> str:
    """The traces a folded row holds for: "all 8 ranks", "rank 3", "rank 1, rank 2", or "5 ranks"."""
    noun = "rank" if all(label.startswith("rank ") for label in labels) else "trace"
    if total > 1 and len(labels) == total:
        return f"both {noun}s" if total == 2 else f"all {plural(total, noun)}"
    return ", ".join(labels) if len(labels) <= 4 else plural(len(labels), noun)


def _health_row(where: str, c: HealthCheck) -> str:
    playbook = markdown_code(f"warpwizard run {c.playbook}", table=True) if c.problem and c.playbook else ""
    return (
        f"| {markdown_prose(where)} | {c.status} | {markdown_code(c.check, table=True)} | {c.count} | "
        f"{markdown_prose(c.found)} | {playbook} |"
    )


def health_markdown(inspection: Inspection) -> list[str]:
    """The health check as a table: the problems first, then the other checks, each with its status. A row that
    says the same of several traces is one row naming them, and the checks that are ok or not applicable are
    folded (``<details>``): 8 ranks' 88 mostly-ok rows were most of a 36.7 KB report (issue 44 item 5)."""
    rows = inspection.health_rows()
    if not rows:
        return []
    total = len(inspection.reports)
    alike: dict[tuple[str, str, int, str, str | None], tuple[HealthCheck, list[str]]] = {}
    for label, c in rows:
        key = (c.status, c.check, c.count, c.summary, c.playbook)
        alike.setdefault(key, (c, []))[1].append(label)
    head = ["| trace | status | check | count | what it found | continue with |", "|---|---|---|---|---|---|"]
    shown = [_health_row(_where(w, total), c) for c, w in alike.values() if c.status not in QUIET]
    quiet = [_health_row(_where(w, total), c) for c, w in alike.values() if c.status in QUIET]
    out = [f"## {inspection.health_headline}", ""]
    if shown:
        out += [*head, *shown, ""]
    if quiet:
        checks = len({row.split("`")[1] for row in quiet})
        out += [f"<details><summary>{plural(checks, 'check')} ok or not applicable</summary>", "", *head, *quiet]
        out += ["", "</details>", ""]
    return out


QUIET = ("ok", "not_applicable")  # what a reader need not open


def summary_table_markdown(inspection: Inspection) -> list[str]:
    """key_averages()' table as PyTorch reports it beside each GPU event counted once (the summary-table check);
    the rows that mislead by the check's margin in bold. Tables that agree are one table naming their files: 8
    ranks' alike tables were 8 full ones (issue 44 item 5)."""
    out: list[str] = []
    alike: dict[tuple[Any, ...], list[SummaryTableView]] = {}
    for view in summary_table_views(inspection):
        alike.setdefault((view.status, tuple(view.totals), tuple(view.rows)), []).append(view)
    for view, *same in alike.values():
        out += [f"## key_averages(), reported and counted once: {markdown_code(view.path)} ({view.status})", ""]
        if same:
            names = ", ".join(markdown_code(v.path) for v in same[:8]) + (", ..." if len(same) > 8 else "")
            out += [f"The same table for {plural(len(same), 'other file')}: {names}.", ""]
        out += [f"- {markdown(what)}: {us} µs" for what, us in view.totals] + [""]
        out += [
            "| row | kind | calls | Self CUDA reported (µs) | counted once | CUDA total reported (µs) | counted once |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, kind, calls, self_r, self_t, total_r, total_t, off in view.rows:
            mark = "**" if off else ""
            out.append(
                f"| {markdown_code(name, table=True)} | {kind} | {calls} | {self_r} | {self_t} | "
                f"{mark}{total_r}{mark} | {total_t} |"
            )
        out.append("")
    return out


def inspection_markdown(inspection: Inspection) -> str:
    """The report: the health check, key_averages(), then each trace's findings; a trace whose findings are
    another's word for word says so in one line instead of repeating its table (issue 44 item 5)."""
    out = ["# warpwizard trace inspection", "", *health_markdown(inspection), *summary_table_markdown(inspection)]
    said: dict[tuple[str, ...], str] = {}  # a trace's section -> the first trace that said it
    for r in inspection.reports:
        out.append(f"## {markdown_code(r.path)}" + (f" (rank {r.rank})" if r.rank is not None else ""))
        out.append("")
        body = _report_markdown(r)
        first = said.setdefault(tuple(body), r.label)
        out += body if first == r.label else [f"The same as {markdown(first)}: the same kernels, values and notes.", ""]
    return "\n".join(out)


def _evidence(rows: list[FindingRow]) -> list[str]:
    """Each mechanism's evidence once, for its first kernel, then how many others it holds for (the table has
    their numbers): the E paragraph was written for each E kernel."""
    out: list[str] = []
    seen: set[str] = set()
    more: Counter[str] = Counter()
    for row in rows:
        if row.mechanism in seen:
            more[row.mechanism] += 1
            continue
        seen.add(row.mechanism)
        out.append(f"- **{markdown(row.mechanism)}** {markdown_code(row.kernel)}: {markdown_prose(row.evidence)}")
    return out + [
        f"- **{markdown(m)}**: the same for {plural(n, 'other kernel')} of the table" for m, n in more.items()
    ]


def _report_markdown(r: TraceInspection) -> list[str]:
    devices = devices_said(r.metrics.devices, markdown)
    out = [f"{r.events} events, {r.kernels} kernels ({r.metrics.kernels_checked} checked); devices: {devices}", ""]
    bugs = wrong_rows(r)
    if not bugs:
        out += ["No impossible values.", ""]
    else:
        out += ["| mechanism | kernel | launches | reported | true | op |", "|---|---|---|---|---|---|"]
        for row in bugs[:MAX_GROUPS]:
            cells = [
                markdown(row.mechanism),
                markdown_code(row.kernel, table=True),  # whole: templates tell kernels apart
                str(row.count),
                markdown_prose("; ".join(f"{c.metric} {c.reported}" for c in row.cells)),
                markdown_prose("; ".join(f"{c.metric} {'right' if c.right else c.true}" for c in row.cells)),
                markdown_prose(row.launched_by),
            ]
            out.append("| " + " | ".join(cells) + " |")
        if len(bugs) > MAX_GROUPS:
            out.append(f"\n{plural(len(bugs) - MAX_GROUPS, 'more kernel')} with wrong values, not listed")
        out += ["", "### Evidence", "", *_evidence(bugs[:20]), ""]
    out += [f"> {markdown_prose(note)}" for note in r.metrics.notes]
    return [*out, ""]
