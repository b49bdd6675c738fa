"""Rich tables for the listing commands (list, probes, compare). Every cell that holds text from
outside (a playbook's title, another machine's host name) is a Text, never markup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from wizard.compare import Comparison
from wizard.formatting import plural
from wizard.probes.base import ProbeInfo
from wizard.untrusted import rich_text

if TYPE_CHECKING:
    from rich.console import Group

    from wizard.diff import ProfileDiff


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


# The narrowest "what it does" column that wraps at spaces without splitting a word of the probes' summaries.
WHAT_MIN = 28


def probes_table(probes: Mapping[str, ProbeInfo], width: int | None = None) -> Table:
    """Every probe: its name, what it does and its parameters, its facts, where it comes from. Where ``width``
    cannot hold the facts whole beside a readable description (80 columns left the description 9 wide, its words
    split: "blocks/wa rps"), the facts are left to ``warpwizard probes NAME`` and the caption says so."""
    longest_fact = _longest(f.name for info in probes.values() for f in info.facts)
    fixed = _longest(probes) + len("builtin") + 13  # the probe and from columns, the borders and padding
    with_facts = width is None or width >= fixed + WHAT_MIN + longest_fact + 3
    caption = None if with_facts else "each probe's facts: warpwizard probes NAME (or a wider terminal)"
    table = Table(title="registered probes", show_lines=True, caption=caption)
    # Probe and fact names are what playbooks type: whole, one fact a line (a comma-joined list was
    # cut to "non_finite_value…" at 80 columns); the description wraps at spaces.
    table.add_column("probe", no_wrap=True, min_width=_longest(probes))
    table.add_column("what it does, parameters", overflow="fold", min_width=WHAT_MIN)  # fold: a name past it
    if with_facts:
        table.add_column("facts", no_wrap=True, min_width=longest_fact)
    table.add_column("from", no_wrap=True)
    for info in probes.values():
        params = "".join(
            f"\n• {p.name}: {p.type}{' (required)' if p.required else ''}{' (names a program)' if p.runs else ''}"
            for p in info.params
        )
        what = info.summary + (f"\nruns: {info.runs_programs}" if info.runs_programs else "")
        cells = [Text(info.name), Text(what + ("\n" + params if params else ""))]
        if with_facts:
            cells.append(Text("\n".join(f.name for f in info.facts)))
        table.add_row(*cells, Text(info.origin))
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
            verdict = rich_text(m.unchecked, "yellow") if m.unchecked else Text("unknown")
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


def diff_view(result: ProfileDiff) -> Group:
    """``warpwizard diff`` at a terminal: the verdict, the factors (those that differ first), then what changed."""
    from rich.console import Group

    from wizard.diff import launch_shape

    style = {"comparable": "green", "comparable with caveats": "yellow", "not comparable": "red"}[result.verdict]
    head = rich_text(f"{result.before} → {result.after}: {result.said}", f"bold {style}")
    factors = Table(title="comparability", title_justify="left")
    for col in ("factor", "before", "after", "", "what it means"):
        factors.add_column(col)
    mark = {"same": Text("same", "green"), "unknown": Text("unknown", "dim")}
    for f in sorted((f for f in result.factors if f.status != "same"), key=lambda f: f.status != "differs"):
        shown = mark.get(f.status) or Text("differs", "red" if f.effect == "blocks" else "yellow")
        factors.add_row(rich_text(f.name), rich_text(f.before), rich_text(f.after), shown, rich_text(f.meaning))
    same = [f.name for f in result.factors if f.status == "same"]
    parts: list[Any] = [head]
    if factors.row_count:
        parts.append(factors)
    if same:
        parts.append(rich_text(f"the same on both sides: {', '.join(same)}", "green"))
    if result.verdict == "not comparable":
        parts.append(Text("No changes are shown: a comparison that cannot be made shows no result."))
        return Group(*parts)
    if result.ncu:
        parts.append(_ncu_table(result))
        return Group(*parts)
    moved = [c for c in result.changes if c.regression or c.improvement]
    parts.append(
        Text(f"{plural(len(result.regressions), 'regression')} beyond {result.threshold_pct} and the noise; "
             f"{plural(len(result.changes), 'kernel')} on both sides")
    )  # fmt: skip
    if moved:
        table = Table(title="what changed", title_justify="left")
        for col in ("kernel", "grid / block", "launches", "median µs", "change"):
            table.add_column(col)
        for c in moved[:20]:
            dims = launch_shape(c)
            table.add_row(
                rich_text(c.name[:90]), rich_text(dims), f"{c.before_launches} → {c.after_launches}",
                f"{c.before_median_us:.3f} → {c.after_median_us:.3f}",
                Text(f"{c.change:+.1%}", "red" if c.regression else "green"),
            )  # fmt: skip
        parts.append(table)
    parts += _op_parts(result)
    parts += _rank_parts(result)
    parts += [rich_text(f"• {m}") for m in result.mechanisms[:10]]
    parts += [rich_text(f"• health: {h}") for h in result.health[:10]]
    if result.only_before or result.only_after:
        parts.append(Text(f"{len(result.only_before)} kernels only in BEFORE, {len(result.only_after)} only in AFTER"))
    return Group(*parts)


def _op_parts(result: ProfileDiff) -> list[Any]:
    """The CPU ops that moved beyond the threshold and the noise, and what they were matched on."""
    if result.ops_matched_on == "none":
        return []
    how = "name and input shapes" if result.ops_matched_on == "name and shapes" else "name alone (a side has no shapes)"
    moved = [c for c in result.ops if c.regression or c.improvement]
    parts: list[Any] = [
        Text(f"{plural(len(result.op_regressions), 'op regression')}; {plural(len(result.ops), 'op')} matched by {how}")
    ]
    if moved:
        table = Table(title="ops that changed (CPU time, inclusive)", title_justify="left")
        for col in ("op", "input shapes", "calls", "median µs", "change"):
            table.add_column(col)
        for c in moved[:20]:
            table.add_row(
                rich_text(c.name[:60]), rich_text((c.shapes or "—")[:60]), f"{c.before_calls} → {c.after_calls}",
                f"{c.before_median_us:.3f} → {c.after_median_us:.3f}",
                Text(f"{c.change:+.1%}", "red" if c.regression else "green"),
            )  # fmt: skip
        parts.append(table)
    return parts


RANKS_SHOWN = 10  # a thousand ranks' table is read by nobody: the worst ten, and how many were matched


def _rank_parts(result: ProfileDiff) -> list[Any]:
    """Rank against rank: how many were matched and which regressed, and the worst RANKS_SHOWN."""
    if not result.ranks:
        return []
    shown = min(RANKS_SHOWN, len(result.ranks))
    head = Text(
        f"{plural(len(result.ranks), 'rank')} compared rank by rank; "
        f"{plural(len(result.rank_regressions), 'rank')} with a kernel regression; the worst {shown}:"
    )
    table = Table(title="ranks", title_justify="left")
    for col in ("rank", "GPU time ms", "change", "median step ms", "regressions", "slowest kernel"):
        table.add_column(col)
    for r in result.ranks[:RANKS_SHOWN]:
        step = "—" if r.before_step_us is None or r.after_step_us is None else (
            f"{r.before_step_us / 1e3:.3f} → {r.after_step_us / 1e3:.3f}")  # fmt: skip
        table.add_row(
            str(r.rank), f"{r.before_gpu_us / 1e3:.3f} → {r.after_gpu_us / 1e3:.3f}",
            Text(f"{r.change:+.1%}", "red" if r.regressions else ""), step, str(r.regressions),
            rich_text(f"{(r.worst or '—')[:60]} ({r.worst_change:+.1%})"),
        )  # fmt: skip
    return [head, table]


def _ncu_table(result: ProfileDiff) -> Table:
    """Nsight Compute's kernels beside the trace's: how each was joined, its label and why, the identities."""
    table = Table(title="Nsight Compute beside the trace", title_justify="left")
    for col in ("#", "kernel", "joined on", "label", "identities", "why"):
        table.add_column(col)
    style = {"profiler bug": "red", "configuration blind spot": "yellow", "estimate": "green", "not joined": "dim"}
    for j in result.ncu[:50]:
        marks = "".join("✓" if i.holds else ("✗" if i.holds is False else "?") for i in j.identities) or "—"
        table.add_row(
            str(j.ncu_index), rich_text(j.kernel[:70]), rich_text(j.matched), Text(j.label, style[j.label]),
            marks, rich_text(j.why),
        )  # fmt: skip
    return table
