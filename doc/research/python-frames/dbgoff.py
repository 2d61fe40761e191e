import ctypes, struct
lib = ctypes.CDLL(None)
rt = ctypes.c_char.in_dll(lib, "_PyRuntime")
b = ctypes.string_at(ctypes.addressof(rt), 584)
cookie = b[:8]; ver, ft = struct.unpack_from("<QQ", b, 8)
q = lambda off: struct.unpack_from("<Q", b, off)[0]
print("cookie", cookie, "version", hex(ver), "free_threaded", ft)
print("thread_state.size/current_frame", q(176), q(184))
print("interpreter_frame size/previous/executable/instr_ptr/localsplus/owner", [q(224+8*i) for i in range(6)])
print("code_object size/filename/name/qualname/linetable/firstlineno/argcount/lpnames/lpkinds/co_code_adaptive", [q(272+8*i) for i in range(10)])
