/* SPDX-License-Identifier: MIT */
#include "base/read_guard.h"

#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

static atomic_ulong caught;

/* The program's actions for SIGSEGV and SIGBUS that the guard stands in front of. */
static struct sigaction chained_segv, chained_bus;

static struct sigaction *chained(int sig)
{
    return sig == SIGSEGV ? &chained_segv : sig == SIGBUS ? &chained_bus : NULL;
}

void gl_read_guard_catch(int sig, void *ucv)
{
    if (sig != SIGSEGV && sig != SIGBUS)
        return;
    struct gl_thread *t = gl_thread_cur; /* initial-exec TLS: no allocation here */
    if (!t || !t->read_guard)
        return;
    sigjmp_buf *env = t->read_guard;
    t->read_guard = NULL;
    atomic_fetch_add_explicit(&caught, 1, memory_order_relaxed);
    /* The guard saved no mask (a system call per walk); the handler's own mask
     * blocks everything, so put back the one the fault found. */
    const ucontext_t *uc = ucv;
    if (uc)
        pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, NULL);
    siglongjmp(*env, 1);
}

static void on_fault(int sig, siginfo_t *info, void *uc)
{
    gl_read_guard_catch(sig, uc);
    struct sigaction *old = chained(sig);
    if (!old)
        return;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_flags & SA_RESETHAND)
            signal(sig, SIG_DFL);
        old->sa_sigaction(sig, info, uc);
    } else if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
        /* The fault strikes again on return, with the default action: as
         * without the guard (the kernel does not let a fault be ignored). */
        signal(sig, SIG_DFL);
    } else {
        if (old->sa_flags & SA_RESETHAND)
            signal(sig, SIG_DFL);
        old->sa_handler(sig);
    }
}

void gl_read_guard_chain(int sig, const struct sigaction *old)
{
    struct sigaction *keep = chained(sig);
    if (!keep || !old)
        return;
    *keep = *old;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* The program's handler runs with the mask and flags it asked for. */
    sa.sa_mask = old->sa_mask;
    sa.sa_flags = (old->sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART)) | SA_SIGINFO;
    sigaction(sig, &sa, NULL);
}

unsigned long gl_read_guard_caught(void) { return atomic_load(&caught); }
