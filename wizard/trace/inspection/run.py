"""The inspection's run: read each trace once and run every pass over it (wizard/trace/inspection/passes.py says
which), into one ``TraceInspection`` per file and the job's ``Inspection``.

``inspect_paths`` is the library entry point the CLI (through ``wizard.api.inspect_traces``) and the probes
share; each takes ``InspectOptions`` whole, checked once by ``check_options``. Per-rank directories are
inspected in parallel processes, one trace per process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from wizard import heap
from wizard.errors import InputFileError, PluginError, UsageError
from wizard.inspect_options import DEFAULT_OPTIONS, KEEP_CHOICES, InspectOptions
from wizard.option_fields import check_fields
from wizard.progress import NO_PROGRESS, Progress, Task, reading, relayed, task
from wizard.trace.health.checker import HEALTH_PASS, job_health
from wizard.trace.health.checks import CHECK_IDS, check_selection
from wizard.trace.inspection.passes import passes_to_run
from wizard.trace.inspection.results import INLINE, Inspection, TraceInspection, name_traces
from wizard.trace.metrics.classify import METRICS_PASS
from wizard.trace.passes import PassRun, Results, TracePass
from wizard.trace.read.reader import ReaderConfig, TraceContents, iter_trace_files, read_trace, usable_cores
from wizard.trace.read.remote import UrlPath, is_url

__all__ = ["check_options", "inspect_paths", "inspect_trace"]

MAX_WRITTEN_DEPTH = 32  # how deep a pass's written result may nest (a plugin's recursion is not --json's)


def check_options(options: InspectOptions, *, spell: Callable[[str], str] = str) -> InspectOptions:
    """The options checked once, for the CLI and the library, before any work: every number against the bounds its
    declaration gives (``option_fields.check_fields``, as for every option set: a whole number, a finite real one,
    within its bounds), the launches kept, the health checks' ids (``spell`` names each as its caller knows it:
    ``--max-launches`` on the command line, ``max_launches`` in Python). Returns them with the checks resolved
    (``checks``: the ids that run, in the registry's order, or None for all; ``skip_checks`` folded in) and each
    real number a float."""
    if not isinstance(options, InspectOptions):
        raise UsageError(f"options must be an InspectOptions, not {type(options).__name__}")
    options = check_fields(options, spell=spell)
    if options.launches not in KEEP_CHOICES:
        raise UsageError(f"{spell('launches')} must be one of {', '.join(KEEP_CHOICES)}, not {options.launches!r}")
    if not isinstance(options.plots, bool):
        raise UsageError(f"{spell('plots')} must be True or False, not {type(options.plots).__name__}")
    return dataclasses.replace(options, checks=_selection(options.checks, options.skip_checks, spell), skip_checks=())


def _selection(
    checks: Iterable[str] | None, skip_checks: Iterable[str] | None, spell: Callable[[str], str]
) -> tuple[str, ...] | None:
    """The health checks asked for, or None for all; an unknown id, an id that is not a string, or a
    selection that leaves no check (``--checks ''``: a CI gate's empty variable must not pass) is a
    UsageError naming the valid ones."""
    if checks is None and not skip_checks:
        return None
    lists: dict[str, list[str] | None] = {}
    for name, given in (("checks", checks), ("skip_checks", skip_checks)):
        if isinstance(given, (str, bytes)) or not (given is None or isinstance(given, Iterable)):
            raise UsageError(f"{spell(name)} must be a list of check ids, not one {type(given).__name__}")
        items = None if given is None else list(given)
        for odd in (item for item in items or () if not isinstance(item, str)):
            raise UsageError(f"{spell(name)} must hold check ids (strings), not {type(odd).__name__} {odd!r:.60}")
        unknown = sorted(set(items or ()) - set(CHECK_IDS))
        if unknown:  # named by the option that held it: --skip-checks' typo was blamed on --checks
            raise UsageError(
                f"{spell(name)}: unknown health check {', '.join(unknown)}; the checks are {', '.join(CHECK_IDS)}"
            )
        lists[name] = items
    try:
        selected = check_selection(lists["checks"], lists["skip_checks"])
    except ValueError as exc:
        raise UsageError(f"{spell('checks')}: {exc}") from None
    if not selected:
        empty = lists["checks"] is not None and not lists["checks"]
        what = f"{spell('checks')} names no health check" if empty else f"{spell('skip_checks')} leaves no health check"
        raise UsageError(f"{what} to run; the checks are {', '.join(CHECK_IDS)}")
    return tuple(c for c in CHECK_IDS if c in selected)


def inspect_trace(
    path: str | Path | UrlPath,
    options: InspectOptions = DEFAULT_OPTIONS,
    *,
    config: ReaderConfig | None = None,
    progress: Progress = NO_PROGRESS,
    passes: Sequence[TracePass[Any]] | None = None,
    on_contents: Callable[[TraceContents], None] | None = None,
) -> TraceInspection:
    """One read of one trace, every pass over it (``passes``: those of ``passes_to_run()`` unless given), each
    result by the pass's name in ``TraceInspection.results``. ``on_contents`` is handed what was read (a run
    keeps it for the probes that read the raw contents, instead of reading the file again)."""
    started = time.perf_counter()
    options = check_options(options)  # cheap, and the same whoever checked them before
    chosen = passes_to_run() if passes is None else passes
    runs = [(one, _guarded(one, "started", partial(one.start, options))) for one in chosen]
    loaded = HEALTH_PASS not in chosen

    def feed(contents: TraceContents) -> None:  # called between blocks only while worker processes decode
        nonlocal loaded
        if not loaded:  # the parent waits on the workers: what the health checks load (numpy) is loaded now
            loaded = True
            load_health_modules()
        for one, run in runs:
            _guarded(one, "was fed", partial(_feed, run, contents))  # a run with no feed: the plugin's fault

    with reading(progress, path) as on_read:
        contents = read_trace(path, on_progress=feed, config=config, on_read=on_read)
    contents.timing["read_s"] = time.perf_counter() - started
    if HEALTH_PASS in chosen:  # it loads numpy anyway: loaded before the passes, the metrics pass sorts a
        from wizard import numpy_threads  # .pftrace's slices (they come as they close) with it: records.py

        numpy_threads.load()
    results: dict[str, object] = {}
    written: dict[str, Any] = {}
    for one, run in runs:
        heap.release(contents.bytes_read)  # the read's and the passes before's freed pages: not in this one's peak
        result = _finished(one, run, contents, Results(results, one))
        results[one.name] = result
        if one not in INLINE:  # the flagship's and the health check's fields are the report's own
            written[one.name] = _written(one, _guarded(one, "wrote its result", partial(one.write, result)))
    heap.release(contents.bytes_read)  # nor in the report's, written next
    passes_s = time.perf_counter() - started - contents.timing["read_s"]
    if on_contents is not None:
        on_contents(contents)
    report = TraceInspection.of(contents, results, written, passes_s=passes_s)
    if METRICS_PASS in chosen and report.metrics.plot is not None:  # a picture's time axis starts at the trace's start
        from wizard.trace.health.tables import window  # numpy: after the read, as the health pass imports it

        report.metrics.plot.span = window(contents)
    return report


def load_health_modules() -> None:
    """What the health checks import when they run (numpy, their tables), loaded ahead: while a big file's workers
    decode (the parent would wait anyway; at 100 MB numpy's import was an eighth of what ran after the last block,
    by cProfile), and before a directory's worker processes fork (see inspect_paths)."""
    from wizard import numpy_threads

    numpy_threads.load()
    import statistics  # noqa: F401 - the rank, step and key_averages checks' medians (lazy: a small trace's start-up)

    import numpy.ma  # noqa: F401 - np.unique's first call imports it (21 ms, in the kernels-overlap check)

    import wizard.trace.health.key_averages
    import wizard.trace.health.nesting
    import wizard.trace.health.tables  # noqa: F401


def _feed(run: PassRun[Any], contents: TraceContents) -> None:
    """``run.feed``, its lookup inside the guard: a plugin's start that returned no run is one line."""
    run.feed(contents)


def _guarded(one: TracePass[Any], doing: str, call: Callable[[], Any]) -> Any:
    """A plugin's code, run so that what it raises is one line naming it and its package (never a traceback or
    exit 70, as for a probe plugin); warpwizard's own passes and those registered in this process raise as is."""
    if not one.origin.startswith("plugin "):
        return call()
    try:
        return call()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (a third party's code: say whose, no traceback)
        raise PluginError(f"{one.who} raised {type(exc).__name__} when it {doing}: {exc}") from None


def _finished(one: TracePass[Any], run: PassRun[Any], contents: TraceContents, before: Results) -> object:
    result = _guarded(one, "finished", lambda: run.finish(contents, before))
    if not isinstance(result, one.result):
        message = f"{one.who} returned {type(result).__name__}, not its declared {one.result.__name__}"
        raise PluginError(message) if one.origin.startswith("plugin ") else TypeError(message)
    if one.origin.startswith("plugin "):  # a directory's traces come back from worker processes, pickled
        import pickle

        _guarded(one, "returned a result that cannot be sent between processes", partial(pickle.dumps, result))
    return result


def _written(one: TracePass[Any], value: Any, where: str = "", depth: int = 0) -> Any:
    """A pass's written result, checked to be JSON data (what ``--json`` and ``facts.passes`` carry)."""
    place = f"passes.{one.name}{where}"
    if depth > MAX_WRITTEN_DEPTH:
        raise PluginError(f"{one.who} wrote a result nested deeper than {MAX_WRITTEN_DEPTH} levels at {place}")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_written(one, item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise PluginError(f"{one.who} wrote a key that is not a str ({type(key).__name__}) at {place}")
        return {key: _written(one, item, f"{where}.{key}", depth + 1) for key, item in value.items()}
    raise PluginError(
        f"{one.who} wrote {type(value).__name__} at {place}: a written result is JSON data "
        "(dict, list, str, int, float, bool or None)"
    )


def inspect_paths(
    paths: list[str],
    options: InspectOptions = DEFAULT_OPTIONS,
    *,
    progress: Progress = NO_PROGRESS,
    on_contents: Callable[[TraceContents], None] | None = None,
    fingerprint: bool = False,
) -> Inspection:
    """Inspect files and per-rank directories.

    ``options.jobs`` processes: several files are read one per process (default: the cores); one big file is
    decoded by that many worker processes (default: the cores but one, none under three; else, on two cores or
    more, the scanner's thread beside the reader: ``ReaderConfig.ahead``; 1: everything in this process, on one
    core). ``progress`` is told each
    file's bytes as they are read and, for several files, how many are done. ``on_contents``: handed the
    contents when one file is inspected (several files' contents are not kept together: their memory).
    ``fingerprint``: each report's ``ends`` hashed from its read's open (``ReaderConfig.fingerprint``: the run's).
    """
    options = check_options(options)
    files = list(iter_trace_files(paths))
    if not files:
        raise InputFileError("no trace files given")
    chosen = passes_to_run()  # an installed pass that cannot load: one line now, before any file is read
    jobs = options.jobs
    if len(files) == 1:
        workers = None if jobs is None else (0 if jobs <= 1 else jobs)
        config = ReaderConfig(workers=workers, ahead=jobs != 1, fingerprint=fingerprint)
        reports = [
            inspect_trace(files[0], options, config=config, progress=progress, passes=chosen, on_contents=on_contents)
        ]
    else:
        cores = usable_cores()
        workers = min(len(files), jobs or cores, cores)
        with task(progress, "trace files", doing="inspecting", total=len(files), unit="files") as done:
            if workers <= 1:
                config = ReaderConfig(workers=0, ahead=False, fingerprint=fingerprint)  # --jobs 1, or one core
                reports = []
                for f in files:
                    reports.append(inspect_trace(f, options, config=config, progress=progress, passes=chosen))
                    done.update(len(reports))
            else:
                # What the workers import lazily (the health checks' numpy, and its ctypes) is imported here first.
                # A fork copies each module's import lock as it is: when another thread (PyTorch's validator beside
                # the inspection) was importing one of them at that instant, the workers waited for it forever.
                load_health_modules()
                from wizard.trace.read.parallel import worker_pool  # several files only: not one file's start-up

                with relayed(progress) as theirs, worker_pool(workers) as pool:  # each worker's file gets its bar
                    # each finds the passes itself; no scanner's thread: the pool has a process a core
                    config = ReaderConfig(ahead=False, fingerprint=fingerprint)
                    one = partial(inspect_trace, options=options, config=config, progress=theirs)
                    reports = list(_in_order(pool.map(one, [str(f) for f in files]), done))
    ranks = len(paths) == 1 and _is_directory(paths[0])  # one job's traces, a rank each: not unrelated files
    return Inspection(name_traces(reports), job_health(reports if ranks else reports[:1], options))


def _is_directory(name: str) -> bool:
    """A local directory, or a URL's directory or glob (wizard/trace/read/remote.py): one job's ranks."""
    if is_url(name):
        from wizard.trace.read.remote import is_directory

        return is_directory(name)
    return Path(name).is_dir()


def _in_order(results: Iterator[TraceInspection], done: Task) -> Iterator[TraceInspection]:
    """The pool's reports in file order, counting each as it comes."""
    for count, report in enumerate(results, 1):
        done.update(count)
        yield report
