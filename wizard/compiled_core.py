"""Which compiled core (wizard/_core.c) the readers' Python was written against, and whether to use it.

The core is built when the package is installed: an editable install that is not rebuilt after a pull keeps the
binary of an older ``_core.c``, whose functions may take other arguments (a TypeError at import: every trace command
stopped) or do less (a count the Python no longer makes, silently missing). ``_core.c`` says its ``API`` and the
Python binds it only where that is this one; otherwise the readers run their Python twins, the same results,
slower. Raise both numbers together with every change of a compiled function's arguments or meaning."""

from __future__ import annotations

import os
from types import ModuleType

API = 12


def compiled() -> ModuleType | None:
    """``wizard._core`` where it is built, not refused (``WARPWIZARD_PURE=1``) and of this ``API``; else None."""
    if os.environ.get("WARPWIZARD_PURE", "") not in ("", "0"):
        return None
    try:
        import wizard._core as built
    except ImportError:  # no compiler where it was installed, a platform without a wheel
        return None
    return built if getattr(built, "API", None) == API else None
