/* SPDX-License-Identifier: MIT */
/* Environment variables through which the launcher talks to the runtime. */
#ifndef GPULEAK_ENV_H
#define GPULEAK_ENV_H

/* The options, serialized (options.h). */
#define GL_OPTIONS_ENV "GPULEAK_OPTIONS"
/* Set in the child to the child's own pid, so the runtime knows which process is
 * the one the user started (that one alone gets the "no CUDA" note). */
#define GL_PID_ENV "GPULEAK_PID"
/* A file the launcher reads when the program has ended: each process that
 * tracked CUDA appends "pid=N tracking" when it starts and "pid=N report
 * errors=E" once its report is written (--error-exitcode, and the launcher's
 * knowledge of reports that could not be written). */
#define GL_STATUS_ENV "GPULEAK_STATUS_FILE"

/* Set by a process under --trace-children=no for the programs it execs: the
 * runtime, if loaded into one of them (through CUDA_INJECTION64_PATH), stays
 * inert and only tells the status file so. */
#define GL_UNTRACED_ENV "GPULEAK_UNTRACED"

/* "off" in a program run with --framework-caching=off, whose frameworks' caching
 * allocators the launcher turned off (PyTorch, JAX: their variables; CuPy: the
 * sitecustomize in python/gpuleak_site). */
#define GL_FRAMEWORK_CACHING_ENV "GPULEAK_FRAMEWORK_CACHING"

#endif
