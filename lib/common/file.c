/* SPDX-License-Identifier: MIT */
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int gl_file_read(const char *path, size_t max, char **bufp, size_t *lenp)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* Grow as it comes: /proc files report no size. */
    size_t cap = 16 * 1024, len = 0;
    char *buf = malloc(cap + 1);
    int err = buf ? 0 : ENOMEM;
    while (!err) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
        } else if (r == 0) {
            break;
        } else if ((len += (size_t)r) == cap) {
            char *bigger = cap < max ? realloc(buf, cap * 2 + 1) : NULL;
            if (!bigger)
                err = cap < max ? ENOMEM : EFBIG;
            else {
                buf = bigger;
                cap *= 2;
            }
        }
    }
    close(fd);
    if (err) {
        free(buf);
        errno = err;
        return -1;
    }
    buf[len] = '\0';
    *bufp = buf;
    *lenp = len;
    return 0;
}

long gl_file_read_into(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < cap) {
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    return (long)len;
}
