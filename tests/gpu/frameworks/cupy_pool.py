# SPDX-License-Identifier: MIT
"""CuPy with its default memory pool: arrays made and freed, none kept.  A leak
check while the pool still holds its memory finds no definite leak and the
pool's memory cached, to the byte of pool.total_bytes(); the exit report finds
no definite leak either."""
import cupy

import gpuleak

for i in range(10):
    a = cupy.arange((i + 1) * 100000, dtype=cupy.float32)
    b = (a * 2).sum()
    del a, b
big = cupy.empty(32 << 20, dtype=cupy.uint8)
del big
cupy.cuda.Device().synchronize()
pool = cupy.get_default_memory_pool()
errors, text = gpuleak.leak_report(kinds=["definite", "indirect", "possible", "reachable", "cached"])
print(text)
print(f"cupy_pool: total {pool.total_bytes()} used {pool.used_bytes()}", flush=True)
print("cupy_pool: done", flush=True)
