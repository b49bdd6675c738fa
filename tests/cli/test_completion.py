"""Shell completion in real shells (bash, zsh, fish at a pseudo-terminal): playbook ids, probe
names, node ids for --from, and paths wherever a path is taken. shtab's script alone completed
none of these and turned off filename completion for the positionals."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.conftest import HANG_GUARD_S, REPO, RunCli, cli_command
from tests.helpers import matched

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals need a POSIX system")

CASES = [
    ("warpwizard run neg", "negative-warps-per-sm"),
    ("warpwizard trace inspect examples/traces/grid-ov", "grid-overflow.json"),
    ("warpwizard run --from custom_k", "custom_kernel"),
    ("warpwizard probe trace.in", "trace.inspect"),
    ("warpwizard validate examples/playbooks/torch-sees", "torch-sees-no-gpu.yaml"),
]

# How each shell loads the script, as docs/shell-completion.md tells a user to (from a file here).
LOADERS = {
    "bash": (["--norc", "--noprofile", "-i"], "PS1='$ '; source {script}"),
    "fish": (["--no-config", "-i"], "function fish_prompt; echo -n '$ '; end; source {script}"),
    "zsh": (["-f", "-i"], "PS1='$ '; unsetopt beep; autoload -U compinit; compinit -u; eval \"$(cat {script})\""),
    # the file way: the script named _warpwizard in a directory on $fpath before compinit
    "zsh-fpath": (
        ["-f", "-i"],
        "PS1='$ '; unsetopt beep; mkdir -p {dir}/zfunc && cp {script} {dir}/zfunc/_warpwizard; "
        "fpath=({dir}/zfunc $fpath); autoload -U compinit; compinit -u",
    ),
}
# zsh turns its line editor off on a dumb terminal (Tab then inserts a tab): the earlier hang.
TERMS = {"zsh": "xterm", "zsh-fpath": "xterm"}


def _script(shell: str, tmp_path: Path, run_cli: RunCli) -> Path:
    script = tmp_path / f"warpwizard.{shell}"
    generated = run_cli("completion", shell)
    assert generated.returncode == 0, generated.stderr
    script.write_text(generated.stdout)
    return script


def test_zsh_registers_the_completion_and_its_name_functions(tmp_path: Path, run_cli: RunCli) -> None:
    """zsh loads the script as docs/shell-completion.md says (compinit, then eval) and registers it
    (test_completion_in_a_real_shell completes every case in it)."""
    program = shutil.which("zsh")
    if program is None:
        pytest.skip("zsh is not installed (apt-get install -y zsh; .ci/run installs it)")
    script = _script("zsh", tmp_path, run_cli)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path))
    probe = (
        f'autoload -U compinit; compinit -u; eval "$(cat {script})"; '
        "print -r -- ${_comps[warpwizard]}; "
        "whence -w _warpwizard_names_playbooks_files _warpwizard_names_probes"
    )
    done = subprocess.run(
        [program, "-f", "-c", probe], env=env, cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "_shtab_warpwizard",
        "_warpwizard_names_playbooks_files: function",
        "_warpwizard_names_probes: function",
    ]


@pytest.mark.parametrize("way", sorted(LOADERS))
def test_completion_in_a_real_shell(way: str, tmp_path: Path, run_cli: RunCli) -> None:
    shell = way.split("-", maxsplit=1)[0]
    program = shutil.which(shell)
    if program is None:
        pytest.skip(f"{shell} is not installed (apt-get install -y {shell}; .ci/run installs it)")
    script = _script(shell, tmp_path, run_cli)
    bin_dir = str(Path(sys.executable).parent)  # the installed console script, as a user's PATH has it
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path))
    env["TERM"] = TERMS.get(way, "dumb")
    env.pop("WARPWIZARD_PLAYBOOK_PATH", None)
    argv, setup = LOADERS[way]
    child = pexpect.spawn(
        program, argv, cwd=str(REPO), env=env, encoding="utf-8", timeout=HANG_GUARD_S, dimensions=(40, 200)
    )
    try:
        child.sendline(setup.format(script=script, dir=tmp_path) + "; echo LOADED''OK")
        child.expect("LOADEDOK")
        for typed, completed in CASES:
            child.send(typed + "\t")
            child.expect(completed)  # only a completion writes the rest of the name
            # Drop the line with a key (Ctrl-U), not Ctrl-C: a signal overtakes keys still queued, and zsh
            # then ate the next line's first letter. A marker says the shell is back at its prompt.
            child.send("\x15")
            child.sendline("echo NEXT''CASE")
            child.expect("NEXTCASE")
    finally:
        child.close(force=True)


def test_the_names_the_scripts_ask_for(run_cli: RunCli) -> None:
    playbooks = run_cli("--playbook-dir", "examples/playbooks", "completion", "--names", "playbooks").stdout.split()
    # Every playbook on that search path, read here from the files' own ``id:`` lines (a shipped playbook added
    # since is offered without editing this test), sorted, each once; the triage and the flagship among them.
    files = [*(REPO / "playbooks").glob("*.yaml"), *(REPO / "examples" / "playbooks").glob("*.yaml")]
    ids = [re.search(r"^id: (\S+)$", f.read_text(encoding="utf-8"), re.M) for f in files]
    assert all(ids) and playbooks == sorted({m.group(1) for m in ids if m})
    assert {"triage", "negative-warps-per-sm", "torch-sees-no-gpu"} <= set(playbooks)
    assert "trace.inspect" in run_cli("completion", "--names", "probes").stdout.split()
    nodes = run_cli("completion", "--names", "nodes").stdout.split()
    assert {"custom_kernel", "inspect", "have"} <= set(nodes)
    assert "grid-overflow" in run_cli("completion", "--names", "examples").stdout.split()
    bare = run_cli("completion")
    assert bare.returncode == 2 and "name a shell: bash, zsh, fish, tcsh or powershell" in bare.stderr


def test_fish_completes_from_with_the_nodes_of_the_playbook_on_the_line_only(tmp_path: Path, run_cli: RunCli) -> None:
    """Issue 37.7 in fish: bash and zsh offered the playbook's nodes for ``--from``, fish every playbook's (139
    names for rank-skew's 19). A real interactive fish, asked what it would complete (``complete -C``) and then
    at a Tab."""
    from wizard.runs import load_playbook

    program = shutil.which("fish")
    if program is None:
        pytest.skip("fish is not installed (apt-get install -y fish; .ci/run installs it)")
    script = _script("fish", tmp_path, run_cli)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path), TERM="dumb")
    env.pop("WARPWIZARD_PLAYBOOK_PATH", None)
    argv, setup = LOADERS["fish"]
    child = pexpect.spawn(
        program, argv, cwd=str(REPO), env=env, encoding="utf-8", timeout=HANG_GUARD_S, dimensions=(40, 200)
    )

    def offered(line: str) -> list[str]:
        names = f"complete -C '{line}' | string replace -r '\\t.*' ''"  # a name, then a tab and its help
        child.sendline(f"set got ({names}); echo LIST''BEGIN $got LIST''END")
        child.expect(r"LISTBEGIN (.*?) ?LISTEND")
        return sorted(matched(child).split())

    try:
        child.sendline(setup.format(script=script, dir=tmp_path) + "; echo LOADED''OK")
        child.expect("LOADEDOK")
        assert offered("warpwizard run rank-skew --from ") == sorted(load_playbook("rank-skew").nodes)
        assert offered("warpwizard run rank-skew --from custom_k") == []  # the flagship's node, not this one's
        assert offered("warpwizard run --teach negative-warps-per-sm --from custom_k") == ["custom_kernel"]
        child.send("warpwizard run rank-skew --from straggl\t")
        child.expect("straggler")  # a Tab writes the rest of the name
    finally:
        child.close(force=True)


# What each line names as --from's playbook. Issue 44 item 13: zsh asked for every playbook's nodes (139): shtab's
# subcommand dispatch restarts `words` at `run`, and the walk started after it. In every shell an option's value
# (`--answers t.json`, bash's split `--set a=b`) was taken for the playbook.
FROM_LINES = [
    "warpwizard run rank-skew --from ",
    "warpwizard run --answers t.json rank-skew --from ",
    "warpwizard run --teach --set have=trace --answers t.json rank-skew --from ",
    "warpwizard run --from=have rank-skew --from ",
]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_from_asks_for_the_nodes_of_the_playbook_on_the_line_in_every_shell(
    shell: str, tmp_path: Path, run_cli: RunCli
) -> None:
    """A real shell at a Tab: the ``warpwizard`` it runs to complete is a wrapper on PATH that records its
    arguments and runs the real one, so what each shell asked for is read back, not guessed."""
    program = shutil.which(shell)
    if program is None:
        pytest.skip(f"{shell} is not installed (apt-get install -y {shell}; .ci/run installs it)")
    script = _script(shell, tmp_path, run_cli)
    log, wrapper = tmp_path / "asked.log", tmp_path / "bin" / "warpwizard"
    wrapper.parent.mkdir()
    real = " ".join(f"'{part}'" for part in cli_command())
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, PATH=f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path))
    env["TERM"] = TERMS.get(shell, "dumb")
    env.pop("WARPWIZARD_PLAYBOOK_PATH", None)
    argv, setup = LOADERS[shell]
    child = pexpect.spawn(
        program, argv, cwd=str(REPO), env=env, encoding="utf-8", timeout=HANG_GUARD_S, dimensions=(40, 200)
    )
    try:
        child.sendline(setup.format(script=script, dir=tmp_path) + "; echo LOADED''OK")
        child.expect("LOADEDOK")
        for line in FROM_LINES:
            log.write_text("")
            child.send(line + "\t")
            deadline = time.monotonic() + HANG_GUARD_S
            while "completion --names nodes" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            child.send("\x15")
            child.sendline("echo NEXT''CASE")
            child.expect("NEXTCASE")
            asked = [a for a in log.read_text().splitlines() if a.startswith("completion --names nodes")]
            assert asked[:1] == ["completion --names nodes --playbook rank-skew"], (shell, line, asked)
    finally:
        child.close(force=True)
