# SPDX-License-Identifier: MIT
"""A PyTorch training loop that frees its tensors: under gpuleak no definite or
possible leak, and the cached total equals torch.cuda.memory_reserved() read at
exit.  Run it with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync or
expandable_segments:True for the other allocators."""
import atexit

import torch


def report():
    torch.cuda.synchronize()
    print(f"torch_train: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(20):
    x = torch.randn(64 * (1 + step % 4), 256, device="cuda")  # varying sizes: several segments
    y = torch.randint(0, 10, (x.shape[0],), device="cuda")
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # a large segment of its own
del big, x, y, loss, model, opt
torch.cuda.synchronize()
atexit.register(report)
print("torch_train: done", flush=True)
