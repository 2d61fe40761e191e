/* SPDX-License-Identifier: MIT */
/* A dependency of libscope_outer only: in the local scope of that library,
 * which the program opens with RTLD_LOCAL (see scope_outer.c). */
__attribute__((visibility("default"))) int scope_inner(void) { return 42; }
