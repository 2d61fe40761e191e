import ctypes, atexit, sys
lib = ctypes.CDLL("/tmp/pyoff/fin.so")
ns = {}
exec("def g():\n    return 1\n", ns)      # code object referenced only via module global 'ns'
lib.fin_set(ctypes.c_void_p(id(ns["g"].__code__)), None)
atexit.register(lambda: print("[python atexit] interpreter alive, Py_IsInitialized=1", file=sys.stderr))
