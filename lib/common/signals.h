/* SPDX-License-Identifier: MIT */
/* Signal names as reports and the launcher print them. */
#ifndef GPULEAK_SIGNALS_H
#define GPULEAK_SIGNALS_H

#include <stddef.h>

/* "SIGSEGV"; "signal 40" (written into buf) for a number without a name. */
const char *gl_signals_name(int sig, char *buf, size_t len);

#endif
