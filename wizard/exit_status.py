"""Exit codes: stable, and the only ones the CLI uses. The ``--help`` epilog is made from
``MEANING``, and a test checks the README's table against it."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    INVALID_PLAYBOOK = 3
    BAD_ANSWERS = 4
    PROBE_FAILURE = 5
    INPUT_ERROR = 6
    OUTPUT_ERROR = 7
    OUT_OF_MEMORY = 8
    MISSING_DEPENDENCY = 9
    NOT_COMPARABLE = 10
    INTERNAL = 70  # EX_SOFTWARE
    HANGUP = 129  # 128 + SIGHUP
    INTERRUPTED = 130  # 128 + SIGINT
    QUIT = 131  # 128 + SIGQUIT
    TERMINATED = 143  # 128 + SIGTERM


MEANING: dict[ExitStatus, str] = {
    ExitStatus.OK: "`run`: a diagnosis reached, whatever its severity (a trace it cannot read is one, "
    "`trace-unreadable`: gate with `--fail-on`); `trace inspect`: no health check at `--fail-on` (default warning) "
    "or worse; `probe`: it passed, warned or skipped",
    ExitStatus.FINDINGS: "`trace inspect`: a health check at `--fail-on` or worse (impossible values, dropped "
    "kernels, ...); `probe`: it failed (found the problem); `diff`: a kernel or an op slower beyond `--threshold`; "
    "`run --fail-on SEVERITY`: the diagnosis is at least that severe",
    ExitStatus.USAGE: "usage error (bad command line, unknown playbook name, a format the command does not take: "
    "`trace fix` on an Nsight Systems export)",
    ExitStatus.INVALID_PLAYBOOK: "invalid playbook, from `run` or `validate` "
    "(every problem as `file:line:column: message`)",
    ExitStatus.BAD_ANSWERS: (
        "bad or missing answers (an answers file that does not exist is this, not 6), or a question with no terminal "
        "to ask it on"
    ),
    ExitStatus.PROBE_FAILURE: "a probe could not be run at all; `probe`: it ended in error",
    ExitStatus.INPUT_ERROR: "an input file is missing or unreadable, or not what the command reads (a JSON that is "
    "no trace, a trace given to `compare`): the message names the file, and the byte offset where there is one",
    ExitStatus.OUTPUT_ERROR: "an output cannot be written: no such directory, not writable, already there "
    "(`--force` replaces it) or an input of the run",
    ExitStatus.OUT_OF_MEMORY: "out of memory, or a worker process was killed (by the system's out-of-memory killer): "
    "try `--jobs 1` or a machine with more memory",
    ExitStatus.MISSING_DEPENDENCY: "an optional dependency the command needs is not installed (plotly for "
    "`--report FILE.html`): the message says the command that installs it where warpwizard came from",
    ExitStatus.NOT_COMPARABLE: "`diff`: the two profiles cannot be compared (other GPU counts or world sizes, "
    "different work, a side that is not whole): no result is shown; the factors say why",
    ExitStatus.INTERNAL: "internal error (`--debug` shows the traceback)",
    ExitStatus.HANGUP: "hung up (SIGHUP: the terminal closed, the ssh session dropped); the workload was stopped "
    "and the answers saved",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C); the answers given so far were saved",
    ExitStatus.QUIT: "quit (SIGQUIT); the workload was stopped and the answers saved",
    ExitStatus.TERMINATED: "terminated (SIGTERM); the workload was stopped and the answers saved",
}


def for_signal(signum: int) -> ExitStatus:
    """The status of a run stopped by signal ``signum`` (128 + its number, the shell's convention)."""
    return ExitStatus(128 + signum) if 128 + signum in ExitStatus._value2member_map_ else ExitStatus.TERMINATED


def epilog() -> str:
    """The exit codes, one line each, for ``--help``."""
    return "exit codes:\n" + "\n".join(f"  {int(s):>3}  {MEANING[s].replace('`', '')}" for s in ExitStatus)
