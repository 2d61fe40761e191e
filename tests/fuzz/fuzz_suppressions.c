/* SPDX-License-Identifier: MIT */
/* libFuzzer target: lib/common/suppressions.c on arbitrary input.
 *
 * Built by clang with -fsanitize=fuzzer,address,undefined (tests/Makefile.inc),
 * run briefly by tests/fuzz.test.  Besides crashes, leaks and undefined
 * behaviour, it checks what must always hold:
 *   - a rejected input gives one line "fuzz.supp:LINE: error: ...";
 *   - every entry read can be matched against stacks, and the entry generated
 *     for a stack built from its own patterns reads back as one entry that
 *     matches that stack with that leak kind, and no other kind;
 *   - gl_suppressions_glob_match agrees with a plain dynamic-programming glob.
 * A violation aborts, so libFuzzer keeps the input as a crash. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/leak_kind.h"
#include "common/suppressions.h"
#include "fuzz_check.h"

static const struct gl_frame fixed[] = {
    {0x1000, "cudaMalloc", NULL, 0, "/usr/local/cuda/lib64/libcudart.so.13", NULL},
    {0x1010, "make_buffer(unsigned long)", "/src/app.cu", 8, "/work/app", "_Z11make_bufferm"},
    {0x1020, NULL, NULL, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", NULL},
    {0x1030, NULL, NULL, 0, NULL, NULL},
    {0x1040, "main", "app.cu", 19, "/work/app", NULL},
};
#define NFIXED (sizeof fixed / sizeof *fixed)

/* ---- the reference glob: tokens, then a table ---- */

enum { T_STAR = 256, T_ANY = 257 };

static bool ref_glob(const char *p, const char *t)
{
    size_t plen = strlen(p), tlen = strlen(t);
    int *tok = malloc((plen + 1) * sizeof *tok);
    CHECK(tok);
    size_t n = 0;
    for (size_t i = 0; i < plen; i++) {
        if (p[i] == '*')
            tok[n++] = T_STAR;
        else if (p[i] == '?')
            tok[n++] = T_ANY;
        else if (p[i] == '\\' && i + 1 < plen)
            tok[n++] = (unsigned char)p[++i];
        else
            tok[n++] = (unsigned char)p[i];
    }
    /* ok[j]: tokens i.. match text j.., for the current i, filled backwards. */
    bool *ok = calloc(tlen + 1, sizeof *ok), *next = calloc(tlen + 1, sizeof *next);
    CHECK(ok && next);
    next[tlen] = true; /* no tokens left: only the empty rest matches */
    for (size_t i = n; i-- > 0;) {
        for (size_t j = tlen + 1; j-- > 0;) {
            if (tok[i] == T_STAR)
                ok[j] = next[j] || (j < tlen && ok[j + 1]);
            else if (tok[i] == T_ANY)
                ok[j] = j < tlen && next[j + 1];
            else
                ok[j] = j < tlen && (unsigned char)t[j] == tok[i] && next[j + 1];
        }
        bool *tmp = next;
        next = ok;
        ok = tmp;
    }
    bool r = next[0];
    free(tok);
    free(ok);
    free(next);
    return r;
}

static void check_glob(const uint8_t *data, size_t size)
{
    /* Pattern and text: the input split at its first NUL or newline, each cut
     * at its own first NUL; short enough for the reference. */
    size_t cut = 0;
    while (cut < size && data[cut] != '\n' && data[cut] != '\0')
        cut++;
    size_t plen = cut < 512 ? cut : 512;
    size_t tlen = size > cut + 1 ? size - cut - 1 : 0;
    if (tlen > 2048)
        tlen = 2048;
    char *p = malloc(plen + 1), *t = malloc(tlen + 1);
    CHECK(p && t);
    memcpy(p, data, plen);
    p[plen] = '\0';
    if (tlen)
        memcpy(t, data + cut + 1, tlen);
    t[tlen] = '\0';
    CHECK(gl_suppressions_glob_match(p, t) == ref_glob(p, t));
    CHECK(gl_suppressions_glob_match(p, p) == ref_glob(p, p));
    free(p);
    free(t);
}

/* ---- entries ---- */

static char gen[GL_SUPP_MAX_FRAMES * 4200 + 512];

static void check_entry(struct gl_supp_set *s, const struct gl_supp *e)
{
    CHECK(e->name && *e->name);
    CHECK(e->nframes >= 1 && e->nframes <= GL_SUPP_MAX_FRAMES);
    CHECK((e->leak_kinds & ~GL_LEAK_KINDS_ALL) == 0);
    for (unsigned i = 0; i < e->nframes; i++)
        CHECK(e->frames[i].type == GL_SF_ANY || (e->frames[i].pattern && *e->frames[i].pattern));
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++)
        for (unsigned n = 0; n <= NFIXED; n++) {
            bool m = gl_suppressions_matches(e, fixed, n, k);
            if (!(e->leak_kinds & GL_LEAK_KIND_BIT(k)))
                CHECK(!m);
            (void)gl_suppressions_find(s, e->kind, fixed, n, k);
        }

    /* A stack its own patterns describe, literally: frame i named by line i. */
    struct gl_frame f[GL_SUPP_MAX_FRAMES];
    for (unsigned i = 0; i < e->nframes; i++) {
        const struct gl_supp_frame *sf = &e->frames[i];
        f[i] = (struct gl_frame){0x2000 + i, NULL, NULL, 0, NULL, NULL};
        if (sf->pattern && strlen(sf->pattern) > 2000)
            return; /* its quoted form could exceed a line */
        if (sf->type == GL_SF_FUN)
            f[i].function = sf->pattern;
        else if (sf->type == GL_SF_OBJ)
            f[i].object = sf->pattern;
        else if (sf->type == GL_SF_SRC)
            f[i].file = sf->pattern, f[i].line = sf->line;
        else
            f[i].function = "anything";
    }
    for (unsigned k = 0; k < GL_LEAK_NKINDS; k++) {
        size_t len = gl_suppressions_generate(gen, sizeof gen, f, e->nframes, k);
        CHECK(len < sizeof gen);
        CHECK(strlen(gen) == len);
        struct gl_supp_set g;
        gl_suppressions_set_init(&g);
        char err[512];
        int rc = gl_suppressions_load_text(&g, gen, len, "gen.supp", err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "fuzz_suppressions: generated entry rejected: %s\n%s", err, gen);
        CHECK(rc == 0);
        CHECK(g.n == 1 && g.other_tools == 0);
        CHECK(g.v[0].kind == GL_SUPP_LEAK);
        CHECK(g.v[0].nframes == e->nframes);
        CHECK(g.v[0].leak_kinds == GL_LEAK_KIND_BIT(k));
        if (!gl_suppressions_matches(&g.v[0], f, e->nframes, k))
            fprintf(stderr, "fuzz_suppressions: generated entry does not match:\n%s", gen);
        CHECK(gl_suppressions_matches(&g.v[0], f, e->nframes, k));
        CHECK(!gl_suppressions_matches(&g.v[0], f, e->nframes, (k + 1) % GL_LEAK_NKINDS));
        gl_suppressions_set_free(&g);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gl_supp_set s;
    gl_suppressions_set_init(&s);
    char err[1024];
    err[0] = '\0';
    int rc = gl_suppressions_load_text(&s, (const char *)data, size, "fuzz.supp", err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    if (rc < 0) {
        CHECK(strncmp(err, "fuzz.supp:", 10) == 0);
        CHECK(strstr(err, ": error: ") != NULL);
        CHECK(strchr(err, '\n') == NULL);
    }
    CHECK(s.nfiles == 1);
    for (size_t i = 0; i < s.n; i++)
        check_entry(&s, &s.v[i]);
    /* Read twice into the same set: entries add up. */
    size_t n1 = s.n;
    if (rc == 0 && size < 4096) {
        CHECK(gl_suppressions_load_text(&s, (const char *)data, size, "again.supp", err,
                                        sizeof err) == 0);
        CHECK(s.n == 2 * n1);
    }
    gl_suppressions_set_free(&s);
    CHECK(s.n == 0 && s.v == NULL);

    check_glob(data, size);

    /* Generating from raw bytes as names never writes past the buffer. */
    if (size > 0 && size < 4096) {
        char *name = malloc(size + 1);
        CHECK(name);
        memcpy(name, data, size);
        name[size] = '\0';
        struct gl_frame f[2] = {{0x1, name, NULL, 0, NULL, NULL}, {0x2, NULL, NULL, 0, name, NULL}};
        char small[64];
        size_t len =
            gl_suppressions_generate(small, sizeof small, f, 2, (unsigned)(size % GL_LEAK_NKINDS));
        CHECK(strlen(small) == (len < sizeof small ? len : sizeof small - 1));
        free(name);
    }
    return 0;
}
