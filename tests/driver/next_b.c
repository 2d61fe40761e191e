/* SPDX-License-Identifier: MIT */
/* The definition after libnext_a's (see next_a.c). */
__attribute__((visibility("default"))) int nx_target(void) { return 2; }

/* Referenced by the program, so that the linker keeps this library (and its
 * place after libnext_a in the search order). */
__attribute__((visibility("default"))) int nx_b_loaded(void) { return 1; }
