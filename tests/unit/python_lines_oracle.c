/* SPDX-License-Identifier: MIT */
/* lib/python/py_lines.c against a real interpreter's PyCode_Addr2Line.
 *
 *     python_lines_oracle FILE
 *
 * reads what tests/python/line_oracle.py wrote (per code object a "C" line with
 * the minor version, co_firstlineno, the bytecode's size and the line table in
 * hex, then an "L" line with the interpreter's answers from a first offset on,
 * by a step), asks gl_py_lines_line for the same offsets, prints the first mismatches
 * and the number of offsets checked.  Exit status 0 when all agree, 1 when any
 * differs or the file is malformed.  Run by tests/python_lines.test. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/py_lines.h"

#define MAX_SHOWN 20

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode hex (or "-", empty) into table; its length, or -1 if malformed. */
static long unhex(const char *hex, uint8_t *table)
{
    if (strcmp(hex, "-") == 0)
        return 0;
    size_t n = strlen(hex);
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        table[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

static long parse_long(char **p, int *ok)
{
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno)
        *ok = 0;
    *p = end;
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ORACLE-FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
        return 1;
    }
    char *line = NULL, *hex = NULL;
    size_t cap = 0;
    uint8_t *table = NULL;
    long len = -1, lineno = 0;
    int minor = 0, firstlineno = 0, fmt = -1, bad = 0;
    size_t codes = 0, offsets = 0, mismatches = 0;
    int minors_seen = 0; /* bit per minor version */
    while (!bad && getline(&line, &cap, f) > 0) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        char *p = line + 1;
        int ok = 1;
        if (line[0] == 'C' && line[1] == ' ') {
            minor = (int)parse_long(&p, &ok);
            firstlineno = (int)parse_long(&p, &ok);
            parse_long(&p, &ok); /* the bytecode's size: the L line covers it */
            while (*p == ' ')
                p++;
            free(hex);
            hex = strdup(p);
            table = realloc(table, strlen(p) / 2 + 1);
            fmt = gl_py_lines_format_of(minor);
            len = ok && hex && table && fmt >= 0 ? unhex(hex, table) : -1;
            if (len < 0) {
                fprintf(stderr, "%s:%ld: bad code line\n", argv[1], lineno);
                bad = 1;
            }
            if (minor >= 0 && minor < 31)
                minors_seen |= 1 << minor;
            codes++;
        } else if (line[0] == 'L' && line[1] == ' ' && len >= 0) {
            long off = parse_long(&p, &ok), step = parse_long(&p, &ok);
            if (!ok || step <= 0) {
                fprintf(stderr, "%s:%ld: bad offsets line\n", argv[1], lineno);
                bad = 1;
                break;
            }
            for (;; off += step) {
                while (*p == ' ')
                    p++;
                if (!*p)
                    break;
                long want = parse_long(&p, &ok);
                if (!ok) {
                    fprintf(stderr, "%s:%ld: bad line number\n", argv[1], lineno);
                    bad = 1;
                    break;
                }
                int got = gl_py_lines_line(fmt, table, (size_t)len, firstlineno, (int)off);
                offsets++;
                if (got == want)
                    continue;
                if (++mismatches <= MAX_SHOWN)
                    printf("mismatch: 3.%d co_firstlineno %d offset %ld: PyCode_Addr2Line %ld, "
                           "gl_py_lines_line %d; table %.*s%s\n",
                           minor, firstlineno, off, want, got, 120, hex,
                           strlen(hex) > 120 ? "..." : "");
            }
            len = -1; /* one L line per C line */
        } else {
            fprintf(stderr, "%s:%ld: unexpected line\n", argv[1], lineno);
            bad = 1;
        }
    }
    fclose(f);
    free(line);
    free(hex);
    free(table);
    printf("python_lines_oracle:");
    for (int m = 0; m < 31; m++)
        if (minors_seen & 1 << m)
            printf(" 3.%d", m);
    printf(": %zu code objects, %zu offsets checked, %zu mismatches\n", codes, offsets, mismatches);
    if (bad || mismatches || offsets == 0)
        return 1;
    return 0;
}
