/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/logfile.h"
#include "launcher.h"

#define RUNTIME_NAME "libgpuleak.so"

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void note_tried(char *tried, size_t len, const char *path)
{
    size_t l = strlen(tried);
    snprintf(tried + l, len - l, "%s%s", l ? ", " : "", path);
}

/* Accept path as the runtime if it is a file; else add it to the list tried. */
static bool take(const char *path, char *out, char *tried, size_t triedlen)
{
    if (is_file(path) && realpath(path, out))
        return true;
    note_tried(tried, triedlen, path);
    return false;
}

bool gl_locate_runtime(char *out, size_t outlen, char *tried, size_t triedlen)
{
    (void)outlen; /* realpath needs PATH_MAX, which callers provide */
    tried[0] = '\0';
    const char *env = getenv("GPULEAK_RUNTIME");
    if (env && *env)
        return take(env, out, tried, triedlen);

    char exe[PATH_MAX], candidate[3 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        /* An installed tree, wherever it was moved: bindir -> pkglibdir. */
        char rel[PATH_MAX];
        gl_paths_relative(GL_BINDIR, GL_PKGLIBDIR, rel, sizeof rel);
        snprintf(candidate, sizeof candidate, "%s/%s/" RUNTIME_NAME, exe, rel);
        if (take(candidate, out, tried, triedlen))
            return true;
        /* The build tree: src/gpuleak beside lib/.libs/libgpuleak.so. */
        snprintf(candidate, sizeof candidate, "%s/../lib/.libs/" RUNTIME_NAME, exe);
        if (take(candidate, out, tried, triedlen))
            return true;
    }
    snprintf(candidate, sizeof candidate, "%s/" RUNTIME_NAME, GL_PKGLIBDIR);
    return take(candidate, out, tried, triedlen);
}

static bool check_executable(const char *path, const char *name, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "program '%s': %s", name, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "program '%s' is a directory", name);
        return false;
    }
    if (access(path, X_OK) != 0) {
        snprintf(err, errlen, "program '%s' is not executable: %s", name, strerror(errno));
        return false;
    }
    return true;
}

bool gl_resolve_program(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
    if (!*name) {
        snprintf(err, errlen, "empty program name");
        return false;
    }
    if (strchr(name, '/')) {
        if (!check_executable(name, name, err, errlen))
            return false;
        snprintf(out, outlen, "%s", name);
        return true;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/bin:/usr/bin";
    bool found_non_exec = false;
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char candidate[PATH_MAX];
        /* An empty entry means the current directory, as for execvp. */
        snprintf(candidate, sizeof candidate, "%.*s/%s", len ? (int)len : 1, len ? p : ".", name);
        struct stat st;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(candidate, X_OK) == 0) {
                snprintf(out, outlen, "%s", candidate);
                return true;
            }
            found_non_exec = true;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    if (found_non_exec)
        snprintf(err, errlen, "program '%s' is in PATH but not executable", name);
    else
        snprintf(err, errlen, "program '%s' not found in PATH", name);
    return false;
}

bool gl_check_log_file(const char *tmpl, char *err, size_t errlen)
{
    return gl_check_output_file("--log-file", tmpl, err, errlen);
}

bool gl_check_output_file(const char *option, const char *tmpl, char *err, size_t errlen)
{
    char path[GL_PATH_MAX];
    if (gl_logfile_template_expand(option, tmpl, (int)getpid(), true, path, sizeof path, err,
                                   errlen) < 0)
        return false;
    struct stat st;
    size_t plen = strlen(path);
    if ((plen > 0 && path[plen - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
        snprintf(err, errlen, "%s: '%s' is a directory", option, path);
        return false;
    }
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: '%s' is a symbolic link to nothing", option, path);
        return false;
    }
    /* /proc holds no report files; a link through it to an open file
     * (/dev/stdout is /proc/self/fd/1) resolves to that file. */
    char real[PATH_MAX];
    bool exists = stat(path, &st) == 0;
    if (exists && realpath(path, real) && strncmp(real, "/proc/", 6) == 0) {
        snprintf(err, errlen, "%s: '%s' is in /proc, which holds no report files", option, path);
        return false;
    }
    if (exists) {
        /* Written as it is: a terminal, a device, a FIFO, a socket, or a
         * file - whatever the directory it is in allows. */
        if (access(path, W_OK) != 0) {
            snprintf(err, errlen, "%s: '%s' is not writable", option, path);
            return false;
        }
        return true;
    }
    char dir[GL_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: directory '%s' does not exist", option, dir);
        return false;
    }
    if (realpath(dir, real) && (strcmp(real, "/proc") == 0 || strncmp(real, "/proc/", 6) == 0)) {
        snprintf(err, errlen, "%s: '%s' is in /proc, which holds no report files", option, path);
        return false;
    }
    if (access(dir, W_OK) != 0) {
        snprintf(err, errlen, "%s: directory '%s' is not writable", option, dir);
        return false;
    }
    return true;
}

bool gl_exe_dir(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0)
        return false;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    return true;
}

void gl_remove_empty_log(const char *tmpl, int pid)
{
    char path[GL_PATH_MAX], err[512];
    struct stat st, std;
    if (gl_logfile_expand(tmpl, pid, false, path, sizeof path, err, sizeof err) < 0 ||
        lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
        return;
    for (int fd = 1; fd <= 2; fd++)
        if (fstat(fd, &std) == 0 && std.st_dev == st.st_dev && std.st_ino == st.st_ino)
            return;
    unlink(path);
}
