/* SPDX-License-Identifier: MIT */
/* Whole small files into memory: suppression files, /proc/self/cmdline. */
#ifndef GPULEAK_FILE_H
#define GPULEAK_FILE_H

#include <stddef.h>

/* Read path into a malloc'ed buffer (NUL-terminated past *len).  Returns 0, or
 * -1 with errno set (EFBIG beyond max bytes). */
int gl_file_read(const char *path, size_t max, char **buf, size_t *len);
/* Read at most cap bytes of path into buf, without allocating (a constructor
 * may run before the program's allocator can); returns the bytes read, or -1
 * with errno set. */
long gl_file_read_into(const char *path, char *buf, size_t cap);

#endif
