#include "thread_state.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tool_alloc.h"

__thread struct gl_thread *gl_thread_cur __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gl_thread *registry;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static gl_thread_spare_release_fn spare_release;
/* Counters of threads that exited. */
static _Atomic uint64_t retired_allocs, retired_frees, retired_bytes;
static _Atomic int64_t retired_live;

void gl_thread_set_spare_release(gl_thread_spare_release_fn fn) { spare_release = fn; }

static void on_thread_exit(void *arg)
{
    struct gl_thread *t = arg;
    atomic_fetch_add(&retired_allocs, atomic_exchange(&t->allocs, 0));
    atomic_fetch_add(&retired_frees, atomic_exchange(&t->frees, 0));
    atomic_fetch_add(&retired_bytes, atomic_exchange(&t->bytes_allocated, 0));
    atomic_fetch_add(&retired_live, atomic_exchange(&t->live_delta, 0));
    t->seq_next = t->seq_end = 0; /* unused numbers of a block are simply skipped */
    t->disabled = 0; /* a thread that exits inside gpuleak_disable() must not pass it on */
    if (t->spare_node && spare_release)
        spare_release(t->spare_node);
    t->spare_node = NULL;
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
        t = gl_tool_alloc(sizeof *t);
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

void gl_thread_totals(struct gl_thread_totals *out)
{
    out->allocs = atomic_load(&retired_allocs);
    out->frees = atomic_load(&retired_frees);
    out->bytes_allocated = atomic_load(&retired_bytes);
    out->live_delta = atomic_load(&retired_live);
    pthread_mutex_lock(&lock);
    for (struct gl_thread *t = registry; t; t = t->next) {
        out->live_delta += atomic_load_explicit(&t->live_delta, memory_order_relaxed);
        out->allocs += atomic_load_explicit(&t->allocs, memory_order_relaxed);
        out->frees += atomic_load_explicit(&t->frees, memory_order_relaxed);
        out->bytes_allocated += atomic_load_explicit(&t->bytes_allocated, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
}

void gl_thread_reset(void)
{
    atomic_store(&retired_allocs, 0);
    atomic_store(&retired_frees, 0);
    atomic_store(&retired_bytes, 0);
    atomic_store(&retired_live, 0);
    pthread_mutex_lock(&lock);
    for (struct gl_thread *t = registry; t; t = t->next) {
        atomic_store(&t->allocs, 0);
        atomic_store(&t->frees, 0);
        atomic_store(&t->bytes_allocated, 0);
        atomic_store(&t->live_delta, 0);
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
