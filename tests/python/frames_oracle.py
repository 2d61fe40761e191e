# SPDX-License-Identifier: MIT
"""Python frames in gpuleak's stacks, checked against the interpreter itself.

Run by tests/python_frames.test with one interpreter and the probe library
(tests/unit/python_frames_probe.c), which captures a stack as the runtime does
inside a CUDA call and shows it as a report would.  Each scenario compares the
Python frames of that stack with the frames the interpreter reports at the
same line (sys._getframe), innermost first: file, function (qualified name
from 3.11) and line.  Prints one line per scenario and the cost per capture.

    python frames_oracle.py PROBE.so
"""
import asyncio
import ctypes
import os
import sys
import threading

probe_path = sys.argv[1]
nogil = ctypes.CDLL(probe_path)  # calls release the GIL, as CUDA calls often do
gil = ctypes.PyDLL(probe_path)  # ... and hold it
for lib in (nogil, gil):
    lib.probe_capture.restype = ctypes.c_uint32
    lib.probe_frames.restype = ctypes.c_int
    lib.probe_frames.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_int]
    lib.probe_bench.restype = ctypes.c_double
    lib.probe_bench_native.restype = ctypes.c_double
    lib.probe_bench_walk.restype = ctypes.c_double
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_uint32)
nogil.probe_call.restype = ctypes.c_uint32
nogil.probe_call.argtypes = [CALLBACK]

err = ctypes.create_string_buffer(256)
minor = nogil.probe_init(64, err, 256)
if minor != sys.version_info[1]:
    print("probe_init: %d (%s) on %s" % (minor, err.value.decode(), sys.version.split()[0]))
    sys.exit(1)

# 3.12+: the code watcher (python/py_watch.h) registers from the main
# thread's eval loop (probe_init ran without the GIL, through ctypes.CDLL):
# a few bytecodes later it must be on, unless GPULEAK_DEBUG_NO_CODE_WATCH=1.
for _ in range(100):
    pass
watch_wanted = sys.version_info >= (3, 12) and os.environ.get("GPULEAK_DEBUG_NO_CODE_WATCH") != "1"
if bool(nogil.probe_watching()) != watch_wanted:
    print("FAIL code watcher %s on %s" % ("off" if watch_wanted else "on", sys.version.split()[0]))
    sys.exit(1)
print("ok   code objects %s" % ("watched (their deaths counted)" if watch_wanted else "not watched"))


def name_of(code):
    return getattr(code, "co_qualname", code.co_name)


def expected(skip=1):
    """The interpreter's frames from our caller outwards: (file, name, line)."""
    f = sys._getframe(skip + 1)
    out = []
    while f is not None:
        out.append((f.f_code.co_filename, name_of(f.f_code), f.f_lineno))
        f = f.f_back
    return out


def shown(stack_id):
    buf = ctypes.create_string_buffer(64 * 1024)
    nogil.probe_frames(stack_id, buf, len(buf))
    frames = []
    for line in buf.value.decode().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "py":
            file, name, lineno = rest.rsplit("|", 2)
            frames.append(("py", file, name, int(lineno)))
        else:
            frames.append(("native", rest))
    return frames


failures = []


def compare(title, stack_id, want, limit=64):
    got = [f[1:] for f in shown(stack_id) if f[0] == "py"]
    want = want[:limit]
    if got != want:
        failures.append(title)
        print("FAIL %s\n  got:  %s\n  want: %s" % (title, got, want))
    else:
        print("ok   %s (%d Python frames)" % (title, len(got)))


# 1. nested calls, the GIL released
def level(n, lib):
    if n == 0:
        sid, want = lib.probe_capture(), expected(0)
        return sid, want
    return level(n - 1, lib)


sid, want = level(8, nogil)
compare("nested calls, GIL released", sid, want)
sid, want = level(8, gil)
compare("nested calls, GIL held", sid, want)

# 2. module level
sid, want = nogil.probe_capture(), expected(0)
compare("module level", sid, want)

# 3. another thread
box = {}
t = threading.Thread(target=lambda: box.update(r=level(3, nogil)))
t.start()
t.join()
compare("threading.Thread", *box["r"])


# 4. a class's __init__ (3.13 runs it through a trampoline frame)
class Model:
    def __init__(self):
        self.sid, self.want = nogil.probe_capture(), expected(0)


for _ in range(3):  # specialized after a few calls
    m = Model()
compare("__init__ (specialized)", m.sid, m.want)


# 5. a generator and a coroutine
def gen():
    yield nogil.probe_capture(), expected(0)


compare("generator", *next(gen()))


async def coro():
    await asyncio.sleep(0)
    return nogil.probe_capture(), expected(0)


compare("coroutine (asyncio)", *asyncio.run(coro()))

# 6. deep recursion: the first 64 (--num-callers) Python frames
sid, want = level(100, nogil)
compare("100 deep, first 64 kept", sid, want)

# 7. C between Python frames: a callback called from native code
inner = {}


def callback():
    sid, inner["want"] = nogil.probe_capture(), expected(0)
    inner["sid"] = sid
    return sid


def caller():
    return nogil.probe_call(CALLBACK(callback)), expected(0)


outer_sid, outer_want = caller()
frames = shown(inner["sid"])
compare("callback from C", inner["sid"], inner["want"])
kinds = [f[0] if f[0] == "py" else f[1] for f in frames]
try:
    cb = kinds.index("py")
    between = kinds[cb + 1:kinds.index("py", cb + 1)]
except ValueError:
    between = []
if "probe_call" not in between:
    failures.append("interleaving")
    print("FAIL interleaving: probe_call is not between the callback's and its caller's "
          "Python frames: %s" % kinds)
else:
    print("ok   interleaving: %s" % " > ".join(k if k != "py" else "[py]" for k in kinds[:cb + 4]))

# 7b. code objects met again in one stack (the walk names each once): a
# PyTorch-like chain (forward under _call_impl under _wrapped_call_impl at each
# level) and a cycle of six functions, more than the walk remembers at once.
class Module:
    def __init__(self, inner):
        self.inner = inner

    def _wrapped_call_impl(self):
        return self._call_impl()

    def _call_impl(self):
        return self.forward()

    def forward(self):
        if self.inner:
            return self.inner._wrapped_call_impl()
        return nogil.probe_capture(), expected(0)


compare("module chain, code objects repeated", *Module(Module(Module(Module(None))))
        ._wrapped_call_impl())


def c0(n): return c1(n) if n else (nogil.probe_capture(), expected(0))  # noqa: E704
def c1(n): return c2(n)  # noqa: E704
def c2(n): return c3(n)  # noqa: E704
def c3(n): return c4(n)  # noqa: E704
def c4(n): return c5(n)  # noqa: E704
def c5(n): return c0(n - 1)  # noqa: E704


compare("cycle of six functions, 4 times", *c0(4))

# 7c. allocations from many lines in turn, as a training step's (each
# layer's output, the loss, the optimizer's state): more lines than the
# stacks a thread remembers, three rounds, every capture its own line.
TURN = "<in turn>"
src = "def in_turn(cap, expected):\n    out = []\n    for _ in range(3):\n" + \
    "".join("        out.append((cap(), expected(0)))\n" for _ in range(40)) + "    return out\n"
ns = {}
exec(compile(src, TURN, "exec"), ns)
turns = ns["in_turn"](nogil.probe_capture, expected)
bad = [(i, w[0], [f[1:] for f in shown(sid) if f[0] == "py"][:2])
       for i, (sid, w) in enumerate(turns)
       if [f[1:] for f in shown(sid) if f[0] == "py"] != w[:64]]
if bad:
    failures.append("many lines in turn")
    print("FAIL many lines in turn: %d of %d wrong, first %s" % (len(bad), len(turns), bad[0]))
else:
    print("ok   many lines in turn (%d captures from 40 lines)" % len(turns))

# 8. code objects made and dropped in a loop (exec'd code, notebooks): a new one
# often lands at a freed one's address, its line table at the old table's, with
# the same file name object.  Each must show its own line.
FN = "<generated>"
wrong = []
for i in range(2000):
    k = i % 7
    src = "def forward():\n" + "    x = 1\n" * k + "    return cap()\n"
    ns = {"cap": nogil.probe_capture}
    exec(compile(src, FN, "exec"), ns)
    got = [f[1:] for f in shown(ns["forward"]()) if f[0] == "py"][:1]
    if got != [(FN, "forward", 2 + k)]:
        wrong.append((i, got))
    del ns
if wrong:
    failures.append("code objects at reused addresses")
    print("FAIL code objects at reused addresses: %d of 2000 wrong, first %s" % (len(wrong),
                                                                               wrong[0]))
else:
    print("ok   code objects at reused addresses (2000 captures)")

# 9. cost per capture, a 30-deep Python stack
def deep(n, fn):
    return fn() if n == 0 else deep(n - 1, fn)


walk = deep(28, lambda: nogil.probe_bench_walk(20000))
with_py = deep(28, lambda: nogil.probe_bench(20000))
without = deep(28, lambda: nogil.probe_bench_native(20000))
print("cost: capture %.0f ns with Python frames, %.0f ns without: %.0f ns for 30 Python frames"
      " (of which the Python walk and interning %.0f ns)" % (with_py, without, with_py - without, walk))

if failures:
    print("%d scenario(s) failed on %s" % (len(failures), sys.version.split()[0]))
    sys.exit(1)
