/* SPDX-License-Identifier: MIT */
#include "signal_check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
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
static struct sigaction program; /* what the program had for it */
static _Atomic int pipe_w = -1;  /* the handler writes here */
static int pipe_r = -1;          /* the thread reads here */

static void on_signal(int s, siginfo_t *info, void *uc)
{
    int saved = errno;
    int fd = atomic_load_explicit(&pipe_w, memory_order_relaxed);
    if (fd >= 0) {
        /* Non-blocking: a full pipe already holds a check to come. */
        char byte = 1;
        ssize_t w = write(fd, &byte, 1);
        (void)w;
    }
    errno = saved;
    if (program.sa_flags & SA_SIGINFO) {
        if (program.sa_sigaction)
            program.sa_sigaction(s, info, uc);
    } else if (program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN) {
        program.sa_handler(s);
    }
}

static void *listen_for_checks(void *arg)
{
    (void)arg;
    char bytes[64];
    for (;;) {
        /* Every signal that came meanwhile: one check. */
        ssize_t n = read(pipe_r, bytes, sizeof bytes);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL; /* the pipe is gone (a fork child closed its copy) */
        if (!gpuleak_runtime_running())
            continue; /* the exit report has begun, or tracking failed */
        char name[32];
        gl_runtime_message("gpuleak: %s: a leak check, as --check-signal asks",
                           gl_signals_name(sig, name, sizeof name));
        (void)gpuleak_runtime_leak_check(gl_runtime.opt.check_signal_mode, NULL, NULL, 0);
    }
}

static int signal_of(int option)
{
    switch (option) {
    case GL_CHECK_SIGNAL_USR1:
        return SIGUSR1;
    case GL_CHECK_SIGNAL_USR2:
        return SIGUSR2;
    case GL_CHECK_SIGNAL_HUP:
        return SIGHUP;
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
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        gl_runtime_message("gpuleak: --check-signal=%s: cannot make a pipe (%s); no checks on "
                           "that signal",
                           named, strerror(errno));
        return;
    }
    /* The thread blocks on its end; the handler must never. */
    (void)fcntl(fds[0], F_SETFL, 0);
    pipe_r = fds[0];
    atomic_store(&pipe_w, fds[1]);
    if (!gl_thread_start_tool("gpuleak-signal", listen_for_checks, THREAD_STACK)) {
        gl_runtime_message("gpuleak: --check-signal=%s: cannot start its thread; no checks on "
                           "that signal",
                           named);
        atomic_store(&pipe_w, -1);
        close(fds[0]);
        close(fds[1]);
        pipe_r = -1;
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    /* SA_RESTART: the program's slow calls go on, as if no signal came. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(s, NULL, &program) != 0 || sigaction(s, &sa, NULL) != 0) {
        gl_runtime_message("gpuleak: --check-signal=%s: cannot handle it (%s); no checks on "
                           "that signal",
                           named, strerror(errno));
        atomic_store(&pipe_w, -1); /* the thread waits on, harmless */
        return;
    }
    sig = s;
    if (gl_runtime.opt.verbose > 0)
        gl_runtime_message("gpuleak: a leak check on each %s (kill -%s %d)%s", named, named + 3,
                           (int)getpid(),
                           program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN
                               ? ", then the program's own handler"
                               : "");
}

void gl_signal_check_after_fork_child(void)
{
    if (!sig)
        return;
    /* The parent's thread is not here, and its pipe would carry the
     * child's signals to the parent; the child does not track. */
    int w = atomic_exchange(&pipe_w, -1);
    if (w >= 0)
        close(w);
    if (pipe_r >= 0)
        close(pipe_r);
    pipe_r = -1;
    /* The program's disposition again, unless it set one of its own since. */
    struct sigaction now;
    if (sigaction(sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_signal)
        sigaction(sig, &program, NULL);
    sig = 0;
}
