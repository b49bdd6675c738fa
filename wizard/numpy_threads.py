"""numpy for warpwizard's own command, loaded with OpenBLAS's thread pool at one thread (issue 48's start-up).

The OpenBLAS inside numpy's wheels starts a thread per core when numpy is imported, and each spins a while waiting
for work; warpwizard does no linear algebra, so that is all they do. The console script (wizard/cli/app.py, the
one place that changes this process's environment) hands ``use`` its loader: where no other Python thread runs and
the user set no ``OPENBLAS_NUM_THREADS``, numpy is imported with that variable at 1, and the variable is removed as
soon as numpy is loaded, so no program warpwizard starts inherits it. Measured on this project's 2-core machine:
``trace inspect --json`` on a small trace took 0.91x the CPU and 0.88x the wall (docs/performance.md); a machine
with more cores starts more threads. A program that imports warpwizard as a library keeps numpy's own default
(its linear algebra is its own), and so does a user's setting.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

_LOADER: list[Callable[[], None]] = []  # the console script's, once it has said this process is its own


def use(loader: Callable[[], None]) -> None:
    """How this process loads numpy from now on (the console script's: wizard.cli.app)."""
    _LOADER[:] = [loader]


def load() -> None:
    """Import numpy, once: by the console script's loader where it gave one, else as Python does."""
    if "numpy" in sys.modules:
        return
    if _LOADER:
        _LOADER[0]()
    else:
        import numpy  # noqa: F401
