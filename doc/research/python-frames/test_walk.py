import ctypes, sys, traceback, threading, asyncio, os
P = os.path.join(os.path.dirname(os.path.abspath(__file__)), "walker.so")
nogil = ctypes.CDLL(P)      # ctypes releases the GIL around calls
gil = ctypes.PyDLL(P)       # keeps the GIL
for l in (nogil, gil):
    l.gw_bench.restype = l.gw_bench_tstate.restype = l.gw_bench_addr2line.restype = ctypes.c_double
    l.gw_hexver.restype = ctypes.c_ulong
ver = gil.gw_init()
print("python", sys.version.split()[0], "minor", ver, hex(gil.gw_hexver()), "exe", sys.executable)

def resolve():
    out = []
    buf = ctypes.create_string_buffer(1024)
    i = 0
    while gil.gw_resolve(i, buf, 1024) >= 0 or i < 0:
        out.append(buf.value.decode()); i += 1
    return out

FAIL = 0
def check(tag, n, tb, which=0):
    global FAIL
    got = resolve() if n > 0 else []
    exp = [(f.filename, f.name, f.lineno) for f in reversed(tb)]
    g = [tuple(x.split("|")[:3]) for x in got]
    g = [(a, b, int(c)) for a, b, c in g]
    ok = g == exp
    direct_ok = all("MISMATCH" not in x for x in got)
    if not ok or not direct_ok: FAIL += 1
    print(f"[{tag}] n={n} skipped={gil.gw_skipped()} match_traceback={ok} direct_str={direct_ok}")
    if not ok:
        for x in got[:8]: print("   got", x)
        for x in exp[:8]: print("   exp", x)

def leaf(tag, lib=nogil, which=0):
    r = (lib.gw_capture(which), traceback.extract_stack()); check(tag, r[0], r[1])

def rec(d, fn):
    if d == 0: return fn()
    return rec(d - 1, fn)

# 1. GIL released (CDLL) vs held (PyDLL), PyGILState_GetThisThreadState
rec(5, lambda: leaf("main/nogil"))
rec(5, lambda: leaf("main/gil", gil))
# 2. "unchecked" current tstate with and without the GIL
print("unchecked tstate, GIL released -> n =", nogil.gw_capture(1), "(-1 means NULL tstate)")
print("unchecked tstate, GIL held     -> n =", gil.gw_capture(1))
# 3. thread
t = threading.Thread(target=lambda: rec(3, lambda: leaf("thread/nogil"))); t.start(); t.join()
# 4. C -> Python re-entry (sorted key), generator, coroutine, class __init__ (3.13 init shim after specialization)
sorted([3, 1, 2], key=lambda x: (leaf(f"sorted-key/{x}"), x)[1])
def gen():
    yield leaf("generator")
    yield rec(2, lambda: leaf("generator-nested"))
list(gen())
async def coro():
    await asyncio.sleep(0); leaf("coroutine")
asyncio.run(coro())
class C:
    def __init__(self, k):
        if k == 19: leaf("class-init-specialized")
for k in range(20): C(k)
# property / dunder via C slot
class D:
    @property
    def p(self): leaf("property-getter"); return 1
D().p
# 5. bench at depth ~30
def bench():
    n = gil.gw_capture(0)
    t_cap = nogil.gw_bench(200000)
    t_ts = nogil.gw_bench_tstate(1000000)
    t_a2l = nogil.gw_bench_addr2line(20000)
    print(f"BENCH depth={n}: capture={t_cap:.1f} ns/stack, PyGILState_GetThisThreadState={t_ts:.1f} ns, "
          f"PyCode_Addr2Line for whole stack={t_a2l:.1f} ns ({t_a2l/max(n,1):.1f} ns/frame)")
rec(28, bench)
print("RESULT", "PASS" if FAIL == 0 else f"FAIL({FAIL})")
