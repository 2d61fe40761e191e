/* SPDX-License-Identifier: MIT */
#include "common/paths.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static size_t component(const char *p) { return strcspn(p, "/"); }

void gl_paths_relative(const char *from, const char *to, char *out, size_t outlen)
{
    /* Drop the leading components both share, then climb out of what is left of
     * from and descend into what is left of to. */
    for (;;) {
        while (*from == '/')
            from++;
        while (*to == '/')
            to++;
        size_t lf = component(from), lt = component(to);
        if (lf == 0 || lf != lt || strncmp(from, to, lf) != 0)
            break;
        from += lf;
        to += lt;
    }
    size_t pos = 0;
    out[0] = '\0';
    while (*from) {
        while (*from == '/')
            from++;
        size_t lf = component(from);
        if (lf == 0)
            break;
        pos += (size_t)snprintf(out + pos, pos < outlen ? outlen - pos : 0, "../");
        from += lf;
    }
    while (*to == '/')
        to++;
    if (pos < outlen)
        snprintf(out + pos, outlen - pos, "%s", to);
    size_t len = strlen(out);
    while (len > 0 && out[len - 1] == '/')
        out[--len] = '\0';
    if (!out[0])
        snprintf(out, outlen, ".");
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.supp of dir, sorted by name. */
static int list_supp(const char *dir, gl_path_fn fn, void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".supp") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (!names[i])
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        fn(path, arg);
        count++;
        free(names[i]);
    }
    return count;
}

int gl_paths_default_suppressions(const char *base, bool base_is_libdir, gl_path_fn fn, void *arg)
{
    char rel[4096], dir[8192];
    /* 1. The installed tree, wherever it is now. */
    gl_paths_relative(base_is_libdir ? GL_PKGLIBDIR : GL_BINDIR, GL_PKGDATADIR, rel, sizeof rel);
    snprintf(dir, sizeof dir, "%s/%s", base, rel);
    if (is_dir(dir))
        return list_supp(dir, fn, arg);
    /* 2. The build tree: the sources' suppressions/. */
    if (is_dir(GL_SRC_SUPPDIR))
        return list_supp(GL_SRC_SUPPDIR, fn, arg);
    /* 3. Where it was configured to be installed. */
    return list_supp(GL_PKGDATADIR, fn, arg);
}

static bool has_package(const char *dir)
{
    char init[8300];
    struct stat st;
    snprintf(init, sizeof init, "%s/gpuleak/__init__.py", dir);
    return stat(init, &st) == 0 && S_ISREG(st.st_mode);
}

bool gl_paths_python_dir(const char *base, bool base_is_libdir, char *out, size_t len)
{
    char rel[4096];
    gl_paths_relative(base_is_libdir ? GL_PKGLIBDIR : GL_BINDIR, GL_PKGDATADIR, rel, sizeof rel);
    snprintf(out, len, "%s/%s/python", base, rel);
    if (has_package(out))
        return true;
    snprintf(out, len, "%s", GL_SRC_PYDIR);
    if (has_package(out))
        return true;
    snprintf(out, len, "%s/python", GL_PKGDATADIR);
    return has_package(out);
}
