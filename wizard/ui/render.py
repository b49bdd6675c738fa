"""Rich rendering of runs and inspections. Renders records; computes nothing new.

Everything shown here that came from a trace, a playbook or an answer goes through
``wizard.untrusted`` (a Text, never markup; control characters made visible).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from wizard.engine.transcript import Transcript
from wizard.formatting import devices_said, plural, wrap_words
from wizard.playbook.glossary import Glossary
from wizard.playbook.model import DecisionNode, Node, Playbook, ProbeNode
from wizard.playbook.trust import ProgramUse
from wizard.probes.base import ProbeResult
from wizard.progress import NO_PROGRESS, Progress, Task
from wizard.report.view import value_cells
from wizard.trace.health.spec import HEALTH_MARK
from wizard.trace.inspection.results import HealthLine, Inspection, TraceReport
from wizard.trace.metrics.findings import FindingGroup, launched_by
from wizard.untrusted import cut, cuts_apart, rich_text, visible

# The metrics' names as a narrow table cell says them; the evidence lines below it use the full ones.
METRIC_LABELS = {"blocks per SM": "blocks/SM", "warps per SM": "warps/SM", "est. achieved occupancy %": "occupancy %"}

# --teach: what a probe's result means, in one plain sentence, after it is shown.
RESULT_MEANS = {
    "pass": (
        "What this means: the check ran and found nothing you need to act on (a value it lists is the profiler's "
        "own, harmless), so this cause is ruled out."
    ),
    "fail": "What this means: the check found the problem it looks for; the lines above are the evidence.",
    "warn": "What this means: the check found something worth a look, not enough on its own to decide.",
    "skip": "What this means: the check could not run here (the line says why); it rules nothing in or out.",
    "error": "What this means: the check itself failed (the line says why); nothing was learned from it.",
}

STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "cyan", "error": "magenta"}
SEVERITY_STYLE = {"info": "green", "warning": "yellow", "error": "red"}


def make_console(stream: Any, *, no_color: bool, width: int | None) -> Console:
    """The one way output reaches a terminal: no markup or emoji read from text (it may come from a
    trace), no syntax highlighting, lines kept whole."""
    return Console(
        file=stream,
        no_color=no_color,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        markup=False,
        width=width,
    )


def markdown_view(text: str) -> Markdown:
    """A playbook's Markdown at the terminal: a link shows its target beside its text (never a
    terminal hyperlink whose target is hidden: "pip install torch" must not point elsewhere)."""
    return Markdown(text, hyperlinks=False)


def explain_view(text: str) -> Markdown:
    return markdown_view(text)


TEXT_LIMIT = 2000  # evidence is wrapped at the terminal's width; only a hostile length is cut
KERNEL_CHARS = 48  # a kernel's name in the findings table: cut there (cuts_apart), a line of its column


def short(name: str, width: int = 70) -> str:
    return cut(name, width)


def indented(console: Console, text: str, indent: int, style: str = "") -> None:
    """``text`` broken between words at the console's width, every line ``indent`` columns in, with no
    trailing blanks (rich's Padding fills each line to the width: a log kept them)."""
    width = (console.width or 80) - 1
    for line in wrap_words(" " * indent + text, width, hang=" " * indent):
        # a word too long for the indented line (a C++ kernel name) starts at the margin, where it may fit whole
        console.print(rich_text(line.lstrip() if len(line) > width else line, style), soft_wrap=True)


class TerminalObserver:
    """Shows a run as it goes: step headers, explanations, a live line while a probe runs (on
    ``progress``: the CLI's stderr at a terminal, else nowhere)."""

    def __init__(self, console: Console, *, teach: bool, progress: Progress = NO_PROGRESS) -> None:
        self.console = console
        self.teach = teach
        self.progress = progress
        self.step: str | None = None
        self.running: Task | None = None
        self.glossary = Glossary()  # one session: each word defined once
        self.shown_results: list[ProbeResult] = []
        self.shown_evidence: dict[str, str] = {}  # evidence printed under a probe -> the probe: the box points to it
        self.chosen: Mapping[str, Any] | None = None  # the facts of the health summary that chose the next playbook

    def define(self, *texts: str) -> None:
        """--teach: each GPU word these texts use that this session has not defined yet, defined once, right
        before the text that first uses it is shown."""
        if not self.teach:
            return
        for term in self.glossary.new_words("\n".join(texts)):
            indented(self.console, f"new word {term.word}: {term.definition}", 2, "magenta")

    def heading(self, pb: Playbook) -> None:
        """The playbook's title (and with --teach its description, reflowed), its words defined first."""
        self.define(pb.title, pb.description or "")
        self.console.print(playbook_heading(pb, teach=self.teach))

    def node_entered(self, playbook: Playbook, node: Node, step_number: int | None) -> None:
        if node.step and node.step != self.step:
            self.step = node.step
            step = playbook.steps[step_number - 1] if step_number else None
            title = step.title if step else node.step
            self.define(title)
            self.console.rule(rich_text(f"Step {step_number} of {len(playbook.steps)}: {title}", "bold"))
            if self.teach and step and step.explain:
                self.define(step.explain)
                self.console.print(
                    Panel(
                        markdown_view(visible(step.explain.strip(), newlines=True)),
                        title="why this step",
                        border_style="blue",
                    )
                )
        if self.teach and node.explain:
            self.define(node.explain)
            self.console.print(
                Panel(
                    markdown_view(visible(node.explain.strip(), newlines=True)),
                    title=rich_text(f"{node.kind}: {node.id}"),
                    border_style="dim",
                )
            )
        prompt = getattr(node, "prompt", None)
        if self.teach and prompt is not None:
            labels = [c.label for c in getattr(node, "choices", ())]
            self.define(prompt.source, getattr(node, "help", "") or "", *labels)  # known when the question is read

    def probe_started(self, node: ProbeNode, params: Mapping[str, Any]) -> None:
        self.running = self.progress.task(node.probe, doing="running")

    def probe_finished(self, node: ProbeNode, result: ProbeResult) -> None:
        self.close()  # the live line is erased before the result is printed
        style = STATUS_STYLE.get(result.status.value, "white")
        if any(result is seen for seen in self.shown_results):  # a chained run reuses an earlier playbook's result
            self.console.print(
                Text.assemble(
                    ("  ● ", style),
                    (node.probe, "bold"),
                    " ",
                    (result.status.value.upper(), f"bold {style}"),
                    ("  the result above, reused: not run again", "dim"),
                )
            )
            return
        self.shown_results.append(result)
        self.define(result.summary, *[str(x) for x in result.facts.get("health_lines") or []], *result.evidence[:6])
        head = Text.assemble(("  ● ", style), (node.probe, "bold"), " ", (result.status.value.upper(), f"bold {style}"))
        said = f"{head.plain}  {visible(result.summary)}  ({result.duration_s:.1f} s)"
        # broken between words, under the summary's own indent ("(0.2" / "s)" and a path at the margin were not)
        lines = wrap_words(said, (self.console.width or 80) - 1, hang="    ")
        first = head.copy()
        first.append(lines[0][len(head.plain) :])
        for i, line in enumerate(lines):
            self.console.print(first if i == 0 else rich_text(line), soft_wrap=True)
        for warning in result.warnings:  # its facts break its declaration: said, never dropped
            indented(self.console, f"warning: {visible(warning)}", 4, "yellow")
        self._health(result)
        for line in result.evidence[:6]:  # wrapped under their own indent, not cut
            self.shown_evidence[line] = node.probe
            indented(self.console, short(visible(line), TEXT_LIMIT), 6, "dim")
        if self.teach:
            means = RESULT_MEANS.get(result.status.value, "")  # trace.inspect's status is its health verdict
            indented(self.console, means, 4, "italic")

    def _health(self, result: ProbeResult) -> None:
        """The trace doctor's health summary, as ``trace inspect`` prints it, so a triage shows the problem
        that decides where it continues before it continues (its kernel-metrics line alone said "PASS")."""
        lines = result.facts.get("health_lines")
        if not isinstance(lines, list):
            return
        if result.facts.get("health_chosen_by"):
            self.chosen = result.facts
        problems = result.facts.get("health_problems") or []
        headline = (
            f"Trace health: {plural(len(problems), 'problem')} found" if problems else "Trace health: no problem found"
        )
        indented(self.console, headline, 4, "bold")
        for line in lines:
            status = str(line).split(" ", 2)[1] if str(line).count(" ") > 1 else ""
            indented(self.console, visible(str(line)), 4, HEALTH_STYLE.get(status, ""))

    def decided(self, node: DecisionNode, target: str, reason: str) -> None:
        """--teach: where the walk goes and why, in the playbook's words (never the raw condition, where the
        playbook words it)."""
        if self.teach:
            words = node.reason_in_words(target, reason)
            self.define(words)
            indented(self.console, f"→ {target}  (because {visible(words)})", 2, "dim")

    def continued(self, playbook: Playbook) -> None:
        """A conclusion continued into another playbook: which check chose it, a rule between the two, and
        its steps anew."""
        self.step = None
        if self.chosen is not None and self.chosen.get("health_next") == playbook.id:
            chosen = visible(str(self.chosen["health_chosen_by"]))
            indented(self.console, f"→ {playbook.id}, chosen by the worst problem: {chosen}", 2)
        self.define(playbook.title)  # "Negative "warps per SM" ...": its words defined before it is shown
        said = f"Continuing with {playbook.id}: {visible(playbook.title)}"
        if len(said) + 6 <= (self.console.width or 80):
            self.console.rule(rich_text(said, "bold"))
        else:  # a rule cuts a title too long for it ("(or inf, nan…"): the title goes below it, whole
            self.console.rule(rich_text(f"Continuing with {playbook.id}", "bold"))
            indented(self.console, visible(playbook.title), 2, "bold")

    def close(self) -> None:
        if self.running is not None:
            self.running.close()
            self.running = None


def conclusion_panel(transcript: Transcript, shown: Mapping[str, str] | None = None) -> Panel:
    """The diagnosis box; an evidence line the run already printed under a probe (``shown``: line -> probe)
    is pointed to, not said again."""
    c = transcript.conclusion
    assert c is not None
    parts: list[Any] = [rich_text(c.summary)]
    said = shown or {}
    fresh = [e for e in c.evidence if not any(e in line for line in said)]
    above = sorted({probe for e in c.evidence for line, probe in said.items() if e in line})
    if fresh or above:
        parts.append(Text("\nEvidence", style="bold"))
        parts += [rich_text(f"  • {e}") for e in fresh]
        if above:
            parts.append(rich_text(f"  • and what {', '.join(above)} showed above"))
    if c.fix:
        parts.append(Text("\nWhat to do", style="bold"))
        parts += [rich_text(f"  {i}. {f}") for i, f in enumerate(c.fix, 1)]
    if c.links:
        parts.append(Text("\nLinks", style="bold"))
        parts += [rich_text(f"  {link}") for link in c.links]
    style = SEVERITY_STYLE.get(c.severity, "white")
    title = Text.assemble((f"Diagnosis: {visible(c.diagnosis)}", "bold"), f" ({visible(c.severity)})")
    return Panel(Group(*parts), title=title, border_style=style)


def playbook_heading(pb: Playbook, *, teach: bool) -> Group:
    head = Text.assemble((visible(pb.title), "bold"), "  ", (f"({visible(pb.id)} v{visible(pb.version)})", "dim"))
    if teach and pb.description:  # its paragraphs reflowed: YAML's line breaks wrapped again were ragged
        paragraphs = [" ".join(p.split()) for p in pb.description.strip().split("\n\n")]
        return Group(head, rich_text("\n\n".join(paragraphs), newlines=True))
    return Group(head)


def program_use_lines(uses: list[ProgramUse]) -> list[str]:
    """`validate`: which nodes would run programs, and who decides what."""
    lines = []
    for use in uses:
        lines.append(f"  node {use.node!r} ({use.probe}) runs {use.runs}")
        for param, questions in use.from_answers.items():
            names = ", ".join(f"answers.{q}" for q in questions)
            lines.append(
                f"    {param} comes from {names}: runs when answered at the prompt or with --set; "
                "from an answers file or a default only with --allow-commands"
            )
        for param, why in use.needs_opt_in.items():
            lines.append(f"    {param} is {why}: runs only with --allow-commands")
    return lines


def fix_summary_lines(summary: Any) -> list[str]:
    mechanisms = ", ".join(f"{m}: {n}" for m, n in summary.mechanisms.items()) or "none"
    kept = "; originals kept under args['warpwizard original']" if summary.corrected else ""
    lines = [
        f"wrote {summary.output}: corrected {summary.corrected} of {plural(summary.kernels, 'kernel')} "
        f"(mechanisms {mechanisms}){kept}"
    ]
    if summary.uncorrectable:
        lines.append(
            f"{plural(summary.uncorrectable, 'kernel')} could not be corrected "
            "(the trace lacks their device's SM count)"
        )
    if summary.moved or summary.moved_other:
        others = f" and {plural(summary.moved_other, 'other GPU event')}" if summary.moved_other else ""
        lines.append(
            f"moved {plural(summary.moved, 'overlapping kernel')}{others} to {plural(summary.lanes, 'extra row')} "
            "named "
            "'stream N (overlapping kernels, lane K)'; each keeps its original tid under "
            "args['warpwizard original tid']"
        )
    return lines


def probe_result_lines(entry: Any, written: str | None) -> list[str]:
    """``warpwizard probe`` without --json: the status and summary, the evidence, the files."""
    lines = [f"{entry.node}: {str(entry.status).upper()}  {entry.summary}"]
    lines += [f"  warning: {line}" for line in entry.warnings or []]
    lines += [f"  {line}" for line in entry.evidence or []]
    lines += [f"  file: {f}" for f in entry.files or [] if f]
    if written:
        lines.append(f"report written to {written} (merge several with: warpwizard compare REPORT...)")
    return lines


def truncation_warning(path: str, detail: str) -> str:
    return (
        f"warpwizard: warning: {path} is cut off ({detail}); the copy holds every complete event and closes "
        "the event list after the last one"
    )


HEALTH_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan", "not_applicable": "dim", "ok": "green"}


def health_view(inspection: Inspection, *, verbose: bool = False, playbooks: frozenset[str] = frozenset()) -> Group:
    """The health summary that leads an inspection: one line per check that is not ok, worst first, a check
    alike on several ranks said once (every check of every trace, with its meaning and examples, when
    ``verbose``); where a playbook continues, its command."""
    rows = inspection.health_rows()
    status = inspection.health_status
    problems = sum(1 for _, c in rows if c.problem)
    items: list[Any] = [
        Text(inspection.health_headline, style=HEALTH_STYLE.get(status, "bold") if problems else "bold green")
    ]
    if not verbose:
        summary = inspection.health_summary()
        items += [health_line(line, playbooks) for line in summary]
        quiet = sum(1 for _, c in rows if c.status in ("ok", "not_applicable"))
        if quiet:
            items.append(Text(f"  {quiet} more checks ok or not applicable; --verbose shows every one", style="dim"))
        return Group(*items, Text(""))
    several = len(inspection.reports) > 1
    for label, check in rows:
        items.append(
            health_line(
                HealthLine(check.check, check.status, check.playbook, [label] if several else [], [check.summary]),
                playbooks,
            )
        )
        if check.meaning:
            items.append(rich_text(f"      {check.meaning}", "dim"))
        for e in check.examples:
            where = f"stream {e.stream}" if e.stream is not None else f"pid {e.pid} tid {e.tid}"
            corr = f", correlation {e.correlation}" if e.correlation is not None else ""
            detail = f": {e.detail}" if e.detail else ""
            items.append(rich_text(f"      e.g. {short(visible(e.name), 60)} at {e.ts} ({where}{corr}){detail}", "dim"))
    return Group(*items, Text(""))


def health_line(line: HealthLine, playbooks: frozenset[str] = frozenset()) -> Text:
    """One check's line, as ``trace inspect`` prints it (a triage prints the same)."""
    text = Text("  ")
    text.append(f"{HEALTH_MARK[line.status]} {line.status:<8} ", style=HEALTH_STYLE[line.status])
    text.append(line.check, style="bold")
    text.append(visible(line.label))
    text.append("  ")
    text.append_text(rich_text(line.summary))
    if line.problem and line.playbook in playbooks:
        text.append(f"  → warpwizard run {line.playbook}", style="dim")
    return text


def inspection_view(inspection: Inspection, *, show_all: bool = False) -> Group:
    blocks: list[Any] = []
    said: set[str] = set()  # a note (the F paragraph) is said once a run, not once a rank
    for report in inspection.reports:
        blocks.append(_report_view(report, show_all, said))
    if len(inspection.reports) > 1:
        total = ", ".join(f"{m}: {n}" for m, n in sorted(inspection.mechanisms.items())) or "none"
        blocks.append(Text(f"All {len(inspection.reports)} files: mechanisms {total}", style="bold"))
    return Group(*blocks)


def _report_view(report: TraceReport, show_all: bool, said: set[str]) -> Group:
    """One trace's part of the terminal's report: what was read, the verdict, the findings, the notes."""
    metrics = report.metrics
    items: list[Any] = [_report_head(report)]
    verdict = Text(
        "\nImpossible or wrong values found" if metrics.impossible else "\nNo impossible values",
        style="bold red" if metrics.impossible else "bold green",
    )
    items.append(verdict)
    groups = [g for g in metrics.groups if show_all or g.wrong]
    if groups:
        items.append(_findings_table(groups[:40]))
        items += _evidence_lines(groups[:8])
        if len(groups) > 40:
            items.append(Text(f"  … and {len(groups) - 40} more groups (use --json for all)", style="dim"))
    hidden = sum(g.count for g in metrics.groups if not g.wrong)
    if hidden and not show_all:
        items.append(
            Text(
                f"  {plural(hidden, 'kernel launch')} with large warps per SM "
                f"{'is' if hidden == 1 else 'are'} correct by design (F); --all lists them",
                style="dim",
            )
        )
    for note in metrics.notes:
        if note not in said:
            said.add(note)
            items.append(rich_text(f"  note: {note}", "yellow"))
    return Group(*items, Text(""))


def _report_head(report: TraceReport) -> Text:
    """The trace's path, rank, sizes and devices."""
    metrics = report.metrics
    head = Text()
    head.append(visible(report.path), style="bold")
    if report.rank is not None:
        head.append(f"  rank {report.rank}")
    head.append(
        f"\n{plural(report.events, 'event')}, {plural(report.kernels, 'kernel')} ({metrics.kernels_checked} checked)"
    )
    if metrics.devices:
        head.append(visible("; " + devices_said(metrics.devices)))
    return head


def _findings_table(groups: list[FindingGroup]) -> Table:
    """The finding groups shown, one row each: mechanism, kernel, count, what changed, the op that launched it."""
    changes = {
        id(g): [
            f"{METRIC_LABELS.get(c.metric, c.metric)} {c.reported} → {c.true}"
            for c in value_cells(g.worst.reported, g.worst.true)
            if c.changed
        ]
        for g in groups
    }
    table = Table(show_lines=True, expand=False, pad_edge=False)
    table.add_column("mech", style="bold", no_wrap=True)
    table.add_column("kernel", overflow="fold", max_width=KERNEL_CHARS)  # a name cut apart folds over lines
    table.add_column("count", justify="right", no_wrap=True)
    # One metric a line, never wrapped: at 80 columns "reported → true" took four lines a metric.
    widest = max((len(line) for lines in changes.values() for line in lines), default=1)
    table.add_column("reported → true", no_wrap=True, min_width=min(widest, 40))
    table.add_column("launched by", overflow="fold")
    names = cuts_apart([visible(g.kernel) for g in groups], KERNEL_CHARS)  # kernels of one template told apart
    for g, name in zip(groups, names, strict=True):
        op = launched_by(g.op)
        table.add_row(
            Text(g.mechanism),
            rich_text(name),
            Text(str(g.count)),
            Text("\n".join(changes[id(g)]) or "—"),
            rich_text(short(visible(op), 40)),
        )
    return table


def _evidence_lines(groups: list[FindingGroup]) -> list[Text]:
    """A mechanism's evidence once, for its worst kernel: the same paragraph for each of six kernels said
    nothing new (the table has each one's numbers)."""
    lines: list[Text] = []
    alike: Counter[str] = Counter()
    for g in groups:
        if g.mechanism in alike:
            alike[g.mechanism] += 1
            continue
        alike[g.mechanism] = 0
        lines.append(rich_text(f"  {g.mechanism} · {short(visible(g.kernel), 60)}: {g.worst.evidence}", "dim"))
    for mechanism, more in alike.items():
        if more:
            lines.append(
                Text(
                    f"  {mechanism}: the same for the {plural(more, 'other kernel')} of the table "
                    "(--json has each one's evidence)",
                    style="dim",
                )
            )
    return lines


def plan_lines(plan: Any) -> list[str]:
    """A dry run in words: each node on the path, what answered it, each probe and program."""
    lines = [f"dry run of {plan.playbook}: nothing is run, nothing is written"]
    for step in plan.steps:
        if step.kind == "question" and step.origin is not None:  # unanswered: the "would ask" line says so
            lines.append(f"  ? {step.node} = {step.answer!r} ({step.origin})")
        elif step.kind == "probe":
            params = ", ".join(f"{k}={v!r}" for k, v in step.params.items() if v not in (None, "", []))
            lines.append(f"  ● would run probe {step.probe} ({params})")
            for program in step.programs:
                verdict = "would start" if program.runs else f"would NOT start ({program.why}; --allow-commands)"
                lines.append(f"      {verdict}: {program.parameter} {program.value!r}")
        elif step.kind == "decision" and step.next is not None:
            lines.append(f"  → {step.node}: {step.decided_by} -> {step.next}")
        elif step.kind == "conclusion" and step.next is not None:
            lines.append(f"  ⇒ {step.node} continues into {step.next}")
    lines.append(f"  ■ {plan.stops}")
    return lines
