"""warpwizard: checks a PyTorch profiler trace for every way it is known to lie, and walks you from what looks wrong
to its cause (a negative warps per SM, kernels missing or hidden, impossible timing, CUDA graphs, rank skew).

The public API (docs/api.md), loaded on first use so that ``import wizard`` costs what
``warpwizard --help`` costs (no torch, rich, questionary or pandas)::

    import wizard

    report = wizard.inspect_traces("trace.json")      # or many files, or per-rank directories
    report.impossible, report.mechanisms, report.launches, report.to_dataframe()
    wizard.fix_trace("trace.json", "trace.fixed.json")
    transcript = wizard.run_playbook("negative-warps-per-sm", {"have": "trace", "trace_path": "trace.json"})
    # or wizard.run_playbook(name, wizard.RunRequest(answers=..., sets=[...], report="run.html"))
    transcript.diagnosis, transcript.evidence

Inside torch.profiler: ``wizard.profiler.tensorboard_trace_handler`` and ``wizard.profiler.export_chrome_trace``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from wizard import rendering as _rendering

__version__ = "0.1.0"


def _report_layer() -> None:
    """The renderers: wizard.report registers them when imported, the first time a record renders itself
    (``to_html``, ``to_markdown``, ``_repr_html_``); records never import the report layer themselves."""
    import wizard.report.registry  # noqa: F401


_rendering.provide(_report_layer)

# Three views of one list, kept equal by tests/cli/test_api.py: where each public name is defined (for
# loading it on first use), __all__, and the imports type checkers read.
_MODULES: dict[str, tuple[str, ...]] = {
    "wizard.api": ("fix_trace", "inspect_traces"),
    "wizard.options": ("Options",),
    "wizard.inspect_options": ("InspectOptions",),
    "wizard.run_request": ("RunRequest",),
    "wizard.runs": (
        "list_probes",
        "load_playbook",
        "plan_playbook",
        "prepare_run",
        "probe_params",
        "run_playbook",
        "run_probe",
        "validate_playbook",
    ),
    "wizard.trace.inspection.results": ("Inspection", "TraceInspection", "TraceReport"),
    "wizard.trace.metrics.findings": ("LAUNCH_COLUMNS", "FindingGroup", "KernelLaunch"),
    "wizard.trace.fix": ("FixSummary",),
    "wizard.engine.transcript": ("Conclusion", "Transcript"),
    "wizard.playbook.model": ("Playbook",),
    "wizard.errors": (
        "AnswersError",
        "InputFileError",
        "MissingDependency",
        "OutputFileError",
        "PlaybookError",
        "PlaybookNotFound",
        "ProbeInfrastructureError",
        "TraceReadError",
        "UsageError",
        "WarpWizardWarning",
        "WizardError",
    ),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "LAUNCH_COLUMNS",
    "AnswersError",
    "Conclusion",
    "FindingGroup",
    "FixSummary",
    "InputFileError",
    "InspectOptions",
    "Inspection",
    "KernelLaunch",
    "MissingDependency",
    "Options",
    "OutputFileError",
    "Playbook",
    "PlaybookError",
    "PlaybookNotFound",
    "ProbeInfrastructureError",
    "RunRequest",
    "TraceInspection",
    "TraceReadError",
    "TraceReport",
    "Transcript",
    "UsageError",
    "WarpWizardWarning",
    "WizardError",
    "__version__",
    "fix_trace",
    "inspect_traces",
    "list_probes",
    "load_playbook",
    "plan_playbook",
    "prepare_run",
    "probe_params",
    "profiler",
    "run_playbook",
    "run_probe",
    "validate_playbook",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from wizard import profiler
    from wizard.api import fix_trace, inspect_traces
    from wizard.engine.transcript import Conclusion, Transcript
    from wizard.errors import (
        AnswersError,
        InputFileError,
        MissingDependency,
        OutputFileError,
        PlaybookError,
        PlaybookNotFound,
        ProbeInfrastructureError,
        TraceReadError,
        UsageError,
        WarpWizardWarning,
        WizardError,
    )
    from wizard.inspect_options import InspectOptions
    from wizard.options import Options
    from wizard.playbook.model import Playbook
    from wizard.run_request import RunRequest
    from wizard.runs import (
        list_probes,
        load_playbook,
        plan_playbook,
        prepare_run,
        probe_params,
        run_playbook,
        run_probe,
        validate_playbook,
    )
    from wizard.trace.fix import FixSummary
    from wizard.trace.inspection.results import Inspection, TraceInspection, TraceReport
    from wizard.trace.metrics.findings import LAUNCH_COLUMNS, FindingGroup, KernelLaunch


def __getattr__(name: str) -> Any:
    if name == "profiler":
        return import_module("wizard.profiler")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wizard' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
