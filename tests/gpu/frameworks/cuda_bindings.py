# SPDX-License-Identifier: MIT
"""NVIDIA's cuda-python (cuda.bindings.driver): the driver API from Python,
through its own loading of libcuda (dlopen, then cuGetProcAddress).  Frees
what it allocates; with --leak it also drops one block's pointer (lose(),
1 MiB) and keeps another's in a global (KEEP, 2 MiB).  The report, written
after the interpreter finalized, finds both lost: KEEP died with the module
(the manual, "When the report is written")."""
import sys

from cuda.bindings import driver

MiB = 1 << 20


def ok(r):
    err = r[0] if isinstance(r, tuple) else r
    if err != driver.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"cuda_bindings: {err}")
    return r[1] if isinstance(r, tuple) and len(r) == 2 else r


def lose():
    p = ok(driver.cuMemAlloc(MiB))  # SITE:lose
    del p


def main():
    ok(driver.cuInit(0))
    dev = ok(driver.cuDeviceGet(0))
    ctx = ok(driver.cuDevicePrimaryCtxRetain(dev))
    ok(driver.cuCtxSetCurrent(ctx))
    stream = ok(driver.cuStreamCreate(0))
    for _ in range(10):
        a = ok(driver.cuMemAlloc(4 * MiB))
        b = ok(driver.cuMemAllocAsync(MiB, stream))
        ok(driver.cuMemsetD8Async(b, 1, MiB, stream))
        ok(driver.cuMemFreeAsync(b, stream))
        ok(driver.cuMemFree(a))
    h = ok(driver.cuMemAllocHost(MiB))
    ok(driver.cuMemFreeHost(h))
    ok(driver.cuStreamSynchronize(stream))
    ok(driver.cuStreamDestroy(stream))
    if "--leak" in sys.argv:
        KEEP.append(ok(driver.cuMemAlloc(2 * MiB)))  # SITE:keep
        lose()
    print("cuda_bindings: done", flush=True)


KEEP = []
main()
