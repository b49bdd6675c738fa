"""The run's inspections of trace files, as the probes and the run's report take them: each file read once.

``Environment.inspections`` (wizard/environment.py) keeps them on typed shelves by typed keys; this module
declares the shelves (``INSPECTION``: an ``Inspection`` by its ``InspectionKey``; ``CONTENTS``: the one file's
``TraceContents`` that ``metrics.sanity`` reads, by the file's identity) and makes an inspection the first time
a run asks for one. A run writing an HTML page makes it with ``plots=True`` (``RunInspections.plots``), so the
page draws it without reading the files again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from wizard.environment import Environment, RunInspections, Shelf, file_identity
from wizard.errors import InputFileError
from wizard.file_ends import FileIdentity
from wizard.inspect_options import InspectOptions
from wizard.progress import NO_PROGRESS, Progress
from wizard.trace.inspection.results import Inspection
from wizard.trace.inspection.run import inspect_paths
from wizard.trace.read.collector import TraceContents
from wizard.trace.read.reader import ReaderConfig, iter_trace_files, read_trace


@dataclass(frozen=True, slots=True)
class InspectionKey:
    """Which inspection: the files as given (their names are in the outputs), their identities now, whether they
    are one job's rank directory (which the inspection's job health reads) and whether it gathered what a page
    draws."""

    files: tuple[str, ...]
    identities: tuple[FileIdentity, ...]
    ranks: bool
    plots: bool


INSPECTION: Shelf[InspectionKey, Inspection] = Shelf("inspection", Inspection)
# One file's contents, by the file's identity: kept while the run may still need them (released after the walk).
CONTENTS: Shelf[FileIdentity, TraceContents] = Shelf("contents", TraceContents)


def _key(paths: Sequence[str], plots: bool, *, ranks: bool | None = None) -> InspectionKey | None:
    """The files as given (their names are in the outputs), their identities, whether they are one job's
    rank directory (which the inspection's job health reads) and whether the inspection gathered what a page
    draws; None when a file is not regular."""
    try:
        files = [str(f) for f in iter_trace_files(list(paths))]
    except InputFileError:
        return None  # the inspection says why, in its own words
    identities = RunInspections.identities(files)
    if identities is None:
        return None
    if ranks is None:
        ranks = len(paths) == 1 and _is_dir(paths[0])
    return InspectionKey(tuple(files), identities, ranks, plots)


def _is_dir(path: str) -> bool:
    from pathlib import Path

    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def inspection(
    env: Environment,
    paths: Sequence[str],
    jobs: int | None = None,
    *,
    progress: Progress = NO_PROGRESS,
    keep_contents: bool = False,
) -> Inspection:
    """The run's inspection of ``paths``: the one made before if the files are unchanged, else a new one,
    kept (``keep_contents``: with a single file's contents, for the run's trace, which ``metrics.sanity``
    reads; a probe's own small traces keep none). Raises InputFileError as ``inspect_paths`` does."""
    store = env.inspections
    key = _key(paths, store.plots)
    found = store.find(INSPECTION, key) if key is not None else None
    if found is not None:
        return found
    read: list[TraceContents] = []
    on_contents = read.append if keep_contents else None
    with _ends_of_a_refused_file(store):
        made = inspect_paths(
            list(paths),
            InspectOptions(jobs=jobs, plots=store.plots),
            progress=progress,
            on_contents=on_contents,
            fingerprint=True,
        )
    for report in made.reports:  # each file's ends as its read found them: the engine's --from fingerprint
        if report.ends is not None:
            store.keep_ends(report.ends)
    if key is not None and _key(paths, store.plots) == key:  # not rewritten while it was read
        store.keep(INSPECTION, key, made)
        for contents in read:
            if (file := file_identity(contents.path)) is not None:
                store.keep(CONTENTS, file, contents)
    return made


def contents(env: Environment, path: str) -> TraceContents:
    """One file's contents: those the run's inspection read, else a read of its own (not kept: a probe that
    reads contents alone does not hold a large trace for the rest of the run). Raises InputFileError."""
    file = file_identity(path)
    found = env.inspections.find(CONTENTS, file) if file is not None else None
    if found is not None:
        return found
    with _ends_of_a_refused_file(env.inspections):
        read = read_trace(path, config=ReaderConfig(fingerprint=True))
    if read.ends is not None:
        env.inspections.keep_ends(read.ends)
    return read


@contextmanager
def _ends_of_a_refused_file(store: RunInspections) -> Iterator[None]:
    """A file the reader refused still fingerprints: its one open found its ends (``InputFileError.ends``), kept
    for the engine's --from fingerprint before the error goes on."""
    try:
        yield
    except InputFileError as exc:
        if exc.ends is not None:
            store.keep_ends(exc.ends)
        raise


def page_inspection(store: RunInspections, files: Sequence[str]) -> Inspection | None:
    """The run's inspection of exactly these files (the report's page draws it), or None when the run has
    none of them as they are now (a file rewritten since, or a transcript rendered after its run)."""
    for ranks in (True, False):
        key = _key(files, True, ranks=ranks)
        found = store.find(INSPECTION, key) if key is not None else None
        if found is not None:
            return found
    return None
