"""Which Python frame is the user's: one rule for tracebacks, sanitizer reports and trace stacks.

A kernel is launched from deep inside torch; the frame worth showing is the innermost one
outside torch, warpwizard's harness and the interpreter's own machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

_MACHINERY = ("harness.py", "runpy", "<built-in", "<frozen")


def is_user_path(path: str) -> bool:
    p = path.replace("\\", "/")
    if p.startswith("torch/") or "/torch/" in p:
        return False
    return not any(part in p for part in _MACHINERY)


def innermost_user_frame(frames: Sequence[T], path_of: Callable[[T], str]) -> T | None:
    """``frames`` outermost first; the innermost user frame, else the innermost frame, else None."""
    for frame in reversed(frames):
        if is_user_path(path_of(frame)):
            return frame
    return frames[-1] if frames else None


def trace_frame_path(frame: str) -> str:
    """Kineto writes Python frames as 'path/to/file.py(LINE): function'."""
    return frame.split("(", 1)[0]
