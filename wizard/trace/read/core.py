"""The compiled core's binding, as the readers import it: ``wizard/compiled_core.py`` says which core is used and
why; it is a foundation module so that the JSON writer (``wizard/serialize.py``) binds the core without importing a
layer."""

from __future__ import annotations

from wizard.compiled_core import API, compiled

__all__ = ["API", "compiled"]
