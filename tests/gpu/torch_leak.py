# SPDX-License-Identifier: MIT
"""A PyTorch program with one real leak and tensors it keeps to the end.

- torch.cuda.caching_allocator_alloc(3 MiB) is never given back: with
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 it is one cudaMalloc that nothing frees.
- Tensors kept in a global list are freed when the interpreter tears its modules
  down, before C exit handlers run: the exit report does not list them (a
  leak check from the program, gpuleak.leak_check(), sees them while they live).
Exits with status 3, to check that the status survives gpuleak."""
import sys

import torch

kept = []


def step(i):
    x = torch.randn(256, 256, device="cuda")
    y = x @ x
    kept.append(y)
    return float(y.sum())


for i in range(5):
    step(i)
raw = torch.cuda.caching_allocator_alloc(3 * 1024 * 1024)  # never deleted: the leak
torch.cuda.synchronize()
print("torch_leak: done", len(kept))
sys.exit(3)
