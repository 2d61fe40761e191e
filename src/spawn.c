/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/env.h"
#include "launcher.h"

static volatile sig_atomic_t child_pid;

/* Signals meant for the program that reach the launcher (kill <launcher pid>)
 * are passed on; the terminal's SIGINT/SIGQUIT reach the program directly. */
static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* Put entry into the colon-separated list in the variable name, first or
 * last; an empty or unset list becomes entry alone.  False, with the variable
 * unchanged, if memory ran out. */
static bool add_to_list(const char *name, const char *entry, bool first)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, entry, 1) == 0;
    size_t len = strlen(entry) + strlen(old) + 2;
    char *v = malloc(len);
    if (!v)
        return false;
    snprintf(v, len, "%s:%s", first ? entry : old, first ? old : entry);
    setenv(name, v, 1);
    free(v);
    return true;
}

static void prepend_preload(const char *runtime)
{
    /* Keep what the user preloads (jemalloc, say), after gpuleak. */
    if (!add_to_list("LD_PRELOAD", runtime, true))
        setenv("LD_PRELOAD", runtime, 1);
}

/* The Python package (gpuleak, gpuleak.pytest_plugin) importable by the
 * program: its directory goes last on PYTHONPATH, after the user's own. */
static void append_python_path(void)
{
    char exe[4096], dir[8192];
    if (!gl_exe_dir(exe, sizeof exe) || !gl_paths_python_dir(exe, false, dir, sizeof dir))
        return;
    add_to_list("PYTHONPATH", dir, false);
}

/* --framework-caching=off: the frameworks' caching allocators turned off the way
 * each documents, so that every tensor or array is a cudaMalloc of its own.  A
 * variable the user set to something else is replaced, with one line saying so. */
static void set_framework_var(const char *name, const char *value)
{
    const char *old = getenv(name);
    if (old && strcmp(old, value) != 0)
        fprintf(stderr, "gpuleak: --framework-caching=off: replacing %s=%s\n", name, old);
    setenv(name, value, 1);
}

/* CuPy has no variable: python/gpuleak_site/sitecustomize.py calls
 * cupy.cuda.set_allocator(None) and set_pinned_memory_allocator(None) once cupy
 * is imported, then runs the sitecustomize it hides.  Its directory goes FIRST on
 * PYTHONPATH: Python imports the first sitecustomize on sys.path, so one of the
 * user's on PYTHONPATH would otherwise hide it (and it holds nothing else). */
static void prepend_site_dir(void)
{
    char exe[4096], py[8192], site[8300], probe[8400];
    struct stat st;
    if (!gl_exe_dir(exe, sizeof exe) || !gl_paths_python_dir(exe, false, py, sizeof py)) {
        fprintf(stderr, "gpuleak: --framework-caching=off: gpuleak's Python directory not "
                        "found: CuPy's memory pools stay on\n");
        return;
    }
    snprintf(site, sizeof site, "%s/gpuleak_site", py);
    snprintf(probe, sizeof probe, "%s/sitecustomize.py", site);
    if (stat(probe, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr,
                "gpuleak: --framework-caching=off: %s missing: CuPy's memory pools "
                "stay on\n",
                probe);
        return;
    }
    const char *old = getenv("PYTHONPATH");
    size_t slen = strlen(site);
    if (old && strncmp(old, site, slen) == 0 && (old[slen] == ':' || old[slen] == '\0'))
        return; /* already first: gpuleak under gpuleak */
    add_to_list("PYTHONPATH", site, true);
}

static void framework_caching_off(void)
{
    set_framework_var("PYTORCH_NO_CUDA_MEMORY_CACHING", "1");
    /* With the platform allocator XLA allocates on demand and frees at once:
     * XLA_PYTHON_CLIENT_PREALLOCATE and _MEM_FRACTION no longer apply. */
    set_framework_var("XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
    prepend_site_dir();
    setenv(GL_FRAMEWORK_CACHING_ENV, "off", 1);
}

/* Die of the signal that killed the program, as a shell reports it; the program
 * already wrote any core dump, so the launcher writes none. */
void gl_die_of_signal(int sig)
{
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

int gl_program_pid(void) { return (int)child_pid; }

int gl_run_program(const char *path, char **argv, const char *runtime, const struct gl_options *opt,
                   const char *status_file)
{
    static char serialized[GL_OPTIONS_SERIAL_MAX];
    if (gl_options_serialize(opt, serialized, sizeof serialized) < 0) {
        fprintf(stderr, "gpuleak: options too long to pass to the runtime\n");
        return -1;
    }
    /* Another tool's CUDA injection (Nsight Systems', say): with the driver's
     * hooks the runtime starts from the program's cuInit through its hook and
     * needs no injection, so the other tool keeps its own; CUPTI's way needs
     * it, and one injection is all CUDA loads. */
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    bool other_injection = inj && *inj && strcmp(inj, runtime) != 0;
    bool keep_other = other_injection && opt->intercept == GL_INTERCEPT_DRIVER;
    if (other_injection && !keep_other)
        fprintf(stderr,
                "gpuleak: replacing CUDA_INJECTION64_PATH=%s (another CUDA tool's) with "
                "gpuleak's runtime (--intercept=driver keeps it)\n",
                inj);
    prepend_preload(runtime);
    append_python_path();
    if (opt->framework_caching == GL_FRAMEWORK_CACHING_OFF)
        framework_caching_off();
    if (!keep_other)
        setenv("CUDA_INJECTION64_PATH", runtime, 1);
    setenv(GL_OPTIONS_ENV, serialized, 1);
    unsetenv(GL_UNTRACED_ENV); /* gpuleak run from a program an outer gpuleak left untraced */
    if (status_file)
        setenv(GL_STATUS_ENV, status_file, 1);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpuleak: cannot start '%s': fork: %s\n", path, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        char me[24];
        snprintf(me, sizeof me, "%d", (int)getpid());
        setenv(GL_PID_ENV, me, 1);
        execv(path, argv);
        if (errno == ENOEXEC) {
            /* A script without "#!": run it with the shell, as execvp would. */
            int argc = 0;
            while (argv[argc])
                argc++;
            char **sh = calloc((size_t)argc + 2, sizeof *sh);
            if (sh) {
                sh[0] = "/bin/sh";
                sh[1] = (char *)path;
                for (int i = 1; i <= argc; i++)
                    sh[i + 1] = argv[i];
                execv("/bin/sh", sh);
            }
        }
        fprintf(stderr, "gpuleak: cannot run '%s': %s\n", path, strerror(errno));
        _exit(127);
    }

    child_pid = pid;
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward};
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGQUIT, &ign, NULL);
    sigaction(SIGTERM, &fwd, NULL);
    sigaction(SIGHUP, &fwd, NULL);
    sigaction(SIGUSR1, &fwd, NULL);
    sigaction(SIGUSR2, &fwd, NULL);

    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "gpuleak: waitpid: %s\n", strerror(errno));
            return -1;
        }
    }
    return status;
}
