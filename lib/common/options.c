/* SPDX-License-Identifier: MIT */
#include "common/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/logfile.h"
#include "common/out.h"
#include "common/util.h"

enum gl_opt_type {
    GL_OPT_ENUM,
    GL_OPT_KINDSET,
    GL_OPT_INT,
    GL_OPT_PATH,     /* a file name template (%p, %n, %q{VAR}, %%) */
    GL_OPT_PATHLIST, /* plain file names, repeatable, kept in order */
    GL_OPT_FLAG,
    GL_OPT_COUNT
};

struct opt_desc {
    const char *long_name;
    char short_char;
    enum gl_opt_type type;
    const char *def;
    const char *values;
    const char *help;
    size_t offset;
};

static const struct opt_desc table[] = {
#define GL_OPTION(field, lname, sc, type, def, values, help)                                       \
    {lname, sc, type, def, values, help, offsetof(struct gl_options, field)},
#include "common/options.def"
#undef GL_OPTION
};
#define NOPTS GL_ARRAY_SIZE(table)

/* Values accepted beside those the table lists (Valgrind compatibility). */
static const struct {
    const char *option, *alias, *canonical;
} aliases[] = {
    {"leak-check", "yes", "full"},
};

/* Whole arguments Valgrind and CTest use that mean another option of ours:
 * CTest passes --show-reachable=yes by default.  A NULL canonical is
 * --show-leak-kinds's default, read from options.def, so that
 * --show-reachable=no stays "the default kinds" (as in Valgrind) whichever
 * kinds, live at death among them, the default comes to hold. */
static const struct {
    const char *arg, *canonical;
} arg_aliases[] = {
    {"--show-reachable=yes", "--show-leak-kinds=all"},
    {"--show-reachable", "--show-leak-kinds=all"},
    {"--show-reachable=no", NULL},
};

static int parse_bool(const char *value, bool *out);

/* --show-leak-kinds's default, as options.def spells it. */
static const char *show_leak_kinds_default(void)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (table[i].offset == offsetof(struct gl_options, show_leak_kinds))
            return table[i].def;
    return "definite,possible"; /* not reached: options.def defines it */
}

/* Valgrind Memcheck's options about host memory's definedness, its allocator
 * or its debugger: accepted with a note (a command line written for Valgrind,
 * or CTest's, still runs), never "unknown option". */
static const char *const valgrind_only[] = {
    "track-origins",
    "undef-value-errors",
    "partial-loads-ok",
    "expensive-definedness-checks",
    "leak-check-heuristics",
    "show-mismatched-frees",
    "malloc-fill",
    "free-fill",
    "freelist-vol",
    "freelist-big-blocks",
    "ignore-ranges",
    "ignore-range-below-sp",
    "workaround-gcc296-bugs",
    "redzone-size",
    "alignment",
    "smc-check",
    "vgdb",
    "vgdb-error",
    "vex-iropt-register-updates",
    "read-var-info",
    "read-inline-info",
    "track-fds",
    "keep-debuginfo",
    "max-stackframe",
    "main-stacksize",
    "max-threads",
    "fair-sched",
    "run-libc-freeres",
    "run-cxx-freeres",
    "sim-hints",
    "xtree-memory",
    "xtree-leak",
    "show-leak-kinds-as-errors",
};

/* One of those, or Valgrind's spellings of ours: handled here.  Returns
 * GL_ARG_NOTE (err says what was done), GL_ARG_ERROR, or GL_ARG_NOT_OPTION
 * when the argument is none of them. */
static enum gl_arg_result valgrind_habit(struct gl_options *o, const char *arg, char *err,
                                         size_t errlen)
{
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t i = 0; i < GL_ARRAY_SIZE(valgrind_only); i++)
        if (strlen(valgrind_only[i]) == nlen && strncmp(valgrind_only[i], name, nlen) == 0) {
            snprintf(err, errlen,
                     "--%s is a Valgrind option for host memory; it does not apply to GPU "
                     "memory and is ignored",
                     valgrind_only[i]);
            return GL_ARG_NOTE;
        }
    if (strcmp(arg, "--gen-suppressions=yes") == 0) {
        o->gen_suppressions = GL_GEN_SUPP_ALL;
        snprintf(err, errlen,
                 "--gen-suppressions=yes: gpuleak asks no questions; every record gets its "
                 "suppression, as with --gen-suppressions=all");
        return GL_ARG_NOTE;
    }
    if (nlen == strlen("show-possibly-lost") && strncmp(name, "show-possibly-lost", nlen) == 0) {
        bool show;
        if (!eq || parse_bool(eq + 1, &show) < 0) {
            snprintf(err, errlen, "--show-possibly-lost: expects yes or no");
            return GL_ARG_ERROR;
        }
        unsigned bit = GL_LEAK_KIND_BIT(GL_LEAK_POSSIBLE);
        o->show_leak_kinds = show ? o->show_leak_kinds | bit : o->show_leak_kinds & ~bit;
        return GL_ARG_OPTION;
    }
    return GL_ARG_NOT_OPTION;
}

const char *gl_options_suppression(const struct gl_options *o, int i)
{
    const char *p = o->suppressions;
    for (; *p && i > 0; i--)
        p += strlen(p) + 1;
    return *p ? p : NULL;
}

bool gl_options_add_suppression(struct gl_options *o, const char *path)
{
    size_t end = 0;
    while (o->suppressions[end])
        end += strlen(o->suppressions + end) + 1;
    size_t len = strlen(path);
    if (len == 0 || end + len + 2 > sizeof o->suppressions)
        return false;
    memcpy(o->suppressions + end, path, len + 1);
    o->suppressions[end + len + 1] = '\0';
    return true;
}

const char *gl_options_long_name(unsigned i) { return i < NOPTS ? table[i].long_name : NULL; }

/* Index of value in a '|'-separated list, or -1. */
static int enum_index(const char *list, const char *value)
{
    size_t vlen = strlen(value);
    int idx = 0;
    for (const char *p = list;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vlen && strncmp(p, value, len) == 0)
            return idx;
        if (!bar)
            return -1;
        p = bar + 1;
    }
}

static int parse_bool(const char *value, bool *out)
{
    if (strcmp(value, "yes") == 0) {
        *out = true;
        return 0;
    }
    if (strcmp(value, "no") == 0) {
        *out = false;
        return 0;
    }
    return -1;
}

/* Parse an integer in "lo..hi" (the table's values column). */
static int parse_int_range(const char *value, const char *range, int *out)
{
    long lo = strtol(range, NULL, 10);
    const char *dots = strstr(range, "..");
    long hi = dots ? strtol(dots + 2, NULL, 10) : lo;
    /* No blanks, no '+': "12" only, or "-1" where the range goes below 0. */
    const char *digits = value[0] == '-' && lo < 0 ? value + 1 : value;
    for (const char *p = digits; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    if (!*digits)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int set_value(struct gl_options *o, const struct opt_desc *d, const char *value, char *err,
                     size_t errlen)
{
    void *field = (char *)o + d->offset;
    switch (d->type) {
    case GL_OPT_ENUM: {
        const char *v = value;
        for (size_t i = 0; i < GL_ARRAY_SIZE(aliases); i++)
            if (strcmp(aliases[i].option, d->long_name) == 0 &&
                strcmp(aliases[i].alias, value) == 0)
                v = aliases[i].canonical;
        int idx = enum_index(d->values, v);
        if (idx < 0)
            goto bad;
        *(int *)field = idx;
        return 0;
    }
    case GL_OPT_KINDSET:
        if (gl_leak_kind_parse_set(value, (unsigned *)field) < 0)
            goto bad;
        return 0;
    case GL_OPT_INT:
    case GL_OPT_COUNT:
        if (parse_int_range(value, d->values, (int *)field) < 0)
            goto bad;
        return 0;
    case GL_OPT_FLAG:
        if (parse_bool(value, (bool *)field) < 0)
            goto bad;
        return 0;
    case GL_OPT_PATH: {
        char *dst = field;
        if (!*value) {
            snprintf(err, errlen, "--%s: expects a file name", d->long_name);
            return -1;
        }
        if (strlen(value) >= GL_PATH_MAX) {
            snprintf(err, errlen, "--%s: file name is too long", d->long_name);
            return -1;
        }
        /* Check the template's syntax now; %q{VAR} values are checked by the launcher. */
        char scratch[GL_PATH_MAX], option[64];
        snprintf(option, sizeof option, "--%s", d->long_name);
        if (gl_logfile_template_expand(option, value, 0, false, scratch, sizeof scratch, err,
                                       errlen) < 0)
            return -1;
        strcpy(dst, value);
        return 0;
    }
    case GL_OPT_PATHLIST:
        if (!*value) {
            snprintf(err, errlen, "--%s: expects a file name", d->long_name);
            return -1;
        }
        if (!gl_options_add_suppression(o, value)) {
            snprintf(err, errlen, "--%s: too many files (at most %d bytes of names)", d->long_name,
                     GL_PATHLIST_MAX);
            return -1;
        }
        return 0;
    }
bad:
    snprintf(err, errlen, "--%s: invalid value '%s' (expected %s%s)", d->long_name, value, d->values,
             d->type == GL_OPT_KINDSET
                 ? "; KIND: definite, indirect, possible, reachable, cached, death"
                 : "");
    return -1;
}

void gl_options_defaults(struct gl_options *o)
{
    char err[256];
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < NOPTS; i++)
        if ((table[i].type != GL_OPT_PATH && table[i].type != GL_OPT_PATHLIST) || table[i].def[0])
            set_value(o, &table[i], table[i].def, err, sizeof err);
}

/* dir/path into out (path as it is when absolute); false if too long. */
static bool absolute(const char *dir, const char *path, char *out, size_t outlen)
{
    int n = path[0] == '/' ? snprintf(out, outlen, "%s", path)
                           : snprintf(out, outlen, "%s/%s", dir, path);
    return n >= 0 && (size_t)n < outlen;
}

/* %n: each file's number, fixed once the options are (common/logfile.h).  The
 * order: the report's files as Valgrind opens them (the log, then the XML),
 * the JSON document, then every other file option in the table's order. */
static int number_files(struct gl_options *o, char *err, size_t errlen)
{
    static const char *const first[] = {"log-file", "xml-file", "json-file"};
    char *files[NOPTS];
    const char *names[NOPTS];
    char dashed[NOPTS][64];
    size_t n = 0;
    /* Pass k < 3 takes first[k]; the last pass, the other file options. */
    for (size_t pass = 0; pass <= GL_ARRAY_SIZE(first); pass++)
        for (size_t i = 0; i < NOPTS; i++) {
            const struct opt_desc *d = &table[i];
            size_t rank = 0;
            while (rank < GL_ARRAY_SIZE(first) && strcmp(d->long_name, first[rank]) != 0)
                rank++;
            if (d->type != GL_OPT_PATH || rank != pass)
                continue;
            snprintf(dashed[n], sizeof dashed[n], "--%s", d->long_name);
            files[n] = (char *)o + d->offset;
            names[n] = dashed[n];
            n++;
        }
    return gl_logfile_number(files, names, n, GL_PATH_MAX, err, errlen);
}

int gl_options_make_absolute(struct gl_options *o, const char *dir, char *err, size_t errlen)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_desc *d = &table[i];
        char *field = (char *)o + d->offset;
        if (d->type == GL_OPT_PATH && field[0]) {
            char abs[GL_PATH_MAX];
            if (!absolute(dir, field, abs, sizeof abs)) {
                snprintf(err, errlen, "--%s: path too long in %s", d->long_name, dir);
                return -1;
            }
            memcpy(field, abs, strlen(abs) + 1);
        } else if (d->type == GL_OPT_PATHLIST) {
            /* Rebuilt entry by entry in a copy: entries grow. */
            static char list[GL_PATHLIST_MAX];
            size_t at = 0;
            for (const char *p = field; *p; p += strlen(p) + 1) {
                char abs[GL_PATH_MAX];
                if (!absolute(dir, p, abs, sizeof abs) || at + strlen(abs) + 2 > sizeof list) {
                    snprintf(err, errlen, "--%s: paths too long in %s", d->long_name, dir);
                    return -1;
                }
                memcpy(list + at, abs, strlen(abs) + 1);
                at += strlen(abs) + 1;
            }
            list[at] = '\0';
            memcpy(field, list, at + 1);
        }
    }
    return number_files(o, err, errlen);
}

int gl_options_check(const struct gl_options *o, char *err, size_t errlen)
{
    if (o->xml && !o->xml_file[0] && o->xml_fd < 0) {
        snprintf(err, errlen,
                 "--xml=yes needs --xml-file=FILE or --xml-fd=N: the XML goes to a file of its own");
        return -1;
    }
    if (o->xml_file[0] && !o->xml) {
        snprintf(err, errlen, "--xml-file is used only with --xml=yes");
        return -1;
    }
    if (o->exit_on_first_error && o->error_exitcode == 0) {
        snprintf(err, errlen, "--exit-on-first-error=yes needs --error-exitcode=N (N > 0)");
        return -1;
    }
    return 0;
}

enum gl_arg_result gl_options_parse_arg(struct gl_options *o, const char *arg, char *err,
                                        size_t errlen)
{
    if (arg[0] != '-' || arg[1] == '\0')
        return GL_ARG_NOT_OPTION;
    char default_kinds[128];
    for (size_t i = 0; i < GL_ARRAY_SIZE(arg_aliases); i++)
        if (strcmp(arg, arg_aliases[i].arg) == 0) {
            arg = arg_aliases[i].canonical;
            if (!arg) {
                snprintf(default_kinds, sizeof default_kinds, "--show-leak-kinds=%s",
                         show_leak_kinds_default());
                arg = default_kinds;
            }
        }

    if (arg[1] != '-') { /* short form: -q, -v */
        for (size_t i = 0; i < NOPTS; i++) {
            const struct opt_desc *d = &table[i];
            if (d->short_char && arg[1] == d->short_char && arg[2] == '\0') {
                if (d->type == GL_OPT_COUNT) {
                    int *f = (int *)((char *)o + d->offset);
                    if (*f < 9)
                        (*f)++;
                } else {
                    *(bool *)((char *)o + d->offset) = true;
                }
                return GL_ARG_OPTION;
            }
        }
        snprintf(err, errlen, "unknown option '%s' (try 'gpuleak --help')", arg);
        return GL_ARG_ERROR;
    }

    enum gl_arg_result habit = valgrind_habit(o, arg, err, errlen);
    if (habit != GL_ARG_NOT_OPTION)
        return habit;
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_desc *d = &table[i];
        if (strlen(d->long_name) != nlen || strncmp(d->long_name, name, nlen) != 0)
            continue;
        if (!eq) {
            if (d->type == GL_OPT_FLAG) {
                *(bool *)((char *)o + d->offset) = true;
                return GL_ARG_OPTION;
            }
            if (d->type == GL_OPT_COUNT) {
                int *f = (int *)((char *)o + d->offset);
                if (*f < 9)
                    (*f)++;
                return GL_ARG_OPTION;
            }
            snprintf(err, errlen, "--%s: expects a value: --%s=%s", d->long_name, d->long_name,
                     d->values);
            return GL_ARG_ERROR;
        }
        return set_value(o, d, eq + 1, err, errlen) < 0 ? GL_ARG_ERROR : GL_ARG_OPTION;
    }
    snprintf(err, errlen, "unknown option '%.*s' (try 'gpuleak --help')", (int)(nlen + 2), arg);
    return GL_ARG_ERROR;
}

int gl_options_parse_env(struct gl_options *o, const char *text, char *err, size_t errlen)
{
    char arg[GL_PATH_MAX + 64];
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return 0;
        size_t n = 0;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\\' && p[1])
                p++;
            if (n + 1 >= sizeof arg) {
                snprintf(err, errlen, "argument too long");
                return -1;
            }
            arg[n++] = *p++;
        }
        arg[n] = '\0';
        enum gl_arg_result r = gl_options_parse_arg(o, arg, err, errlen);
        if (r == GL_ARG_ERROR)
            return -1;
        if (r == GL_ARG_NOTE)
            err[0] = '\0'; /* the launcher said it; the runtime gets them serialized */
        if (r == GL_ARG_NOT_OPTION) {
            snprintf(err, errlen, "'%s' is not an option", arg);
            return -1;
        }
    }
}

int gl_options_split_env(const char *text, char **bufp, char ***argsp)
{
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    char **args = malloc((len / 2 + 2) * sizeof *args);
    if (!buf || !args) {
        free(buf);
        free(args);
        return -1;
    }
    int n = 0;
    char *out = buf;
    for (const char *p = text;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        args[n++] = out;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\\' && p[1])
                p++;
            *out++ = *p++;
        }
        *out++ = '\0';
    }
    args[n] = NULL;
    *bufp = buf;
    *argsp = args;
    return n;
}

static int emit(char *buf, size_t buflen, size_t *pos, const char *s, bool escape)
{
    for (; *s; s++) {
        bool esc = escape && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\');
        if (*pos + 2 + (esc ? 1 : 0) > buflen)
            return -1;
        if (esc)
            buf[(*pos)++] = '\\';
        buf[(*pos)++] = *s;
    }
    buf[*pos] = '\0';
    return 0;
}

static void kindset_text(unsigned set, char *buf, size_t len)
{
    buf[0] = '\0';
    if (set == 0) {
        snprintf(buf, len, "none");
        return;
    }
    if (set == GL_LEAK_KINDS_ALL) {
        snprintf(buf, len, "all");
        return;
    }
    for (int k = 0; k < GL_LEAK_NKINDS; k++)
        if (set & GL_LEAK_KIND_BIT(k)) {
            if (buf[0])
                strncat(buf, ",", len - strlen(buf) - 1);
            strncat(buf, gl_leak_kind_option_name((enum gl_leak_kind)k), len - strlen(buf) - 1);
        }
}

/* The value of option d in o, as text parse_arg accepts. */
static void value_text(const struct gl_options *o, const struct opt_desc *d, char *buf, size_t len)
{
    const void *field = (const char *)o + d->offset;
    switch (d->type) {
    case GL_OPT_ENUM: {
        int idx = *(const int *)field;
        const char *p = d->values;
        for (int i = 0; i < idx && p; i++) {
            p = strchr(p, '|');
            if (p)
                p++;
        }
        size_t n = p ? strcspn(p, "|") : 0;
        snprintf(buf, len, "%.*s", (int)n, p ? p : "");
        break;
    }
    case GL_OPT_KINDSET:
        kindset_text(*(const unsigned *)field, buf, len);
        break;
    case GL_OPT_INT:
    case GL_OPT_COUNT:
        snprintf(buf, len, "%d", *(const int *)field);
        break;
    case GL_OPT_FLAG:
        snprintf(buf, len, "%s", *(const bool *)field ? "yes" : "no");
        break;
    case GL_OPT_PATH:
        snprintf(buf, len, "%s", (const char *)field);
        break;
    case GL_OPT_PATHLIST: /* serialized entry by entry, see gl_options_serialize */
        buf[0] = '\0';
        break;
    }
}

/* " --name=value", the value escaped for parse_env. */
static int emit_option(char *buf, size_t buflen, size_t *pos, const char *name, const char *value)
{
    if ((*pos > 0 && emit(buf, buflen, pos, " ", false) < 0) ||
        emit(buf, buflen, pos, "--", false) < 0 || emit(buf, buflen, pos, name, false) < 0 ||
        emit(buf, buflen, pos, "=", false) < 0 || emit(buf, buflen, pos, value, true) < 0)
        return -1;
    return 0;
}

static int serialize(const struct gl_options *o, const struct gl_options *def, char *buf,
                     size_t buflen);

int gl_options_serialize(const struct gl_options *o, char *buf, size_t buflen)
{
    /* The launcher's side only (the runtime never serializes): the defaults are too
     * big for a caller's stack, and malloc is fine here. */
    struct gl_options *def = malloc(sizeof *def);
    if (!def)
        return -1;
    gl_options_defaults(def);
    int len = serialize(o, def, buf, buflen);
    free(def);
    return len;
}

static int serialize(const struct gl_options *o, const struct gl_options *def, char *buf,
                     size_t buflen)
{
    size_t pos = 0;
    if (buflen == 0)
        return -1;
    buf[0] = '\0';
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_desc *d = &table[i];
        if (d->type == GL_OPT_PATHLIST) {
            const char *list = (const char *)o + d->offset;
            for (const char *p = list; *p; p += strlen(p) + 1)
                if (emit_option(buf, buflen, &pos, d->long_name, p) < 0)
                    return -1;
            continue;
        }
        char cur[GL_PATH_MAX], dflt[GL_PATH_MAX];
        value_text(o, d, cur, sizeof cur);
        value_text(def, d, dflt, sizeof dflt);
        if (strcmp(cur, dflt) != 0 && emit_option(buf, buflen, &pos, d->long_name, cur) < 0)
            return -1;
    }
    return (int)pos;
}

/* --help fits a terminal of 80 columns: heads up to column 30, help after. */
#define HELP_WIDTH 80
#define HELP_COLUMN 31

void gl_options_write_help(int fd)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_desc *d = &table[i];
        bool takes_value = d->type != GL_OPT_FLAG && d->type != GL_OPT_COUNT;
        char head[160], def[128] = "", line[1024];
        if (takes_value)
            snprintf(head, sizeof head, "--%s=%s", d->long_name, d->values);
        else if (d->short_char)
            snprintf(head, sizeof head, "-%c, --%s", d->short_char, d->long_name);
        else if (d->type == GL_OPT_FLAG)
            snprintf(head, sizeof head, "--%s=%s", d->long_name, d->values);
        else
            snprintf(head, sizeof head, "--%s", d->long_name);
        if ((takes_value || (d->type == GL_OPT_FLAG && !d->short_char)) && d->def[0])
            snprintf(def, sizeof def, " [%s]", d->def);
        char text[768];
        snprintf(text, sizeof text, "%s%s", d->help, def);
        /* A long option head gets a line of its own, as in GNU --help output;
         * the help is wrapped at HELP_WIDTH columns, indented to HELP_COLUMN. */
        size_t n = 0;
        if (strlen(head) > HELP_COLUMN - 3)
            n = (size_t)snprintf(line, sizeof line, "  %s\n%*s", head, HELP_COLUMN, "");
        else
            n = (size_t)snprintf(line, sizeof line, "  %-*s ", HELP_COLUMN - 3, head);
        size_t col = HELP_COLUMN;
        for (const char *w = text; *w && n < sizeof line - HELP_WIDTH;) {
            size_t len = strcspn(w, " ");
            if (col > HELP_COLUMN && col + 1 + len > HELP_WIDTH) {
                n += (size_t)snprintf(line + n, sizeof line - n, "\n%*s", HELP_COLUMN, "");
                col = HELP_COLUMN;
            } else if (col > HELP_COLUMN) {
                line[n++] = ' ';
                col++;
            }
            n += (size_t)snprintf(line + n, sizeof line - n, "%.*s", (int)len, w);
            col += len;
            w += len;
            w += strspn(w, " ");
        }
        if (n < sizeof line - 1)
            line[n++] = '\n';
        gl_out_write_all(fd, line, n < sizeof line ? n : sizeof line - 1);
    }
}
