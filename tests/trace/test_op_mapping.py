"""Kernel -> runtime call (correlation) -> innermost op, with shapes, dtypes and Python stack."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TRACES, needs_shared
from wizard.testing.traces import KernelSpec, TraceBuilder
from wizard.trace.metrics.classify import link_op
from wizard.trace.read.reader import read_trace


def kernel(contents_path: Path, prefix: str):  # type: ignore[no-untyped-def]
    contents = read_trace(contents_path)
    return contents, next(k for k in contents.kernels if k.name.startswith(prefix))


@needs_shared
def test_h100_gemm_maps_to_addmm_with_shapes_and_stack() -> None:
    contents, k = kernel(TRACES / "h100-bert-small.json.gz", "sm90_xmma_gemm")
    link = link_op(contents, k)
    assert link is not None
    assert link.op == "aten::addmm" and link.runtime_call.startswith(("cudaLaunchKernel", "cuLaunchKernel"))
    assert link.input_dims is not None and "[141,2048]" in link.input_dims
    assert link.input_types is not None and "c10::BFloat16" in link.input_types
    assert any("linear.py" in frame for frame in link.python_stack)


@needs_shared
def test_2021_format_maps_through_runtime_category() -> None:
    contents, k = kernel(TRACES / "v100-resnet50-2021.pt.trace.json.gz", "cask_cudnn::computeOffsetsKernel")
    link = link_op(contents, k)
    assert link is not None and link.op is not None and link.op.startswith("aten::")


@needs_shared
def test_pytorch_18_array_format() -> None:
    contents = read_trace(TRACES / "v100-resnet50-pt18-array-format.pt.trace.json.gz")
    linked = [link_op(contents, k) for k in contents.kernels[:3000]]
    # each cuDNN kernel family maps to the one op that launches it
    families = {
        "cudnn::cnn::wgrad_alg0_engine": {"aten::cudnn_convolution_backward_weight"},
        "cudnn::detail::dgrad_engine": {"aten::cudnn_convolution_backward_input"},
        "cudnn::bn_fw_tr_1C11": {"aten::cudnn_batch_norm"},
        "cudnn::bn_bw_1C11": {"aten::cudnn_batch_norm_backward"},
    }
    for family, expected in families.items():
        ops = {
            link.op
            for k, link in zip(contents.kernels[:3000], linked, strict=True)
            if link is not None and family in k.name
        }
        assert ops == expected, family
    # 2,236 of the first 3,000 link; 736 have no runtime call in the trace and 28 no op around theirs
    assert sum(link is not None for link in linked) == 2236


def test_builder_trace_maps_to_its_op(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(
        KernelSpec(
            "k1",
            (10, 1, 1),
            (32, 1, 1),
            op="aten::mul",
            input_dims=[[4, 4], [4, 4]],
            input_types=["float", "float"],
            python_stack=("a.py(1): main", "b.py(2): f"),
        )
    )
    b.add(KernelSpec("k2", (10, 1, 1), (32, 1, 1), op="aten::index_select"))
    contents = read_trace(b.write(tmp_path / "t.json"))
    first = link_op(contents, contents.kernels[0])
    second = link_op(contents, contents.kernels[1])
    assert first is not None and first.op == "aten::mul" and first.input_dims == "[[4,4],[4,4]]"
    assert first.python_stack == ["a.py(1): main", "b.py(2): f"]
    assert second is not None and second.op == "aten::index_select" and second.python_stack == []


@needs_shared
def test_one_sweep_finds_the_same_innermost_op_as_one_lookup_each() -> None:
    """The library links every launch to its op in one sweep per thread; it must agree with the
    per-kernel lookup the reports use, on every real trace."""
    import glob

    paths = sorted(glob.glob(str(TRACES / "*.json*"))) + sorted(glob.glob(str(TRACES / "*" / "*.json*")))
    compared = 0
    for path in paths:
        contents = read_trace(path)
        calls = contents.runtime.find({k.correlation for k in contents.kernels if k.correlation is not None})
        queries = [(c.pid, c.tid, c.ts) for c in calls.values()]
        swept = contents.ops.innermost_many(queries)
        assert swept == [contents.ops.innermost(*q) for q in queries], path
        compared += sum(op is not None for op in swept)
    assert compared == 47_733  # launches with an op around their runtime call, over all the traces
