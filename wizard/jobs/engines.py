"""Three ways to run the same per-rank step (``step.summarize``) over a job's traces, chosen by
``InspectOptions.engine``:

- ``none``: in this process, one trace after another;
- ``local``: in local worker processes (``--jobs N``, default the cores), as a rank directory is read today;
- ``dask``: on a Dask cluster (the optional extra ``warpwizard[dask]``): the scheduler ``--scheduler`` names (an
  address, or a scheduler file as ``dask-jobqueue`` and ``dask-scheduler --scheduler-file`` write), else the one
  Dask's own configuration names (``DASK_SCHEDULER_ADDRESS``, ``scheduler-address`` in its YAML), else a
  ``LocalCluster`` on 127.0.0.1 started for the run (``--jobs`` workers of one thread each).

Each engine hands back only ``Outcome``s (a summary, KB, or a failure): the client never holds a trace. A rank
that fails (unreadable, out of memory, its worker lost) is a ``Failure`` and the job goes on; on Dask its task is
retried ``RETRIES`` times by Dask itself (``retries=``), and a worker lost is Dask's ``allowed-failures`` rule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from wizard.errors import InputFileError, MissingDependency, OutputFileError, UsageError
from wizard.inspect_options import ENGINES, InspectOptions
from wizard.jobs.step import Failure, Outcome, one_line, summarize
from wizard.progress import NO_PROGRESS, Progress, Task, task

RETRIES = 2  # a task's retries on Dask after an error it raised (a worker lost is counted by Dask's own rule)
# What is the whole job's problem, not one rank's: raised on, never folded into a rank's failure.
JOB_ERRORS = (MissingDependency, OutputFileError, UsageError)


def run_step(
    paths: Sequence[str],
    options: InspectOptions,
    *,
    engine: str = "none",
    progress: Progress = NO_PROGRESS,
) -> list[Outcome]:
    """Every path's outcome, in the order of ``paths`` (whatever order the engine finished them in)."""
    if engine not in ENGINES:
        raise UsageError(f"--engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    step = partial(summarize, options=options, summaries=options.summaries)
    by_path: dict[str, Outcome] = {}
    with task(progress, "ranks", doing="summarising", total=len(paths), unit="files") as done:
        count = _Count(done)
        runner = {"none": _in_process, "local": _local, "dask": _dask}[engine]
        for path, outcome in runner(paths, step, options):
            by_path[path] = outcome
            count.add(outcome)
    return [by_path[p] for p in paths]


class _Count:
    """Ranks done of all, and the failures so far, for the progress line."""

    def __init__(self, done: Task) -> None:
        self.done, self.count, self.failed = done, 0, 0

    def add(self, outcome: Outcome) -> None:
        self.count += 1
        self.failed += outcome.failure is not None
        self.done.update(self.count, doing=f"summarising, {self.failed} failed" if self.failed else None)


Step = Callable[[str], Outcome]


def _in_process(paths: Sequence[str], step: Step, options: InspectOptions) -> Iterator[tuple[str, Outcome]]:
    for path in paths:
        yield path, step(path)


def _lost(path: str, exc: BaseException, kind: str = "failed") -> Outcome:
    """An engine's error about one rank as that rank's failure (a job's error is raised on)."""
    if isinstance(exc, JOB_ERRORS):
        raise exc
    if isinstance(exc, MemoryError):
        kind = "out of memory"
    elif isinstance(exc, InputFileError):
        kind = "unreadable"
    elif type(exc).__name__ in ("KilledWorker", "BrokenProcessPool"):
        kind = "worker lost"
    return Outcome(None, Failure(path, kind, one_line(exc) or type(exc).__name__))


def _local(paths: Sequence[str], step: Step, options: InspectOptions) -> Iterator[tuple[str, Outcome]]:
    """Local worker processes (the pool every rank directory is read with), one trace per task."""
    from concurrent.futures import as_completed

    from wizard.trace.read.parallel import worker_pool
    from wizard.trace.read.reader import usable_cores

    workers = max(1, min(len(paths), options.jobs or usable_cores(), usable_cores()))
    if workers <= 1:
        yield from _in_process(paths, step, options)
        return
    import wizard.trace.health.key_averages
    import wizard.trace.health.nesting
    import wizard.trace.health.tables  # noqa: F401 (imported before the fork: see inspection/run.py)

    with worker_pool(workers) as pool:
        futures = {pool.submit(step, path): path for path in paths}
        for future in as_completed(futures):
            path = futures.pop(future)
            try:
                yield path, future.result()
            except (Exception, MemoryError) as exc:  # noqa: BLE001 (a worker's error is that rank's finding)
                yield path, _lost(path, exc)


def _dask(paths: Sequence[str], step: Step, options: InspectOptions) -> Iterator[tuple[str, Outcome]]:
    """The step on a Dask cluster, each rank a task with ``retries=RETRIES``; results taken as they finish and
    released at once (the client keeps only the summaries)."""
    distributed = _distributed()
    with _client(distributed, options) as client:
        futures = client.map(
            step, list(paths), retries=RETRIES, pure=False, key=[f"rank-summary-{i}" for i in range(len(paths))]
        )
        by_key = {f.key: p for f, p in zip(futures, paths, strict=True)}
        for future in distributed.as_completed(futures, loop=client.loop):
            path = by_key.pop(future.key)
            try:
                outcome = future.result()
            except (Exception, MemoryError) as exc:  # noqa: BLE001 (a task's error after its retries)
                outcome = _lost(path, exc)
            future.release()
            yield path, outcome


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        from wizard.extras import install_command

        raise MissingDependency(f"--engine dask needs dask.distributed: {install_command('dask')}") from None
    return distributed


def scheduler_of(options: InspectOptions) -> dict[str, Any]:
    """How to reach the scheduler: ``--scheduler`` (an address, or a scheduler file: a path ending in .json),
    else Dask's own configuration (``DASK_SCHEDULER_ADDRESS``, ``scheduler-address``, ``scheduler-file``), else {}
    (a LocalCluster is started)."""
    import dask

    given = options.scheduler
    if given:
        return {"scheduler_file": given} if given.endswith(".json") else {"address": given}
    address = dask.config.get("scheduler-address", None)
    if address:
        return {"address": str(address)}
    scheduler_file = dask.config.get("scheduler-file", None)
    return {"scheduler_file": str(scheduler_file)} if scheduler_file else {}


@contextlib.contextmanager
def _client(distributed: Any, options: InspectOptions) -> Iterator[Any]:
    """A client of the named scheduler, or of a LocalCluster on 127.0.0.1 made for this run and closed after."""
    import dask

    from wizard.trace.read.reader import usable_cores

    where = scheduler_of(options)
    try:
        if where:
            timeout = dask.config.get("distributed.comm.timeouts.connect", "30s")  # Dask's own setting
            client = distributed.Client(**where, timeout=timeout, set_as_default=False)
            cluster = None
        else:
            workers = max(1, min(options.jobs or usable_cores(), usable_cores()))
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, silence_logs=50,
            )  # fmt: skip
            client = distributed.Client(cluster, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"--engine dask: cannot reach the scheduler ({one_line(exc)})") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
