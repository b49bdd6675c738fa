"""``op.isolate``: take the op that launched the flagged kernel, with its recorded shapes
and dtypes, write a standalone repro script, run it alone under the profiler, and say
whether one op is enough to reproduce the anomaly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from wizard.environment import Environment
from wizard.probes.base import FactSpec, ParamSpec, ProbeResult, Status, ensure_dir
from wizard.probes.common import MARK, parse_result
from wizard.probes.trace_inspect import inspection_facts
from wizard.trace.inspect import inspect_paths

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

SCRIPT = '''"""Standalone repro written by warpwizard op.isolate.

op: {op}
input shapes: {dims}
input dtypes: {types}
Run it anywhere with: python {name} [OUT_TRACE.json]
"""
import json
import math
import sys

import torch

OP = {op!r}
SHAPES = {dims_json}
TYPES = {types_json}
DTYPES = {dtypes!r}
OUT = sys.argv[1] if len(sys.argv) > 1 else "repro-trace.json"
device = "cuda" if torch.cuda.is_available() else "cpu"
ELEMENTS = sum(math.prod(s) for s in SHAPES if isinstance(s, list) and s)
if device == "cpu" and ELEMENTS > {cpu_limit}:  # a GPU-sized input would exhaust a CPU's memory
    print("{mark}" + json.dumps({{"ok": False, "device": device, "too_large": ELEMENTS}}))
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
    print("{mark}" + json.dumps({{"ok": False, "device": device, "missing_op": True,
                                  "error": f"{{OP}} is not registered in this torch ({{exc}}); "
                                           "import the extension that defines it at the top of this script"}}))
    sys.exit(0)
activities = [torch.profiler.ProfilerActivity.CPU]
if device == "cuda":
    activities.append(torch.profiler.ProfilerActivity.CUDA)
error = None
with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
    try:
        fn(*tensors)
    except Exception as exc:  # the recorded non-tensor arguments are unknown; say so
        error = f"{{type(exc).__name__}}: {{exc}}"
    if device == "cuda":
        torch.cuda.synchronize()
prof.export_chrome_trace(OUT)
print("{mark}" + json.dumps({{"ok": error is None, "device": device, "error": error, "output": OUT}}))
'''


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


class OpIsolateProbe:
    name = "op.isolate"
    summary = "Write a one-op repro from the flagged kernel's op, shapes and dtypes; run it alone under the profiler"
    params: tuple[ParamSpec, ...] = (
        ParamSpec("trace", "paths", "trace whose worst finding to isolate", default=None),
        ParamSpec("op", "str", "op name instead of the trace's, e.g. aten::index_select", default=None),
        ParamSpec("input_dims", "str", "JSON list of input shapes (with op)", default=None),
        ParamSpec("input_types", "str", "JSON list of input dtypes (with op)", default=None),
    )
    facts: tuple[FactSpec, ...] = (
        FactSpec("op", "str", "the op isolated"),
        FactSpec("input_dims", "str", "its input shapes"),
        FactSpec("input_types", "str", "its input dtypes"),
        FactSpec("repro_script", "str", "path of the standalone script"),
        FactSpec("device", "str", "cuda | cpu: where the repro ran"),
        FactSpec("reproduced", "bool", "whether the lone op shows the anomaly (None: could not tell)"),
        FactSpec("mechanisms", "list", "mechanisms found in the repro's trace"),
    )

    def run(self, env: Environment, params: Mapping[str, Any], *, timeout: float = 600.0) -> ProbeResult:
        op, dims, types = params.get("op"), params.get("input_dims"), params.get("input_types")
        if not op and params.get("trace"):
            paths = params["trace"] if isinstance(params["trace"], list) else [params["trace"]]
            facts = inspection_facts(inspect_paths([str(p) for p in paths]))
            op, dims, types = facts["worst_op"], facts["worst_op_dims"], facts["worst_op_types"]
            if not facts["impossible"]:
                return ProbeResult(Status.SKIP, "the trace has no impossible value to isolate", facts={"op": None})
        if not op:
            return ProbeResult(
                Status.SKIP,
                "no launching op known: the trace maps the kernel to no op "
                "(record with record_shapes=True, or give op and input_dims)",
                facts={"op": None},
            )
        shapes = _loads(dims) or []
        type_names = _loads(types) or []
        base = {
            "op": op,
            "input_dims": dims,
            "input_types": types,
            "repro_script": None,
            "device": None,
            "reproduced": None,
            "mechanisms": [],
        }
        out_dir = ensure_dir(env.report_dir / "op-isolate")
        script = out_dir / "repro.py"
        script.write_text(
            SCRIPT.format(
                op=op,
                dims=dims,
                types=types,
                name=script.name,
                dims_json=json.dumps(shapes),
                types_json=json.dumps(type_names),
                dtypes=DTYPES,
                mark=MARK,
                cpu_limit=CPU_ELEMENT_LIMIT,
            ),
            encoding="utf-8",
        )
        base["repro_script"] = str(script)
        if "::" not in str(op) or not shapes:
            return ProbeResult(
                Status.WARN,
                f"{op!r} is not an op with recorded tensor shapes: the script is a "
                "starting point to edit, not a runnable repro",
                facts=base,
                files=[str(script)],
            )
        trace = out_dir / "repro-trace.json"
        run = env.runner.run(
            [env.python, str(script), str(trace)],
            timeout=timeout,
            env=env.child_env(),
            log_path=out_dir / "repro.log",
        )
        result = parse_result(run.output)
        files = [str(script), run.log_path or ""]
        if result is None:
            return ProbeResult(
                Status.ERROR,
                f"the repro did not finish (exit {run.returncode}); see {run.log_path}",
                facts=base,
                files=files,
            )
        if result.get("too_large"):
            return ProbeResult(
                Status.SKIP,
                f"no CUDA device, and the inputs ({result['too_large']} elements) are too "
                "large to run on the CPU; the repro script was written",
                facts=base,
                files=files,
            )
        base["device"] = result.get("device")
        if result.get("missing_op"):
            return ProbeResult(Status.WARN, str(result["error"]), facts=base, files=files)
        if result.get("error"):
            return ProbeResult(
                Status.WARN,
                f"calling {op} with the recorded tensors alone failed ({result['error']}); "
                "add its non-tensor arguments to the script",
                facts=base,
                files=files,
            )
        found = inspection_facts(inspect_paths([str(trace)]))
        base["mechanisms"] = found["mechanisms"]
        files.append(str(trace))
        if base["device"] != "cuda":
            return ProbeResult(
                Status.SKIP,
                f"no CUDA device: {op} ran alone on the CPU (the repro is valid) but kernel metrics need a GPU",
                facts=base,
                files=files,
            )
        base["reproduced"] = bool(found["impossible"])
        if base["reproduced"]:
            return ProbeResult(
                Status.FAIL,
                f"{op} alone reproduces the anomaly ({', '.join(found['mechanisms'])})",
                facts=base,
                files=files,
                evidence=[str(found["worst_evidence"])],
            )
        return ProbeResult(Status.PASS, f"{op} alone does not reproduce the anomaly", facts=base, files=files)
