"""What Python 3.10 spells differently: warpwizard supports CPython 3.10 and later (pyproject's requires-python), and
scripts/build-wheels runs it there."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # typing gained NotRequired in 3.11 (PEP 655); rich already needs typing_extensions on 3.10
    from typing_extensions import NotRequired

__all__ = ["NotRequired"]
