# SPDX-License-Identifier: MIT
"""Write the answers of the running interpreter's PyCode_Addr2Line, for
lib/python/py_lines.c to be checked against (tests/python_lines.test).

    python line_oracle.py OUT

compiles a set of standard library modules (and some generated source with
edge cases: big line gaps both ways, long lines, long runs of bytecode on one
line), walks every code object reachable through co_consts and writes, per code
object, one line

    C <minor> <co_firstlineno> <bytecode bytes> <line table in hex, or ->

followed by one line

    L <first offset> <step> <line> <line> ...

with PyCode_Addr2Line's answer for every even byte offset from -2 up to a few
bytes past the end of the bytecode: code units are 2 bytes in every version
(3.11+'s inline CACHE entries are code units too), so every range a table
describes starts at an even offset.  The line table is co_lnotab on 3.9,
co_linetable on 3.10 and later.  The code is compiled, never run, so 3.11's
_co_linearray (made only for tracing) is never there to answer instead of the
table.
"""

import ctypes
import importlib.util
import os
import sys
import tokenize

MODULES = [
    "os", "json", "asyncio", "dataclasses", "typing", "inspect", "argparse",
    "collections", "email", "enum", "functools", "re", "textwrap", "unittest",
    "pathlib", "subprocess", "threading", "tokenize", "ast", "dis", "difflib",
    "_pydecimal", "logging", "http", "shutil", "tarfile", "zipfile", "pickle",
]
PAST_END = 6  # offsets checked past the end of the bytecode


def module_files(name):
    """The source files of a module, or of every module of a package."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    if not spec.submodule_search_locations:
        return [spec.origin]
    files = []
    for root in spec.submodule_search_locations:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            files.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return files


def generated_source():
    """Source whose line tables need the formats' rarer encodings."""
    lines = ["def gaps(a, b):"]
    lines.append("    x = a")
    lines += [""] * 300  # +301: several 3.9/3.10 pairs, a 2-chunk svarint
    lines.append("    y = (a,")
    lines += [""] * 5000  # a 3-chunk svarint, and back again
    lines.append("         b)")
    lines.append("    z = f(")
    lines += ["        a,"] * 3
    lines += [""] * 200
    lines.append("        b)")  # the call's line lies 200+ lines back
    # >255 bytes of bytecode on one line, then another line
    lines.append("    w = [" + ", ".join("a%d" % i for i in range(300)) + "]")
    lines.append("    return w")
    lines.append("def wide(a):")
    lines.append("    " + " " * 200 + "return a.b.c(a + 1, a - 1)")  # columns past 127: long form
    lines.append("def wider(a):")
    lines.append("    return [" + ", ".join(["a.b"] * 1500) + "]")  # columns past 4095
    lines.append("def tricky(a):")
    lines.append("    try:")
    lines.append("        with a as b:")
    lines.append("            for i in b:")
    lines.append("                if i: continue")
    lines.append("                yield i")
    lines.append("    finally:")
    lines.append("        del a")
    lines.append("    async def inner():")
    lines.append("        async with a as b:")
    lines.append("            return [c async for c in b]")
    lines.append("    return lambda q: (q,")
    lines.append("                      q)")
    return "\n".join(lines) + "\n"


def code_objects(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, type(code)):
            yield from code_objects(c)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: line_oracle.py OUT")
    minor = sys.version_info[1]
    if sys.version_info[0] != 3 or not 9 <= minor <= 14:
        sys.exit("line_oracle.py: Python 3.9-3.14 only, not %s" % sys.version.split()[0])
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int

    sources = [("<generated>", generated_source())]
    for name in MODULES:
        for path in module_files(name):
            try:
                with tokenize.open(path) as f:
                    sources.append((path, f.read()))
            except (OSError, SyntaxError, UnicodeDecodeError):
                pass

    codes = offsets = 0
    with open(sys.argv[1], "w") as out:
        for path, src in sources:
            try:
                top = compile(src, path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            for code in code_objects(top):
                table = code.co_lnotab if minor == 9 else code.co_linetable
                nbytes = len(code.co_code)
                first = -2
                answers = [addr2line(code, off) for off in range(first, nbytes + PAST_END, 2)]
                out.write("C %d %d %d %s\n" % (minor, code.co_firstlineno, nbytes,
                                               table.hex() or "-"))
                out.write("L %d 2 %s\n" % (first, " ".join(map(str, answers))))
                codes += 1
                offsets += len(answers)
    print("line_oracle.py: Python %s: %d code objects, %d offsets"
          % (sys.version.split()[0], codes, offsets))


if __name__ == "__main__":
    main()
