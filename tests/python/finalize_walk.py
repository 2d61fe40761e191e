# SPDX-License-Identifier: MIT
"""Python frames while the interpreter finalizes: daemon threads keep walking
their own frames from inside a long C call (the GIL released, as in a CUDA
call) while the main thread ends.  Finalization frees every other thread's
state while its lookup key still answers with it; a module torn down late
reuses freed memory.  The runtime must stop walking once finalization starts.
Run by tests/python_frames.test with the probe library; exit status 0 is the
pass (a crash dies of SIGSEGV).

    python finalize_walk.py PROBE.so
"""
import ctypes
import sys
import threading
import time
import types

probe = ctypes.CDLL(sys.argv[1])
probe.probe_bench_walk.restype = ctypes.c_double
err = ctypes.create_string_buffer(256)
if probe.probe_init(64, err, 256) != sys.version_info[1]:
    sys.exit("probe_init: %s" % err.value.decode())


def deep(n):
    if n == 0:
        probe.probe_bench_walk(10 ** 9)  # one long C call walking this thread's frames
    return deep(n - 1)


for _ in range(8):
    threading.Thread(target=deep, args=(20,), daemon=True).start()
time.sleep(0.05)

# A module torn down at finalization whose object, when freed, reuses freed
# malloc memory (as any extension's destructor may).
late = types.ModuleType("late_mod")
exec('''
import ctypes
import time
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
class Late:
    def __del__(self, malloc=libc.malloc, memset=libc.memset, c_void_p=ctypes.c_void_p,
                sleep=time.sleep):
        for _ in range(20):
            for size in range(200, 1200, 8):
                p = malloc(size)
                memset(c_void_p(p), 0x41, size)
        sleep(0.2)
late = Late()
''', late.__dict__)
sys.modules["late_mod"] = late
del late
