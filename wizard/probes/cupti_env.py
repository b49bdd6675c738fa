"""``cupti.env``: why CUPTI might fail to start here, measured from the machine's own files.

A trace without kernels most often means CUPTI did not initialise: a second ``libcupti`` on
``LD_LIBRARY_PATH`` (pytorch/pytorch#118982), the driver restricting profiling to admin users
(``NVreg_RestrictProfilingToAdminUsers``, NVIDIA's ERR_NVGPUCTRPERM page), or a container without
``CAP_SYS_ADMIN``. Every file is read through the System (``read_file``, ``list_dir``), so tests
simulate a restricted machine; ``ldconfig -p`` and the probed interpreter run through its runner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts
from wizard.untrusted import cut

PARAMS_FILE = "/proc/driver/nvidia/params"
MODPROBE_DIRS = ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d", "/run/modprobe.d")
STATUS_FILE = "/proc/self/status"
CAPABILITIES = {21: "CAP_SYS_ADMIN", 38: "CAP_PERFMON", 12: "CAP_NET_ADMIN", 19: "CAP_SYS_PTRACE"}
_CUPTI = re.compile(r"^libcupti\.so(\.[0-9.]+)?$")
_RESTRICT = re.compile(r"NVreg_RestrictProfilingToAdminUsers\s*=\s*(\d+)")
_ADMIN_ONLY = re.compile(r"^RmProfilingAdminOnly:\s*(\d+)", re.MULTILINE)
MAX_DIRS = 64  # LD_LIBRARY_PATH entries and modprobe files looked at
PYTHON_TIMEOUT_S = 20.0  # for the interpreter to list torch's library directories (it imports nothing)


@dataclass(slots=True)
class CuptiFindings:
    """What the machine says, before any judgement."""

    on_path: dict[str, list[str]] = field(default_factory=dict)  # LD_LIBRARY_PATH dir -> libcupti files
    in_torch: dict[str, list[str]] = field(default_factory=dict)  # torch's own lib dirs -> libcupti files
    ldconfig: list[str] = field(default_factory=list)
    restricted: bool | None = None
    restriction_source: str = "unknown: no NVIDIA driver parameters readable here"
    capabilities: list[str] | None = None
    uid: int | None = None
    container: bool = False
    resolved: dict[str, str] = field(default_factory=dict)  # each library found -> the file it resolves to
    python_problem: str | None = None  # why torch's own directories are unknown (the interpreter hung, failed)


def _library(env: Environment, found: CuptiFindings, path: str) -> bool:
    """Whether ``path`` is a libcupti that can be loaded: an ELF shared object, or a link that resolves to one."""
    real = env.system.shared_object(path)
    if real is not None:
        found.resolved[path] = real
    return real is not None


def _cupti_in(env: Environment, found: CuptiFindings, directory: str) -> list[str]:
    names = [f"{directory.rstrip('/')}/{n}" for n in env.system.list_dir(directory) if _CUPTI.match(n)]
    return [path for path in names if _library(env, found, path)]


def _ldconfig(env: Environment, found: CuptiFindings, timeout: float) -> list[str]:
    """libcupti entries of the dynamic linker's cache (``ldconfig -p``) that are libraries, where ldconfig exists."""
    ldconfig = env.system.which("ldconfig") or env.system.which("/sbin/ldconfig")
    if ldconfig is None:
        return []
    result = env.system.runner.run([ldconfig, "-p"], timeout=min(timeout, 30.0))
    named = []
    for line in result.output.splitlines():
        if "libcupti" in line and "=>" in line:
            named.append(line.split("=>", 1)[1].strip())
    return [path for path in sorted(set(named))[:MAX_DIRS] if _library(env, found, path)]


def _torch_dirs(env: Environment, found: CuptiFindings, python: str, timeout: float) -> list[str]:
    from wizard.probes.common import run_harness

    limit = min(timeout, PYTHON_TIMEOUT_S)
    run = run_harness(env, "libdirs", [], timeout=limit, log_name="cupti-libdirs", python=python)
    if run.command.timed_out:
        found.python_problem = f"the interpreter {python} did not answer within {limit:g} s (killed)"
    elif run.result is None:
        found.python_problem = f"the interpreter {python} did not report (exit {run.command.returncode})"
    dirs = (run.result or {}).get("dirs") or []
    return [str(d) for d in dirs if isinstance(d, str)][:MAX_DIRS]


def version(real: str) -> str:
    """A libcupti's version, from the name of the file it resolves to (``libcupti.so.2024.1.1``: 2024.1.1)."""
    name = real.rsplit("/", 1)[-1]
    return name.partition("libcupti.so")[2].lstrip(".") or "unversioned"


def versions(found: CuptiFindings) -> dict[str, list[str]]:
    """Each libcupti version found (LD_LIBRARY_PATH, torch's directories, ldconfig's cache) -> the directories."""
    out: dict[str, list[str]] = {}
    for path, real in sorted(found.resolved.items()):
        where = out.setdefault(version(real), [])
        directory = path.rsplit("/", 1)[0]
        if directory not in where:
            where.append(directory)
    return out


def restriction(env: Environment) -> tuple[bool | None, str]:
    """Whether the driver restricts GPU profiling to admin users, and where that was read."""
    params = env.system.read_file(PARAMS_FILE)
    if params is not None:
        found = _ADMIN_ONLY.search(params)
        if found:
            return found.group(1) != "0", f"{PARAMS_FILE}: RmProfilingAdminOnly: {found.group(1)}"
    for directory in MODPROBE_DIRS:
        for name in env.system.list_dir(directory)[:MAX_DIRS]:
            if not name.endswith(".conf"):
                continue
            text = env.system.read_file(f"{directory}/{name}") or ""
            for line in text.splitlines():
                found = _RESTRICT.search(line.split("#", 1)[0])
                if found:
                    return found.group(
                        1
                    ) != "0", f"{directory}/{name}: NVreg_RestrictProfilingToAdminUsers={found.group(1)}"
    if params is not None:
        return None, f"{PARAMS_FILE} has no RmProfilingAdminOnly line (an old driver, or not NVIDIA's)"
    return None, "unknown: no NVIDIA driver parameters readable here"


def capabilities(status: str | None) -> tuple[list[str] | None, int | None]:
    """The effective capabilities (of the ones that matter for profiling) and the uid, from /proc/self/status."""
    if status is None:
        return None, None
    caps: list[str] | None = None
    uid = None
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            try:
                mask = int(line.split(":", 1)[1].strip(), 16)
            except ValueError:
                continue
            caps = [name for bit, name in sorted(CAPABILITIES.items()) if mask >> bit & 1]
        elif line.startswith("Uid:"):
            parts = line.split()
            if len(parts) > 2 and parts[2].isascii() and parts[2].isdigit():
                uid = int(parts[2])  # the effective uid
    return caps, uid


def gather(env: Environment, python: str, timeout: float) -> CuptiFindings:
    found = CuptiFindings()
    for directory in [d for d in env.system.environ.get("LD_LIBRARY_PATH", "").split(":") if d][:MAX_DIRS]:
        libs = _cupti_in(env, found, directory)
        if libs:
            found.on_path[directory] = libs
    for directory in _torch_dirs(env, found, python, timeout):
        libs = _cupti_in(env, found, directory)
        if libs:
            found.in_torch[directory] = libs
    found.ldconfig = _ldconfig(env, found, timeout)
    found.restricted, found.restriction_source = restriction(env)
    found.capabilities, found.uid = capabilities(env.system.read_file(STATUS_FILE))
    found.container = env.system.read_file("/.dockerenv") is not None or any(
        marker in (env.system.read_file("/proc/1/cgroup") or "") for marker in ("docker", "kubepods", "containerd")
    )
    return found


def duplicates(found: CuptiFindings) -> list[str]:
    """Why more than one libcupti can be loaded: several on LD_LIBRARY_PATH, or one there beside torch's own."""
    reasons = []
    if len(found.on_path) > 1:
        reasons.append(
            f"{len(found.on_path)} directories on LD_LIBRARY_PATH hold a libcupti: {', '.join(found.on_path)}"
        )
    torch_dirs = [d for d in found.in_torch if d not in found.on_path]
    if found.on_path and torch_dirs:
        reasons.append(
            f"LD_LIBRARY_PATH's {', '.join(found.on_path)} comes before the one torch ships in {', '.join(torch_dirs)}"
        )
    found_versions = versions(found)
    if len(found_versions) > 1:  # ldconfig's cache counts too: a library loaded by name may get any of them
        listed = "; ".join(f"{v} in {', '.join(dirs)}" for v, dirs in found_versions.items())
        reasons.append(f"{len(found_versions)} versions of libcupti are found: {listed}")
    return reasons


class CuptiEnvFacts(TypedDict, total=False):
    """The facts CuptiEnvProbe declares once (help, ``probes``, the schema and the loader read them)."""

    cupti_libraries: Annotated[
        list[str],
        "every libcupti found (ELF shared objects, links resolved): LD_LIBRARY_PATH, torch's lib dirs, ldconfig -p",
    ]
    cupti_versions: Annotated[dict[str, list[str]], "each libcupti version found -> the directories holding it"]
    cupti_on_path: Annotated[list[str], "LD_LIBRARY_PATH directories that hold a libcupti"]
    cupti_in_torch: Annotated[list[str], "torch's own library directories that hold a libcupti"]
    cupti_duplicates: Annotated[bool | None, "whether more than one libcupti can be loaded (pytorch/pytorch#118982)"]
    cupti_duplicate_reasons: Annotated[list[str], "why: which directories"]
    profiling_restricted: Annotated[bool | None, "the driver restricts profiling to admin users (None: could not tell)"]
    restriction_source: Annotated[str | None, "where the restriction was read (driver params, modprobe.d)"]
    capabilities: Annotated[list[str] | None, "effective capabilities that matter (CAP_SYS_ADMIN, CAP_PERFMON, ...)"]
    cap_sys_admin: Annotated[bool | None, "CAP_SYS_ADMIN is effective (None: could not tell)"]
    cap_perfmon: Annotated[bool | None, "CAP_PERFMON is effective (counts from driver R565)"]
    is_root: Annotated[bool | None, "the effective uid is 0"]
    in_container: Annotated[bool | None, "a container's markers are present (/.dockerenv, docker/kubepods cgroups)"]
    profiling_allowed: Annotated[bool | None, "not restricted, or this process may profile anyway (None: unknown)"]


class CuptiEnvProbe:
    name = "cupti.env"
    summary = (
        "CUPTI libraries found (LD_LIBRARY_PATH, torch, ldconfig), the driver's profiling restriction, capabilities"
    )
    runs_programs = (
        "ldconfig -p, and the target interpreter to find torch's library directories (torch is not imported)"
    )
    params: tuple[ParamSpec, ...] = (
        ParamSpec(
            "python", "path", "interpreter whose torch is looked at (default: --python)", default=None, runs=True
        ),
    )
    facts: tuple[FactSpec, ...] = declared_facts(CuptiEnvFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 120.0) -> ProbeResult:
        found = gather(env, params.get("python") or env.settings.python, timeout)
        typed = judge(found)
        return verdict(found, typed, evidence(found, typed))


def allowed_to_profile(found: CuptiFindings) -> bool | None:
    """Whether this process may profile: unrestricted, or a capability that lifts the restriction (None: unknown)."""
    caps = found.capabilities
    admin = None if caps is None else "CAP_SYS_ADMIN" in caps
    perfmon = None if caps is None else "CAP_PERFMON" in caps
    allowed = True if found.restricted is False else (True if admin or perfmon else None)
    if found.restricted and caps is not None and not (admin or perfmon):
        allowed = False
    return allowed


def judge(found: CuptiFindings) -> CuptiEnvFacts:
    """The declared facts from the findings, so the verdict and the evidence read one judgement."""
    caps = found.capabilities
    libraries = sorted(
        {*(lib for libs in [*found.on_path.values(), *found.in_torch.values()] for lib in libs), *found.ldconfig}
    )
    reasons = duplicates(found)
    return {  # mypy checks each fact against the declaration
        "cupti_libraries": libraries,
        "cupti_on_path": list(found.on_path),
        "cupti_in_torch": list(found.in_torch),
        "cupti_duplicates": bool(reasons),
        "cupti_duplicate_reasons": reasons,
        "cupti_versions": versions(found),
        "profiling_restricted": found.restricted,
        "restriction_source": found.restriction_source,
        "capabilities": caps,
        "cap_sys_admin": None if caps is None else "CAP_SYS_ADMIN" in caps,
        "cap_perfmon": None if caps is None else "CAP_PERFMON" in caps,
        "is_root": None if found.uid is None else found.uid == 0,
        "in_container": found.container,
        "profiling_allowed": allowed_to_profile(found),
    }


def evidence(found: CuptiFindings, typed: CuptiEnvFacts) -> list[str]:
    """The lines a person reads to check the verdict: what was found where (trace-free, but paths are cut)."""
    caps = found.capabilities
    restricted = {True: "restricted to admin users", False: "not restricted", None: "could not tell"}
    return [
        f"libcupti found: {', '.join(cut(x, 200) for x in typed['cupti_libraries'][:8]) or 'none'}",
        *typed["cupti_duplicate_reasons"],
        f"driver profiling: {restricted[found.restricted]} ({cut(found.restriction_source, 200)})",
        "capabilities: "
        + (
            "could not read /proc/self/status"
            if caps is None
            else ", ".join(caps) or "none of CAP_SYS_ADMIN, CAP_PERFMON"
        )
        + ("" if found.uid is None else f"; uid {found.uid}")
        + ("; in a container" if found.container else ""),
    ]


def verdict(found: CuptiFindings, typed: CuptiEnvFacts, lines: list[str]) -> ProbeResult:
    """The first reason CUPTI may not start wins: a second libcupti, then the restriction, then what is unknown."""
    facts: dict[str, Any] = dict(typed)
    reasons = typed["cupti_duplicate_reasons"]
    if reasons:
        return ProbeResult(Status.FAIL, "more than one libcupti can be loaded: " + reasons[0], facts, lines)
    if typed["profiling_allowed"] is False:
        return ProbeResult(
            Status.FAIL,
            "the driver restricts profiling to admin users, and this process has neither CAP_SYS_ADMIN nor CAP_PERFMON",
            facts,
            lines,
        )
    if found.python_problem is not None:  # torch's own libcupti is unknown: no "one CUPTI" without it
        lines.append(found.python_problem)
        return ProbeResult(
            Status.WARN, f"torch's own libcupti could not be looked for: {found.python_problem}", facts, lines
        )
    if not typed["cupti_libraries"]:
        return ProbeResult(
            Status.WARN, "no libcupti found on LD_LIBRARY_PATH, in torch or in ldconfig's cache", facts, lines
        )
    return ProbeResult(Status.PASS, "one CUPTI, and profiling is allowed or not restricted here", facts, lines)
