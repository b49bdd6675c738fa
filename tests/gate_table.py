"""docs/health.md's gate table: what `trace inspect` decides under the default `--fail-on warning` on every trace in
../shared/traces and on the planted cases of issue 45, with the action for each exit 1 and, for each finding that
passes, what it says of itself.

A gate is trusted when it fails on what a user must act on and passes what nobody can act on. The table is written
from a run, never by hand: `python -m tests.gate_table --write` rewrites it between its markers, and
tests/health/test_gate_table.py holds the page to a fresh run (so a change of any verdict shows there first).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import REPO, TRACES, run_inprocess, strict_json
from wizard.testing.traces import KernelSpec, TraceBuilder

DOC = REPO / "docs" / "health.md"
BEGIN = (
    "<!-- gate-table: written by `python -m tests.gate_table --write` from a run; tests/health/test_gate_table.py -->"
)
END = "<!-- /gate-table -->"
SKIPPED_SUFFIXES = (".ncu-rep", ".md", ".tsv")  # Nsight Compute reports are no traces; the folder's own notes
SUMMARY_CHARS = 220


# -- the inputs ------------------------------------------------------------------------------------------------


def shared_inputs() -> list[tuple[str, Path]]:
    """Every trace and rank directory in ../shared/traces, and each trace of its pairs, by its name there."""
    found: list[tuple[str, Path]] = []
    for path in sorted(TRACES.iterdir()):
        if path.name in {"ncu", "pairs"} or path.name.endswith(SKIPPED_SUFFIXES):
            continue
        found.append((path.name, path))
    for pair in sorted((TRACES / "pairs").iterdir()):
        for path in sorted(pair.iterdir()):
            if not path.name.endswith(SKIPPED_SUFFIXES):
                found.append((f"pairs/{pair.name}/{path.name}", path))
    return found


def _collective_rank(rank: int, world: int, waits: list[float], *, steps: int | None = None) -> TraceBuilder:
    """One rank's trace: its collectives after the given waits (µs), and distributedInfo as torch writes it."""
    b = TraceBuilder()
    b.set_metadata("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": world})
    for wait in waits[:steps]:
        b.wait(wait)
        b.add(KernelSpec("ncclDevKernel_AllReduce_Sum_f32_RING_LL", (4, 1, 1), (512, 1, 1)))
    return b


def _ranks(directory: Path, ranks: list[tuple[int, int, list[float]]], *, cut: dict[int, int] | None = None) -> Path:
    """A rank directory: (rank, world size, waits) per file; ``cut``: rank -> the byte its file is cut at."""
    directory.mkdir()
    for index, (rank, world, waits) in enumerate(ranks):
        builder = _collective_rank(rank, world, waits)
        at = (cut or {}).get(index)
        builder.write(directory / f"rank{index}.json", truncate_at=at)
    return directory


EVEN = [0.0, 0.0, 0.0, 0.0]  # every rank's collectives at the same times


def _cut_trace(root: Path) -> Path:
    b = TraceBuilder()
    for _ in range(60):
        b.add(KernelSpec("gemm_kernel", (64, 8, 1), (256, 1, 1)))
    whole = b.text()
    return b.write(root / "cut.json", truncate_at=int(len(whole.encode()) * 0.6))


def _noise(root: Path) -> Path:
    path = root / "noise.json"
    path.write_bytes(b'{"traceEvents": [' + b"xqzjwkvhd 1234 " * 300)  # letters: the reader took them as a cut
    return path


def _gpu_without_gpu_events(root: Path) -> Path:
    b = TraceBuilder()
    for _ in range(5):
        b.add(KernelSpec("gemm_kernel", (64, 8, 1), (256, 1, 1), kernel=False))
    return b.write(root / "gpu-no-gpu-events.json")


def _gpu_listed_no_gpu_work(root: Path) -> Path:
    """A GPU in deviceProperties, CPU ops, and nothing of the GPU: CUPTI failed to start (S1 in trace-problems)."""
    b = TraceBuilder()
    for _ in range(5):
        b.add_cpu_op("aten::mm")
    return b.write(root / "gpu-listed-no-gpu-work.json")


def _no_events(root: Path) -> Path:
    """A trace that parses and holds not one event: nothing checked must not pass a gate (a newcomer's walk)."""
    path = root / "no-events.json"
    path.write_text('{"traceEvents": []}')
    return path


def _missing_rank(root: Path) -> Path:
    return _ranks(root / "missing-rank", [(r, 8, EVEN) for r in range(8) if r != 5])


def _duplicated_ranks(root: Path) -> Path:
    return _ranks(root / "duplicated-ranks", [(1, 8, EVEN) for _ in range(8)])


def _foreign_rank(root: Path) -> Path:
    return _ranks(root / "foreign-rank", [(r, 4, EVEN) for r in range(4)] + [(2, 8, EVEN)])


def _straggler_beside_cut_rank(root: Path) -> Path:
    """Rank 5 is 3 ms late from the third collective on; rank 3's file ends before that collective."""
    ranks = [(r, 8, [0.0, 0.0, 3000.0, 0.0] if r == 5 else EVEN) for r in range(8)]
    whole = _collective_rank(3, 8, EVEN).text()
    return _ranks(root / "straggler-and-cut-rank", ranks, cut={3: len(whole.encode()) * 2 // 5})


PLANTED: dict[str, Callable[[Path], Path]] = {
    "planted: a trace cut at 60%": _cut_trace,
    'planted: noise after `{"traceEvents": [`': _noise,
    "planted: launches and deviceProperties, no GPU event": _gpu_without_gpu_events,
    "planted: deviceProperties and CPU ops, no launch, no GPU event": _gpu_listed_no_gpu_work,
    'planted: `{"traceEvents": []}`, not one event': _no_events,
    "planted: 7 of 8 ranks (rank 5 missing)": _missing_rank,
    "planted: 8 files that all say rank 1": _duplicated_ranks,
    "planted: a rank of another job (world size 8 among 4)": _foreign_rank,
    "planted: rank 5 3 ms late, rank 3 cut short": _straggler_beside_cut_rank,
}


def planted_inputs(root: Path) -> list[tuple[str, Path]]:
    return [(name, make(root)) for name, make in PLANTED.items()]


# -- one row -------------------------------------------------------------------------------------------------


def _findings(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check that is not ok or not applicable: each trace's, then the job's."""
    checks = [c for report in document.get("reports", []) for c in report.get("health", [])]
    checks += document.get("health", [])
    return [c for c in checks if c["status"] not in {"ok", "not_applicable"}]


def _cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def row(name: str, path: Path) -> str:
    """What the gate says of one input: its exit status, then each finding (worst first) with what to do."""
    result = run_inprocess("trace", "inspect", "--json", "--jobs", "1", str(path))
    if result.returncode not in {0, 1}:
        return f"| {name} | {result.returncode} | the read refused it: {_cell(result.stderr.strip())} | |"
    order = {"error": 0, "warning": 1, "info": 2}
    found = sorted(_findings(strict_json(result.stdout)), key=lambda c: order.get(c["status"], 3))
    seen: set[tuple[str, str, str]] = set()
    lines, actions = [], []
    for check in found:
        key = (check["check"], check["status"], check["summary"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"`{check['check']}` {check['status']}: {_cell(check['summary'])}")
        if check["status"] in {"warning", "error"}:
            actions.append(f"`warpwizard run {check['playbook']}`")
    what = "<br>".join(lines) or "every check ok or not applicable"
    action = ", ".join(dict.fromkeys(actions)) or "none: passes"
    return f"| {name} | {result.returncode} | {what} | {action} |"


def table(planted_root: Path) -> str:
    rows = [row(name, path) for name, path in shared_inputs() + planted_inputs(planted_root)]
    head = "| input | exit | findings (worst first; ok and not applicable left out) | action |\n|---|---|---|---|"
    return "\n".join([BEGIN, "", head, *rows, "", END])


def current() -> str:
    """The table as the page holds it now."""
    text = DOC.read_text()
    return text[text.index(BEGIN) : text.index(END) + len(END)]


def fresh() -> str:
    root = Path(tempfile.mkdtemp(prefix="gate-table-"))
    try:
        return table(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    made = fresh()
    if argv[1:] == ["--write"]:
        text = DOC.read_text()
        DOC.write_text(text[: text.index(BEGIN)] + made + text[text.index(END) + len(END) :])
        return 0
    print(made)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
