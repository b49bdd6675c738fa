"""``python -m wizard.ncu.worker REPORT OUT``: read an ``.ncu-rep`` with NVIDIA's ``ncu-report`` and write its
kernels as JSON to OUT. Run by wizard/ncu/__init__.py in a process of its own, with a time bound; the address space
is bounded here, before the closed library loads. Exit 3: the library is not installed; 4: it refused the file."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from wizard.ncu import MAX_KERNELS, MAX_TEXT, METRICS, READ_BYTES, TEXT_METRICS
from wizard.trace.profile.summary import kernel_key


def _bound_memory() -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    resource.setrlimit(resource.RLIMIT_AS, (READ_BYTES, READ_BYTES))


def _value(action: Any, name: str) -> float | None:
    metric = action.metric_by_name(name)
    if metric is None:
        return None
    try:
        value = float(metric.as_double())
    except (TypeError, ValueError, RuntimeError):
        return None
    return value if math.isfinite(value) else None


def _text(action: Any, name: str) -> str | None:
    metric = action.metric_by_name(name)
    if metric is None:
        return None
    try:
        return str(metric.as_string())[:200]
    except (TypeError, ValueError, RuntimeError):
        return None


def _kernels(report: Any, demangled: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in range(report.num_ranges()):
        found = report.range_by_idx(r)
        for a in range(found.num_actions()):
            if len(out) >= MAX_KERNELS:
                return out
            action = found.action_by_idx(a)
            full = str(action.name(demangled))
            out.append(
                {
                    "name": str(action.name())[:MAX_TEXT],
                    "demangled": full[:MAX_TEXT],
                    "key": kernel_key(full),  # of the whole name: a CUTLASS template runs to 4 KB
                    "device": _text(action, TEXT_METRICS["device"]),
                    "values": {key: _value(action, metric) for key, metric in METRICS.items()},
                }
            )
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m wizard.ncu.worker REPORT OUT", file=sys.stderr)
        return 2
    _bound_memory()
    try:
        import ncu_report
    except ImportError:
        print("ncu-report is not installed", file=sys.stderr)
        return 3
    try:
        report = ncu_report.load_report(argv[1])
    except Exception as exc:  # noqa: BLE001 - the closed library's errors have no documented types
        print(f"ncu-report cannot read it: {str(exc)[:200]}", file=sys.stderr)
        return 4
    kernels = _kernels(report, ncu_report.IAction.NameBase_DEMANGLED)
    with open(argv[2], "x") as fh:  # a fresh file in the caller's private directory
        json.dump({"kernels": kernels}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
