"""The JSON documents warpwizard writes and reads, by name and version (docs/json-output.md).

Writers take the current names from here; ``warpwizard compare`` (beside this module) reads every
version listed as readable.
"""

from __future__ import annotations

import re

TRANSCRIPT = "warpwizard.transcript/1"
TRACE_REPORT = "warpwizard.trace-report/2"
PLAN = "warpwizard.plan/1"  # run --dry-run --json: written, never read back
RANK_SUMMARY = "warpwizard.rank-summary/1"  # one rank's summary (wizard/jobs/summary.py): reused when current
JOB_REPORT = "warpwizard.job-report/1"  # trace inspect --engine/--summaries --json: a job judged from summaries
ERROR = "warpwizard.error/1"  # any --json command that failed before its document: written, never read back

READABLE: dict[str, tuple[int, ...]] = {
    "warpwizard.transcript": (1,),
    "warpwizard.trace-report": (1, 2),
}


def kind(schema: object) -> str | None:
    """The document kind of a schema string warpwizard can read, or None."""
    if not isinstance(schema, str) or "/" not in schema:
        return None
    name, _, version = schema.partition("/")
    if not re.fullmatch(r"[0-9]{1,6}", version):  # ASCII digits only: int() refuses '¹', and 5,000 digits
        return None
    return name if int(version) in READABLE.get(name, ()) else None


def work_fingerprint(value: object) -> str:
    """The ``workload`` field reports carry: a short hash of what ran (a trace's kernel names and launch
    shapes, a repro's op, shapes and dtypes), so ``compare`` can tell whether two reports ran the same work."""
    import hashlib

    return hashlib.sha256(repr(value).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def readable_text() -> str:
    return " or ".join(f"{name}/{v}" for name, versions in READABLE.items() for v in versions)
