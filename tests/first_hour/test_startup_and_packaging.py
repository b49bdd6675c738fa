"""The CLI starts without heavy imports, and a built wheel works in a fresh virtual environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import hatch_build
from tests.conftest import EXAMPLES, REPO

HEAVY = ("torch", "rich", "questionary", "prompt_toolkit", "msgspec", "pynvml", "yaml", "plotly")
# What --help no longer loads (issue 34: at most 5x a bare `python -c pass`): dataclasses imports inspect (ast,
# dis, tokenize), a third of --help's instructions under callgrind; the rest is what a run needs and help does
# not (benchmarks/startup.py measures the time, docs/performance.md has it).
LAZY = ("dataclasses", "inspect", "pathlib", "subprocess", "datetime", "json", "wizard.cli.run", "wizard.options")


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\nfrom wizard.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-h"], ["--debug", "--help"]])
def test_help_builds_only_the_list_of_commands(argv: list[str]) -> None:
    """The parser builds the command on the line only; help has none, so nothing a run needs is loaded."""
    code = (
        f"import sys\nfrom wizard.cli.app import main\nmain({argv!r})\n"
        f"print(sorted(m for m in {LAZY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["trace", "inspect", "x.json"], "trace"),
        (["--playbook-dir", "run", "list"], "list"),  # the option's value is not the command
        (["--playbook", "run", "list"], "list"),  # nor an abbreviation's (argparse takes --playbook)
        (["--p", "run", "list"], "list"),  # the shortest: no other top-level option starts --p
        (["--playbook-dir=run", "list"], "list"),
        (["--no-color"], "run"),  # no command: the triage, which is `run triage`
        ([], "run"),
        (["--help", "run"], None),
        (["run", "--help"], "run"),
        (["--", "run"], "run"),
    ],
)
def test_the_command_on_the_line(argv: list[str], command: str | None) -> None:
    from wizard.cli.parser import command_of

    assert command_of(argv) == command


def test_a_command_parses_the_same_built_alone_or_with_every_other() -> None:
    """What ``build_parser(command_of(argv))`` parses is what the whole grammar parses."""
    from wizard.cli.parser import build_parser, command_of

    for argv in (
        ["trace", "inspect", "a.json", "--json", "--sms", "80", "--checks", "durations"],
        ["run", "triage", "--answers", "a.yaml", "--teach", "--workload", "python x.py"],
        ["--no-color", "probe", "env.collect", "--json"],
        ["compare", "a.json", "b.json"],
    ):
        assert vars(build_parser(command_of(argv)).parse_args(argv)) == vars(build_parser().parse_args(argv)), argv


def test_trace_inspect_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom wizard.cli.app import main\n"
        f"main(['trace', 'inspect', {str(EXAMPLES / 'traces' / 'grid-overflow.json')!r}])\n"
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_finds_its_playbooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a PYTHONPATH naming a checkout (as a developer's shell or a worktree run sets) would put that checkout's wizard
    # ahead of the installed wheel's in every process below: the test is of the wheel alone
    monkeypatch.delenv("PYTHONPATH", raising=False)
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    wheel = next(dist.glob("warpwizard-*.whl"))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "wizard/playbooks/negative-warps-per-sm.yaml" in names
    assert "wizard/playbooks/fragments/trace-start.yaml" in names  # the health playbooks' `uses: trace-start`
    assert "wizard/playbook/playbook.schema.json" in names
    assert "wizard/py.typed" in names  # type checkers read the API's annotations
    assert "wizard/report/vendor/plotly-basic.min.js.gz" in names  # the HTML report's plotly.js (issue 37.8)
    assert {"wizard/examples/manifest.yaml", "wizard/examples/traces/grid-overflow.json"} <= set(names)
    # the compiled core (hatch_build.py) where the compiler Python was built with is here: one stable-ABI binary, the
    # wheel tagged for every CPython from 3.10 on; its C source stays out of the wheel
    command = hatch_build.compile_command(Path("wizard/_core.c"), Path("unused.so"))
    compiler = command is not None and shutil.which(command[0]) is not None
    assert ("wizard/_core.abi3.so" in names) is compiler and "wizard/_core.c" not in names
    assert wheel.name.endswith(f"-cp310-abi3-{hatch_build.platform_tag()}.whl" if compiler else "-py3-none-any.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    # Dependencies come from this interpreter's site-packages (no network in tests); the wheel's own
    # copy of wizard is first on the path, so nothing here can come from the checkout.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run(
        [str(python), "-c", "import wizard; print(wizard.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert where.startswith(str(venv))
    compiled = subprocess.run(
        [str(python), "-c", "from wizard.trace.read import protobuf; print(protobuf.COMPILED)"],
        capture_output=True, text=True, cwd=tmp_path, check=True, env={"PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    assert compiled.strip() == str(compiler)
    listed = subprocess.run(
        [str(venv / "bin" / "warpwizard"), "--no-color", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert listed.returncode == 0 and "negative-warps-p" in listed.stdout and "package" in listed.stdout
    checked = subprocess.run(
        [str(venv / "bin" / "warpwizard"), "validate", "rank-skew"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert checked.returncode == 0 and "rank-skew.yaml: ok (20 nodes, 3 steps)" in checked.stdout, checked.stderr
    ran = subprocess.run(
        [
            str(venv / "bin" / "warpwizard"),
            "run",
            "negative-warps-per-sm",
            "--json",
            "--set",
            "have=trace",
            "--set",
            f"trace_path={EXAMPLES / 'traces' / 'grid-overflow.json'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert ran.returncode == 0 and '"profiler-bug-grid-overflow"' in ran.stdout
    # A pip-installed user has something to try: copy an example out of the wheel, run it.
    copied = subprocess.run(
        [str(venv / "bin" / "warpwizard"), "examples", "old-sm-count", "--to", "try"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    tried = subprocess.run(
        [str(venv / "bin" / "warpwizard"), "run", "negative-warps-per-sm", "--answers", "try/answers.yaml", "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert tried.returncode == 0 and '"profiler-bug-old-sm-count"' in tried.stdout, tried.stderr
    from_python = subprocess.run(
        [
            str(python),
            "-c",
            "import sys, wizard; print(wizard.inspect_traces(sys.argv[1]).mechanisms)",
            str(EXAMPLES / "traces" / "grid-overflow.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert from_python.stdout == "{'F': 1, 'E': 1, 'A': 1}\n", from_python.stderr


def test_python_dash_m_wizard() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "wizard", "--version"], capture_output=True, text=True, timeout=60, cwd=REPO, check=False
    )
    assert result.returncode == 0 and result.stdout.startswith("warpwizard ")


def test_gpu_check_script_parses() -> None:
    """It runs only on a GPU machine; here it must at least be valid bash."""
    result = subprocess.run(
        ["bash", "-n", str(REPO / "scripts" / "gpu-check.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_cli_s_stdout_name_is_the_outputs_own() -> None:
    """app.py spells '-' itself so that start-up loads no pathlib; it must be the one rule's (the review)."""
    from wizard.cli import app
    from wizard.outputs import STDOUT

    assert app.STDOUT == STDOUT
