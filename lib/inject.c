/* SPDX-License-Identifier: MIT */
/* Entry points of the runtime inside the program.
 *
 * The launcher sets LD_PRELOAD and CUDA_INJECTION64_PATH to this library.  The
 * preload makes its constructor, exported symbols and exit hooks exist before the
 * program runs; the CUDA driver calls InitializeInjection() from cuInit(), which
 * is when tracking starts.  The exit report runs from an atexit handler registered
 * there: handlers run in reverse order of registration, so it runs before the
 * CUDA runtime's own teardown (measured: doc/design.md, "The report from an atexit handler") and
 * sees the program's leaks still allocated. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abnormal_end.h"
#include "base/thread.h"
#include "client_api.h"
#include "components.h"
#include "event/dispatch.h"
#include "exit_report.h"
#include "observe/call.h"
#include "observe/crosscheck.h"
#include "observe/cupti.h"
#include "observe/driver.h"
#include "observe/cupti_loader.h"
#include "python/py_frames.h"
#include "report/error_sink.h"
#include "runtime.h"
#include "signal_check.h"
#include "stack/modules.h"
#include "stack/unwind.h"

#define GL_EXPORT __attribute__((visibility("default")))

static struct gl_cupti cupti;

static void after_fork_child(void)
{
    /* Every component's locks and per-process state (lib/components.c). */
    gl_dispatch_after_fork();
    gl_signal_check_after_fork_child();
    /* A child of a process that tracks CUDA cannot use its parent's contexts, and
     * its copy of the parent's blocks is not its own: it must not report them.
     * A child of a process that never started CUDA may start it and be tracked. */
    int state = atomic_load(&gl_runtime.state);
    if (state != GL_RT_IDLE && state != GL_RT_DISABLED)
        atomic_store(&gl_runtime.state, GL_RT_DISABLED);
    gl_runtime.pid = getpid();
    gl_runtime.is_main_process = false; /* the note is for the process the user started */
    gl_runtime.forked_child = true;
}

/* Whether an LD_PRELOAD entry (separated by ':' or ' ') names this library. */
static bool is_self(const char *entry, size_t len)
{
    static const char name[] = "libgpuleak.so";
    size_t n = sizeof name - 1;
    return len >= n && memcmp(entry + len - n, name, n) == 0 &&
           (len == n || entry[len - n - 1] == '/');
}

/* --trace-children=no: programs this process execs start without the preload
 * (the user's other preloads stay), and GL_UNTRACED_ENV keeps the copy the CUDA
 * driver may still load through CUDA_INJECTION64_PATH inert.  That variable
 * stays set: this process's own cuInit is still to come.  Runs in the
 * constructor of a preloaded library, before main and its threads: editing the
 * environment is safe only there. */
static void untrace_children(void)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old)
        return; /* loaded by the driver alone, not by the launcher's preload */
    size_t len = strlen(old);
    char *kept = malloc(len + 1);
    if (!kept)
        return;
    size_t k = 0;
    bool found = false;
    for (const char *p = old; *p;) {
        size_t n = strcspn(p, ": ");
        if (n && is_self(p, n))
            found = true;
        else if (n) {
            if (k)
                kept[k++] = ':';
            memcpy(kept + k, p, n);
            k += n;
        }
        p += n;
        p += strspn(p, ": ");
    }
    kept[k] = 0;
    if (found) {
        if (k)
            setenv("LD_PRELOAD", kept, 1);
        else
            unsetenv("LD_PRELOAD");
        setenv(GL_UNTRACED_ENV, "1", 1);
    }
    free(kept);
}

__attribute__((constructor)) static void gl_runtime_load(void)
{
    /* A program exec'd under --trace-children=no: the driver loaded this copy
     * (CUDA_INJECTION64_PATH); it stays inert, and InitializeInjection, seeing
     * the state, subscribes to nothing. */
    if (getenv(GL_UNTRACED_ENV)) {
        atomic_store(&gl_runtime.state, GL_RT_DISABLED);
        gl_runtime_status("untraced");
        return;
    }
    gl_dispatch_set_registry(gl_components);
    gl_runtime.pid = getpid();
    gl_runtime_mark_start();
    gl_thread_init();
    gl_client_api_publish();
    gl_options_defaults(&gl_runtime.opt);
    gl_runtime_save_stderr();
    gl_runtime_read_command();

    const char *main_pid = getenv(GL_PID_ENV);
    gl_runtime.is_main_process = main_pid && atoi(main_pid) == (int)gl_runtime.pid;

    const char *env = getenv(GL_OPTIONS_ENV);
    if (env) {
        char err[512];
        if (gl_options_parse_env(&gl_runtime.opt, env, err, sizeof err) < 0) {
            gl_options_defaults(&gl_runtime.opt);
            gl_runtime_message("gpuleak: %s: %s; GPU memory is not tracked in this process",
                               GL_OPTIONS_ENV, err);
            atomic_store(&gl_runtime.state, GL_RT_DISABLED);
            return;
        }
    }
    /* Options given to the runtime directly (GPULEAK_OPTIONS, no launcher):
     * relative file names from where the program started, as the launcher
     * makes them. */
    char cwd[GL_PATH_MAX], err[512];
    if (getcwd(cwd, sizeof cwd))
        (void)gl_options_make_absolute(&gl_runtime.opt, cwd, err, sizeof err);
    gl_runtime_prepare_log();
    if (!gl_runtime.opt.trace_children)
        untrace_children();
    pthread_atfork(NULL, NULL, after_fork_child);
}

static bool driver_loaded(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* A process the user started that never brought up CUDA gets one line instead of
 * a report, so that "no leaks" is never mistaken for "nothing was watched". */
__attribute__((destructor)) static void gl_runtime_unload(void)
{
    if (atomic_load(&gl_runtime.state) != GL_RT_IDLE || !gl_runtime.is_main_process ||
        getpid() != gl_runtime.pid)
        return;
    if (gl_runtime_status_seen("tracking"))
        return; /* a child of it did start CUDA (a test runner's forked tests, say) */
    const char *note =
        driver_loaded()
            ? "the CUDA driver was loaded but never initialized (no GPU, or cuInit failed): no "
              "GPU memory was tracked"
            : "the program did not initialize CUDA (or no CUDA driver is installed): no GPU "
              "memory was tracked";
    if (!gl_runtime.opt.quiet)
        gl_runtime_message("gpuleak: %s", note);
    /* The documents are written all the same (with -q too): a CI step or
     * CTest that reads them finds them, with no errors. */
    gl_exit_report_untracked(note);
}

/* -v: entry points of tracked families that no hook stands for. */
static void note_unknown_entries(void)
{
    if (gl_runtime.opt.verbose <= 0 || !gl_driver_started())
        return;
    const char *s;
    for (unsigned i = 0; (s = gl_driver_unknown(i)); i++)
        gl_runtime_message("gpuleak: entry point not hooked (passed through untouched): %s", s);
    if (gl_runtime.opt.intercept == GL_INTERCEPT_BOTH)
        gl_runtime_message("gpuleak: cross-check: %llu call(s) seen by one observer only",
                           (unsigned long long)gl_crosscheck_differences());
}

static void at_exit(void)
{
    note_unknown_entries();
    gl_exit_report();
}

/* Python frames in stacks: found now, when CUDA starts, which in a Python
 * program happens from Python. */
static void start_python_frames(void)
{
    if (!gl_runtime.opt.python_frames) {
        gl_py_frames_disable();
        return;
    }
    char note[256];
    int minor = gl_py_frames_init(note, sizeof note);
    if (minor < 0 && note[0])
        gl_runtime_message("gpuleak: %s; stacks show no Python frames", note);
    else if (minor >= 0 && gl_runtime.opt.verbose > 0)
        gl_runtime_message("gpuleak: Python frames from CPython 3.%d", minor);
}

/* Why the hooks cannot track in this process (gl_driver_hooks_reachable). */
static const char not_preloaded[] =
    "the driver's entry points cannot be hooked here (the CUDA driver loaded gpuleak's "
    "runtime alone: the program or a launcher between dropped the launcher's LD_PRELOAD)";

/* Subscribe to CUPTI; false with why in why (the loader's error where it
 * found no CUPTI). */
static bool cupti_start(bool both, const char *cupti_err, char *why, size_t whylen)
{
    if (cupti.path[0] && gl_cupti_start(&cupti, gl_runtime.opt.check_api_ranges, both, why, whylen))
        return true;
    if (!cupti.path[0])
        snprintf(why, whylen, "%s", cupti_err);
    return false;
}

/* Where the hooks cannot be reached, CUPTI alone can track: subscribed
 * before the tracking is configured (its callbacks drop events until the
 * dispatcher's gate opens), so that a process neither observer can watch
 * opens no --save or --trace-file and writes nothing that claims it was
 * watched.  False, said in one line, when CUPTI cannot be had either. */
static bool start_cupti_alone(const char *cupti_err)
{
    char why[512];
    if (cupti_start(false, cupti_err, why, sizeof why))
        return true;
    gl_runtime_message("gpuleak: %s, and %s; GPU memory is not tracked in this process",
                       not_preloaded, why);
    return false;
}

/* Start the observers --intercept asks for (inside cuInit: no CUDA call).
 * CUPTI taken by another client is no reason to track nothing: the driver
 * observer tracks alone then, and the other client keeps CUPTI.  Hooks the
 * program's lookups never reach are none either: CUPTI, started already
 * (start_cupti_alone), tracks then. */
static void start_observers(const char *cupti_err, bool hooks)
{
    const struct gl_options *o = &gl_runtime.opt;
    if (!hooks) {
        if (o->intercept != GL_INTERCEPT_CUPTI)
            gl_runtime_message("gpuleak: %s; tracking with CUPTI instead%s", not_preloaded,
                               o->intercept == GL_INTERCEPT_BOTH ? " (no cross-check)" : "");
        return;
    }
    bool ranges = o->check_api_ranges;
    if (o->intercept == GL_INTERCEPT_DRIVER) {
        gl_driver_start(ranges, false);
        return;
    }
    bool both = o->intercept == GL_INTERCEPT_BOTH;
    if (both)
        gl_driver_start(ranges, true);
    char why[512];
    if (cupti_start(both, cupti_err, why, sizeof why))
        return;
    gl_driver_start(ranges, false);
    gl_runtime_message("gpuleak: %s; tracking at the driver's entry points instead%s", why,
                       both ? " (no cross-check)" : "");
}

static const char *observers_name(void)
{
    if (!gl_driver_started())
        return "CUPTI";
    return gl_runtime.opt.intercept == GL_INTERCEPT_BOTH && cupti.path[0]
               ? "hooks at the driver's entry points, cross-checked by CUPTI"
               : "hooks at the driver's entry points";
}

GL_EXPORT int InitializeInjection(void)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    /* Starting calls into libraries (CUPTI) that may reach cuInit through its
     * hook, which starts the runtime: on this thread, that is this call. */
    static __thread bool starting;
    if (starting)
        return 1;
    starting = true;
    pthread_mutex_lock(&once);
    if (atomic_load(&gl_runtime.state) != GL_RT_IDLE) {
        pthread_mutex_unlock(&once);
        starting = false;
        return 1;
    }
    char cupti_err[512] = "", err[512];
    /* CUPTI is needed unless the driver observer tracks alone. */
    bool hooks = gl_driver_hooks_reachable();
    if ((gl_runtime.opt.intercept != GL_INTERCEPT_DRIVER || !hooks) &&
        !gl_cupti_loader_load(&cupti, cupti_err, sizeof cupti_err))
        cupti.path[0] = 0;
    if (!gl_unwind_load(err, sizeof err))
        gl_runtime_message("gpuleak: %s; allocations are tracked without their stacks", err);
    gl_error_sink_install();
    gl_modules_refresh();
    start_python_frames();
    if (!hooks && !start_cupti_alone(cupti_err)) {
        atomic_store(&gl_runtime.state, GL_RT_FAILED);
        pthread_mutex_unlock(&once);
        starting = false;
        return 1;
    }
    gl_runtime_configure_tracking(gl_components);
    char bad[128];
    if (!gl_call_bench_mode(getenv("GPULEAK_BENCH"), bad, sizeof bad))
        gl_runtime_message(
            "gpuleak: GPULEAK_BENCH: '%s' ignored (null, nostack, nomemo, profile, "
            "noobserve, nostate, spin:NS, alternate:OBSERVER[:PAIRS] with an attached "
            "observer's name or 'observers', PAIRS at least 10; at most one of noobserve, "
            "nostate and alternate; alternate:gpuleak[:PAIRS] with noobserve or nostate, "
            "not with null or spin)",
            bad);
    gl_runtime.pid = getpid();

    /* Tracking is on before the first event can come: no context exists yet. */
    atomic_store(&gl_runtime.state, GL_RT_TRACKING);
    start_observers(cupti_err, hooks);
    atexit(at_exit);
    /* First: the signal it takes is no longer one that ends the process. */
    gl_signal_check_install();
    gl_abnormal_end_install();
    gl_runtime_status("tracking");
    if (gl_runtime.opt.verbose > 0)
        gl_runtime_message("gpuleak: tracking GPU memory with %s%s%s", observers_name(),
                           cupti.path[0] ? ", CUPTI from " : "", cupti.path);
    pthread_mutex_unlock(&once);
    starting = false;
    return 1;
}
