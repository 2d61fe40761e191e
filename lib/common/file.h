/* Whole small files into memory: suppression files, /proc/self/cmdline. */
#ifndef GPULEAK_FILE_H
#define GPULEAK_FILE_H

#include <stddef.h>

/* Read path into a malloc'ed buffer (NUL-terminated past *len).  Returns 0, or
 * -1 with errno set (EFBIG beyond max bytes). */
int gl_file_read(const char *path, size_t max, char **buf, size_t *len);

#endif
