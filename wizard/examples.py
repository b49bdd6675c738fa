"""The shipped examples, for a pip-installed user with nothing to try yet.

``warpwizard examples`` lists them (from ``examples/manifest.yaml``: the trace's planted
mechanism and the diagnosis it must reach); ``warpwizard examples NAME`` copies one out (its
trace, its answers file pointing at the copy, and a workload script where it has one) into a
directory the user names, never over a file that exists. The examples are the repository's
``examples/``, shipped in the wheel as ``wizard/examples``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.errors import OutputFileError, UsageError


def examples_dir() -> Path:
    """Inside the installed package, or the checkout's examples/ in development."""
    inside = Path(__file__).resolve().parent / "examples"
    return inside if inside.is_dir() else Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    diagnosis: str
    planted: str
    answers: Path
    playbook: str  # the playbook it runs (examples/manifest.yaml names one per example)


def list_examples() -> list[Example]:
    import yaml

    root = examples_dir()
    manifest = yaml.safe_load((root / "manifest.yaml").read_text(encoding="utf-8"))
    return [
        Example(
            e["name"],
            e["diagnosis"],
            " ".join(str(e.get("planted", "")).split()),
            root / "answers" / Path(e["answers"]).name,
            str(e.get("playbook") or manifest["playbook"]),
        )
        for e in manifest["examples"]
    ]


def _example(name: str) -> Example:
    found = {e.name: e for e in list_examples()}
    if name not in found:
        raise UsageError(f"no example {name!r}; the examples: {', '.join(found)}")
    return found[name]


def copy_example(name: str, destination: str | os.PathLike[str]) -> list[Path]:
    """Copy example ``name`` into ``destination`` (created; files already there are never replaced):
    the answers file, and the trace or workload script it names, with its paths pointing at the copies."""
    import yaml

    from wizard.outputs import write_bytes, write_text

    example = _example(name)
    answers: dict[str, Any] = yaml.safe_load(example.answers.read_text(encoding="utf-8")) or {}
    target = Path(destination)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFileError(f"{target}: cannot create the directory ({exc.strerror or exc})") from None
    written: list[Path] = []
    for key in ("trace_path", "baseline_path"):  # a trace, or a rank directory of them
        trace = answers.get(key)
        if not isinstance(trace, str):
            continue
        source = (example.answers.parent / trace).resolve()
        if source.is_dir():
            (target / source.name).mkdir(exist_ok=True)
            for item in sorted(source.iterdir()):
                written.append(write_bytes(target / source.name / item.name, item.read_bytes(), what="example trace"))
        else:
            written.append(write_bytes(target / source.name, source.read_bytes(), what="example trace"))
        answers[key] = source.name  # relative to the answers file, which sits beside it
    command = answers.get("workload_cmd")
    if isinstance(command, str) and command.startswith("python examples/workloads/"):
        script = examples_dir() / "workloads" / command.split()[1].rsplit("/", 1)[-1]
        copied = write_bytes(target / script.name, script.read_bytes(), what="example workload")
        written.append(copied)
        answers["workload_cmd"] = f"python {copied.resolve()}"
    header = f"# warpwizard example {name}: expected diagnosis {example.diagnosis}\n# {example.planted}\n"
    text = header + yaml.safe_dump(answers, sort_keys=False, allow_unicode=True)
    written.append(write_text(target / "answers.yaml", text, what="example answers"))
    return written
