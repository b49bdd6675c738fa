"""Domain errors. The CLI's single error boundary maps each class to an ExitStatus."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.formatting import plural

if TYPE_CHECKING:
    from wizard.file_ends import OpenedEnds  # the --help path imports this module: no dataclasses there


class WizardError(Exception):
    """Base of every error a user can cause; its message is one line, ready to print."""


class UsageError(WizardError):
    """The command line itself is wrong."""


class InputFileError(WizardError):
    """A file the user named cannot be read (missing, unreadable, not a trace, a trace where a report is wanted).
    ``ends``: the file as the reader's open found it, where it opened the file before finding it unreadable (the
    run's ``--from`` fingerprint takes it, so a refused trace is not opened again for that)."""

    ends: OpenedEnds | None = None


class TraceReadError(InputFileError):
    """A trace is malformed somewhere other than a truncated end; names file and byte offset."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(f"{path}: byte {offset}: {reason}")

    def __reduce__(self) -> tuple[type, tuple[str, int, str]]:
        # Raised in worker processes (per-rank directories): it must survive the trip back,
        # or the pool breaks (BrokenProcessPool, exit 70) instead of naming the file and byte.
        return (type(self), (self.path, self.offset, self.reason))


class OutputFileError(WizardError):
    """A file warpwizard was asked to write cannot be written (or would destroy an input or a file
    the user did not ask to replace)."""


class PlaybookError(WizardError):
    """A playbook failed to load; carries every problem found, each file:line:column: message."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        first = problems[0] if problems else "invalid playbook"
        more = f" (and {plural(len(problems) - 1, 'more problem')})" if len(problems) > 1 else ""
        super().__init__(first + more)

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        return (type(self), (self.problems,))


class PlaybookNotFound(WizardError):
    """No playbook by that name or path."""


class AnswersError(WizardError):
    """An answers file or an answer given on the command line is invalid or incomplete."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        return (type(self), (self.problems,))


class NoTerminalError(WizardError):
    """A question needs a person but stdin is not a terminal."""


class ProbeInfrastructureError(WizardError):
    """A probe could not be run at all (not the same as a probe that ran and failed)."""


class PluginError(ProbeInfrastructureError):
    """An installed plugin (probes or playbooks) could not load: the message names it and its package."""


class MissingDependency(WizardError, ImportError):
    """An optional library a feature needs is not installed (pandas for ``to_dataframe()``)."""


class WarpWizardWarning(UserWarning):
    """What the torch.profiler integration emits for each wrong metric it finds, and for a check it
    could not finish: a warning, never an exception, so a training run goes on."""


class Interrupted(WizardError):
    """The user pressed Ctrl-C; the answers given so far were saved to ``saved_to``."""

    word = "interrupted"

    def __init__(self, saved_to: str | None, note: str = "", resume: str | None = None) -> None:
        self.saved_to = saved_to
        self.note = note
        self.resume = resume
        how = resume or f"replay with --answers {saved_to}"
        where = f"; answers so far saved to {saved_to} ({how})" if saved_to else ""
        super().__init__(f"{self.word}{where}{note}")

    def __reduce__(self) -> tuple[type, tuple[str | None, str, str | None]]:
        return (type(self), (self.saved_to, self.note, self.resume))


SIGNAL_NAMES = {1: "SIGHUP", 3: "SIGQUIT", 15: "SIGTERM"}


def stopped_by(signum: int) -> str:
    """How a run stopped by ``signum`` says so: 'terminated (SIGHUP)'."""
    return f"terminated ({SIGNAL_NAMES.get(signum, f'signal {signum}')})"


class Terminated(Interrupted):
    """SIGTERM (a scheduler's time limit, ``kill``), SIGHUP (a closed terminal, a dropped ssh session)
    or SIGQUIT: handled like Ctrl-C, with an exit code of its own (128 + the signal's number)."""

    def __init__(self, saved_to: str | None, note: str = "", resume: str | None = None, signum: int = 15) -> None:
        self.signum = signum
        self.word = stopped_by(signum)
        super().__init__(saved_to, note, resume)

    def __reduce__(self) -> tuple[type, tuple[str | None, str, str | None, int]]:  # type: ignore[override]
        return (type(self), (self.saved_to, self.note, self.resume, self.signum))


class TerminateSignal(KeyboardInterrupt):
    """Raised by the handler of SIGTERM, SIGHUP and SIGQUIT, so the paths that stop the workload,
    remove temporary files and save the answers on Ctrl-C run for them too."""

    def __init__(self, signum: int = 15) -> None:
        self.signum = signum
        super().__init__(signum)
