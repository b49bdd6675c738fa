"""``trace inspect --json``: the inspection as plain data (schema ``warpwizard.trace-report/2``)."""

from __future__ import annotations

import platform
from dataclasses import asdict
from typing import Any

from wizard.serialize import clean
from wizard.trace.inspect import REPORT_SCHEMA, FindingGroup, Inspection, TraceReport


def _clean_dict(value: dict[str, Any]) -> dict[str, Any]:
    cleaned = clean(value)
    assert isinstance(cleaned, dict)
    return cleaned


def group_to_dict(group: FindingGroup) -> dict[str, Any]:
    worst = group.worst
    return _clean_dict(
        {
            "mechanism": group.mechanism,
            "title": group.title,
            "severity": group.severity,
            "kernel": group.kernel,
            "count": group.count,
            "first_ts": group.first_ts,
            "worst": {
                "ts": worst.ts,
                "device": worst.device,
                "correlation": worst.correlation,
                "grid": list(worst.grid) if worst.grid else None,
                "block": list(worst.block) if worst.block else None,
                "reported": worst.reported,
                "true": worst.true,
                "evidence": worst.evidence,
                "limiting_factors": list(worst.limiting_factors),
            },
            "op": asdict(group.op) if group.op else None,
            "launches": [asdict(launch) for launch in group.launches],
            "launches_omitted": group.launches_omitted,
        }
    )


def report_to_dict(report: TraceReport) -> dict[str, Any]:
    return _clean_dict(
        {
            "path": report.path,
            "rank": report.rank,
            "layout": report.layout,
            "compressed": report.compressed,
            "bytes_read": report.bytes_read,
            "events": report.events,
            "kernels": report.kernels,
            "kernels_checked": report.kernels_checked,
            "devices": report.devices,
            "rocm": report.rocm,
            "truncation": asdict(report.truncation) if report.truncation else None,
            "impossible": report.impossible,
            "mechanisms": report.mechanisms,
            "max_true_warps_per_sm": report.max_true_warps_per_sm,
            "groups": [group_to_dict(g) for g in report.groups],
            "notes": report.notes,
            "non_finite": report.non_finite,
            "timing": report.timing,
        }
    )


def inspection_to_dict(inspection: Inspection) -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "host": {"hostname": platform.node()},  # so `warpwizard compare` can tell machines apart
        "impossible": inspection.impossible,
        "mechanisms": inspection.mechanisms,
        "reports": [report_to_dict(r) for r in inspection.reports],
    }
