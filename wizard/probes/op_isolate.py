"""``op.isolate``: take the op that launched the flagged kernel, with its recorded shapes
and dtypes, write a standalone repro script, run it alone under the profiler, and say
whether one op is enough to reproduce the anomaly.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypedDict

from wizard.environment import Environment
from wizard.outputs import free_path, write_text
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, declared_facts, ensure_dir
from wizard.probes.common import MARK, parse_result
from wizard.probes.inspections import inspection
from wizard.probes.trace_inspect import inspection_facts
from wizard.probes.verdicts import op_isolate_verdict
from wizard.progress import task
from wizard.schemas import work_fingerprint
from wizard.untrusted import cut, visible

# Kineto's "Input type" strings -> torch dtype attribute names.
DTYPES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "long int": "int64",
    "long": "int64",
    "int": "int32",
    "short int": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
    "c10::complex<float>": "complex64",
}
CPU_ELEMENT_LIMIT = 1 << 27  # 512 MiB of float32: beyond this the CPU run is skipped

OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")  # fullmatch: no trailing newline
HEADER = "# written by warpwizard op.isolate; unedited copy sha256 "

# The repro is fixed code. Everything that came from the trace (op name, shapes, dtypes) is one
# JSON document inside SPEC, a Python string literal made by repr() of ASCII-only JSON: no
# name, however hostile (quotes, newlines, backslashes, NUL, undecodable bytes), can become code.
SCRIPT_HEAD = '''"""Standalone repro written by warpwizard op.isolate: one op, alone, under the profiler.

The op, its input shapes and dtypes (as the trace recorded them) are in SPEC below.
Run it anywhere with: python repro.py [OUT_TRACE.json]
"""
import json
import math
import sys

import torch

'''

SCRIPT_BODY = """
OP = SPEC["op"]
SHAPES = SPEC["shapes"]
TYPES = SPEC["types"]
DTYPES = SPEC["dtypes"]
MARK = SPEC["mark"]
OUT = sys.argv[1] if len(sys.argv) > 1 else "repro-trace.json"
device = "cuda" if torch.cuda.is_available() else "cpu"
ELEMENTS = sum(math.prod(s) for s in SHAPES if isinstance(s, list) and s)
if device == "cpu" and ELEMENTS > SPEC["cpu_limit"]:  # a GPU-sized input would exhaust a CPU's memory
    print(MARK + json.dumps({"ok": False, "device": device, "too_large": ELEMENTS}))
    sys.exit(0)


def make(shape, type_name):
    dtype = getattr(torch, DTYPES.get(type_name, "float32"))
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, device=device).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, device=device) > 0.5
    # Index-like integer inputs: small non-negative values stay in range for gathers.
    return torch.randint(0, 2, shape, device=device, dtype=dtype)


tensors = [make(s, t) for s, t in zip(SHAPES, TYPES) if isinstance(s, list) and len(s) > 0]
namespace, _, name = OP.partition("::")
try:
    fn = getattr(getattr(torch.ops, namespace), name)
except (AttributeError, RuntimeError) as exc:
    print(MARK + json.dumps({"ok": False, "device": device, "missing_op": True,
                             "error": f"{OP} is not registered in this torch ({exc}); "
                                      "import the extension that defines it at the top of this script"}))
    sys.exit(0)
activities = [torch.profiler.ProfilerActivity.CPU]
if device == "cuda":
    activities.append(torch.profiler.ProfilerActivity.CUDA)
error = None
with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
    try:
        fn(*tensors)
    except Exception as exc:  # the recorded non-tensor arguments are unknown; say so
        error = f"{type(exc).__name__}: {exc}"
    if device == "cuda":
        torch.cuda.synchronize()
prof.export_chrome_trace(OUT)
print(MARK + json.dumps({"ok": error is None, "device": device, "error": error, "output": OUT}))
"""


def repro_source(op: str, shapes: Any, types: Any) -> str:
    """The repro script: fixed code around one data literal."""
    spec = {
        "op": op,
        "shapes": shapes,
        "types": types,
        "dtypes": DTYPES,
        "mark": MARK,
        "cpu_limit": CPU_ELEMENT_LIMIT,
    }
    data = json.dumps(spec, ensure_ascii=True)  # ASCII only: a lone surrogate becomes \\udcxx
    body = SCRIPT_HEAD + f"SPEC = json.loads({data!r})\n" + SCRIPT_BODY
    return f"{HEADER}{hashlib.sha256(body.encode()).hexdigest()}\n{body}"


def _unedited(path: Path) -> bool:
    """Whether a repro warpwizard wrote is still exactly as written (so a rerun may replace it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    first, _, body = text.partition("\n")
    return first.startswith(HEADER) and first[len(HEADER) :] == hashlib.sha256(body.encode()).hexdigest()


def write_repro(out_dir: Path, source: str) -> Path:
    """repro.py, unless the user edited the one there: then beside it (repro-2.py, ...)."""
    script = out_dir / "repro.py"
    if (script.exists() or script.is_symlink()) and not _unedited(script):
        script = free_path(script)
    write_text(script, source, force=True)
    return script


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


class OpIsolateFacts(TypedDict, total=False):
    """The facts OpIsolateProbe declares once (help, ``probes``, the schema and the loader read them)."""

    op: Annotated[str | None, "the op isolated"]
    workload: Annotated[str, "fingerprint of the repro's work (op, shapes, dtypes): compare's 'same work?'"]
    input_dims: Annotated[str | None, "its input shapes (None: not recorded)"]
    input_types: Annotated[str | None, "its input dtypes (None: not recorded)"]
    repro_script: Annotated[str, "path of the standalone script"]
    device: Annotated[str | None, "cuda | cpu: where the repro ran"]
    reproduced: Annotated[bool | None, "whether the lone op shows the anomaly (None: could not tell)"]
    mechanisms: Annotated[list[str], "mechanisms found in the repro's trace"]


class OpIsolateProbe:
    name = "op.isolate"
    summary = "Write a one-op repro from the flagged kernel's op, shapes and dtypes; run it alone under the profiler"
    runs_programs = "a repro script it writes (fixed code; the op, shapes and dtypes are data in it)"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("trace", "paths", "trace whose worst finding to isolate", default=None),
        ParamSpec("op", "str", "op name instead of the trace's, e.g. aten::index_select", default=None),
        ParamSpec("input_dims", "str", "JSON list of input shapes (with op)", default=None),
        ParamSpec("input_types", "str", "JSON list of input dtypes (with op)", default=None),
    )
    facts: tuple[FactSpec, ...] = declared_facts(OpIsolateFacts)

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        op, dims, types, skipped = _the_op(env, params)
        if skipped is not None:
            return skipped
        shapes = _loads(dims) or []
        base: dict[str, Any] = {
            "op": op,
            "workload": work_fingerprint((op, dims, types)),
            "input_dims": dims,
            "input_types": types,
            "repro_script": None,
            "device": None,
            "reproduced": None,
            "mechanisms": [],
        }
        out_dir = ensure_dir(env.settings.report_dir / "op-isolate")
        script = write_repro(out_dir, repro_source(str(op), shapes, _loads(types) or []))
        base["repro_script"] = str(script)
        if not OP_NAME.fullmatch(str(op)) or not isinstance(shapes, list) or not shapes:
            return ProbeResult(
                Status.WARN,
                f"{visible(op)[:200]!r} is not an op with recorded tensor shapes: the script is a "
                "starting point to edit, not a runnable repro",
                facts=base,
                files=[str(script)],
            )
        env.artifacts["repro"] = str(script)
        trace = out_dir / "repro-trace.json"
        with task(env.system.progress, "", doing=f"isolating {cut(visible(op), 80)} in a fresh process"):
            run = env.system.runner.run(
                [env.settings.python, str(script), str(trace)],
                timeout=timeout,
                env=env.child_env(),
                log_path=out_dir / "repro.log",
            )
        result = parse_result(run.output)
        files = [str(script), run.log_path or ""]
        if result is None:
            summary = f"the repro did not finish (exit {run.returncode}); see {run.log_path}"
            return ProbeResult(Status.ERROR, summary, facts=base, files=files)
        base["device"] = result.get("device")
        env.artifacts["repro_device"] = str(result.get("device"))
        found: dict[str, Any] = {"mechanisms": [], "impossible": False, "worst_evidence": None}
        if trace.exists() and not result.get("error") and not result.get("too_large"):
            found = inspection_facts(inspection(env, [str(trace)]))
            base["mechanisms"] = found["mechanisms"]
            files.append(str(trace))
        status, summary, reproduced = op_isolate_verdict(
            str(op), result, found["mechanisms"] if found["impossible"] else []
        )
        base["reproduced"] = reproduced
        evidence = [str(found["worst_evidence"])] if reproduced else []
        return ProbeResult(status, summary, facts=base, files=files, evidence=evidence)


def _the_op(env: Environment, params: Mapping[str, Any]) -> tuple[Any, Any, Any, ProbeResult | None]:
    """(op, input dims, input types, or why there is nothing to isolate): given, or the trace's worst."""
    op, dims, types = params.get("op"), params.get("input_dims"), params.get("input_types")
    if not op and params.get("trace"):
        paths = params["trace"] if isinstance(params["trace"], list) else [params["trace"]]
        facts = inspection_facts(inspection(env, [str(p) for p in paths]))
        if not facts["impossible"]:
            return (
                None,
                None,
                None,
                ProbeResult(Status.SKIP, "the trace has no impossible value to isolate", facts={"op": None}),
            )
        op, dims, types = facts["worst_op"], facts["worst_op_dims"], facts["worst_op_types"]
    if not op:
        skip = ProbeResult(
            Status.SKIP,
            "no launching op known: the trace maps the kernel to no op "
            "(record with record_shapes=True, or give op and input_dims)",
            facts={"op": None},
        )
        return None, None, None, skip
    return op, dims, types, None
