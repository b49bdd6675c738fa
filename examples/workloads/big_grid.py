"""Mechanism A on a real GPU: one legal launch of 46341 x 46341 = 2,147,488,281 blocks (> 2^31-1).

The kernel writes a flag from its first and last block, so the run proves the whole grid
ran. Under torch.profiler the trace shows negative blocks/warps per SM for it.
"""

import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _kernels import compile_kernel  # noqa: E402

SOURCE = r"""
extern "C" __global__ void ww_big_grid(int* flags) {
    unsigned long long b = (unsigned long long)blockIdx.y * gridDim.x + blockIdx.x;
    unsigned long long last = (unsigned long long)gridDim.x * gridDim.y - 1ULL;
    if (threadIdx.x == 0 && b == 0ULL) flags[0] = 1;
    if (threadIdx.x == 0 && b == last) flags[1] = 1;
}
"""


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("big_grid.py needs a CUDA GPU")
    kernel = compile_kernel(SOURCE, "ww_big_grid")
    flags = torch.zeros(2, dtype=torch.int32, device="cuda")
    kernel((46341, 46341, 1), (32, 1, 1), [flags])
    torch.cuda.synchronize()
    assert flags.tolist() == [1, 1], f"the whole grid did not run: {flags.tolist()}"
    print("big grid ran: first and last block wrote their flags")


if __name__ == "__main__":  # the harness runs it as __main__; examples/python imports SOURCE
    main()
