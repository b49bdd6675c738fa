"""A few steps of a tiny model: the smallest workload warpwizard can profile."""

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
x = torch.randn(64, 256, device=device)
for _ in range(3):
    loss = model(x).square().mean()
    loss.backward()
print(f"ran 3 steps on {device}")
