/* SPDX-License-Identifier: MIT */
/* Interned allocation callers: the return address of the code that called
 * malloc (or operator new, or mmap), kept once, named by a small id.  A chunk
 * record then needs 24 bits for its owner instead of 64.
 *
 * Lock-free: an open-addressing table of addresses filled with compare-and-
 * swap; ids never change once given.  When it is full, new callers get id 0
 * ("unknown"), which the leak check treats as the program's own. */
#ifndef GPULEAK_CALLERS_H
#define GPULEAK_CALLERS_H

#include <stdint.h>

#define GL_CALLERS_MAX (1u << 16)

/* The id of ip (1 .. GL_CALLERS_MAX), made on first use; 0 if ip is 0 or the
 * table is full. */
uint32_t gl_callers_id(uintptr_t ip);
/* The address of an id, 0 for 0 or an id never given. */
uintptr_t gl_callers_ip(uint32_t id);
/* Ids given so far are 1 .. gl_callers_count(), with holes: use gl_callers_ip. */
uint32_t gl_callers_limit(void);
void gl_callers_reset(void); /* tests */

#endif
