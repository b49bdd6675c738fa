"""Compile a raw CUDA kernel from Python: torch.cuda._compile_kernel (NVRTC, torch >= 2.8),
else torch.utils.cpp_extension.load_inline (needs nvcc and ninja). Triton cannot be used:
its launcher silently skips grids whose int product is not positive (triton issue 7260)."""

from __future__ import annotations

import ctypes
import glob
import os
from typing import Any

import torch


def _preload_nvrtc() -> None:
    """_compile_kernel dlopens an unversioned libnvrtc.so; load the wheel's versioned one first."""
    roots = [os.path.dirname(torch.__file__), *[p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]]
    for root in roots:
        for lib in sorted(glob.glob(os.path.join(root, "..", "nvidia", "*nvrtc*", "lib", "libnvrtc.so*"))
                          + glob.glob(os.path.join(root, "libnvrtc.so*"))):
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def compile_kernel(source: str, name: str) -> Any:
    """A callable kernel(grid, block, args, shared_mem)."""
    if hasattr(torch.cuda, "_compile_kernel"):
        _preload_nvrtc()
        try:
            kernel = torch.cuda._compile_kernel(source, name)

            def launch(grid: tuple[int, int, int], block: tuple[int, int, int], args: list[Any],
                       shared_mem: int = 0) -> None:
                if shared_mem > 48 * 1024 and hasattr(kernel, "set_shared_memory_config"):
                    kernel.set_shared_memory_config(shared_mem)
                kernel(grid=grid, block=block, args=args, shared_mem=shared_mem)

            return launch
        except Exception as exc:  # noqa: BLE001 - fall back to nvcc below
            print(f"_compile_kernel failed ({exc}); trying load_inline")
    from torch.utils.cpp_extension import load_inline

    wrapper = f"""
#include <torch/extension.h>
#include <cuda_runtime.h>
{source}
void launch(torch::Tensor t, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t smem) {{
  if (smem > 48 * 1024) cudaFuncSetAttribute({name}, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  {name}<<<dim3(gx, gy, gz), dim3(bx), smem>>>(t.data_ptr<int>());
  TORCH_CHECK(cudaGetLastError() == cudaSuccess, "launch failed");
}}
"""
    module = load_inline(name=f"ww_{name}", cpp_sources="void launch(torch::Tensor, int64_t, int64_t, int64_t, int64_t, int64_t);",
                         cuda_sources=wrapper, functions=["launch"], verbose=False)

    def launch_inline(grid: tuple[int, int, int], block: tuple[int, int, int], args: list[Any],
                      shared_mem: int = 0) -> None:
        module.launch(args[0], grid[0], grid[1], grid[2], block[0], shared_mem)

    return launch_inline
