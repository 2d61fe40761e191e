/* SPDX-License-Identifier: MIT */
/* When a code object may have died: an epoch that CPython's code watchers
 * (3.12+, PyCode_AddWatcher) move at every code object's destruction.
 *
 * Why: the Python walk names each frame's code object through the thread's
 * cache (py_code.h), keyed by its address, and the address may hold another
 * code object by the next walk (Python's allocator hands a freed block to the
 * next object of its size: exec'd functions land at freed ones' addresses).
 * So each walk read every frame's key again: two or three lines of each code
 * object and its line table's head, most of the walk's cache misses in a
 * real program (doc/design.md, "Python frames").  An address is reused only
 * after a destruction, and the watcher runs at the start of the code
 * object's deallocation, before its memory is freed: a cache slot validated
 * at epoch E whose address a live frame names while the epoch is still E
 * holds the same object, and the walk need not read it.
 *
 * Registering needs the GIL: done at once when the caller holds it (its
 * thread state is attached), else handed to the main thread's eval loop with
 * Py_AddPendingCall (any thread may call it, once Python is initialized).  Until it has run, and on 3.9
 * to 3.11, gl_py_watch_epoch gives 0: trust nothing.  One of the
 * interpreter's eight code watchers is taken; none free, nothing changes. */
#ifndef GPULEAK_PY_WATCH_H
#define GPULEAK_PY_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Start watching, once (later calls do nothing): lookup finds the
 * interpreter's symbols, minor is its version. */
void gl_py_watch_start(void *(*lookup)(const char *name), int minor);

/* The epoch now, for a thread of interpreter interp (its PyThreadState's
 * interp): never 0 while watching that interpreter; 0 when not (trust
 * nothing: a subinterpreter's code objects die unwatched).  Read before the
 * frames it vouches for. */
extern _Atomic uint64_t gl_py_watch_epoch_word;
extern uintptr_t gl_py_watch_interp;
static inline uint64_t gl_py_watch_epoch(uintptr_t interp)
{
    uint64_t e = atomic_load_explicit(&gl_py_watch_epoch_word, memory_order_acquire);
    return e && interp == gl_py_watch_interp ? e : 0;
}

/* Whether the watcher was registered (for -v and tests). */
bool gl_py_watch_active(void);

#endif
