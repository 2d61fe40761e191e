# SPDX-License-Identifier: MIT
"""A training step's allocations through the fake driver, for `bench/cold
--python`: what gpuleak's path touches when Python frames are in its stacks
and the program's own work runs between its calls.

    python3 bench/cold_train.py STEPS EVICT_BYTES

Each step allocates from SITES lines in turn, each reached through a chain of
DEPTH Python frames (a model's modules), and frees each block a few
allocations later (a tensor's short life), as PyTorch does without its cache
(bench/train.py on the GPU: some 90 allocations a step from a few tens of
lines).  Between two driver calls it writes EVICT_BYTES of its own memory, as
the framework's work does.  The driver is tests/driver's fake libcuda.so.1
(LD_LIBRARY_PATH); the pairs are counted by bench/cold."""
import ctypes
import sys

SITES = 40
DEPTH = 12
LIVE = 4  # blocks alive at once: each is freed LIVE allocations later

steps, evict = int(sys.argv[1]), int(sys.argv[2])
cu = ctypes.CDLL("libcuda.so.1")
if cu.cuInit(0) != 0:
    sys.exit("cold_train: cuInit failed")
buf = ctypes.create_string_buffer(max(evict, 1))
memset = ctypes.memset
alloc, free = cu.cuMemAllocAsync, cu.cuMemFreeAsync
ptr = ctypes.c_uint64()
ref = ctypes.byref(ptr)


def touch():
    if evict:
        memset(buf, 1, evict)


# One function per site, each its own code object and line, as a model's ops
# are: the names tell them apart in a report.
sites = []
for i in range(SITES):
    ns = {"alloc": alloc, "ref": ref, "ptr": ptr, "touch": touch}
    exec(f"def op_{i}(n):\n    touch()\n    alloc(ref, n, None)\n    return ptr.value\n", ns)
    sites.append(ns[f"op_{i}"])


def module(depth, op, n):
    """A chain of frames, as nested modules' forward methods make."""
    if depth:
        return module(depth - 1, op, n)
    return op(n)


ring = [0] * LIVE
k = 0
for _ in range(steps):
    for i, op in enumerate(sites):
        old = ring[k % LIVE]
        if old:
            touch()
            free(ctypes.c_uint64(old), None)
        ring[k % LIVE] = module(DEPTH, op, 4096 + 512 * i)
        k += 1
for p in ring:
    if p:
        free(ctypes.c_uint64(p), None)
print("cold_train: done")
