#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that keep the layout of lib/ honest, run by make check through
tests/layout_cycles.test, tests/layout_map.test and tests/layout_names.test.

    layout.py cycles SRCDIR   #include cycles between lib/'s modules; layering
    layout.py map SRCDIR      doc/design.md section 2 names every header, and
                              names only files that exist
    layout.py names SRCDIR    module foo exports gl_foo_* or gl_foo
    layout.py selftest CHECK  CHECK on small trees written to a temporary
                              directory: it must fail on the broken ones,
                              naming what is wrong, and pass on the sound one

Each .test runs the self-test before the real check, so a check that stopped
seeing anything (a parser broken by a new construct, a wrong path) fails
instead of passing quietly.  The script is run, never imported: no
__pycache__ is written into a source tree that distcheck makes read-only.

Exit status: 0 pass, 1 fail, 99 hard error (the tree is not a gpuleak tree).
"""

import collections
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------- C text


def strip_c(text, keep_strings=False):
    """text with comments (and, unless keep_strings, the contents of string and
    character literals) blanked out; lengths and newlines kept, so that an
    offset still gives its line."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            # Blanked, but a backslash ending a line is kept: it splices the
            # line (a comment in a multi-line macro) before comments go.
            out.append(re.sub(r"[^\n](?!\n)|[^\\\n](?=\n)", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            if keep_strings:
                out.append(text[i:j])
            else:
                out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


# ---------------------------------------------------------------- the tree


def lib_files(root, exts):
    """lib/'s files with one of exts, as paths relative to lib/, sorted."""
    found = []
    lib = os.path.join(root, "lib")
    for d, dirs, files in os.walk(lib):
        dirs.sort()
        for f in files:
            if os.path.splitext(f)[1] in exts:
                found.append(os.path.relpath(os.path.join(d, f), lib))
    return sorted(found)


def module_of(rel):
    """lib-relative file -> its module: track/tracker.c -> track/tracker."""
    return os.path.splitext(rel)[0]


def folder_of(module):
    return module.rsplit("/", 1)[0] if "/" in module else ""


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def includes(root, rel):
    """(line, lib-relative header) for each #include of lib/rel that resolves
    to a header of lib/, resolved as the compiler does: a quoted name first
    beside the including file, then on the include path (-I lib, -I include).
    Headers found outside lib/ (include/gpuleak.h, config.h, the system's)
    are not modules of lib/ and are left out, and so are .def files: X-macro
    tables, part of the header that includes them, including nothing."""
    lib = os.path.join(root, "lib")
    text = strip_c(read(os.path.join(lib, rel)), keep_strings=True)
    found = []
    for m in INCLUDE.finditer(text):
        quote, name = m.groups()
        candidates = [os.path.join(os.path.dirname(rel), name)] if quote == '"' else []
        candidates.append(name)
        for c in candidates:
            c = os.path.normpath(c)
            if c.startswith("..") or not os.path.isfile(os.path.join(lib, c)):
                continue
            if c.endswith(".h"):
                found.append((line_of(text, m.start()), c))
            break
    return found


def include_graph(root):
    """modules, and edges {A: {B: [(file, line), ...]}}: A's .c or .h includes B's
    header (a module including its own header is no edge)."""
    files = lib_files(root, (".c", ".h"))
    modules = sorted({module_of(f) for f in files})
    edges = {m: collections.OrderedDict() for m in modules}
    for f in files:
        a = module_of(f)
        for line, h in includes(root, f):
            b = module_of(h)
            if b != a:
                edges[a].setdefault(b, []).append(("lib/%s:%d" % (f, line), h))
    return modules, edges


def sccs(modules, edges):
    """Tarjan's strongly connected components with more than one module: each
    is one knot of cycles, however many cycles run through it."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(1000, 4 * len(modules)))
    for v in modules:
        if v not in index:
            visit(v)
    return sorted(out)


def simple_cycles(edges, comp, limit=20):
    """The elementary cycles through a component's modules, each once, from its
    first module by name (a -> b -> a), at most limit of them: a knot of many
    modules may hold more cycles than anyone will read, and more paths than
    are worth walking (steps bounds the walk)."""
    order = {m: i for i, m in enumerate(sorted(comp))}
    found, steps = [], [100000]

    def walk(start, path):
        for w in sorted(edges[path[-1]]):
            steps[0] -= 1
            if len(found) >= limit or steps[0] < 0:
                return
            if w == start:
                found.append(path + [start])
            elif w in order and order[w] > order[start] and w not in path:
                walk(start, path + [w])

    for s in sorted(comp):
        walk(s, [s])
    return found, len(found) >= limit or steps[0] < 0


# Folders from the bottom of the pipeline up.  A file may include a header of
# its own folder, a lower one, or one of the same rank: observe, stack, python
# and heap serve one another (a mixed stack is native frames and Python's),
# as do symbol and report.  "" is lib/ itself: the entry points.
LAYERS = [["common"], ["base"], ["event"], ["observe", "stack", "python", "heap"],
          ["track"], ["check"], ["symbol", "report"], ["save"], [""]]
RANK = {f: r for r, fs in enumerate(LAYERS) for f in fs}
# The includes upward that the tree had when this check came, one
# "FILE HEADER" a line: printed, not failed, so that the check guards against
# new ones while the old ones are being undone.  The list only shrinks: an
# entry the tree no longer has fails until it is deleted.
KNOWN_LAYERING = "tests/layout_layers.known"


def layering(root, modules, edges):
    """Includes from a lower folder to a higher one: (file:line, header, from, to)."""
    bad = []
    for a in modules:
        fa = folder_of(a)
        for b, sites in edges[a].items():
            fb = folder_of(b)
            if fa in RANK and fb in RANK and RANK[fb] > RANK[fa]:
                for where, h in sites:
                    bad.append((where, h, fa or "lib/", fb or "lib/"))
    # By file, then line as a number.
    return sorted(bad, key=lambda v: (v[0].rsplit(":", 1)[0], int(v[0].rsplit(":", 1)[1])))


def known_layering(root):
    """(line, "lib/FILE HEADER") of the known list; none without the file."""
    path = os.path.join(root, KNOWN_LAYERING)
    if not os.path.exists(path):
        return []
    known = []
    for n, line in enumerate(read(path).splitlines(), 1):
        line = line.split("#", 1)[0].split()
        if line:
            known.append((n, " ".join(line)))
    return known


def check_cycles(root):
    modules, edges = include_graph(root)
    lines = []
    comps = sccs(modules, edges)
    for i, comp in enumerate(comps, 1):
        cycles, cut = simple_cycles(edges, comp)
        lines.append("include cycle %d of %d, among %s:" % (i, len(comps), ", ".join(comp)))
        for c in cycles:
            lines.append("    " + " -> ".join(c))
        if cut:
            lines.append("    (and maybe more: the first %d shown)" % len(cycles))
        for a in comp:
            for b, sites in edges[a].items():
                if b in comp:
                    for where, h in sites:
                        lines.append("    %s includes %s" % (where, h))
    unknown = sorted({folder_of(m) for m in modules} - set(RANK))
    for f in unknown:
        lines.append("folder lib/%s/ has no layer: add it to LAYERS in tests/layout.py" % f)
    known = known_layering(root)
    known_keys = {k for _, k in known}
    bad = layering(root, modules, edges)
    new, seen = 0, set()
    for where, h, fa, fb in bad:
        key = "%s %s" % (where.rsplit(":", 1)[0], h)
        seen.add(key)
        if key in known_keys:
            lines.append("known layering violation: %s includes %s (%s is below %s)"
                         % (where, h, fa, fb))
        else:
            new += 1
            lines.append("layering violation: %s includes %s (%s is below %s)"
                         % (where, h, fa, fb))
    gone = [(n, k) for n, k in known if k not in seen]
    for n, k in gone:
        lines.append("%s:%d: '%s' is gone from the tree: delete the line" % (KNOWN_LAYERING, n, k))
    lines.append("%d include cycle(s); %d new layering violation(s), %d known (%s) among "
                 "%d modules" % (len(comps), new, len(bad) - new, KNOWN_LAYERING, len(modules)))
    return not comps and not new and not unknown and not gone, lines


# ---------------------------------------------------------------- module map

# What section 2 of doc/design.md must name: every header of lib/, src/ and
# include/, and every file of lib/ that is a module without a header (an entry
# point such as inject.c, the allocator hooks).  Folders are named by the
# ### headings (### `lib/track/` - ...); their entries are bullets that start
# with the file's name, relative to the folder: - `tracker.h`: its job.
MAP_HEADING = re.compile(r"^## 2\.")
FOLDER_HEADING = re.compile(r"^###\s+`([^`]+/)`")
ENTRY = re.compile(r"^[-*]\s+`([^`\s]+)`")


def required_in_map(root):
    want = ["lib/" + h for h in lib_files(root, (".h",))]
    headers = {module_of(h) for h in lib_files(root, (".h",))}
    want += ["lib/" + c for c in lib_files(root, (".c",)) if module_of(c) not in headers]
    for d in ("src", "include"):
        p = os.path.join(root, d)
        if os.path.isdir(p):
            want += ["%s/%s" % (d, f) for f in sorted(os.listdir(p)) if f.endswith(".h")]
    return sorted(want)


def map_entries(text):
    """(line, path) for each entry of section 2, path relative to the tree."""
    entries, inside, folder = [], False, ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            inside = bool(MAP_HEADING.match(line))
            folder = ""
            continue
        if not inside:
            continue
        if line.startswith("### "):
            m = FOLDER_HEADING.match(line)
            folder = m.group(1) if m else ""
            continue
        m = ENTRY.match(line)
        if m and ("." in m.group(1) or m.group(1).endswith("/")):
            entries.append((n, os.path.normpath(folder + m.group(1))))
    return entries


def check_map(root):
    design = os.path.join(root, "doc", "design.md")
    text = read(design)
    if not any(MAP_HEADING.match(l) for l in text.splitlines()):
        return False, ["doc/design.md has no section '## 2.' (the module map)"]
    entries = map_entries(text)
    named = collections.defaultdict(list)
    for n, p in entries:
        named[p].append(n)
    lines = []
    for p in required_in_map(root):
        if p not in named:
            lines.append("missing from doc/design.md section 2: %s" % p)
    for p, ns in sorted(named.items()):
        if not os.path.exists(os.path.join(root, p)):
            lines.append("doc/design.md:%d names %s, which does not exist" % (ns[0], p))
        if len(ns) > 1:
            lines.append("doc/design.md:%s: %s has %d entries, one is enough"
                         % (",".join(map(str, ns)), p, len(ns)))
    lines.append("%d entries in section 2, %d files it must name"
                 % (len(entries), len(required_in_map(root))))
    return len(lines) == 1, lines


# ---------------------------------------------------------------- naming

# Module foo (lib/**/foo.h, lib/**/foo.c) exports gl_foo_* or exactly gl_foo.
# Checked: each function and variable declared in foo.h, and each defined
# without static in foo.c that no header of lib/ declares (held to foo.c's own
# name: it is global whether or not it was meant to be).  A name declared in a
# header is held to that header's module wherever it is defined.  A header's
# static inline functions are checked too: they are no symbol of the runtime,
# but every file that includes the header calls them by name.
# Exempt: static functions and variables of a .c (private to their file),
# types (struct, union, enum and typedef names), macros, and whatever
# lib/libgpuleak.map exports (InitializeInjection, the client API's
# gpuleak_*, the libc and allocator entry points that heap/hooks.c,
# abnormal_end.c and dlclose_hook.c interpose: their names are someone
# else's).
# Private headers are modules like any other: heap/heap_state.h, shared by
# hooks.c and heap.c and by no one else, exports gl_heap_state_*, not
# gl_heap_*: the name says which file to open.  A header needs no .c.
# Declarations a macro generates (DEFINE_SORT, X-macro tables) are not
# parsed; the built objects' global symbols are compared with what was
# parsed (missed_symbols), so an exported one cannot slip through.

ATTRIBUTE = re.compile(r"\b(__attribute__|__asm__|asm|_Alignas|alignas|__declspec)\s*\(")
IDENT = re.compile(r"[A-Za-z_]\w*")
TOKEN = re.compile(r"[A-Za-z_]\w*|\d\w*|\S")
NOT_NAMES = {"const", "volatile", "restrict", "__restrict", "extern", "inline", "__inline",
             "__inline__", "_Thread_local", "__thread", "_Noreturn", "_Atomic", "register",
             "signed", "unsigned", "__extension__"}


def blank(text, i, j):
    return text[:i] + re.sub(r"[^\n]", " ", text[i:j]) + text[j:]


def match_paren(text, i):
    """The offset just past the bracket closing the one at i."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def top_level(text):
    """The file's text reduced to top-level declarations ending in ';' at the
    offsets they had: comments, literals, preprocessor lines and attributes
    blanked; a function's body blanked between '@' and ';' (a definition),
    any other braces' contents (struct members, initializers) blanked."""
    text = strip_c(text)
    # Preprocessor lines, continuations included.
    for m in reversed(list(re.finditer(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", text, re.M))):
        text = blank(text, m.start(), m.end())
    for m in reversed(list(ATTRIBUTE.finditer(text))):
        text = blank(text, m.start(), match_paren(text, m.end() - 1))
    out, i = [], 0
    while True:
        j = text.find("{", i)
        if j < 0:
            out.append(text[i:])
            break
        end = match_paren(text, j)
        before = text[i:j].rstrip()
        out.append(text[i:j])
        inner = re.sub(r"[^\n]", " ", text[j + 1:end - 1])
        if before.endswith(")"):
            out.append("@" + inner + ";")
        else:
            out.append("{" + inner + "}")
        i = end
    return "".join(out)


def declarations(text):
    """(line, name, kind, is_definition, is_extern, is_static) for each function
    and variable declared at file scope."""
    flat = top_level(text)
    found = []
    start = 0
    for m in re.finditer(r";", flat):
        stmt, at = flat[start:m.start()], start
        start = m.end()
        body = stmt.rstrip().endswith("@")
        toks = [(t.group(), at + t.start()) for t in TOKEN.finditer(stmt.replace("@", " "))]
        words = [t for t, _ in toks]
        if not words or words[0] in ("typedef", "_Static_assert", "static_assert"):
            continue
        if "typedef" in words:
            continue
        is_extern = "extern" in words
        is_static = "static" in words
        # struct/union/enum TAG {} -> one type token.
        simple, k = [], 0
        while k < len(toks):
            t, off = toks[k]
            if t in ("struct", "union", "enum"):
                k += 1
                if k < len(toks) and IDENT.fullmatch(toks[k][0]):
                    k += 1
                if k + 1 < len(toks) and toks[k][0] == "{" and toks[k + 1][0] == "}":
                    k += 2
                simple.append(("T", off))
                continue
            simple.append((t, off))
            k += 1
        # A macro's invocation at the start (DEFINE_SORT(...) with no ';' after
        # it) defines what cannot be seen; what follows it is parsed alone.
        while (len(simple) > 1 and re.fullmatch(r"[A-Z][A-Z0-9_]*", simple[0][0])
               and simple[1][0] == "("):
            close = 1
            depth = 0
            for q in range(1, len(simple)):
                depth += simple[q][0] in "([{"
                depth -= simple[q][0] in ")]}"
                if depth == 0:
                    close = q
                    break
            simple = simple[close + 1:]
        words = [t for t, _ in simple]
        if "(" in words:
            p = words.index("(")
            if p + 1 < len(words) and words[p + 1] == "*":
                # A pointer to a function: void (*gl_foo_hook)(int).
                close = p + 1
                depth = 0
                for q in range(p, len(words)):
                    depth += words[q] == "("
                    depth -= words[q] == ")"
                    if depth == 0:
                        close = q
                        break
                names = [(t, o) for t, o in simple[p + 1:close] if IDENT.fullmatch(t)]
                if names and p >= 1:
                    t, o = names[-1]
                    found.append((line_of(flat, o), t, "variable", not is_extern, is_extern,
                                  is_static))
            elif p >= 2 and IDENT.fullmatch(words[p - 1]):
                # A type, then the name: a function.  NAME(...) alone is a
                # macro's invocation, not a declaration.
                t, o = simple[p - 1]
                found.append((line_of(flat, o), t, "function", body, is_extern, is_static))
            continue
        # Variables: TYPE a, *b[4] = {}, ...
        parts, cur, depth = [], [], 0
        for t, o in simple:
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
            if t == "," and depth == 0:
                parts.append(cur)
                cur = []
            else:
                cur.append((t, o))
        parts.append(cur)
        if len(parts[0]) < 2:
            continue
        for part in parts:
            depth, names = 0, []
            for t, o in part:
                if t == "=" and depth == 0:
                    break
                if t in "([{":
                    depth += 1
                elif t in ")]}":
                    depth -= 1
                elif depth == 0 and IDENT.fullmatch(t) and t != "T" and t not in NOT_NAMES:
                    names.append((t, o))
            if names:
                t, o = names[-1]
                found.append((line_of(flat, o), t, "variable", not is_extern, is_extern,
                              is_static))
    return found


def exported_patterns(root):
    """The global: patterns of lib/libgpuleak.map."""
    path = os.path.join(root, "lib", "libgpuleak.map")
    if not os.path.exists(path):
        return []
    text = strip_c(read(path))
    m = re.search(r"global:(.*?)(local:|\})", text, re.S)
    return [p.strip() for p in m.group(1).split(";") if p.strip()] if m else []


def check_names(root, builddir=None):
    exempt = exported_patterns(root)

    def ok(name, module):
        want = "gl_" + os.path.basename(module)
        return (name == want or name.startswith(want + "_")
                or any(fnmatch.fnmatchcase(name, p) for p in exempt))

    lines, declared = [], set()
    checked = 0
    for h in lib_files(root, (".h",)):
        mod = module_of(h)
        # Everything a header declares is its module's interface, static
        # inline functions too: every includer sees and calls them.
        for line, name, kind, _, _, _ in declarations(read(os.path.join(root, "lib", h))):
            declared.add(name)
            checked += 1
            if not ok(name, mod):
                lines.append("lib/%s:%d: %s %s: want gl_%s_* or gl_%s"
                             % (h, line, kind, name, os.path.basename(mod),
                                os.path.basename(mod)))
    for c in lib_files(root, (".c",)):
        mod = module_of(c)
        for line, name, kind, definition, is_extern, is_static in declarations(
                read(os.path.join(root, "lib", c))):
            if not definition or is_extern or is_static or name in declared:
                continue
            checked += 1
            if not ok(name, mod):
                lines.append("lib/%s:%d: %s %s, defined without static: want gl_%s_* or "
                             "gl_%s, or static" % (c, line, kind, name, os.path.basename(mod),
                                                   os.path.basename(mod)))
    offenders = len(lines)
    lines.append("%d of %d exported names not named after their module" % (offenders, checked))
    seen = declared | {n for c in lib_files(root, (".c",))
                       for _, n, _, _, _, _ in declarations(read(os.path.join(root, "lib", c)))}
    missed = missed_symbols(root, builddir, seen, exempt)
    if missed is None:
        lines.append("(no build tree or no nm: the symbols of lib/'s objects not cross-checked)")
    for obj, name in missed or []:
        lines.append("%s defines %s, which the parser did not see: teach tests/layout.py "
                     "the declaration" % (obj, name))
    return offenders == 0 and not missed, lines


def missed_symbols(root, builddir, seen, exempt):
    """The global symbols lib/'s built objects define that the parser never saw
    (a declaration it cannot read, a macro that defines a function), so that
    the names check cannot pass by not looking; None without objects or nm.
    libtool names an object TARGET-SOURCE.o, beside SOURCE's folder or in its
    .libs; objects whose source is gone (a module moved or renamed since the
    last build) are left out."""
    if not builddir or not shutil.which("nm"):
        return None
    objs = []
    for d, dirs, files in os.walk(os.path.join(builddir, "lib")):
        for f in files:
            if not f.endswith(".o"):
                continue
            folder = os.path.relpath(d, os.path.join(builddir, "lib"))
            folder = os.path.dirname(folder) if os.path.basename(folder) == ".libs" else folder
            src = os.path.normpath(os.path.join(folder, f[:-2].rsplit("-", 1)[-1] + ".c"))
            if os.path.isfile(os.path.join(root, "lib", src)):
                objs.append(os.path.join(d, f))
    if not objs:
        return None
    missed = set()
    for o in sorted(objs):
        out = subprocess.run(["nm", "--defined-only", "-g", o], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        for line in out.splitlines():
            parts = line.split()
            # DW.ref.* and the like: the compiler's, not the code's.
            if len(parts) == 3 and IDENT.fullmatch(parts[2]) and parts[2] not in seen and not any(
                    fnmatch.fnmatchcase(parts[2], p) for p in exempt):
                missed.add((os.path.relpath(o, builddir), parts[2]))
    return sorted(missed)


# ---------------------------------------------------------------- self-tests


def write_tree(root, files):
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


def inc(*names):
    return "".join('#include "%s"\n' % n for n in names)


def selftest_cycles():
    """Four knots (two modules across folders, one through a top-level header;
    three modules holding two cycles, one include found through a quoted name
    beside the file), two layering violations; a tree with neither; the list
    of known violations, which excuses its own and fails when one is gone."""
    fails = []

    def run(files, want, want_ok, counts=None):
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, files)
            ok, lines = check_cycles(root)
        text = "\n".join(lines)
        bad = [w for w in want if w not in lines]
        if counts:
            bad += ["%d lines with %r" % (n, w) for w, n in counts.items()
                    if sum(w in l for l in lines) != n]
        if ok != want_ok or bad:
            fails.append("the cycles check said (ok=%s, want %s), missing %s:\n%s"
                         % (ok, want_ok, bad, text))

    knotted = {
        "lib/runtime.h": inc("stdio.h"),
        "lib/runtime.c": inc("runtime.h", "observe/cupti.h"),
        "lib/observe/cupti.h": "/* #include \"runtime.h\" in a comment is none */\n",
        "lib/observe/cupti.c": inc("observe/cupti.h", "runtime.h", "gpuleak.h", "config.h"),
        "lib/track/a.h": inc("track/b.h"),
        "lib/track/b.c": inc("c.h", "track/a.h"),
        "lib/track/b.h": "",
        "lib/track/c.h": "",
        "lib/track/c.c": inc("track/a.h", "track/c.h"),
        "lib/track/d.h": inc("track/a.h", "base/x.h"),
        "lib/base/x.h": inc("track/d.h"),
        "lib/common/ok.h": "",
        "lib/stack/s.c": inc("python/p.h", "common/ok.h"),
        "lib/python/p.h": inc("stack/s.h"),
        "lib/stack/s.h": "",
        "include/gpuleak.h": "",
    }
    run(knotted, [
        "include cycle 1 of 4, among base/x, track/d:",
        "    base/x -> track/d -> base/x",
        "include cycle 2 of 4, among observe/cupti, runtime:",
        "    observe/cupti -> runtime -> observe/cupti",
        "    lib/observe/cupti.c:2 includes runtime.h",
        "include cycle 3 of 4, among python/p, stack/s:",
        "include cycle 4 of 4, among track/a, track/b, track/c:",
        "    track/a -> track/b -> track/a",
        "    track/a -> track/b -> track/c -> track/a",
        "    lib/track/b.c:1 includes track/c.h",
        "layering violation: lib/base/x.h:1 includes track/d.h (base is below track)",
        "layering violation: lib/observe/cupti.c:2 includes runtime.h (observe is below lib/)",
    ], False, {"include cycle ": 4, " -> ": 5, "layering violation: ": 2, "gpuleak.h": 0,
               "config.h": 0, "comment": 0})
    layered = {
        "lib/runtime.h": "", "lib/runtime.c": inc("runtime.h", "track/a.h"),
        "lib/track/a.h": inc("base/x.h"), "lib/track/a.c": inc("track/a.h", "a.h"),
        "lib/base/x.h": inc("common/ok.h"), "lib/common/ok.h": "",
        "lib/stack/s.h": inc("python/p.h"), "lib/python/p.h": "",
    }
    run(layered, ["0 include cycle(s); 0 new layering violation(s), 0 known "
                  "(tests/layout_layers.known) among 6 modules"], True)
    upward = dict(layered, **{"lib/base/w.c": inc("track/a.h"),
                              "lib/base/y.c": inc("track/a.h", "runtime.h")})
    known = "# comment\n\nlib/base/w.c track/a.h  # why\nlib/base/y.c runtime.h\n"
    run(dict(upward, **{KNOWN_LAYERING: known}), [
        "known layering violation: lib/base/w.c:1 includes track/a.h (base is below track)",
        "layering violation: lib/base/y.c:1 includes track/a.h (base is below track)"], False)
    run(dict(upward, **{KNOWN_LAYERING: known + "lib/base/y.c track/a.h\n"}),
        ["known layering violation: lib/base/y.c:2 includes runtime.h (base is below lib/)"],
        True)
    run(dict(layered, **{"lib/base/w.c": inc("track/a.h"), KNOWN_LAYERING: known}),
        ["tests/layout_layers.known:4: 'lib/base/y.c runtime.h' is gone from the tree: "
         "delete the line"], False)
    run(dict(layered, **{"lib/newdir/z.h": ""}),
        ["folder lib/newdir/ has no layer: add it to LAYERS in tests/layout.py"], False)
    return fails


def selftest_map():
    design = """# design\n## 1. The pipeline\n- `lib/gone.h`: outside section 2\n
## 2. Modules\n### `lib/common/` - shared\n- `ok.h`: fine.\n- `table.def`: a table.
### `lib/` - entry points\n- `inject.c`: has no header.\n- `runtime.h`: state.
%s### `src/` - launcher\n- `launcher.h`: the launcher.\n### Elsewhere
- `include/gpuleak.h`: the client API.\n- `bench/`: benchmarks.\n## 3. Decisions\n- `x.h`: not a map entry\n"""
    tree = {"lib/common/ok.h": "", "lib/common/ok.c": "", "lib/common/table.def": "",
            "lib/inject.c": "", "lib/runtime.h": "", "lib/runtime.c": "",
            "src/launcher.h": "", "src/main.c": "", "include/gpuleak.h": "", "bench/run": ""}
    fails = []
    cases = [
        ("", [], True),
        ("- `gone.h`: removed.\n- `inject.c`: twice.\n", [
            "doc/design.md:12 names lib/gone.h, which does not exist",
            "doc/design.md:10,13: lib/inject.c has 2 entries"], False),
    ]
    for extra, want, want_ok in cases:
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, dict(tree, **{"doc/design.md": design % extra}))
            ok, lines = check_map(root)
            text = "\n".join(lines)
            if ok != want_ok or any(w not in text for w in want):
                fails.append("map check on a tree %s said (ok=%s):\n%s"
                             % ("that is complete" if want_ok else "with a stale entry", ok, text))
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, dict(tree, **{"doc/design.md": design % "",
                                       "lib/track/new.h": "", "include/more.h": "",
                                       "lib/heap/hooks.c": ""}))
        ok, lines = check_map(root)
        text = "\n".join(lines)
        want = ["missing from doc/design.md section 2: " + p
                for p in ("lib/track/new.h", "include/more.h", "lib/heap/hooks.c")]
        if ok or any(w not in text for w in want) or "lib/gone.h" in text or "x.h" in text:
            fails.append("map check on a tree with unlisted files said (ok=%s):\n%s" % (ok, text))
    return fails


def selftest_names():
    header = r"""/* gl_bad_in_comment(void); */
#ifndef FOO_H
#define FOO_H
#define bad_macro(x) \
    do_not_look(x)
#define DEFINE_SORT(name) \
    static void name(int *v) \
    {                       \
        /* a comment that runs on \
         * past the line's end */ \
        int pivot = v[0];   \
        if (pivot)          \
            v[0] = 1;       \
    }
#include <stdint.h>
struct not_a_name { int field; void (*cb)(int); };
typedef struct gl_x { int y; } bad_typedef_t;
typedef int (*bad_fn_t)(int);
enum bad_enum { BAD_A, BAD_B = 2 };
extern struct gl_foo gl_foo;
extern const char *const gl_foo_names[4];
extern __thread struct t *gl_foo_cur __attribute__((tls_model("initial-exec")));
int gl_foo_count(const struct not_a_name *n, int (*cb)(void *), ...) __attribute__((format(printf, 2, 3)));
void gl_bar_misnamed(void);
extern int bad_variable;
extern void (*bad_hook)(int);
static inline int bad_inline(void) { return 0; }
static inline unsigned gl_foo_inline(void) { return 0; }
unsigned bad_unsigned(struct gl_x *x,
                      unsigned n);
GL_DECLARE_SOMETHING(bad_macro_arg);
GL_DEFINE_SOMETHING(x, struct y)
int after_a_macro(void);
_Static_assert(sizeof(int) == 4, "int");
const char *gl_foo_name(int k);
#endif
"""
    source = r"""#include "a/foo.h"
static int helper(void) { return 1; }
static const char *tbl[] = { "{", "}" };
struct gl_foo gl_foo = { .x = 1 };
int gl_foo_count(const struct not_a_name *n, int (*cb)(void *), ...) { if (n) { return 1; } return 0; }
void gl_bar_misnamed(void) {}
int bad_variable;
int stray_global = 3;
int stray_function(int a) { return a; }
extern int declared_elsewhere;
int prototype_only(void);
void *malloc(unsigned long n) { return 0; }
int gpuleak_runtime_version(void) { return 1; }
"""
    fails = []
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, {"lib/a/foo.h": header, "lib/a/foo.c": source,
                          "lib/libgpuleak.map": "{ global: gpuleak_*; malloc; local: *; };\n"})
        ok, lines = check_names(root)
        got = sorted(l.split(": ")[1].split(",")[0] for l in lines if l.startswith("lib/"))
        want = sorted(["function gl_bar_misnamed", "variable bad_variable", "variable bad_hook",
                       "function bad_inline", "function bad_unsigned",
                       "function after_a_macro",
                       "variable stray_global", "function stray_function"])
        if ok or got != want:
            fails.append("names check: want offenders %s, got (ok=%s):\n%s"
                         % (want, ok, "\n".join(lines)))
        if "lib/a/foo.h:24: function gl_bar_misnamed: want gl_foo_* or gl_foo" not in lines:
            fails.append("names check: wrong place or wording:\n" + "\n".join(lines))
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, {"lib/a/foo.h": "int gl_foo_x(void);\nextern int gl_foo;\n",
                          "lib/a/foo.c": "int gl_foo_x(void) { return 0; }\nint gl_foo;\n",
                          "lib/hooks.c": "int free_ok(void) { return 0; }\n",
                          "lib/libgpuleak.map": "{ global: free_*; local: *; };\n"})
        ok, lines = check_names(root)
        if not ok:
            fails.append("names check failed a sound tree:\n" + "\n".join(lines))
    # The cross-check with the objects: a function a macro defines is invisible
    # to the parser, not to nm.
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("cc")
    if cc and shutil.which("nm"):
        with tempfile.TemporaryDirectory() as root:
            src = "#define DEF(n) int n(void) { return 0; }\nDEF(hidden_fn)\nint gl_foo_x;\n"
            write_tree(root, {"lib/a/foo.c": src, "build/lib/a/.libs/x": ""})
            obj = os.path.join(root, "build/lib/a/.libs/libgpuleak_core_la-foo.o")
            if subprocess.call([cc, "-c", "-o", obj, os.path.join(root, "lib/a/foo.c")]) != 0:
                fails.append("could not compile the cross-check's object with " + cc)
            else:
                seen = {n for _, n, _, _, _, _ in declarations(src)}
                missed = missed_symbols(root, os.path.join(root, "build"), seen, [])
                if missed != [("lib/a/.libs/libgpuleak_core_la-foo.o", "hidden_fn")]:
                    fails.append("the cross-check with nm: want hidden_fn missed, got %s"
                                 % missed)
    else:
        print("self-test: no cc or nm, the cross-check with the objects not tested")
    return fails


CHECKS = {"cycles": (check_cycles, selftest_cycles), "map": (check_map, selftest_map),
          "names": (check_names, selftest_names)}


def main(argv):
    if len(argv) != 3 or argv[1] not in ("selftest",) + tuple(CHECKS) or (
            argv[1] == "selftest" and argv[2] not in CHECKS):
        sys.stderr.write("usage: layout.py {cycles|map|names} SRCDIR | selftest "
                         "{cycles|map|names}\n")
        return 99
    if argv[1] == "selftest":
        fails = CHECKS[argv[2]][1]()
        for f in fails:
            print("self-test FAIL: " + f)
        print("self-test of the %s check: %s" % (argv[2], "FAIL" if fails else "ok"))
        return 1 if fails else 0
    root = argv[2]
    if not os.path.isdir(os.path.join(root, "lib")):
        sys.stderr.write("layout.py: %s has no lib/\n" % root)
        return 99
    if argv[1] == "names":
        ok, lines = check_names(root, os.environ.get("GPULEAK_BUILDDIR"))
    else:
        ok, lines = CHECKS[argv[1]][0](root)
    for l in lines:
        print(l)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
