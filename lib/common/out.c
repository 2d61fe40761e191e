#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool gl_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

void gl_out_init(struct gl_out *o, int fd, int pid)
{
    o->fd = fd;
    o->failed = false;
    o->len = 0;
    snprintf(o->prefix, sizeof o->prefix, "==%d==", pid);
    snprintf(o->note_prefix, sizeof o->note_prefix, "--%d--", pid);
}

bool gl_out_flush(struct gl_out *o)
{
    if (o->len > 0 && !o->failed && !gl_write_all(o->fd, o->buf, o->len))
        o->failed = true;
    o->len = 0;
    return !o->failed;
}

static void put(struct gl_out *o, const char *s, size_t n)
{
    while (n > 0) {
        if (o->len == sizeof o->buf)
            gl_out_flush(o);
        size_t room = sizeof o->buf - o->len;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

void gl_out_text(struct gl_out *o, const char *text, size_t len) { put(o, text, len); }

static void prefixed_line(struct gl_out *o, const char *prefix, const char *fmt, va_list ap)
{
    char line[4096];
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1; /* a truncated line beats a lost one */
    put(o, prefix, strlen(prefix));
    if (n > 0) {
        put(o, " ", 1);
        put(o, line, (size_t)n);
    }
    put(o, "\n", 1);
}

void gl_out_vline(struct gl_out *o, const char *fmt, va_list ap)
{
    prefixed_line(o, o->prefix, fmt, ap);
}

void gl_out_note(struct gl_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    prefixed_line(o, o->note_prefix, fmt, ap);
    va_end(ap);
}

void gl_out_line(struct gl_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gl_out_vline(o, fmt, ap);
    va_end(ap);
}

char *gl_fmt_u64_commas(char *buf, uint64_t v)
{
    char digits[21];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char *p = buf;
    for (int i = nd - 1; i >= 0; i--) {
        *p++ = digits[i];
        if (i > 0 && i % 3 == 0)
            *p++ = ',';
    }
    *p = '\0';
    return buf;
}
