"""What a run reads and writes: every file it reads (which no output may replace, even with ``force``), and its
outputs (``record``, ``report``), checked before any probe runs and written at the end."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.api import PathLike
from wizard.engine.transcript import Transcript
from wizard.environment import RunInspections, Workload
from wizard.options import Options
from wizard.runs.answers import answers_text


def run_inputs(options: Options | None, values: Iterable[Any] = ()) -> list[str]:
    """Every file a run reads, which no output may replace even with ``--force``: the reports to
    compare, the interpreters, the workload's script, and each given value (an answer, a probe
    parameter, items of a list) that names a file or directory that exists."""
    options = options or Options()
    named: list[str] = [*options.compare_reports, *options.compare_pythons]
    if options.python:
        named.append(options.python)
    if options.workload:
        try:
            script = Workload.parse(options.workload, options.python or sys.executable).script
        except ValueError:
            script = None
        if script:
            named.append(script)
    for value in values:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and 0 < len(item) < 4096 and "\0" not in item and os.path.lexists(item):
                named.append(item)
    return named


@dataclass
class RunOutputs:
    """``record`` and ``report``: checked before anything runs, written at the end, never over an input."""

    record: PathLike | None
    report: PathLike | None
    force: bool
    read: list[str]  # the answers file and the playbook

    def inputs(self, options: Options, answers: Mapping[str, Any]) -> list[str]:
        """What the run reads, which no output replaces (answers typed at the prompt included)."""
        return self.read + run_inputs(options, answers.values())

    def check(self, options: Options, values: Mapping[str, Any], spell: Callable[[str], str]) -> None:
        """Refused before any probe runs: an unknown report format, an output onto an input or over a
        file (without ``force``), two outputs naming one file."""
        from wizard.outputs import check_outputs
        from wizard.rendering import renderer

        if self.report:
            renderer("format")(os.fspath(self.report))  # an unknown suffix, the html extra missing: said now
        named = [(os.fspath(p), what) for p, what in ((self.record, "answers record"), (self.report, "report")) if p]
        check_outputs(named, inputs=self.inputs(options, values), force=self.force)

    def draws_trace(self) -> bool:
        """Whether the report draws the trace the run read (an HTML page): known before any probe runs."""
        from wizard.rendering import renderer

        return self.report is not None and renderer("draws")(os.fspath(self.report)) == "trace"

    def write(self, transcript: Transcript, options: Options, inspections: RunInspections | None = None) -> None:
        from wizard.outputs import write_text

        inputs = self.inputs(options, transcript.answers)
        pb_id = transcript.playbook["id"]
        if self.record:
            text = answers_text(transcript.answers, pb_id)
            write_text(os.fspath(self.record), text, inputs=inputs, force=self.force, what="answers record")
        if self.report:
            text = transcript.render(Path(self.report).suffix, inspections)
            write_text(os.fspath(self.report), text, inputs=inputs, force=self.force, what="report")
