"""Mechanism E on a real GPU: a kernel with 100 KB of dynamic shared memory (opt-in above 48 KB).

Kineto prints est. achieved occupancy % = 0 for it although it runs; ncu's
launch__occupancy_limit_shared_mem is above 0.
"""

import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _kernels import compile_kernel  # noqa: E402

SOURCE = r"""
extern "C" __global__ void ww_big_smem(int* out) {
    extern __shared__ int tile[];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = tile[blockDim.x - 1];
}
"""

if not torch.cuda.is_available():
    sys.exit("big_smem.py needs a CUDA GPU")
kernel = compile_kernel(SOURCE, "ww_big_smem")
out = torch.zeros(264, dtype=torch.int32, device="cuda")
kernel((264, 1, 1), (256, 1, 1), [out], shared_mem=100 * 1024)
torch.cuda.synchronize()
assert out.eq(255).all().item(), "the kernel did not run"
print("big shared-memory kernel ran")
