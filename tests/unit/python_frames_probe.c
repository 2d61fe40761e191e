/* SPDX-License-Identifier: MIT */
/* Loaded into a Python interpreter by tests/python/frames_oracle.py (ctypes):
 * captures stacks as the runtime does inside a CUDA call, and shows them as
 * the report would, so that the test can compare them with what the
 * interpreter itself says (traceback.extract_stack). */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/options.h"
#include "symbol/frame_filter.h"
#include "symbol/symbolize.h"
#include "stack/modules.h"
#include "python/py_frames.h"
#include "base/read_guard.h"
#include "stack/stack_capture.h"
#include "stack/unwind.h"
#include "python/py_watch.h"

/* Built with -fvisibility=hidden, as the runtime is. */
#define PROBE __attribute__((visibility("default")))

static struct gl_symbolizer *sym;

/* Set up as InitializeInjection does; returns the minor version, or -1 - why
 * in err. */
PROBE int probe_init(int num_callers, char *err, int errlen)
{
    if (!gl_unwind_load(err, (size_t)errlen))
        return -1;
    gl_modules_refresh();
    gl_stack_capture_init((unsigned)num_callers);
    int minor = gl_py_frames_init(err, (size_t)errlen);
    /* The walk's guard, as the runtime installs it (abnormal_end.h): in front
     * of whatever handles SIGSEGV and SIGBUS now, the default included. */
    for (int sig = SIGSEGV; sig; sig = sig == SIGSEGV ? SIGBUS : 0) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) == 0)
            gl_read_guard_chain(sig, &old);
    }
    return minor;
}

/* Whether the code watcher is registered (python/py_watch.h). */
PROBE int probe_watching(void) { return gl_py_watch_active(); }

/* ------------------------------------------------ made-up interpreters */

/* What a made-up interpreter answers for the symbols gl_py_frames_init looks
 * up: its version (Py_Version from 3.11, Py_GetVersion's text), and from 3.13
 * the start of _PyRuntime, its debug offsets (the cookie, the version, whether
 * free-threaded; every offset 0). */
static struct {
    unsigned long version_hex;
    char version_text[64];
    bool has_runtime;
    uint64_t runtime[128];
} fake;
static const uint64_t fake_code_type[64];

static const char *fake_get_version(void) { return fake.version_text; }
static void *fake_thread_state(void) { return NULL; }

static void *fake_lookup(const char *name)
{
    if (!strcmp(name, "PyGILState_GetThisThreadState"))
        return (void *)(uintptr_t)fake_thread_state;
    if (!strcmp(name, "PyCode_Type"))
        return (void *)fake_code_type;
    if (!strcmp(name, "Py_Version"))
        return fake.version_hex ? &fake.version_hex : NULL;
    if (!strcmp(name, "Py_GetVersion"))
        return (void *)(uintptr_t)fake_get_version;
    if (!strcmp(name, "_PyRuntime"))
        return fake.has_runtime ? fake.runtime : NULL;
    return NULL;
}

/* gl_py_frames_init on a made-up interpreter: version "MAJOR.MINOR.MICRO",
 * free-threaded or not.  Returns what it returns, the note in note.  Call it
 * before probe_init: once capture is on, init answers at once. */
PROBE int probe_init_fake(const char *version, int free_threaded, char *note, int notelen)
{
    int major = 0, minor = 0, micro = 0;
    sscanf(version, "%d.%d.%d", &major, &minor, &micro);
    memset(&fake, 0, sizeof fake);
    snprintf(fake.version_text, sizeof fake.version_text, "%s (main, Jan  1 2026, 00:00:00)",
             version);
    unsigned long hex =
        (unsigned long)major << 24 | (unsigned long)minor << 16 | (unsigned long)micro << 8 | 0xf0;
    if (major > 3 || (major == 3 && minor >= 11))
        fake.version_hex = hex;
    if (major > 3 || (major == 3 && minor >= 13)) {
        fake.has_runtime = true;
        memcpy(fake.runtime, "xdebugpy", 8);
        fake.runtime[1] = hex;
        fake.runtime[2] = free_threaded != 0;
    }
    return gl_py_frames_init_from(fake_lookup, note, (size_t)notelen);
}

/* Walks that faulted and gave up. */
PROBE unsigned long probe_faults(void) { return gl_py_frames_faults(); }

/* Called through ctypes.CDLL (the GIL released) or ctypes.PyDLL (held). */
PROBE __attribute__((noinline)) uint32_t probe_capture(void) { return gl_stack_capture(); }

/* A native frame between Python frames: calls back into Python. */
PROBE __attribute__((noinline)) uint32_t probe_call(uint32_t (*callback)(void))
{
    uint32_t id = callback();
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
    return id;
}

/* The stack as shown, one frame a line: "py FILE|FUNCTION|LINE" or
 * "native FUNCTION".  Returns the number of frames. */
PROBE int probe_frames(uint32_t id, char *buf, int len)
{
    if (!sym)
        sym = gl_symbolize_open();
    struct gl_frame f[GL_FRAMES_SHOWN_MAX];
    unsigned n = gl_frame_filter_stack(sym, id, false, f, GL_MAX_CALLERS);
    int k = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n && k < len; i++) {
        if (f[i].python)
            k += snprintf(buf + k, (size_t)(len - k), "py %s|%s|%d\n", f[i].file, f[i].function,
                          f[i].line);
        else
            k += snprintf(buf + k, (size_t)(len - k), "native %s\n",
                          f[i].function ? f[i].function : "???");
    }
    return (int)n;
}

/* Nanoseconds per gl_stack_capture, the Python walk included. */
PROBE double probe_bench(int iterations)
{
    uint64_t start = gl_clock_ns();
    for (int i = 0; i < iterations; i++)
        probe_capture();
    return (double)(gl_clock_ns() - start) / iterations;
}

/* Nanoseconds per walk of the Python frames alone (interning included). */
PROBE double probe_bench_walk(int iterations)
{
    uintptr_t frames[64];
    uint16_t ends[64];
    unsigned ngroups;
    volatile unsigned sink = 0;
    uint64_t start = gl_clock_ns();
    for (int i = 0; i < iterations; i++)
        sink += gl_py_frames_capture(frames, 64, ends, &ngroups);
    return (double)(gl_clock_ns() - start) / iterations;
}

/* The same without the Python frames (--python-frames=no). */
PROBE double probe_bench_native(int iterations)
{
    gl_py_frames_disable();
    return probe_bench(iterations);
}
