/* SPDX-License-Identifier: MIT */
#include "check/run_suppressions.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/paths.h"
#include "runtime.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gl_supp_set set;
/* Set last, under lock; read without it on the fast path (acquire pairs with
 * the release that publishes the loaded set). */
static bool loaded;

static void add_file(const char *path, void *arg)
{
    struct gl_supp_set *s = arg;
    char err[512];
    if (gl_suppressions_load_file(s, path, err, sizeof err) < 0)
        gl_runtime_message("gpuleak: %s", err);
}

static void load(struct gl_supp_set *s)
{
    gl_suppressions_set_init(s);
    for (int i = 0; gl_options_suppression(&gl_runtime.opt, i); i++)
        add_file(gl_options_suppression(&gl_runtime.opt, i), s);
    /* The launcher lists the installed defaults itself and passes
     * --default-suppressions=no; a program started without it finds them
     * beside the runtime. */
    if (!gl_runtime.opt.default_suppressions)
        return;
    Dl_info info;
    if (dladdr((void *)&gl_run_suppressions, &info) && info.dli_fname) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            gl_paths_default_suppressions(dir, true, add_file, s);
        }
    }
}

struct gl_supp_set *gl_run_suppressions(void)
{
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE))
        return &set;
    pthread_mutex_lock(&lock);
    if (!loaded) {
        load(&set);
        __atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return &set;
}

struct gl_supp_set *gl_run_suppressions_loaded(void)
{
    return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) ? &set : NULL;
}

void gl_run_suppressions_count_errors(struct gl_supp_set *s, const struct gl_error_context *ctx,
                                      size_t n)
{
    /* The token is compared, never followed: a context from a set since
     * unloaded (tests) counts nowhere. */
    for (size_t i = 0; i < n; i++)
        if (ctx[i].suppressed_by)
            for (size_t j = 0; j < s->n; j++)
                if ((const void *)&s->v[j] == ctx[i].suppressed_by) {
                    s->v[j].count += ctx[i].count;
                    break;
                }
}

void gl_run_suppressions_unload(void)
{
    pthread_mutex_lock(&lock);
    if (loaded)
        gl_suppressions_set_free(&set);
    __atomic_store_n(&loaded, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

void gl_run_suppressions_after_fork_child(void) { pthread_mutex_init(&lock, NULL); }
