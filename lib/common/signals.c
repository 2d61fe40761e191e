/* SPDX-License-Identifier: MIT */
#include "common/signals.h"

#include <signal.h>
#include <stdio.h>

#include "common/util.h"

const char *gl_signals_name(int sig, char *buf, size_t len)
{
    static const char *const names[] = {
        [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
        [SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
        [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
        [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
        [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM",
        [SIGPROF] = "SIGPROF", [SIGSYS] = "SIGSYS",
    };
    if (sig > 0 && (size_t)sig < GL_ARRAY_SIZE(names) && names[sig])
        return names[sig];
    snprintf(buf, len, "signal %d", sig);
    return buf;
}
