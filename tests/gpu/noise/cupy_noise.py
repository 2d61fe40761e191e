# SPDX-License-Identifier: MIT
"""CuPy without its memory pool, through cuBLAS."""
import cupy

cupy.cuda.set_allocator(None)
cupy.cuda.set_pinned_memory_allocator(None)
a = cupy.random.rand(512, 512, dtype=cupy.float32)
b = a @ a
cupy.cuda.Device().synchronize()
del a, b
print("cupy_noise: done")
