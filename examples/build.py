"""Build the example traces with warpwizard's own trace builder.

    python examples/build.py           # (re)write examples/traces/
    python examples/build.py --check   # exit 1 if a committed trace differs from what this builds

Every value is what a real profiler prints for that launch (same int32/float32
arithmetic); the planted mechanism of each file is listed in examples/manifest.yaml.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from wizard.testing.traces import KernelSpec, TraceBuilder, demo_launches

HERE = Path(__file__).resolve().parent
STACK = ("train.py(57): <module>", "train.py(41): train_step", "model.py(88): forward")


def gather_kernel() -> KernelSpec:
    """An indexing kernel over 3e9 elements: a legal launch of 3,000,000,000 blocks."""
    return KernelSpec("void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<float> >",
                      (100000, 30000, 1), (256, 1, 1), 32, 0, "aten::index_select",
                      [[3000000000, 1], [], [3000000000]], ["float", "Scalar", "long int"], STACK)


def healthy() -> list[KernelSpec]:
    return demo_launches()


def examples() -> dict[str, TraceBuilder]:
    out: dict[str, TraceBuilder] = {}

    b = TraceBuilder(gpu="H100")
    for spec in healthy():
        b.add(spec)
    b.add(gather_kernel())
    out["grid-overflow.json"] = b

    b = TraceBuilder(gpu="V100", era="2021")
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >",
                     (2097152, 1, 1), (1024, 1, 1), 24, 0, "aten::add", [[2147483648], [2147483648], []],
                     ["float", "float", "Scalar"], plant="A'"))
    out["early-overflow.json"] = b

    b = TraceBuilder(gpu="RTX2080Ti", era="pt18", device_properties=False)
    b.add(KernelSpec("volta_sgemm_128x64_nn", (99, 1, 1), (128, 1, 1), 126, 8704, "aten::mm",
                     [[1024, 1024], [1024, 512]], ["float", "float"], plant="B", repeat=3))
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::ReluFunctor<float> >",
                     (512, 1, 1), (128, 1, 1), 20, 0, "aten::relu", [[1024, 512]], ["float"], plant="B"))
    out["old-sm-count.json"] = b

    b = TraceBuilder(gpu="A100", devices=2, nonfinite="bare")
    for spec in healthy()[:2]:
        b.add(spec)
    b.add(KernelSpec("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >", (1728, 1, 1),
                     (512, 1, 1), 32, 16, "aten::sum", [[8192, 4096]], ["float"], STACK, plant="C"))
    out["unknown-device-bare-inf.json"] = b

    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
                     (2048, 1, 1), (128, 1, 1), 28, 0, "aten::gelu", [[4096, 1024]], ["c10::BFloat16"], STACK,
                     plant="D", repeat=2))
    out["occupancy-calculator.json"] = b

    b = TraceBuilder(gpu="H100")
    b.add(healthy()[2])
    b.add(KernelSpec("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t> >",
                     (16, 32, 8), (128, 1, 1), 255, 98304, "aten::_flash_attention_forward",
                     [[8, 2048, 32, 128], [8, 2048, 32, 128], [8, 2048, 32, 128]],
                     ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"], STACK))
    out["shared-memory-over-48k.json"] = b

    b = TraceBuilder(gpu="A100")
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
                     (96800, 1, 1), (128, 1, 1), 16, 0, "aten::fill_", [[49561600], []], ["float", "Scalar"]))
    b.add(KernelSpec("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >", (108, 1, 1),
                     (512, 1, 1), 32, 16, "aten::sum", [[1024, 512]], ["float"]))
    out["large-by-design.json"] = b

    b = TraceBuilder(gpu="A100")
    b.add(KernelSpec("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >", (54, 1, 1),
                     (256, 1, 1), 32, 16, "aten::sum", [[1024, 64]], ["float"]))
    out["healthy-small.json"] = b

    b = TraceBuilder(gpu="MI300X")
    for spec in healthy()[:2]:
        b.add(spec)
    out["rocm-mi300x.json"] = b

    b = TraceBuilder(gpu="H100")
    for name in ("aten::empty", "aten::randn", "aten::mm", "aten::relu"):
        b.add_cpu_op(name)
    out["cpu-only.json"] = b

    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("void my_ext::scatter_rows_kernel<float>", (4096, 1, 1), (256, 1, 1), 40, 0,
                     "my_ext::scatter_rows", [[65536, 256], [65536]], ["float", "long int"], STACK, plant="wrong-sms"))
    out["unexplained-custom-kernel.json"] = b

    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float> >",
                     (2048, 1, 1), (128, 1, 1), 24, 0, "aten::mul", [[1024, 256], [1024, 256]], ["float", "float"],
                     plant="garbled"))
    out["unexplained-aten-op.json"] = b

    b = TraceBuilder(gpu="H100")
    b.add(KernelSpec("void corrupted_record_kernel", (2048, 1, 1), (128, 1, 1), 300, 0, "aten::mul",
                     [[1024, 256], [1024, 256]], ["float", "float"], plant="garbled"))
    out["impossible-registers.json"] = b
    out.update(health_examples())
    return out


def _step(b: TraceBuilder, n: int = 2, **kw: object) -> None:
    """Healthy launches of the demo mix (the steps around a planted problem; its GEMM above 48 KB left out,
    so each example has its one problem)."""
    for spec in healthy()[:n]:
        for key, value in kw.items():
            setattr(spec, key, value)
        b.add(spec)


def _nccl(b: TraceBuilder, waits: list[float]) -> None:
    for wait in waits:
        b.wait(wait)
        b.add(KernelSpec("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", (4, 1, 1), (512, 1, 1), 96, 0,
                         "nccl:all_reduce", [[4194304]], ["c10::BFloat16"], dur=40.0))
        _step(b, 2)


def health_examples() -> dict[str, TraceBuilder]:
    """One trace per health-check playbook, each with its problem planted by the builder."""
    out: dict[str, TraceBuilder] = {}

    b = TraceBuilder(gpu="H100")  # kernels-missing: the middle step's kernels never arrived
    _step(b)
    for spec in healthy()[:2]:
        spec.kernel = False
        b.add(spec)
    _step(b)
    _step(b)
    out["kernels-missing.json"] = b

    b = TraceBuilder(gpu="H100")  # kernels-hidden: PDL launches start 1 µs before their predecessor on stream 7 ends
    _step(b)
    for i in range(3):
        b.add(KernelSpec(f"void moe::fused_moe_kernel<{i}>", (132, 1, 1), (256, 1, 1), 128, 65536,
                         "moe::fused_experts", [[4096, 7168]], ["c10::BFloat16"], launch="cuLaunchKernelEx", dur=101.0))
    _step(b)
    out["kernels-hidden.json"] = b

    b = TraceBuilder(gpu="H100")  # cuda-graphs: three replays of a 5-kernel graph, the last one not recorded at all
    nodes = [KernelSpec(f"triton_poi_fused_{i}", (512, 1, 1), (128, 1, 1), 32, 0, "") for i in range(5)]
    b.add_graph(nodes)
    b.add_graph(nodes[:1])
    b.add_graph([])
    out["cuda-graphs.json"] = b

    b = TraceBuilder(gpu="H100")  # impossible-timing: every kernel 4 µs before its launch call
    _step(b, 2, kernel_delay=-4.0)
    _step(b, 2, kernel_delay=-4.0)
    out["impossible-timing.json"] = b

    b = TraceBuilder(gpu="H100")  # summary-table: an overhead record carries aten::add's launch id (pytorch#193392)
    _step(b)
    b.add(KernelSpec("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >",
                     (4096, 1, 1), (128, 1, 1), 26, 0, "aten::add", [[1024, 512], [1024, 512], []],
                     ["float", "float", "Scalar"], dur=8.0))
    b.add_overhead("Activity Buffer Request", 12.0, correlation=b.last_correlation)
    _step(b)
    out["summary-table.json"] = b

    for rank, waits in enumerate(([0, 0, 0], [850, 0, 0], [300, 700, 0])):  # rank-skew: rank 2 arrives late
        b = TraceBuilder(gpu="H100")
        b.set_metadata("distributedInfo", {"rank": rank, "world_size": 3})
        _nccl(b, waits)
        out[f"rank-skew/rank{rank}.json"] = b
    for rank, waits in enumerate(([0, 0, 0], [3, 0, 0], [0, 2, 0])):  # after a barrier: µs apart
        b = TraceBuilder(gpu="H100")
        b.set_metadata("distributedInfo", {"rank": rank, "world_size": 3})
        _nccl(b, waits)
        out[f"rank-skew-baseline/rank{rank}.json"] = b
    return out


def write_all(target: Path) -> list[Path]:
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, builder in examples().items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)  # a rank directory's traces
        written.append(builder.write(target / name))
    corrupt = target / "corrupt.json"
    good = TraceBuilder(gpu="H100")
    good.add(healthy()[0])
    text = good.text()
    cut = text.index('"ph": "X"', text.index('"traceEvents"') + 200)
    corrupt.write_text(text[:cut] + '"ph": X' + text[cut + len('"ph": "X"'):], encoding="utf-8")  # a bare word
    written.append(corrupt)
    return written


def main(argv: list[str]) -> int:
    traces = HERE / "traces"
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            made = {str(p.relative_to(tmp)): p for p in write_all(Path(tmp))}
            stale = [name for name, p in made.items()
                     if not (traces / name).exists() or (traces / name).read_bytes() != p.read_bytes()]
        if stale:
            print(f"stale examples (run python examples/build.py): {', '.join(stale)}")
            return 1
        print("examples are current")
        return 0
    for path in write_all(traces):
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
