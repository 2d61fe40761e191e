/* SPDX-License-Identifier: MIT */
#include "stack/stack_capture.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/options.h"
#include "common/util.h"
#include "stack/mixed_memo.h"
#include "stack/mixed_stack.h"
#include "stack/modules.h"
#include "base/warm.h"
#include "base/prof.h"
#include "python/py_frames.h"
#include "stack/stack_memo.h"
#include "stack/stack_depot.h"
#include "base/thread.h"
#include "base/tool.h"
#include "stack/unwind.h"

/* Frames kept per stack: what --num-callers shows plus slack for the CUDA runtime
 * internals that only report-time symbols can recognize (static cudart); and
 * Python frames, counted apart (mixed_stack.h). */
static GL_READ_MOSTLY unsigned keep_frames = 12 + GL_STACK_SLACK;
static GL_READ_MOSTLY unsigned keep_python = 12;

/* How many frames of gpuleak, CUPTI and the driver sit on top of the program's:
 * learnt from the stacks seen, so that a walk asks for no more frames than it keeps. */
static GL_READ_MOSTLY _Atomic unsigned internal_hint = 12;

/* Native frames walked past those kept, on a thread running Python, to find
 * the interpreter loops where its Python frames go. */
#define PYTHON_REACH 64
/* Room for raw frames beyond those kept: gpuleak's, CUPTI's and the driver's,
 * and Python's reach. */
#define RAW_EXTRA 144

/* A capture's buffers live on the calling thread's stack (a program thread,
 * inside its CUDA call) up to 80 native and 80 Python frames kept
 * (--num-callers up to 76): some 5.5 KiB.  A deeper one takes them from the
 * thread's room (deep_room), 24 KiB of tool memory mapped on its first such
 * capture; where it has none, it keeps what the stack can hold. */
#define SHALLOW_KEEP (GL_DEPOT_MAX_FRAMES / 2)
#define SHALLOW_RAW (SHALLOW_KEEP + RAW_EXTRA)
#define DEEP_KEEP (GL_STACK_MAX_FRAMES / 2)
#define DEEP_RAW (DEEP_KEEP + RAW_EXTRA)

_Static_assert(GL_MAX_CALLERS + GL_STACK_SLACK <= DEEP_KEEP, "the room keeps --num-callers");
_Static_assert(SHALLOW_RAW >= GL_MEMO_FRAMES, "the memo copies its frames into raw");

GL_READ_MOSTLY int gl_stack_capture_raw_mode;

_Static_assert(SHALLOW_KEEP <= GL_MIXED_MEMO_PYTHON && SHALLOW_RAW + 1 <= GL_MIXED_MEMO_NATIVE,
               "a shallow capture's stack fits the mixed memo");

/* A thread's struct goes to the next new thread: its memos start afresh. */
static void memo_retire(struct gl_thread *t)
{
    if (t->stack_memo)
        gl_stack_memo_clear(t->stack_memo);
    struct gl_mixed_memo *m = atomic_load_explicit(&t->mixed_memo, memory_order_relaxed);
    if (m)
        gl_mixed_memo_forget(m);
}

/* The thread's mixed memo, mapped on its first use; NULL if memory ran out. */
static struct gl_mixed_memo *mixed_memo_of(struct gl_thread *self)
{
    struct gl_mixed_memo *m = atomic_load_explicit(&self->mixed_memo, memory_order_relaxed);
    if (m)
        return m;
    struct gl_mixed_memo *fresh = gl_mixed_memo_new();
    if (!fresh)
        return NULL;
    if (atomic_compare_exchange_strong(&self->mixed_memo, &m, fresh))
        return fresh;
    gl_mixed_memo_free(fresh); /* a signal handler's capture mapped one */
    return m;
}

void gl_stack_capture_init(unsigned num_callers)
{
    gl_thread_add_retire(memo_retire);
    const char *raw = getenv("GPULEAK_DEBUG_RAW_STACKS");
    gl_stack_capture_raw_mode = raw && *raw == '1';
    const char *collide = getenv("GPULEAK_DEBUG_MIXED_COLLIDE");
    gl_mixed_memo_collide(collide && *collide == '1');
    keep_frames = num_callers + GL_STACK_SLACK;
    if (keep_frames > DEEP_KEEP)
        keep_frames = DEEP_KEEP;
    keep_python = num_callers < DEEP_KEEP ? num_callers : DEEP_KEEP;
}

static inline bool internal(enum gl_modules_role r)
{
    return r == GL_MOD_SELF || r == GL_MOD_CUPTI || r == GL_MOD_DRIVER;
}

/* The leading run of gpuleak/CUPTI/driver frames: its length, and the index of
 * the frame to keep if nothing follows from a shared CUDA runtime (the driver
 * entry point the caller called, when the run ends with one). */
static unsigned internal_run(const uintptr_t *frames, unsigned n, unsigned *keep)
{
    unsigned i = 0;
    int last_driver = -1;
    while (i < n) {
        enum gl_modules_role r = gl_modules_role(frames[i]);
        if (!internal(r))
            break;
        if (r == GL_MOD_DRIVER)
            last_driver = (int)i;
        i++;
    }
    *keep = last_driver >= 0 && (unsigned)last_driver == i - 1 ? i - 1 : i;
    return i;
}

/* internal_run, remembered per thread: a hit costs one compare of the prefix
 * instead of a module lookup per frame. */
static unsigned internal_run_memo(const uintptr_t *frames, unsigned n, unsigned *keep)
{
    struct gl_thread *self = gl_thread_self();
    if (self)
        for (unsigned m = 0; m < GL_PREFIX_MEMO; m++) {
            unsigned len = self->prefix[m].len;
            if (len && len < n && self->prefix[m].generation == gl_modules_generation() &&
                memcmp(frames, self->prefix[m].ips, len * sizeof *frames) == 0 &&
                !internal(gl_modules_role(frames[len]))) {
                *keep = self->prefix[m].keep;
                return len;
            }
        }
    unsigned len = internal_run(frames, n, keep);
    if (self && len > 0 && len <= GL_PREFIX_MAX && len < n) {
        unsigned m = self->prefix_next++ % GL_PREFIX_MEMO;
        self->prefix[m].len = (uint8_t)len;
        self->prefix[m].keep = (uint8_t)*keep;
        self->prefix[m].generation = gl_modules_generation();
        memcpy(self->prefix[m].ips, frames, len * sizeof *frames);
    }
    return len;
}

/* Index of the first frame to keep; *internal_count gets the leading internal
 * run, *read how many frames the answer depends on (it reads up to the first
 * frame of neither gpuleak, CUPTI, the driver nor the runtime). */
GL_HOT static unsigned first_kept(const uintptr_t *frames, unsigned n, unsigned *internal_count,
                                  unsigned *read)
{
    unsigned keep;
    unsigned i = internal_run_memo(frames, n, &keep);
    *internal_count = i;
    /* A shared CUDA runtime called the driver: the API the program called is the
     * outermost frame of libcudart, and the driver entry point says nothing more. */
    unsigned j = i;
    while (j < n && gl_modules_role(frames[j]) == GL_MOD_CUDART)
        j++;
    *read = j < n ? j + 1 : n;
    return j > i ? j - 1 : keep;
}

unsigned gl_stack_capture_trim(uintptr_t *frames, unsigned n)
{
    unsigned internal_count, read;
    unsigned start = first_kept(frames, n, &internal_count, &read);
    memmove(frames, frames + start, (n - start) * sizeof *frames);
    return n - start;
}

/* The kernel returns from a signal handler through libc's trampoline:
 * x86-64 glibc's __restore_rt is "mov $15,%rax; syscall" (rt_sigreturn). */
static bool is_sigreturn(uintptr_t ip)
{
#if defined(__x86_64__)
    static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    return gl_modules_role(ip) != GL_MOD_SELF && memcmp((const void *)ip, code, sizeof code) == 0;
#else
    (void)ip;
    return false;
#endif
}

/* A deep capture's buffers: one set per thread, in tool memory. */
struct deep_room {
    volatile int busy; /* taken: a signal handler's capture on the thread keeps to its stack */
    uintptr_t raw[DEEP_RAW];
    uintptr_t entered[DEEP_RAW + 1];
    uintptr_t mixed[GL_STACK_MAX_FRAMES];
    uintptr_t py_frames[DEEP_KEEP];
    uint16_t py_ends[DEEP_KEEP];
};

/* The calling thread's room, taken; NULL if it has none (no thread state, no
 * memory) or it is in use (a signal handler interrupted a capture). */
static struct deep_room *deep_room_take(void)
{
    struct gl_thread *self = gl_thread_self();
    if (!self)
        return NULL;
    if (!self->stack_memo && !(self->stack_memo = gl_stack_memo_new()))
        return NULL;
    struct deep_room *room = gl_stack_memo_room(self->stack_memo, sizeof *room);
    if (!room || room->busy)
        return NULL;
    room->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return room;
}

static void deep_room_give(struct deep_room *room)
{
    atomic_signal_fence(memory_order_seq_cst);
    room->busy = 0;
}

static uint32_t interrupted(uintptr_t *raw, unsigned max, unsigned keep)
{
    int got = gl_unwind_backtrace(raw, (int)max);
    for (int i = 0; i < got; i++)
        if (is_sigreturn(raw[i])) {
            unsigned n = (unsigned)(got - i - 1);
            if (n > keep)
                n = keep;
            return n ? gl_stack_depot_intern(raw + i + 1, n) : 0;
        }
    return 0;
}

uint32_t gl_stack_capture_interrupted(void)
{
    if (keep_frames > SHALLOW_KEEP) {
        struct deep_room *room = deep_room_take();
        if (room) {
            uint32_t id = interrupted(room->raw, DEEP_RAW, keep_frames);
            deep_room_give(room);
            return id;
        }
    }
    uintptr_t raw[SHALLOW_RAW];
    return interrupted(raw, SHALLOW_RAW, keep_frames < SHALLOW_KEEP ? keep_frames : SHALLOW_KEEP);
}

static const struct gl_interpreter_where interpreter = {gl_py_frames_in_interpreter,
                                                        gl_py_frames_in_eval_loop};

/* GPULEAK_BENCH=nomemo turns the memo off (gl_stack_capture_memo_enable). */
static GL_READ_MOSTLY bool memo_on = true;

void gl_stack_capture_memo_enable(bool on) { memo_on = on; }

GL_HOT void gl_stack_capture_warm(void)
{
    struct gl_thread *self = gl_thread_cur;
    if (!self)
        return;
    gl_warm((const char *)self + 64); /* the entry's hook wrote the first line */
    if (self->stack_memo && memo_on)
        gl_stack_memo_warm(self->stack_memo);
    struct gl_mixed_memo *m = atomic_load_explicit(&self->mixed_memo, memory_order_relaxed);
    if (m)
        gl_mixed_memo_warm(m); /* the set a lookup reads depends on the Python frames */
}

/* Walk the stack frame by frame, as the memo needs it, and remember it.  Not
 * inlined: the walk starts in this function's frame, and the memo finds the
 * capture's frames after it (stack_memo.h). */
static __attribute__((noinline)) void learn(struct gl_thread *self, const struct gl_memo_key *key,
                                            const uintptr_t *raw, unsigned n, uint32_t id)
{
    if (!self->stack_memo && !(self->stack_memo = gl_stack_memo_new()))
        return;
    if (n > GL_MEMO_FRAMES || !gl_stack_memo_may_learn(self->stack_memo))
        return;
    struct gl_unwind_frame walk[GL_MEMO_FRAMES + 4];
    uint64_t t0 = gl_prof_now();
    int walked = gl_unwind_walk_frames(walk, (int)n + 3);
    gl_stack_memo_learn(self->stack_memo, key, raw, n, walk, walked > 0 ? (unsigned)walked : 0, id);
    if (gl_prof_on)
        gl_prof_add(GL_PROF_LEARN, t0, gl_prof_now());
}

/* The driver entry point a hook stands for goes first, as CUPTI's captures
 * have it (the driver's outermost frame), unless a shared CUDA runtime's frame
 * was kept: then it is what the program called.  entry + 1: a return address
 * inside the function, wherever a symbolizer looks (pc or pc - 1). */
static inline unsigned with_entry(uintptr_t entry, const uintptr_t *frames, unsigned n,
                                  uintptr_t *out)
{
    out[0] = entry + 1;
    memcpy(out + 1, frames, n * sizeof *frames);
    return n + 1;
}

static inline bool wants_entry(uintptr_t entry, uintptr_t first)
{
    if (!entry)
        return false;
    enum gl_modules_role r = gl_modules_role(first);
    return r != GL_MOD_CUDART && r != GL_MOD_DRIVER;
}

uint32_t gl_stack_capture(void)
{
    struct gl_thread *self = gl_thread_self();
    return gl_stack_capture_entry(self ? self->call_entry : 0);
}

/* Where a capture puts its frames, and how many it keeps. */
struct capture_room {
    uintptr_t *raw; /* raw_max; then entered, raw_max + 1 */
    unsigned raw_max;
    uintptr_t *entered;
    uintptr_t *mixed; /* mixed_max */
    unsigned mixed_max;
    uintptr_t *py_frames; /* keep_python, and as many py_ends */
    uint16_t *py_ends;
    unsigned keep_frames, keep_python;
};

/* Raw frames trimmed as a capture keeps them: from the first frame kept,
 * behind the driver's entry point where a capture puts it. */
struct trimmed {
    const uintptr_t *top;
    unsigned n;
    unsigned start;    /* the raw index of the first frame kept */
    unsigned internal; /* the leading run of gpuleak, CUPTI and driver frames */
    unsigned read;     /* the raw frames the trim depends on */
    unsigned raw_base; /* raw frames before top[0]'s stack (the entry point is none) */
};

static inline struct trimmed trim(uintptr_t entry, const struct capture_room *b,
                                  const uintptr_t *raw, unsigned n)
{
    struct trimmed t;
    t.start = first_kept(raw, n, &t.internal, &t.read);
    t.top = raw + t.start;
    t.n = n - t.start;
    t.raw_base = t.start;
    if (t.n > 0 && wants_entry(entry, t.top[0])) {
        t.n = with_entry(entry, t.top, t.n, b->entered);
        t.top = b->entered;
        t.raw_base = t.start ? t.start - 1 : 0;
    }
    return t;
}

/* A Python capture's stack from the mixed memo, checking only the native
 * frames its merge read (a third of a PyTorch allocation's: the memo's
 * checks of the rest, and their misses, were most of a lookup's cost in a
 * training step).  The native memo checks the prefix the memo's entries
 * need (mixed_memo.h); 0 when no entry answers: the capture goes on as if
 * this had not run (entries that depend on the whole stack are compared
 * there).  *looked: the native memo hit the prefix (and counted it). */
GL_HOT static uint32_t mixed_probe(struct gl_thread *self, const struct gl_memo_key *key,
                                   uintptr_t entry, const struct capture_room *b,
                                   const struct gl_mixed_key *mk, bool *looked)
{
    struct gl_mixed_memo *m = atomic_load_explicit(&self->mixed_memo, memory_order_relaxed);
    if (!m)
        return 0;
    unsigned stamp;
    unsigned limit = gl_mixed_memo_need(m, mk, &stamp);
    unsigned n = limit ? gl_stack_memo_find_prefix(self->stack_memo, key, limit, b->raw) : 0;
    if (!n)
        return 0;
    *looked = true;
    struct trimmed t = trim(entry, b, b->raw, n);
    return t.n ? gl_mixed_memo_find_prefix(m, mk, t.top, t.n, stamp) : 0;
}

/* The capture, inlined into the function that holds its buffers: its frame
 * is the fixed point the memo places slots from (key.sp). */
static inline __attribute__((always_inline)) uint32_t capture(uintptr_t entry,
                                                              const struct capture_room *b)
{
    uintptr_t *raw = b->raw;
    struct gl_python_stack py = {b->py_frames, 0, b->py_ends, 0};
    if (gl_py_frames_enabled() && !gl_stack_capture_raw_mode) {
        uint64_t t0 = gl_prof_now();
        py.n = gl_py_frames_capture(b->py_frames, b->keep_python, b->py_ends, &py.ngroups);
        if (gl_prof_on)
            gl_prof_add(GL_PROF_PYTHON, t0, gl_prof_now());
    }
    /* This frame's address: a fixed distance from where the caller's return
     * address lies, which is what the memo needs of a capture's position. */
    struct gl_memo_key key = {(uintptr_t)__builtin_frame_address(0), 0, gl_modules_generation()};
    struct gl_thread *self = memo_on && !gl_stack_capture_raw_mode ? gl_thread_self() : NULL;
    unsigned want = atomic_load_explicit(&internal_hint, memory_order_relaxed) + b->keep_frames +
                    (py.n ? PYTHON_REACH : 0);
    const struct gl_mixed_key mk = {&py, py.n ? gl_mixed_memo_hash(&py) : 0,
                                    b->keep_frames << 16 | b->keep_python, key.generation};
    for (;;) {
        if (want > b->raw_max)
            want = b->raw_max;
        key.want = want;
        unsigned hit = 0;
        if (self && self->stack_memo) {
            uint64_t t0 = gl_prof_now();
            uint32_t id = 0;
            bool looked = false;
            if (py.n && (id = mixed_probe(self, &key, entry, b, &mk, &looked))) {
                if (gl_prof_on)
                    gl_prof_add(GL_PROF_MEMO, t0, gl_prof_now());
                return id;
            }
            hit = looked ? gl_stack_memo_find_again(self->stack_memo, &key, raw)
                         : gl_stack_memo_find(self->stack_memo, &key, py.n > 0, raw, &id);
            if (gl_prof_on)
                gl_prof_add(GL_PROF_MEMO, t0, gl_prof_now());
            if (hit && id && !py.n)
                return id;
        }
        int got;
        if (hit)
            got = (int)hit;
        else {
            uint64_t t0 = gl_prof_now();
            got = gl_unwind_backtrace(raw, (int)want);
            if (gl_prof_on) {
                gl_prof_add(GL_PROF_UNWIND, t0, gl_prof_now());
                gl_prof_maybe_walk();
            }
        }
        if (got <= 0)
            return 0;
        unsigned n = (unsigned)got;
        if (gl_stack_capture_raw_mode)
            return gl_stack_depot_intern(raw, n);
        struct trimmed t = trim(entry, b, raw, n);
        if (n - t.start < b->keep_frames && n == want && want < b->raw_max) {
            /* The buffer filled before the program's frames did: more internal
             * frames than expected.  Learn it and walk again. */
            unsigned hint = atomic_load_explicit(&internal_hint, memory_order_relaxed);
            if (t.internal + 4 > hint)
                atomic_store_explicit(&internal_hint, t.internal + 4, memory_order_relaxed);
            want = t.internal + 4 + b->keep_frames + (py.n ? PYTHON_REACH : 0);
            continue;
        }
        uint32_t id;
        if (py.n) {
            /* Only after the native memo's hit: a walk goes on to learn. */
            struct gl_mixed_memo *mm =
                self ? atomic_load_explicit(&self->mixed_memo, memory_order_relaxed) : NULL;
            uint32_t known =
                hit && mm ? gl_mixed_memo_find(mm, &mk, t.top, t.n, t.raw_base, t.read) : 0;
            if (known)
                return known;
            uint64_t t0 = gl_prof_now();
            unsigned used;
            unsigned m = gl_mixed_stack(t.top, t.n, &py, &interpreter, b->keep_frames,
                                        b->keep_python, b->mixed, b->mixed_max, &used);
            id = gl_stack_depot_intern(b->mixed, m);
            if (gl_prof_on)
                gl_prof_add(GL_PROF_MERGE, t0, gl_prof_now());
            /* The raw frames that hold the native ones the merge read, and
             * those that placed them (the internal run, the runtime's). */
            unsigned raw_need = t.raw_base + used;
            if (self && gl_mixed_memo_fits(t.n, &py) && (mm = mixed_memo_of(self)))
                gl_mixed_memo_put(mm, &mk, t.top, t.n, used, raw_need > t.read ? raw_need : t.read,
                                  id);
        } else
            id = gl_stack_depot_intern(t.top, t.n < b->keep_frames ? t.n : b->keep_frames);
        /* A stack the memo did not know: remember it, Python's result aside
         * (it depends on the Python frames too). */
        if (self && !hit && t.n > 0)
            learn(self, &key, raw, n, py.n ? 0 : id);
        return id;
    }
}

/* --num-callers above 76, in the thread's room; false if it has none. */
static __attribute__((noinline)) bool capture_deep(uintptr_t entry, uint32_t *id)
{
    struct deep_room *room = deep_room_take();
    if (!room)
        return false;
    const struct capture_room b = {
        .raw = room->raw,
        .raw_max = DEEP_RAW,
        .entered = room->entered,
        .mixed = room->mixed,
        .mixed_max = GL_STACK_MAX_FRAMES,
        .py_frames = room->py_frames,
        .py_ends = room->py_ends,
        .keep_frames = keep_frames,
        .keep_python = keep_python,
    };
    *id = capture(entry, &b);
    deep_room_give(room);
    return true;
}

GL_HOT uint32_t gl_stack_capture_entry(uintptr_t entry)
{
    if (__builtin_expect(keep_frames > SHALLOW_KEEP, 0)) {
        uint32_t id;
        if (capture_deep(entry, &id))
            return id;
    }
    uintptr_t raw[SHALLOW_RAW];
    uintptr_t entered[SHALLOW_RAW + 1];
    uintptr_t mixed[2 * SHALLOW_KEEP];
    uintptr_t py_frames[SHALLOW_KEEP];
    uint16_t py_ends[SHALLOW_KEEP];
    const struct capture_room b = {
        .raw = raw,
        .raw_max = SHALLOW_RAW,
        .entered = entered,
        .mixed = mixed,
        .mixed_max = 2 * SHALLOW_KEEP,
        .py_frames = py_frames,
        .py_ends = py_ends,
        .keep_frames = keep_frames < SHALLOW_KEEP ? keep_frames : SHALLOW_KEEP,
        .keep_python = keep_python < SHALLOW_KEEP ? keep_python : SHALLOW_KEEP,
    };
    return capture(entry, &b);
}

void gl_stack_capture_memo_totals(struct gl_stack_memo_counts *c,
                                  struct gl_mixed_memo_counts *mixed)
{
    memset(c, 0, sizeof *c);
    memset(mixed, 0, sizeof *mixed);
    gl_thread_registry_lock();
    for (struct gl_thread *t = gl_thread_registry(); t; t = t->next) {
        if (t->stack_memo)
            gl_stack_memo_add_counts(t->stack_memo, c);
        struct gl_mixed_memo *m = atomic_load_explicit(&t->mixed_memo, memory_order_relaxed);
        if (m)
            gl_mixed_memo_add_counts(m, mixed);
    }
    gl_thread_registry_unlock();
}
