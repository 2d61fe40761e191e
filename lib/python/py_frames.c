/* SPDX-License-Identifier: MIT */
#include "python/py_frames.h"
#include "python/py_watch.h"

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
    /* 3.13+: where _Py_DebugOffsets (the start of _PyRuntime) keeps the same
     * offsets, in this order: ts_frame, f_back, f_code, f_instr_ptr, f_owner,
     * co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
     * co_adaptive.  0: not published. */
    short debug[11];
};

static const struct py_layout layouts[] = {
    {9, 24, -1, -1, 32, 24, 104, -1, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72, {0}},
    {10, 24, -1, -1, 32, 24, 96, -1, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72, {0}},
    {11, -1, 56, 8, 32, 48, -1, 56, 69, 68, 72, 112, 120, 128, 136, 184, 168, 48, 72, {0}},
    {12, -1, 56, 0, 0, 8, -1, 56, 70, -1, 68, 112, 120, 128, 136, 192, 176, 40, 56, {0}},
    {13,  72,  -1,  -1,  0,
     8,   -1,  56,  70,  -1,
     68,  112, 120, 128, 136,
     200, 184, 40,  56,  {184, 232, 240, 248, 264, 280, 288, 296, 304, 312, 344}},
    /* 3.14: f_executable is a _PyStackRef (tag bits below the pointer), the
     * owner moved behind the stack pointer, the code object grew */
    {14,  72,  -1,  -1,  0,
     8,   -1,  56,  74,  -1,
     68,  112, 120, 128, 136,
     208, 192, 40,  56,  {208, 256, 264, 272, 288, 320, 328, 336, 344, 352, 384}},
};

#define FIRST_MINOR 9
#define LAST_MINOR 14

/* _PyInterpreterFrame.owner: a generator's frame; the entry shim that each
 * call of the interpreter loop pushes (3.12, 3.13: FRAME_OWNED_BY_CSTACK; 3.14:
 * FRAME_OWNED_BY_INTERPRETER, with FRAME_OWNED_BY_CSTACK = 4 assigned nowhere). */
enum { OWNED_BY_GENERATOR = 1, OWNED_BY_ENTRY_SHIM = 3 };

/* 3.14's _PyStackRef: an object pointer with tag bits in its low two. */
#define STACKREF_TAG_BITS ((uintptr_t)3)

/* PyThreadState.interp, 3.12 to 3.14 (after prev and next): whose code
 * watcher vouches for the thread's code objects (python/py_watch.h). */
#define TS_INTERP 16

#define MAX_WALK 1024 /* frames looked at, skipped ones included: a loop guard */

static GL_READ_MOSTLY struct {
    _Atomic bool enabled;
    bool disabled_by_user;
    const struct py_layout *L;
    int format; /* enum gl_py_line_format */
    void *(*this_thread_state)(void);
    int (*is_finalizing)(void);
    const void *code_type, *frame_type, *none;
    uintptr_t eval_lo, eval_hi, cold_lo, cold_hi;
    unsigned nranges;
    struct {
        uintptr_t lo, hi;
    } interp[4];
} py = {.L = NULL};

#define LD(p, off, T) (*(const T *)((const char *)(p) + (off)))

/* ------------------------------------------------------------------ init */

/* The interpreter's version: Py_Version (3.11+), else Py_GetVersion's text
 * ("3.10.13 (main, ...").  False if neither answers. */
static bool interpreter_version(gl_py_lookup lookup, int *major, int *minor)
{
    const unsigned long *hex = lookup("Py_Version");
    if (hex) {
        *major = (int)(*hex >> 24);
        *minor = (int)(*hex >> 16 & 0xff);
        return true;
    }
    const char *(*get)(void) = NULL;
    *(void **)&get = lookup("Py_GetVersion");
    return get && sscanf(get(), "%d.%d", major, minor) == 2;
}

/* 3.13+ publishes its own offsets for debuggers at the start of _PyRuntime
 * (_Py_DebugOffsets: a cookie, the version, whether free-threaded, then the
 * offsets); NULL where there are none. */
static const unsigned char *debug_offsets(gl_py_lookup lookup)
{
    const unsigned char *rt = lookup("_PyRuntime");
    return rt && memcmp(rt, "xdebugpy", 8) == 0 ? rt : NULL;
}

/* The table must agree with the interpreter's own debug offsets. */
static bool check_debug_offsets(const struct py_layout *L, const unsigned char *rt, char *note,
                                size_t len)
{
    if (!rt) {
        snprintf(note, len, "CPython 3.%d without its debug offsets", L->minor);
        return false;
    }
    const int want[GL_ARRAY_SIZE(L->debug)] = {
        L->ts_frame,     L->f_back,         L->f_code,      L->f_instr_ptr,
        L->f_owner,      L->co_filename,    L->co_name,     L->co_qualname,
        L->co_linetable, L->co_firstlineno, L->co_adaptive,
    };
    for (size_t i = 0; i < GL_ARRAY_SIZE(want); i++)
        if (LD(rt, L->debug[i], uint64_t) != (uint64_t)want[i]) {
            snprintf(note, len,
                     "CPython 3.%d's debug offsets disagree with gpuleak's (field at %d: %llu, "
                     "expected %d)",
                     L->minor, L->debug[i], (unsigned long long)LD(rt, L->debug[i], uint64_t),
                     want[i]);
            return false;
        }
    return true;
}

struct find_object {
    uintptr_t addr;
    unsigned n;
    const uint8_t *eh_frame_hdr; /* its PT_GNU_EH_FRAME, if any */
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
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            f->eh_frame_hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && f->n < 4) {
            py.interp[f->n].lo = info->dlpi_addr + ph->p_vaddr;
            py.interp[f->n].hi = py.interp[f->n].lo + ph->p_memsz;
            f->n++;
        }
    }
    return 1;
}

/* The extent of the code that holds pc as .eh_frame_hdr's sorted table of
 * FDEs tells it: from the start of pc's FDE to the next FDE's start.  Only the
 * table encoding every x86-64 linker writes (DW_EH_PE_datarel | sdata4). */
static bool fde_extent(const uint8_t *hdr, uintptr_t pc, uintptr_t *lo, uintptr_t *hi)
{
    if (!hdr || hdr[0] != 1 || hdr[3] != 0x3b)
        return false;
    size_t ptr_size = (hdr[1] & 0x0f) == 0x03 || (hdr[1] & 0x0f) == 0x0b ? 4 : 8;
    if ((hdr[2] & 0x0f) != 0x03 && (hdr[2] & 0x0f) != 0x0b)
        return false; /* the count is not 4 bytes */
    uint32_t count;
    memcpy(&count, hdr + 4 + ptr_size, 4);
    const int32_t *table = (const int32_t *)(hdr + 8 + ptr_size);
    size_t a = 0, b = count; /* the last entry starting at or before pc: a - 1 */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if ((uintptr_t)(hdr + table[2 * m]) <= pc)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0 || a == count)
        return false; /* before the first, or in the last (no end known) */
    *lo = (uintptr_t)(hdr + table[2 * (a - 1)]);
    *hi = (uintptr_t)(hdr + table[2 * a]);
    return true;
}

/* Builds with a profile (Debian's: PGO and LTO) move the interpreter loop's
 * rarely run blocks out of _PyEval_EvalFrameDefault into a part of its own
 * (_PyEval_EvalFrameDefault.cold), far away and named only in .symtab, which
 * such builds strip; Debian's 3.14 keeps but 1 KiB of its loop under the
 * exported symbol, so a Python call made from the loop returns into the cold
 * part.  That part is found through the loop's jumps into it: the code it
 * jumps to most often outside itself (the target's extent from .eh_frame_hdr,
 * where the part has an entry of its own), if that is no exported function.
 * Byte patterns stand in for decoding, so a stray hit is possible; two jumps
 * to one place at least are wanted. */
static void find_cold_part(const uint8_t *eh_frame_hdr)
{
    struct {
        uintptr_t lo, hi;
        unsigned hits;
    } seen[8];
    unsigned nseen = 0, best = 0;
    const uint8_t *code = (const uint8_t *)py.eval_lo;
    size_t len = py.eval_hi - py.eval_lo;
    for (size_t i = 0; i + 6 <= len; i++) {
        size_t at; /* where the rel32 is: after e9 (jmp), 0f 80..8f (jcc) */
        if (code[i] == 0xe9)
            at = i + 1;
        else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80)
            at = i + 2;
        else
            continue;
        if (at + 4 > len)
            continue;
        int32_t rel;
        memcpy(&rel, code + at, 4);
        uintptr_t target = py.eval_lo + at + 4 + (uintptr_t)(intptr_t)rel, lo, hi;
        if ((target >= py.eval_lo && target < py.eval_hi) ||
            !gl_py_frames_in_interpreter(target + 1) || !fde_extent(eh_frame_hdr, target, &lo, &hi))
            continue;
        unsigned k = 0;
        while (k < nseen && seen[k].lo != lo)
            k++;
        if (k == nseen) {
            if (nseen == GL_ARRAY_SIZE(seen))
                continue;
            seen[nseen++] = (__typeof__(seen[0])){lo, hi, 0};
        }
        if (++seen[k].hits > seen[best].hits)
            best = k;
    }
    Dl_info info;
    if (nseen && seen[best].hits >= 2 &&
        !(dladdr((void *)seen[best].lo, &info) && info.dli_saddr == (void *)seen[best].lo)) {
        py.cold_lo = seen[best].lo;
        py.cold_hi = seen[best].hi;
    }
}

static void find_eval_loop(gl_py_lookup lookup, const uint8_t *eh_frame_hdr)
{
    void *eval = lookup("_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        py.eval_lo = (uintptr_t)eval;
        py.eval_hi = py.eval_lo + sym->st_size;
        find_cold_part(eh_frame_hdr);
    }
}

static void *lookup_dlsym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int gl_py_frames_init(char *note, size_t notelen)
{
    return gl_py_frames_init_from(lookup_dlsym, note, notelen);
}

/* The layout of the interpreter that lookup answers for; NULL with a note
 * naming an interpreter the walker does not know. */
static const struct py_layout *known_layout(gl_py_lookup lookup, char *note, size_t notelen)
{
    int major = 0, minor = -1;
    if (!interpreter_version(lookup, &major, &minor)) {
        snprintf(note, notelen,
                 "a Python whose version gpuleak cannot tell (CPython 3.%d to 3.%d are known)",
                 FIRST_MINOR, LAST_MINOR);
        return NULL;
    }
    if (major != 3) {
        snprintf(note, notelen,
                 "Python %d.%d is not known to this gpuleak (CPython 3.%d to 3.%d are)", major,
                 minor, FIRST_MINOR, LAST_MINOR);
        return NULL;
    }
    /* A free-threaded build lays its objects and frames out differently;
     * only 3.13+ has one, and says so in its debug offsets. */
    const unsigned char *rt = debug_offsets(lookup);
    if (rt && LD(rt, 16, uint64_t) != 0) {
        snprintf(note, notelen,
                 "free-threaded CPython 3.%dt is not known to this gpuleak (3.%d to 3.%d with "
                 "the GIL are)",
                 minor, FIRST_MINOR, LAST_MINOR);
        return NULL;
    }
    const struct py_layout *L = NULL;
    for (size_t i = 0; i < GL_ARRAY_SIZE(layouts); i++)
        if (layouts[i].minor == minor)
            L = &layouts[i];
    if (!L) {
        snprintf(note, notelen, "CPython 3.%d is not known to this gpuleak (3.%d to 3.%d are)",
                 minor, FIRST_MINOR, LAST_MINOR);
        return NULL;
    }
    if (L->debug[0] && !check_debug_offsets(L, rt, note, notelen))
        return NULL;
    if (L != &layouts[minor - FIRST_MINOR]) { /* walks[] is indexed so */
        snprintf(note, notelen, "gpuleak's table of CPython layouts is out of order at 3.%d",
                 minor);
        return NULL;
    }
    return L;
}

int gl_py_frames_init_from(gl_py_lookup lookup, char *note, size_t notelen)
{
    if (notelen)
        note[0] = '\0';
    if (py.disabled_by_user)
        return -1;
    if (atomic_load(&py.enabled))
        return py.L->minor;
    void *(*tstate)(void) = NULL;
    *(void **)&tstate = lookup("PyGILState_GetThisThreadState");
    const void *code_type = lookup("PyCode_Type");
    if (!tstate || !code_type)
        return -1; /* no Python here */
    const struct py_layout *L = known_layout(lookup, note, notelen);
    if (!L)
        return -1;
    int minor = L->minor;
    /* Finalization frees every other thread's state while its lookup key still
     * answers with it: a daemon thread inside a CUDA call would walk freed
     * memory.  3.13 exports the check under its public name. */
    int (*finalizing)(void) = NULL;
    *(void **)&finalizing = lookup(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
    const void *frame_type = lookup("PyFrame_Type");
    const void *none = lookup("_Py_NoneStruct");
    if (!finalizing || !none || (minor <= 10 && !frame_type)) {
        snprintf(note, notelen, "CPython 3.%d without %s", minor,
                 !finalizing ? "its finalization check"
                 : !none     ? "_Py_NoneStruct"
                             : "PyFrame_Type");
        return -1;
    }
    struct find_object f = {(uintptr_t)tstate, 0, NULL};
    dl_iterate_phdr(interpreter_object, &f);
    py.nranges = f.n;
    find_eval_loop(lookup, f.eh_frame_hdr);
    py.L = L;
    py.format = gl_py_lines_format_of(minor);
    py.this_thread_state = tstate;
    py.is_finalizing = finalizing;
    py.code_type = code_type;
    py.frame_type = frame_type;
    py.none = none;
    atomic_store_explicit(&py.enabled, true, memory_order_release);
    gl_py_watch_start(lookup, minor);
    return minor;
}

GL_HOT bool gl_py_frames_enabled(void)
{
    return atomic_load_explicit(&py.enabled, memory_order_acquire);
}

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
bool gl_py_frames_in_eval_loop(uintptr_t ip)
{
    return (ip > py.eval_lo && ip <= py.eval_hi) || (ip > py.cold_lo && ip <= py.cold_hi);
}

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

static inline __attribute__((always_inline)) uintptr_t innermost(const struct py_layout *L,
                                                                 uintptr_t ts)
{
    if (L->ts_frame >= 0)
        return LD(ts, L->ts_frame, uintptr_t);
    uintptr_t cf = LD(ts, L->ts_cframe, uintptr_t);
    return cf ? LD(cf, L->cf_current, uintptr_t) : 0;
}

/* A line table's first (up to) 8 bytes, as a word: a bytes object's storage
 * is rounded up and NUL-terminated, so 8 bytes at its start are always
 * readable; those past its length are not the table's and are left out. */
static inline uint64_t table_head(uintptr_t table, int64_t len)
{
    uint64_t head;
    memcpy(&head, (const char *)table + 32, 8);
    return len >= 8 ? head : head & ((UINT64_C(1) << (8 * len)) - 1);
}

/* _PyInterpreterFrame.owner (3.11+); 0 before. */
static inline __attribute__((always_inline)) int owner_of(const struct py_layout *L, uintptr_t f)
{
    return L->f_owner >= 0 ? LD(f, L->f_owner, unsigned char) : 0;
}

/* The code object a frame that is no entry shim runs; 0 for none (3.13's
 * and 3.14's shims have None there). */
static inline __attribute__((always_inline)) uintptr_t code_of(const struct py_layout *L,
                                                               uintptr_t f, const void *none)
{
    uintptr_t co = LD(f, L->f_code, uintptr_t);
    if (L->minor >= 14)
        co &= ~STACKREF_TAG_BITS; /* a _PyStackRef */
    return co == (uintptr_t)none ? 0 : co;
}

/* The interned id of a live code object: its key read and looked up. */
static inline __attribute__((always_inline)) uint32_t
identify(const struct py_layout *L, struct gl_py_cache *cache, uintptr_t co)
{
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
        k.table_len = LD(table, 16, int64_t); /* bytes: ob_size at 16, the bytes at 32 */
        if (k.table_len > 0)
            k.table_head = table_head(table, k.table_len);
    }
    return gl_py_code_intern_in(cache, &k, read_code);
}

/* The thread's slot for co if the watcher's epoch vouches for it: its key
 * was read and matched at this epoch, and no code object died since, so co
 * is still that object (python/py_watch.h); NULL otherwise (epoch 0: no
 * watcher). */
static inline __attribute__((always_inline)) const struct gl_py_cache_slot *
trusted(const struct gl_py_cache *cache, uint64_t epoch, uintptr_t co)
{
    if (!cache || !epoch)
        return NULL;
    const struct gl_py_cache_slot *s = &cache->slot[gl_py_code_slot(co)];
    return s->epoch == epoch && s->key.code == co && s->id ? s : NULL;
}

/* After identify matched co's key in its slot at this walk: the slot is
 * vouched for while the epoch read before the walk holds.  The epoch last:
 * a signal handler's walk meanwhile sees the slot untrusted. */
static inline __attribute__((always_inline)) void vouch(struct gl_py_cache *cache, uint64_t epoch,
                                                        uintptr_t co, uint32_t id, int64_t units,
                                                        int first_traceable)
{
    if (!cache || !epoch)
        return;
    struct gl_py_cache_slot *s = &cache->slot[gl_py_code_slot(co)];
    if (s->key.code != co || s->id != id)
        return;
    s->units = units;
    s->first_traceable = first_traceable;
    atomic_signal_fence(memory_order_seq_cst);
    s->epoch = epoch;
}

/* The walk itself; its reads run under gl_py_frames_capture's guard.  Inlined
 * into one copy per layout (walk_3_9 ... walk_3_14), where L's offsets and
 * the version's branches are constants: a capture walks a dozen frames, and
 * reading each offset from the table and testing each version at every frame
 * was most of a frame's instructions. */
static inline __attribute__((always_inline)) unsigned
walk_with(const struct py_layout *L, struct gl_py_cache *cache, uintptr_t ts, uintptr_t *frames,
          unsigned max, uint16_t *ends, unsigned *ngroups)
{
    const void *frame_type = py.frame_type, *code_type = py.code_type, *none = py.none;
    unsigned n = 0, g = 0;
    /* The code objects this walk has already identified.  A frame holds its
     * code alive, so within one walk a code object met again at the same
     * address is the same one: its id needs no key read again.  Stacks repeat
     * code objects: recursion, and a PyTorch module's forward under
     * _call_impl under _wrapped_call_impl at every level of nesting.  Across
     * walks this does not hold (the code may have been freed and another made
     * at its address): each walk starts empty. */
    struct {
        uintptr_t co;
        uint32_t id;
    } seen[4] = {{0, 0}};
    unsigned next_seen = 0;
    /* Before any frame is read: the epoch vouches for slots validated no
     * later than it (python/py_watch.h). */
    uint64_t epoch = L->minor >= 12 ? gl_py_watch_epoch(LD(ts, TS_INTERP, uintptr_t)) : 0;
    uintptr_t f = innermost(L, ts);
    /* The frames' code objects first, all at once: in a real program they are
     * cold (the line that allocates runs once a step, among others), and the
     * walk below would meet their misses one frame after another.  It reads
     * what the walk reads, in its order, and stops where it stops (never
     * later: a read past a frame that is not what the table says could fault,
     * and the guard would turn Python frames off for good); the checks hold,
     * so the loads of frames to come issue while a check's miss is pending. */
    uintptr_t p = f;
    for (unsigned k = 0; p && k < max; p = LD(p, L->f_back, uintptr_t), k++) {
        if (L->minor <= 10 && LD(p, 8, const void *) != frame_type)
            break;
        if (owner_of(L, p) >= OWNED_BY_ENTRY_SHIM)
            continue;
        uintptr_t co = code_of(L, p, none);
        if (!co)
            continue;
        if (trusted(cache, epoch, co))
            continue; /* the slot says all: nothing of the code to read */
        if (LD(co, 8, const void *) != code_type)
            break;
        __builtin_prefetch((const char *)co + 64);
        __builtin_prefetch((const char *)co + 128);
        __builtin_prefetch((const char *)co + 192);
        /* And what identify reads next, one step on: the thread's cache
         * slot (its address is the code's) and the line table's header (its
         * address is in the code object's first lines: loaded here, the
         * frames' misses overlap instead of coming one after another). */
        if (cache) {
            const char *slot = (const char *)&cache->slot[gl_py_code_slot(co)];
            __builtin_prefetch(slot);
            __builtin_prefetch(slot + sizeof cache->slot[0] - 1);
        }
        __builtin_prefetch((const char *)LD(co, L->co_linetable, uintptr_t) + 16);
    }
    for (unsigned walked = 0; f && n < max && walked < MAX_WALK;
         f = LD(f, L->f_back, uintptr_t), walked++) {
        /* 3.9/3.10 frames are objects: one of another type means the chain is
         * not what the table says, and it is not followed further. */
        if (L->minor <= 10 && LD(f, 8, const void *) != frame_type)
            break;
        int owner = owner_of(L, f);
        if (owner >= OWNED_BY_ENTRY_SHIM) {
            /* 3.12+: the entry shim of an interpreter call closes a group;
             * anything owned past it (3.14's unused C-stack owner) is no frame
             * of Python's either. */
            if (owner == OWNED_BY_ENTRY_SHIM && g < max)
                ends[g++] = (uint16_t)n;
            continue;
        }
        uintptr_t co = code_of(L, f, none);
        bool entry = L->minor <= 10 || (L->f_is_entry >= 0 && LD(f, L->f_is_entry, bool));
        if (!co)
            goto next;
        uint32_t id = 0;
        int64_t units = 0;
        int first_traceable = 0;
        const struct gl_py_cache_slot *known = trusted(cache, epoch, co);
        if (known) {
            id = known->id;
            units = known->units;
            first_traceable = known->first_traceable;
        } else {
            if (LD(co, 8, const void *) != code_type)
                break; /* neither: the chain is not what the table says */
            if (L->f_lasti_int < 0) {
                units = LD(co, 16, int64_t); /* Py_SIZE: code units */
                first_traceable = LD(co, L->co_firsttraceable, int);
            }
        }
        int64_t off;
        if (L->f_lasti_int >= 0) {
            off = LD(f, L->f_lasti_int, int);
            if (L->minor == 10)
                off *= 2; /* counted in code units */
        } else {
            off = (int64_t)(LD(f, L->f_instr_ptr, uintptr_t) - (co + (uintptr_t)L->co_adaptive));
            if (off < -2 || off >= 2 * units)
                goto next; /* not this code's: skip rather than guess */
            /* Not yet past its RESUME (_PyFrame_IsIncomplete): traceback skips it. */
            if (owner != OWNED_BY_GENERATOR && off < 2 * first_traceable)
                goto next;
        }
        for (unsigned i = 0; !id && i < GL_ARRAY_SIZE(seen); i++)
            if (seen[i].co == co)
                id = seen[i].id;
        if (!id) {
            id = identify(L, cache, co);
            if (id) {
                seen[next_seen].co = co;
                seen[next_seen].id = id;
                next_seen = (next_seen + 1) % GL_ARRAY_SIZE(seen);
                vouch(cache, epoch, co, id, units, first_traceable);
            }
        }
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

typedef unsigned (*walk_fn)(struct gl_py_cache *cache, uintptr_t ts, uintptr_t *frames,
                            unsigned max, uint16_t *ends, unsigned *ngroups);

#define WALK_FOR(minor)                                                                            \
    GL_HOT static __attribute__((noinline)) unsigned walk_3_##minor(                               \
        struct gl_py_cache *cache, uintptr_t ts, uintptr_t *frames, unsigned max, uint16_t *ends,  \
        unsigned *ngroups)                                                                         \
    {                                                                                              \
        return walk_with(&layouts[minor - FIRST_MINOR], cache, ts, frames, max, ends, ngroups);    \
    }
WALK_FOR(9)
WALK_FOR(10)
WALK_FOR(11)
WALK_FOR(12)
WALK_FOR(13)
WALK_FOR(14)
#undef WALK_FOR

static const walk_fn walks[] = {walk_3_9, walk_3_10, walk_3_11, walk_3_12, walk_3_13, walk_3_14};
_Static_assert(GL_ARRAY_SIZE(walks) == GL_ARRAY_SIZE(layouts), "a walk for every layout");
_Static_assert(GL_ARRAY_SIZE(layouts) == LAST_MINOR - FIRST_MINOR + 1, "a layout per version");

static _Atomic unsigned long faults;

/* A walk that began before finalization can still meet it: the thread states
 * freed and the frame stacks unmapped under it.  A fault in the walk comes
 * back here (read_guard.h); the walk gives up, and capture stays off, since
 * what was read can no longer be trusted.  Nothing here changes after
 * sigsetjmp but what the walk writes through its arguments. */
GL_HOT static __attribute__((noinline)) unsigned guarded_walk(struct gl_thread *self, uintptr_t ts,
                                                              uintptr_t *frames, unsigned max,
                                                              uint16_t *ends, unsigned *ngroups)
{
    walk_fn walk = walks[py.L->minor - FIRST_MINOR];
    struct gl_py_cache *cache = gl_py_code_cache(self);
    sigjmp_buf env;
    if (sigsetjmp(env, 0)) {
        gl_py_code_abandon();
        atomic_store_explicit(&py.enabled, false, memory_order_relaxed);
        atomic_fetch_add_explicit(&faults, 1, memory_order_relaxed);
        *ngroups = 0;
        return 0;
    }
    gl_read_guard_set(self, &env);
    unsigned n = walk(cache, ts, frames, max, ends, ngroups);
    gl_read_guard_set(self, NULL);
    return n;
}

GL_HOT unsigned gl_py_frames_capture(uintptr_t *frames, unsigned max, uint16_t *ends,
                                     unsigned *ngroups)
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
