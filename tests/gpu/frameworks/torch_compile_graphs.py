# SPDX-License-Identifier: MIT
"""torch.compile(mode="reduce-overhead"): Inductor's kernels replayed as CUDA
graphs through cudagraph trees, whose memory is a private pool in PyTorch's
caching allocator, for inference and for a training step (forward and
backward graphs).  Under gpuleak: no definite or possible leak, no API
error, and the cached device total equals torch.cuda.memory_reserved() read
at exit (the trees' pool included)."""
import atexit
import gc

import torch


def report():
    torch.cuda.synchronize()
    print(f"torch_compile_graphs: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                            torch.nn.Linear(256, 64)).cuda()
infer = torch.compile(model, mode="reduce-overhead")
with torch.no_grad():
    for _ in range(4):
        infer(torch.randn(32, 64, device="cuda")).sum().item()

train = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for _ in range(4):
    torch.compiler.cudagraph_mark_step_begin()
    loss = train(torch.randn(32, 64, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
loss = loss.item()
del model, infer, train, opt
gc.collect()
torch.cuda.synchronize()
atexit.register(report)
print("torch_compile_graphs: done", flush=True)
