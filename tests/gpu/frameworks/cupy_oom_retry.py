# SPDX-License-Identifier: MIT
"""CuPy's memory pool meets an out-of-memory and recovers: arrays freed into
the pool hold most of the GPU, a request none of them fits makes cudaMalloc
fail, the pool frees its free blocks and retries, and the program never sees
an error.  Then a request no device could serve raises OutOfMemoryError,
which the program catches.  Expected under gpuleak: every failed cudaMalloc
matched by frameworks.supp (0 errors), no leak, exit 0.
With the argument "async", CuPy allocates from MemoryAsyncPool
(cudaMallocAsync), which synchronizes and retries a failed request twice
before it raises: only the request no device could serve is made."""
import sys

import cupy

free, total = cupy.cuda.runtime.memGetInfo()
if sys.argv[1:] == ["async"]:
    pool = cupy.cuda.MemoryAsyncPool()
    cupy.cuda.set_allocator(pool.malloc)
    x = cupy.arange(1 << 20, dtype=cupy.float32)
    print(f"cupy_oom_retry: async pool, sum {float(x.sum())}", flush=True)
    del x
else:
    chunk = 1 << 30
    cached = [cupy.empty(chunk, dtype=cupy.uint8) for _ in range(int(free * 0.9) // chunk)]
    del cached  # freed by the program, kept by the pool (total_bytes)
    pool = cupy.get_default_memory_pool()
    held = pool.total_bytes()
    # Larger than any free block, and more than the device has left.
    big = cupy.empty(int(free * 0.5), dtype=cupy.uint8)
    print(f"cupy_oom_retry: retried (pool {held >> 30} GiB before, "
          f"{pool.total_bytes() >> 30} GiB after)", flush=True)
    del big
try:
    cupy.empty(total * 2, dtype=cupy.uint8)
    print("cupy_oom_retry: no OOM?")
except cupy.cuda.memory.OutOfMemoryError:
    print("cupy_oom_retry: caught OutOfMemoryError", flush=True)
pool.free_all_blocks()
print("cupy_oom_retry: done", flush=True)
