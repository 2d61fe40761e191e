# SPDX-License-Identifier: MIT
"""Python multiprocessing with the "spawn" start method: 3 worker processes, each
leaking one block of its own size through ctypes calls to libcudart's cudaMalloc;
the main process never uses CUDA.  Run with --log-file=DIR/gl.%p.log.
Expected: one log file per worker with exactly its own record; none for the main
process (a child of it tracked) nor for multiprocessing's resource tracker.

    python3 mp_workers.py       (GPULEAK_TEST_CUDART: the libcudart to load)"""
import ctypes
import glob
import multiprocessing as mp
import os
import sys

SIZES = [1100000, 1200000, 1300000]


def cudart():
    tries = [os.environ.get("GPULEAK_TEST_CUDART"), "/usr/local/cuda/lib64/libcudart.so"]
    tries += sorted(glob.glob("/usr/local/cuda*/targets/*/lib/libcudart.so*"))
    tries += sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*"))
    tries += sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                           "nvidia", "cu*", "lib", "libcudart.so*")))
    for path in filter(None, tries):
        try:
            return ctypes.CDLL(path)
        except OSError:
            pass
    sys.exit("mp_workers: no libcudart found (set GPULEAK_TEST_CUDART)")


def leak(rt, size):
    p = ctypes.c_void_p()
    err = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))
    if err:
        sys.exit(f"mp_workers: cudaMalloc failed with {err}")


def say(line):
    """One line in one write: the workers share the pipe, and print's text and
    newline, written apart, interleaved two workers' lines (a suite run)."""
    os.write(1, (line + "\n").encode())


def worker(k):
    rt = cudart()
    leak(rt, SIZES[k])
    say(f"mp_workers: worker {k} pid {os.getpid()} leaked {SIZES[k]}")


if __name__ == "__main__":
    print(f"mp_workers: main pid {os.getpid()}", flush=True)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(k,)) for k in range(len(SIZES))]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    codes = [p.exitcode for p in procs]
    if any(codes):
        sys.exit(f"mp_workers: worker exit codes {codes}")
    print("mp_workers: done", flush=True)
