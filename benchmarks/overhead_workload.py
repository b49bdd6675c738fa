"""A CPU training loop of many small ops, for the profiler.overhead probe's measurement (docs/performance.md):
the profiler's cost is per op, so small ops show it most."""

import torch

torch.manual_seed(0)
torch.set_num_threads(1)  # one thread: on a shared machine two intra-op threads wait for each other
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
for _ in range(100):
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()
