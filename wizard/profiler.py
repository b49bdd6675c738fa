"""Inside torch.profiler: export the trace exactly as PyTorch would, then check it where it was made.

``tensorboard_trace_handler`` is a drop-in for ``torch.profiler.tensorboard_trace_handler``: PyTorch's
own handler writes the file (same name, same bytes); then warpwizard reads it once and, for each
mechanism found, emits one ``WarpWizardWarning`` (and a ``logging`` record on the ``warpwizard``
logger) naming the kernel, the wrong and the true value and the cause. Optionally it writes a
corrected copy beside the trace (for TensorBoard, Perfetto and HTA) and a JSON report.
``export_chrome_trace(prof, path)`` does the same for a plain ``prof.export_chrome_trace(path)``.
Where the profiler is at hand, the table the user prints (``prof.key_averages()``) is compared with the
trace's GPU events counted once (the summary-table check): a row that claims more device time than its
kernels ran, or a Self CUDA total above the GPU's busy time, is one more warning.

Checking never breaks training: any error inside it becomes a warning and the caller goes on. It
runs in the calling process (no worker processes) and costs one read of the trace. torch is
imported only inside these functions, to call PyTorch's own handler.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import WarpWizardWarning
from wizard.formatting import plural
from wizard.untrusted import visible

LOG = logging.getLogger("warpwizard")
LOG.addHandler(logging.NullHandler())  # a library's records go where the application's logging sends them
TRACE_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json", ".pftrace.gz", ".pftrace")

__all__ = ["TraceCheck", "TraceChecker", "WarpWizardWarning", "export_chrome_trace", "tensorboard_trace_handler"]


@dataclass
class TraceCheck:
    """What checking one exported trace gave: the inspection (None if the check failed), the files
    written beside it, and the warnings emitted."""

    trace: str
    inspection: Any = None  # wizard.Inspection
    fixed: str | None = None
    report: str | None = None
    warnings: list[str] = field(default_factory=list)
    printed: list[Any] = field(default_factory=list)  # prof.key_averages()' rows, where a profiler was at hand


@dataclass
class TraceChecker:
    """Checks traces as they are exported. ``fix``: write a corrected copy beside each trace with a
    wrong value (True), or into this directory; ``report``: write a JSON report beside each trace
    (True) or into this directory; ``sms``: the SM count for traces without device properties."""

    fix: bool | str | os.PathLike[str] = False
    report: bool | str | os.PathLike[str] = False
    sms: int | None = None
    checks: list[TraceCheck] = field(default_factory=list)

    @property
    def last(self) -> TraceCheck | None:
        return self.checks[-1] if self.checks else None

    def check(self, path: str | os.PathLike[str]) -> TraceCheck:
        """Inspect one trace, write what was asked, then warn. Never raises, except where the
        application made WarpWizardWarning an error (``warnings.simplefilter("error")``, as for
        tests): then the first finding is raised, with its own message, after the corrected copy and
        the report were written."""
        result = TraceCheck(_path_text(path))
        self.checks.append(result)
        lines: list[str] = []
        try:
            lines = self._check(result)
        except Exception as exc:  # noqa: BLE001 - whatever happens here, the training run goes on
            lines.append(f"warpwizard could not check {visible(result.trace)}: {type(exc).__name__}: {visible(exc)}")
        for line in lines:
            _warn(result, line)
        return result

    def compare_table(self, prof: Any, result: TraceCheck) -> None:
        """The table the user prints, ``prof.key_averages()``, against the trace just checked (its summary-table
        check): one warning per row that claims more device time than its GPU events ran, and for a Self CUDA
        total above the GPU's busy time. Never raises, except where WarpWizardWarning is an error."""
        lines: list[str] = []
        try:
            lines = _table_lines(prof, result)
        except Exception as exc:  # noqa: BLE001 - the training run goes on
            lines.append(f"warpwizard could not compare key_averages() with {visible(result.trace)}: {visible(exc)}")
        for line in lines:
            _warn(result, line)

    def _check(self, result: TraceCheck) -> list[str]:
        """The warnings' lines; the corrected copy and the report are written before any is shown."""
        from wizard.api import inspect_traces

        inspection = inspect_traces(result.trace, sms=self.sms, jobs=1, launches="none")
        result.inspection = inspection
        lines = mechanism_warnings(inspection) + health_warnings(inspection)
        if not lines:
            checked = plural(_checked(inspection), "kernel")
            _log(logging.INFO, f"warpwizard: {result.trace}: {checked} checked, no wrong values")
        if self.fix and inspection.impossible:
            try:
                result.fixed = str(_fix_beside(result.trace, self.fix))
            except Exception as exc:  # noqa: BLE001 - the findings are still worth their warnings
                lines.append(f"warpwizard could not write a corrected copy of {visible(result.trace)}: {visible(exc)}")
        if self.report:
            from wizard.outputs import write_text
            from wizard.serialize import dumps

            try:
                target = _beside(result.trace, self.report, "warpwizard", report=True)
                document = dumps(inspection.to_dict()) + "\n"
                result.report = str(write_text(target, document, inputs=[result.trace], free=True))
            except Exception as exc:  # noqa: BLE001
                lines.append(f"warpwizard could not write the report for {visible(result.trace)}: {visible(exc)}")
        return lines


def printed_rows(averages: Any) -> list[Any]:
    """``prof.key_averages()``' rows as the table prints them (``wizard.trace.health.key_averages.PrintedRow``)."""
    from wizard.trace.health.key_averages import PrintedRow

    return [
        PrintedRow(
            str(evt.key),
            int(evt.count),
            float(evt.self_device_time_total),
            float(evt.device_time_total),
            str(evt.device_type).rsplit(".", 1)[-1] != "CPU",
            bool(getattr(evt, "is_user_annotation", False)),
        )
        for evt in averages
    ]


def _table_lines(prof: Any, result: TraceCheck) -> list[str]:
    """The comparison's warnings: nothing when the profiler has no table or the trace was not checked."""
    from wizard.trace.health.key_averages import compare_printed

    averages = getattr(prof, "key_averages", None)
    if averages is None or result.inspection is None:
        return []
    result.printed = printed_rows(averages())
    check = next((c for c in result.inspection.health if c.check == "summary-table"), None)
    if check is None:
        return []
    return [
        f"warpwizard: {visible(line)} (trace {visible(result.trace)})"
        for line in compare_printed(result.printed, check)
    ]


def health_warnings(inspection: Any) -> list[str]:
    """One line per health problem other than the wrong values (those have their own lines): what was
    found and what it means for the numbers read from this trace."""
    from wizard.untrusted import visible

    return [
        f"warpwizard: trace health {check.status}: {check.check}: {visible(check.summary)}"
        for check in inspection.problems()
        if check.check != "impossible-metrics"
    ]


def mechanism_warnings(inspection: Any) -> list[str]:
    """One line per mechanism with wrong values: its worst kernel, reported against true, and the cause."""
    from wizard.formatting import exact, plural
    from wizard.trace.metrics.mechanisms import is_wrong
    from wizard.untrusted import visible

    lines = []
    seen: set[str] = set()
    for group in inspection.findings:  # per mechanism, the group with the most launches comes first
        if not is_wrong(group.mechanism) or group.mechanism in seen:
            continue
        seen.add(group.mechanism)
        worst = group.worst
        values = "; ".join(
            f"{metric} {exact(value)} (true {exact(truth)})"
            for metric, value in worst.reported.items()
            if _differs(value, truth := worst.true.get(metric))
        )
        count = sum(g.count for g in inspection.findings if g.mechanism == group.mechanism)
        lines.append(
            f"warpwizard: mechanism {group.mechanism} in {plural(count, 'launch')}, "
            f"e.g. {visible(group.kernel)[:100]}: {values}: {group.title}"
        )
    return lines


def tensorboard_trace_handler(
    dir_name: str,
    worker_name: str | None = None,
    use_gzip: bool = False,
    use_python_export: bool = False,
    *,
    fix: bool | str | os.PathLike[str] = False,
    report: bool | str | os.PathLike[str] = False,
    sms: int | None = None,
) -> Callable[[Any], None]:
    """``torch.profiler.tensorboard_trace_handler(dir_name, worker_name, use_gzip, use_python_export)``
    (the last only where your torch has it), then a check of the trace it wrote. The returned
    handler's ``.checker`` holds every check made."""
    checker = TraceChecker(fix=fix, report=report, sms=sms)
    extra = {"use_python_export": True} if use_python_export else {}

    def handler(prof: Any) -> None:
        from torch.profiler import tensorboard_trace_handler as torch_handler

        recorder = _Recorder(prof)
        torch_handler(dir_name, worker_name, use_gzip, **extra)(recorder)  # PyTorch names and writes the file
        for path in recorder.paths:
            checker.compare_table(prof, checker.check(path))

    handler.checker = checker  # type: ignore[attr-defined]
    return handler


def export_chrome_trace(
    prof: Any,
    path: str | os.PathLike[str],
    *,
    fix: bool | str | os.PathLike[str] = False,
    report: bool | str | os.PathLike[str] = False,
    sms: int | None = None,
) -> TraceCheck:
    """``prof.export_chrome_trace(path)``, then a check of the trace (see ``TraceChecker``)."""
    prof.export_chrome_trace(os.fspath(path))
    checker = TraceChecker(fix=fix, report=report, sms=sms)
    result = checker.check(path)
    checker.compare_table(prof, result)
    return result


class _Recorder:
    """The profiler as PyTorch's handler sees it, noting the path each export goes to."""

    def __init__(self, prof: Any) -> None:
        self._prof = prof
        self.paths: list[str] = []

    def export_chrome_trace(self, path: str, *args: Any, **kwargs: Any) -> Any:
        self.paths.append(path)
        return self._prof.export_chrome_trace(path, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._prof, name)


def _log(level: int, line: str) -> None:
    """A record on the ``warpwizard`` logger; an application's handler or filter that raises does
    not reach the training loop."""
    try:
        LOG.log(level, "%s", line)
    except Exception:  # noqa: BLE001 - logging is the application's; the check goes on
        pass


def _warn(result: TraceCheck, line: str) -> None:
    result.warnings.append(line)
    _log(logging.WARNING, line)
    warnings.warn(WarpWizardWarning(line), stacklevel=4)


def _path_text(path: Any) -> str:
    """A trace path as text; bytes or another type is named in the warning, not a TypeError."""
    from wizard.api import path_text
    from wizard.errors import UsageError

    try:
        return path_text(path, "a trace")
    except UsageError:
        return f"<not a path: {type(path).__name__}>"


def _differs(reported: float | None, true: float | None) -> bool:
    """Whether a reported value is wrong, not just the float32 print of the true one."""
    from wizard.trace.kineto_math import prints_truth

    if reported is None or true is None:
        return reported is not true
    return not prints_truth(reported, true)


def _checked(inspection: Any) -> int:
    return sum(r.metrics.kernels_checked for r in inspection.reports)


def _fix_beside(trace: str, where: bool | str | os.PathLike[str]) -> Path:
    """The corrected copy, at the first name free when it is published: another thread or process
    exporting a trace of the same name into the same directory keeps its own copy, and so does this."""
    from wizard.api import fix_trace
    from wizard.outputs import MAX_FREE_TRIES, NameTaken

    for _ in range(MAX_FREE_TRIES):
        target = _beside(trace, where, "warpwizard-fixed")
        try:
            fix_trace(trace, target)
        except NameTaken:
            continue  # taken while it was written: the next free name
        return target
    raise NameTaken(f"{_beside(trace, where, 'warpwizard-fixed')}: no free name for the corrected copy")


def split_trace_name(name: str) -> tuple[str, str]:
    """A trace file's name as (stem, suffix): ``rank0.pt.trace.json.gz`` is ``rank0`` and ``.pt.trace.json.gz``."""
    suffix = next((s for s in TRACE_SUFFIXES if name.endswith(s)), Path(name).suffix)
    return (name[: len(name) - len(suffix)] if suffix else name), suffix


def _beside(trace: str, where: bool | str | os.PathLike[str], tag: str, *, report: bool = False) -> Path:
    """``<name>.<tag>.pt.trace.json[.gz]`` (or ``<name>.<tag>.json`` for a report) beside the trace or
    in the directory given, never over an existing file."""
    from wizard.outputs import free_path

    source = Path(trace)
    stem, suffix = split_trace_name(source.name)
    name = f"{stem}.{tag}.json" if report else f"{stem}.{tag}{suffix}"
    folder = source.parent if isinstance(where, bool) else Path(os.fspath(where))
    folder.mkdir(parents=True, exist_ok=True)
    return free_path(folder / name)
