/* SPDX-License-Identifier: MIT */
#include "abnormal_end.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heap/heap.h"
#include "exit_report.h"
#include "runtime.h"
#include "python/py_frames.h"
#include "base/read_guard.h"
#include "stack/stack_capture.h"
#include "base/thread.h"
#include "common/util.h"

#define GL_EXPORT __attribute__((visibility("default")))

/* Signals whose default action ends the process (SIGKILL and SIGSTOP cannot
 * be caught; SIGALRM is the watchdog's). */
static const int fatal[] = {SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGABRT, SIGTRAP,
                            SIGSYS,  SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGPIPE,
                            SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGPROF, SIGVTALRM};

static atomic_int reporting_signal; /* the signal being reported, 0 if none */

/* Write a line with write(2) alone: nothing here may allocate or lock. */
static void say(const char *text)
{
    char line[256];
    int n = snprintf(line, sizeof line, "==%d== gpuleak: %s\n", (int)getpid(), text);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line);
        (void)w;
    }
}

/* Die of sig as the program would have without gpuleak. */
static __attribute__((noreturn)) void die_of(int sig)
{
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    /* A signal the default action ignores here cannot happen (all of them
     * end the process); still, never return into the fault. */
    syscall(SYS_exit_group, 128 + sig);
    __builtin_unreachable();
}

static void on_watchdog(int alarm)
{
    (void)alarm;
    say("the report did not finish in time (the signal struck where the report cannot run); "
        "no report");
    die_of(atomic_load(&reporting_signal));
}

static void on_fatal(int sig, siginfo_t *info, void *uc)
{
    gl_read_guard_catch(sig, uc); /* a guarded read's fault does not return */
    int none = 0;
    if (!atomic_compare_exchange_strong(&reporting_signal, &none, sig)) {
        /* Another thread is reporting: it ends the process. */
        for (;;)
            pause();
    }
    if (getpid() != gl_runtime.pid || !gl_runtime_tracking())
        die_of(sig);
    if (gl_heap_hooks_busy()) {
        say("the signal struck inside the allocator, where no report can be written; no report");
        die_of(sig);
    }
    signal(SIGALRM, on_watchdog);
    alarm(GL_SIGNAL_REPORT_SECONDS);
    struct gl_thread *self = gl_thread_self();
    struct gl_termination how = {
        .signal = sig,
        .si_code = info ? info->si_code : 0,
        .fault_addr = info ? (uint64_t)(uintptr_t)info->si_addr : 0,
        .stack = gl_stack_capture_interrupted(),
        .tid = self ? self->tid : (uint32_t)syscall(SYS_gettid),
    };
    gl_exit_report_ending(&how);
    alarm(0);
    die_of(sig);
}

void gl_abnormal_end_install(void)
{
    for (size_t i = 0; i < GL_ARRAY_SIZE(fatal); i++) {
        struct sigaction old;
        if (sigaction(fatal[i], NULL, &old) != 0)
            continue;
        if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) {
            /* The program's own handler, or ignored: its choice.  Python's
             * frames are read under a guard whose faults must not reach it. */
            if ((fatal[i] == SIGSEGV || fatal[i] == SIGBUS) && gl_py_frames_enabled())
                gl_read_guard_chain(fatal[i], &old);
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        /* SA_ONSTACK: a thread with an alternate stack (a stack overflow) uses it. */
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigfillset(&sa.sa_mask);
        sigdelset(&sa.sa_mask, SIGALRM); /* the watchdog must get through */
        sigdelset(&sa.sa_mask, SIGURG);  /* the leak check stops threads with it */
        sigaction(fatal[i], &sa, NULL);
    }
}

/* The report of a process ending without atexit, then the end itself. */
static __attribute__((noreturn)) void end_without_atexit(int status)
{
    if (getpid() == gl_runtime.pid && gl_runtime_tracking()) {
        struct gl_termination how = {.quick_exit = true, .exit_status = status};
        gl_exit_report_ending(&how);
    }
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* exit() ends with the C library's internal _exit, not these: only a program
 * calling _exit() or _Exit() itself gets here. */
GL_EXPORT void _exit(int status) { end_without_atexit(status); }
GL_EXPORT void _Exit(int status) { end_without_atexit(status); }
