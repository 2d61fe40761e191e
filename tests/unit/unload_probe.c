/* SPDX-License-Identifier: MIT */
/* A shared object for tests/unit/check_unloaded: loaded, then unloaded, and its
 * function still symbolized afterwards. */
#include <stdint.h>

static volatile int probe_sink;

// clang-format off
__attribute__((noinline, used, visibility("default"))) uintptr_t gl_unload_probe(void) { probe_sink++; return (uintptr_t)__builtin_return_address(0); } enum { probe_line = __LINE__ };
// clang-format on

/* The line of gl_unload_probe, for the test to compare with: taken on that
 * line, so that a line added above it (a license header) moves both. */
__attribute__((visibility("default"))) int gl_unload_probe_line(void) { return probe_line; }
