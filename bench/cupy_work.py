# SPDX-License-Identifier: MIT
"""A CuPy workload: time per step, steady state.

    python3 bench/cupy_work.py [STEPS] [--no-pool]
Each step works on 1024x1024 float32 arrays (4 MiB): elementwise arithmetic and
transcendentals, a matmul (cuBLAS), reductions, a 2-D real FFT (cuFFT) and its
inverse, a pick by argmax, a concatenation: about 50 temporary arrays made and
dropped per step, as array code does.  Prints "ms_per_step X".  With
--no-pool, cupy.cuda.set_allocator(None): every array is a cudaMalloc/cudaFree
pair instead of a block of CuPy's memory pool (CuPy has no environment variable
for it)."""
import sys
import time

import cupy as cp

args = [a for a in sys.argv[1:] if not a.startswith("--")]
if "--no-pool" in sys.argv[1:]:
    cp.cuda.set_allocator(None)
    cp.cuda.set_pinned_memory_allocator(None)
steps = int(args[0]) if args else 300

N = 1024
cp.random.seed(0)
x = cp.random.standard_normal((N, N)).astype(cp.float32)
w = (cp.random.standard_normal((N, N)) / N ** 0.5).astype(cp.float32)
bias = cp.random.standard_normal((N,)).astype(cp.float32)
acc = cp.zeros((), dtype=cp.float32)


def step(x):
    global acc
    # elementwise: each operator is a kernel and a new array
    y = cp.tanh(x * 0.5 + bias) + cp.exp(-x * x) * 0.1
    y = cp.where(y > 0, y, y * 0.01)
    # matmul, then a softmax by rows (reductions with keepdims)
    z = y @ w
    z = z - z.max(axis=1, keepdims=True)
    e = cp.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    # normalization by columns
    mu = p.mean(axis=0)
    sd = p.std(axis=0) + 1e-6
    q = (p - mu) / sd
    # FFT: a low-pass filter, there and back
    f = cp.fft.rfft2(q)
    f[N // 8:, :] = 0
    f[:, N // 8:] = 0
    r = cp.fft.irfft2(f, s=q.shape).astype(cp.float32)
    # a few reductions and index work
    top = cp.argmax(r, axis=1)
    picked = r[cp.arange(N), top]
    both = cp.concatenate([picked, r.min(axis=1)])
    acc = acc + both.sum() * 1e-6 + cp.linalg.norm(r) * 1e-9
    return cp.clip(x + 0.01 * r, -4, 4)


for _ in range(20):  # warm up: kernel compilation (cached on disk), cuBLAS/cuFFT plans, the pool
    x = step(x)
cp.cuda.Device().synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    x = step(x)
float(acc)  # waits for the device
print(f"ms_per_step {(time.perf_counter() - t0) * 1e3 / steps:.4f}")
