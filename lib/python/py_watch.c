/* SPDX-License-Identifier: MIT */
#include "python/py_watch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

_Atomic uint64_t gl_py_watch_epoch_word;
uintptr_t gl_py_watch_interp; /* written before the epoch turns nonzero */

/* CPython's PyCodeEvent (3.12+): PY_CODE_EVENT_CREATE, PY_CODE_EVENT_DESTROY. */
enum { CODE_EVENT_DESTROY = 1 };

static _Atomic bool started, active;
static int (*add_watcher)(int (*)(int, void *));
static void (*err_clear)(void);
static void *(*interp_get)(void);

/* Called by the interpreter, with the GIL, at each code object's creation
 * and at the start of its deallocation (before its memory goes back). */
static int on_code_event(int event, void *code)
{
    (void)code;
    if (event == CODE_EVENT_DESTROY)
        atomic_fetch_add_explicit(&gl_py_watch_epoch_word, 1, memory_order_release);
    return 0;
}

/* With the GIL held (the caller's, or the main thread's pending call). */
static int register_watcher(void *arg)
{
    (void)arg;
    if (add_watcher(on_code_event) < 0) {
        err_clear(); /* all eight taken: the walk keeps reading keys */
        return 0;
    }
    /* The watchers are the interpreter's: only its threads' walks trust. */
    gl_py_watch_interp = (uintptr_t)interp_get();
    /* From now on every destruction moves the epoch: 1, not 0, trusts. */
    atomic_store_explicit(&gl_py_watch_epoch_word, 1, memory_order_release);
    atomic_store_explicit(&active, true, memory_order_relaxed);
    return 0;
}

void gl_py_watch_start(void *(*lookup)(const char *name), int minor)
{
    if (minor < 12 || atomic_exchange(&started, true))
        return;
    /* GPULEAK_DEBUG_NO_CODE_WATCH=1: read every key, as before 3.12 (a
     * benchmark's other column, a test's). */
    const char *off = getenv("GPULEAK_DEBUG_NO_CODE_WATCH");
    if (off && *off == '1')
        return;
    void *(*attached)(void) = NULL;
    int (*initialized)(void) = NULL;
    int (*pending)(int (*)(void *), void *) = NULL;
    *(void **)&add_watcher = lookup("PyCode_AddWatcher");
    *(void **)&err_clear = lookup("PyErr_Clear");
    *(void **)&interp_get = lookup("PyInterpreterState_Get");
    /* This thread's state while it holds the GIL, NULL otherwise (not
     * PyGILState_Check: it answers yes before Py_Initialize and once a
     * subinterpreter turned its checks off). */
    *(void **)&attached =
        lookup(minor >= 13 ? "PyThreadState_GetUnchecked" : "_PyThreadState_UncheckedGet");
    *(void **)&initialized = lookup("Py_IsInitialized");
    *(void **)&pending = lookup("Py_AddPendingCall");
    if (!add_watcher || !err_clear || !interp_get || !attached || !initialized || !pending)
        return;
    if (!initialized())
        return; /* CUDA before Py_Initialize (a program embedding Python): not watched */
    if (attached())
        register_watcher(NULL);
    else
        pending(register_watcher, NULL); /* -1 (its queue full): not watched */
}

bool gl_py_watch_active(void) { return atomic_load_explicit(&active, memory_order_relaxed); }
