/* gpuleak.h: the client API of gpuleak, for programs and test suites.
 *
 * Header-only: a program that includes it needs no library at link time.  Each
 * call reaches gpuleak's runtime when the program runs under gpuleak, and is a
 * cheap no-op otherwise (the documented "not running" value is returned).
 * Compiles as C99 and later, C++11 and later, and in .cu files through nvcc.
 *
 * The runtime's entry points are weak references here: under gpuleak the
 * preloaded runtime defines them; otherwise they stay NULL. */
#ifndef GPULEAK_H
#define GPULEAK_H

#define GPULEAK_VERSION_MAJOR 0
#define GPULEAK_VERSION_MINOR 1

#ifdef __cplusplus
extern "C" {
#endif

extern int gpuleak_runtime_running(void) __attribute__((weak));

/* 1 if this process runs under gpuleak and its GPU memory is being tracked
 * (CUDA initialized, CUPTI available), else 0. */
static inline int gpuleak_running(void)
{
    return gpuleak_runtime_running ? gpuleak_runtime_running() : 0;
}

#ifdef __cplusplus
}
#endif

#endif
