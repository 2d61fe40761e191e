# SPDX-License-Identifier: MIT
"""JAX on a GPU that other work already fills: XLA preallocates 75% of the
GPU's memory, the request fails, and its BFC allocator asks for 10% less until
one fits.  The program sees no error, so neither may the report
(frameworks.supp).  The crowd is this process's own cuMemAlloc, made before
JAX starts, so that at most half of the GPU is free; it is freed at the end."""
import ctypes

cuda = ctypes.CDLL("libcuda.so.1")
size_t, u64 = ctypes.c_size_t, ctypes.c_uint64


def ok(rc, what):
    if rc != 0:
        raise SystemExit(f"jax_crowded: {what} returned {rc}")


ok(cuda.cuInit(0), "cuInit")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
ok(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ok(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ok(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
free, total = size_t(), size_t()
ok(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo_v2")
crowd, fill = u64(0), free.value - total.value // 2
if fill > 0:
    ok(cuda.cuMemAlloc_v2(ctypes.byref(crowd), size_t(fill)), "cuMemAlloc_v2")
print(f"jax_crowded: {fill} of {total.value} bytes taken before JAX", flush=True)

import jax.numpy as jnp  # noqa: E402 (after the crowd, on purpose)

x = jnp.arange(1 << 20, dtype=jnp.float32)
print(f"jax_crowded: sum {float((x * 2).sum())}", flush=True)
del x
if crowd.value:
    ok(cuda.cuMemFree_v2(crowd), "cuMemFree_v2")
print("jax_crowded: done", flush=True)
