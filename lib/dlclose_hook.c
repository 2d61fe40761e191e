/* SPDX-License-Identifier: MIT */
/* dlclose, interposed: a shared object the program unloads is remembered
 * (symbol/unloaded_objects.h), so that the stacks of the blocks it allocated
 * still name its functions and lines in the exit report. */
#include <dlfcn.h>

#include "observe/driver.h"
#include "symbol/unloaded_objects.h"
#include "runtime.h"

#define GL_EXPORT __attribute__((visibility("default")))

GL_EXPORT int dlclose(void *handle)
{
    static int (*real_dlclose)(void *);
    if (!real_dlclose) {
        real_dlclose = (int (*)(void *))gl_driver_next_symbol("dlclose");
        if (!real_dlclose)
            return -1; /* no dlclose below: nothing could be unloaded */
    }
    if (!gl_runtime_tracking())
        return real_dlclose(handle);
    struct gl_unloading u;
    gl_unloaded_objects_begin(handle, &u);
    int rc = real_dlclose(handle);
    if (rc == 0)
        gl_unloaded_objects_end(&u);
    return rc;
}
