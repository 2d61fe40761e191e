/* SPDX-License-Identifier: MIT */
/* The client API (include/gpuleak.h) inside the runtime: its entry points are
 * exported as gpuleak_runtime_* (for dlsym and ctypes) and gathered in a table
 * whose address the runtime publishes in its own environment, where the
 * header's inline functions find it. */
#ifndef GPULEAK_CLIENT_API_H
#define GPULEAK_CLIENT_API_H

#include <stddef.h>

#include "gpuleak.h"

/* The entry points, one per member of struct gpuleak_api (see gpuleak.h for
 * what each does); exported under these names. */
int gpuleak_runtime_running(void);
int gpuleak_runtime_checkpoint(const char *name);
long gpuleak_runtime_leak_check(int mode, const char *since, char *buf, size_t buflen);
int gpuleak_runtime_count_leaks(const char *since, struct gpuleak_counts *out);
int gpuleak_runtime_ignore(const void *ptr);
int gpuleak_runtime_tracking(int delta);
int gpuleak_runtime_pool(int op, const void *pool, const void *addr, size_t size, const char *name);
int gpuleak_runtime_profile_begin(const char *name);
int gpuleak_runtime_profile_end(int region, struct gpuleak_profile *out, size_t out_size,
                                struct gpuleak_profile_device *devices, size_t device_size,
                                int max_devices, int max_sites);
long gpuleak_runtime_profile_frames(unsigned stack, char *buf, size_t buflen);

/* Put GPULEAK_CLIENT_API=IMAGE:0xADDRESS in the environment (gpuleak.h says
 * what IMAGE is; setenv: the string is malloc'ed, like any other the program
 * may free or replace).  At load.  A fork child needs nothing more: it shares
 * its parent's program image and AT_RANDOM bytes. */
void gl_client_api_publish(void);

#endif
