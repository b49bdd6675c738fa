"""Reading CUDA failures out of a workload's output, leniently, across PyTorch versions."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CUDA_ERROR = re.compile(r"CUDA error: ([^\n]+?)(?:\n|$)")
_ACCEL = re.compile(r"^(torch\.AcceleratorError|RuntimeError|torch\.cuda\.\w+Error)\s*:\s*(.*)$", re.M)
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$', re.M)
_ASSERT = re.compile(r"^(.*Assertion `.*` failed\.?)$", re.M)
_SANITIZER_INVALID = re.compile(r"^=+\s+(Invalid __\w+__ \w+ of size \d+ bytes?)\s*$", re.M)
_SANITIZER_AT = re.compile(r"^=+\s+at (.+?)(?:\s+\[in (.+)\])?\s*$", re.M)
_SANITIZER_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([\d,]+)\s+error", re.I)
_CODE_NAME = re.compile(r"Search for [`']?(cudaError\w+)")


@dataclass(slots=True)
class CudaFailure:
    message: str
    exception: str | None
    error_name: str | None
    python_frame: str | None
    device_assert: str | None
    dsa_unavailable: bool


def _user_frame(frames: list[tuple[str, str, str]]) -> str | None:
    """The innermost frame outside torch and the harness: where the user's code launched it."""
    for path, line, func in reversed(frames):
        if "/torch/" not in path and "harness.py" not in path and "runpy" not in path:
            return f"{path}:{line} in {func.strip()}"
    if frames:
        path, line, func = frames[-1]
        return f"{path}:{line} in {func.strip()}"
    return None


def find_cuda_failure(output: str) -> CudaFailure | None:
    """The first CUDA error in the output, with the Python frame that raised it."""
    match = _CUDA_ERROR.search(output)
    assertion = _ASSERT.search(output)
    if match is None and assertion is None and "c10::Error" not in output:
        return None
    message = match.group(1).strip() if match else ("device-side assert triggered" if assertion else "c10::Error")
    head = output[: match.start()] if match else output
    frames = _FRAME.findall(head) or _FRAME.findall(output)
    exception = None
    for exc in _ACCEL.finditer(output):
        exception = exc.group(1)
        break
    name = _CODE_NAME.search(output)
    return CudaFailure(
        message=message,
        exception=exception,
        error_name=name.group(1) if name else None,
        python_frame=_user_frame(frames),
        device_assert=assertion.group(1).strip() if assertion else None,
        dsa_unavailable="TORCH_USE_CUDA_DSA" in output,
    )


@dataclass(slots=True)
class SanitizerReport:
    errors: int
    first: str | None
    location: str | None


def parse_sanitizer(log: str) -> SanitizerReport:
    """compute-sanitizer memcheck output: the first Invalid block and the error count."""
    summary = _SANITIZER_SUMMARY.search(log)
    errors = int(summary.group(1).replace(",", "")) if summary else 0
    first = _SANITIZER_INVALID.search(log)
    location = None
    if first:
        at = _SANITIZER_AT.search(log, first.end())
        if at:
            location = at.group(1) + (f" [{at.group(2)}]" if at.group(2) else "")
    return SanitizerReport(errors, first.group(1) if first else None, location)
