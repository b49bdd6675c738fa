"""What a playbook run is asked (``RunRequest``), declared once: ``warpwizard run``'s options are built from its
fields' metadata (wizard/cli/parser.py), ``wizard.run_playbook`` takes it whole, and a field's name is the word the
library's messages use for it (``sets=``; the CLI's ``spell`` says ``--set``). A new run option is one field here
and its use. A light module, as ``inspect_options.py`` is: it names no layer, so the command line reads it without
loading the run."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.errors import UsageError
from wizard.option_fields import check_fields, option, shared
from wizard.options import Options
from wizard.schemas import TRANSCRIPT

FAIL_ON = ("warning", "error")  # --fail-on: the diagnosis's severities that fail a CI job


@dataclass(frozen=True)
class RunRequest:
    """What the caller asks of one run of a playbook, for ``run_playbook`` (and ``plan_playbook``) to read.

    Each field with command-line metadata is a ``warpwizard run`` option; ``options`` (what probes may do: its own
    fields are ``run``'s probe options) and ``playbook_dirs`` (the global ``--playbook-dir``) are declared where
    they belong. ``json_out``, ``teach`` and ``fail_on`` say how the command line shows and judges the run: the
    library leaves them to its caller. ``answers``: a mapping of question id to value, or a YAML/JSON answers file
    (its relative paths taken from where it is); ``sets`` (``ID=VALUE``) win over a file's."""

    answers: Mapping[str, Any] | str | os.PathLike[str] | None = field(
        default=None, metadata=option("answers (YAML/JSON, '-' for stdin): no prompts", metavar="FILE")
    )
    sets: Sequence[str] = field(
        default=(),
        metadata=option("answer one question", flag="--set", metavar="QUESTION=VALUE", kind=list),
    )
    defaults: bool = field(
        default=False, metadata=option("take each unanswered question's default (no prompts)", kind=bool)
    )
    record: str | os.PathLike[str] | None = field(
        default=None, metadata=option("write the answers given, to replay with --answers", metavar="FILE")
    )
    json_out: bool = field(
        default=False,
        metadata=option(f"print the transcript as JSON (schema {TRANSCRIPT})", flag="--json", kind=bool),
    )
    report: str | os.PathLike[str] | None = field(default=None, metadata=shared("report"))
    force: bool = field(
        default=False, metadata=option("replace --report and --record files that exist", kind=bool)
    )
    teach: bool = field(default=False, metadata=option("explain every step and node as you go", kind=bool))
    resume: bool = field(
        default=False,
        metadata=option(
            "continue the last interrupted session of this playbook (saved on Ctrl-C, SIGTERM, SIGHUP)",
            kind=bool,
        ),
    )
    from_node: str | None = field(
        default=None,
        metadata=option(
            "rerun from NODE, reusing the earlier probes' results of the --json transcript given as --answers",
            flag="--from",
            metavar="NODE",
            group="start",
        ),
    )
    from_step: int | None = field(
        default=None,
        metadata=option("like --from, from the first node of step N", metavar="N", kind=int, group="start"),
    )
    dry_run: bool = field(
        default=False,
        metadata=option(
            "print the path the answers take, every probe and program it would run; run nothing", kind=bool
        ),
    )
    fail_on: str | None = field(
        default=None,
        metadata=option(
            "exit 1 when the diagnosis is at least this severe: warning or error (for CI)",
            metavar="SEVERITY",
            choices=FAIL_ON,
        ),
    )
    options: Options = field(default_factory=Options)
    playbook_dirs: Sequence[str] = ()

    @classmethod
    def parsed(cls, args: Any, *, options: Options, playbook_dirs: Sequence[str]) -> RunRequest:
        """The request a parsed ``run`` command line holds (its options are the command-line fields)."""
        given = {spec.name: getattr(args, spec.name) for spec in command_line_fields()}
        return cls(**{**given, "sets": tuple(given["sets"])}, options=options, playbook_dirs=tuple(playbook_dirs))


def command_line_fields() -> tuple[dataclasses.Field[Any], ...]:
    """The fields ``warpwizard run`` takes as options, in declaration order (its ``--help`` order)."""
    return tuple(spec for spec in dataclasses.fields(RunRequest) if spec.metadata)


def flag_of(name: str) -> str:
    """The flag a field of RunRequest or Options is on the command line: ``--set`` for ``sets``, ``--from`` for
    ``from_node``, else the name with dashes. What the CLI passes as the library's ``spell``."""
    for spec in (*dataclasses.fields(RunRequest), *dataclasses.fields(Options)):
        if spec.name == name and spec.metadata.get("flag"):
            return str(spec.metadata["flag"])
    return "--" + name.replace("_", "-")


def check_request(request: object, spell: Callable[[str], str] = str) -> RunRequest:
    """The request checked before anything is read: a RunRequest, each field within its declaration (its choices,
    a whole number where it takes one), by the one check every option set has (``option_fields.check_fields``);
    one line naming the field as the caller knows it (``spell``)."""
    if not isinstance(request, RunRequest):
        raise UsageError(f"request must be a RunRequest, not {type(request).__name__}")
    return check_fields(request, spell=spell)
