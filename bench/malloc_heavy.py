# SPDX-License-Identifier: MIT
"""A malloc-heavy Python workload: the cost of gpuleak's allocator hooks.

    python3 bench/malloc_heavy.py [SCALE]
Builds and drops many small objects (dicts, lists, strings, bytes: Python's own
allocator for the small ones, malloc for the rest), serializes and parses JSON.
Prints "seconds X".  Run under gpuleak and without (bench/RESULTS.md)."""
import json
import sys
import time

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
t0 = time.perf_counter()
n = int(100000 * scale)
data = [{"k%d" % i: list(range(50)), "s": "x" * (i % 700)} for i in range(n)]
back = json.loads(json.dumps(data))
d = {}
for i in range(int(150000 * scale)):
    d[str(i)] = bytes(600 + i % 300)  # above pymalloc's 512-byte limit: malloc
del data, back, d
print(f"seconds {time.perf_counter() - t0:.3f}")
