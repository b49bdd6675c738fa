"""Small Kineto-format traces built from launch shapes: support for tests, examples and benchmarks.

Shipped in the wheel so examples/build.py and the benchmarks can import it; nothing in the CLI does.

Values are computed with the same arithmetic the profiler uses (``kineto_math``), so a
healthy kernel gets exactly what a real profiler prints, and a planted mechanism gets
exactly the wrong value a real profiler prints. Device properties are real GPUs' numbers.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.outputs import write_bytes
from wizard.trace.gpus import PROPERTIES
from wizard.trace.kineto_math import (
    early_kineto_warps_per_sm,
    kineto_blocks_per_sm,
    kineto_occupancy_percent,
    kineto_warps_per_sm,
    product,
)
from wizard.trace.metrics.devices import limits_from_properties
from wizard.trace.metrics.occupancy import (
    DeviceLimits,
    Occupancy,
    UnknownArchitecture,
    active_blocks_per_sm,
    architecture,
)

Dim3 = tuple[int, int, int]


@dataclass
class KernelSpec:
    """One kernel launch and the op that launched it. ``plant`` forces a profiler bug."""

    name: str
    grid: Dim3
    block: Dim3
    registers: int = 32
    shared_memory: int = 0
    op: str = "aten::add"
    input_dims: list[Any] | None = None
    input_types: list[str] | None = None
    python_stack: Sequence[str] = ()
    device: int = 0
    plant: str | None = None  # A' | B | C | D | wrong-sms (G) | garbled (?); A, E and F come from the shape
    dur: float = 12.0
    repeat: int = 1
    # Health-check plants: the launch API (None: no launch call, an unlinked kernel), whether the kernel
    # event is written (False: a dropped kernel), its start after the launch call (negative: clock skew),
    # and its stream.
    launch: str | None = "cudaLaunchKernel"
    kernel: bool = True
    kernel_delay: float = 27.0
    stream: int = 7
    at: float | None = (
        None  # the kernel's start, µs after the trace's first event (None: kernel_delay after its launch)
    )


def _typed(value: float) -> float | int:
    """How PyTorch 2.14's typed metadata writes a float32: the double at full precision, integral as integer."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return int(value)
    return value


def _occupancy_object(calc: Occupancy, spec: KernelSpec, threads: int, limits: DeviceLimits) -> dict[str, Any]:
    """Kineto's ``occupancy`` object for this launch: the calculator's result as it called it (the header
    reserves 1 KB per block from cc 8.0 even without shared memory, which limits blocks too)."""
    names = {"warps": "WARPS", "registers": "REGS", "shared memory": "SMEM", "blocks": "BLOCKS"}
    big = 2**31 - 1
    warps = -(-threads // 32)
    arch = architecture(limits.compute_capability)
    allocated = -(-(spec.shared_memory + arch.reserved_smem) // arch.smem_granularity) * arch.smem_granularity
    smem_limit = calc.limit_shared_memory
    if spec.shared_memory <= 0:
        smem_limit = (
            (max(arch.carveout_kb) * 1024 if arch.carveout_kb else limits.shared_mem_per_sm) // allocated
            if allocated
            else big
        )
    return {
        "activeBlocksPerMultiprocessor": calc.active_blocks,
        "limitingFactors": "|".join(names[f] for f in calc.limiting_factors) or "none",
        "blockLimitRegs": calc.limit_registers,
        "blockLimitSharedMem": smem_limit,
        "blockLimitWarps": calc.limit_warps,
        "blockLimitBlocks": calc.limit_blocks,
        "blockLimitBarriers": big,
        "allocatedRegistersPerBlock": -(-spec.registers * 32 // 256) * 256 * warps,
        "allocatedSharedMemPerBlock": allocated,
    }


def _printed(value: float) -> float | int:
    """How Kineto prints a float32: integral values as integers, others with 9 digits."""
    if not math.isfinite(value):
        return value
    if value == int(value) and abs(value) < 1e15:
        return int(value)
    return float(f"{value:.9g}")


@dataclass
class TraceBuilder:
    """Accumulates launches and writes one trace file in a chosen profiler era.

    era: ``2024`` (cpu_op/cuda_runtime/kernel, current keys), ``2021`` (Operator/Runtime/
    Kernel, string tids), ``pt18`` (a bare top-level array, as PyTorch 1.8 wrote it).
    nonfinite: how inf/nan are spelled, ``bare`` (2022-04 to 2023-12, invalid JSON) or
    ``quoted`` (2023-12 on).
    """

    gpu: str = "H100"
    # A device described as Kineto writes deviceProperties (e.g. from an Nsight Compute report's device attributes),
    # instead of the ``gpu`` preset: a GPU the presets lack.
    properties: dict[str, Any] | None = None
    devices: int = 1
    era: str = "2024"
    nonfinite: str = "bare"
    device_properties: bool = True
    rounding: str = "truncate"  # truncate (to 2026-02) | lround (2026-03 on)
    # classic | 2.12 (Kineto's occupancy object, lround, +inf for an SM count of 0) | 2.14 (typed metadata too)
    kineto: str = "classic"
    pid: int = 4242
    tid: int = 4242
    _events: list[dict[str, Any]] = field(default_factory=list)
    _clock: float = 1_700_000_000_000_000.0
    _origin: float = 1_700_000_000_000_000.0  # where ``at`` counts from: microsecond-epoch times, as Kineto writes
    _correlation: int = 100
    _external: int = 1
    _metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.properties is None and self.gpu not in PROPERTIES:
            raise ValueError(f"unknown GPU preset {self.gpu!r}; choose from {', '.join(PROPERTIES)}")
        self.props = dict(self.properties) if self.properties is not None else PROPERTIES[self.gpu]
        self.rocm = "maxSharedMemoryPerMultiProcessor" in self.props
        nvidia_like = (
            dict(
                self.props, regsPerMultiprocessor=65536, sharedMemPerMultiprocessor=65536, sharedMemPerBlockOptin=65536
            )
            if self.rocm
            else self.props
        )
        limits = limits_from_properties(nvidia_like)
        assert limits is not None  # every preset has the facts the calculator needs
        self.limits = limits
        if self.kineto not in ("classic", "2.12", "2.14"):
            raise ValueError(f"unknown kineto format {self.kineto!r}; choose from classic, 2.12, 2.14")
        if self.kineto != "classic":
            self.rounding, self.nonfinite = "lround", "quoted"

    @property
    def _cats(self) -> tuple[str, str, str]:
        if self.era in ("2021", "pt18"):
            return ("Operator", "Runtime", "Kernel")
        return ("cpu_op", "cuda_runtime", "kernel")

    def _metrics(self, spec: KernelSpec) -> dict[str, Any]:
        num_sms: float = self.limits.num_sms
        if spec.plant == "B":
            num_sms = -1
        elif spec.plant == "C":
            num_sms = 0
        elif spec.plant == "wrong-sms":  # G: the profiler's device had 12 more SMs than the trace declares
            num_sms = num_sms + 12
        elif spec.plant == "garbled":  # values that fit no whole SM count: no known mechanism
            num_sms = num_sms * 0.73
        bps = kineto_blocks_per_sm(spec.grid, num_sms)
        wps = kineto_warps_per_sm(spec.grid, spec.block, num_sms)
        if num_sms == 0 and self.kineto != "classic":  # 2.12+: +inf before dividing, never nan
            bps = wps = math.inf
        if spec.plant == "A'":
            wps = early_kineto_warps_per_sm(spec.grid, spec.block, num_sms)
        threads = product(spec.block)
        calc: Occupancy | None = None
        if spec.plant not in ("C", "D"):
            try:
                calc = active_blocks_per_sm(self.limits, threads, spec.registers, spec.shared_memory)
            except UnknownArchitecture:
                calc = None
        active = calc.active_blocks if calc is not None else None
        truncating, lround = kineto_occupancy_percent(active, bps, threads, self.limits.max_threads_per_sm)
        occupancy = lround if self.rounding == "lround" else truncating
        show = _typed if self.kineto == "2.14" else _printed
        metrics: dict[str, Any] = {"blocks per SM": show(bps), "warps per SM": show(wps), "occupancy": occupancy}
        if self.kineto != "classic" and calc is not None:
            metrics["occupancy object"] = _occupancy_object(calc, spec, threads, self.limits)
        return metrics

    def add(self, spec: KernelSpec) -> None:
        for _ in range(spec.repeat):
            self._add_one(spec)

    def _add_one(self, spec: KernelSpec) -> None:
        """Python frames, the op, its runtime launch, the kernel and (on NVIDIA) the flow arrows."""
        op_cat, runtime_cat, kernel_cat = self._cats
        tid: Any = str(self.tid) if self.era in ("2021", "pt18") else self.tid
        ext, corr = self._external, self._correlation
        self._external += 1
        self._correlation += 1
        start = self._clock
        depth = len(spec.python_stack)
        for i, frame in enumerate(spec.python_stack):
            self._complete("python_function", frame, (self.pid, tid), (start + i, 40.0 - 2 * i), {"Python id": i + 1})
        self._complete(op_cat, spec.op, (self.pid, tid), (start + depth + 1, 20.0), self._op_args(spec, ext))
        launch_args = {"External id": ext, "cbid": 211, "correlation": corr}
        if spec.launch is not None:
            self._complete(runtime_cat, spec.launch, (self.pid, tid), (start + depth + 3, 6.0), launch_args)
        device = self.devices + 3 if spec.plant == "C" else spec.device  # C: a device the trace does not describe
        kernel_ts = start + depth + 3 + spec.kernel_delay if spec.at is None else self._origin + spec.at
        if not spec.kernel:
            self._clock += 100.0
            return
        if self.rocm:  # roctracer records no per-SM metrics, registers or shared memory
            args = {
                "External id": ext,
                "device": device,
                "stream": 0,
                "correlation": corr,
                "kind": "Dispatch Kernel",
                "grid": list(spec.grid),
                "block": list(spec.block),
            }
            self._complete(kernel_cat, spec.name, (device, 0), (kernel_ts, spec.dur), args)
        else:
            kernel_tid: Any = f"stream {spec.stream}" if self.era in ("2021", "pt18") else spec.stream
            gpu_pid = 0 if self.era != "2024" else device
            args = self._kernel_args(spec, ext, corr, device)
            args["stream"] = spec.stream
            self._complete(kernel_cat, spec.name, (gpu_pid, kernel_tid), (kernel_ts, spec.dur), args)
            self._flow(corr, (self.pid, tid, start + depth + 3), (gpu_pid, kernel_tid, kernel_ts))
        self._clock += 100.0

    def _complete(
        self, cat: str, name: str, where: tuple[Any, Any], span: tuple[float, float], args: dict[str, Any]
    ) -> None:
        (pid, tid), (ts, dur) = where, span
        self._events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}
        )

    def _op_args(self, spec: KernelSpec, ext: int) -> dict[str, Any]:
        op_args: dict[str, Any] = {"External id": ext} if self.era == "2024" else {"external id": ext}
        if spec.input_dims is not None:
            op_args["Input Dims" if self.era == "2024" else "Input dims"] = spec.input_dims
            op_args["Input type"] = spec.input_types or []
        return op_args

    def _kernel_args(self, spec: KernelSpec, ext: int, corr: int, device: int) -> dict[str, Any]:
        """The kernel's args in this era's key order, with the metrics the profiler would print."""
        ids: dict[str, Any] = {"queued": 0, "device": device, "context": 1, "stream": 7, "correlation": corr}
        if self.era == "pt18":
            args: dict[str, Any] = {**ids, "external id": ext}
        else:
            args = {"External id": ext, **ids}
        args["registers per thread"] = spec.registers
        args["shared memory"] = spec.shared_memory
        metrics = self._metrics(spec)
        args["blocks per SM"] = metrics["blocks per SM"]
        args["warps per SM"] = metrics["warps per SM"]
        args["grid"] = list(spec.grid)
        args["block"] = list(spec.block)
        args["est. achieved occupancy %"] = metrics["occupancy"]
        if "occupancy object" in metrics:
            args["occupancy"] = metrics["occupancy object"]
        if self.kineto == "2.14":
            args.update({"graph id": 0, "graph node id": 0, "priority": 0})
        return args

    def _flow(self, corr: int, launch: tuple[Any, Any, float], kernel: tuple[Any, Any, float]) -> None:
        """The arrow from the launch to the kernel, as the profiler of this era writes it."""
        flow = "ac2g" if self.era == "2024" else "async"
        (pid, tid, ts), (gpu_pid, kernel_tid, kernel_ts) = launch, kernel
        self._events.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": ts, "cat": flow, "name": flow})
        self._events.append(
            {
                "ph": "f",
                "id": corr,
                "pid": gpu_pid,
                "tid": kernel_tid,
                "ts": kernel_ts,
                "cat": flow,
                "name": flow,
                "bp": "e",
            }
        )

    def add_call(self, name: str, dur: float = 2.0) -> int:
        """A runtime call that launches nothing (cudaStreamBeginCapture, cudaMemcpyAsync, ...); its correlation id."""
        corr = self._correlation
        self._correlation += 1
        self._complete(self._cats[1], name, (self.pid, self.tid), (self._clock, dur), {"correlation": corr})
        self._clock += dur + 3
        return corr

    def add_graph(self, specs: Sequence[KernelSpec], call: str = "cudaGraphLaunch", *, flows: bool = False) -> None:
        """One graph launch whose kernels all carry its correlation id (a replay, as CUPTI records it); ``flows``:
        Kineto's arrows too, one start at the launch call and an end at each kernel, all with that one id."""
        launch_ts = self._clock
        corr = self.add_call(call, dur=8.0)
        device = specs[0].device if specs else 0
        ts = self._clock + 20
        for spec in specs:
            args = self._kernel_args(spec, 0, corr, device)
            args["stream"] = spec.stream
            start = ts if spec.at is None else self._origin + spec.at
            self._complete(self._cats[2], spec.name, (device, spec.stream), (start, spec.dur), args)
            if flows:
                self._flow(corr, (self.pid, self.tid, launch_ts), (device, spec.stream, start))
            ts = start + spec.dur + 1
        self._clock = ts + 100

    def add_ranged(
        self, spec: KernelSpec, counters: dict[str, float] | None = None, *, correlated: bool = True
    ) -> None:
        """A launch measured by Kineto's CUPTI range profiler: its call, and a ``cuda_profiler_range`` event with
        the kernel's name, the launch's correlation id and one arg per counter instead of a kernel event
        (pytorch/kineto b5d29fc073, libkineto/src/CuptiRangeProfiler.cpp:182-195). ``correlated=False``: as Kineto
        wrote it before cd8d3190 (2025-05-31), without the id (CuptiRangeProfiler.cpp:170-186 at cd8d3190^)."""
        for _ in range(spec.repeat):
            corr = self._correlation
            self._add_one(dataclasses.replace(spec, kernel=False, repeat=1))
            args: dict[str, Any] = {"correlation": corr} if correlated else {}
            args.update(counters or {"kineto__cuda_core_flops": 1024.0})
            self._complete("cuda_profiler_range", spec.name, (spec.device, 0), (self._clock - 50.0, 10.0), args)

    def add_memcpy(self, dur: float = 4.0, *, device: int = 0, stream: int = 7) -> None:
        """A device copy: its runtime call and its GPU event (``dur`` as the profiler wrote it)."""
        corr = self.add_call("cudaMemcpyAsync")
        args = {"device": device, "context": 1, "stream": stream, "correlation": corr, "bytes": 4096}
        self._complete("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", (device, stream), (self._clock, dur), args)
        self._clock += 50

    def add_gpu_annotation(self, name: str, at: float, dur: float, *, device: int = 0, stream: int = 7) -> None:
        """A ``record_function`` range as Kineto draws it on the GPU row (``gpu_user_annotation``): it shares the
        kernels' row (pid = device, tid = stream), so Perfetto nests them under it. ``at`` as KernelSpec's."""
        self._complete(
            "gpu_user_annotation", name, (device, stream), (self._origin + at, dur), {"External id": self._external}
        )
        self._external += 1

    def wait(self, us: float) -> None:
        """Time passes with nothing recorded (ranks that start their steps at different times)."""
        self._clock += us

    def set_metadata(self, key: str, value: Any) -> None:
        """A top-level key of the trace (``distributedInfo``, ...)."""
        self._metadata[key] = value

    @property
    def last_correlation(self) -> int:
        """The correlation id of the latest launch or call added."""
        return self._correlation - 1

    @property
    def clock(self) -> float:
        """Where the next event starts (µs)."""
        return self._clock

    def span(self, name: str, specs: Sequence[KernelSpec], *, cat: str | None = None) -> tuple[float, float]:
        """An op (or, with ``cat="user_annotation"``, a record_function span such as ``ProfilerStep#N``) around
        these launches, on the same thread: PyTorch's tree makes their ops its children. Its (start, end)."""
        start = self._clock
        for spec in specs:
            self.add(spec)
        end = self._clock
        tid: Any = str(self.tid) if self.era in ("2021", "pt18") else self.tid
        args = {"External id": self._external}
        self._external += 1
        self._complete(cat or self._cats[0], name, (self.pid, tid), (start, end - start), args)
        return start, end

    def add_overhead(self, name: str, dur: float, *, correlation: int | None = None, ts: float | None = None) -> None:
        """A CUPTI overhead record as Kineto writes it (cat ``overhead``, pid -1); ``correlation`` plants the
        id an overhead record inherits from the launch it interrupted."""
        args = {"correlation": correlation} if correlation is not None else {}
        at = self._clock if ts is None else ts
        self._events.append(
            {
                "ph": "X",
                "cat": "overhead",
                "name": name,
                "pid": -1,
                "tid": 0,
                "ts": at,
                "dur": dur,
                **({"args": args} if args else {}),
            }
        )
        if ts is None:
            self._clock += dur + 1

    def add_counter(self, name: str, ts: float, value: float, device: int = 0) -> None:
        """A CUPTI PM-sampling sample (PyTorch 2.15+): a Chrome counter event under "GPU N Counters"."""
        self._events.append(
            {"ph": "C", "name": name, "pid": f"GPU {device} Counters", "tid": 0, "ts": ts, "args": {name: value}}
        )

    @property
    def kernel_spans(self) -> list[tuple[float, float]]:
        """(start, duration) of every kernel added so far, in order: where counter samples can land."""
        return [(e["ts"], e["dur"]) for e in self._events if e.get("cat") in ("kernel", "Kernel")]

    def add_cpu_op(self, name: str, dur: float = 30.0) -> None:
        """An op that launched nothing on a GPU (CPU-only profiles)."""
        op_cat = self._cats[0]
        self._events.append(
            {
                "ph": "X",
                "cat": op_cat,
                "name": name,
                "pid": self.pid,
                "tid": self.tid,
                "ts": self._clock,
                "dur": dur,
                "args": {"External id": self._external},
            }
        )
        self._external += 1
        self._clock += dur + 5

    def document(self) -> Any:
        """The trace as Python data (non-finite values as floats)."""
        if self.era == "pt18":
            return list(self._events)
        doc: dict[str, Any] = {"schemaVersion": 1}
        if self.rocm:
            doc["roctracer_version"] = 4
        if self.device_properties:
            doc["deviceProperties"] = [dict(self.props, id=i) for i in range(self.devices)]
        doc.update(self._metadata)
        doc["traceEvents"] = list(self._events)
        doc["traceName"] = "warpwizard-builder"
        return doc

    def text(self, *, minified: bool = False) -> str:
        """Serialised the way Kineto writes: one event per line, non-finite spelled per era."""
        doc = self.document()
        if minified:
            body = json.dumps(doc, separators=(",", ":"))
        elif isinstance(doc, list):
            body = "[\n  " + ",\n  ".join(json.dumps(e) for e in doc) + "\n]\n"
        else:
            head = {k: v for k, v in doc.items() if k not in ("traceEvents", "traceName")}
            parts = [f'  "{k}": {json.dumps(v)}' for k, v in head.items()]
            events = ",\n  ".join(json.dumps(e) for e in doc["traceEvents"])
            parts.append(f'  "traceEvents": [\n  {events}\n  ]')
            parts.append(f'  "traceName": {json.dumps(doc["traceName"])}')
            body = "{\n" + ",\n".join(parts) + "\n}\n"
        return _spell_nonfinite(body, self.nonfinite)

    def write(self, path: str | Path, *, minified: bool = False, truncate_at: int | None = None) -> Path:
        """Write ``.json`` or ``.json.gz`` (by suffix); ``truncate_at`` cuts the file like a crash would."""
        p = Path(path)
        data = self.text(minified=minified).encode()
        if truncate_at is not None:
            data = data[:truncate_at]
        if p.name.endswith(".gz"):
            write_bytes(p, gzip.compress(data, mtime=0), force=True)
        else:
            write_bytes(p, data, force=True)
        return p


_NONFINITE = re.compile(r'(?<![\w"])(-?Infinity|NaN)(?![\w"])')


def _spell_nonfinite(text: str, style: str) -> str:
    bare = {"Infinity": "inf", "-Infinity": "-inf", "NaN": "nan"}
    if style == "bare":
        return _NONFINITE.sub(lambda m: bare[m.group(1)], text)
    return _NONFINITE.sub(lambda m: f'"{bare[m.group(1)]}"', text)


def demo_launches() -> list[KernelSpec]:
    """A realistic mix of healthy launches (elementwise, reduction, GEMM above 48 KB)."""
    return [
        KernelSpec(
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >",
            (4096, 1, 1),
            (128, 1, 1),
            26,
            0,
            "aten::add",
            [[1024, 512], [1024, 512], []],
            ["float", "float", "Scalar"],
            ("train.py(41): step", "model.py(88): forward"),
        ),
        KernelSpec(
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >",
            (264, 1, 1),
            (32, 16, 1),
            32,
            16,
            "aten::sum",
            [[1024, 512]],
            ["float"],
            ("train.py(41): step", "model.py(90): forward"),
        ),
        KernelSpec(
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
            (8, 16, 1),
            (384, 1, 1),
            168,
            231424,
            "aten::mm",
            [[1024, 4096], [4096, 2048]],
            ["c10::BFloat16", "c10::BFloat16"],
            ("train.py(41): step", "model.py(95): forward"),
        ),
    ]
