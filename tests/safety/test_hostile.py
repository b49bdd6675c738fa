"""Untrusted input through the real CLI: the catalogue in tests/data/hostile, then properties.

Every case must end with its documented exit status and a one-line message (never 70, never a
traceback), within a time bound, without changing a file the user did not ask to change or
running a program the user did not ask for. The fuzz tests at the end throw generated input at
the trace reader, the playbook loader, the condition language and the answers loader.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLES, REPO, budget, run_inprocess
from wizard.exit_status import ExitStatus

HOSTILE = REPO / "tests" / "data" / "hostile"
CATALOGUE = yaml.safe_load((HOSTILE / "catalogue.yaml").read_text())["cases"]
DOCUMENTED = {int(s) for s in ExitStatus} - {int(ExitStatus.INTERNAL)}
SECONDS_PER_CASE = 30.0
MEMORY_HIGH_WATER_MB = 1500


def _huge_report() -> str:
    """A 2 MB report: 100,000 mechanism names and a 1 MB host name."""
    import json

    facts = {"mechanisms": [f"M{i}" for i in range(100_000)], "impossible": True}
    return json.dumps({"schema": "warpwizard.transcript/1", "host": {"hostname": "h" * 1_000_000},
                       "entries": [{"facts": facts}]})  # fmt: skip


# Made inputs that are one file of text: kind -> (file name, its text)
_TEXTS: dict[str, tuple[str, Callable[[], str]]] = {
    "compare-at-size": ("huge-report.json", _huge_report),
    "schema-superscript": ("report.json", lambda: '{"schema": "warpwizard.transcript/\\u00b9"}'),
    "trace-nested-deep": (
        "deep.json",
        lambda: (
            '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "args": {"x": '
            + "[" * 100_000
            + "]" * 100_000
            + "}}]}"
        ),
    ),
    "id-with-newline": (
        "newline.yaml",
        lambda: (
            'id: "pb\\n"\ntitle: t\nversion: "1"\nnodes:\n  - {id: e, kind: conclusion, diagnosis: e, summary: e}\n'
        ),
    ),
}


def _made(kind: str, tmp: Path) -> Path:
    """Inputs too big (or too specific to a test's directory) to commit."""
    if kind in _TEXTS:
        name, text = _TEXTS[kind]
        path = tmp / name
        path.write_text(text())
        return path
    if kind == "deep-expression":
        path = tmp / "deep-expression.yaml"
        when = "not " * 100_000 + "true"
        path.write_text(
            "id: deep\ntitle: t\nversion: '1'\nnodes:\n"
            f"  - {{id: d, kind: decision, branches: [{{when: '{when}', goto: e}}], default: e}}\n"
            "  - {id: e, kind: conclusion, diagnosis: e, summary: e}\n"
        )
        return path
    if kind == "deep-yaml":
        path = tmp / "deep.yaml"
        path.write_text("id: deep\ntitle: t\nversion: '1'\nnodes: " + "[" * 10_000 + "]" * 10_000 + "\n")
        return path
    if kind == "long-chain":
        path = tmp / "chain.yaml"
        lines = ["id: chain", "title: t", "version: '1'", "nodes:"]
        lines += [f"  - {{id: n{i}, kind: question, prompt: q, next: n{i + 1}}}" for i in range(20_000)]
        lines.append("  - {id: n20000, kind: conclusion, diagnosis: end, summary: end}")
        path.write_text("\n".join(lines) + "\n")
        return path
    if kind == "big-integer":
        path = tmp / "big-integer.yaml"
        path.write_text(
            "id: big\ntitle: t\nversion: '1'\nnodes:\n"
            f"  - {{id: e, kind: conclusion, diagnosis: e, summary: '{{{{ {'9' * 5000} }}}}'}}\n"
        )
        return path
    if kind == "big-number-answers":
        path = tmp / "answers.yaml"
        path.write_text("have: " + "9" * 5000 + "\n")
        return path
    if kind == "big-number-json":
        path = tmp / "answers.json"
        path.write_text('{"have": ' + "9" * 5000 + "}\n")
        return path
    if kind == "big-number-playbook":
        path = tmp / "playbook.yaml"
        path.write_text("id: x\ntitle: t\nversion: " + "9" * 5000 + "\nnodes: []\n")
        return path
    if kind == "existing-file":
        path = tmp / "mine.md"
        path.write_text("my own notes\n")
        return path
    if kind == "answers-copy":
        path = tmp / "answers.yaml"
        path.write_text(f"# my comments\nhave: trace\ntrace_path: {EXAMPLES / 'traces' / 'grid-overflow.json'}\n")
        return path
    if kind == "hard-link":
        source = tmp / "trace.json"
        source.write_bytes((EXAMPLES / "traces" / "grid-overflow.json").read_bytes())
        link = tmp / "link.json"
        os.link(source, link)
        return link
    raise AssertionError(f"unknown input to make: {kind}")


def _snapshot(tmp: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp)): p.read_bytes() for p in tmp.rglob("*") if p.is_file() and "report" not in p.parts}


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: c["name"])
def test_catalogue(case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    made = _made(case["make"], tmp_path) if "make" in case else None
    names = {"data": str(HOSTILE), "examples": str(EXAMPLES), "tmp": str(tmp_path), "made": str(made)}
    args = [arg.format(**names) for arg in case["args"]]
    before = _snapshot(tmp_path)
    started = time.monotonic()
    result = run_inprocess(*args)
    elapsed = time.monotonic() - started
    assert result.status == case["rc"], (result.status, result.stderr[-2000:])
    assert elapsed < budget(SECONDS_PER_CASE)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if "stderr" in case:
        assert case["stderr"] in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # one line
    if "stdout" in case:
        assert case["stdout"] in result.stdout, result.stdout[-3000:]
    assert "\x1b" not in result.stdout + result.stderr  # escape sequences are shown, never sent
    for name in case.get("absent", []):
        assert not (tmp_path / name).exists(), f"{name}: a program ran that the user did not ask for"
    if result.status != 0:
        assert _snapshot(tmp_path) == before  # a refused run changed nothing
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_mb < MEMORY_HIGH_WATER_MB


# -- generated input ------------------------------------------------------------------------

FUZZ = settings(
    max_examples=int(os.environ.get("WARPWIZARD_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _bounded(args: list[str], tmp: Path) -> None:
    started = time.monotonic()
    result = run_inprocess(*args)
    assert time.monotonic() - started < budget(10.0)
    assert result.status in DOCUMENTED, result.stderr
    assert "Traceback" not in result.stderr
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 < MEMORY_HIGH_WATER_MB


_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
_json = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
_trace_keys = st.sampled_from(
    ["cat", "name", "ph", "pid", "tid", "ts", "dur", "args", "grid", "block", "blocks per SM", "warps per SM"]
)


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), _json.map(lambda v: repr(v).encode())))
def test_fuzz_trace_reader_bytes(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.json"
    path.write_bytes(data)
    _bounded(["trace", "inspect", "--json", str(path)], tmp_path)


@FUZZ
@given(
    events=st.lists(
        st.dictionaries(_trace_keys, st.one_of(_json, st.sampled_from(["kernel", "cpu_op", "cuda_runtime"]))),
        max_size=8,
    ),
    props=st.lists(st.dictionaries(st.sampled_from(["id", "numSms", "name", "computeMajor"]), _json), max_size=2),
)
def test_fuzz_trace_reader_events(events: list[Any], props: list[Any], tmp_path: Path) -> None:
    import json

    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps({"deviceProperties": props, "traceEvents": events}))
    _bounded(["trace", "inspect", str(path)], tmp_path)


@FUZZ
@given(text=st.one_of(st.text(max_size=300), _json.map(lambda v: yaml.safe_dump({"id": "x", "nodes": v}))))
def test_fuzz_playbook_loader(text: str, tmp_path: Path) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    _bounded(["validate", str(path)], tmp_path)


@FUZZ
@given(expression=st.text(alphabet="abcdefnotrusw.'\"()[]+-*/%<>=!0123456789 ,:{}", max_size=80))
def test_fuzz_condition_language(expression: str) -> None:
    from wizard.playbook.conditions import ExpressionError, parse

    try:
        parsed = parse(expression)
    except ExpressionError:
        return
    started = time.monotonic()
    scope = {"answers": {"a": "x" * 50, "n": 3}, "facts": {"f": {"x": [1, 2]}}, "status": {"f": "pass"}}
    parsed.evaluate(scope)  # evaluate, not truth(): truth() would hide an exception
    assert time.monotonic() - started < budget(1.0)


@FUZZ
@given(text=st.one_of(st.text(max_size=300), _json.map(yaml.safe_dump)))
def test_fuzz_answers_loader(text: str, tmp_path: Path) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    _bounded(["run", "negative-warps-per-sm", "--answers", str(path), "--report-dir", str(tmp_path / "r")], tmp_path)
