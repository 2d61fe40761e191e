# SPDX-License-Identifier: MIT
"""PyTorch, CuPy and JAX in one process, arrays handed between PyTorch and
CuPy through DLPack: each side's memory stays in its own allocator's pool
while the other holds it.  Under gpuleak: no definite or possible leak, no
API error; PyTorch's cached device memory equals torch.cuda.memory_reserved()
and CuPy's cached memory its pool's total_bytes(), both read at exit."""
import atexit
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import cupy  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402


def report():
    torch.cuda.synchronize()
    print(f"mixed: reserved {torch.cuda.memory_reserved()} "
          f"cupy {cupy.get_default_memory_pool().total_bytes()}", flush=True)


a = cupy.arange(1 << 20, dtype=cupy.float32)
from_cupy = torch.from_dlpack(a)  # PyTorch's view of CuPy's pool memory
del a
b = torch.ones(1 << 20, device="cuda")
from_torch = cupy.from_dlpack(b)  # CuPy's view of PyTorch's segment
del b
total = float((from_cupy * 2).sum()) + float(from_torch.sum())
total += float((jnp.ones((512, 512)) @ jnp.ones((512, 512))).sum())
kept = [from_cupy, from_torch]  # held to the end, each by the other framework
torch.cuda.synchronize()
atexit.register(report)
print(f"mixed: done {total}", flush=True)
