# SPDX-License-Identifier: MIT
"""Allocate/free pairs made from Python at a chosen depth of Python frames: what
capturing the Python frames (--python-frames=yes, the default) adds to each
allocation over --python-frames=no.

    python3 bench/py_alloc.py DEPTH [PAIRS]

DEPTH Python frames are on the stack at each allocation (<module>, DEPTH - 2
nested calls, the loop).  Each pair is cupy.cuda.runtime.mallocAsync(256) and
freeAsync() on one stream: one cudaMallocAsync and one cudaFreeAsync, CuPy's
pool bypassed.  Stream-ordered pairs are the cheapest CUDA allocations (a
synchronous cudaMalloc/cudaFree pair called from CuPy took about 60 us on the
H200, whose run-to-run spread hid the cost measured here).  The same line
allocates each time, so after the first pair the stack is one the depot knows:
the cost measured is the walk, the interning lookups and the merge with the
native frames, as in a training loop.  Prints "ns_per_pair X"."""
import sys
import time

import cupy.cuda.runtime as rt


def loop(pairs, stream):
    t0 = time.perf_counter_ns()
    for _ in range(pairs):
        p = rt.mallocAsync(256, stream)
        rt.freeAsync(p, stream)
    rt.streamSynchronize(stream)
    return (time.perf_counter_ns() - t0) / pairs


def nested(levels, pairs, stream):
    if levels == 0:
        return loop(pairs, stream)
    return nested(levels - 1, pairs, stream)


def main():
    depth = int(sys.argv[1])
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    if depth < 2 or depth > 500:
        sys.exit(f"py_alloc.py: DEPTH {depth}: 2 to 500")
    stream = rt.streamCreate()  # CUDA started outside the timed loop
    nested(depth - 2, 1000, stream)  # warm-up: the stack interned, caches filled
    print(f"ns_per_pair {nested(depth - 2, pairs, stream):.1f}")


if __name__ == "__main__":
    main()
