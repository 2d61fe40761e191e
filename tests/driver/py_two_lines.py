# SPDX-License-Identifier: MIT
"""For tests/driver.test: Python allocating through the fake driver (ctypes)
from two lines under one native path.  Three blocks from from_a's line, the
last two the same stack as the first (a capture remembered whole), one from
from_b's: two loss records, never one.  The pointers are kept disguised."""
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
cu.cuInit(0)
kept = []

def from_a(i):
    p = ctypes.c_uint64()
    cu.cuMemAlloc_v2(ctypes.byref(p), 1000 + (i % 2))  # three blocks
    return p.value

def from_b():
    p = ctypes.c_uint64()
    cu.cuMemAlloc_v2(ctypes.byref(p), 5000)  # one block
    return p.value

for i in range(3):
    kept.append(from_a(i) ^ 0x5555)
kept.append(from_b() ^ 0x5555)
for i in range(3):
    q = ctypes.c_uint64()
    cu.cuMemAlloc_v2(ctypes.byref(q), 64)
    cu.cuMemFree_v2(q)
print("pyleak: done")
