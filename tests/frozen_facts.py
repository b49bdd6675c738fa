"""trace.inspect's health facts of the shared traces, as a JSON that holds no piece of a trace.

Numbers, booleans, ids and the tool's own words are kept as they are; every fact that can quote a trace (the
summaries' lines, the commands with their paths, the launch APIs) is kept as the SHA-256 of its canonical JSON,
with the traces' directory written ``TRACES``: equal to the byte, and nothing of the trace to read back.
``python -m tests.frozen_facts`` writes tests/data/health_facts_frozen.json (taken with the code before the
checks were declared once; tests/health/test_check_declarations.py compares today's facts with it).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
FROZEN = REPO / "tests" / "data" / "health_facts_frozen.json"
# the shared traces (a rank directory read as one job) whose facts are frozen
TARGETS = (
    "a100-alexnet.json.gz",
    "b200-eager.json.gz",
    "cpu-only-rank34.json.gz",
    "dlrm-2ranks",
    "h100-bert-small.json.gz",
    "h800-deepseek-train-rank0.json.gz",
    "mi250-rocm-minitoy.json.gz",
    "mi300-bert-small.json.gz",
    "nsys-mfu_2gpu_before.sqlite",
    "trimmed-no-device-properties.json",
    "v100-df-index-resolver.json.gz",
    "v100-old-keys-gpu-metrics.json",
    "v100-resnet50-pt18-array-format.pt.trace.json.gz",
)
# the checks the file was frozen with: a check declared since adds its own facts (left out of the comparison) and its
# line to ``health_checks`` and, where it finds something, to ``health_lines`` (left out of both before they are
# digested), so a new check leaves this file as it is; one that changes an older check's facts or the triage does not
FROZEN_CHECKS = (
    "impossible-metrics", "kernels-missing", "kernels-overlap", "graph-launches", "unlinked-kernels", "durations",
    "clock-skew", "trace-size", "stacks-missing", "summary-table", "profiler-overhead", "rank-skew",
)  # fmt: skip
# facts whose strings are the tool's own vocabulary, kept as they are; any other fact holding a string is digested
VOCABULARY = frozenset(
    {
        "health_status", "health_problems", "health_playbooks", "health_next", "graph_mode", "graph_call",
        "launch_offset_trend", "rank_skew_status", "launch_apis", "mechanisms", "mechanism_counts",
        "worst_mechanism", "d_capability", "d_cause", "d_header", "non_finite_spelling",
    }
)  # fmt: skip


def _has_text(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, dict):
        return any(_has_text(v) for v in value.values())
    return isinstance(value, list) and any(_has_text(v) for v in value)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True).replace(json.dumps(str(TRACES))[1:-1], "TRACES")
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def health_facts_of(target: str) -> dict[str, Any]:
    """The facts the trace.inspect probe gives for one shared trace, digested where
    they could quote it."""
    import tempfile

    from wizard.environment import Environment
    from wizard.probes.trace_inspect import TraceInspectProbe

    with tempfile.TemporaryDirectory() as reports:  # the probe writes its report there
        facts = TraceInspectProbe().run(Environment.of(report_dir=Path(reports)), {"paths": str(TRACES / target)}).facts
    # "id (status): summary" and "mark status id[ [where]]  summary" (wizard/trace/inspection/results.py)
    facts["health_checks"] = [line for line in facts["health_checks"] if line.split(" ", 1)[0] in FROZEN_CHECKS]
    facts["health_lines"] = [line for line in facts["health_lines"] if line.split()[2] in FROZEN_CHECKS]
    return {
        name: _digest(value) if name not in VOCABULARY and _has_text(value) else value
        for name, value in sorted(facts.items())
        if name not in _NEWER_FACTS
    }


def _newer_facts() -> frozenset[str]:
    from wizard.trace.health.checks import CHECKS

    return frozenset(f.name for c in CHECKS if c.id not in FROZEN_CHECKS for f in c.facts)


_NEWER_FACTS = _newer_facts()


def main() -> int:
    frozen = {target: health_facts_of(target) for target in TARGETS}
    FROZEN.write_text(json.dumps(frozen, indent=1, sort_keys=True, allow_nan=False) + "\n")
    print(f"wrote {FROZEN} ({len(frozen)} traces)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
