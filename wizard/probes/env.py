"""``env``: what software and hardware this machine has, like torch.utils.collect_env.

A missing piece is "could not collect", never a failure: no driver, no NVML, a CPU-only
torch are facts for the playbook to branch on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.probes.common import run_harness

PROFILER_TOOLS = ("ncu", "nsys", "compute-sanitizer")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# (fact, NVML function, extra arguments): each asked on its own, so one unsupported call costs one fact
_GPU_CALLS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("name", "nvmlDeviceGetName", ()),
    ("uuid", "nvmlDeviceGetUUID", ()),
    ("compute_capability", "nvmlDeviceGetCudaComputeCapability", ()),
    ("memory", "nvmlDeviceGetMemoryInfo", ()),
    ("mig_mode", "nvmlDeviceGetMigMode", ()),
    ("retired_pages", "nvmlDeviceGetRetiredPages", (1,)),
    ("sm_clock_mhz", "nvmlDeviceGetClockInfo", (1,)),
)


def _gpu_facts(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    gpu: dict[str, Any] = {"index": index}
    for key, fn, args in _GPU_CALLS:
        try:
            gpu[key] = getattr(nvml, fn)(handle, *args)
        except Exception as exc:  # noqa: BLE001 - NotSupported / NoPermission / FunctionNotFound
            gpu[key] = f"could not collect: {type(exc).__name__}"
    return gpu


def _tidy(gpu: dict[str, Any]) -> dict[str, Any]:
    """NVML's bytes, tuples and structs as plain JSON values."""
    for key in ("name", "uuid"):
        if isinstance(gpu.get(key), bytes):
            gpu[key] = _text(gpu[key])
    if isinstance(gpu.get("compute_capability"), tuple):
        major, minor = gpu["compute_capability"]
        gpu["compute_capability"] = f"{major}.{minor}"
    mem = gpu.get("memory")
    if mem is not None and hasattr(mem, "total"):
        gpu["memory"] = {"total": int(mem.total), "used": int(mem.used)}
    mig = gpu.get("mig_mode")
    if isinstance(mig, (list, tuple)):
        gpu["mig_mode"] = {"current": int(mig[0]), "pending": int(mig[1])}
    if isinstance(gpu.get("retired_pages"), (list, tuple)):
        gpu["retired_pages"] = len(gpu["retired_pages"])
    return gpu


def collect_nvml(env: Environment) -> dict[str, Any]:
    """Driver and per-GPU facts through NVML; 'could not collect: why' where it fails."""
    try:
        nvml = env.system.nvml_loader()
    except ImportError as exc:
        return {"status": f"could not collect: nvidia-ml-py is not installed ({exc})", "gpus": []}
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses vary by binding version
        return {"status": f"could not collect: {type(exc).__name__}: {exc}", "gpus": []}
    out: dict[str, Any] = {"status": "ok", "gpus": []}
    try:
        for key, call in (
            ("driver_version", "nvmlSystemGetDriverVersion"),
            ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion"),
        ):
            try:
                out[key] = _text(getattr(nvml, call)())
            except Exception as exc:  # noqa: BLE001
                out[key] = f"could not collect: {exc}"
        count = int(nvml.nvmlDeviceGetCount())
        out["gpus"] = [_tidy(_gpu_facts(nvml, i)) for i in range(count)]
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def _torch_line(facts: Mapping[str, Any], python: Any) -> str:
    """What torch said of itself in the interpreter asked; where it could not say, only that and why (a CUDA
    version and "CPU build" there were made up: a newcomer without torch read "CUDA none: CPU build")."""
    version = str(facts["torch_version"])
    if version.startswith("could not collect"):
        return f"torch {version} (asked {python or 'this interpreter'})"
    cuda = facts["cuda_version"] or "none: CPU build"
    return f"torch {version} (CUDA {cuda}), cuda available: {facts['cuda_available']}"


def _nvml_line(status: str, driver: object) -> str:
    """NVML's state and the driver version; when NVML could not start, the driver version is that same error,
    said once (it was printed twice: "NVML: could not collect: X; driver could not collect: X")."""
    if driver == status:
        return f"NVML: {status} (so no driver version)"
    return f"NVML: {status}; driver {driver}"


def visible_gpus(env: Environment) -> tuple[list[str], str | None]:
    """The GPUs this process may use (NVML's list, narrowed by CUDA_VISIBLE_DEVICES as CUDA narrows
    it: indexes or UUID prefixes) and the driver version; no torch process is started."""
    nvml = collect_nvml(env)
    gpus = [g for g in nvml["gpus"] if isinstance(g, dict)]
    wanted = env.system.environ.get("CUDA_VISIBLE_DEVICES")
    if wanted is not None:
        chosen = []
        for item in (w.strip() for w in wanted.split(",")):
            match = [g for g in gpus if str(g.get("index")) == item or str(g.get("uuid", "")).startswith(item or "-")]
            if not match:
                break  # CUDA stops at the first entry it cannot use
            chosen.append(match[0])
        gpus = chosen
    driver = nvml.get("driver_version")
    return [str(g.get("name")) for g in gpus], str(driver) if driver is not None else None


class EnvFacts(TypedDict, total=False):
    """The facts EnvProbe declares once (help, ``probes``, the schema and the loader read them)."""

    torch_version: Annotated[str, "torch.__version__ in the target interpreter"]
    cuda_version: Annotated[str | None, "CUDA version torch was built with (None: CPU build)"]
    cuda_available: Annotated[bool, "torch.cuda.is_available()"]
    gpu_count: Annotated[int, "GPUs torch can see"]
    gpus: Annotated[list[dict[str, Any]], "per GPU: name, compute capability, SM count, memory"]
    gpu_names: Annotated[list[str], "GPU names"]
    driver_version: Annotated[str, "NVIDIA driver version via NVML"]
    nvml: Annotated[str, "'ok' or 'could not collect: why'"]
    kineto_available: Annotated[bool | None, "torch.profiler.kineto_available()"]
    cudnn_version: Annotated[int | None, "cuDNN version"]
    profilers: Annotated[list[str], "profilers found: torch.profiler, legacy, ncu, nsys, compute-sanitizer"]
    mig: Annotated[bool, "whether any GPU is in MIG mode"]
    nvml_gpus: Annotated[list[dict[str, Any]], "per GPU as NVML sees it: index, name, memory, MIG mode, clocks"]


class EnvProbe:
    name = "env"
    summary = "Versions (torch, CUDA, cuDNN, driver, Kineto), GPUs via NVML, and which profilers exist"
    runs_programs = "the target interpreter, to ask torch for its versions and devices"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("python", "path", "interpreter to ask (default: --python)", default=None, runs=True),
    )
    facts: tuple[FactSpec, ...] = declared_facts(EnvFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 120.0) -> ProbeResult:
        python = params.get("python") or env.settings.python
        run = run_harness(env, "env", [], timeout=timeout, log_name="env", python=python)
        torch_info = run.result or {}
        facts: dict[str, Any] = {
            "torch_version": torch_info.get("torch_version", "could not collect"),
            "cuda_version": torch_info.get("cuda_version"),
            "cuda_available": bool(torch_info.get("cuda_available", False)),
            "gpu_count": len(torch_info.get("devices") or []),
            "kineto_available": torch_info.get("kineto_available"),
            "cudnn_version": torch_info.get("cudnn_version"),
        }
        if run.result is None or torch_info.get("error"):
            facts["torch_version"] = f"could not collect: {torch_info.get('error') or 'the interpreter did not answer'}"
        nvml = collect_nvml(env)
        gpus = torch_info.get("devices") or []
        if not gpus:
            gpus = [
                {"index": g["index"], "name": g.get("name"), "compute_capability": g.get("compute_capability")}
                for g in nvml["gpus"]
            ]
        facts["gpus"] = gpus
        facts["gpu_names"] = [str(g.get("name")) for g in gpus]
        facts["driver_version"] = nvml.get("driver_version", nvml["status"])
        facts["nvml"] = nvml["status"]
        facts["nvml_gpus"] = nvml["gpus"]
        facts["mig"] = any(isinstance(g.get("mig_mode"), dict) and g["mig_mode"].get("current") for g in nvml["gpus"])
        profilers = []
        if facts["kineto_available"]:
            profilers.append("torch.profiler")
        if not str(facts["torch_version"]).startswith("could not"):
            profilers.append("legacy")
        profilers += [tool for tool in PROFILER_TOOLS if env.system.which(tool)]
        facts["profilers"] = profilers
        evidence = [
            _torch_line(facts, python),
            _nvml_line(facts["nvml"], facts["driver_version"]),
            f"GPUs: {', '.join(facts['gpu_names']) or 'none'}",
            f"profilers: {', '.join(profilers) or 'none'}",
        ]
        status = Status.PASS if facts["cuda_available"] else Status.WARN
        summary = (
            "GPU environment collected"
            if facts["cuda_available"]
            else "no usable CUDA device here: GPU probes will skip (trace analysis still works)"
        )
        return ProbeResult(status, summary, facts=facts, evidence=evidence, files=[run.command.log_path or ""])
