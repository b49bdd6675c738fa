"""An example warpwizard probe: is there room on the disk for the profiler's trace?

A probe declares its parameters and its facts once (a TypedDict of ``Annotated[type, "what it means"]``);
warpwizard derives the help, ``warpwizard probes`` and the loader's checks from it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts


class FreeSpaceFacts(TypedDict, total=False):
    """What disk.free_space finds."""

    path: Annotated[str, "the directory checked"]
    free_gb: Annotated[float | None, "free space there, in GB (None: the directory cannot be read)"]
    need_gb: Annotated[float, "space the trace needs, in GB"]
    enough: Annotated[bool, "whether the free space covers what the trace needs"]


class FreeSpaceProbe:
    name = "disk.free_space"
    summary = "Free space where the profiler writes its trace, against what a trace needs"
    runs_programs = ""
    params: tuple[ParamSpec, ...] = (
        ParamSpec("path", "path", "the directory the trace goes to", required=True),
        ParamSpec("need_gb", "float", "space one trace needs, in GB", default=2.0),
    )
    facts: tuple[FactSpec, ...] = declared_facts(FreeSpaceFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        path = str(params["path"])
        need = float(params.get("need_gb") or 2.0)
        try:
            free = shutil.disk_usage(path).free / 1e9
        except OSError as exc:
            facts = {"path": path, "free_gb": None, "need_gb": need, "enough": False}
            return ProbeResult(Status.ERROR, f"cannot read {path}: {exc.strerror or exc}", facts=facts)
        enough = free >= need
        facts = {"path": path, "free_gb": round(free, 3), "need_gb": need, "enough": enough}
        summary = f"{free:.1f} GB free in {path}; a trace needs {need:g} GB"
        return ProbeResult(Status.PASS if enough else Status.FAIL, summary, facts=facts, evidence=[summary])
