"""Builds warpwizard's compiled core (wizard/_core.c) into the wheel: hatchling's custom build hook.

One C file on CPython's stable ABI (3.10 and later), so the wheel is tagged ``cp310-abi3-<platform>`` and one
binary per platform serves every Python from 3.10 on. No build dependency beyond a C compiler: the compiler
Python was built with (sysconfig's CC, or $CC), called once. Where there is none, or it fails, the wheel is pure
Python and says so on the build's output (the readers then run protobuf.py's Python twins, the same results,
slower). ``WARPWIZARD_PURE=1`` at build time builds the pure wheel on purpose. An editable install (``pip install
-e .``, what scripts/test does) builds the core in place, next to its source, where the checkout's package finds it.
docs/dependencies.md says why C and not Rust, Cython or mypyc.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("wizard") / "_core.c"
BINARY = "_core.abi3.so"  # what CPython 3.10+ imports on Linux and macOS for a stable-ABI module
# -Werror=implicit-function-declaration: a call of something the limited API lacks (a macro of CPython's full API,
# Py_XSETREF) compiled to an undefined symbol, so the core built and then failed to import: the readers ran in
# Python, twice as slow, with nothing said
FLAGS = [
    "-O2",
    "-fPIC",
    "-shared",
    "-std=c11",
    "-fno-strict-aliasing",
    "-pthread",  # the scanner's thread (ScanAhead in _core.c)
    "-Wall",
    "-Werror=implicit-function-declaration",
]


def compile_command(source: Path, target: Path) -> list[str] | None:
    """The compiler's command line for the core, or None where this platform has no such compiler (Windows)."""
    if sys.platform == "win32":
        return None
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    extra = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    include = sysconfig.get_paths()["include"]
    return [*shlex.split(compiler), *FLAGS, *extra, f"-I{include}", str(source), "-o", str(target)]


def build_core(root: Path, target: Path) -> str | None:
    """Compiles the core to ``target``; None when built, else why not (one line)."""
    command = compile_command(root / SOURCE, target)
    if command is None:
        return f"no C compiler is known on {sys.platform}"
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{command[0]}: {error}"
    if done.returncode != 0:
        return f"{command[0]} exited {done.returncode}: {done.stderr.strip()[:2000]}"
    return None


def platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


class CoreBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Puts the compiled core in the wheel (or, for an editable install, beside its source)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("WARPWIZARD_PURE", "") not in ("", "0"):
            return
        root = Path(self.root)
        if version == "editable":
            target = root / "wizard" / BINARY
            why = build_core(root, target)
        else:
            target = Path(tempfile.mkdtemp(prefix="warpwizard-core-")) / BINARY
            why = build_core(root, target)
            if why is None:
                build_data["force_include"][str(target)] = f"wizard/{BINARY}"
                build_data["pure_python"] = False
                build_data["tag"] = f"cp310-abi3-{platform_tag()}"
        if why is not None:
            self.app.display_warning(f"warpwizard: the compiled core was not built ({why}); the readers run in Python")
