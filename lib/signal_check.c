/* SPDX-License-Identifier: MIT */
#include "signal_check.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "client_api.h"
#include "runtime.h"
#include "base/thread.h"
#include "common/signals.h"

/* The check runs on the thread below, as a program thread's would: the
 * report's formatting and the search's bookkeeping want a program's stack,
 * not a helper's few pages (the stack is reserved, not touched). */
#define THREAD_STACK (8u << 20)

static int sig;                  /* the signal, once installed; 0 if none */
static int thread_sig;           /* the same, for the thread: set before it starts */
static struct sigaction program; /* what the program had for it */
/* A semaphore, not a pipe: sem_post is async-signal-safe, and there is no
 * descriptor for the program to close or reuse (a daemon's closefrom). */
static sem_t asked;

static void on_signal(int s, siginfo_t *info, void *uc)
{
    int saved = errno;
    sem_post(&asked);
    errno = saved;
    /* The program's handler, as the kernel would have run it (its mask and
     * flags are this handler's: signal_check_install). */
    if (program.sa_flags & SA_RESETHAND)
        signal(s, SIG_DFL);
    if (program.sa_flags & SA_SIGINFO)
        program.sa_sigaction(s, info, uc);
    else if (program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN)
        program.sa_handler(s);
}

static void *listen_for_checks(void *arg)
{
    (void)arg;
    /* Tool threads start with every signal blocked; the scan's guarded
     * reads catch their faults with SIGSEGV and SIGBUS on this thread
     * (base/read_guard.h), and a blocked fault would end the process. */
    sigset_t faults;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    sigaddset(&faults, SIGFPE);
    sigaddset(&faults, SIGILL);
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
    char name[32];
    const char *named = gl_signals_name(thread_sig, name, sizeof name);
    for (;;) {
        if (sem_wait(&asked) != 0)
            continue; /* EINTR */
        /* Every signal that came meanwhile: one check. */
        while (sem_trywait(&asked) == 0)
            ;
        if (!gpuleak_runtime_running())
            continue; /* the exit report has begun, or tracking failed */
        gl_runtime_message("gpuleak: %s: a leak check, as --check-signal asks", named);
        (void)gpuleak_runtime_leak_check(gl_runtime.opt.check_signal_mode, NULL, NULL, 0);
    }
    return NULL;
}

static int signal_of(int option)
{
    switch (option) {
    case GL_CHECK_SIGNAL_USR1:
        return SIGUSR1;
    case GL_CHECK_SIGNAL_USR2:
        return SIGUSR2;
    default:
        return 0;
    }
}

void gl_signal_check_install(void)
{
    int s = signal_of(gl_runtime.opt.check_signal);
    if (!s || sig)
        return;
    char name[32];
    const char *named = gl_signals_name(s, name, sizeof name);
    struct sigaction before;
    if (sigaction(s, NULL, &before) != 0)
        return;
    if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler == SIG_IGN) {
        /* Handled, it would no longer be ignored in what the program
         * starts without fork (posix_spawn, system: exec resets a handler
         * to the default action, and no fork handler runs to put it back). */
        gl_runtime_message("gpuleak: --check-signal=%s: the program ignores %s (nohup?); no "
                           "checks on that signal",
                           named, named);
        return;
    }
    sem_init(&asked, 0, 0);
    thread_sig = s;
    if (!gl_thread_start_tool("gpuleak-signal", listen_for_checks, THREAD_STACK)) {
        gl_runtime_message("gpuleak: --check-signal=%s: cannot start its thread; no checks on "
                           "that signal",
                           named);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    if (before.sa_flags & SA_SIGINFO || before.sa_handler != SIG_DFL) {
        /* The program's handler runs with the mask and flags it asked for
         * (without SA_RESTART, a read it waits in returns EINTR). */
        sa.sa_mask = before.sa_mask;
        sa.sa_flags = (before.sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART)) | SA_SIGINFO;
    } else {
        /* The default action ended the process: its slow calls go on. */
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    }
    /* One call: a handler another thread sets meanwhile is the one kept. */
    if (sigaction(s, &sa, &program) != 0) {
        gl_runtime_message("gpuleak: --check-signal=%s: cannot handle it (%s); no checks on "
                           "that signal",
                           named, strerror(errno));
        return; /* the thread waits on, for nothing */
    }
    sig = s;
    if (gl_runtime.opt.verbose > 0)
        gl_runtime_message("gpuleak: a leak check on each %s (kill -%s %d)%s", named, named + 3,
                           (int)getpid(),
                           program.sa_flags & SA_SIGINFO || program.sa_handler != SIG_DFL
                               ? ", then the program's own handler"
                               : "");
}

void gl_signal_check_after_fork_child(void)
{
    if (!sig)
        return;
    /* The parent's thread is not here, and the child does not track: the
     * program's disposition again, unless it set one of its own since. */
    sem_init(&asked, 0, 0);
    struct sigaction now;
    if (sigaction(sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_signal)
        sigaction(sig, &program, NULL);
    sig = 0;
}
