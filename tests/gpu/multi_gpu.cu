/* SPDX-License-Identifier: MIT */
// Two GPUs: peer access both ways, a peer copy, a kernel on device 1 reading device 0's
// memory, a stream-ordered pair on a device-1 stream made while device 0 is current.
// Expected: two loss records, both on device 1 (3,000,000 bytes from cudaMalloc,
// 65,536 from cudaMallocAsync), no API error, usage "5 allocs, 3 frees".
//   multi_gpu ipc: the parent exports a device-1 block, a child opens it on device 0 and
//   leaks it.  Expected: the child's report has the IPC-imported record, the parent's none.
// Exit status 77 (skip) with fewer than two devices or no peer access between 0 and 1.
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "fixture.h"

extern char **environ;

static void need_two_devices(void)
{
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    if (n < 2) {
        printf("multi_gpu: one device\n");
        exit(77);
    }
    int a = 0, b = 0;
    CHECK(cudaDeviceCanAccessPeer(&a, 0, 1));
    CHECK(cudaDeviceCanAccessPeer(&b, 1, 0));
    if (!a || !b) {
        printf("multi_gpu: no peer access between devices 0 and 1\n");
        exit(77);
    }
}

__global__ void add_peer(const int *src, int *dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] += src[i];
}

NOINLINE static void leak_dev1(void)
{
    void *p;
    CHECK(cudaMalloc(&p, 3000000)); // SITE:leak_dev1
    memset(&p, 0, sizeof p);        /* no copy of the pointer left behind */
}

NOINLINE static void leak_dev1_async(cudaStream_t s1)
{
    void *p;
    CHECK(cudaMallocAsync(&p, 65536, s1)); // SITE:leak_dev1_async
    memset(&p, 0, sizeof p);
}

static int peers(void)
{
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(int);
    int *host = (int *)malloc(bytes);
    if (!host)
        return 98;
    for (int i = 0; i < n; i++)
        host[i] = i;

    int *a0, *b1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&a0, bytes));
    CHECK(cudaMemcpy(a0, host, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaDeviceEnablePeerAccess(1, 0));
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&b1, bytes));
    CHECK(cudaDeviceEnablePeerAccess(0, 0));

    CHECK(cudaMemcpyPeer(b1, 1, a0, 0, bytes));    /* b1 = a0 */
    add_peer<<<(n + 255) / 256, 256>>>(a0, b1, n); /* on device 1, reads device 0 */
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(host, b1, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (host[i] != 2 * i) {
            fprintf(stderr, "multi_gpu: b1[%d] = %d, expected %d\n", i, host[i], 2 * i);
            return 96;
        }
    free(host);

    cudaStream_t s1;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); /* device 1's */
    leak_dev1();
    leak_dev1_async(s1);

    /* Device 0 current, a device-1 stream: the block comes from device 1's pool
     * (cudaMallocAsync allocates on the stream's device), and is freed there. */
    CHECK(cudaSetDevice(0));
    void *x;
    CHECK(cudaMallocAsync(&x, 4096, s1));
    CHECK(cudaFreeAsync(x, s1));
    CHECK(cudaStreamSynchronize(s1));

    CHECK(cudaFree(a0));
    CHECK(cudaSetDevice(1));
    CHECK(cudaFree(b1));
    CHECK(cudaDeviceSynchronize());
    printf("multi_gpu: done\n");
    return 0;
}

NOINLINE static void open_on_device0(const char *hex)
{
    cudaIpcMemHandle_t h;
    for (size_t i = 0; i < sizeof h; i++)
        sscanf(hex + 2 * i, "%2hhx", &((unsigned char *)&h)[i]);
    CHECK(cudaSetDevice(0));
    void *p;
    CHECK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess)); // SITE:ipc_open_dev0
    printf("multi_gpu ipc child: opened %p on device 0\n", p);
}

static int ipc_parent(const char *self)
{
    CHECK(cudaSetDevice(1));
    void *p;
    CHECK(cudaMalloc(&p, 2 << 20));
    CHECK(cudaMemset(p, 0x5a, 2 << 20));
    CHECK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle(&h, p));
    char hex[2 * sizeof h + 1];
    for (size_t i = 0; i < sizeof h; i++)
        sprintf(hex + 2 * i, "%02x", ((unsigned char *)&h)[i]);
    char *child_argv[] = {(char *)self, (char *)"ipc_child", hex, NULL};
    pid_t pid;
    fflush(stdout);
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) != 0)
        return 97;
    int status;
    waitpid(pid, &status, 0);
    CHECK(cudaFree(p));
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 96;
    printf("multi_gpu ipc parent: child exited with %d\n", rc);
    return rc;
}

int main(int argc, char **argv)
{
    need_two_devices();
    if (argc == 3 && strcmp(argv[1], "ipc_child") == 0) {
        open_on_device0(argv[2]);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "ipc") == 0)
        return ipc_parent(argv[0]);
    if (argc != 1) {
        fprintf(stderr, "usage: multi_gpu [ipc]\n");
        return 2;
    }
    return peers();
}
