# SPDX-License-Identifier: MIT
"""A small PyTorch training loop: time per step, steady state.

    python3 bench/train.py [STEPS]
Prints "ms_per_step X".  Run under gpuleak and without to get the slowdown; with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 every tensor is a cudaMalloc/cudaFree pair."""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 10),
).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(512, 1024, device="cuda")
y = torch.randint(0, 10, (512,), device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(30):  # warm up: kernels, cuBLAS handles, the allocator's pools
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    step()
torch.cuda.synchronize()
print(f"ms_per_step {(time.perf_counter() - t0) * 1e3 / steps:.4f}")
