/* SPDX-License-Identifier: MIT */
#include "base/thread.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/tool.h"

__thread struct gl_thread *gl_thread_cur __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gl_thread *registry;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
#define MAX_RETIRE 4
static gl_thread_retire_fn retire[MAX_RETIRE];
static _Atomic unsigned nretire;

void gl_thread_add_retire(gl_thread_retire_fn fn)
{
    unsigned n = atomic_load(&nretire);
    for (unsigned i = 0; i < n; i++)
        if (retire[i] == fn)
            return;
    if (n < MAX_RETIRE) {
        retire[n] = fn;
        atomic_store(&nretire, n + 1);
    }
}

static void on_thread_exit(void *arg)
{
    struct gl_thread *t = arg;
    unsigned n = atomic_load(&nretire);
    for (unsigned i = 0; i < n; i++)
        retire[i](t);
    t->seq_next = t->seq_end = 0; /* unused numbers of a block are simply skipped */
    t->disabled = 0; /* a thread that exits inside gpuleak_disable() must not pass it on */
    gl_thread_cur = NULL;
    /* The struct stays in the registry, free for the next new thread: its
     * stack cache points at immutable depot entries and stays valid. */
    atomic_store(&t->live, 0);
}

static void make_key(void) { pthread_key_create(&exit_key, on_thread_exit); }

void gl_thread_init(void) { pthread_once(&key_once, make_key); }

struct gl_thread *gl_thread_make(void)
{
    pthread_once(&key_once, make_key);
    struct gl_thread *t = NULL;
    pthread_mutex_lock(&lock);
    for (struct gl_thread *r = registry; r; r = r->next)
        if (!atomic_load(&r->live)) {
            t = r;
            break;
        }
    if (!t) {
        /* Mapped, not from a size class: the struct must start on a cache
         * line for its first two to hold what every call touches. */
        t = gl_tool_map(sizeof *t);
        if (t) {
            t->next = registry;
            registry = t;
        }
    }
    if (t)
        atomic_store(&t->live, 1);
    pthread_mutex_unlock(&lock);
    if (!t)
        return NULL;
    t->tid = (uint32_t)syscall(SYS_gettid);
    gl_thread_cur = t;
    pthread_setspecific(exit_key, t);
    return t;
}

void gl_thread_registry_lock(void) { pthread_mutex_lock(&lock); }
struct gl_thread *gl_thread_registry(void) { return registry; }
void gl_thread_registry_unlock(void) { pthread_mutex_unlock(&lock); }

void gl_thread_reset(void)
{
    pthread_mutex_lock(&lock);
    for (struct gl_thread *t = registry; t; t = t->next) {
        t->seq_next = t->seq_end = 0;
        t->spare_node = NULL;
        t->disabled = 0;
    }
    pthread_mutex_unlock(&lock);
}

void gl_thread_after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    if (gl_thread_cur)
        gl_thread_cur->tid = (uint32_t)syscall(SYS_gettid);
}

bool gl_thread_start_tool(const char *name, void *(*fn)(void *), size_t stack_bytes)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack_bytes);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&t, &attr, fn, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (ok)
        pthread_setname_np(t, name);
    return ok;
}
