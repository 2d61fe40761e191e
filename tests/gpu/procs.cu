/* SPDX-License-Identifier: MIT */
// Processes a program makes after it started CUDA (--trace-children).
//   procs fork   leaks 1,000,000 bytes, forks a child that uses no CUDA and exits(0):
//                only the parent reports, the leak once
//   procs exec   allocates and frees a block, then execs itself as leaf
//   procs spawn  allocates a block, posix_spawns itself as leaf, waits, frees its block
//   procs leaf   leaks 4,096 bytes and exits 0
// Expected, traced: a report per process image that used CUDA and exited; untraced
// (--trace-children=no): none for the exec'ed images.
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

extern char **environ;

NOINLINE static void leaf_leak(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 4096)); // SITE:leaf_leak
    memset(&p, 0, sizeof p);     /* no copy of the pointer left behind */
}

NOINLINE static void fork_parent_leak(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 1000000)); // SITE:fork_parent_leak
    memset(&p, 0, sizeof p);
}

static int wait_status(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 95;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int do_fork(void)
{
    void *q;
    CHECK(cudaMalloc(&q, 8192));
    CHECK(cudaFree(q));
    fork_parent_leak();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 97;
    if (pid == 0) {
        /* CUDA is unusable here; the child does host work and exits normally, so
         * every exit handler (the parent's CUDA runtime's, gpuleak's) runs. */
        char *buf = (char *)malloc(1 << 16);
        memset(buf, 1, 1 << 16);
        free(buf);
        printf("procs fork child: pid %d done\n", (int)getpid());
        exit(0);
    }
    int rc = wait_status(pid);
    printf("procs fork: child %d exited with %d\n", (int)pid, rc);
    printf("procs fork: done\n");
    return rc;
}

static int do_exec(const char *self)
{
    void *q;
    CHECK(cudaMalloc(&q, 8192));
    CHECK(cudaFree(q));
    printf("procs exec: pid %d execs leaf\n", (int)getpid());
    fflush(stdout);
    char *args[] = {(char *)self, (char *)"leaf", NULL};
    execv("/proc/self/exe", args);
    perror("procs exec: execv");
    return 97;
}

static int do_spawn(const char *self)
{
    void *q;
    CHECK(cudaMalloc(&q, 8192));
    char *args[] = {(char *)self, (char *)"leaf", NULL};
    fflush(stdout);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0)
        return 97;
    int rc = wait_status(pid);
    CHECK(cudaFree(q));
    printf("procs spawn: child %d exited with %d\n", (int)pid, rc);
    printf("procs spawn: done\n");
    return rc;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "leaf")) {
        leaf_leak();
        printf("procs leaf: pid %d done\n", (int)getpid());
        return 0;
    }
    if (!strcmp(mode, "fork"))
        return do_fork();
    if (!strcmp(mode, "exec"))
        return do_exec(argv[0]);
    if (!strcmp(mode, "spawn"))
        return do_spawn(argv[0]);
    fprintf(stderr, "usage: procs fork|exec|spawn|leaf\n");
    return 2;
}
