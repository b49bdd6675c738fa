"""Runs inside the engineer's own interpreter (``--python``), so it imports nothing from
warpwizard: probes execute this file by path. Each mode prints one JSON line prefixed
with ``WARPWIZARD_RESULT `` that the probe parses; everything else is the workload's own
output.

Modes:
  env                      torch / CUDA / cuDNN / Kineto versions and device properties
  profile OUT -- ARGV...   run a script under torch.profiler, export a Chrome trace
  legacy OUT -- ARGV...    run it under the legacy autograd profiler (no Kineto)
  run -- ARGV...           run it plainly (CUDA_LAUNCH_BLOCKING is set by the caller)
  overhead N -- ARGV...    time it N times plainly and N times under torch.profiler (after a warm-up run)
  validate TRACE           this torch's own trace checker (torch.profiler._trace_validator, 2.12+)
  libdirs                  where this torch keeps its shared libraries (torch/lib, nvidia/*/lib), without importing it
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from typing import Any

MARK = "WARPWIZARD_RESULT "


def emit(data: dict[str, Any]) -> None:
    sys.stdout.flush()
    print(MARK + json.dumps(data, default=str), flush=True)


def _torch() -> Any:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means "no torch here"
        emit({"ok": False, "error": f"cannot import torch: {exc}"})
        sys.exit(3)
    return torch


def env_info() -> dict[str, Any]:
    torch = _torch()
    info: dict[str, Any] = {
        "torch_version": torch.__version__,
        "cuda_version": getattr(torch.version, "cuda", None),
        "hip_version": getattr(torch.version, "hip", None),
        "cuda_available": bool(torch.cuda.is_available()),
        "python": sys.version.split()[0],
        "executable": sys.executable,
    }
    try:
        info["cudnn_version"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        info["cudnn_version"] = None
    try:
        info["kineto_available"] = bool(torch.profiler.kineto_available())
    except Exception:  # noqa: BLE001
        info["kineto_available"] = None
    devices = []
    if info["cuda_available"]:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            devices.append(
                {
                    "index": i,
                    "name": p.name,
                    "compute_capability": f"{p.major}.{p.minor}",
                    "multi_processor_count": p.multi_processor_count,
                    "max_threads_per_multi_processor": getattr(p, "max_threads_per_multi_processor", None),
                    "regs_per_multiprocessor": getattr(p, "regs_per_multiprocessor", None),
                    "shared_memory_per_block_optin": getattr(p, "shared_memory_per_block_optin", None),
                    "total_memory": p.total_memory,
                }
            )
    info["devices"] = devices
    return info


def _cuda_available() -> bool | None:
    """After the workload: it has usually imported torch already, so asking costs nothing."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken one: unknown
        return None


FAILURE: list[str] = []  # the workload's own last words, when it failed (reported in the result)


def _run_script(argv: list[str]) -> int:
    """Run ``python SCRIPT ARGS``, ``-m MODULE ARGS`` or ``-c CODE ARGS`` in this process; return its exit code."""
    sys.argv = list(argv)
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            if code:
                FAILURE.append(f"SystemExit: {code}")
            return code or 0
        print(code, file=sys.stderr)  # what Python itself does with sys.exit("message")
        FAILURE.append(str(code))
        return 1
    except BaseException as exc:  # noqa: BLE001 - the workload's failure is data, not ours
        traceback.print_exc()
        FAILURE.append(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}")
        return 1
    return 0


def _write_atomically(out: str, write: Any) -> None:
    """``write(tmp_path)`` then rename: a crash never leaves half a file under the real name."""
    tmp = f"{out}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _profile_once(torch: Any, out: str, argv: list[str], legacy: bool, cuda: bool) -> int:
    if legacy:
        kwargs: dict[str, Any] = {"use_kineto": False}
        if cuda:
            kwargs["use_device"] = "cuda"
        with torch.autograd.profiler.profile(**kwargs) as prof:
            code = _run_script(argv)
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40)

        def write_table(path: str) -> None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(table)

        _write_atomically(out, write_table)
        return code
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True, with_stack=True) as prof:
        code = _run_script(argv)
    if cuda:
        torch.cuda.synchronize()
    _write_atomically(out, prof.export_chrome_trace)
    return code


def profile(out: str, argv: list[str], legacy: bool) -> None:
    torch = _torch()
    cuda = bool(torch.cuda.is_available())
    result: dict[str, Any] = {
        "output": out,
        "cuda_available": cuda,
        "torch_version": torch.__version__,
        "profiler": "legacy" if legacy else "torch.profiler",
    }
    try:
        code = _profile_once(torch, out, argv, legacy, cuda)
    except BaseException as exc:  # noqa: BLE001 - seen on an H200: a device-side assert makes the profiler's stop raise
        traceback.print_exc()
        first_line = (str(exc).splitlines() or [""])[0]
        result.update(ok=False, exit_code=1, profiler_error=f"{type(exc).__name__}: {first_line}")
        emit(result)
        # The profiler never stopped: Python's own shutdown would abort in its tracer (a fatal error, exit -6).
        sys.stderr.flush()
        os._exit(1)
    emit({**result, "ok": code == 0, "exit_code": code, "failure": FAILURE[-1] if FAILURE else None})


def overhead(runs: int, argv: list[str]) -> None:
    """The workload run ``runs`` times plain and ``runs`` times under torch.profiler, interleaved after an
    untimed warm-up run of each kind (imports, CUDA context, caches; Kineto's start), each timed from start to
    end with the device synchronised; nothing is exported (an export follows the step)."""
    import time

    torch = _torch()
    cuda = bool(torch.cuda.is_available())
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def timed(profiled: bool) -> tuple[int, float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        if profiled:
            with torch.profiler.profile(activities=activities):
                code = _run_script(argv)
                if cuda:
                    torch.cuda.synchronize()
        else:
            code = _run_script(argv)
            if cuda:
                torch.cuda.synchronize()
        return code, time.perf_counter() - start, time.process_time() - cpu

    times: dict[str, list[float]] = {"plain_s": [], "profiled_s": [], "plain_cpu_s": [], "profiled_cpu_s": []}
    code, _, _ = timed(False)
    if code == 0:
        code, _, _ = timed(True)  # the first session also starts Kineto (and CUPTI): a one-time cost, not the step's
    for _ in range(runs if code == 0 else 0):
        for kind, under in (("plain", False), ("profiled", True)):
            code, wall, cpu = timed(under)
            if code:
                break
            times[f"{kind}_s"].append(wall)
            times[f"{kind}_cpu_s"].append(cpu)
        if code:
            break
    failure = FAILURE[-1] if FAILURE else None
    emit(
        {
            "ok": code == 0,
            "exit_code": code,
            "cuda_available": cuda,
            "failure": failure,
            "torch_version": torch.__version__,
            **times,
        }
    )


def validate(trace: str) -> None:
    """Run this interpreter's torch.profiler._trace_validator on a trace. The module needs only the
    standard library, so it is loaded from torch's directory without importing torch (a second, not
    ten); a torch whose checker needs more is imported the usual way."""
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        emit({"ok": True, "available": False, "reason": "torch is not installed in this interpreter"})
        return
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = None
    path = os.path.join(next(iter(spec.submodule_search_locations)), "profiler", "_trace_validator.py")
    if not os.path.isfile(path):
        emit({"ok": True, "available": False, "torch": version, "reason": "this torch has no trace validator"})
        return
    loaded = "standalone"
    try:
        module_spec = importlib.util.spec_from_file_location("_warpwizard_trace_validator", path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module  # its dataclasses look their module up there
        module_spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - it needs torch after all
        sys.modules.pop("_warpwizard_trace_validator", None)
        from torch.profiler import _trace_validator as module  # type: ignore[no-redef]

        loaded = "with torch"
    try:
        passed, violations = module.validate_trace(trace)
    except Exception as exc:  # noqa: BLE001 - the checker itself failed on this file: that is the finding
        first = (str(exc).splitlines() or [""])[0][:300]
        emit({"ok": True, "available": True, "torch": version, "error": f"{type(exc).__name__}: {first}"})
        return
    found = [{"rule": str(v.rule_name)[:80], "message": str(v.message)[:300]} for v in violations[:50]]
    emit(
        {
            "ok": True,
            "available": True,
            "torch": version,
            "passed": bool(passed),
            "violations": found,
            "violations_total": len(violations),
            "loaded": loaded,
        }
    )


def lib_dirs() -> dict[str, Any]:
    """The directories this interpreter's torch loads CUDA libraries from (its own lib/ and the nvidia-*
    wheels beside it), found without importing torch: CUPTI is looked for there."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {"ok": True, "torch_dir": None, "dirs": []}
    torch_dir = next(iter(spec.submodule_search_locations))
    dirs = [os.path.join(torch_dir, "lib")]
    nvidia = os.path.join(os.path.dirname(torch_dir), "nvidia")
    if os.path.isdir(nvidia):
        dirs += [os.path.join(nvidia, d, "lib") for d in sorted(os.listdir(nvidia))]
    return {"ok": True, "torch_dir": torch_dir, "dirs": [d for d in dirs if os.path.isdir(d)]}


def main(args: list[str]) -> None:
    if not args:
        print(__doc__)
        sys.exit(2)
    mode = args[0]
    rest = args[args.index("--") + 1 :] if "--" in args else []
    if mode == "env":
        emit({"ok": True, **env_info()})
    elif mode in ("profile", "legacy"):
        profile(args[1], rest, legacy=mode == "legacy")
    elif mode == "libdirs":
        emit(lib_dirs())
    elif mode == "validate" and len(args) == 2:
        validate(args[1])
    elif mode == "overhead" and len(args) > 1 and args[1].isdigit():
        overhead(int(args[1]), rest)
    elif mode == "run":
        code = _run_script(rest)
        failure = FAILURE[-1] if FAILURE else None
        emit({"ok": code == 0, "exit_code": code, "cuda_available": _cuda_available(), "failure": failure})
        sys.exit(code)
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
