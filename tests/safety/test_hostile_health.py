"""Hostile input (issue 36): the health check, chains, plugins and new probes.

Each test failed on the code before the change it covers and asserts the one right outcome: the exit
code, the line's words, the bound, nothing written or changed. Items 1, 5 and 13 of the issue are
covered where they were fixed (the fixer's time, trace-size's categories, non-finite spreads).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, RunCli, cli_env, strict_json
from tests.helpers import installed
from wizard.errors import UsageError
from wizard.testing.traces import KernelSpec, TraceBuilder

TRACES = EXAMPLES / "traces"
GRID = TRACES / "grid-overflow.json"
HEALTHY = TRACES / "healthy-small.json"


def _one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# -- 2. a 400-digit integer timestamp is a value that is not a time, never exit 70 -------------------

HUGE = "9" * 400


def _huge_ts_trace(tmp_path: Path, category: str, *, last: bool) -> Path:
    """Two healthy launches; one event of ``category`` gets a 400-digit integer ``ts`` (the last event of
    the file when ``last``: where the reader takes the trace's end time from)."""
    builder = TraceBuilder(gpu="H100")
    for _ in range(2):
        builder.add(KernelSpec("void k<float>", (4, 1, 1), (128, 1, 1), python_stack=("train.py(7): step",)))
    document = builder.document()
    events = document["traceEvents"]
    chosen = [e for e in events if e.get("cat") == category][-1 if last else 0]
    if last:
        events.remove(chosen)
        events.append(chosen)
    chosen["ts"] = "HUGE-TS"
    path = tmp_path / f"huge-{category}.json"
    path.write_text(json.dumps(document).replace('"HUGE-TS"', HUGE))
    return path


@pytest.mark.parametrize("last", [True, False], ids=["last-event", "first-of-its-kind"])
@pytest.mark.parametrize("category", ["cuda_runtime", "kernel", "cpu_op", "python_function"])
def test_a_400_digit_timestamp_is_read_not_an_internal_error(
    run_cli: RunCli, tmp_path: Path, category: str, last: bool
) -> None:
    path = _huge_ts_trace(tmp_path, category, last=last)
    result = run_cli("trace", "inspect", str(path), "--json")
    assert result.status in (0, 1), result.stderr  # a verdict (problems found or not), never 70
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    document = result.json
    assert document["reports"][0]["kernels"] == 2


def test_a_400_digit_counter_timestamp_or_value_is_skipped(tmp_path: Path) -> None:
    from wizard.trace.read.counters import counter_series
    from wizard.trace.read.reader import read_trace

    builder = TraceBuilder(gpu="H100")
    builder.add(KernelSpec("void k<float>", (4, 1, 1), (128, 1, 1)))
    builder.add_counter("SM Active", 1.0, 50.0)
    builder.add_counter("SM Active", 2.0, 60.0)
    builder.add_counter("SM Active", 3.0, 70.0)
    document = builder.document()
    counters = [e for e in document["traceEvents"] if e.get("ph") == "C"]
    counters[0]["ts"] = "HUGE-TS"
    counters[1]["args"] = {"value": "HUGE-TS"}
    path = tmp_path / "counters.json"
    path.write_text(json.dumps(document).replace('"HUGE-TS"', HUGE))
    found = counter_series(read_trace(str(path)))  # the counters the one read kept
    assert [(key, list(series.values)) for key, series in found.items()] == [((0, "SM Active"), [70.0])]


# -- 3. profiler.kineto_log reads counts as bounded ASCII numbers --------------------------------------


def test_a_5000_digit_record_count_is_not_a_count() -> None:
    from wizard.probes.kineto_log import judge, parse_kineto_log

    log = parse_kineto_log("INFO Record counts: Out-of-range = " + "9" * 5000 + ", Total = 12\n")
    assert log.record_counts == {"Total": 12}
    assert judge(log, True, 12, 0)[0].value == "pass"


def test_a_negative_record_count_is_never_a_number_of_dropped_records() -> None:
    from wizard.probes.kineto_log import judge, parse_kineto_log

    log = parse_kineto_log(
        "Record counts: Out-of-range = -5\nCUPTI dropped -4 records\nProcessed -3 GPU records\n"
        "Record counts: Out-of-range = \u0663\n"
    )
    assert (log.out_of_range, log.dropped_records, log.gpu_records, log.record_counts) == (0, 0, None, {})
    status, summary = judge(log, True, 7, 0)
    assert status.value == "pass" and "dropped" not in summary


def test_record_counts_keep_a_bounded_number_of_names() -> None:
    from wizard.probes.kineto_log import MAX_COUNT_NAMES, parse_kineto_log

    line = "Record counts: " + ", ".join(f"K{i} = 1" for i in range(500))
    assert len(parse_kineto_log(line).record_counts) == MAX_COUNT_NAMES


# -- 4. explain shows a playbook's control sequences as escapes ---------------------------------------

ESCAPES = """\
id: hostile-explain
title: "Title \\e]0;pwned\\a"
description: "Clear \\e[2J here"
version: "1"
steps:
  - id: s
    title: "Step \\e[31m red"
    explain: "Why \\e]8;;https://evil.example\\e\\\\pip install torch\\e]8;;\\e\\\\ done"
nodes:
  - id: ask
    kind: question
    step: s
    type: text
    prompt: "Prompt \\e[H\\e[2J"
    next: done
  - id: done
    kind: conclusion
    diagnosis: done
    severity: info
    summary: "Summary \\u202e reversed"
    explain: "Because \\x9b2J"
"""


def test_explain_prints_no_control_sequence_of_a_playbook(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "hostile-explain.yaml"
    path.write_text(ESCAPES)
    result = run_cli("explain", str(path))
    assert result.status == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout and "\u202e" not in result.stdout
    assert "# Title \\x1b]0;pwned\\x07" in result.stdout
    assert "Clear \\x1b[2J here" in result.stdout
    assert "Why \\x1b]8;;https://evil.example\\x1b\\pip install torch\\x1b]8;;\\x1b\\ done" in result.stdout
    assert "Prompt \\x1b[H\\x1b[2J" in result.stdout and "Summary \\u202e reversed" in result.stdout
    assert "Because \\x9b2J" in result.stdout


def test_explain_from_python_escapes_the_same_way(tmp_path: Path) -> None:
    from wizard.runs import explain_playbook, load_playbook

    path = tmp_path / "hostile-explain.yaml"
    path.write_text(ESCAPES)
    text = explain_playbook(load_playbook(str(path)))
    assert "\x1b" not in text and text.startswith("# Title \\x1b]0;pwned\\x07\n")


# -- 7. an empty selection of health checks is refused ---------------------------------------------------

ALL_CHECKS = (
    "impossible-metrics, trace-incomplete, kernels-missing, kernels-overlap, graph-launches, unlinked-kernels, "
    "durations, clock-skew, trace-size, stacks-missing, summary-table, profiler-overhead, ranks-complete, rank-skew"
)


@pytest.mark.parametrize("value", ["", ",", " , ,"])
def test_an_empty_checks_list_is_a_usage_error(run_cli: RunCli, value: str) -> None:
    result = run_cli("trace", "inspect", str(GRID), "--checks", value)
    assert result.status == 2 and result.stdout == ""
    assert _one_line_error(result.stderr) == (
        f"warpwizard: error: --checks names no health check to run; the checks are {ALL_CHECKS}"
    )


def test_skipping_every_check_is_a_usage_error(run_cli: RunCli) -> None:
    every = ALL_CHECKS.replace(" ", "")
    result = run_cli("trace", "inspect", str(GRID), "--skip-checks", every)
    assert result.status == 2 and result.stdout == ""
    assert _one_line_error(result.stderr) == (
        f"warpwizard: error: --skip-checks leaves no health check to run; the checks are {ALL_CHECKS}"
    )


def test_checks_that_leave_nothing_after_skipping_are_a_usage_error() -> None:
    from wizard.api import inspect_traces

    with pytest.raises(UsageError, match=r"^skip_checks leaves no health check to run; the checks are "):
        inspect_traces(GRID, checks=["durations"], skip_checks=["durations"], jobs=1)


# -- 16. a check id that is not a string is the documented UsageError --------------------------------------


@pytest.mark.parametrize(
    ("keyword", "value", "words"),
    [
        ("checks", [1], "checks must hold check ids (strings), not int 1"),
        ("skip_checks", [None], "skip_checks must hold check ids (strings), not NoneType None"),
        ("checks", 5, "checks must be a list of check ids, not one int"),
    ],
)
def test_a_check_id_of_the_wrong_type_is_a_usage_error(keyword: str, value: Any, words: str) -> None:
    from wizard.api import inspect_traces

    with pytest.raises(UsageError) as caught:
        inspect_traces(GRID, jobs=1, **{keyword: value})
    assert str(caught.value) == words


# -- 15. a rank is ASCII digits in a range, from a name, a trace or a report ----------------------------


def _rank_directory(tmp_path: Path, third: str, *, declared: Any = None) -> Path:
    """Ranks 0 and 1 (declared), and a third trace named ``third`` declaring ``declared`` (nothing when None)."""
    from tests.helpers import rank_trace

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    rank_trace(ranks, 0, [0, 0])
    rank_trace(ranks, 1, [30, 0])
    rank_trace(ranks, 2, [10, 50], declared=False)
    document = json.loads((ranks / "rank2.json").read_text())
    if declared is not None:
        document["distributedInfo"] = {"rank": "DECLARED", "world_size": 3}
    (ranks / "rank2.json").unlink()
    (ranks / third).write_text(json.dumps(document).replace('"DECLARED"', str(declared)))
    return ranks


@pytest.mark.parametrize(
    ("third", "declared"),
    [
        ("rank\u0663.json", None),  # ARABIC-INDIC DIGIT THREE
        ("rank\uff12.json", None),  # FULLWIDTH DIGIT TWO
        ("rank" + "7" * 200 + ".json", None),
        ("other.json", -1),
        ("other.json", 10**300),
    ],
    ids=["arabic-indic", "fullwidth", "200-digits", "declared-minus-one", "declared-10^300"],
)
def test_a_rank_that_is_not_ascii_digits_in_range_is_unknown(
    run_cli: RunCli, tmp_path: Path, third: str, declared: Any
) -> None:
    ranks = _rank_directory(tmp_path, third, declared=declared)
    result = run_cli("trace", "inspect", "--json", "--checks", "rank-skew", str(ranks))
    (skew,) = result.json["health"]
    assert (skew["check"], skew["status"], skew["ranks"]) == ("rank-skew", "not_applicable", [])
    assert skew["reason"] == (
        "the traces' ranks are unknown or repeated (no distributedInfo.rank and no rank in the file name)"
    )


def test_the_same_directory_with_an_ascii_rank_is_checked(run_cli: RunCli, tmp_path: Path) -> None:
    ranks = _rank_directory(tmp_path, "rank2.json")
    result = run_cli("trace", "inspect", "--json", "--checks", "rank-skew", str(ranks))
    (skew,) = result.json["health"]
    assert (skew["status"], skew["ranks"]) == ("info", [0, 1, 2])  # checked: a 60 µs median, under the floor


def _report_with_rank(tmp_path: Path, name: str, rank: Any, path: str = "trace.json") -> Path:
    collectives = {"starts": {"ncclDevKernel_AllReduce": [1.0, 2.0]}, "rank": "RANK"}
    document = {
        "schema": "warpwizard.trace-report/2",
        "host": {"hostname": name, "rank": "RANK"},
        "impossible": False,
        "mechanisms": {},
        "reports": [{"path": path, "collectives": collectives}],
    }
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(document).replace('"RANK"', json.dumps(rank) if rank is not None else "null"))
    return out


@pytest.mark.parametrize("rank", [-1, 10**300, True, 2.0, "3"], ids=["minus-one", "10^300", "bool", "float", "text"])
def test_a_reports_collectives_rank_out_of_range_is_no_rank(tmp_path: Path, rank: Any) -> None:
    from wizard.compare import load_report

    found = load_report(str(_report_with_rank(tmp_path, "node", rank)))
    assert (found.collectives, found.host) == (
        {},
        "trace.json",
    )  # a trace report is named by its trace (issue 44 item 6)


@pytest.mark.parametrize(
    ("path", "rank"),
    [("rank\u0663.json", None), ("rank" + "9" * 200 + ".json", None), ("rank12.json", 12)],
    ids=["arabic-indic", "200-digits", "ascii"],
)
def test_a_reports_rank_from_its_file_name_is_ascii_digits(tmp_path: Path, path: str, rank: int | None) -> None:
    from wizard.compare import load_report

    found = load_report(str(_report_with_rank(tmp_path, "node", None, path=path)))
    assert list(found.collectives) == ([] if rank is None else [rank])


# -- 18. --json prints a JSON object naming the error when the input cannot be read -----------------------


@pytest.mark.parametrize(
    ("args", "words", "code"),
    [
        (("trace", "inspect", "{missing}", "--json"), "{missing}: no such file", 6),
        (("compare", "{missing}", "--json"), "{missing}: no such report", 6),
        (("trace", "inspect", str(GRID), "--checks", "", "--json"), "--checks names no health check to run; the "
         f"checks are {ALL_CHECKS}", 2),
    ],
    ids=["trace-inspect", "compare", "usage"],
)  # fmt: skip
def test_json_output_names_the_error_and_its_exit_code(
    run_cli: RunCli, tmp_path: Path, args: tuple[str, ...], words: str, code: int
) -> None:
    missing = str(tmp_path / "missing.json")
    result = run_cli(*(a.format(missing=missing) for a in args))
    assert result.status == code
    assert strict_json(result.stdout) == {
        "schema": "warpwizard.error/1",
        "error": words.format(missing=missing),
        "exit_code": code,
        "exit": {6: "input_error", 2: "usage"}[code],
    }
    assert _one_line_error(result.stderr) == "warpwizard: error: " + words.format(missing=missing)


def test_an_output_refused_before_the_work_is_one_json_error(run_cli: RunCli, tmp_path: Path) -> None:
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    result = run_cli("probe", "trace.inspect", "--param", f"paths={HEALTHY}", "--json", "--output", str(taken))
    assert result.status == 7
    assert strict_json(result.stdout) == {
        "schema": "warpwizard.error/1",
        "error": f"{taken}: already exists; name another file, or pass --force to replace it",
        "exit_code": 7,
        "exit": "output_error",
    }
    assert taken.read_text() == "{}"


# -- 8. a plugin that calls sys.exit() at import is one line naming it, exit 5 -----------------------------


QUITS = "warpwizard: error: probe plugin 'quits' (plugin hostile-plugin 0.1.0, hostile_plugin:Probe) could not load: "


TRIAGE = EXAMPLES.parent / "playbooks" / "triage.yaml"


@pytest.mark.parametrize("args", [("list",), ("probes",), ("validate", str(TRIAGE)), ("run", "triage")])
@pytest.mark.parametrize(("code", "shown"), [("3", "3"), ("'bye'", "'bye'"), ("", "None")])
def test_a_plugin_exiting_at_import_is_one_line_and_exit_5(
    site: Path, run_cli: RunCli, args: tuple[str, ...], code: str, shown: str
) -> None:
    (site / "hostile_plugin.py").write_text(f"import sys\nsys.exit({code})\n")
    installed(site, "hostile-plugin", "[warpwizard.probes]\nquits = hostile_plugin:Probe\n")
    result = run_cli(*args, stdin="")
    assert result.status == 5
    assert _one_line_error(result.stderr) == QUITS + f"it called sys.exit({shown}) while loading"


def test_a_playbook_plugin_exiting_at_import_is_one_line_and_exit_5(site: Path, run_cli: RunCli) -> None:
    (site / "hostile_plugin.py").write_text("raise SystemExit(4)\n")
    installed(site, "hostile-plugin", "[warpwizard.playbooks]\nbooks = hostile_plugin\n")
    result = run_cli("list")
    assert result.status == 5
    assert _one_line_error(result.stderr) == (
        "warpwizard: error: playbook plugin 'books' (plugin hostile-plugin 0.1.0, hostile_plugin) could not load: "
        "it called sys.exit(4) while loading"
    )


# -- 9. a plugin probe that raises or returns the wrong type is its ERROR result, naming the plugin ------------
# (facts that break its declaration are warnings on the transcript: tests/cli/test_plugins.py)

ODD_PROBE = """\
from wizard.probes.base import FactSpec, ProbeResult, Status


class Probe:
    name = "odd.probe"
    summary = "misbehaves"
    params = ()
    facts = (FactSpec("free_gb", "float | None", "free space"),)
    runs_programs = ""

    def run(self, env, params, *, timeout=600.0):
        return {BODY}
"""


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("int('x')", "raised ValueError: invalid literal for int() with base 10: 'x'"),
        ("__import__('sys').exit(9)", "raised SystemExit: 9"),
        ("'pass'", "returned str, not a ProbeResult"),
        ("None", "returned NoneType, not a ProbeResult"),
        (
            "ProbeResult('pass', 'fine')",
            "returned a ProbeResult whose status is not a Status or whose summary is not a str",
        ),
        (
            "ProbeResult(Status.PASS, 'fine', evidence='one line')",
            "returned evidence or files that are not lists of str",
        ),
    ],
    ids=["raises", "exits", "str", "none", "status-text", "evidence-text"],
)
def test_a_misbehaving_plugin_probe_is_an_error_naming_it(site: Path, run_cli: RunCli, body: str, words: str) -> None:
    (site / "hostile_plugin.py").write_text(ODD_PROBE.replace("{BODY}", body))
    installed(site, "hostile-plugin", "[warpwizard.probes]\nodd = hostile_plugin:Probe\n")
    result = run_cli("probe", "odd.probe", "--json")
    assert result.status == 5, result.stderr  # `probe`: it ended in error; never 70
    (entry,) = result.json["entries"]
    assert (entry["status"], entry["summary"]) == ("error", f"probe plugin 'odd' (plugin hostile-plugin 0.1.0) {words}")
    assert "internal error" not in result.stderr


# -- 10, 11. a chain keeps the CLI's words; its dry run stops where the run stops -------------------------------

ENDS = """\
id: {id}
title: {title}
version: "1"
nodes:
  - id: end
    kind: conclusion
    diagnosis: done-{id}
    severity: info
    summary: "{id} done"
"""
CONTINUES = """\
    continue:
      playbook: {next}
      choices: [{next}]
"""
RUNS_ECHO = """\
id: {id}
title: Runs echo
version: "1"
nodes:
  - id: run_it
    kind: probe
    probe: command.run
    params:
      argv: ["echo", "hi"]
    next: end
  - id: end
    kind: conclusion
    diagnosis: ran
    severity: info
    summary: ran
"""


def _chain(directory: Path, ids: list[str], then: str | None = None) -> Path:
    """Playbooks that each conclude at once and continue into the next id (the last into ``then``, if any)."""
    directory.mkdir(exist_ok=True)
    for i, name in enumerate(ids):
        after = ids[i + 1] if i + 1 < len(ids) else then
        text = ENDS.format(id=name, title=name.upper()) + (CONTINUES.format(next=after) if after else "")
        (directory / f"{name}.yaml").write_text(text)
    return directory


def test_a_program_refused_in_a_continued_playbook_names_the_cli_options(run_cli: RunCli, tmp_path: Path) -> None:
    books = _chain(tmp_path / "books", ["first"], then="second")
    (books / "second.yaml").write_text(RUNS_ECHO.format(id="second"))
    result = run_cli("--playbook-dir", str(books), "run", "first", "--json")
    assert result.status == 0, result.stderr
    (entry,) = [e for e in result.json["entries"] if e["node"] == "run_it"]
    assert (entry["status"], entry["summary"]) == (
        "skip",
        "not run: argv ['echo', 'hi'] (written in the playbook); only you decide what runs on this machine: give it "
        "yourself (--workload, --python, --set) or at the prompt, or rerun with --allow-commands",
    )


def test_the_dry_run_of_a_chain_of_ten_stops_where_the_run_stops(run_cli: RunCli, tmp_path: Path) -> None:
    ids = [f"p{i}" for i in range(10)]
    books = _chain(tmp_path / "books", ids)
    line = f"{books / 'p7.yaml'}:5: conclusion 'end': a run continues through at most 8 playbooks"
    real = run_cli("--playbook-dir", str(books), "run", "p0")
    assert (real.status, _one_line_error(real.stderr)) == (3, line)
    planned = run_cli("--playbook-dir", str(books), "run", "p0", "--dry-run")
    assert (planned.status, _one_line_error(planned.stderr)) == (3, line)


def test_the_dry_run_of_a_chain_that_comes_back_stops_where_the_run_stops(run_cli: RunCli, tmp_path: Path) -> None:
    books = _chain(tmp_path / "books", ["ping", "pong"], then="ping")
    line = (
        f"{books / 'pong.yaml'}:5: conclusion 'end' continues to 'ping' again (ping -> pong -> ping); "
        "a run walks each playbook once"
    )
    real = run_cli("--playbook-dir", str(books), "run", "ping")
    assert (real.status, _one_line_error(real.stderr)) == (3, line)
    planned = run_cli("--playbook-dir", str(books), "run", "ping", "--dry-run", "--json")
    assert (planned.status, _one_line_error(planned.stderr)) == (3, line)
    assert planned.json["exit_code"] == 3


def test_the_dry_run_of_a_literal_continuation_names_it(run_cli: RunCli, tmp_path: Path) -> None:
    books = _chain(tmp_path / "books", ["one", "two"])
    planned = run_cli("--playbook-dir", str(books), "run", "one", "--dry-run", "--json")
    assert planned.status == 0, planned.stderr
    assert (planned.json["stops"], planned.json["diagnosis"]) == ("diagnosis done-two (info)", "done-two")
    assert [(s["node"], s["playbook"], s["next"]) for s in planned.json["steps"]] == [
        ("end", "one", "playbook two"),
        ("end", "two", None),
    ]


# -- 12. a playbook on the search path that shadows a shipped id says so ---------------------------------------


def _shadow(tmp_path: Path, name: str = "kernels-missing") -> Path:
    team = tmp_path / "team"
    team.mkdir()
    text = (EXAMPLES.parent / "playbooks" / f"{name}.yaml").read_text()
    (team / f"{name}.yaml").write_text(text.replace("\ntitle: ", "\ntitle: Team's ", 1))
    return team


def _shadow_line(team: Path, name: str = "kernels-missing") -> str:
    return (
        f"note: playbook {name!r} is {team / (name + '.yaml')}, which shadows the shipped playbook of that id (the "
        "search path's order: the directories given, then WARPWIZARD_PLAYBOOK_PATH, then the package's, then plugins)"
    )


def test_list_says_which_shipped_playbook_is_shadowed(run_cli: RunCli, tmp_path: Path) -> None:
    team = _shadow(tmp_path)
    result = run_cli("--playbook-dir", str(team), "list")
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[-1] == _shadow_line(team)
    assert sum("shadows" in line for line in result.stdout.splitlines()) == 1


def test_a_run_continuing_into_a_shadowed_playbook_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    team = _shadow(tmp_path)
    env = {**cli_env(WARPWIZARD_REPORT_DIR=str(tmp_path / "report")), "WARPWIZARD_PLAYBOOK_PATH": str(team)}
    result = run_cli("run", "triage", "--dry-run", "--json", env=env)
    assert result.status == 0, result.stderr
    assert result.json["schema"] == "warpwizard.plan/1"
    assert " ".join(result.stderr.split()) == _shadow_line(team)  # the one line, as the terminal wraps it


def test_a_run_of_the_shadowing_playbook_by_id_says_so_and_by_path_does_not(run_cli: RunCli, tmp_path: Path) -> None:
    team = _shadow(tmp_path)
    by_id = run_cli("--playbook-dir", str(team), "run", "kernels-missing", "--dry-run", "--json")
    assert " ".join(by_id.stderr.split()) == _shadow_line(team)
    by_path = run_cli("--playbook-dir", str(team), "run", str(team / "kernels-missing.yaml"), "--dry-run", "--json")
    assert (by_path.status, by_path.stderr) == (0, "")


def test_a_new_id_on_the_search_path_shadows_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    team = tmp_path / "team"
    _chain(team, ["ours"])
    result = run_cli("--playbook-dir", str(team), "list")
    assert result.status == 0 and "shadows" not in result.stdout


# -- 17. a program probe results chose is shown at the prompt before it runs, even with --allow-commands ------

FACTS_PICK = """\
id: facts-pick
title: Facts pick the program
version: "1"
nodes:
  - id: look
    kind: probe
    probe: trace.inspect
    params:
      paths: "{trace}"
    next: run_it
  - id: run_it
    kind: probe
    probe: command.run
    params:
      argv: ["{{{{ facts.look.worst_kernel }}}}", "--version"]
    next: end
  - id: end
    kind: conclusion
    diagnosis: done
    severity: info
    summary: done
"""
PICKED = ["void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<float> >", "--version"]


class _Person:
    """An answer source with a person at the terminal who answers ``yes`` to every program shown."""

    def __init__(self, yes: bool | None) -> None:
        from wizard.engine.answers import MappingAnswers

        self.inner = MappingAnswers({})
        self.yes = yes
        self.shown: list[tuple[str, Any, str, str]] = []

    def answer(self, question: Any, prompt: str) -> Any:
        return self.inner.answer(question, prompt)

    def confirm(self, question: Any, value: Any, what: str) -> bool:
        return False

    def confirm_program(self, node: str, value: Any, what: str, why: str) -> bool | None:
        self.shown.append((node, value, what, why))
        return self.yes


def _facts_pick(tmp_path: Path, yes: bool | None, *, allow: bool) -> tuple[Any, _Person]:
    from wizard.options import Options
    from wizard.runs import RunRequest, run_playbook

    path = tmp_path / "facts-pick.yaml"
    path.write_text(FACTS_PICK.format(trace=GRID))
    person = _Person(yes)
    transcript = run_playbook(
        str(path),
        RunRequest(options=Options(allow_commands=allow, report_dir=str(tmp_path / "report"))),
        answer_source=lambda pb, given: person,
    )
    (entry,) = [e for e in transcript.entries if e.node == "run_it"]
    return entry, person


WHY = "item 0 (the program) taken from probe results (facts.look.worst_kernel), which come from traces, transcripts "
WHY += "and other files; the rest written in the playbook"


@pytest.mark.parametrize("allow", [True, False], ids=["allow-commands", "no-allow-commands"])
def test_a_program_chosen_by_facts_and_declined_at_the_prompt_never_runs(tmp_path: Path, allow: bool) -> None:
    entry, person = _facts_pick(tmp_path, False, allow=allow)
    assert person.shown == [("run_it", PICKED, "argv", WHY)]
    assert entry.status == "skip"
    assert entry.summary.endswith("you declined it at the prompt")
    assert entry.facts["reason"] == "program declined"


def test_a_program_chosen_by_facts_runs_once_the_person_saw_it(tmp_path: Path) -> None:
    entry, person = _facts_pick(tmp_path, True, allow=True)
    assert person.shown == [("run_it", PICKED, "argv", WHY)]
    assert (entry.status, entry.summary) == ("fail", "exit code 127 (expected 0)")  # it ran: a kernel is no program


@pytest.mark.parametrize(("allow", "ran"), [(False, False), (True, True)], ids=["refused", "explicitly-allowed"])
def test_with_nobody_to_ask_a_program_chosen_by_facts_needs_allow_commands(
    tmp_path: Path, allow: bool, ran: bool
) -> None:
    entry, person = _facts_pick(tmp_path, None, allow=allow)
    assert person.shown == [("run_it", PICKED, "argv", WHY)]  # offered to the source, which had nobody to show
    assert (entry.status, entry.facts.get("reason")) == (("fail", None) if ran else ("skip", "program not allowed"))


# -- 14. cupti.env: ldconfig's cache compared, only libraries counted, a hanging --python is no pass -----------

ELF_SO = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00"  # the header of a 64-bit little-endian ET_DYN object
TORCH_LIB = "/venv/site-packages/nvidia/cuda_cupti/lib"


def _cupti(tmp_path: Path, *, ld_path: str = "", ldconfig: str = "", timed_out: bool = False) -> Any:
    """cupti.env with the real System's files (this test's tmp_path) and a runner that answers ldconfig and the
    harness; ``timed_out``: the interpreter asked for torch's directories never answers."""
    from tests.conftest import ScriptedRunner
    from wizard.environment import Environment
    from wizard.probes.cupti_env import CuptiEnvProbe
    from wizard.runner import CommandResult

    torch_dir = tmp_path / TORCH_LIB.lstrip("/")
    output = ldconfig + "\nWARPWIZARD_RESULT " + json.dumps({"ok": True, "dirs": [str(torch_dir)]}) + "\n"

    class Runner(ScriptedRunner):
        def run(self, argv: Any, *, timeout: float, **kw: Any) -> Any:
            self.timeouts = [*getattr(self, "timeouts", []), timeout]
            if timed_out and argv[0] != "/sbin/ldconfig":
                self.calls.append(list(argv))
                return CommandResult(list(argv), None, "", timeout, True)
            return super().run(argv, timeout=timeout, **kw)

    runner = Runner(output)
    env = Environment.of(
        report_dir=tmp_path / "report",
        environ={"LD_LIBRARY_PATH": ld_path} if ld_path else {},
        read_file=lambda path: None,
        runner=runner,
        which=lambda name: "/sbin/ldconfig" if name == "ldconfig" else None,
    )
    return CuptiEnvProbe().run(env, {}), runner


def _library(path: Path, data: bytes = ELF_SO) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_cupti_env_compares_the_ldconfig_cache(tmp_path: Path) -> None:
    torch = _library(tmp_path / TORCH_LIB.lstrip("/") / "libcupti.so.12")
    old = _library(tmp_path / "cuda-11.8/lib64/libcupti.so.11.8")
    new = _library(tmp_path / "cuda-12.4/lib64/libcupti.so.2024.1.1")
    ldconfig = "".join(f"\tlibcupti.so (libc6,x86-64) => {p}\n" for p in (old, new))
    result, _ = _cupti(tmp_path, ldconfig=ldconfig)
    assert (result.status.value, result.facts["cupti_duplicates"]) == ("fail", True)
    assert result.facts["cupti_versions"] == {
        "11.8": [str(old.parent)],
        "12": [str(torch.parent)],
        "2024.1.1": [str(new.parent)],
    }
    assert result.summary == (
        f"more than one libcupti can be loaded: 3 versions of libcupti are found: 11.8 in {old.parent}; "
        f"2024.1.1 in {new.parent}; 12 in {torch.parent}"  # in the order of their paths
    )


def test_cupti_env_counts_only_shared_objects(tmp_path: Path) -> None:
    import os

    torch = _library(tmp_path / TORCH_LIB.lstrip("/") / "libcupti.so.12")
    odd = tmp_path / "odd"
    odd.mkdir()
    os.mkfifo(odd / "libcupti.so")  # opened without a writer, it would hang the probe
    (odd / "libcupti.so.12").symlink_to(odd / "gone.so")  # dangling
    (odd / "libcupti.so.13").write_text("INPUT(-lcupti)\n")  # a linker script: text
    (odd / "libcupti.so.14").mkdir()
    link = tmp_path / "linked"
    link.mkdir()
    (link / "libcupti.so.12").symlink_to(torch)  # resolves to torch's own: the same library
    result, _ = _cupti(tmp_path, ld_path=f"{odd}:{link}")
    assert result.facts["cupti_on_path"] == [str(link)]
    assert result.facts["cupti_libraries"] == sorted([str(link / "libcupti.so.12"), str(torch)])
    assert result.facts["cupti_versions"] == {"12": [str(link), str(torch.parent)]}
    assert result.facts["cupti_duplicate_reasons"] == [
        f"LD_LIBRARY_PATH's {link} comes before the one torch ships in {torch.parent}"
    ]


def test_a_hanging_python_is_not_a_pass(tmp_path: Path) -> None:
    _library(tmp_path / "only/libcupti.so.12")
    result, runner = _cupti(tmp_path, ld_path=str(tmp_path / "only"), timed_out=True)
    assert result.status.value == "warn"
    python = runner.calls[0][0]
    assert result.summary == (
        f"torch's own libcupti could not be looked for: the interpreter {python} did not answer within 20 s (killed)"
    )
    assert runner.timeouts[0] == 20.0  # not the minute it waited before


# -- 6. compare and ranks.baseline: bounded memory, starts as arrays, a cap per document ----------------------


def _peak_of_loading(path: Path) -> tuple[Any, int]:
    """(the report, the peak bytes Python allocated loading it)."""
    import tracemalloc

    from wizard.compare import load_report

    tracemalloc.start()
    try:
        report = load_report(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return report, peak


def test_a_report_of_empty_objects_costs_about_its_size(tmp_path: Path) -> None:
    path = tmp_path / "empties.json"
    count = 2_000_000  # 6 MB of `{},`: json.loads built 25 bytes of objects for each byte (150 MB)
    path.write_text(
        '{"schema": "warpwizard.trace-report/2", "reports": [{"groups": [' + ",".join(["{}"] * count) + "]}]}"
    )
    report, peak = _peak_of_loading(path)
    assert (report.collectives, report.impossible) == ({}, False)
    assert peak < 2 * path.stat().st_size + (1 << 20)


def test_a_transcript_of_empty_objects_costs_about_its_size(tmp_path: Path) -> None:
    path = tmp_path / "entries.json"
    path.write_text('{"schema": "warpwizard.transcript/1", "entries": [' + ",".join(["{}"] * 2_000_000) + "]}")
    report, peak = _peak_of_loading(path)
    assert (report.impossible, report.mechanisms) == (None, [])
    assert peak < 2 * path.stat().st_size + (1 << 20)


def _collectives_report(path: Path, ranks: int, names: int, starts: int) -> Path:
    reports = [
        {
            "path": f"rank{r}.json",
            "collectives": {
                "rank": r,
                "starts": {f"nccl{n}": [r + 0.5 * i for i in range(starts)] for n in range(names)},
            },
        }
        for r in range(ranks)
    ]
    path.write_text(json.dumps({"schema": "warpwizard.trace-report/2", "reports": reports}))
    return path


def test_starts_are_kept_as_arrays_of_doubles(tmp_path: Path) -> None:
    from array import array

    report, _ = _peak_of_loading(_collectives_report(tmp_path / "r.json", 2, 2, 3))
    assert {r: {n: (type(v), v.typecode, list(v)) for n, v in s.items()} for r, s in report.collectives.items()} == {
        r: {f"nccl{n}": (array, "d", [r + 0.0, r + 0.5, r + 1.0]) for n in range(2)} for r in range(2)
    }


def test_one_document_keeps_at_most_a_million_starts(tmp_path: Path) -> None:
    from wizard.compare import MAX_DOCUMENT_STARTS

    report, _ = _peak_of_loading(_collectives_report(tmp_path / "r.json", 51, 2, 10_000))  # 1,020,000 starts
    kept = [len(v) for r in sorted(report.collectives) for v in report.collectives[r].values()]
    assert MAX_DOCUMENT_STARTS == 1_000_000 and kept == [10_000] * 100  # 50 ranks' starts: the cap
    assert report.collectives[50] == {}  # the last rank is there, with no room left for its starts


@pytest.mark.parametrize("length", [12_000, 100_000], ids=["decoded-whole", "item-by-item"])
def test_a_long_list_of_starts_keeps_its_first_ten_thousand_numbers(tmp_path: Path, length: int) -> None:
    path = tmp_path / "r.json"
    values = ["x", True, 1e400, *range(length)]  # text, a bool and an overflow are not times
    collectives = {"rank": 0, "starts": {"nccl": "VALUES"}}
    text = json.dumps({"schema": "warpwizard.trace-report/2", "reports": [{"collectives": collectives}]})
    path.write_text(
        text.replace('"VALUES"', "[" + ",".join(json.dumps(v) if v != 1e400 else "1e400" for v in values) + "]")
    )
    report, _ = _peak_of_loading(path)
    assert list(report.collectives[0]["nccl"]) == [float(i) for i in range(10_000)]


@pytest.mark.parametrize(("reply", "status"), [("n", "SKIP"), ("y", "FAIL")], ids=["declined", "confirmed"])
def test_at_a_real_terminal_a_program_chosen_by_facts_waits_for_the_person(
    tmp_path: Path, reply: str, status: str
) -> None:
    """The console script in a pseudo-terminal, with --allow-commands: the program is shown and asked about."""
    import re

    from tests.helpers import finish, spawn

    path = tmp_path / "facts-pick.yaml"
    path.write_text(FACTS_PICK.format(trace=GRID))
    child = spawn(["run", str(path), "--allow-commands", "--report-dir", str(tmp_path / "report")], tmp_path)
    child.expect("Run argv ")
    shown = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", str(child.before)).split())
    assert f"run_it: argv {PICKED!r} is {WHY}" in shown
    child.send(f"{reply}\r")
    output = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", finish(child)).split())
    assert child.exitstatus == 0
    assert f"command.run {status}" in output
    assert output.count("you declined it at the prompt") == (reply == "n")
