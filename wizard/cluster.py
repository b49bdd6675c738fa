"""Where this process stands in a job the cluster's own launcher started (SLURM's ``srun``,
``torchrun``, Open MPI's ``mpirun``): its rank, its local rank on the node, the host.

warpwizard schedules nothing: each process runs ``warpwizard probe ... --output
'reports/{host}-{rank}.json'`` and ``warpwizard compare`` merges the files (docs/clusters.md).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass

from wizard.errors import UsageError
from wizard.formatting import plural
from wizard.untrusted import visible
from wizard.workspace import safe_name

# The first variable set wins; each launcher sets its own.
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
_NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() takes '²' and '٣'


@dataclass(frozen=True, slots=True)
class Rank:
    rank: int
    local_rank: int
    host: str


def _first_number(environ: Mapping[str, str], names: tuple[str, ...]) -> int:
    for name in names:
        value = environ.get(name, "").strip()
        if _NUMBER.fullmatch(value):
            return int(value)
        if value:
            raise UsageError(f"{name}={visible(value)[:40]!r}: expected a rank, a number of ASCII digits (0-9)")
    return 0


def launcher_rank(environ: Mapping[str, str], hostname: str | None = None) -> Rank:
    """This process's rank and local rank (0 outside a launcher) and host name."""
    host = safe_name(hostname if hostname is not None else platform.node())
    return Rank(_first_number(environ, RANK_VARIABLES), _first_number(environ, LOCAL_RANK_VARIABLES), host)


def launcher_place(environ: Mapping[str, str]) -> dict[str, int]:
    """``rank`` and ``local_rank`` for a report, when a launcher started this process (else nothing):
    ``warpwizard compare`` then tells apart the GPUs of one node."""
    if not any(name in environ for name in RANK_VARIABLES + LOCAL_RANK_VARIABLES):
        return {}
    here = launcher_rank(environ, hostname="")
    return {"rank": here.rank, "local_rank": here.local_rank}


def device_for_rank(environ: Mapping[str, str], local_rank: int) -> str:
    """The CUDA_VISIBLE_DEVICES value that gives a process the GPU of its local rank: the local
    rank's entry of the list the launcher already narrowed to, else the local rank itself."""
    visible = [item.strip() for item in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if item.strip()]
    if not visible:
        return str(local_rank)
    if local_rank >= len(visible):
        raise UsageError(
            f"--device-from-rank: local rank {local_rank}, but CUDA_VISIBLE_DEVICES lists "
            f"{plural(len(visible), 'device')}; the launcher already gives each process its GPU "
            "(e.g. srun --gpus-per-task 1): "
            "leave --device-from-rank out"
        )
    return visible[local_rank]


def output_name(template: str, rank: Rank, pid: int | None = None) -> str:
    """``template`` with ``{host}``, ``{rank}``, ``{local_rank}`` and ``{pid}`` filled in (nothing else is
    read from it), so every process of a job writes its own file. The host is one safe path component
    (no separator, no leading dot), so ``{host}`` never leaves the directory the template names."""
    return (
        template.replace("{host}", rank.host)
        .replace("{rank}", str(rank.rank))
        .replace("{local_rank}", str(rank.local_rank))
        .replace("{pid}", str(os.getpid() if pid is None else pid))
    )


PLACEHOLDERS = ("{host}", "{rank}", "{local_rank}", "{pid}")


def placed(path: str | None, environ: Mapping[str, str]) -> str | None:
    """An output path as the user wrote it, with this process's place filled in when it names one."""
    if path is None or not any(p in path for p in PLACEHOLDERS):
        return path
    return output_name(path, launcher_rank(environ))
