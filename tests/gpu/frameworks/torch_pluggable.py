# SPDX-License-Identifier: MIT
"""PyTorch with an allocator plugged in (torch.cuda.memory.CUDAPluggableAllocator,
tests/gpu/torch_alloc.cu): no cache, each tensor a cudaMalloc of the plugged-in
allocator's.  A few linear layers trained (cuBLAS and cuBLASLt: their
workspaces, which PyTorch keeps, come from the allocator too), everything
else freed.  Expected: the workspaces cached by their rules, nothing lost.

    python3 torch_pluggable.py LIBRARY"""
import sys

import torch

alloc = torch.cuda.memory.CUDAPluggableAllocator(sys.argv[1], "torch_alloc", "torch_free")
torch.cuda.memory.change_current_allocator(alloc)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 64)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(128, 64, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
del model, opt, x, loss
torch.cuda.synchronize()
print("torch_pluggable: done", flush=True)
