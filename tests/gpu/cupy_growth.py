# SPDX-License-Identifier: MIT
"""torch_growth.py's loop with CuPy: a one-weight linear fit by gradient
descent, a checkpoint per step.

    cupy_growth.py leak    each step keeps one cupy.ones(65536) (512 KiB) in a
                           global list, made on the line whose comment is the
                           site marker "leak"
    cupy_growth.py clean   nothing is kept

Elementwise kernels and reductions only (no cuBLAS handle).  With
--framework-caching=off each array is a cudaMalloc of its own; with CuPy's pool
on, a kept array that no freed chunk can hold makes the pool allocate a chunk
of its size, on the same line, so the site grows either way.  The list outlives the interpreter's finalization
(an extra reference never dropped), so that the exit report lists the kept
arrays.  Exits with status 0."""
import ctypes
import sys

import cupy

import gpuleak

STEPS = 30
history = []
ctypes.pythonapi.Py_IncRef(ctypes.py_object(history))  # kept to the exit report


def train_step(w, x, y, keep):
    err = w * x - y
    w -= 0.1 * (err * x).mean()
    if keep:
        history.append(cupy.ones(65536))  # SITE:leak
    return float((err * err).mean())


def main(mode):
    cupy.random.seed(0)
    x = cupy.random.rand(4096, dtype=cupy.float32)
    y = 3 * x + 0.01 * cupy.random.rand(4096, dtype=cupy.float32)
    w = cupy.zeros((), dtype=cupy.float32)
    train_step(w, x, y, False)  # warm-up, before the first checkpoint
    for _ in range(STEPS):
        last = train_step(w, x, y, mode == "leak")
        gpuleak.checkpoint("step")
    cupy.cuda.Device().synchronize()
    print(f"cupy_growth: done {mode}, {len(history)} kept, loss {last:.4f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("leak", "clean"):
        sys.exit("usage: cupy_growth.py leak|clean")
    main(sys.argv[1])
