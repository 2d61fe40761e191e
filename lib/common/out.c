/* SPDX-License-Identifier: MIT */
#include "common/out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool gl_out_write_all(int fd, const void *buf, size_t len)
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
    o->mem = NULL;
    o->mem_cap = o->mem_len = 0;
    o->truncated = false;
    o->len = 0;
    snprintf(o->prefix, sizeof o->prefix, "==%d==", pid);
    snprintf(o->note_prefix, sizeof o->note_prefix, "--%d--", pid);
}

void gl_out_init_mem(struct gl_out *o, char *buf, size_t cap)
{
    gl_out_init(o, -1, 0);
    o->prefix[0] = o->note_prefix[0] = '\0'; /* for assertion messages: the bare text */
    o->mem = buf;
    o->mem_cap = cap;
    buf[0] = '\0';
}

static void flush_mem(struct gl_out *o)
{
    size_t room = o->mem_cap - 1 - o->mem_len;
    size_t k = o->len < room ? o->len : room;
    memcpy(o->mem + o->mem_len, o->buf, k);
    o->mem_len += k;
    o->mem[o->mem_len] = '\0';
    if (k < o->len)
        o->truncated = true;
}

bool gl_out_flush(struct gl_out *o)
{
    if (o->mem) {
        if (o->len > 0)
            flush_mem(o);
    } else if (o->len > 0 && !o->failed && !gl_out_write_all(o->fd, o->buf, o->len)) {
        o->failed = true;
    }
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

void gl_out_str(struct gl_out *o, const char *s) { put(o, s, strlen(s)); }

void gl_out_printf(struct gl_out *o, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void prefixed_line(struct gl_out *o, const char *prefix, const char *fmt, va_list ap)
{
    char line[4096];
    int n = vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1; /* a truncated line beats a lost one */
    size_t plen = strlen(prefix);
    put(o, prefix, plen);
    if (n > 0) {
        if (plen)
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

size_t gl_out_utf8_len(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    if (s[0] < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
        cp = s[0] & 0x1F;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        cp = s[0] & 0x0F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

char *gl_out_u64_commas(char *buf, uint64_t v)
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
