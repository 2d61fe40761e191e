/* SPDX-License-Identifier: MIT */
#include "common/suppressions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/error_kind.h"
#include "common/leak_kind.h"

void gl_suppressions_set_init(struct gl_supp_set *s) { memset(s, 0, sizeof *s); }

static void free_entry(struct gl_supp *e)
{
    free(e->name);
    for (unsigned i = 0; i < e->nframes; i++)
        free(e->frames[i].pattern);
}

void gl_suppressions_set_free(struct gl_supp_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free_entry(&s->v[i]);
    free(s->v);
    for (size_t i = 0; i < s->nfiles; i++)
        free(s->files[i]);
    free(s->files);
    memset(s, 0, sizeof *s);
}

/* ---- globs ---- */

bool gl_suppressions_glob_match(const char *p, const char *t)
{
    /* Backtracking over the last '*' only: linear enough for suppression
     * patterns, and no recursion for hostile ones. */
    const char *star_p = NULL, *star_t = NULL;
    for (;;) {
        if (*p == '*') {
            while (*p == '*')
                p++;
            star_p = p;
            star_t = t;
            continue;
        }
        if (*t == '\0') {
            while (*p == '*')
                p++;
            return *p == '\0';
        }
        const char *next_p = p;
        bool ok;
        if (*p == '?') {
            ok = true;
            next_p = p + 1;
        } else if (*p == '\\' && p[1]) {
            ok = p[1] == *t;
            next_p = p + 2;
        } else {
            ok = *p != '\0' && *p == *t;
            next_p = p + 1;
        }
        if (ok) {
            p = next_p;
            t++;
        } else if (star_p) {
            p = star_p;
            t = ++star_t;
        } else {
            return false;
        }
    }
}

/* ---- reading ---- */

struct reader {
    const char *text, *end, *cur;
    const char *name;
    int lineno; /* of the line last read */
    char *line; /* room for the text's longest line: no name is ever cut */
    size_t cap;
    bool too_long; /* a NUL byte inside the line */
};

/* The next line that is not blank nor a comment, trimmed; NULL at the end. */
static const char *next_line(struct reader *r)
{
    while (r->cur < r->end) {
        const char *nl = memchr(r->cur, '\n', (size_t)(r->end - r->cur));
        const char *stop = nl ? nl : r->end;
        const char *b = r->cur, *e = stop;
        r->cur = nl ? nl + 1 : r->end;
        r->lineno++;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\r' || *b == '\f' || *b == '\v'))
            b++;
        while (e > b &&
               (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\f' || e[-1] == '\v'))
            e--;
        if (b == e || *b == '#')
            continue;
        size_t len = (size_t)(e - b);
        r->too_long = len >= r->cap;
        if (r->too_long)
            len = r->cap - 1;
        memcpy(r->line, b, len);
        r->line[len] = '\0';
        /* A NUL inside a line would cut it short silently: take it as an error. */
        if (memchr(b, '\0', (size_t)(e - b)))
            r->too_long = true;
        return r->line;
    }
    return NULL;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        int n_ = snprintf(err, errlen, "%s:%d: error: ", r->name, r->lineno);                      \
        if (n_ >= 0 && (size_t)n_ < errlen)                                                        \
            snprintf(err + n_, errlen - (size_t)n_, __VA_ARGS__);                                  \
        return -1;                                                                                 \
    } while (0)

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool tool_list_has_ours(const char *tools, size_t len)
{
    while (len > 0) {
        size_t n = 0;
        while (n < len && tools[n] != ',')
            n++;
        if (n == strlen(GL_SUPP_TOOL) && strncmp(tools, GL_SUPP_TOOL, n) == 0)
            return true;
        tools += n;
        len -= n;
        if (len > 0) {
            tools++;
            len--;
        }
    }
    return false;
}

static int parse_frame(struct reader *r, struct gl_supp_frame *f, char *err, size_t errlen)
{
    const char *l = r->line;
    memset(f, 0, sizeof *f);
    if (strcmp(l, "...") == 0) {
        f->type = GL_SF_ANY;
        return 0;
    }
    const char *pat;
    if (starts_with(l, "fun:")) {
        f->type = GL_SF_FUN;
        pat = l + 4;
    } else if (starts_with(l, "obj:")) {
        f->type = GL_SF_OBJ;
        pat = l + 4;
    } else if (starts_with(l, "src:")) {
        f->type = GL_SF_SRC;
        pat = l + 4;
    } else {
        FAIL("expected a frame line (fun:NAME, obj:PATH, src:FILE[:LINE] or ...) or '}', got "
             "'%.60s'",
             l);
    }
    if (!*pat)
        FAIL("empty pattern after '%.4s'", l);
    size_t plen = strlen(pat);
    if (f->type == GL_SF_SRC) {
        /* src:file.c:123 — a trailing ":digits" is a line number. */
        const char *colon = strrchr(pat, ':');
        if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
            long line = strtol(colon + 1, NULL, 10);
            if (line <= 0 || line > 100000000)
                FAIL("bad line number in '%.60s'", l);
            f->line = (int)line;
            plen = (size_t)(colon - pat);
            if (plen == 0)
                FAIL("empty file name in '%.60s'", l);
        }
    }
    f->pattern = strndup(pat, plen);
    if (!f->pattern)
        FAIL("out of memory");
    return 0;
}

static int add_entry(struct gl_supp_set *s, struct gl_supp *e)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct gl_supp *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *e;
    return 0;
}

/* One entry; the reader is on its '{'.  Returns 0, or -1 with err set. */
static int parse_entry(struct gl_supp_set *s, struct reader *r, const char *file, char *err,
                       size_t errlen)
{
    int open_line = r->lineno;
    const char *l = next_line(r);
    if (!l)
        FAIL("end of file inside the entry opened at line %d: expected its name", open_line);
    if (r->too_long)
        FAIL("a NUL byte in the line");
    if (strcmp(l, "}") == 0 || strcmp(l, "{") == 0)
        FAIL("expected the entry's name after '{', got '%s'", l);
    char *name = strdup(l);
    if (!name)
        FAIL("out of memory");

    l = next_line(r);
    if (l && r->too_long) {
        free(name);
        FAIL("a NUL byte in the line");
    }
    const char *colon = l ? strchr(l, ':') : NULL;
    if (!l || !colon || colon == l || !colon[1] || strcmp(l, "}") == 0) {
        free(name);
        if (!l)
            FAIL("end of file inside the entry opened at line %d: expected TOOL:KIND", open_line);
        FAIL("expected TOOL:KIND (such as gpuleak:Leak or Memcheck:Leak), got '%.60s'", l);
    }
    if (!tool_list_has_ours(l, (size_t)(colon - l))) {
        /* Another tool's entry (and whatever extra lines its kind has): skip it. */
        free(name);
        while ((l = next_line(r)) && strcmp(l, "}") != 0)
            if (strcmp(l, "{") == 0)
                FAIL("'{' inside the entry opened at line %d: its '}' is missing", open_line);
        if (!l)
            FAIL("end of file inside the entry opened at line %d: missing '}'", open_line);
        s->other_tools++;
        return 0;
    }

    struct gl_supp e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.file = file;
    e.line = open_line;
    e.leak_kinds = GL_LEAK_KINDS_ALL;
    const char *kind = colon + 1;
    if (strcmp(kind, "Leak") == 0) {
        e.kind = GL_SUPP_LEAK;
    } else if (strcmp(kind, "Cached") == 0) {
        e.kind = GL_SUPP_CACHED;
    } else if ((e.error_kind = gl_error_kind_parse(kind)) != GL_ERR_NONE) {
        e.kind = GL_SUPP_ERROR;
    } else {
        free_entry(&e);
        /* The list is the error-kind table's, so a new kind is named here too. */
        char expected[256] = "Leak, Cached";
        size_t at = strlen(expected);
        for (unsigned k = 1; k < GL_ERR_NKINDS && at < sizeof expected; k++) {
            int w = snprintf(expected + at, sizeof expected - at, "%s%s",
                             k + 1 == GL_ERR_NKINDS ? " or " : ", ", gl_error_kind_name(k));
            at += w > 0 ? (size_t)w : 0;
        }
        FAIL("unknown kind '%.40s' for " GL_SUPP_TOOL " (expected %s)", kind, expected);
    }

    bool kinds_seen = false;
    for (;;) {
        l = next_line(r);
        if (!l) {
            free_entry(&e);
            FAIL("end of file inside the entry opened at line %d: missing '}'", open_line);
        }
        if (r->too_long) {
            free_entry(&e);
            FAIL("a NUL byte in the line");
        }
        if (strcmp(l, "}") == 0)
            break;
        if (strcmp(l, "{") == 0) {
            free_entry(&e);
            FAIL("'{' inside the entry opened at line %d: its '}' is missing", open_line);
        }
        if (starts_with(l, "match-leak-kinds:")) {
            const char *v = l + strlen("match-leak-kinds:");
            while (*v == ' ' || *v == '\t')
                v++;
            if (kinds_seen || e.nframes > 0) {
                free_entry(&e);
                FAIL("match-leak-kinds: must come once, right after the TOOL:KIND line");
            }
            if (e.kind == GL_SUPP_ERROR) {
                free_entry(&e);
                FAIL("match-leak-kinds: belongs to Leak and Cached entries, not %s",
                     gl_error_kind_name(e.error_kind));
            }
            if (gl_leak_kind_parse_set(v, &e.leak_kinds) < 0) {
                free_entry(&e);
                FAIL("match-leak-kinds: expected definite,indirect,possible,reachable,cached,"
                     "death, all or none, got '%.40s'",
                     v);
            }
            kinds_seen = true;
            continue;
        }
        if (e.nframes == GL_SUPP_MAX_FRAMES) {
            free_entry(&e);
            FAIL("more than %d frame lines in the entry opened at line %d", GL_SUPP_MAX_FRAMES,
                 open_line);
        }
        if (parse_frame(r, &e.frames[e.nframes], err, errlen) < 0) {
            free_entry(&e);
            return -1;
        }
        e.nframes++;
    }
    if (e.nframes == 0) {
        free_entry(&e);
        FAIL("the entry opened at line %d has no frame lines (fun:, obj:, src: or ...)", open_line);
    }
    if (add_entry(s, &e) < 0) {
        free_entry(&e);
        FAIL("out of memory");
    }
    return 0;
}

static int load_entries(struct gl_supp_set *s, struct reader *r, const char *file, char *err,
                        size_t errlen)
{
    const char *l;
    while ((l = next_line(r))) {
        /* Another tool's file given by mistake: say what it is. */
        if (r->lineno == 1 && (strncmp(l, "<?xml", 5) == 0 || l[0] == '<'))
            FAIL("an XML file, not a suppression file (compute-sanitizer's or Valgrind's "
                 "XML output?): gpuleak reads Valgrind-style entries in braces, as "
                 "--gen-suppressions=all prints them");
        if (r->too_long)
            FAIL("a NUL byte in the line");
        if (strcmp(l, "{") != 0)
            FAIL("expected '{' to open an entry, got '%.60s'", l);
        if (parse_entry(s, r, file, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int gl_suppressions_load_text(struct gl_supp_set *s, const char *text, size_t len, const char *name,
                              char *err, size_t errlen)
{
    char **files = realloc(s->files, (s->nfiles + 1) * sizeof *files);
    if (!files) {
        snprintf(err, errlen, "%s: error: out of memory", name);
        return -1;
    }
    s->files = files;
    char *file = strdup(name);
    if (!file) {
        snprintf(err, errlen, "%s: error: out of memory", name);
        return -1;
    }
    s->files[s->nfiles++] = file;

    size_t longest = 0;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        if (n > longest)
            longest = n;
        p = nl ? nl + 1 : end;
    }
    struct reader rd = {
        .text = text, .end = text + len, .cur = text, .name = file, .cap = longest + 1};
    rd.line = malloc(rd.cap);
    if (!rd.line) {
        snprintf(err, errlen, "%s: error: out of memory", name);
        return -1;
    }
    int rc = load_entries(s, &rd, file, err, errlen);
    free(rd.line);
    return rc;
}

int gl_suppressions_load_file(struct gl_supp_set *s, const char *path, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    if (gl_file_read(path, 256u << 20, &buf, &len) < 0) {
        snprintf(err, errlen, "%s: error: cannot read suppressions: %s", path, strerror(errno));
        return -1;
    }
    int rc = gl_suppressions_load_text(s, buf, len, path, err, errlen);
    free(buf);
    return rc;
}

/* ---- matching ---- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool frame_matches(const struct gl_supp_frame *sf, const struct gl_frame *f)
{
    switch (sf->type) {
    case GL_SF_FUN:
        return gl_suppressions_glob_match(sf->pattern, f->function ? f->function : "???") ||
               (f->mangled && gl_suppressions_glob_match(sf->pattern, f->mangled));
    case GL_SF_OBJ:
        return gl_suppressions_glob_match(sf->pattern, f->object ? f->object : "???");
    case GL_SF_SRC:
        return f->file && gl_suppressions_glob_match(sf->pattern, base_name(f->file)) &&
               (sf->line == 0 || sf->line == f->line);
    case GL_SF_ANY:
        return true;
    }
    return false;
}

bool gl_suppressions_matches(const struct gl_supp *e, const struct gl_frame *frames, unsigned n,
                             unsigned leak_kind)
{
    if (!(e->leak_kinds & GL_LEAK_KIND_BIT(leak_kind)))
        return false;
    /* ok[i][j]: entry lines i.. match stack frames j..; filled backwards, a
     * row i from row i + 1 (next), so that two rows are kept.  A line "..."
     * matches any number of frames, none included.  Stacks hold at most 1,024
     * frames (GL_STACK_MAX_FRAMES, stack/stack_depot.h). */
    enum { MAXF = 1024 + 1 };
    if (n > MAXF - 1)
        n = MAXF - 1;
    bool rows[2][MAXF];
    bool *next = rows[0], *cur = rows[1];
    for (unsigned j = 0; j <= n; j++)
        next[j] = true; /* the rest of the stack does not matter */
    for (int i = (int)e->nframes - 1; i >= 0; i--) {
        const struct gl_supp_frame *sf = &e->frames[i];
        for (int j = (int)n; j >= 0; j--) {
            if (sf->type == GL_SF_ANY)
                cur[j] = next[j] || (j < (int)n && cur[j + 1]);
            else
                cur[j] = j < (int)n && frame_matches(sf, &frames[j]) && next[j + 1];
        }
        bool *t = next;
        next = cur;
        cur = t;
    }
    return next[0];
}

struct gl_supp *gl_suppressions_find(struct gl_supp_set *s, enum gl_supp_kind kind,
                                     const struct gl_frame *frames, unsigned n, unsigned leak_kind)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].kind == kind && gl_suppressions_matches(&s->v[i], frames, n, leak_kind))
            return &s->v[i];
    return NULL;
}

struct gl_supp *gl_suppressions_find_error(struct gl_supp_set *s, unsigned error_kind,
                                           const struct gl_frame *frames, unsigned n)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].kind == GL_SUPP_ERROR && s->v[i].error_kind == error_kind &&
            gl_suppressions_matches(&s->v[i], frames, n, 0))
            return &s->v[i];
    return NULL;
}

/* ---- generating ---- */

struct sbuf {
    char *buf;
    size_t len, cap;
};

static void put(struct sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->cap > 0 && b->len < b->cap - 1) {
        size_t room = b->cap - 1 - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
        b->buf[b->len + (n < room ? n : room)] = '\0';
    }
    b->len += n;
}

/* A name or path as a literal pattern: glob characters quoted. */
static void put_literal(struct sbuf *b, const char *s)
{
    char one[3] = {0};
    for (; *s; s++) {
        if (*s == '*' || *s == '?' || *s == '\\') {
            one[0] = '\\';
            one[1] = *s;
        } else {
            one[0] = *s;
            one[1] = '\0';
        }
        put(b, one);
    }
}

static size_t generate(char *buf, size_t buflen, const struct gl_frame *frames, unsigned n,
                       const char *kind_line, const char *leak_kind)
{
    struct sbuf b = {buf, 0, buflen};
    if (buflen)
        buf[0] = '\0';
    put(&b, "{\n   <insert_a_suppression_name_here>\n   " GL_SUPP_TOOL ":");
    put(&b, kind_line);
    put(&b, "\n");
    if (leak_kind) {
        put(&b, "   match-leak-kinds: ");
        put(&b, leak_kind);
        put(&b, "\n");
    }
    if (n > GL_SUPP_MAX_FRAMES)
        n = GL_SUPP_MAX_FRAMES;
    for (unsigned i = 0; i < n; i++) {
        const struct gl_frame *f = &frames[i];
        /* An empty name is no name: "fun:" alone could not be read back. */
        const char *fn = f->mangled && *f->mangled ? f->mangled : f->function;
        if (fn && *fn) {
            put(&b, "   fun:");
            put_literal(&b, fn);
        } else if (f->object && *f->object) {
            put(&b, "   obj:");
            put_literal(&b, f->object);
        } else {
            put(&b, "   obj:*");
        }
        put(&b, "\n");
    }
    put(&b, "}\n");
    return b.len;
}

size_t gl_suppressions_generate(char *buf, size_t buflen, const struct gl_frame *frames, unsigned n,
                                unsigned leak_kind)
{
    return generate(buf, buflen, frames, n, "Leak",
                    gl_leak_kind_option_name((enum gl_leak_kind)leak_kind));
}

size_t gl_suppressions_generate_error(char *buf, size_t buflen, const struct gl_frame *frames,
                                      unsigned n, unsigned error_kind)
{
    const char *name = gl_error_kind_name(error_kind);
    return generate(buf, buflen, frames, n, name ? name : "?", NULL);
}

char *gl_suppressions_entry(const struct gl_frame *frames, unsigned n, unsigned error_kind,
                            unsigned leak_kind, size_t *len)
{
    size_t need = error_kind ? gl_suppressions_generate_error(NULL, 0, frames, n, error_kind)
                             : gl_suppressions_generate(NULL, 0, frames, n, leak_kind);
    char *text = malloc(need + 1);
    if (!text)
        return NULL;
    *len = error_kind ? gl_suppressions_generate_error(text, need + 1, frames, n, error_kind)
                      : gl_suppressions_generate(text, need + 1, frames, n, leak_kind);
    return text;
}
