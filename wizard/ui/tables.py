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
    table = Table(title="playbooks")
    for col in ("name", "title", "version", "steps", "from"):
        table.add_column(col)
    for name, title, version, steps, origin, problem in rows:
        shown = rich_text(f"invalid: {problem}", "red") if problem is not None else rich_text(title or "")
        table.add_row(rich_text(name), shown, rich_text(version), steps, rich_text(origin))
    return table


def probes_table(probes: Mapping[str, ProbeInfo]) -> Table:
    table = Table(title="registered probes", show_lines=True)
    for col in ("probe", "what it does", "parameters", "facts", "from"):
        table.add_column(col)
    for info in probes.values():
        params = "\n".join(
            f"{p.name}: {p.type}{' (required)' if p.required else ''}{' (names a program)' if p.runs else ''}"
            for p in info.params
        )
        facts = ", ".join(f.name for f in info.facts)
        what = info.summary + (f"\nruns: {info.runs_programs}" if info.runs_programs else "")
        table.add_row(Text(info.name), Text(what), Text(params), Text(facts), Text(info.origin))
    return table


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
        elif m.impossible:
            verdict = rich_text(f"impossible values: {', '.join(m.mechanisms)}", "red")
        else:
            verdict = Text("clean", style="green")
        table.add_row(rich_text(m.key), rich_text(m.torch or "—"), rich_text(m.driver or "—"), verdict)
    return table
