/* SPDX-License-Identifier: MIT */
#include "python/py_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "python/py_code.h"
#include "base/read_guard.h"
#include "python/py_lines.h"
#include "base/thread.h"
#include "common/util.h"

/* Byte offsets into CPython's structs on x86-64, per minor version: checked
 * with offsetof against each version's headers and by a walker compared with
 * traceback.extract_stack() (doc/research/python-frames/README.md, section 2).
 * -1: the version has no such field. */
struct py_layout {
    int minor;
    /* PyThreadState: the innermost frame, directly or through the _PyCFrame */
    int ts_frame, ts_cframe, cf_current;
    /* the frame: PyFrameObject (3.9, 3.10) or _PyInterpreterFrame (3.11+) */
    int f_code, f_back, f_lasti_int, f_instr_ptr, f_owner, f_is_entry;
    /* PyCodeObject */
    int co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_adaptive,
        co_firsttraceable;
    /* str: where a compact ASCII string's characters start, and a compact one's */
    int ascii_data, compact_data;
};

static const struct py_layout layouts[] = {
    {9, 24, -1, -1, 32, 24, 104, -1, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72},
    {10, 24, -1, -1, 32, 24, 96, -1, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72},
    {11, -1, 56, 8, 32, 48, -1, 56, 69, 68, 72, 112, 120, 128, 136, 184, 168, 48, 72},
    {12, -1, 56, 0, 0, 8, -1, 56, 70, -1, 68, 112, 120, 128, 136, 192, 176, 40, 56},
    {13, 72, -1, -1, 0, 8, -1, 56, 70, -1, 68, 112, 120, 128, 136, 200, 184, 40, 56},
};

enum { OWNED_BY_GENERATOR = 1, OWNED_BY_CSTACK = 3 };

#define MAX_WALK 1024 /* frames looked at, skipped ones included: a loop guard */

static struct {
    _Atomic bool enabled;
    bool disabled_by_user;
    const struct py_layout *L;
    int format; /* enum gl_py_line_format */
    void *(*this_thread_state)(void);
    int (*is_finalizing)(void);
    const void *code_type, *frame_type, *none;
    uintptr_t eval_lo, eval_hi;
    unsigned nranges;
    struct {
        uintptr_t lo, hi;
    } interp[4];
} py = {.L = NULL};

#define LD(p, off, T) (*(const T *)((const char *)(p) + (off)))

/* ------------------------------------------------------------------ init */

static int version_minor(void)
{
    const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
    if (hex)
        return (int)(*hex >> 24) == 3 ? (int)(*hex >> 16 & 0xff) : -1;
    const char *(*get)(void) = NULL;
    *(void **)&get = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    int major = 0, minor = -1;
    if (!get || sscanf(get(), "%d.%d", &major, &minor) != 2 || major != 3)
        return -1;
    return minor;
}

/* 3.13 publishes its own offsets at the start of _PyRuntime for debuggers
 * (_Py_DebugOffsets): the table must agree with them, and a free-threaded
 * build, whose objects are laid out differently, says so there. */
static bool check_debug_offsets(const struct py_layout *L, char *note, size_t len)
{
    const unsigned char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!rt || memcmp(rt, "xdebugpy", 8) != 0) {
        snprintf(note, len, "CPython 3.13 without its debug offsets");
        return false;
    }
    if (LD(rt, 16, uint64_t) != 0) {
        snprintf(note, len, "a free-threaded CPython 3.13 (not supported)");
        return false;
    }
    struct {
        int at, want;
    } checks[] = {
        {184, L->ts_frame},       {232, L->f_back},      {240, L->f_code},
        {248, L->f_instr_ptr},    {264, L->f_owner},     {280, L->co_filename},
        {288, L->co_name},        {296, L->co_qualname}, {304, L->co_linetable},
        {312, L->co_firstlineno}, {344, L->co_adaptive},
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(checks); i++)
        if (LD(rt, checks[i].at, uint64_t) != (uint64_t)checks[i].want) {
            snprintf(note, len,
                     "CPython 3.%d's debug offsets disagree with gpuleak's (field at %d: %llu, "
                     "expected %d)",
                     L->minor, checks[i].at, (unsigned long long)LD(rt, checks[i].at, uint64_t),
                     checks[i].want);
            return false;
        }
    return true;
}

struct find_object {
    uintptr_t addr;
    unsigned n;
};

/* The executable segments of the object that holds the interpreter. */
static int interpreter_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_object *f = arg;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph->p_memsz)
            holds = true;
    }
    if (!holds)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && f->n < 4; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            py.interp[f->n].lo = info->dlpi_addr + ph->p_vaddr;
            py.interp[f->n].hi = py.interp[f->n].lo + ph->p_memsz;
            f->n++;
        }
    }
    return 1;
}

static void find_eval_loop(void)
{
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        py.eval_lo = (uintptr_t)eval;
        py.eval_hi = py.eval_lo + sym->st_size;
    }
}

int gl_py_frames_init(char *note, size_t notelen)
{
    if (notelen)
        note[0] = '\0';
    if (py.disabled_by_user)
        return -1;
    if (atomic_load(&py.enabled))
        return py.L->minor;
    void *(*tstate)(void) = NULL;
    *(void **)&tstate = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    const void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    if (!tstate || !code_type)
        return -1; /* no Python here */
    int minor = version_minor();
    const struct py_layout *L = NULL;
    for (size_t i = 0; i < GL_ARRAY_SIZE(layouts); i++)
        if (layouts[i].minor == minor)
            L = &layouts[i];
    if (!L) {
        snprintf(note, notelen, "CPython 3.%d is not supported (3.9 to 3.13 are)", minor);
        return -1;
    }
    if (minor == 13 && !check_debug_offsets(L, note, notelen))
        return -1;
    /* Finalization frees every other thread's state while its lookup key still
     * answers with it: a daemon thread inside a CUDA call would walk freed
     * memory.  3.13 exports the check under its public name. */
    int (*finalizing)(void) = NULL;
    *(void **)&finalizing =
        dlsym(RTLD_DEFAULT, minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
    const void *frame_type = dlsym(RTLD_DEFAULT, "PyFrame_Type");
    const void *none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    if (!finalizing || !none || (minor <= 10 && !frame_type)) {
        snprintf(note, notelen, "CPython 3.%d without %s", minor,
                 !finalizing ? "its finalization check"
                 : !none     ? "_Py_NoneStruct"
                             : "PyFrame_Type");
        return -1;
    }
    struct find_object f = {(uintptr_t)tstate, 0};
    dl_iterate_phdr(interpreter_object, &f);
    py.nranges = f.n;
    find_eval_loop();
    py.L = L;
    py.format = gl_py_lines_format_of(minor);
    py.this_thread_state = tstate;
    py.is_finalizing = finalizing;
    py.code_type = code_type;
    py.frame_type = frame_type;
    py.none = none;
    atomic_store_explicit(&py.enabled, true, memory_order_release);
    return minor;
}

bool gl_py_frames_enabled(void) { return atomic_load_explicit(&py.enabled, memory_order_acquire); }

void gl_py_frames_disable(void)
{
    py.disabled_by_user = true;
    atomic_store(&py.enabled, false);
}

int gl_py_frames_minor(void) { return gl_py_frames_enabled() ? py.L->minor : -1; }

bool gl_py_frames_in_interpreter(uintptr_t ip)
{
    for (unsigned i = 0; i < py.nranges; i++)
        if (ip > py.interp[i].lo && ip <= py.interp[i].hi)
            return true;
    return false;
}

/* ip is a return address: the call is at ip - 1. */
bool gl_py_frames_in_eval_loop(uintptr_t ip) { return ip > py.eval_lo && ip <= py.eval_hi; }

/* --------------------------------------------------------------- strings */

/* A str's text as UTF-8: compact ASCII strings (nearly every name) in place,
 * other compact ones from their cached UTF-8 copy or transcoded into scratch.
 * Returns NULL for anything else. */
static const char *str_utf8(uintptr_t s, char *scratch, size_t len, size_t *used)
{
    const struct py_layout *L = py.L;
    if (!s || !len)
        return NULL;
    uint32_t state = LD(s, 32, uint32_t);
    unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
    int64_t n = LD(s, 16, int64_t);
    if (!compact || n < 0)
        return NULL;
    if (ascii)
        return (const char *)s + L->ascii_data;
    /* PyCompactUnicodeObject: utf8_length, then utf8, right after the ASCII header */
    const char *utf8 = LD(s, L->ascii_data + 8, const char *);
    if (utf8)
        return utf8;
    const unsigned char *data = (const unsigned char *)s + L->compact_data;
    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t c = kind == 1   ? data[i]
                     : kind == 2 ? ((const uint16_t *)data)[i]
                                 : ((const uint32_t *)data)[i];
        char buf[4];
        size_t m;
        if (c < 0x80) {
            buf[0] = (char)c;
            m = 1;
        } else if (c < 0x800) {
            buf[0] = (char)(0xc0 | c >> 6);
            buf[1] = (char)(0x80 | (c & 0x3f));
            m = 2;
        } else if (c < 0x10000) {
            buf[0] = (char)(0xe0 | c >> 12);
            buf[1] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[2] = (char)(0x80 | (c & 0x3f));
            m = 3;
        } else {
            buf[0] = (char)(0xf0 | (c >> 18 & 7));
            buf[1] = (char)(0x80 | (c >> 12 & 0x3f));
            buf[2] = (char)(0x80 | (c >> 6 & 0x3f));
            buf[3] = (char)(0x80 | (c & 0x3f));
            m = 4;
        }
        if (k + m + 1 > len)
            break; /* a name this long is cut */
        memcpy(scratch + k, buf, m);
        k += m;
    }
    scratch[k] = '\0';
    *used = k + 1;
    return scratch;
}

/* gl_py_code_reader: a live code object's names and line table. */
static bool read_code(const struct gl_py_code_key *k, struct gl_py_code *out, char *scratch,
                      size_t len)
{
    const struct py_layout *L = py.L;
    size_t used = 0, used2 = 0;
    uintptr_t qual = L->co_qualname >= 0 ? LD(k->code, L->co_qualname, uintptr_t) : k->name;
    out->file = str_utf8(k->filename, scratch, len / 2, &used);
    out->function = str_utf8(qual, scratch + used, len - used, &used2);
    if (!out->function)
        out->function = "?";
    if (!out->file)
        out->file = "?";
    out->firstlineno = k->firstlineno;
    out->format = py.format;
    /* bytes: ob_size at 16, the bytes at 32 */
    int64_t n = k->linetable ? LD(k->linetable, 16, int64_t) : 0;
    out->table = n > 0 ? (const uint8_t *)k->linetable + 32 : NULL;
    out->table_len = n > 0 && n < (1 << 24) ? (uint32_t)n : 0;
    return true;
}

/* ----------------------------------------------------------------- walk */

static uintptr_t innermost(uintptr_t ts)
{
    const struct py_layout *L = py.L;
    if (L->ts_frame >= 0)
        return LD(ts, L->ts_frame, uintptr_t);
    uintptr_t cf = LD(ts, L->ts_cframe, uintptr_t);
    return cf ? LD(cf, L->cf_current, uintptr_t) : 0;
}

/* The walk itself; its reads run under gl_py_frames_capture's guard. */
static __attribute__((noinline)) unsigned walk(uintptr_t ts, uintptr_t *frames, unsigned max,
                                               uint16_t *ends, unsigned *ngroups)
{
    const struct py_layout *L = py.L;
    unsigned n = 0, g = 0;
    uintptr_t f = innermost(ts);
    for (unsigned walked = 0; f && n < max && walked < MAX_WALK;
         f = LD(f, L->f_back, uintptr_t), walked++) {
        /* 3.9/3.10 frames are objects: one of another type means the chain is
         * not what the table says, and it is not followed further. */
        if (L->minor <= 10 && LD(f, 8, const void *) != py.frame_type)
            break;
        int owner = L->f_owner >= 0 ? LD(f, L->f_owner, unsigned char) : 0;
        if (owner == OWNED_BY_CSTACK) {
            /* 3.12+: the entry shim of an interpreter call closes a group. */
            if (g < max)
                ends[g++] = (uint16_t)n;
            continue;
        }
        uintptr_t co = LD(f, L->f_code, uintptr_t);
        bool entry = L->minor <= 10 || (L->f_is_entry >= 0 && LD(f, L->f_is_entry, bool));
        if (!co || co == (uintptr_t)py.none)
            goto next; /* 3.13's shims have None here */
        if (LD(co, 8, const void *) != py.code_type)
            break; /* neither: the chain is not what the table says */
        int64_t off;
        if (L->f_lasti_int >= 0) {
            off = LD(f, L->f_lasti_int, int);
            if (L->minor == 10)
                off *= 2; /* counted in code units */
        } else {
            off = (int64_t)(LD(f, L->f_instr_ptr, uintptr_t) - (co + (uintptr_t)L->co_adaptive));
            int64_t units = LD(co, 16, int64_t); /* Py_SIZE: code units */
            if (off < -2 || off >= 2 * units)
                goto next; /* not this code's: skip rather than guess */
            /* Not yet past its RESUME (_PyFrame_IsIncomplete): traceback skips it. */
            if (owner != OWNED_BY_GENERATOR && off < 2 * LD(co, L->co_firsttraceable, int))
                goto next;
        }
        uintptr_t table = LD(co, L->co_linetable, uintptr_t);
        struct gl_py_code_key k = {
            .code = co,
            .filename = LD(co, L->co_filename, uintptr_t),
            .name = LD(co, L->co_name, uintptr_t),
            .qualname = L->co_qualname >= 0 ? LD(co, L->co_qualname, uintptr_t) : 0,
            .linetable = table,
            .code_units = L->minor >= 11 ? LD(co, 16, int64_t) : 0,
            .firstlineno = LD(co, L->co_firstlineno, int),
        };
        if (table) {
            /* bytes: ob_size at 16, the bytes at 32 (never fewer than 8 there:
             * a bytes object's storage is rounded up and NUL-terminated) */
            k.table_len = LD(table, 16, int64_t);
            if (k.table_len > 0)
                memcpy(&k.table_head, (const char *)table + 32,
                       k.table_len < 8 ? (size_t)k.table_len : 8);
        }
        uint32_t id = gl_py_code_intern(&k, read_code);
        if (id)
            frames[n++] = gl_py_frames_make(id, (int32_t)off);
    next:
        /* Groups may be empty (all their frames skipped): one per interpreter
         * call all the same, so that they line up with the native frames. */
        if (entry && g < max)
            ends[g++] = (uint16_t)n;
    }
    if ((g == 0 ? n > 0 : ends[g - 1] < n) && g < max)
        ends[g++] = (uint16_t)n;
    *ngroups = g;
    return n;
}

static _Atomic unsigned long faults;

/* A walk that began before finalization can still meet it: the thread states
 * freed and the frame stacks unmapped under it.  A fault in the walk comes
 * back here (read_guard.h); the walk gives up, and capture stays off, since
 * what was read can no longer be trusted.  Nothing here changes after
 * sigsetjmp but what the walk writes through its arguments. */
static __attribute__((noinline)) unsigned guarded_walk(struct gl_thread *self, uintptr_t ts,
                                                       uintptr_t *frames, unsigned max,
                                                       uint16_t *ends, unsigned *ngroups)
{
    sigjmp_buf env;
    if (sigsetjmp(env, 0)) {
        gl_py_code_abandon();
        atomic_store_explicit(&py.enabled, false, memory_order_relaxed);
        atomic_fetch_add_explicit(&faults, 1, memory_order_relaxed);
        *ngroups = 0;
        return 0;
    }
    gl_read_guard_set(self, &env);
    unsigned n = walk(ts, frames, max, ends, ngroups);
    gl_read_guard_set(self, NULL);
    return n;
}

unsigned gl_py_frames_capture(uintptr_t *frames, unsigned max, uint16_t *ends, unsigned *ngroups)
{
    *ngroups = 0;
    if (!gl_py_frames_enabled())
        return 0;
    if (py.is_finalizing()) {
        /* For good: the interpreter is going away (see gl_py_frames_init). */
        atomic_store_explicit(&py.enabled, false, memory_order_relaxed);
        return 0;
    }
    uintptr_t ts = (uintptr_t)py.this_thread_state();
    struct gl_thread *self = gl_thread_self();
    if (!ts || !self)
        return 0;
    return guarded_walk(self, ts, frames, max, ends, ngroups);
}

unsigned long gl_py_frames_faults(void) { return atomic_load(&faults); }
