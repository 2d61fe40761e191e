# SPDX-License-Identifier: MIT
"""Leak kinds from Python: device memory held by Python objects is still
reachable, a dropped pointer is definitely lost.  Prints a leak check made while
the objects are alive (gpuleak.leak_report); the GPU suite checks each record's
kind by its size.

    1 MiB  cuMemAlloc, the ctypes object holding it dropped   -> definitely lost
    2 MiB  held by a ctypes object, an attribute of an object -> still reachable
    3 MiB  held by a ctypes object in a dict                  -> still reachable
    4 MiB  a CuPy array (pool off) in a list                  -> still reachable

A dropped pointer is exact only with PYTHONMALLOC=malloc: Python's own
allocator keeps freed objects in its arenas, where a stale copy can stay."""
import ctypes
import os
import sys

import gpuleak

MiB = 1 << 20
cu = ctypes.CDLL("libcuda.so.1")


def check(result):
    if result:
        sys.exit(f"reach.py: CUDA driver error {result}")


def alloc(n):
    p = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)))
    return p


check(cu.cuInit(0))
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
check(cu.cuDeviceGet(ctypes.byref(dev), 0))
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
check(cu.cuCtxSetCurrent(ctx))
gpuleak.checkpoint("start")


class Model:
    pass


def lose(n):
    alloc(n)


lose(1 * MiB)
model = Model()
model.weights = alloc(2 * MiB)
buffers = {"grad": alloc(3 * MiB)}
try:
    import cupy
    cupy.cuda.set_allocator(None)
    arrays = [cupy.zeros(MiB, dtype=cupy.float32)]
except ImportError:
    print("reach.py: no cupy")

errors, text = gpuleak.leak_report(since="start",
                                   kinds=["definite", "indirect", "possible", "reachable", "cached"])
print(text)
if os.environ.get("GPULEAK_DEBUG_REACH"):
    # What the suite needs to say where a word that kept a block found lay
    # (GPULEAK_DEBUG_REACH's lines name addresses): the mappings and threads
    # as the leak check saw them.
    lines = ["reach.py: maps"] + open("/proc/self/maps").read().splitlines()
    for tid in sorted(os.listdir("/proc/self/task")):
        try:
            comm = open(f"/proc/self/task/{tid}/comm").read().strip()
            blocked = [l.split()[1] for l in open(f"/proc/self/task/{tid}/status")
                       if l.startswith("SigBlk:")]
        except OSError:  # the thread ended meanwhile
            continue
        lines.append(f"reach.py: thread {tid} {comm!r} SigBlk={blocked[0] if blocked else '?'}")
    lines.append("reach.py: end maps")
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
print("reach.py: done", flush=True)
