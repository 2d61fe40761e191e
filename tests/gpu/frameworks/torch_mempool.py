# SPDX-License-Identifier: MIT
"""torch.cuda.MemPool: tensors made inside `with torch.cuda.use_mem_pool(pool)`
come from segments of that pool alone, which PyTorch keeps apart from its
default pool and releases when the pool goes.  A leak check while the pool
lives names every segment of both pools cached, their total
torch.cuda.memory_reserved() (printed just before); the exit report, after
the pool is gone, has the default pool's segments only."""
import atexit

import torch

import gpuleak


def report():
    torch.cuda.synchronize()
    print(f"torch_mempool: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


pool = torch.cuda.MemPool()
with torch.cuda.use_mem_pool(pool):
    kept = [torch.empty(1 << 22, device="cuda") for _ in range(4)]
outside = torch.empty(1 << 20, device="cuda")
del kept[0]  # back to the pool, which keeps its segment
torch.cuda.synchronize()
print(f"torch_mempool: pool live, reserved {torch.cuda.memory_reserved()}", flush=True)
errors, text = gpuleak.leak_report(kinds=["definite", "indirect", "possible", "reachable",
                                          "cached"])
print(text, flush=True)
del kept, outside
del pool  # its segments, now all free, are released
torch.cuda.synchronize()
atexit.register(report)
print("torch_mempool: done", flush=True)
