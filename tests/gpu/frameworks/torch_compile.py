# SPDX-License-Identifier: MIT
"""torch.compile: Inductor generates Triton kernels, which load their own
modules and run on PyTorch's allocator.  A compiled model trained a few steps,
everything freed: no definite or possible leak, no API error, and the cached
total equals torch.cuda.memory_reserved() read at exit."""
import atexit

import torch


def report():
    torch.cuda.synchronize()
    print(f"torch_compile: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                            torch.nn.Linear(256, 64)).cuda()
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for step in range(5):
    x = torch.randn(128, 64, device="cuda")
    loss = compiled(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
del model, compiled, opt, x, loss
torch.cuda.synchronize()
atexit.register(report)
print("torch_compile: done", flush=True)
