/* SPDX-License-Identifier: MIT */
// IPC: the parent exports a block, a child process opens it and never closes it.
// Expected: the child's report shows IPC-imported memory of 1,048,576 bytes; the
// parent's shows none.
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "fixture.h"

extern char **environ;

NOINLINE static void open_and_leak(const char *hex)
{
    cudaIpcMemHandle_t h;
    for (size_t i = 0; i < sizeof h; i++)
        sscanf(hex + 2 * i, "%2hhx", &((unsigned char *)&h)[i]);
    void *p;
    CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess)); // SITE:ipc_open
    printf("ipc child: opened %p\n", p);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0) {
        open_and_leak(argv[2]);
        return 0;
    }
    void *p;
    CHECK(cudaMalloc(&p, 1 << 20));
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle(&h, p));
    char hex[2 * sizeof h + 1];
    for (size_t i = 0; i < sizeof h; i++)
        sprintf(hex + 2 * i, "%02x", ((unsigned char *)&h)[i]);
    char *child_argv[] = {argv[0], (char *)"child", hex, NULL};
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, child_argv, environ) != 0)
        return 97;
    int status;
    waitpid(pid, &status, 0);
    CHECK(cudaFree(p));
    printf("ipc parent: child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 96;
}
