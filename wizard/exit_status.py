"""Exit codes: stable, documented in README.md, and the only ones the CLI uses."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0  # diagnosis reached; or no impossible value found
    FINDINGS = 1  # trace inspect / validate: impossible values found, or playbooks invalid
    USAGE = 2  # bad command line
    INVALID_PLAYBOOK = 3  # the playbook failed to load
    BAD_ANSWERS = 4  # answers file or --set invalid or incomplete, or a prompt with no terminal
    PROBE_FAILURE = 5  # a probe could not be run at all
    INPUT_ERROR = 6  # a file the user named is missing or unreadable (trace, report)
    INTERNAL = 70  # a bug in warpwizard (EX_SOFTWARE); --debug shows the traceback
    INTERRUPTED = 130  # Ctrl-C; answers so far were saved
