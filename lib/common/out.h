/* SPDX-License-Identifier: MIT */
/* Buffered report output straight to a file descriptor.
 *
 * Reports are written with write(2), not stdio: at exit the program may have closed
 * or redirected its FILE streams, and stdio's locks may be held by a thread that
 * will never run again.  Every line of a report starts with "==PID== ". */
#ifndef GPULEAK_OUT_H
#define GPULEAK_OUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gl_out {
    int fd;      /* -1: writes go to mem instead */
    bool failed; /* a write failed; later output is dropped */
    char *mem;   /* gl_out_init_mem: the caller's buffer, always NUL-terminated */
    size_t mem_cap, mem_len;
    bool truncated; /* mem was too small for everything */
    size_t len;
    char prefix[24];      /* "==4242==" */
    char note_prefix[24]; /* "--4242--": Valgrind's prefix for -v diagnostics */
    char buf[8192];
};

void gl_out_init(struct gl_out *o, int fd, int pid);
/* Write into buf (cap bytes, cap > 0) instead, lines without the "==PID=="
 * prefix: the text is cut at cap - 1 bytes and NUL-terminated at every flush. */
void gl_out_init_mem(struct gl_out *o, char *buf, size_t cap);

/* One report line: prefix, formatted text, newline.  An empty format gives the bare
 * prefix line "==PID==" that Valgrind uses as a separator. */
void gl_out_line(struct gl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gl_out_vline(struct gl_out *o, const char *fmt, va_list ap);

/* A -v diagnostic line, prefixed "--PID--" as Valgrind prints them. */
void gl_out_note(struct gl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Unprefixed text, e.g. a generated suppression, an XML or JSON document. */
void gl_out_text(struct gl_out *o, const char *text, size_t len);
void gl_out_str(struct gl_out *o, const char *s);
void gl_out_printf(struct gl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write out what is buffered; returns false if any write failed. */
bool gl_out_flush(struct gl_out *o);

/* write(2) the whole buffer, retrying on EINTR and short writes. */
bool gl_out_write_all(int fd, const void *buf, size_t len);

/* Length of the valid UTF-8 sequence starting at s (1 to 4), or 0 if the bytes
 * there are not UTF-8 (overlong forms, surrogates, beyond U+10FFFF, cut short).
 * XML and JSON must be UTF-8; names and paths from the system need not be. */
size_t gl_out_utf8_len(const char *s);
#define GL_UTF8_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* Decimal with thousands separators, as Valgrind prints sizes: "1,048,576".
 * buf needs GL_U64_COMMAS_LEN bytes; returns buf. */
#define GL_U64_COMMAS_LEN 27
char *gl_out_u64_commas(char *buf, uint64_t v);

#endif
