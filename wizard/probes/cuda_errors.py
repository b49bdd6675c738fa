"""Reading CUDA failures out of a workload's output, leniently, across PyTorch versions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.frames import innermost_user_frame

_CUDA_ERROR = re.compile(r"CUDA error: ([^\n]+?)(?:\n|$)")
_ACCEL = re.compile(r"^(torch\.AcceleratorError|RuntimeError|torch\.cuda\.\w+Error)\s*:\s*(.*)$", re.M)
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+)$', re.M)
_ASSERT = re.compile(r"^(.*Assertion `.*` failed\.?)$", re.M)
# A record starts at the left margin; its details are indented.
_SANITIZER_RECORD = re.compile(r"^=+ (Invalid __\w+__ \w+ of size \d+ bytes?|(?:Warp|Block|Thread) assert)\s*$", re.M)
_SANITIZER_NEXT = re.compile(r"^=+ \S", re.M)
_SANITIZER_AT = re.compile(r"^=+\s+at (.+?)(?:\s+\[in (.+)\])?\s*$", re.M)
_SANITIZER_BY = re.compile(r"^=+\s+by (thread \(\d+,\d+,\d+\) in block \(\d+,\d+,\d+\))", re.M)
_SANITIZER_PY_FRAME = re.compile(r"^=+\s+Host Frame: (\S.*?) in (.+\.py):(\d+)\s*$", re.M)
_SANITIZER_API = re.compile(
    r'^=+ Program hit (cudaError\w+) \(error \d+\) due to "([^"]+)" on CUDA API call to (\w+)', re.M
)
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
    """Outermost first (a traceback's order): where the user's code launched the kernel."""
    frame = innermost_user_frame(frames, lambda f: f[0])
    return None if frame is None else f"{frame[0]}:{frame[1]} in {frame[2].strip()}"


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
    python_frame: str | None = None
    api_error: str | None = None


def parse_sanitizer(log: str) -> SanitizerReport:
    """compute-sanitizer memcheck output: the first error record, where it happened, and the count.

    Two record shapes, both seen on an H200 (compute-sanitizer 2025.3): an access record
    ("Invalid __global__ write of size 4 bytes", "at KERNEL+0x1a0 in FILE:LINE") and an
    assertion record ("Warp assert", "at __assertfail+0x19a0", "by thread (1,0,0) in block (0,0,0)"),
    each followed by host frames that end in the Python frame ("Host Frame: <module> in oob.py:4").
    """
    summary = _SANITIZER_SUMMARY.search(log)
    errors = int(summary.group(1).replace(",", "")) if summary else 0
    first = _SANITIZER_RECORD.search(log)
    location = python_frame = None
    if first:
        record_end = _SANITIZER_NEXT.search(log, first.end())
        record = log[first.end() : record_end.start() if record_end else len(log)]
        at = _SANITIZER_AT.search(record)
        if at:
            location = at.group(1) + (f" [{at.group(2)}]" if at.group(2) else "")
            by = _SANITIZER_BY.search(record)
            if by:
                location += f", {by.group(1)}"
        frames = _SANITIZER_PY_FRAME.findall(record)  # innermost first, unlike a Python traceback
        python_frame = _user_frame([(path, line, func) for func, path, line in reversed(frames)])
    api = _SANITIZER_API.search(log)
    return SanitizerReport(
        errors,
        first.group(1) if first else None,
        location,
        python_frame,
        f"{api.group(1)} ({api.group(2)}) on {api.group(3)}" if api else None,
    )


def sanitizer_summary(report: SanitizerReport) -> str:
    """One line for the evidence and the conclusion."""
    if not report.errors:
        return "no errors"
    parts = [report.first or report.api_error or "errors"]
    if report.location:
        parts.append(f"at {report.location}")
    if report.python_frame:
        parts.append(f"from {report.python_frame}")
    return " ".join(parts) + f" ({report.errors} error{'s' if report.errors != 1 else ''})"
