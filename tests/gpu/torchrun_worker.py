# SPDX-License-Identifier: MIT
"""A torchrun worker: a small PyTorch CUDA computation, then one block of its own
size leaked with the driver's cuMemAlloc (ctypes) in the context PyTorch made.
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 torchrun_worker.py
Expected under gpuleak --log-file=DIR/gl.%p.log: one report per worker, each with
its block (3,000,000 + 100,000 x rank bytes); the torchrun agent unharmed (exit 0)."""
import ctypes
import os
import sys

import torch

rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank % torch.cuda.device_count())
x = torch.arange(1 << 16, device="cuda", dtype=torch.int64)
total = int((x * 2).sum().item())
if total != (1 << 16) * ((1 << 16) - 1):
    sys.exit(f"torchrun_worker: rank {rank}: sum {total}")

size = 3000000 + 100000 * rank
cu = ctypes.CDLL("libcuda.so.1")


def leak():
    p = ctypes.c_uint64()
    err = cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))
    if err:
        sys.exit(f"torchrun_worker: cuMemAlloc failed with {err}")


leak()
# One write for the line: the workers share the pipe (tests/gpu/mp_workers.py).
sys.stdout.flush()
os.write(1, f"torchrun_worker: rank {rank} pid {os.getpid()} leaked {size}\n".encode())
