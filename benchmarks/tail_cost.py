"""What ``trace inspect`` does after the last block (every pass's ``finish``, as ``--jobs 1`` runs it), apart from
the read: the contents read once and pickled, then inspected again from the pickle, for callgrind's instruction
counts of the tail alone (a ``none`` run, stopping before the inspection, is the part to subtract).

    python benchmarks/tail_cost.py dump TRACE CONTENTS.pkl   # read once (one process), pickle the contents
    python benchmarks/tail_cost.py run  TRACE CONTENTS.pkl   # load, import what the tail needs, inspect: CPU printed
    python benchmarks/tail_cost.py none TRACE CONTENTS.pkl   # the same, stopping before the inspection

A pickle is read back by the tree that wrote it (the classes' fields may differ between trees).
"""

from __future__ import annotations

import pickle
import sys
import time


def main() -> None:
    mode, trace, path = sys.argv[1:4]
    if mode == "dump":
        from wizard.trace.read.reader import ReaderConfig, read_trace

        contents = read_trace(trace, config=ReaderConfig(workers=0))
        with open(path, "wb") as fh:
            pickle.dump(contents, fh, protocol=5)
        return
    with open(path, "rb") as fh:
        contents = pickle.load(fh)
    from wizard.trace.inspection import run

    run.load_health_modules()
    setattr(run, "read_trace", lambda *_, **__: contents)  # noqa: B010 - the read replaced by the pickle
    import wizard.trace.health.checks
    import wizard.trace.metrics.classify
    import wizard.trace.profile.summary  # noqa: F401

    if mode == "none":
        return
    started = time.process_time()
    run.inspect_trace(trace)
    sys.stderr.write(f"tail CPU {time.process_time() - started:.3f} s\n")


if __name__ == "__main__":
    main()
