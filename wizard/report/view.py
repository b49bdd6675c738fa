"""One view of a report: what to show, in what order, with what cut. Every renderer (Markdown, HTML,
the notebook cell, the terminal table) reads these rows instead of choosing for itself, so a finding
reads the same everywhere and its "reported -> true" cells are built once.

Texts here are still raw (they come from traces, playbooks and answers files): each renderer escapes
them for its medium through ``wizard.untrusted``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from wizard.formatting import compact, plural
from wizard.trace.inspection.results import Inspection, TraceReport
from wizard.trace.kineto_math import prints_truth
from wizard.trace.metrics.findings import MAX_GROUPS, FindingGroup, launched_by
from wizard.trace.metrics.mechanisms import BY_ID, is_wrong
from wizard.untrusted import cut

NAME_LIMIT = 4000  # kernel names whole in files (template arguments tell kernels apart); only a hostile length is cut


@dataclass(frozen=True, slots=True)
class ValueCell:
    """One metric of a finding: what the trace says and what is true, as shown."""

    metric: str
    reported: str
    true: str
    changed: bool  # the true value is known and is not what the trace says (the terminal shows only these)
    right: bool = False  # the true value is known and the trace printed it (float32, six decimals)

    def said(self) -> str:
        """The cell in words: ``reported → true`` where they differ, ``reported (right)`` where the trace printed
        the truth: "0.484849 → 0.484848" read as a disagreement over the sixth decimal of a right value."""
        if self.right:
            return f"{self.reported} (right)"
        return f"{self.reported} → {self.true}"


def value_cells(reported: dict[str, float | None], true: dict[str, float | None]) -> list[ValueCell]:
    """The "reported -> true" cells of a finding, in the trace's metric order (at most eight). A value is right
    where it is the float32 print of the truth (``prints_truth``, what ``trace fix`` leaves alone), not only
    where it equals it: E's blocks per SM are right, printed to six decimals."""
    cells = []
    for metric, value in list(reported.items())[:8]:
        truth = true.get(metric)
        right = truth is not None and value is not None and prints_truth(value, truth)
        cells.append(ValueCell(metric, compact(value), compact(truth), truth is not None and not right, right))
    return cells


@dataclass(frozen=True, slots=True)
class FindingRow:
    """One finding group as every format shows it."""

    where: str  # rank N, else the file name
    mechanism: str
    title: str
    kernel: str
    count: int
    cells: list[ValueCell]
    launched_by: str
    python_frame: str | None
    evidence: str


@dataclass(slots=True)
class InspectionView:
    """An inspection, ready to render: the verdict first, then the findings, then what to know."""

    files: int
    kernels: int
    kernels_checked: int
    wrong_launches: int
    mechanisms: dict[str, int]
    devices: list[str]
    ranks: list[int]
    rows: list[FindingRow]
    rows_omitted: int
    notes: list[tuple[str, str]] = field(default_factory=list)  # (file, note)

    @property
    def verdict(self) -> str:
        wrong = {m: n for m, n in self.mechanisms.items() if is_wrong(m)}
        if not wrong:
            return f"no wrong values in {self.kernels_checked} checked kernel launches"
        # In words first, the letters after: "mechanisms A (1), E (1)" said nothing to a newcomer.
        named = "; ".join(
            f"{BY_ID[m].summary if m in BY_ID else 'unknown mechanism'} ({m}: {plural(n, 'launch')})"
            for m, n in sorted(wrong.items())
        )
        return f"{plural(self.wrong_launches, 'launch')} with wrong values: {named}"


def device_label(device: dict[str, Any]) -> str:
    """A GPU as a report names it, saying only what the trace records (never "None SMs, cc None")."""
    known = [
        f"{device['num_sms']} SMs" if device.get("num_sms") is not None else "",
        f"cc {device['compute_capability']}" if device.get("compute_capability") is not None else "",
    ]
    shown = ", ".join(k for k in known if k) or "no deviceProperties: SM count and compute capability unknown"
    name = device.get("name") or f"device {device.get('id', '?')}"
    return f"{name} ({shown})"


def _row(report: TraceReport, group: FindingGroup) -> FindingRow:
    return FindingRow(
        where=report.label,
        mechanism=group.mechanism,
        title=group.title,
        kernel=cut(group.kernel, NAME_LIMIT),
        count=group.count,
        cells=value_cells(group.worst.reported, group.worst.true),
        launched_by=launched_by(group.op),
        python_frame=group.op.user_frame if group.op else None,
        evidence=group.worst.evidence,
    )


def wrong_rows(report: TraceReport) -> list[FindingRow]:
    """One trace's finding groups with wrong values, most serious first (what Markdown lists per file)."""
    return [_row(report, g) for g in report.metrics.groups if g.wrong]


def inspection_view(inspection: Inspection, *, by_design: bool = True, limit: int = MAX_GROUPS) -> InspectionView:
    """The view of an inspection: wrong groups first (then F when ``by_design``), at most ``limit`` rows."""
    reports = inspection.reports
    rows = [row for r in reports for row in wrong_rows(r)]
    if by_design:
        rows += [_row(r, g) for r in reports for g in r.metrics.groups if not g.wrong]
    devices = sorted({device_label(d) for r in reports for d in r.metrics.devices})
    return InspectionView(
        files=len(reports),
        kernels=sum(r.kernels for r in reports),
        kernels_checked=sum(r.metrics.kernels_checked for r in reports),
        wrong_launches=sum(r.metrics.wrong_launches for r in reports),
        mechanisms=inspection.mechanisms,
        devices=devices,
        ranks=sorted(r.rank for r in reports if r.rank is not None),
        rows=rows[:limit],
        rows_omitted=max(0, len(rows) - limit),
        notes=[(r.path, n) for r in reports for n in r.metrics.notes],
    )


def merged_rows(rows: list[FindingRow]) -> list[FindingRow]:
    """Rows alike in everything but their rank, as one row (eight ranks' same E finding was eight cards on a
    phone): ``where`` names the ranks ("ranks 0-7"), ``count`` is their launches together. In first-seen order."""
    merged: dict[tuple[Any, ...], list[FindingRow]] = {}
    for row in rows:
        key = (row.mechanism, row.title, row.kernel, tuple(row.cells), row.launched_by, row.python_frame, row.evidence)
        merged.setdefault(key, []).append(row)
    return [
        alike[0]
        if len(alike) == 1
        else dataclasses.replace(alike[0], where=places([r.where for r in alike]), count=sum(r.count for r in alike))
        for alike in merged.values()
    ]


def places(labels: list[str]) -> str:
    """Several traces' labels as one: "ranks 0-3, 6" for rank labels (runs of ranks joined), else the labels."""
    numbers = [label.removeprefix("rank ") for label in labels]
    if not all(n.isdigit() for n in numbers):
        return ", ".join(dict.fromkeys(labels))
    runs: list[list[int]] = []
    for n in sorted({int(n) for n in numbers}):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    if len(runs) == 1 and len(runs[0]) == 1:
        return f"rank {runs[0][0]}"
    return "ranks " + ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def per_rank_counts(inspection: Inspection) -> dict[str, dict[str, int]]:
    """Mechanism -> rank (or file) label -> launches, for a rank directory's bar chart."""
    out: dict[str, dict[str, int]] = {}
    for r in inspection.reports:
        for mechanism, count in r.metrics.mechanisms.items():
            out.setdefault(mechanism, {})[r.label] = count
    return out


def environment_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """The machine facts a run recorded (the env probe's), as label/value pairs."""
    return [
        (str(k), compact(v) if isinstance(v, (int, float)) else str(v)) for k, v in facts.items() if v not in (None, "")
    ]


@dataclass(frozen=True, slots=True)
class SummaryTableView:
    """One trace's key_averages() table as reported and with each GPU event counted once (summary-table)."""

    path: str
    status: str
    totals: list[tuple[str, str]]  # (what, µs) lines above the table
    rows: list[tuple[str, str, int, str, str, str, str, bool]]  # name, kind, calls, self r/t, total r/t, off


SUMMARY_KINDS = {"op": "op", "gpu": "GPU event", "gpu_annotation": "GPU annotation", "overhead": "profiler overhead"}


def _us(value: Any) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "?"


def summary_table_views(inspection: Inspection) -> list[SummaryTableView]:
    """Each trace whose summary-table check could run: its sums and rows, the ones the check holds against the
    table marked (its own rule: a row marked under a check that says ok was a report contradicting itself)."""
    from wizard.trace.health.key_averages import misleads

    out = []
    for report in inspection.reports:
        check = next((c for c in report.health_result.checks if c.check == "summary-table"), None)
        if check is None or check.status == "not_applicable":
            continue
        d = check.details
        totals = [
            ("Self CUDA time total, as key_averages().table() prints it", _us(d.get("table_self_us"))),
            ("GPU busy: the wall-clock union of the GPU events", _us(d.get("busy_us"))),
            ("GPU annotation time shown as Self CUDA rows (left out of the total)", _us(d.get("annotation_us"))),
            ("kernel time claimed by profiler-overhead records", _us(d.get("claimed_us"))),
        ]
        rows = [
            (
                cut(str(r["name"]), NAME_LIMIT),
                SUMMARY_KINDS.get(r["kind"], r["kind"]),
                int(r["calls"]),
                _us(r["reported_self_us"]),
                _us(r["true_self_us"]),
                _us(r["reported_total_us"]),
                _us(r["true_total_us"]),
                misleads(r["kind"], r["reported_self_us"], r["reported_total_us"], r["true_total_us"]),
            )
            for r in d.get("rows", [])
        ]
        out.append(SummaryTableView(report.path, check.status, totals, rows))
    return out
