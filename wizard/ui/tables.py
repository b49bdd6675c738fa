"""Rich tables for the listing commands (list, probes, compare). Every cell that holds text from
outside (a playbook's title, another machine's host name) is a Text, never markup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.table import Table
from rich.text import Text

from wizard.compare import Comparison
from wizard.probes.base import ProbeInfo
from wizard.untrusted import rich_text


def playbooks_table(rows: Iterable[tuple[str, str | None, str, str, str, str | None]]) -> Table:
    """Rows of (name, title, version, steps, origin, problem); a problem replaces the title."""
    rows = list(rows)
    table = Table(title="playbooks")
    # The name is what people type: never cut, never wrapped; the title wraps at spaces instead.
    table.add_column("name", no_wrap=True, min_width=_longest(r[0] for r in rows))
    for col in ("title", "version", "steps", "from"):
        table.add_column(col)
    for name, title, version, steps, origin, problem in rows:
        shown = rich_text(f"invalid: {problem}", "red") if problem is not None else rich_text(title or "")
        table.add_row(rich_text(name), shown, rich_text(version), steps, rich_text(origin))
    return table


def probes_table(probes: Mapping[str, ProbeInfo]) -> Table:
    table = Table(title="registered probes", show_lines=True)
    # Probe and fact names are what playbooks type: whole, one fact a line (a comma-joined list was
    # cut to "non_finite_value…" at 80 columns); the description wraps at spaces.
    table.add_column("probe", no_wrap=True, min_width=_longest(probes))
    table.add_column("what it does, parameters", overflow="fold")  # fold: only a name longer than the column
    longest_fact = _longest(f.name for info in probes.values() for f in info.facts)
    table.add_column("facts", no_wrap=True, min_width=longest_fact)
    table.add_column("from", no_wrap=True)
    for info in probes.values():
        params = "".join(
            f"\n• {p.name}: {p.type}{' (required)' if p.required else ''}{' (names a program)' if p.runs else ''}"
            for p in info.params
        )
        facts = "\n".join(f.name for f in info.facts)
        what = info.summary + (f"\nruns: {info.runs_programs}" if info.runs_programs else "")
        table.add_row(Text(info.name), Text(what + ("\n" + params if params else "")), Text(facts), Text(info.origin))
    return table


def _longest(names: Iterable[str]) -> int:
    return max((len(n) for n in names), default=1)


def probe_lines(info: ProbeInfo) -> list[str]:
    """One probe in full, as a playbook author needs it: every parameter and fact, nothing cut."""
    lines = [f"{info.name}: {info.summary}", f"  from: {info.origin}"]
    if info.runs_programs:
        lines.append(f"  runs: {info.runs_programs}")
    lines.append("  parameters:" if info.params else "  parameters: none")
    for p in info.params:
        notes = [n for n, on in (("required", p.required), ("names a program", p.runs)) if on]
        default = "" if p.default is None else f", default {p.default!r}"
        lines.append(f"    {p.name} ({p.type}{default}{''.join(', ' + n for n in notes)}): {p.help}")
    lines.append("  facts (facts.NODE.NAME in conditions):")
    lines += [f"    {f.name} ({f.type}): {f.help}" for f in info.facts]
    return lines


def comparison_table(result: Comparison) -> Table:
    table = Table(title="reports")
    for col in ("machine", "torch", "driver", "result"):
        table.add_column(col)
    for m in result.machines:
        if m.impossible is None:
            verdict = Text("unknown")
        elif m.wrong:
            verdict = rich_text(f"impossible values: {', '.join(m.wrong)}", "red")
            if m.harmless:
                verdict.append(f"; harmless: {', '.join(m.harmless)}")
        elif m.harmless:  # E alone: a 0% that changes nothing read (trace.metrics.mechanisms: verdict info)
            verdict = rich_text(f"no impossible values (harmless: {', '.join(m.harmless)})", "yellow")
        else:
            verdict = Text("clean", style="green")
        table.add_row(rich_text(m.key), rich_text(m.torch or "—"), rich_text(m.driver or "—"), verdict)
    return table
